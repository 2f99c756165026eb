"""The chaos runner: seeded faults against a real ensemble, recipes driven by several clients,
and referees that check the invariants while it all happens.

Reproducing a run: every random choice (which fault, on which member or client, for how
long, which operation a worker does next) comes from one ``random.Random(seed)``; the seed is
printed when a run starts and in every failure, and ``AIOCOORD_CHAOS_SEED=<seed>`` replays the
same schedule. Timing still depends on the machine, so a replay reproduces the *schedule*, not
the exact interleaving.

The pieces:

* :class:`Chaos`: the seed, the fault and operation counters, the violations, the summary table;
* referees (:class:`MutexReferee`, :class:`RWReferee`, :class:`SemaphoreReferee`,
  :class:`LeaderReferee`, :class:`CounterLedger`, :class:`QueueLedger`, :class:`CacheChecker`),
  each checking its invariant at the very step a holder enters or leaves, and at the end;
* :class:`Links`: one :class:`~aiocoord.testing.FaultProxy` per ensemble member in front of one
  client, so that its link can be cut, delayed or partitioned (a partition of all its links
  for longer than the session timeout expires its session);
* :class:`Cluster`: the ensemble, a namespace, clients (each with its own links) and the end
  checks every chaos test finishes with (no orphan nodes, no leftover watches);
* workers (``*_worker``) that drive one recipe in a loop, and :func:`run_mix`, the mix the CI
  test and the soak run share.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
import traceback
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import aiocoord
from aiocoord import (
    AtomicCounter,
    ChildrenCache,
    Client,
    LeaderLatch,
    LeadershipChange,
    LeadershipLostError,
    Lock,
    NodeCache,
    Queue,
    ReadWriteLock,
    Semaphore,
    State,
    StateChange,
    TreeCache,
    open_client,
)
from aiocoord.client import ChildData
from aiocoord.errors import (
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    LockLostError,
    LockNotOwnedError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
)
from aiocoord.recipes.cache import CacheEventType, NodeEvent
from aiocoord.testing import FaultProxy, ZooKeeperEnsemble, expire_session
from aiocoord.testing.server import SUPER_AUTH

SEED_ENV = "AIOCOORD_CHAOS_SEED"
SECONDS_ENV = "AIOCOORD_CHAOS_SECONDS"

#: Errors a recipe call may raise while the network or the ensemble misbehaves: they are the
#: documented ways of saying "not now" or "you lost it". Anything else is a violation.
FAULT_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionLossError,
    SessionExpiredError,
    LockLostError,
    LeadershipLostError,
    asyncio.TimeoutError,
)

#: The fault kinds of the mix, in the order of the summary table.
FAULT_KINDS = ("kill", "drop", "partition", "latency", "expire")


def chaos_seed() -> int:
    """The seed of this run: ``$AIOCOORD_CHAOS_SEED`` if set, else a fresh random one."""
    value = os.environ.get(SEED_ENV)
    if value:
        return int(value, 0)
    return random.SystemRandom().randrange(2**32)


# --- the log ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    """One broken invariant: when (seconds into the run), which, and what was seen."""

    at: float
    invariant: str
    detail: str


class Chaos:
    """A run's seed, random source, counters and violations."""

    def __init__(self, seed: int | None = None, name: str = "chaos") -> None:
        self.seed = chaos_seed() if seed is None else seed
        self.name = name
        self.rng = random.Random(self.seed)
        self.started = time.monotonic()
        self.faults: Counter[str] = Counter()
        self.ops: Counter[str] = Counter()
        #: fault errors recipes raised (expected under faults), by type
        self.errors: Counter[str] = Counter()
        #: observed consequences (sessions lost, leader changes...), for the summary
        self.events: Counter[str] = Counter()
        self.violations: list[Violation] = []
        #: what happened lately (faults, state changes, terms), attached to violations
        self.notes: deque[tuple[float, str]] = deque(maxlen=60)
        #: sessions the test expired on the server by force (see :meth:`overlap`)
        self.force_expired: set[int] = set()
        #: grants with a fencing token up to this zxid had their nodes deleted by a third
        #: party (see :meth:`revoke_upto`)
        self.revoked_upto = 0
        #: overlaps explained by a forced expiry, with their context
        self.tolerated: list[str] = []

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def fault(self, kind: str) -> None:
        """Count an injected fault."""
        self.faults[kind] += 1

    def op(self, kind: str) -> None:
        """Count a completed operation."""
        self.ops[kind] += 1

    def error(self, exc: BaseException) -> None:
        """Count an expected fault error."""
        self.errors[type(exc).__name__] += 1

    def note(self, message: str) -> None:
        """Remember an event; the last few are shown with each violation."""
        self.notes.append((self.elapsed(), message))

    def violate(self, invariant: str, detail: str) -> None:
        """Record a broken invariant (the run fails at its end), with the recent notes."""
        now = self.elapsed()
        recent = [f"      {t:8.3f}s {m}" for t, m in self.notes if now - t < 5.0][-12:]
        if recent:
            detail += "\n    recent:\n" + "\n".join(recent)
        self.violations.append(Violation(round(now, 3), invariant, detail))

    def revoke_upto(self, zxid: int) -> None:
        """The test deletes, as a third party, every recipe node created up to ``zxid``.

        Like a forced expiry, that skips the premise of exclusion: a holder learns of the
        deletion of its node (if it watches it at all) from its own session, while the next
        contender may be granted through another. Overlaps with such holders are counted,
        not failed; token order among the rest is still checked.
        """
        self.revoked_upto = max(self.revoked_upto, zxid)

    def revoked(self, token: int | None) -> bool:
        """Whether a grant with fencing ``token`` was revoked by a third party."""
        return token is not None and 0 < token <= self.revoked_upto

    def overlap(
        self,
        invariant: str,
        detail: str,
        others: Iterable[int],
        entering: int = 0,
        other_tokens: Iterable[int | None] = (),
        entering_token: int | None = None,
    ) -> None:
        """Two holders where there may be one. A violation, unless the session of every holder
        but one was expired *by force* (``expire_session``) and its owner has not heard yet.

        ZooKeeper's exclusion rests on timing: a session expires only after the session
        timeout without a heartbeat, and a client declares it lost by itself before that
        (see :mod:`aiocoord.session`), so a holder always hears first. A forced expiry skips
        that premise: the server ends the session at once, and the news may reach the next
        holder before it reaches the old one. It may even reach the next holder before the
        old one has processed its own grant, which the server made *before* the expiry (the
        wake-up was already on its way): in the server's order the two holdings do not
        overlap, only the clients' beliefs do. Only fencing tokens protect against that (the
        force-expired holder's token is the older one), so those overlaps are counted, not
        failed, while token order is still checked.
        """
        others = set(others)
        tokens = list(other_tokens)
        if tokens and all(self.revoked(t) for t in tokens):
            self.tolerate("third-party deletion overlaps (fenced)", invariant, detail)
        elif entering and entering in self.force_expired:
            # The newcomer is the force-expired one: granted before the expiry in the server's
            # order, heard of after the next holder's grant. Its token must be the older one.
            fenced = entering_token is None or all(t is None or t > entering_token for t in tokens)
            if fenced:
                self.tolerate("forced-expiry overlaps (fenced)", invariant, detail)
            else:
                self.violate(invariant, detail + f" (entering token {entering_token} not older)")
        elif others and others <= self.force_expired:
            self.tolerate("forced-expiry overlaps (fenced)", invariant, detail)
        else:
            self.violate(invariant, detail)

    def tolerate(self, kind: str, invariant: str, detail: str) -> None:
        self.events[kind] += 1
        now = self.elapsed()
        recent = [f"      {t:8.3f}s {m}" for t, m in self.notes if now - t < 3.0][-10:]
        self.tolerated.append(f"[{now:8.3f}s] {invariant}: {detail}\n" + "\n".join(recent))
        self.note(f"tolerated: {invariant}: {detail}")

    def check(self, condition: bool, invariant: str, detail: str) -> None:
        """Record a violation unless ``condition``."""
        if not condition:
            self.violate(invariant, detail)

    def unexpected(self, where: str, exc: BaseException) -> None:
        """An exception no recipe should raise under faults: a violation, with its traceback."""
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
        self.violate("unexpected error", f"{where}: {exc!r}\n{tb}")

    def summary(self, verbose: bool = False) -> str:
        """The table: faults per kind, operations per kind, errors, events, violations."""
        lines = [
            f"chaos run {self.name!r}  seed={self.seed}  ({SEED_ENV}={self.seed} replays it)",
            f"duration: {self.elapsed():.1f} s",
            "",
            f"{'faults injected':<34}{'count':>8}",
        ]
        kinds = [k for k in FAULT_KINDS if k in self.faults] + sorted(
            k for k in self.faults if k not in FAULT_KINDS
        )
        for kind in kinds:
            lines.append(f"  {kind:<32}{self.faults[kind]:>8}")
        lines.append(f"  {'total':<32}{sum(self.faults.values()):>8}")
        lines.append(f"{'operations':<34}{'count':>8}")
        for kind in sorted(self.ops):
            lines.append(f"  {kind:<32}{self.ops[kind]:>8}")
        lines.append(f"  {'total':<32}{sum(self.ops.values()):>8}")
        if self.events:
            lines.append(f"{'observed':<34}{'count':>8}")
            for kind in sorted(self.events):
                lines.append(f"  {kind:<32}{self.events[kind]:>8}")
        if self.errors:
            lines.append(f"{'fault errors raised (expected)':<34}{'count':>8}")
            for kind in sorted(self.errors):
                lines.append(f"  {kind:<32}{self.errors[kind]:>8}")
        if self.tolerated and verbose:
            lines.append("overlaps after forced expiries (first 3):")
            lines.extend(self.tolerated[:3])
        lines.append(f"{'violations':<34}{len(self.violations):>8}")
        for v in self.violations[:20]:
            lines.append(f"  [{v.at:8.3f}s] {v.invariant}: {v.detail}")
        return "\n".join(lines)

    def assert_clean(self) -> None:
        """Fail (naming the seed) if any invariant was broken."""
        if self.violations:
            raise AssertionError(
                f"{len(self.violations)} invariant violation(s); replay with "
                f"{SEED_ENV}={self.seed}\n{self.summary()}"
            )


