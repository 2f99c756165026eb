"""The lock queue's decision step (:mod:`aiocoord.recipes._contention.turn`) with no server:
every driver, every listing shape, stale listings, and what a waiter does with each answer."""

from __future__ import annotations

import random
import uuid

import pytest

from aiocoord.recipes._contention import listing as listing_module
from aiocoord.recipes._contention.drivers import Driver, LeaseDriver
from aiocoord.recipes._contention.listing import QueueState
from aiocoord.recipes._contention.turn import GIVE_UP, Grant, Probe, Turn
from aiocoord.recipes.rwlock import READ_NAME, WRITE_NAME, _ReaderDriver, _WriterDriver


def node(name: str, seq: int) -> str:
    return f"_c_{uuid.uuid4()}-{name}{seq:010d}"


def queue(*kinds: str) -> list[str]:
    """A listing: one protected node per kind, in sequence order from 1."""
    return [node(kind, seq) for seq, kind in enumerate(kinds, start=1)]


def start(driver: Driver, listing: list[str], ours: int, state: QueueState | None = None) -> Turn:
    state = state or QueueState()
    name = listing[ours]
    return Turn.start(driver, name, ours + 1, listing, state)


MUTEX = LeaseDriver(1)


# --- the first listing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "kinds", "ours"),
    [
        (MUTEX, ["lock-"], 0),
        (LeaseDriver(3), ["lease-"] * 3, 2),
        (_ReaderDriver(), [READ_NAME, READ_NAME, READ_NAME], 2),
        (_WriterDriver(), [WRITE_NAME], 0),
    ],
    ids=["mutex-alone", "semaphore-third-of-three", "reader-behind-readers", "writer-alone"],
)
def test_through_on_the_first_listing_needs_no_more_requests(
    driver: Driver, kinds: list[str], ours: int
) -> None:
    turn = start(driver, queue(*kinds), ours)
    assert turn.decide(QueueState(), blocking=True, own_armed=False) == Grant(confirm_own=False)
    assert turn.decide(QueueState(), blocking=False, own_armed=False) == Grant(confirm_own=False)


@pytest.mark.parametrize(
    ("driver", "kinds", "ours", "blocker", "peek"),
    [
        (MUTEX, ["lock-"] * 5, 4, 3, 2),  # the node just ahead
        (LeaseDriver(3), ["lease-"] * 5, 4, 1, 0),  # the node max_leases places ahead
        (_ReaderDriver(), [WRITE_NAME, READ_NAME, WRITE_NAME, READ_NAME, READ_NAME], 4, 2, 0),
        (_WriterDriver(), [READ_NAME, READ_NAME], 1, 0, None),  # a writer waits for anything
    ],
    ids=["mutex", "semaphore", "reader-nearest-writer", "writer-behind-reader"],
)
def test_blocked_waiter_watches_the_node_its_driver_names_and_the_one_ahead_of_it(
    driver: Driver, kinds: list[str], ours: int, blocker: int, peek: int | None
) -> None:
    listing = queue(*kinds)
    turn = start(driver, listing, ours)
    step = turn.decide(QueueState(), blocking=True, own_armed=False)
    assert isinstance(step, Probe)
    assert step.watch == listing[blocker]
    assert not step.relist  # the first listing is fresh
    # The look-ahead: the relevant node just ahead of the one it waits for, if any.
    assert step.peek == (None if peek is None else listing[peek])
    # Its own node is watched too when it may be let through with no listing after its wake:
    # nothing else ahead of the node it waits for, or a look-ahead that will tell it so.
    assert step.arm_own
    assert turn.ahead == [listing[blocker]] or step.peek is not None


def test_not_blocking_gives_up_on_the_first_listing() -> None:
    turn = start(MUTEX, queue("lock-", "lock-"), 1)
    assert turn.decide(QueueState(), blocking=False, own_armed=False) is GIVE_UP


def test_a_node_of_this_client_ahead_makes_the_waiter_watch_its_own_node() -> None:
    listing = queue("lock-", "lock-", "lock-")
    state = QueueState()
    state.add_mine(listing[1])  # may be handed over locally, with no listing after it
    step = start(MUTEX, listing, 2, state).decide(state, blocking=True, own_armed=False)
    assert step == Probe(relist=False, watch=listing[1], arm_own=True)
    # Armed already: not again.
    step = start(MUTEX, listing, 2, state).decide(state, blocking=True, own_armed=True)
    assert step == Probe(relist=False, watch=listing[1], arm_own=False)


