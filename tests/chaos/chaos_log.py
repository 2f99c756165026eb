"""The chaos log: the seed of a run, the fault and operation counters, the violations and the
summary table (:class:`Chaos`), and what counts as a fault's documented error."""

from __future__ import annotations

import asyncio
import os
import random
import time
import traceback
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass

from aiocoord import State, StateChange
from aiocoord.errors import (
    ConnectionLossError,
    LeadershipLostError,
    LockLostError,
    SessionExpiredError,
)

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

#: The fault kinds of the mix, in the order of the summary table: ``blackhole-expire`` is a
#: forced expiry of a session whose client is blackholed (it hears nothing meanwhile);
#: ``hostile`` is a foreign node written where recipes read (see chaos_hostile).
FAULT_KINDS = (
    "kill",
    "drop",
    "partition",
    "latency",
    "expire",
    "blackhole-expire",
    "hostile",
)


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
        #: session -> the stamp (:meth:`stamp`) at which its forced expiry began
        self.force_expired_at: dict[int, int] = {}
        #: session -> (stamp, seconds into the run) of the latest report, by its client, that
        #: it was cut off (SUSPENDED) or over (LOST): what strict holders
        #: (``suspended_is_loss``) hear
        self.told_suspended: dict[int, tuple[int, float]] = {}
        #: session -> the same, of its client's LOST announcement (every holder hears that)
        self.told_lost: dict[int, tuple[int, float]] = {}
        #: how long a holder told of its loss may still be on the books of its worker: the
        #: worker leaves in the task woken by the news, which may run after another client's
        #: grant processed in the same turn of the loop (see :meth:`leaving`)
        self.leave_grace = 0.5
        self._stamps = 0
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

    def stamp(self) -> int:
        """A number larger than every one handed out before: orders entries, expiries and
        state reports within the run (the referees record one per holder)."""
        self._stamps += 1
        return self._stamps

    def expiring(self, session: int) -> None:
        """The test starts expiring ``session`` by force (before the request goes out)."""
        self.force_expired.add(session)
        self.force_expired_at[session] = self.stamp()

    def on_state(self, change: StateChange) -> None:
        """A tracked client's state listener: remember when it told its holders their
        session was cut off or over (see :meth:`untold`)."""
        if change.state is State.SUSPENDED:
            self.told_suspended[change.session_id] = (self.stamp(), self.elapsed())
        elif change.state is State.LOST:
            now = (self.stamp(), self.elapsed())
            self.told_suspended[change.session_id] = now
            self.told_lost[change.session_id] = now

    def untold(self, session: int, entered: int = 0, *, suspended_is_loss: bool = True) -> bool:
        """Whether ``session`` was expired by force and a holder on it that entered at stamp
        ``entered`` has not been told yet: the one state in which it may still believe it
        holds while the server has ended its session (see :meth:`overlap`).

        Told means its client reported the session SUSPENDED (strict holders, which take a
        suspension for a loss) or LOST after both the expiry began and the holder entered: a
        report before the holder entered was about an earlier connection (a client may take
        its session back between the expiry's attach and its close).
        """
        if session not in self.force_expired:
            return False
        return self._told_since(session, entered, suspended_is_loss) is None

    def leaving(self, session: int, entered: int = 0, *, suspended_is_loss: bool = True) -> bool:
        """Whether a holder on force-expired ``session`` (entered at stamp ``entered``) was
        told less than :attr:`leave_grace` seconds ago: no longer a holder, though its worker
        may not have run yet to say it left. Past the grace, it still acts on a holding it
        was told is gone (or was never told: then :meth:`untold` is true)."""
        if session not in self.force_expired:
            return False
        told = self._told_since(session, entered, suspended_is_loss)
        return told is not None and self.elapsed() - told < self.leave_grace

    def excused(self, session: int, entered: int = 0, *, suspended_is_loss: bool = True) -> bool:
        """:meth:`untold` or :meth:`leaving`: the only holders another may overlap."""
        policy = suspended_is_loss
        return self.untold(session, entered, suspended_is_loss=policy) or self.leaving(
            session, entered, suspended_is_loss=policy
        )

    def _told_since(self, session: int, entered: int, suspended_is_loss: bool) -> float | None:
        """When (seconds into the run) the holder was told, if after both the expiry began
        and it entered; else None."""
        reports = self.told_suspended if suspended_is_loss else self.told_lost
        stamp, when = reports.get(session, (0, 0.0))
        began = self.force_expired_at.get(session, 0)
        if stamp > max(began, entered):
            return when
        # LOST is final: no holder is granted on a session after its client reported it lost,
        # so one that entered later was told before it began.
        stamp, when = self.told_lost.get(session, (0, 0.0))
        return when if stamp > began else None

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
        others: Iterable[tuple[int, int]],
        entering: int = 0,
        other_tokens: Iterable[int | None] = (),
        entering_token: int | None = None,
        *,
        entered: int = 0,
        suspended_is_loss: bool = True,
    ) -> None:
        """Two holders where there may be one. ``others`` are the holders already inside, as
        (session, the stamp they entered at); ``entering`` the newcomer's session (``entered``:
        a stamp before its grant, 0 if unknown, the narrowest). A violation, unless the session
        of every holder but one was expired *by force* (``expire_session``) and its holder
        has not been told yet (:meth:`untold`).

        ZooKeeper's exclusion rests on timing: a session expires only after the session
        timeout without a heartbeat, and a client declares it lost by itself before that
        (see :mod:`aiocoord._session.liveness`), so a holder always hears first. A forced expiry
        skips that premise: the server ends the session at once, and the news may reach the next
        holder before it reaches the old one. It may even reach the next holder before the
        old one has processed its own grant, which the server made *before* the expiry (the
        wake-up was already on its way): in the server's order the two holdings do not
        overlap, only the clients' beliefs do. Only fencing tokens protect against that (the
        force-expired holder's token is the older one), so those overlaps are counted, not
        failed, while token order is still checked. Once the old holder has been told, it is
        a holder no longer: its worker has :attr:`leave_grace` to say it left (see
        :meth:`leaving`), and an overlap with it after that is a violation again.
        """
        others = list(others)
        tokens = list(other_tokens)

        policy = suspended_is_loss

        def untold(session: int, since: int) -> bool:
            return self.untold(session, since, suspended_is_loss=policy)

        def leaving(session: int, since: int) -> bool:
            return self.leaving(session, since, suspended_is_loss=policy)

        if tokens and all(self.revoked(t) for t in tokens):
            self.tolerate("third-party deletion overlaps (fenced)", invariant, detail)
        elif entering and leaving(entering, entered):
            # Granted, then told of the loss before its worker ran: it never acted as holder.
            self.tolerate("overlaps with told holders leaving", invariant, detail)
        elif entering and untold(entering, entered):
            # The newcomer is the force-expired one: granted before the expiry in the server's
            # order, heard of after the next holder's grant. Its token must be the older one.
            fenced = entering_token is None or all(t is None or t > entering_token for t in tokens)
            if fenced:
                self.tolerate("forced-expiry overlaps (fenced)", invariant, detail)
            elif others and all(untold(s, since) or leaving(s, since) for s, since in others):
                # The holders inside lost their sessions too (by force, untold or leaving):
                # every side is stale, and the newcomer's token is the newer one, so a fenced
                # resource turns the older holders away.
                self.tolerate("forced-expiry overlaps (fenced)", invariant, detail)
            else:
                self.violate(invariant, detail + f" (entering token {entering_token} not older)")
        elif others and all(untold(s, since) or leaving(s, since) for s, since in others):
            if all(untold(s, since) for s, since in others):
                self.tolerate("forced-expiry overlaps (fenced)", invariant, detail)
            else:
                self.tolerate("overlaps with told holders leaving", invariant, detail)
        else:
            told = [
                f"0x{s:x}"
                for s, t in others
                if s in self.force_expired and not untold(s, t) and not leaving(s, t)
            ]
            if told:
                detail += f" (force-expired {told} had been told)"
            if entering in self.force_expired:
                detail += f" (the newcomer's 0x{entering:x}, force-expired, had been told)"
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