# --- referees -------------------------------------------------------------------------------


class MutexReferee:
    """Mutual exclusion: one holder at a time, and fencing tokens strictly increasing."""

    def __init__(self, chaos: Chaos, name: str) -> None:
        self.chaos = chaos
        self.name = name
        #: who is inside -> the session it holds with
        self.inside: dict[str, int] = {}
        #: who is inside -> its fencing token
        self.tokens: dict[str, int] = {}
        self.last_token = 0
        self.entries = 0

    @property
    def holder(self) -> str | None:
        """Who is inside (one of them, if the rule is broken)."""
        return next(iter(self.inside), None)

    def enter(self, who: str, token: int | None, session: int = 0) -> None:
        """``who`` starts its critical section with fencing ``token``, on ``session``."""
        self.entries += 1
        if token is None:
            self.chaos.violate(f"{self.name}: fencing", f"{who} holds with no fencing token")
            token = self.last_token + 1
        others = {w: s for w, s in self.inside.items() if w != who}
        stale = session in self.chaos.force_expired or self.chaos.revoked(token)
        if others:
            self.chaos.overlap(
                f"{self.name}: mutual exclusion",
                f"{who} (0x{session:x}) entered while {others} is inside",
                others.values(),
                entering=session,
                other_tokens=[self.tokens.get(w) for w in others],
                entering_token=token,
            )
        elif stale and token <= self.last_token:
            # A force-expired holder's grant heard of after a newer one (see Chaos.overlap):
            # its older token is what makes a fenced resource refuse it.
            self.chaos.tolerate(
                "forced-expiry overlaps (fenced)",
                f"{self.name}: fencing",
                f"{who} token {token} after {self.last_token}",
            )
        if not stale:
            self.chaos.check(
                token > self.last_token,
                f"{self.name}: fencing",
                f"{who} holds with token {token} after token {self.last_token}",
            )
        self.inside[who] = session
        self.tokens[who] = token
        self.last_token = max(self.last_token, token)
        self.chaos.note(f"{self.name}: {who} in (token {token})")

    def exit(self, who: str) -> None:
        """``who`` leaves its critical section."""
        self.chaos.check(
            who in self.inside,
            f"{self.name}: mutual exclusion",
            f"{who} left; {sorted(self.inside)} inside",
        )
        self.inside.pop(who, None)
        self.tokens.pop(who, None)
        self.chaos.note(f"{self.name}: {who} out")


class RWReferee:
    """A writer excludes everyone; readers exclude writers; write tokens strictly increase."""

    def __init__(self, chaos: Chaos, name: str) -> None:
        self.chaos = chaos
        self.name = name
        #: who reads / writes -> its session
        self.readers: dict[str, int] = {}
        self.writers: dict[str, int] = {}
        self.last_write_token = 0
        self.max_readers = 0

    def enter(self, who: str, write: bool, token: int | None, session: int = 0) -> None:
        """``who`` starts reading or writing, on ``session``."""
        if write:
            others = {**self.readers, **self.writers}
            others.pop(who, None)
            if others:
                self.chaos.overlap(
                    f"{self.name}: write exclusion",
                    f"writer {who} entered with writers={self.writers} readers={self.readers}",
                    others.values(),
                    entering=session,
                )
            if session not in self.chaos.force_expired:
                self.chaos.check(
                    token is not None and token > self.last_write_token,
                    f"{self.name}: fencing",
                    f"writer {who} token {token} after {self.last_write_token}",
                )
            self.writers[who] = session
            self.last_write_token = max(self.last_write_token, token or 0)
        else:
            others = {w: s for w, s in self.writers.items() if w != who}
            if others:
                self.chaos.overlap(
                    f"{self.name}: read exclusion",
                    f"reader {who} entered while {others} writes",
                    others.values(),
                    entering=session,
                )
            self.readers[who] = session
            self.max_readers = max(self.max_readers, len(self.readers))
        self.chaos.note(f"{self.name}: {who} in ({'write' if write else 'read'})")

    def exit(self, who: str, write: bool) -> None:
        """``who`` stops reading or writing."""
        inside = self.writers if write else self.readers
        self.chaos.check(who in inside, self.name, f"{who} left, unseen")
        inside.pop(who, None)
        self.chaos.note(f"{self.name}: {who} out")


class SemaphoreReferee:
    """At most ``max_leases`` holders at a time."""

    def __init__(self, chaos: Chaos, name: str, max_leases: int) -> None:
        self.chaos = chaos
        self.name = name
        self.max_leases = max_leases
        #: who holds -> its session
        self.holders: dict[str, int] = {}
        self.peak = 0

    def enter(self, who: str, session: int = 0) -> None:
        """``who`` starts holding a lease, on ``session``."""
        self.holders[who] = session
        held = len(self.holders)
        self.peak = max(self.peak, held)
        if held > self.max_leases:
            # Over the bound: fine only if the excess is made of forcibly expired holders.
            live = [w for w, s in self.holders.items() if s not in self.chaos.force_expired]
            excess = [s for w, s in self.holders.items() if w != who]
            detail = f"{held} leases held (max {self.max_leases}): {self.holders}"
            if len(live) <= self.max_leases:
                self.chaos.overlap(f"{self.name}: lease bound", detail, excess, entering=session)
            else:
                self.chaos.violate(f"{self.name}: lease bound", detail)
        self.chaos.note(f"{self.name}: {who} in")

    def exit(self, who: str) -> None:
        """``who`` stops holding a lease."""
        self.holders.pop(who, None)
        self.chaos.note(f"{self.name}: {who} out")