def test_readers_ahead_are_not_in_a_readers_view_at_all() -> None:
    listing = queue(READ_NAME, WRITE_NAME, READ_NAME, READ_NAME)
    turn = start(_ReaderDriver(), listing, 3)
    assert turn.ahead == [listing[1]]


# --- after the wake --------------------------------------------------------------------------


def test_woken_with_nothing_left_ahead_is_granted_after_asking_about_its_own_node() -> None:
    listing = queue("lock-", "lock-")
    state = QueueState()
    turn = start(MUTEX, listing, 1, state)
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe)
    assert turn.probed(state, step, None, set())  # armed: wait on it
    assert turn.waited
    turn.woke(state, listing[0])
    assert listing[0] in state.gone
    # No listing since the wake: only an answer about our node proves it is still there...
    assert turn.decide(state, blocking=True, own_armed=False) == Grant(confirm_own=True)
    # ...unless a watch on it was armed before the wake (events come in zxid order).
    assert turn.decide(state, blocking=True, own_armed=True) == Grant(confirm_own=False)


def test_woken_with_others_left_ahead_lists_before_any_watch() -> None:
    listing = queue("lock-", "lock-", "lock-", "lock-")
    state = QueueState()
    turn = start(MUTEX, listing, 3, state)
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe)
    assert step.watch == listing[2]
    turn.probed(state, step, None, set())
    turn.woke(state, listing[2])
    # The node we waited for was most likely granted, so those ahead most likely went unseen.
    step = turn.decide(state, blocking=True, own_armed=False)
    assert step == Probe(relist=True, watch=None, arm_own=False)
    # The fresh listing shows them gone: through, and the listing proved our node.
    fresh = [listing[3]]
    assert not turn.probed(state, step, fresh, set())
    assert {listing[0], listing[1]} <= set(state.gone)
    assert turn.decide(state, blocking=True, own_armed=False) == Grant(confirm_own=False)


def test_a_stale_listing_that_still_holds_a_node_ahead_waits_for_it() -> None:
    listing = queue("lock-", "lock-", "lock-")
    state = QueueState()
    turn = start(MUTEX, listing, 2, state)
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe)
    turn.probed(state, step, None, set())
    turn.woke(state, listing[1])
    step = turn.decide(state, blocking=True, own_armed=False)
    assert step.relist if isinstance(step, Probe) else False
    assert not turn.probed(state, step, [listing[0], listing[2]], set())
    step = turn.decide(state, blocking=True, own_armed=False)
    assert step == Probe(relist=False, watch=listing[0], arm_own=True)


def test_a_node_to_watch_found_gone_marks_it_and_decides_again() -> None:
    listing = queue("lock-", "lock-", "lock-")
    state = QueueState()
    turn = start(MUTEX, listing, 2, state)
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe) and step.watch == listing[1]
    # NoNode on the watch: gone; the one further ahead may be gone unseen too.
    assert not turn.probed(state, step, None, {listing[1]})
    assert listing[1] in state.gone
    assert turn.stale
    assert turn.decide(state, blocking=True, own_armed=False) == Probe(
        relist=True, watch=None, arm_own=False
    )


def test_a_fresh_listing_that_names_another_blocker_drops_the_watch() -> None:
    listing = queue("lease-", "lease-", "lease-", "lease-")
    state = QueueState()
    driver = LeaseDriver(2)
    turn = start(driver, listing, 3, state)
    turn.need_listing = True  # as after a writer went: a listing and a watch together
    step = turn.decide(state, blocking=True, own_armed=False)
    assert step == Probe(relist=True, watch=listing[1], arm_own=False)
    # The listing, written after the watch, shows the watched node gone.
    assert not turn.probed(state, step, [listing[0], listing[2], listing[3]], set())
    assert listing[1] in state.gone
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe) and step.watch == listing[0]


