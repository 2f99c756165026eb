"""Lock and Mutex against a real server: exclusion, fencing, reentrancy, ownership, layout,
non-blocking and timed-out acquires, bad input."""

from __future__ import annotations

import asyncio
import gc
import itertools
import re

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client, Participant
from aiocoord.errors import (
    BadArgumentsError,
    InvalidPathError,
    InvalidTypeError,
    LockNotOwnedError,
)
from aiocoord.recipes.lock import Lock, Mutex
from aiocoord.testing import session_of

LOCK_NODE = re.compile(
    r"^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$"
)


@pytest.mark.parametrize("layout", ["curator", "kazoo"])
async def test_mutual_exclusion_8_clients_100_acquisitions_each(
    zk_connect: Factory, layout: str
) -> None:
    clients = [await zk_connect() for _ in range(8)]
    log: list[tuple[str, int, int]] = []  # (enter|exit, client index, fencing token)

    async def worker(i: int, client: Client) -> None:
        lock = Lock(client, "/mutex", layout=layout)
        for _ in range(100):
            async with lock:
                token = lock.fencing_token
                assert token is not None
                log.append(("enter", i, token))
                # A round trip inside the critical section gives an overlap every chance.
                await client.exists("/mutex")
                log.append(("exit", i, token))

    await asyncio.wait_for(
        asyncio.gather(*(worker(i, c) for i, c in enumerate(clients))), timeout=60
    )
    enters = [e for e in log if e[0] == "enter"]
    assert len(enters) == 800
    for k in range(0, len(log), 2):
        enter, leave = log[k], log[k + 1]
        assert (enter[0], leave[0]) == ("enter", "exit"), f"overlap at entry {k}"
        assert enter[1:] == leave[1:]
    tokens = [t for _, _, t in enters]
    assert all(a < b for a, b in itertools.pairwise(tokens)), "tokens not increasing"
    # Every contender got in: the queue is fair, nobody starved.
    assert {i for _, i, _ in enters} == set(range(8))
    # Releases return before their deletes are answered: wait for them before looking.
    await asyncio.gather(*(c.wait_background() for c in clients))
    assert await child_names(clients[0], "/mutex") == []


async def test_uncontended_acquire_is_one_pipelined_round_trip(zk_client: Client) -> None:
    lock = Lock(zk_client, "/fast")
    await lock.acquire()  # first use makes the parent
    await lock.release()
    before = dict(session_of(zk_client).sent)
    assert await lock.acquire()
    sent = {op: n - before.get(op, 0) for op, n in session_of(zk_client).sent.items()}
    # create2 (15) and getChildren (8) only: no exists, no getData, no second listing.
    assert {op: n for op, n in sent.items() if n} == {15: 1, 8: 1}
    await lock.release()


async def test_a_released_holding_leaves_no_cycle_for_the_garbage_collector(
    zk_client: Client,
) -> None:
    """Holding and its loss watch are freed when released (the watch lets go of its
    holder's callback on close), not left for the collector: an acquire and release cycle
    makes no garbage that only the cyclic collector frees."""
    lock = Lock(zk_client, "/no-garbage")
    for _ in range(5):  # the first use makes the parent; let the rest settle
        await lock.acquire()
        await lock.release()
    await zk_client.wait_background()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(20):
            await lock.acquire()
            await lock.release()
        await zk_client.wait_background()
        gc.collect()
        kinds = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not kinds & {"Holding", "LossWatch", "LossEvent"}, kinds


async def test_layout_is_curators_and_data_is_the_identifier(zk_client: Client) -> None:
    lock = Lock(zk_client, "/layout/a", identifier="svc-1")
    async with lock:
        (name,) = await zk_client.children("/layout/a")
        assert LOCK_NODE.match(name), name
        assert lock.node_path == f"/layout/a/{name}"
        data, stat = await zk_client.get(f"/layout/a/{name}")
        assert data == b"svc-1"
        assert stat.ephemeral_owner == zk_client.session_id
        assert lock.fencing_token == stat.czxid
        assert [p.identifier for p in await lock.contenders()] == ["svc-1"]
    # The node is gone at once; the parent is a container, which the server removes on its
    # own schedule once it is empty (so it may be gone too).
    assert await child_names(zk_client, "/layout/a") == []