class LeaderReferee:
    """One leader at a time (checked in the very step a term starts), tokens increasing."""

    def __init__(self, chaos: Chaos, name: str) -> None:
        self.chaos = chaos
        self.name = name
        self.latches: list[LeaderLatch] = []
        self.last_token = 0
        self.terms = 0
        self.changed = asyncio.Event()

    def attach(self, latch: LeaderLatch) -> None:
        """Referee ``latch`` (before it starts)."""
        self.latches.append(latch)
        latch.add_listener(lambda change: self._on_change(latch, change))

    def _on_change(self, latch: LeaderLatch, change: LeadershipChange) -> None:
        if change.is_leader:
            self.terms += 1
            self.chaos.events[f"{self.name}: terms"] += 1
            others = [x for x in self.latches if x is not latch and x.is_leader]
            if others:
                self.chaos.overlap(
                    f"{self.name}: single leader",
                    f"{latch.identifier} leads while {[x.identifier for x in others]} lead",
                    [x.term.session_id for x in others if x.term is not None],
                    entering=change.term.session_id if change.term is not None else 0,
                    other_tokens=[x.fencing_token for x in others],
                    entering_token=change.term.fencing_token if change.term is not None else None,
                )
            token = change.term.fencing_token if change.term is not None else 0
            stale = (
                change.term is not None and change.term.session_id in self.chaos.force_expired
            ) or self.chaos.revoked(token)
            self.chaos.check(
                stale or token > self.last_token,
                f"{self.name}: fencing",
                f"{latch.identifier} leads with token {token} after {self.last_token}",
            )
            self.last_token = max(self.last_token, token)
            self.chaos.note(f"{self.name}: {latch.identifier} leads (token {token})")
        else:
            self.chaos.note(f"{self.name}: {latch.identifier} stops ({change.reason})")
        self.changed.set()
        self.changed = asyncio.Event()

    def leader(self) -> LeaderLatch | None:
        """The latch that leads now, if any."""
        leaders = [x for x in self.latches if x.is_leader]
        return leaders[0] if leaders else None

    async def wait_leader(self, after_token: int = 0, timeout: float = 30.0) -> LeaderLatch:
        """Wait for a leader whose term's token is larger than ``after_token``."""

        async def until() -> LeaderLatch:
            while True:
                leader = self.leader()
                if leader is not None and (leader.fencing_token or 0) > after_token:
                    return leader
                await self.changed.wait()

        return await asyncio.wait_for(until(), timeout)


class CounterLedger:
    """What a counter must hold: every acknowledged increment, plus at most the uncertain ones
    (a ConnectionLossError is "may or may not have been applied")."""

    def __init__(self) -> None:
        self.certain = 0
        self.uncertain = 0

    def check(self, chaos: Chaos, value: int, name: str = "counter") -> None:
        """Compare the final ``value`` with the ledger."""
        chaos.check(
            self.certain <= value <= self.certain + self.uncertain,
            f"{name}: exact",
            f"value {value}, acknowledged {self.certain}, uncertain {self.uncertain}",
        )
        chaos.events[f"{name}: uncertain increments"] += self.uncertain
        chaos.events[f"{name}: of which applied"] += max(0, value - self.certain)


class QueueLedger:
    """Every item put is taken exactly once: never twice, never lost (except items whose put
    or claim ended in the documented "may or may not" ConnectionLossError)."""

    def __init__(self) -> None:
        self.put_ok: set[bytes] = set()
        self.put_uncertain: set[bytes] = set()
        self.taken: Counter[bytes] = Counter()
        self.uncertain_claims = 0

    def check(self, chaos: Chaos, name: str = "queue") -> None:
        """Compare what was taken (the final drain included) with what was put."""
        dups = {item: n for item, n in self.taken.items() if n > 1}
        chaos.check(not dups, f"{name}: no duplicates", f"taken more than once: {dups}")
        invented = set(self.taken) - self.put_ok - self.put_uncertain
        chaos.check(not invented, f"{name}: no phantoms", f"taken, never put: {invented}")
        lost = self.put_ok - set(self.taken)
        chaos.check(
            len(lost) <= self.uncertain_claims,
            f"{name}: no loss",
            f"{len(lost)} acknowledged items never taken ({sorted(lost)[:10]}); "
            f"uncertain claims: {self.uncertain_claims}",
        )
        chaos.events[f"{name}: uncertain puts"] += len(self.put_uncertain)
        chaos.events[f"{name}: uncertain claims"] += self.uncertain_claims
        chaos.events[f"{name}: of which lost"] += len(lost)


Shape = dict[str, tuple[bytes, int, int]]


def shape(nodes: dict[str, ChildData]) -> Shape:
    """What must match between a cache and the server: data, czxid and mzxid per path."""
    return {p: (d.data, d.stat.czxid, d.stat.mzxid) for p, d in nodes.items()}


class CacheChecker:
    """Follows one cache's event stream and checks it while it flows:

    * replaying the events onto an empty mapping gives the cache's content;
    * a node is added only when absent, updated or removed only when present, and an update
      keeps its czxid and moves its mzxid forward;

    and, at the end, that the cache equals the server.
    """

    def __init__(
        self, chaos: Chaos, name: str, cache: TreeCache | ChildrenCache | NodeCache
    ) -> None:
        self.chaos = chaos
        self.name = name
        self.cache = cache
        self.replayed: dict[str, ChildData] = {}
        self.events = 0
        self._sub = cache.changes(buffer_size=1_000_000)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start following (call before the cache starts, to see the initial load)."""
        self._task = asyncio.ensure_future(self._follow())

    async def _follow(self) -> None:
        added = {CacheEventType.NODE_ADDED, CacheEventType.CHILD_ADDED, CacheEventType.CREATED}
        updated = {
            CacheEventType.NODE_UPDATED,
            CacheEventType.CHILD_UPDATED,
            CacheEventType.UPDATED,
        }
        removed = {
            CacheEventType.NODE_REMOVED,
            CacheEventType.CHILD_REMOVED,
            CacheEventType.DELETED,
        }
        try:
            async for event in self._sub:
                self.events += 1
                self._apply(event, added, updated, removed)
        except CoordinationError as exc:
            self.chaos.unexpected(f"{self.name} event stream", exc)

    def _apply(
        self,
        event: NodeEvent,
        added: set[CacheEventType],
        updated: set[CacheEventType],
        removed: set[CacheEventType],
    ) -> None:
        name = f"{self.name}: events"
        if event.type is CacheEventType.RESYNCED:
            self.replayed = dict(self._content())
            return
        if event.type in added:
            assert event.data is not None
            self.chaos.check(
                event.path not in self.replayed, name, f"added {event.path}, already present"
            )
            self.replayed[event.path] = event.data
        elif event.type in updated:
            assert event.data is not None
            before = self.replayed.get(event.path)
            if before is None:
                self.chaos.violate(name, f"updated {event.path}, which was absent")
            else:
                self.chaos.check(
                    before.stat.czxid == event.data.stat.czxid
                    and event.data.stat.mzxid > before.stat.mzxid,
                    name,
                    f"update of {event.path} from {before.stat} to {event.data.stat}",
                )
            self.replayed[event.path] = event.data
        elif event.type in removed:
            self.chaos.check(
                event.path in self.replayed, name, f"removed {event.path}, which was absent"
            )
            self.replayed.pop(event.path, None)

    def _content(self) -> dict[str, ChildData]:
        cache = self.cache
        if isinstance(cache, NodeCache):
            current = cache.current
            return {} if current is None else {cache.path: current}
        if isinstance(cache, ChildrenCache):
            prefix = "/" if cache.path == "/" else cache.path + "/"
            return {prefix + n: d for n, d in cache.children.items()}
        return dict(cache.nodes)

    async def settle(self, server: Shape, timeout: float = 20.0) -> None:
        """Wait until the cache equals ``server`` (restricted to what it mirrors); then check
        the replayed events agree."""
        expected = self._expected(server)

        def equal(_: object) -> bool:
            return shape(self._content()) == expected

        try:
            await self.cache.wait_for(equal, timeout)
        except (asyncio.TimeoutError, CoordinationError) as exc:
            self.chaos.violate(
                f"{self.name}: equals the server",
                f"{exc!r}: cache {sorted(shape(self._content()).items())[:8]} "
                f"server {sorted(expected.items())[:8]}",
            )
            return
        # The events already delivered must describe the same state.
        await asyncio.sleep(0)
        self.chaos.check(
            shape(self.replayed) == expected,
            f"{self.name}: events replay to the cache",
            f"replayed {sorted(shape(self.replayed))} vs {sorted(expected)}",
        )

    def _expected(self, server: Shape) -> Shape:
        cache = self.cache
        if isinstance(cache, NodeCache):
            return {p: v for p, v in server.items() if p == cache.path}
        root = cache.path
        prefix = "/" if root == "/" else root + "/"
        if isinstance(cache, ChildrenCache):
            return {
                p: v
                for p, v in server.items()
                if p.startswith(prefix) and "/" not in p[len(prefix) :]
            }
        return {p: v for p, v in server.items() if p == root or p.startswith(prefix)}

    async def close(self) -> None:
        """Stop following (the cache must be closed first, or be closing)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def server_shape(client: Client, root: str) -> Shape:
    """Data, czxid and mzxid of ``root`` and every node below it, read from the server."""
    out: Shape = {}

    async def walk(path: str) -> None:
        try:
            data, stat = await client.get(path)
            names = await client.children(path)
        except NoNodeError:
            return
        out[path] = (data, stat.czxid, stat.mzxid)
        prefix = "/" if path == "/" else path + "/"
        await asyncio.gather(*(walk(prefix + n) for n in names))

    await walk(root)
    return out


