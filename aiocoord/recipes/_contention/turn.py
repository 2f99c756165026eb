"""A waiter's decision step: from what it knows of the nodes ahead of its own, what it does next.

Decide, then do (httpcore's pool): :class:`Turn` holds what one waiter knows, plain data and
no I/O; :meth:`Turn.decide` answers with one of :class:`Grant`, :data:`GIVE_UP` or
:class:`Probe`, and the queue's loop (:meth:`SequentialQueue._wait_turn
<aiocoord.recipes._contention.kernel.SequentialQueue>`) carries the answer out and reports
back what it saw (:meth:`Turn.probed`, :meth:`Turn.woke`). The decisions are unit-tested with
no server (``tests/unit/test_turn_decisions.py``).

Why deciding on what a waiter *knows* is safe (a listing read earlier, minus the nodes seen go)
is explained once, in :mod:`aiocoord.recipes._contention.kernel` ("Waking costs O(1)"); the
driver's side of it (monotone decisions) in :mod:`aiocoord.recipes._contention.drivers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiocoord.recipes._contention.drivers import Driver
from aiocoord.recipes._contention.listing import QueueState

__all__ = ["GIVE_UP", "GiveUp", "Grant", "Probe", "Step", "Turn"]


@dataclass(frozen=True)
class Grant:
    """Our node is through. With ``confirm_own``, nothing read since the last wake shows our
    node is still there and no watch on it was armed before the wake: arm one first (its
    answer proves the node), then take the grant."""

    confirm_own: bool


@dataclass(frozen=True)
class GiveUp:
    """Not through on the first listing, and the caller would not wait (``blocking=False``)."""


#: The one :class:`GiveUp`.
GIVE_UP = GiveUp()


@dataclass(frozen=True)
class Probe:
    """One round trip: a fresh listing (``relist``), a getData watch on ``watch``, or both;
    with ``arm_own``, a watch on our own node in the same round trip; with ``peek``, a
    getData watch on the node just ahead of ``watch`` too (the look-ahead: see
    :meth:`Turn.peeked`). A watch already armed on ``watch`` or ``peek`` is kept, not sent
    again."""

    relist: bool
    watch: str | None
    arm_own: bool
    peek: str | None = None


Step = Grant | GiveUp | Probe


@dataclass
class Turn:
    """What one waiter knows of the nodes ahead of its own.

    ``ahead`` holds the nearest relevant nodes ahead (oldest first, at most a window of them,
    see :meth:`QueueState.ahead <aiocoord.recipes._contention.listing.QueueState.ahead>`),
    taken from the listing ``source``; ``truncated``: more are further ahead in it.
    """

    driver: Driver
    name: str
    sequence: int
    source: list[str]
    ahead: list[str] = field(default_factory=list)
    truncated: bool = False
    #: whether nodes in ``ahead`` may have gone unseen (to be checked by a listing first)
    stale: bool = False
    #: whether the driver asked for a fresh listing (a node gone may have let one in ahead)
    need_listing: bool = False
    #: whether a listing read since the last wake holds our node
    listed: bool = True
    #: whether we waited for a node ahead (``Client.stats`` counts it)
    waited: bool = False
    #: whether the look-ahead node went (or changed) since the last decision
    peek_fired: bool = False
    #: whether a fresh listing is owed before the wake (the look-ahead fired, and nodes ahead
    #: of the one we wait for may have gone unseen); the watch on that node is kept meanwhile
    recheck: bool = False
    #: whether the look-ahead may be used (see :meth:`_peek`; the kernel decides by the round
    #: trip: :data:`~aiocoord.recipes._contention.kernel.LOOK_AHEAD_MIN_RTT`)
    look_ahead: bool = True

    @classmethod
    def start(
        cls,
        driver: Driver,
        name: str,
        sequence: int,
        listing: list[str],
        state: QueueState,
        *,
        look_ahead: bool = True,
    ) -> Turn:
        """The view of a waiter whose node ``name`` is in ``listing``; ``look_ahead``: whether
        the look-ahead may be used."""
        turn = cls(driver, name, sequence, listing, look_ahead=look_ahead)
        turn._view(state, listing)
        return turn

    def _view(self, state: QueueState, listing: list[str]) -> None:
        self.source = listing
        self.ahead, self.truncated = state.ahead(listing, self.name, self.sequence, self.driver)

    def decide(self, state: QueueState, *, blocking: bool, own_armed: bool) -> Step:
        """What to do next, given the names ``state`` has seen go since, whether the caller
        waits (``blocking``), and whether a watch on our own node is armed (``own_armed``)."""
        driver = self.driver
        while True:
            self._drop_gone(state)
            blocker = driver.blocker(self.ahead)
            if blocker is None and self.truncated:
                # The nodes in view are gone; look further ahead in the listing (those may
                # have gone unseen, so they are checked before they are trusted).
                self._view(state, self.source)
                self.stale = bool(self.ahead)
                continue
            break
        if blocker is None and not self.need_listing:
            return Grant(confirm_own=not self.listed and not own_armed)
        if not blocking:  # decided on the first, fresh listing
            return GIVE_UP
        if self.peek_fired:
            # The node ahead of the one we wait for went: that one may be first now. A listing
            # tells, while we go on waiting for it; none is needed if the view held nothing
            # else ahead of it (sequence numbers only grow: nothing can have entered).
            self.peek_fired = False
            self.recheck = self.recheck or self._before(blocker) or self.truncated
        # Nodes ahead that may have gone unseen (after a wake: the node we waited for was most
        # likely granted, so they are most likely gone) are checked by one listing, before any
        # watch: one request, where a watch on a node that is gone would be two. The listing
        # is sent alone; a watch follows only if we are still blocked.
        relist = self.need_listing or self.stale or self.recheck
        watch = None if self.stale else blocker
        # (No look-ahead from a view about to be listed afresh: its nodes are most likely
        # gone; the listing's answer says whether one is wanted.)
        peek = None if relist else self._peek(state, watch)
        # A waiter that may be let through with no listing after its wake (nothing else ahead
        # of the node it waits for, that node is this client's and may be handed over locally,
        # or the look-ahead will tell it so) watches its own node too (see the kernel's "Its
        # own node, too").
        arm_own = not own_armed and (
            (watch is not None and self.ahead == [watch]) or watch in state.mine or peek is not None
        )
        return Probe(relist=relist, watch=watch, arm_own=arm_own, peek=peek)

    def _before(self, blocker: str | None) -> bool:
        """Whether the view holds a node ahead of ``blocker``."""
        return blocker is not None and blocker in self.ahead and self.ahead[0] != blocker

    def _peek(self, state: QueueState, watch: str | None) -> str | None:
        """The look-ahead: the node just ahead of ``watch`` in view, to be watched too.

        When it goes, the node we wait for has most likely been granted (for a mutex: it
        was waiting for exactly that node), so a listing read *then*, while that node is
        held, most likely shows it first; its deletion then lets us through on the event
        alone, and the hand-over costs the delete and its notification, not a listing round
        trip more. No herd: every node is watched by at most the two waiters behind it.

        None where the look-ahead buys nothing: the round trip is too cheap to be worth its
        requests (``look_ahead`` false), the node we wait for is this client's (its release
        wakes us locally and tells us what was cleared), the driver lists after that node goes
        anyway (a writer behind a writer), or nothing is ahead of it in view.
        """
        if (
            not self.look_ahead
            or watch is None
            or watch in state.mine
            or self.driver.needs_listing_after(watch)
        ):
            return None
        ahead = self.ahead
        i = ahead.index(watch) if watch in ahead else 0
        return ahead[i - 1] if i > 0 else None

    def _drop_gone(self, state: QueueState) -> None:
        """Drop the names this client saw go since (its own deletions, its other waiters'
        events); a node granted exclusively and then gone clears everything before it."""
        ahead = self.ahead
        gone = state.gone
        if not any(n in gone for n in ahead):
            return
        for n in ahead:
            if n in gone and self.driver.needs_listing_after(n):
                self.need_listing = True
        cut = 0
        for i, n in enumerate(ahead):
            if n in state.cleared:
                cut = i + 1  # granted exclusively, then gone: nothing before it is left
        if cut:
            ahead = ahead[cut:]
            self.truncated = False
        self.ahead = [n for n in ahead if n not in gone]

    def probed(
        self, state: QueueState, probe: Probe, fresh: list[str] | None, gone: set[str]
    ) -> bool:
        """Take in a probe's answers: the fresh listing (None unless ``probe.relist``; it holds
        our node) and the names found gone. Marks those gone in ``state`` (this client's other
        waiters learn it too). Returns whether to wait now on the watches of ``probe.watch``
        and ``probe.peek`` (False: decide again; the next probe says which watches it still
        wants)."""
        keep = probe.watch is not None
        self.stale = False
        if fresh is not None:
            gone.update(set(self.ahead) - set(fresh))
            self._view(state, fresh)
            self.need_listing = False
            self.recheck = False
            self.listed = True
            if keep and self.driver.blocker(self.ahead) != probe.watch:
                keep = False
            if keep and self._peek(state, probe.watch) != probe.peek:
                keep = False  # another look-ahead node now: decide again (the watch stays)
        for n in gone:
            state.mark_gone(n)
            if fresh is None and self.driver.needs_listing_after(n):
                self.need_listing = True
        if gone and fresh is None:
            self.ahead = [n for n in self.ahead if n not in gone]
        if probe.watch is not None and probe.watch in gone:
            keep = False
        if not keep:
            # Listed, or the node to watch was gone: others we know of may be too.
            self.stale = fresh is None and bool(self.ahead)
        elif probe.peek is not None and probe.peek in gone:
            # The look-ahead node was gone already: as if its watch had fired.
            self.peek_fired = True
            keep = False
        else:
            self.waited = True
        return keep

    def peeked(self, state: QueueState, peek: str, deleted: bool) -> None:
        """The watch on the look-ahead node ``peek`` fired. If it is gone (``deleted``), the
        node we wait for may be first now: :meth:`decide` asks for a listing if that is not
        certain already, keeping the watch on it. A data change leaves it in place: the next
        probe only watches it again."""
        if deleted:
            state.mark_gone(peek)
            self.peek_fired = True

    def woke(self, state: QueueState, blocker: str) -> None:
        """The node we waited for is gone: what we hold of the rest may have gone unseen."""
        state.mark_gone(blocker)
        self.need_listing = self.need_listing or self.driver.needs_listing_after(blocker)
        self.ahead = [n for n in self.ahead if n != blocker]
        self.stale = bool(self.ahead)
        self.listed = False