def test_other_waiters_news_is_used_without_a_request() -> None:
    listing = queue("lock-", "lock-", "lock-")
    state = QueueState()
    turn = start(MUTEX, listing, 2, state)
    # This client's other waiters saw both nodes ahead go (events, NoNode, own deletions).
    state.mark_gone(listing[0])
    state.mark_gone(listing[1])
    assert turn.decide(state, blocking=True, own_armed=False) == Grant(confirm_own=False)


def test_an_exclusive_grant_gone_clears_everything_ahead_of_it() -> None:
    listing = queue(*["lock-"] * 5)
    state = QueueState()
    turn = start(MUTEX, listing, 4, state)
    # Node 3 was granted exclusively (nothing ahead of it then) and is gone: nodes 0-2 are gone
    # too, though nobody saw them go.
    state.mark_gone(listing[3], cleared=True)
    assert turn.decide(state, blocking=True, own_armed=False) == Grant(confirm_own=False)


def test_a_writer_lists_again_after_a_writer_ahead_goes() -> None:
    # A write holder may have downgraded: its read node, with the write node's number, is
    # ahead of us unseen. Only a fresh listing decides.
    listing = queue(WRITE_NAME, WRITE_NAME)
    state = QueueState()
    turn = start(_WriterDriver(), listing, 1, state)
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe)
    turn.probed(state, step, None, set())
    turn.woke(state, listing[0])
    step = turn.decide(state, blocking=True, own_armed=False)
    assert step == Probe(relist=True, watch=None, arm_own=False)
    downgraded = f"_c_{uuid.uuid4()}-{READ_NAME}{1:010d}"
    assert not turn.probed(state, step, [downgraded, listing[1]], set())
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe) and step.watch == downgraded


def test_a_long_queue_is_seen_through_a_window_and_looked_at_further_once_it_empties() -> None:
    listing = queue(*["lock-"] * 100)
    state = QueueState()
    turn = start(MUTEX, listing, 99, state)
    assert len(turn.ahead) < 99 and turn.truncated  # O(window) per waiter, not O(queue)
    for name in turn.ahead:
        state.mark_gone(name)
    # The next nodes further ahead may have gone unseen: checked by a listing first.
    assert turn.decide(state, blocking=True, own_armed=False) == Probe(
        relist=True, watch=None, arm_own=False
    )
    assert not turn.probed(
        state, Probe(relist=True, watch=None, arm_own=False), [listing[99]], set()
    )
    assert turn.decide(state, blocking=True, own_armed=False) == Grant(confirm_own=False)


# --- the look-ahead -------------------------------------------------------------------------


def _waiting(turn: Turn, state: QueueState) -> Probe:
    """The first probe of a blocked waiter, answered: both watches armed."""
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe)
    assert turn.probed(state, step, None, set())
    return step


def test_look_ahead_gone_with_nothing_else_in_view_needs_no_request() -> None:
    listing = queue("lock-", "lock-", "lock-")
    state = QueueState()
    turn = start(MUTEX, listing, 2, state)
    step = _waiting(turn, state)
    assert (step.watch, step.peek, step.arm_own) == (listing[1], listing[0], True)
    turn.peeked(state, listing[0], deleted=True)
    # Nothing was ahead of node 0 in the first listing, and nothing can enter: node 1 is first.
    step = turn.decide(state, blocking=True, own_armed=True)
    assert step == Probe(relist=False, watch=listing[1], arm_own=False, peek=None)
    assert turn.probed(state, step, None, set())  # its watch is kept: nothing to send
    turn.woke(state, listing[1])
    assert turn.decide(state, blocking=True, own_armed=True) == Grant(confirm_own=False)


def test_look_ahead_gone_lists_while_the_watch_on_the_node_ahead_is_kept() -> None:
    listing = queue(*["lock-"] * 6)
    state = QueueState()
    turn = start(MUTEX, listing, 5, state)
    step = _waiting(turn, state)
    assert (step.watch, step.peek) == (listing[4], listing[3])
    turn.peeked(state, listing[3], deleted=True)
    # Nodes 0-2 were ahead in the first listing: most likely gone, maybe not. One listing, and
    # the watch on node 4 stays (no look-ahead from a view about to be listed afresh).
    step = turn.decide(state, blocking=True, own_armed=True)
    assert step == Probe(relist=True, watch=listing[4], arm_own=False, peek=None)
    assert turn.probed(state, step, [listing[4], listing[5]], set())  # node 4 is first now
    assert {listing[0], listing[1], listing[2]} <= set(state.gone)
    # Its deletion lets us through on the event alone (our node's watch was armed before).
    turn.woke(state, listing[4])
    assert turn.decide(state, blocking=True, own_armed=True) == Grant(confirm_own=False)