# --- links -----------------------------------------------------------------------------------


class Links:
    """One FaultProxy per ensemble member, in front of one client."""

    def __init__(self, targets: Iterable[tuple[str, int]]) -> None:
        self.proxies = [FaultProxy(host, port) for host, port in targets]

    async def start(self) -> Links:
        """Start every proxy."""
        for proxy in self.proxies:
            await proxy.start()
        return self

    @property
    def connect_string(self) -> str:
        """The proxies, as a connect string (no chroot)."""
        return ",".join(p.connect_string for p in self.proxies)

    def drop(self) -> int:
        """Cut the client's current connection (whichever member it goes to)."""
        return sum(p.drop() for p in self.proxies)

    def blackhole(self) -> None:
        """Partition the client from every member."""
        for p in self.proxies:
            p.blackhole()

    def heal(self) -> None:
        """End every link fault."""
        for p in self.proxies:
            p.heal()

    def latency(self, seconds: float) -> None:
        """Delay everything the client sends and receives by ``seconds`` per chunk."""
        for p in self.proxies:
            p.latency(seconds)

    async def aclose(self) -> None:
        """Close every proxy."""
        for p in self.proxies:
            await p.aclose()


# --- the cluster ---------------------------------------------------------------------------


def watched_paths(wchc: str) -> dict[str, set[str]]:
    """Parse the ``wchc`` four-letter word: session id -> watched paths."""
    out: dict[str, set[str]] = {}
    session: str | None = None
    for line in wchc.splitlines():
        if not line.strip():
            continue
        if line.startswith(("\t", " ")):
            if session is not None:
                out.setdefault(session, set()).add(line.strip())
        else:
            session = line.strip()
    return out


