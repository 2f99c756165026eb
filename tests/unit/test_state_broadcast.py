"""The session's state stream hands each change to its listeners: in the order they were
added, each registration on its own (one callback added twice is called twice, and each
unsubscribe removes its own registration), whatever order they leave in."""

from __future__ import annotations

import random
from collections.abc import Callable

from aiocoord._session.states import State, StateBroadcast, StateChange


def _change(state: State) -> StateChange:
    return StateChange(state=state, previous=None, session_id=1)


async def test_listeners_hear_each_change_in_the_order_they_were_added() -> None:
    broadcast = StateBroadcast()
    heard: list[tuple[str, State]] = []
    broadcast.add_listener(lambda c: heard.append(("a", c.state)))
    broadcast.add_listener(lambda c: heard.append(("b", c.state)))
    broadcast.publish(_change(State.SUSPENDED))
    broadcast.publish(_change(State.RECONNECTED))
    assert heard == [
        ("a", State.SUSPENDED),
        ("b", State.SUSPENDED),
        ("a", State.RECONNECTED),
        ("b", State.RECONNECTED),
    ]


async def test_a_callback_added_twice_is_called_twice_and_leaves_once_per_remove() -> None:
    broadcast = StateBroadcast()
    heard: list[State] = []
    remove_first = broadcast.add_listener(_appender(heard))
    callback = _appender(heard)
    remove_one = broadcast.add_listener(callback)
    remove_two = broadcast.add_listener(callback)
    broadcast.publish(_change(State.SUSPENDED))
    assert len(heard) == 3
    remove_one()
    remove_one()  # again: a no-op, the other registration of the same callback stays
    broadcast.publish(_change(State.LOST))
    assert heard[3:] == [State.LOST, State.LOST]
    remove_two()
    remove_first()
    broadcast.publish(_change(State.CLOSED))
    assert len(heard) == 5


def _appender(into: list[State]) -> Callable[[StateChange], None]:
    return lambda change: into.append(change.state)


async def test_thousands_of_listeners_leave_in_any_order() -> None:
    # A client holding 10,000 locks has a listener per holding; they are released in any
    # order, and each leaves alone: the others keep hearing every change.
    broadcast = StateBroadcast()
    heard: dict[int, int] = {}
    removes: list[Callable[[], None]] = []
    for i in range(10_000):
        heard[i] = 0
        removes.append(broadcast.add_listener(lambda _, i=i: heard.__setitem__(i, heard[i] + 1)))
    order = list(range(10_000))
    random.Random(7).shuffle(order)
    gone = set(order[:9_000])
    for i in order[:9_000]:
        removes[i]()
    broadcast.publish(_change(State.SUSPENDED))
    assert {i for i, n in heard.items() if n == 1} == set(range(10_000)) - gone
    assert all(heard[i] == 0 for i in gone)


async def test_a_listener_removed_by_another_during_a_change_still_hears_that_change() -> None:
    # Each change goes to the listeners there when it happened; one that leaves meanwhile
    # hears no later change.
    broadcast = StateBroadcast()
    heard: list[str] = []
    removes: list[Callable[[], None]] = []

    def first(change: StateChange) -> None:
        heard.append("first")
        removes[0]()

    broadcast.add_listener(first)
    removes.append(broadcast.add_listener(lambda c: heard.append("second")))
    broadcast.publish(_change(State.SUSPENDED))
    broadcast.publish(_change(State.RECONNECTED))
    assert heard == ["first", "second", "first"]