def test_a_listing_after_the_look_ahead_that_shows_another_node_ahead_watches_that() -> None:
    listing = queue(*["lock-"] * 5)
    state = QueueState()
    turn = start(MUTEX, listing, 4, state)
    _waiting(turn, state)
    turn.peeked(state, listing[2], deleted=True)  # node 2 gave up; node 1 still waits
    step = turn.decide(state, blocking=True, own_armed=True)
    assert step.relist if isinstance(step, Probe) else False
    assert not turn.probed(state, step, [listing[1], listing[3], listing[4]], set())
    step = turn.decide(state, blocking=True, own_armed=True)
    assert step == Probe(relist=False, watch=listing[3], arm_own=False, peek=listing[1])


def test_a_look_ahead_node_found_gone_when_armed_counts_as_its_wake() -> None:
    listing = queue(*["lock-"] * 4)
    state = QueueState()
    turn = start(MUTEX, listing, 3, state)
    step = turn.decide(state, blocking=True, own_armed=False)
    assert isinstance(step, Probe) and step.peek == listing[1]
    assert not turn.probed(state, step, None, {listing[1]})  # NoNode on the look-ahead
    step = turn.decide(state, blocking=True, own_armed=True)
    assert step == Probe(relist=True, watch=listing[2], arm_own=False, peek=None)


def test_a_look_ahead_that_changed_but_stayed_is_watched_again_with_no_listing() -> None:
    listing = queue("lock-", "lock-", "lock-")
    state = QueueState()
    turn = start(MUTEX, listing, 2, state)
    _waiting(turn, state)
    turn.peeked(state, listing[0], deleted=False)  # a data change: node 0 is still there
    step = turn.decide(state, blocking=True, own_armed=True)
    assert step == Probe(relist=False, watch=listing[1], arm_own=False, peek=listing[0])


@pytest.mark.parametrize(
    ("driver", "kinds", "mine"),
    [
        (MUTEX, ["lock-"] * 3, 1),  # the node ahead is this client's: handed over locally
        (_WriterDriver(), [WRITE_NAME] * 3, None),  # a writer lists after a writer goes anyway
        (MUTEX, ["lock-"] * 2, None),  # nothing ahead of the node it waits for
    ],
    ids=["ours-ahead", "writer-behind-writer", "second-in-line"],
)
def test_no_look_ahead_where_it_buys_nothing(
    driver: Driver, kinds: list[str], mine: int | None
) -> None:
    listing = queue(*kinds)
    state = QueueState()
    if mine is not None:
        state.add_mine(listing[mine])
    step = start(driver, listing, len(listing) - 1, state).decide(
        state, blocking=True, own_armed=False
    )
    assert isinstance(step, Probe) and step.peek is None


def test_no_look_ahead_where_the_round_trip_is_cheaper_than_its_requests() -> None:
    # The same queue that looks ahead (see above) with the look-ahead off: the waiter watches
    # the node it waits for only, and lists after its wake.
    listing = queue(*["lock-"] * 4)
    state = QueueState()
    turn = Turn.start(MUTEX, listing[3], 4, listing, state, look_ahead=False)
    step = turn.decide(state, blocking=True, own_armed=False)
    assert step == Probe(relist=False, watch=listing[2], arm_own=False, peek=None)
    assert turn.probed(state, step, None, set())
    turn.woke(state, listing[2])
    step = turn.decide(state, blocking=True, own_armed=False)
    assert step == Probe(relist=True, watch=None, arm_own=False, peek=None)