class Cluster:
    """The ensemble, one namespace for the test, and the clients acting in it.

    Clients made by :meth:`client` are chrooted to :attr:`root` and, unless ``proxied=False``,
    reach the members through :class:`Links` of their own. :meth:`finish` runs the end checks;
    :meth:`aclose` tears everything down (idempotent), restarting killed members.
    """

    def __init__(self, ensemble: ZooKeeperEnsemble, chaos: Chaos, root: str | None = None) -> None:
        self.ensemble = ensemble
        self.chaos = chaos
        self.root = root or f"/aiocoord-chaos/{chaos.name}-{uuid.uuid4().hex[:8]}"
        self.clients: list[Client] = []
        self.links: dict[int, Links] = {}
        self.admin: Client | None = None
        self.observer: Client | None = None
        self.killed: set[int] = set()
        self._closed = False

    async def start(self) -> Cluster:
        """Bring every member up, make the namespace and the admin and observer clients."""
        for i, member in enumerate(self.ensemble.members):
            if not member.is_running:
                await asyncio.to_thread(self.ensemble.restart, i)
        await asyncio.to_thread(self.ensemble.wait_for_quorum, 30)
        self.admin = await open_client(
            self.ensemble.connect_string, session_timeout=10, auth=[SUPER_AUTH]
        )
        await self.admin.ensure_path(self.root)
        self.observer = await open_client(
            self.ensemble.connect_string + self.root, session_timeout=10
        )
        return self

    def member_targets(self) -> list[tuple[str, int]]:
        """(host, port) of every member."""
        return [(m.host, m.port) for m in self.ensemble.members]

    async def client(
        self, *, proxied: bool = True, session_timeout: float = 2.0, **options: Any
    ) -> Client:
        """A new client (own session) chrooted to the namespace, through its own links."""
        if proxied:
            links = await Links(self.member_targets()).start()
            hosts = links.connect_string
        else:
            hosts = self.ensemble.connect_string
        options.setdefault("connect_timeout", 15.0)
        try:
            client = await open_client(
                hosts + self.root, session_timeout=session_timeout, **options
            )
        except BaseException:
            if proxied:
                await links.aclose()
            raise
        if proxied:
            self.links[id(client)] = links
        self.clients.append(client)
        return client

    def name_of(self, client: Client) -> str:
        """``c<n>``: the client's place in :attr:`clients`."""
        for i, c in enumerate(self.clients):
            if c is client:
                return f"c{i}"
        return "?"

    def links_of(self, client: Client) -> Links:
        """The links of a proxied client."""
        return self.links[id(client)]

    def member_of(self, client: Client) -> int:
        """The index of the member ``client`` is connected to (through its links or not)."""
        server = client.session.server
        assert server is not None
        links = self.links.get(id(client))
        if links is not None:
            for i, proxy in enumerate(links.proxies):
                if proxy.port == server.port:
                    return i
        return self.ensemble.index_of_port(server.port)

    async def kill(self, i: int) -> None:
        """SIGKILL member ``i``."""
        self.chaos.note(f"kill member {i}")
        self.killed.add(i)
        await asyncio.to_thread(self.ensemble.kill, i)

    async def restart(self, i: int) -> None:
        """Start member ``i`` again and wait for the quorum."""
        await asyncio.to_thread(self.ensemble.restart, i)
        self.killed.discard(i)
        self.chaos.note(f"member {i} back")

    async def leader(self) -> int:
        """The index of the current leader (waiting for the quorum first)."""
        return await asyncio.to_thread(self.ensemble.wait_for_quorum, 30)

    async def expire(self, client: Client) -> None:
        """Expire ``client``'s session on the server (bypassing its links)."""
        self.chaos.force_expired.add(client.session_id)
        self.chaos.note(f"expire {self.name_of(client)} 0x{client.session_id:x}")
        await expire_session(
            client.session_id, client.session.password, self.ensemble.connect_string, timeout=15
        )

    async def wait_state(self, client: Client, state: State, timeout: float = 15.0) -> None:
        """Wait until ``client`` is in (or passes through) ``state``."""
        await client.wait_for(state, timeout)

    # --- the end checks ------------------------------------------------------------------

    async def wchc(self) -> dict[str, set[str]]:
        """Watched paths under the namespace, by session, over every running member."""
        found: dict[str, set[str]] = {}
        prefix = self.root + "/"
        for i, member in enumerate(self.ensemble.members):
            if i in self.killed or not member.is_running:
                continue
            text = await asyncio.to_thread(member.four_letter, "wchc")
            for session, paths in watched_paths(text).items():
                mine = {p for p in paths if p == self.root or p.startswith(prefix)}
                if mine:
                    found.setdefault(session, set()).update(mine)
        return found

    async def assert_no_server_watches(self, timeout: float = 10.0) -> None:
        """No member holds a watch under the namespace (waits for removals in flight)."""
        deadline = time.monotonic() + timeout
        while True:
            found = await self.wchc()
            if not found:
                return
            if time.monotonic() > deadline:
                detail = {k: sorted(v) for k, v in found.items()}
                self.chaos.violate("no leftover watches (wchc)", f"{detail}")
                return
            await asyncio.sleep(0.1)

    def assert_no_client_watches(self, clients: Iterable[Client]) -> None:
        """Every client's watch table is empty (recipes stopped)."""
        for client in clients:
            if client.closed:
                continue
            counts = client.session.watches.counts()
            self.chaos.check(
                not any(counts.values()),
                "no leftover watches (client)",
                f"session 0x{client.session_id:x}: {counts}",
            )

    async def tree(self) -> dict[str, Any]:
        """Every node under the namespace: path -> Stat (read by the admin)."""
        assert self.admin is not None
        admin = self.admin
        out: dict[str, Any] = {}

        async def walk(path: str) -> None:
            try:
                stat = await admin.exists(path)
                names = await admin.children(path)
            except NoNodeError:
                return
            if stat is None:
                return
            if path != self.root:
                out[path[len(self.root) :]] = stat
            await asyncio.gather(*(walk(path + "/" + n) for n in names))

        await walk(self.root)
        return out

    async def finish(
        self,
        *,
        allowed: Iterable[str] = (),
        clients: Iterable[Client] | None = None,
        orphan_timeout: float | None = None,
    ) -> None:
        """The end of every chaos test: (recipes already stopped)

        1. heal every link, restart killed members;
        2. every client's watch table is empty, and no member holds a watch under the
           namespace for them;
        3. close every client: then no ephemeral node, no lock or marker node (``_c_``) and
           no node outside ``allowed`` (paths relative to the namespace; a path allows its
           ancestors and descendants) is left, once the sessions that own them are gone and
           empty containers swept;
        4. the namespace is removed; no member holds a watch under it.

        Violations are recorded in the Chaos log; call ``chaos.assert_clean()`` after.
        """
        for links in self.links.values():
            links.heal()
        for i in sorted(self.killed):
            await self.restart(i)
        mine = list(self.clients if clients is None else clients)
        # Live clients whose recipes are stopped hold no watch.
        for client in mine:
            if not client.closed and not client.connected:
                with contextlib.suppress(asyncio.TimeoutError, ClientClosedError):
                    await client.wait_for(State.CONNECTED, 20)
        # A release returns before its delete is confirmed; the delete (which consumes the
        # watches on the node) finishes in the background.
        for client in mine:
            if not client.closed:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(client.wait_background(), 20)
        self.assert_no_client_watches(mine)
        await self.assert_no_server_watches()
        for client in self.clients:
            await client.close()
        allowed_paths = list(allowed)

        def permitted(path: str) -> bool:
            for a in allowed_paths:
                if path == a or path.startswith(a + "/") or a.startswith(path + "/"):
                    return True
            return False

        timeouts = [c.session.negotiated_timeout for c in self.clients] or [2.0]
        limit = orphan_timeout if orphan_timeout is not None else max(timeouts) + 5.0
        deadline = time.monotonic() + limit
        while True:
            tree = await self.tree()
            bad = {
                p: s
                for p, s in tree.items()
                if s.ephemeral_owner or "/_c_" in p or not permitted(p)
            }
            if not bad:
                break
            if time.monotonic() > deadline:
                detail = {p: f"owner=0x{s.ephemeral_owner:x}" for p, s in sorted(bad.items())}
                self.chaos.violate("no orphan nodes after close", f"{detail}")
                break
            await asyncio.sleep(0.1)
        assert self.admin is not None
        await self.admin.delete(self.root, recursive=True)
        self.chaos.check(
            await self.admin.exists(self.root) is None,
            "no leftover znodes",
            f"{self.root} still exists",
        )
        await self.assert_no_server_watches()

    async def aclose(self) -> None:
        """Close every client and proxy, restart killed members, remove the namespace."""
        if self._closed:
            return
        self._closed = True
        for client in self.clients:
            with contextlib.suppress(Exception):
                await client.close()
        for links in self.links.values():
            await links.aclose()
        for i in sorted(self.killed):
            with contextlib.suppress(Exception):
                await self.restart(i)
        if self.observer is not None:
            await self.observer.close()
        if self.admin is not None:
            with contextlib.suppress(CoordinationError):
                await self.admin.delete(self.root, recursive=True)
            await self.admin.close()


# --- workers ----------------------------------------------------------------------------------


@dataclass
class Worker:
    """A named worker task and whether it should stop after its current operation."""

    name: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    ops: int = 0


def _guard(chaos: Chaos, worker: Worker, exc: BaseException) -> None:
    if isinstance(exc, FAULT_ERRORS):
        chaos.error(exc)
    elif isinstance(exc, ClientClosedError) and worker.stop.is_set():
        pass
    else:
        chaos.unexpected(worker.name, exc)


async def _hold_until_lost(lost: Any, seconds: float) -> None:
    """Stay in the critical section ``seconds``, or until the holding is lost."""
    with contextlib.suppress(asyncio.TimeoutError):
        await lost.wait(seconds)


async def mutex_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    referee: MutexReferee,
    rng: random.Random,
    *,
    hold: tuple[float, float] = (0.0, 0.03),
    acquire_timeout: float = 3.0,
) -> None:
    """Take the lock, hold it a little (until lost at most), release; again and again.

    Alternates ``async with`` (with ``cancel_on_loss``) and explicit acquire/release.
    """
    lock = Lock(client, path, identifier=worker.name, suspended_is_loss=True, cancel_on_loss=True)
    while not worker.stop.is_set():
        try:
            if rng.random() < 0.5:
                async with lock:
                    referee.enter(worker.name, lock.fencing_token, client.session_id)
                    try:
                        await asyncio.sleep(rng.uniform(*hold))
                    finally:
                        referee.exit(worker.name)
            else:
                try:
                    await lock.acquire(timeout=acquire_timeout)
                except aiocoord.TimeoutError:
                    chaos.op("mutex: timed out")
                    continue
                lost = lock.lost
                referee.enter(worker.name, lock.fencing_token, client.session_id)
                try:
                    await _hold_until_lost(lost, rng.uniform(*hold))
                finally:
                    referee.exit(worker.name)
                await lock.release()
            chaos.op("mutex")
            worker.ops += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _guard(chaos, worker, exc)


async def rwlock_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    referee: RWReferee,
    rng: random.Random,
    *,
    write_share: float = 0.3,
    hold: tuple[float, float] = (0.0, 0.03),
    acquire_timeout: float = 3.0,
) -> None:
    """Read or write, at random, under a ReadWriteLock."""
    rw = ReadWriteLock(
        client, path, identifier=worker.name, suspended_is_loss=True, cancel_on_loss=True
    )
    while not worker.stop.is_set():
        write = rng.random() < write_share
        part = rw.write if write else rw.read
        try:
            try:
                await part.acquire(timeout=acquire_timeout)
            except aiocoord.TimeoutError:
                chaos.op("rwlock: timed out")
                continue
            lost = part.lost
            referee.enter(worker.name, write, part.fencing_token, client.session_id)
            try:
                await _hold_until_lost(lost, rng.uniform(*hold))
            finally:
                referee.exit(worker.name, write)
            await part.release()
            chaos.op("rwlock: write" if write else "rwlock: read")
            worker.ops += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _guard(chaos, worker, exc)


