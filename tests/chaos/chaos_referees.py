"""The referees: each checks its recipe's invariant at the very step a holder enters or leaves,
and at the end (:class:`MutexReferee`, :class:`RWReferee`, :class:`SemaphoreReferee`,
:class:`LeaderReferee`, :class:`CounterLedger`, :class:`QueueLedger`, :class:`CacheChecker`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter

from chaos_log import Chaos

from aiocoord import (
    ChildrenCache,
    Client,
    LeaderLatch,
    LeadershipChange,
    NodeCache,
    TreeCache,
)
from aiocoord.client import ChildData
from aiocoord.errors import (
    CoordinationError,
    NoNodeError,
)
from aiocoord.recipes.cache import CacheEventType, NodeEvent
from aiocoord.recipes.discovery import ServiceCache


class MutexReferee:
    """Mutual exclusion: one holder at a time, and fencing tokens strictly increasing.

    The only exception is a holder whose session was expired by force and who has not been
    told yet (:meth:`Chaos.untold`; ``suspended_is_loss`` is the holders' policy, which says
    what tells them).
    """

    def __init__(self, chaos: Chaos, name: str, *, suspended_is_loss: bool = True) -> None:
        self.chaos = chaos
        self.name = name
        self.suspended_is_loss = suspended_is_loss
        #: who is inside -> the session it holds with
        self.inside: dict[str, int] = {}
        #: who is inside -> the stamp (Chaos.stamp) it entered at
        self.entered: dict[str, int] = {}
        #: who is inside -> its fencing token
        self.tokens: dict[str, int] = {}
        self.last_token = 0
        self.entries = 0
        #: set (and replaced) whenever a holder leaves
        self.changed = asyncio.Event()

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
        # Its grant came right before (the worker enters in the step acquire returns): a report
        # of its client's before this stamp told it nothing (see Chaos.untold).
        now = self.chaos.stamp()
        others = {w: s for w, s in self.inside.items() if w != who}
        excused = self.chaos.excused(session, now, suspended_is_loss=self.suspended_is_loss)
        stale = excused or self.chaos.revoked(token)
        if others:
            self.chaos.overlap(
                f"{self.name}: mutual exclusion",
                f"{who} (0x{session:x}) entered while {others} is inside",
                [(s, self.entered.get(w, 0)) for w, s in others.items()],
                entering=session,
                other_tokens=[self.tokens.get(w) for w in others],
                entering_token=token,
                entered=now,
                suspended_is_loss=self.suspended_is_loss,
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
        self.entered[who] = now
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
        self.entered.pop(who, None)
        self.tokens.pop(who, None)
        self.chaos.note(f"{self.name}: {who} out")
        self.changed.set()
        self.changed = asyncio.Event()


class RWReferee:
    """A writer excludes everyone; readers exclude writers; write tokens strictly increase."""

    def __init__(self, chaos: Chaos, name: str, *, suspended_is_loss: bool = True) -> None:
        self.chaos = chaos
        self.name = name
        self.suspended_is_loss = suspended_is_loss
        #: who reads / writes -> its session
        self.readers: dict[str, int] = {}
        self.writers: dict[str, int] = {}
        #: who reads or writes -> the stamp it entered at
        self.entered: dict[str, int] = {}
        #: set (and replaced) whenever a holder leaves
        self.changed = asyncio.Event()
        self.last_write_token = 0
        self.max_readers = 0

    def enter(self, who: str, write: bool, token: int | None, session: int = 0) -> None:
        """``who`` starts reading or writing, on ``session``."""
        now = self.chaos.stamp()
        policy = self.suspended_is_loss
        if write:
            others = {**self.readers, **self.writers}
            others.pop(who, None)
            if others:
                self.chaos.overlap(
                    f"{self.name}: write exclusion",
                    f"writer {who} entered with writers={self.writers} readers={self.readers}",
                    [(s, self.entered.get(w, 0)) for w, s in others.items()],
                    entering=session,
                    entered=now,
                    suspended_is_loss=policy,
                )
            if not self.chaos.excused(session, now, suspended_is_loss=policy):
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
                    [(s, self.entered.get(w, 0)) for w, s in others.items()],
                    entering=session,
                    entered=now,
                    suspended_is_loss=policy,
                )
            self.readers[who] = session
            self.max_readers = max(self.max_readers, len(self.readers))
        self.entered[who] = now
        self.chaos.note(f"{self.name}: {who} in ({'write' if write else 'read'})")

    def exit(self, who: str, write: bool) -> None:
        """``who`` stops reading or writing."""
        inside = self.writers if write else self.readers
        self.chaos.check(who in inside, self.name, f"{who} left, unseen")
        inside.pop(who, None)
        if who not in self.readers and who not in self.writers:
            self.entered.pop(who, None)
        self.chaos.note(f"{self.name}: {who} out")
        self.changed.set()
        self.changed = asyncio.Event()


class SemaphoreReferee:
    """At most ``max_leases`` holders at a time."""

    def __init__(
        self, chaos: Chaos, name: str, max_leases: int, *, suspended_is_loss: bool = True
    ) -> None:
        self.chaos = chaos
        self.name = name
        self.max_leases = max_leases
        self.suspended_is_loss = suspended_is_loss
        #: who holds -> its session
        self.holders: dict[str, int] = {}
        #: who holds -> the stamp it entered at
        self.entered: dict[str, int] = {}
        #: set (and replaced) whenever a holder leaves
        self.changed = asyncio.Event()
        self.peak = 0

    def enter(self, who: str, session: int = 0) -> None:
        """``who`` starts holding a lease, on ``session``."""
        self.holders[who] = session
        self.entered[who] = self.chaos.stamp()
        held = len(self.holders)
        self.peak = max(self.peak, held)
        if held > self.max_leases:
            # Over the bound: fine only if the excess is made of forcibly expired holders not
            # told yet (a lease has no fencing token, so that is all that can be checked; see
            # Chaos.overlap). Any one holder may be the expired one, not all but the newcomer.
            live = [
                w
                for w, s in self.holders.items()
                if not self.chaos.excused(
                    s, self.entered[w], suspended_is_loss=self.suspended_is_loss
                )
            ]
            detail = f"{held} leases held (max {self.max_leases}): {self.holders}"
            if len(live) <= self.max_leases:
                self.chaos.tolerate("forced-expiry overlaps", f"{self.name}: lease bound", detail)
            else:
                self.chaos.violate(f"{self.name}: lease bound", detail)
        self.chaos.note(f"{self.name}: {who} in")

    def exit(self, who: str) -> None:
        """``who`` stops holding a lease."""
        self.holders.pop(who, None)
        self.entered.pop(who, None)
        self.chaos.note(f"{self.name}: {who} out")
        self.changed.set()
        self.changed = asyncio.Event()


class LeaderReferee:
    """One leader at a time (checked in the very step a term starts), tokens increasing."""

    def __init__(self, chaos: Chaos, name: str) -> None:
        self.chaos = chaos
        self.name = name
        self.latches: list[LeaderLatch] = []
        self.last_token = 0
        self.terms = 0
        #: id(latch) -> the stamp its current term began at
        self.entered: dict[int, int] = {}
        self.changed = asyncio.Event()

    def attach(self, latch: LeaderLatch) -> None:
        """Referee ``latch`` (before it starts)."""
        self.latches.append(latch)
        latch.add_listener(lambda change: self._on_change(latch, change))

    def _on_change(self, latch: LeaderLatch, change: LeadershipChange) -> None:
        if change.is_leader:
            # The listener runs in the very step of the grant: a report of its client's before
            # this stamp was about an earlier connection (one the session was taken back from,
            # see Chaos.untold), and has not told this term anything.
            now = self.chaos.stamp()
            self.terms += 1
            self.chaos.events[f"{self.name}: terms"] += 1
            others = [x for x in self.latches if x is not latch and x.is_leader]
            if others:
                self.chaos.overlap(
                    f"{self.name}: single leader",
                    f"{latch.identifier} leads while {[x.identifier for x in others]} lead",
                    [
                        (x.term.session_id, self.entered.get(id(x), 0))
                        for x in others
                        if x.term is not None
                    ],
                    entering=change.term.session_id if change.term is not None else 0,
                    other_tokens=[x.fencing_token for x in others],
                    entering_token=change.term.fencing_token if change.term is not None else None,
                    entered=now,
                )
            token = change.term.fencing_token if change.term is not None else 0
            stale = (
                change.term is not None and self.chaos.excused(change.term.session_id, now)
            ) or self.chaos.revoked(token)
            self.chaos.check(
                stale or token > self.last_token,
                f"{self.name}: fencing",
                f"{latch.identifier} leads with token {token} after {self.last_token}",
            )
            self.last_token = max(self.last_token, token)
            self.entered[id(latch)] = now
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
    or claim ended in the documented "may or may not" ConnectionLossError).

    Hostile nodes written by a third party (:attr:`hostile`: what a consumer may hand out for
    them) are no phantoms when taken, may be skipped, and are never taken twice.
    """

    def __init__(self) -> None:
        self.put_ok: set[bytes] = set()
        self.put_uncertain: set[bytes] = set()
        self.taken: Counter[bytes] = Counter()
        #: item -> who took it and when (``take-1@12.345s``), to tell a duplicate's story
        self.takers: dict[bytes, list[str]] = {}
        self.uncertain_claims = 0
        #: what consumers may hand out for the hostile nodes written into the queue
        self.hostile: set[bytes] = set()
        self.hostile_nodes = 0

    def take(self, item: bytes, who: str, when: float | None = None) -> None:
        """``who`` took ``item`` at ``when`` (seconds into the run, if known)."""
        self.taken[item] += 1
        self.takers.setdefault(item, []).append(who if when is None else f"{who}@{when:.3f}s")

    def check(self, chaos: Chaos, name: str = "queue") -> None:
        """Compare what was taken (the final drain included) with what was put."""
        dups = {item: n for item, n in self.taken.items() if n > 1}
        stories = {item: self.takers.get(item, n) for item, n in sorted(dups.items())[:10]}
        chaos.check(
            not dups, f"{name}: no duplicates", f"{len(dups)} taken more than once: {stories}"
        )
        invented = set(self.taken) - self.put_ok - self.put_uncertain - self.hostile
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
        if self.hostile_nodes:
            chaos.events[f"{name}: hostile nodes written"] += self.hostile_nodes
            chaos.events[f"{name}: hostile items taken"] += len(self.hostile & set(self.taken))


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
        #: set by :meth:`close`: the stream may end now (as it does when the cache closes)
        self.closing = False

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
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Whatever ended it (a hostile node's RecursionError as much as a typed error),
            # a cache's stream must live as long as the cache.
            self.chaos.unexpected(f"{self.name} event stream", exc)
            return
        if not (self.closing or self.cache.closed):
            self.chaos.violate(f"{self.name}: stream lives", "the change stream ended early")

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
        except (TimeoutError, CoordinationError) as exc:
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
        self.closing = True
        if self._task is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class ServiceCacheChecker:
    """Follows a :class:`ServiceCache` (a decoder of foreign bytes: the instance JSON) while
    others, hostile ones included, write its service's nodes:

    * its change stream lives as long as the cache (no exception ends it, nor does it end);
    * it keeps serving: ``instances()`` answers after every event (an outage is reported
      once, with the exception that caused it);

    and, at the end, that it lists the instances the mix registered.
    """

    def __init__(self, chaos: Chaos, name: str, cache: ServiceCache) -> None:
        self.chaos = chaos
        self.name = name
        self.cache = cache
        self.events = 0
        self.closing = False
        self._failing = False
        self._sub = cache.changes(buffer_size=1_000_000)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start following (call before the cache starts, to see the initial load)."""
        self._task = asyncio.ensure_future(self._follow())

    async def _follow(self) -> None:
        try:
            async for _event in self._sub:
                self.events += 1
                self.serving("after an event")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.chaos.unexpected(f"{self.name} event stream", exc)
            return
        if not (self.closing or self.cache.closed):
            self.chaos.violate(f"{self.name}: stream lives", "the change stream ended early")

    def serving(self, when: str) -> bool:
        """Whether ``instances()`` answers now; the first failure of an outage is a
        violation (an unexpected error, with its traceback)."""
        try:
            self.cache.instances()
        except Exception as exc:
            if not self._failing:
                self.chaos.unexpected(f"{self.name}: instances() {when}", exc)
            self._failing = True
            return False
        self._failing = False
        return True

    async def settle(self, ids: set[str], timeout: float = 20.0) -> None:
        """Wait until the cache lists every instance id in ``ids``."""
        try:
            await self.cache.wait_for(lambda found: ids <= {i.id for i in found}, timeout)
        except (TimeoutError, CoordinationError) as exc:
            listed = sorted(i.id for i in self.cache.instances()) if self.serving("") else "?"
            self.chaos.violate(f"{self.name}: lists the instances", f"{exc!r}: {listed} vs {ids}")
        except Exception as exc:
            self.chaos.unexpected(f"{self.name}: wait_for", exc)

    async def close(self) -> None:
        """Stop following (the cache must be closed first, or be closing)."""
        self.closing = True
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