@pytest.mark.parametrize("look_ahead", [True, False], ids=["look-ahead", "no-look-ahead"])
@pytest.mark.parametrize(
    "driver", [MUTEX, LeaseDriver(3), _ReaderDriver(), _WriterDriver()], ids=repr
)
def test_no_grant_the_live_queue_does_not_allow_whatever_goes_in_whatever_order(
    driver: Driver, look_ahead: bool
) -> None:
    # A model server: the live nodes, deleted one at a time in random order (a holder
    # releasing, a waiter giving up, a session expiring: anything ahead may go), with newcomers
    # behind us. A watch fires when its node goes; a probe is answered from the live nodes at
    # that moment. Whenever the waiter takes a grant, the driver on the *live* nodes ahead must
    # agree; and once nothing is ahead, it must be through.
    rng = random.Random(29)
    kinds = ["lock-", READ_NAME, WRITE_NAME] if not isinstance(driver, LeaseDriver) else ["lock-"]
    if type(driver) is LeaseDriver:
        kinds = ["lease-"]
    for _ in range(400):
        live = queue(*(rng.choice(kinds) for _ in range(rng.randint(1, 12))))
        ours = live[-1]
        if isinstance(driver, _WriterDriver):
            ours = live[-1] = f"_c_{uuid.uuid4()}-{WRITE_NAME}{len(live):010d}"
        if isinstance(driver, _ReaderDriver):
            ours = live[-1] = f"_c_{uuid.uuid4()}-{READ_NAME}{len(live):010d}"
        state = QueueState()
        turn = Turn.start(driver, ours, len(live), list(live), state, look_ahead=look_ahead)
        armed: set[str] = set()
        for _round in range(200):
            step = turn.decide(state, blocking=True, own_armed=True)
            if isinstance(step, Grant):
                relevant = [n for n in live[: live.index(ours)] if driver.relevant(n)]
                assert driver.blocker(relevant) is None, (live, ours)
                break
            assert isinstance(step, Probe)
            wanted = {n for n in (step.watch, step.peek) if n is not None}
            armed &= wanted
            gone = {n for n in wanted - armed if n not in live}
            armed |= wanted - gone
            fresh = list(live) if step.relist else None
            if not turn.probed(state, step, fresh, gone):
                continue
            # Wait: delete nodes ahead until a watched one goes.
            while True:
                ahead = live[: live.index(ours)]
                assert ahead, "a watched node is armed, so something is ahead"
                victim = rng.choice(ahead)
                live.remove(victim)
                if rng.random() < 0.3:
                    live.append(node("lock-", 1000 + len(live)))  # behind us: never ahead
                if victim in armed:
                    armed.discard(victim)
                    if victim == step.watch:
                        turn.woke(state, victim)
                    else:
                        turn.peeked(state, victim, deleted=True)
                    break
        else:
            pytest.fail("the waiter neither got through nor stayed blocked on a live node")
        state.check()


# --- monotone: deciding on a superset of the live nodes is safe ------------------------------


@pytest.mark.parametrize(
    "driver", [MUTEX, LeaseDriver(3), _ReaderDriver(), _WriterDriver()], ids=repr
)
def test_knowing_more_nodes_gone_never_blocks_a_node_that_was_through(driver: Driver) -> None:
    rng = random.Random(20261126)
    kinds = ["lock-", READ_NAME, WRITE_NAME]
    for _ in range(300):
        listing = queue(*(rng.choice(kinds) for _ in range(rng.randint(1, 40))))
        ours = rng.randrange(len(listing))
        state = QueueState()
        known = [n for n in listing[:ours] if rng.random() < 0.3]
        for n in known:
            state.mark_gone(n)
        turn = start(driver, listing, ours, state)
        before = turn.decide(state, blocking=True, own_armed=True)
        for n in listing[:ours]:
            if rng.random() < 0.5:
                state.mark_gone(n)
        turn.need_listing = False  # asked for by a writer's driver: a listing, not a block
        after = turn.decide(state, blocking=True, own_armed=True)
        if isinstance(before, Grant):
            assert isinstance(after, Grant)
        state.check()


# --- the state's invariants ----------------------------------------------------------------


def test_queue_state_invariants_hold_when_names_are_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(listing_module, "_GONE_LIMIT", 4)
    state = QueueState()
    names = queue(*["lock-"] * 10)
    for i, name in enumerate(names):
        state.add_mine(name)
        state.mark_gone(name, cleared=i % 2 == 0)
        state.check()
    assert list(state.gone) == names[-4:]  # the oldest are forgotten first
    assert set(state.cleared) == {names[6], names[8]}  # forgotten with them
    assert not state.mine
    state.add_mine(names[-1])  # seen gone: never ours to hand over again
    assert not state.mine
    state.check()