async def semaphore_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    referee: SemaphoreReferee,
    rng: random.Random,
    *,
    hold: tuple[float, float] = (0.0, 0.05),
    acquire_timeout: float = 3.0,
) -> None:
    """Take a lease, hold it a little, return it."""
    sem = Semaphore(
        client,
        path,
        referee.max_leases,
        identifier=worker.name,
        suspended_is_loss=True,
        cancel_on_loss=True,
    )
    while not worker.stop.is_set():
        try:
            try:
                (lease,) = await sem.acquire(1, timeout=acquire_timeout)
            except aiocoord.TimeoutError:
                chaos.op("semaphore: timed out")
                continue
            referee.enter(worker.name, client.session_id)
            try:
                await _hold_until_lost(lease.lost, rng.uniform(*hold))
            finally:
                referee.exit(worker.name)
            await lease.release()
            chaos.op("semaphore")
            worker.ops += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _guard(chaos, worker, exc)


async def counter_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    ledger: CounterLedger,
    rng: random.Random,
    *,
    pause: tuple[float, float] = (0.0, 0.02),
) -> None:
    """Increment the counter, keeping the ledger."""
    async with AtomicCounter(client, path) as counter:
        while not worker.stop.is_set():
            try:
                result = await counter.increment()
            except asyncio.CancelledError:
                ledger.uncertain += 1  # cut in flight: may or may not have been applied
                raise
            except ConnectionLossError as exc:
                ledger.uncertain += 1
                chaos.error(exc)
                continue
            except Exception as exc:
                _guard(chaos, worker, exc)
                continue
            if result.succeeded:
                ledger.certain += 1
                chaos.op("counter: increment")
                worker.ops += 1
            else:
                chaos.op("counter: gave up")
            await asyncio.sleep(rng.uniform(*pause))


async def producer_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    ledger: QueueLedger,
    rng: random.Random,
    *,
    pause: tuple[float, float] = (0.0, 0.03),
) -> None:
    """Put uniquely named items."""
    n = 0
    async with Queue(client, path) as queue:
        while not worker.stop.is_set():
            n += 1
            item = f"{worker.name}-{n}".encode()
            try:
                await queue.put(item)
            except asyncio.CancelledError:
                ledger.put_uncertain.add(item)
                raise
            except ConnectionLossError as exc:
                ledger.put_uncertain.add(item)
                chaos.error(exc)
                continue
            except Exception as exc:
                _guard(chaos, worker, exc)
                continue
            ledger.put_ok.add(item)
            chaos.op("queue: put")
            worker.ops += 1
            await asyncio.sleep(rng.uniform(*pause))


async def consumer_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    ledger: QueueLedger,
    rng: random.Random,
) -> None:
    """Take items (a timeout is fine: the queue may be empty)."""
    async with Queue(client, path) as queue:
        while not worker.stop.is_set():
            try:
                item = await queue.get(timeout=1.0)
            except asyncio.TimeoutError:
                continue
            except ConnectionLossError as exc:
                ledger.uncertain_claims += 1
                chaos.error(exc)
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _guard(chaos, worker, exc)
                continue
            ledger.taken[item] += 1
            chaos.op("queue: take")
            worker.ops += 1
        # Items this object claimed and holds (a get cancelled after its claim) are taken.
        while True:
            try:
                item = await queue.get(timeout=0)
            except (asyncio.TimeoutError, CoordinationError):
                break
            ledger.taken[item] += 1


async def drain(client: Client, path: str, ledger: QueueLedger) -> int:
    """Take whatever is left in the queue into the ledger; returns how many."""
    n = 0
    async with Queue(client, path) as queue:
        while True:
            try:
                item = await queue.get(timeout=0.5)
            except asyncio.TimeoutError:
                return n
            ledger.taken[item] += 1
            n += 1


async def tree_writer(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    root: str,
    rng: random.Random,
    *,
    names: str = "abcde",
    pause: tuple[float, float] = (0.0, 0.02),
) -> None:
    """Random creates, sets and deletes in a small tree under ``root`` (depth <= 2)."""
    n = 0
    while not worker.stop.is_set():
        n += 1
        depth = rng.choice((1, 1, 2))
        path = root + "".join("/" + rng.choice(names) for _ in range(depth))
        action = rng.choice(("create", "create", "set", "set", "delete"))
        try:
            if action == "create":
                await client.create(path, f"{worker.name}:{n}".encode(), make_parents=True)
            elif action == "set":
                await client.set(path, f"{worker.name}:{n}".encode())
            else:
                await client.delete(path)
            chaos.op(f"tree: {action}")
            worker.ops += 1
        except (NodeExistsError, NoNodeError, NotEmptyError):
            chaos.op("tree: refused")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _guard(chaos, worker, exc)
        await asyncio.sleep(rng.uniform(*pause))


def start_worker(worker: Worker, coro: Awaitable[None]) -> Worker:
    """Run ``coro`` as the worker's task."""
    worker.task = asyncio.ensure_future(coro)
    worker.task.set_name(worker.name)
    return worker


async def stop_workers(chaos: Chaos, workers: Iterable[Worker], grace: float = 10.0) -> None:
    """Ask every worker to stop after its current operation; cancel those that do not within
    ``grace`` seconds (recipes must leave nothing behind when cancelled)."""
    workers = list(workers)
    for w in workers:
        w.stop.set()
    tasks = [w.task for w in workers if w.task is not None]
    if tasks:
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for t in pending:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for t in tasks:
            if t.cancelled():
                continue
            exc = t.exception()
            if exc is not None:
                chaos.unexpected(t.get_name(), exc)


#: the last transitions of each tracked client, for violations that point at one client
STATE_HISTORY: dict[str, deque[str]] = {}


def track_states(chaos: Chaos, client: Client, name: str) -> Callable[[], None]:
    """Count the client's LOST and SUSPENDED transitions in the summary."""
    history = STATE_HISTORY[name] = deque(maxlen=12)

    def on_change(change: StateChange) -> None:
        history.append(
            f"{chaos.elapsed():8.3f}s 0x{change.session_id:x} {change.state.value}"
            + (" (new session)" if change.new_session else "")
        )
        chaos.note(
            f"{name} 0x{change.session_id:x} {change.state.value}"
            + (" (new session)" if change.new_session else "")
        )
        if change.state is State.LOST:
            chaos.events["sessions lost"] += 1
        elif change.state is State.SUSPENDED:
            chaos.events["connections lost"] += 1

    return client.add_state_listener(on_change)


# --- the mix ----------------------------------------------------------------------------------


@dataclass
class MixConfig:
    """How big the mix is. The defaults fit a 2-core machine with a 3-member ensemble."""

    seconds: float = 120.0
    clients: int = 5
    session_timeout: float = 2.0
    settle_seconds: float = 6.0
    #: minimum faults of each kind per 120 s of run (checked by the CI test)
    min_faults_per_kind_per_120s: int = 20