async def test_contenders_in_queue_order_with_default_identifiers(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    holder = Lock(a, "/order")
    await holder.acquire()
    waiter = Lock(b, "/order", identifier="second")

    async def wait_turn() -> list[Participant]:
        async with waiter:
            return await waiter.contenders()

    task = asyncio.create_task(wait_turn())
    await eventually(lambda: _count(a, "/order", 2))
    first, second = await holder.contenders()
    assert (second.identifier, second.holds, first.holds) == ("second", False, True)
    assert first.identifier.endswith(f":{asyncio.current_task().get_name()}")  # type: ignore[union-attr]
    assert sorted([first.node_name, second.node_name]) == sorted(await a.children("/order"))
    await holder.release()
    assert [(p.identifier, p.holds) for p in await asyncio.wait_for(task, 10)] == [("second", True)]


async def _count(client: Client, path: str, n: int) -> bool:
    return len(await child_names(client, path)) == n


async def test_reentrant_per_task(zk_connect: Factory) -> None:
    client = await zk_connect()
    lock = Lock(client, "/re")
    assert await lock.acquire()
    assert await lock.acquire()  # same task: counts up, no second node
    assert len(await client.children("/re")) == 1

    async def other_task() -> bool:
        return await lock.acquire(blocking=False)

    # Another task of this process is just another contender.
    assert not await asyncio.create_task(other_task())
    await lock.release()
    assert lock.is_held
    assert lock.held_by_current_task
    assert not await asyncio.create_task(other_task())
    await lock.release()
    assert not lock.is_held
    assert await child_names(client, "/re") == []

    async def take_and_give() -> None:
        assert await lock.acquire(timeout=5)
        assert lock.held_by_current_task
        await lock.release()

    await asyncio.create_task(take_and_give())


async def test_release_by_a_task_that_does_not_hold_it_raises(zk_client: Client) -> None:
    lock = Lock(zk_client, "/owner")
    with pytest.raises(LockNotOwnedError):
        await lock.release()
    await lock.acquire()

    async def intruder() -> None:
        await lock.release()

    with pytest.raises(LockNotOwnedError):
        await asyncio.create_task(intruder())
    assert lock.is_held
    assert len(await zk_client.children("/owner")) == 1
    await lock.release()


async def test_mutex_is_not_reentrant(zk_client: Client) -> None:
    mutex = Mutex(zk_client, "/mutex-nr")
    assert await mutex.acquire()
    # The same task asking again waits like anybody else.
    assert not await mutex.acquire(blocking=False)
    with pytest.raises(aiocoord.TimeoutError):
        await mutex.acquire(timeout=0.3)
    assert len(await zk_client.children("/mutex-nr")) == 1

    second = asyncio.create_task(mutex.acquire())
    await eventually(lambda: _count(zk_client, "/mutex-nr", 2))

    async def releaser() -> None:
        await mutex.release()  # any task may release a Mutex

    await asyncio.create_task(releaser())
    assert await asyncio.wait_for(second, 10)
    assert mutex.is_held
    await mutex.release()
    with pytest.raises(LockNotOwnedError):
        await mutex.release()
    assert await child_names(zk_client, "/mutex-nr") == []


async def test_mutex_and_lock_on_one_path_exclude_each_other(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    async with Mutex(a, "/shared"):
        assert not await Lock(b, "/shared").acquire(blocking=False)
    lock = Lock(b, "/shared")
    async with lock:
        assert not await Mutex(a, "/shared").acquire(blocking=False)


async def test_failed_non_blocking_acquire_leaves_no_node(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    holder = Lock(a, "/nb")
    await holder.acquire()
    other = Lock(b, "/nb")
    before = dict(session_of(b).sent)
    assert not await other.acquire(blocking=False)
    with pytest.raises(aiocoord.TimeoutError):  # one look, then the timeout
        await other.acquire(timeout=0)
    assert not other.is_held
    await b.wait_background()  # the deletes of its nodes, written before it answered
    assert len(await a.children("/nb")) == 1
    sent = {op: n - before.get(op, 0) for op, n in session_of(b).sent.items()}
    assert sent.get(15) == 2
    assert sent.get(2) == 2
    await holder.release()
    await a.wait_background()  # the release's delete, answered: b's listing no longer sees it
    assert await other.acquire(blocking=False)
    await other.release()


async def test_release_returns_before_the_answer_and_a_sync_after_it_waits_for_it(
    zk_connect: Factory,
) -> None:
    a, b = await zk_connect(), await zk_connect()
    for _ in range(20):
        lock, other = Lock(a, "/handed"), Lock(b, "/handed")
        await lock.acquire()
        path = lock.node_path
        assert path is not None
        await lock.release()  # the delete is written; its answer is followed in the background
        assert not lock.is_held
        await a.sync()  # answered after the delete: the server has applied it
        assert await b.exists(path) is None
        assert await other.acquire(blocking=False)
        await other.release()
    await a.wait_background()
    assert a.pending_deletes() == 0


@pytest.mark.parametrize("layout", ["curator", "kazoo"])
async def test_timed_out_acquire_raises_and_leaves_no_node(
    zk_connect: Factory, layout: str
) -> None:
    a, b = await zk_connect(), await zk_connect()
    holder = Lock(a, "/to", layout=layout)
    await holder.acquire()
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(aiocoord.TimeoutError) as raised:
        await Lock(b, "/to", layout=layout).acquire(timeout=0.5)
    assert isinstance(raised.value, TimeoutError)  # the builtin too
    assert 0.45 <= loop.time() - started < 5
    await b.wait_background()  # its delete was written before the raise; now it is answered
    assert len(await a.children("/to")) == 1
    assert session_of(b).watches.counts()["waiters"] == 0
    await holder.release()


async def test_bad_input_is_refused_before_anything_is_sent(zk_client: Client) -> None:
    before = dict(session_of(zk_client).sent)
    with pytest.raises(InvalidPathError):
        Lock(zk_client, "no-slash")
    with pytest.raises(InvalidPathError):
        Lock(zk_client, "/trailing/")
    with pytest.raises(InvalidTypeError):
        Lock(zk_client, 42)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        Lock("not a client", "/x")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        Lock(zk_client, "/x", identifier=b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        Mutex(zk_client, "/x", cancel_on_loss="yes")  # type: ignore[arg-type]
    lock = Lock(zk_client, "/x")
    with pytest.raises(BadArgumentsError):
        await lock.acquire(timeout=-1)
    with pytest.raises(InvalidTypeError):
        await lock.acquire(timeout="soon")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        await lock.acquire(blocking=1)  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        await Mutex(zk_client, "/x").acquire(timeout=-0.1)
    assert dict(session_of(zk_client).sent) == before
    assert not await zk_client.exists("/x")


async def test_lock_takes_the_options(zk_client: Client) -> None:
    lock = Lock(zk_client, "/opts", identifier="me", cancel_on_loss=True, suspended_is_loss=True)
    assert lock.cancel_on_loss
    assert lock.suspended_is_loss
    async with lock:
        assert [p.identifier for p in await lock.contenders()] == ["me"]
