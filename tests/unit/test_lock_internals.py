"""The lock queue's pure parts: sequence order, drivers, the loss policies, LossEvent, and
argument checks (no server needed)."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest

from aiocoord import Client, State, StateChange
from aiocoord._paths import protected_id, protected_prefix, sequence_of, sort_by_sequence
from aiocoord._session.servers import Server
from aiocoord._session.session import Session
from aiocoord.errors import BadArgumentsError, InvalidPathError, InvalidTypeError
from aiocoord.recipes._contention.contender import QueueNode
from aiocoord.recipes._contention.drivers import LeaseDriver
from aiocoord.recipes._contention.holding import LossEvent, LossWatch, is_loss
from aiocoord.recipes.lock import Lock, Mutex
from aiocoord.recipes.multilock import MultiLock
from aiocoord.recipes.rwlock import ReadWriteLock, _ReaderDriver, _WriterDriver
from aiocoord.recipes.semaphore import Semaphore
from aiocoord.testing import session_of


def protected(name: str, seq: int) -> str:
    return f"_c_{uuid.uuid4()}-{name}{seq:010d}"


def test_sequence_is_the_trailing_ten_digits() -> None:
    assert sequence_of("lock-0000000042") == 42
    assert sequence_of(protected("__READ__", 7)) == 7
    assert sequence_of("lock-42") is None
    assert sequence_of("0000000001x") is None
    assert sequence_of("lock-००००००००१२") is None  # non-ASCII digits are not a sequence
    assert sequence_of("") is None


def test_protected_prefix_holds_a_fresh_version_4_uuid_as_curator_writes_it() -> None:
    """``_c_<uuid>-``: a random (version 4, RFC 4122) UUID in its canonical lower-case form,
    which Curator and :func:`protected_id` find again; never the same one twice."""
    seen = set()
    for _ in range(2000):
        prefix = protected_prefix()
        assert prefix.startswith("_c_") and prefix.endswith("-") and len(prefix) == 40
        found = protected_id(prefix + "lock-0000000001")
        assert found is not None and found == prefix[3:-1]
        parsed = uuid.UUID(found)
        assert str(parsed) == found
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        seen.add(found)
    assert len(seen) == 2000
    # Every other bit is random: each of them is seen both ways.
    ors = andn = 0
    for found in seen:
        n = uuid.UUID(found).int
        ors |= n
        andn |= ~n
    fixed = (0xF000 << 64) | (0xC000 << 48)
    assert ors & ~fixed & andn == ((1 << 128) - 1) & ~fixed


def test_order_is_by_sequence_alone_never_by_the_random_prefix() -> None:
    names = [protected("lock-", s) for s in range(50)]
    shuffled = random.sample(names, len(names))
    assert sort_by_sequence([*shuffled, "not-a-queue-node"]) == names
    # A downgrade read node shares its write node's number; both sort there.
    write, read = protected("__WRIT__", 5), protected("__READ__", 5)
    ordered = sort_by_sequence([protected("__WRIT__", 9), read, write, protected("__READ__", 1)])
    assert [sequence_of(n) for n in ordered] == [1, 5, 5, 9]


def test_lease_driver_waits_for_the_node_max_leases_ahead() -> None:
    ahead = ["a", "b", "c", "d"]
    assert LeaseDriver(1).blocker([]) is None
    assert LeaseDriver(1).blocker(ahead) == "d"  # a mutex watches the node just ahead
    assert LeaseDriver(3).blocker(ahead) == "b"
    assert LeaseDriver(4).blocker(ahead) == "a"
    assert LeaseDriver(5).blocker(ahead) is None
    # Monotone: a node fewer ahead never blocks where more did not.
    for k in range(1, 6):
        for n in range(len(ahead) + 1):
            if LeaseDriver(k).blocker(ahead[:n]) is None:
                assert LeaseDriver(k).blocker(ahead[: max(n - 1, 0)]) is None


def test_reader_waits_only_for_the_nearest_writer_ahead() -> None:
    driver = _ReaderDriver()
    w1, r1, w2, r2 = (
        protected("__WRIT__", 1),
        protected("__READ__", 2),
        protected("__WRIT__", 3),
        protected("__READ__", 4),
    )
    assert not driver.relevant(r1)
    assert driver.relevant(w1)
    ahead = [n for n in (w1, r1, w2, r2) if driver.relevant(n)]
    assert driver.blocker(ahead) == w2
    assert driver.blocker([]) is None
    assert not driver.needs_listing_after(w1)


def test_writer_waits_for_anything_ahead_and_relists_after_a_writer_goes() -> None:
    driver = _WriterDriver()
    r, w = protected("__READ__", 1), protected("__WRIT__", 2)
    assert driver.relevant(r)
    assert driver.relevant(w)
    assert driver.blocker([r, w]) == w
    assert driver.blocker([]) is None
    assert driver.needs_listing_after(w)  # it may have downgraded on its way out
    assert not driver.needs_listing_after(r)


@pytest.mark.parametrize(
    ("state", "new_session", "strict", "loss"),
    [
        (State.SUSPENDED, False, False, False),
        (State.SUSPENDED, False, True, True),
        (State.LOST, False, False, True),
        (State.CLOSED, False, False, True),
        (State.RECONNECTED, False, True, False),
        (State.RECONNECTED, True, False, True),
        (State.READ_ONLY, False, True, False),
    ],
)
def test_loss_policies(state: State, new_session: bool, strict: bool, loss: bool) -> None:
    change = StateChange(state, State.CONNECTED, 1, new_session)
    assert is_loss(change, strict) is loss


async def test_loss_event_fires_once_and_is_awaitable() -> None:
    event = LossEvent()
    assert not event.is_set()
    with pytest.raises(asyncio.TimeoutError):
        await event.wait(0.01)
    waiter = asyncio.ensure_future(event.wait(1))
    event._fire(State.SUSPENDED)
    event._fire(State.LOST)  # the first cause stays
    assert await waiter is State.SUSPENDED
    assert await event is State.SUSPENDED
    assert event.is_set()
    assert "suspended" in repr(event)


def offline_client() -> Client:
    """A client whose session was never started: nothing can be sent through it."""
    return Client(Session([Server("127.0.0.1", 1)]))


async def test_loss_watch_reports_once_under_each_policy() -> None:
    client = offline_client()
    session = session_of(client)
    node = QueueNode("/l/n", "n", 1, 10, client.session_id, session.generation)
    lenient: list[State] = []
    strict: list[State] = []
    # No server here: the node's deletion is not watched (the integration tests do that).
    lenient_watch = LossWatch(client, node, False, lambda s, _: lenient.append(s), watch_node=False)
    LossWatch(client, node, True, lambda s, _: strict.append(s), watch_node=False)
    session._set_state(State.SUSPENDED)
    assert (lenient, strict) == ([], [State.SUSPENDED])
    session._set_state(State.RECONNECTED)
    session._set_state(State.LOST)
    assert (lenient, strict) == ([State.LOST], [State.SUSPENDED])
    session._set_state(State.SUSPENDED)
    assert lenient == [State.LOST]  # once only
    lenient_watch.close()
    lenient_watch.close()


def test_bad_arguments_are_refused_at_construction() -> None:
    client = offline_client()
    with pytest.raises(InvalidPathError):
        Lock(client, "relative")
    with pytest.raises(InvalidPathError):
        ReadWriteLock(client, "/a//b")
    with pytest.raises(InvalidTypeError):
        Mutex(client, "/x", suspended_is_loss=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        Lock(object(), "/x")  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        Semaphore(client, "/s", 0)
    with pytest.raises(InvalidTypeError):
        Semaphore(client, "/s", "3")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        MultiLock("/a")  # type: ignore[arg-type]
    assert sum(session_of(client).sent.values()) == 0