async def _fault_lanes(
    cluster: Cluster,
    chaos: Chaos,
    clients: list[Client],
    stop: asyncio.Event,
    rng: random.Random,
    timeout: float,
) -> list[asyncio.Task[None]]:
    """Start the fault injectors; each is a loop that ends when ``stop`` is set."""

    async def pause(low: float, high: float) -> bool:
        """Sleep a random while; True if the run is over."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), rng.uniform(low, high))
        return stop.is_set()

    async def kills() -> None:
        while not await pause(0.1, 0.6):
            if rng.random() < 0.4:
                victim = await cluster.leader()
                chaos.fault("kill")
                chaos.events["kill: leader"] += 1
            else:
                victim = rng.randrange(len(cluster.ensemble.members))
                chaos.fault("kill")
            await cluster.kill(victim)
            await pause(0.2, 1.0)
            await cluster.restart(victim)

    async def partitions(lane: int) -> None:
        while not await pause(0.3, 1.0):
            client = rng.choice(clients)
            links = cluster.links_of(client)
            chaos.fault("partition")
            chaos.note(f"partition {cluster.name_of(client)}")
            links.blackhole()
            # Longer than the session timeout (and a server tick): the session expires.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.Event().wait(), timeout + rng.uniform(0.8, 1.4))
            links.heal()
            chaos.note(f"heal {cluster.name_of(client)}")

    async def drops() -> None:
        while not await pause(0.5, 2.0):
            client = rng.choice(clients)
            chaos.fault("drop")
            chaos.note(f"drop {cluster.name_of(client)}")
            cluster.links_of(client).drop()

    async def latencies() -> None:
        while not await pause(0.3, 1.5):
            client = rng.choice(clients)
            links = cluster.links_of(client)
            chaos.fault("latency")
            delay = rng.uniform(0.02, 0.25)
            chaos.note(f"latency {delay:.2f} s {cluster.name_of(client)}")
            links.latency(delay)
            await pause(0.5, 2.0)
            links.latency(0)
            chaos.note(f"latency off {cluster.name_of(client)}")

    async def expiries() -> None:
        while not await pause(1.0, 2.5):
            client = rng.choice(clients)
            if not client.connected:
                continue
            chaos.fault("expire")
            try:
                await cluster.expire(client)
            except (asyncio.TimeoutError, CoordinationError, OSError) as exc:
                chaos.events[f"expire failed: {type(exc).__name__}"] += 1

    lanes = [kills(), partitions(0), partitions(1), drops(), latencies(), expiries()]
    return [asyncio.ensure_future(lane) for lane in lanes]


async def run_mix(
    ensemble: ZooKeeperEnsemble,
    config: MixConfig,
    *,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> Chaos:
    """Run the mix on ``ensemble`` for ``config.seconds`` and return the log.

    Several clients (each behind its own links) drive a lock, a read-write lock, a semaphore,
    a leader latch, a counter, a queue and caches over a randomly written tree, while faults
    of every kind are injected. Then the faults stop, everything must make progress again and
    settle (caches equal to the server), the recipes and clients close, and the end checks
    run. Violations are in the returned log (``chaos.assert_clean()``).
    """
    chaos = Chaos(seed, name="mix")
    say = progress or (lambda _line: None)
    say(f"chaos mix: seed={chaos.seed} ({SEED_ENV}={chaos.seed} replays it)")
    rng = chaos.rng
    cluster = await Cluster(ensemble, chaos).start()
    workers: list[Worker] = []
    latches: list[LeaderLatch] = []
    caches: list[TreeCache | ChildrenCache | NodeCache] = []
    checkers: list[CacheChecker] = []
    lanes: list[asyncio.Task[None]] = []
    try:
        timeout = config.session_timeout
        clients = [await cluster.client(session_timeout=timeout) for _ in range(config.clients)]
        for i, c in enumerate(clients):
            track_states(chaos, c, f"c{i}")
        mutex = MutexReferee(chaos, "lock")
        rw = RWReferee(chaos, "rwlock")
        sem = SemaphoreReferee(chaos, "semaphore", 2)
        leaders = LeaderReferee(chaos, "latch")
        counter = CounterLedger()
        queue = QueueLedger()
        await cluster.observer.ensure_path("/tree")  # type: ignore[union-attr]

        def spawn(name: str, make: Callable[[Worker], Awaitable[None]]) -> None:
            w = Worker(name)
            workers.append(start_worker(w, make(w)))

        for i, c in enumerate(clients):
            r = random.Random(rng.random())
            spawn(f"mutex-{i}", lambda w, c=c, r=r: mutex_worker(chaos, w, c, "/lock", mutex, r))
            spawn(f"rw-{i}", lambda w, c=c, r=r: rwlock_worker(chaos, w, c, "/rw", rw, r))
            spawn(f"sem-{i}", lambda w, c=c, r=r: semaphore_worker(chaos, w, c, "/sem", sem, r))
            spawn(
                f"count-{i}", lambda w, c=c, r=r: counter_worker(chaos, w, c, "/count", counter, r)
            )
            if i % 2 == 0:
                spawn(f"put-{i}", lambda w, c=c, r=r: producer_worker(chaos, w, c, "/q", queue, r))
            else:
                spawn(f"take-{i}", lambda w, c=c, r=r: consumer_worker(chaos, w, c, "/q", queue, r))
            latch = LeaderLatch(c, "/leader", identifier=f"latch-{i}", suspended_is_loss=True)
            leaders.attach(latch)
            latches.append(latch)
            await latch.start()
        writer_client = clients[0]
        spawn(
            "tree-writer",
            lambda w: tree_writer(chaos, w, writer_client, "/tree", random.Random(rng.random())),
        )
        for i, c in enumerate(clients[1:4]):
            kind = (TreeCache, ChildrenCache, TreeCache)[i]
            cache: TreeCache | ChildrenCache | NodeCache = kind(c, "/tree")
            caches.append(cache)
        caches.append(NodeCache(clients[-1], "/tree/a"))
        for j, cache in enumerate(caches):
            checker = CacheChecker(chaos, f"{type(cache).__name__}-{j}", cache)
            checker.start()
            checkers.append(checker)
            await cache.start()

        stop_faults = asyncio.Event()
        lanes = await _fault_lanes(cluster, chaos, clients, stop_faults, rng, timeout)
        report_every = 30.0
        next_report = report_every
        while chaos.elapsed() < config.seconds:
            await asyncio.sleep(min(1.0, config.seconds - chaos.elapsed() + 0.01))
            if chaos.elapsed() >= next_report:
                next_report += report_every
                say(
                    f"  {chaos.elapsed():6.0f} s: faults {dict(chaos.faults)} "
                    f"ops {sum(chaos.ops.values())} violations {len(chaos.violations)}"
                )
        stop_faults.set()
        await asyncio.gather(*lanes, return_exceptions=True)
        for t in lanes:
            if not t.cancelled() and t.exception() is not None:
                chaos.unexpected("fault lane", t.exception())  # type: ignore[arg-type]
        for links in cluster.links.values():
            links.heal()
        for i in sorted(cluster.killed):
            await cluster.restart(i)
        say(f"  faults stopped at {chaos.elapsed():.0f} s; settling")

        # Progress after the faults: every worker must get work done again.
        before = {w.name: w.ops for w in workers}
        await asyncio.sleep(config.settle_seconds)
        for w in workers:
            if w.name == "tree-writer" or w.name.startswith("take-"):
                continue  # consumers may find the queue empty
            if w.ops > before[w.name]:
                continue
            i = int(w.name.rsplit("-", 1)[1])
            c = clients[i]
            chaos.violate(
                "progress after faults",
                f"{w.name} did nothing in the {config.settle_seconds:.0f} s after the faults; "
                f"c{i}: {c.state.value} 0x{c.session_id:x}, in flight "
                f"{c.session.pending_count()}, background {c.pending_deletes()}, "
                f"transitions {list(STATE_HISTORY.get(f'c{i}', ()))}",
            )
        await leaders.wait_leader(timeout=30)
        await stop_workers(chaos, workers)

        # Caches equal the server once the writer has stopped.
        assert cluster.observer is not None
        await cluster.observer.sync("/tree")
        server = {p: v for p, v in (await server_shape(cluster.observer, "/tree")).items()}
        for checker in checkers:
            await checker.settle(server)
        for cache in caches:
            await cache.close()
        for checker in checkers:
            await checker.close()
        for latch in latches:
            await latch.close()
        counter.check(chaos, await AtomicCounter(cluster.observer, "/count").get())
        await drain(cluster.observer, "/q", queue)
        queue.check(chaos)
        for c in clients:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(c.wait_background(), 15)
        await cluster.finish(allowed=["/tree", "/count", "/q"], clients=clients)
    finally:
        for t in lanes:
            t.cancel()
        await asyncio.gather(*lanes, return_exceptions=True)
        for w in workers:
            if w.task is not None:
                w.task.cancel()
        await asyncio.gather(*(w.task for w in workers if w.task), return_exceptions=True)
        for cache in caches:
            with contextlib.suppress(Exception):
                await cache.close()
        for latch in latches:
            with contextlib.suppress(Exception):
                await latch.close()
        await cluster.aclose()
    return chaos


def min_faults(config: MixConfig) -> int:
    """The least number of faults of each kind a run of ``config.seconds`` must inject."""
    return max(1, int(config.min_faults_per_kind_per_120s * config.seconds / 120))


# --- contenders: one interface over the exclusive recipes ----------------------------------


class Contender:
    """An exclusive holding over one recipe, so a scenario can run against each of them:

    ``lock`` (Lock), ``rwlock`` (the write half of a ReadWriteLock), ``semaphore`` (a
    Semaphore with one lease) and ``latch`` (LeaderLatch: holding = leading). All use the
    strict policy (``suspended_is_loss=True``) unless ``suspended_is_loss=False``.
    """

    KINDS = ("lock", "rwlock", "semaphore", "latch")

    def __init__(
        self,
        kind: str,
        client: Client,
        path: str,
        name: str,
        *,
        suspended_is_loss: bool = True,
    ) -> None:
        self.kind = kind
        self.client = client
        self.path = path
        self.name = name
        self.suspended_is_loss = suspended_is_loss
        self._lease: Any = None
        self._latch: LeaderLatch | None = None
        self._owner: asyncio.Task[None] | None = None
        self._release_now = asyncio.Event()
        self._lost_flag = asyncio.Event()
        if kind == "lock":
            self._lock: Any = Lock(
                client, path, identifier=name, suspended_is_loss=suspended_is_loss
            )
        elif kind == "rwlock":
            self._lock = ReadWriteLock(
                client, path, identifier=name, suspended_is_loss=suspended_is_loss
            ).write
        elif kind == "semaphore":
            self._sem = Semaphore(
                client, path, 1, identifier=name, suspended_is_loss=suspended_is_loss
            )
        elif kind != "latch":
            raise ValueError(kind)

    async def acquire(self, timeout: float | None = None) -> bool:
        """Take the holding (become leader, for a latch); False after ``timeout`` (the
        recipes raise aiocoord.TimeoutError; the scenarios ask yes or no).

        Locks are owned by the task that acquires them, so a lock is taken (and later
        released) by an owner task of this object: any task may call acquire and release.
        Cancelling acquire cancels the owner (and its acquire) with it.
        """
        try:
            return await self._acquire(timeout)
        except aiocoord.TimeoutError:
            return False

    async def _acquire(self, timeout: float | None) -> bool:
        if self.kind in ("lock", "rwlock"):
            loop = asyncio.get_running_loop()
            got: asyncio.Future[bool] = loop.create_future()
            self._release_now = asyncio.Event()
            owner = self._owner = asyncio.ensure_future(self._own(timeout, got))
            try:
                return await asyncio.shield(got)
            except asyncio.CancelledError:
                owner.cancel()
                await asyncio.gather(owner, return_exceptions=True)
                raise
            finally:
                if not got.done():
                    # The owner failed before deciding: surface its error here.
                    await asyncio.gather(owner, return_exceptions=True)
                    exc = owner.exception() if not owner.cancelled() else None
                    if exc is not None:
                        raise exc
        if self.kind == "semaphore":
            (self._lease,) = await self._sem.acquire(1, timeout=timeout)
            return True
        if self._latch is None:
            self._latch = LeaderLatch(
                self.client,
                self.path,
                identifier=self.name,
                suspended_is_loss=self.suspended_is_loss,
            )
            self._latch.add_listener(self._on_latch)
            await self._latch.start()
        return await self._latch.wait_until_leader(timeout)

    async def _own(self, timeout: float | None, got: asyncio.Future[bool]) -> None:
        try:
            ok = bool(await self._lock.acquire(timeout=timeout))
        except BaseException as exc:
            if not got.done():
                got.set_exception(exc)
                got.exception()
            raise
        got.set_result(ok)
        if not ok:
            return
        try:
            await self._release_now.wait()
        finally:
            await self._lock.release()

    def _on_latch(self, change: LeadershipChange) -> None:
        if not change.is_leader:
            self._lost_flag.set()
        else:
            self._lost_flag = asyncio.Event()

    async def release(self) -> None:
        """Give the holding up (close the latch); LockLostError if it had been lost."""
        if self.kind in ("lock", "rwlock"):
            owner = self._owner
            if owner is None:
                raise LockNotOwnedError(f"{self.name} does not hold {self.path}")
            self._owner = None
            self._release_now.set()
            await owner
        elif self.kind == "semaphore":
            lease, self._lease = self._lease, None
            if lease is not None:
                await lease.release()
        elif self._latch is not None:
            latch, self._latch = self._latch, None
            await latch.close()

    @property
    def held(self) -> bool:
        """True while held (and not lost)."""
        if self.kind in ("lock", "rwlock"):
            return bool(self._lock.is_held)
        if self.kind == "semaphore":
            return self._lease is not None and bool(self._lease.is_held)
        return self._latch is not None and self._latch.is_leader

    @property
    def token(self) -> int | None:
        """The fencing token of the holding."""
        if self.kind in ("lock", "rwlock"):
            return self._lock.fencing_token  # type: ignore[no-any-return]
        if self.kind == "semaphore":
            return None if self._lease is None else int(self._lease.fencing_token)
        return None if self._latch is None else self._latch.fencing_token

    @property
    def node_path(self) -> str | None:
        """The held node's path (relative to the client's chroot)."""
        if self.kind in ("lock", "rwlock"):
            return self._lock.node_path  # type: ignore[no-any-return]
        if self.kind == "semaphore":
            return None if self._lease is None else str(self._lease.path)
        term = None if self._latch is None else self._latch.term
        return None if term is None else term.node_path

    @property
    def node_parent(self) -> str:
        """Where this recipe's contender nodes live."""
        if self.kind == "semaphore":
            return self.path + "/leases"
        return self.path

    async def wait_lost(self, timeout: float) -> None:
        """Wait until the holding is lost (TimeoutError otherwise)."""
        if self.kind in ("lock", "rwlock"):
            await self._lock.lost.wait(timeout)
        elif self.kind == "semaphore":
            assert self._lease is not None
            await self._lease.lost.wait(timeout)
        else:
            await asyncio.wait_for(self._lost_flag.wait(), timeout)

    async def close(self) -> None:
        """Leave: release if held (ignoring a loss), close a latch."""
        with contextlib.suppress(LockLostError, CoordinationError):
            if self.held or self.kind == "latch" or self._owner is not None:
                await self.release()


async def contender_nodes(client: Client, contender: Contender) -> list[str]:
    """The contender nodes (``_c_`` children) of the recipe's queue, as the server has them
    (synced first: the observer's member may lag behind the one the contender wrote to)."""
    try:
        await client.sync(contender.node_parent)
        names = await client.children(contender.node_parent)
    except NoNodeError:
        return []
    return sorted(n for n in names if n.startswith("_c_") and not n.endswith("-op"))
