"""AtomicCounter under faults: 8 clients x 200 increments through a FaultProxy that cuts
every connection periodically and loses the replies of applied writes; the count is exact
and every increment got its own value."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import pytest
from support import Factory

from aiocoord import ExponentialBackoff, State
from aiocoord._wire.opcodes import Op
from aiocoord.errors import ConnectionLossError, NoNodeError
from aiocoord.recipes._marker import FENCE
from aiocoord.recipes.counter import AtomicCounter, AtomicValue, SharedCount
from aiocoord.testing import FaultProxy, PendingDrop, expire_client, expire_session, session_of

CLIENTS = 8
INCREMENTS = 200


#: The failure-semantics rows of docs/recipes/counters.md (SharedValue's are SharedCount's) and
#: its rows of docs/recipes.md, with the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/counters.md | Failure semantics | Hostile or foreign node data": [
        "test_hostile_data.py::test_hostile_count_data_is_skipped_by_the_stream_and_wait_for",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | `SharedCount`": [
        "test_shared_value.py::test_try_set_whose_reply_is_lost_is_applied_once",
        "test_a_shared_count_is_stale_while_cut_off_and_re_read_after_an_expiry",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | "
    "`AtomicCounter`, `Queue.put`/`get`, `PriorityQueue`": [
        "test_concurrent_increments_are_exact_under_dropped_connections_and_lost_replies",
        "test_queue.py::test_put_and_claim_whose_replies_are_lost_happen_exactly_once",
        "test_an_increment_whose_reply_is_lost_before_an_expiry_is_a_connection_loss",
    ],
    "recipes/counters.md | Failure semantics | Connection lost (SUSPENDED)": [
        "test_shared_value.py::test_try_set_whose_reply_is_lost_is_applied_once",
        "test_a_shared_count_is_stale_while_cut_off_and_re_read_after_an_expiry",
        "test_concurrent_increments_are_exact_under_dropped_connections_and_lost_replies",
    ],
    "recipes/counters.md | Failure semantics | Session expired (LOST)": [
        "test_a_shared_count_is_stale_while_cut_off_and_re_read_after_an_expiry",
        "test_an_increment_whose_reply_is_lost_before_an_expiry_is_a_connection_loss",
    ],
    "recipes/counters.md | Failure semantics | Cancellation": [
        "test_shared_value.py::test_a_cancelled_wait_leaves_the_value_working",
    ],
    "recipes/counters.md | Failure semantics | Timeout": [
        "test_shared_value.py::test_a_cancelled_wait_leaves_the_value_working",
        "test_counter.py::test_gives_up_with_succeeded_false_when_retries_run_out",
    ],
}


async def test_concurrent_increments_are_exact_under_dropped_connections_and_lost_replies(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    proxy = zk_fault_proxy
    clients = [await zk_connect(proxy.connect_string, session_timeout=10) for _ in range(CLIENTS)]
    observer = await zk_connect()
    retry = ExponentialBackoff(0.001, 10_000, 0.05)
    counters = [AtomicCounter(c, "/counters/hits", retry=retry) for c in clients]
    results: list[list[AtomicValue]] = [[] for _ in counters]
    finished = asyncio.Event()
    drops = 0
    lost_replies: list[PendingDrop] = []

    async def worker(i: int) -> None:
        for _ in range(INCREMENTS):
            results[i].append(await counters[i].increment())

    async def chaos() -> None:
        nonlocal drops
        while not finished.is_set():
            # Every few rounds, the reply of an applied write is lost (the worst case: the
            # write happened, the client cannot know); otherwise every connection is cut.
            if drops % 3 == 0:
                lost_replies.append(proxy.drop_after_request(lambda xid, op: op == Op.MULTI))
            else:
                proxy.drop()
            drops += 1
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(finished.wait(), 0.15)

    chaos_task = asyncio.ensure_future(chaos())
    try:
        await asyncio.wait_for(asyncio.gather(*(worker(i) for i in range(CLIENTS))), 50)
    finally:
        finished.set()
        await chaos_task
        proxy.heal()
    for counter in counters:
        await counter.close()
    for client in clients:
        await client.close()  # while the proxy still forwards the close

    total = CLIENTS * INCREMENTS
    assert await AtomicCounter(observer, "/counters/hits").get() == total
    flat = [r for rs in results for r in rs]
    assert all(r.succeeded for r in flat)
    # Each increment moved the counter by exactly one step of its own.
    assert sorted(r.post_value for r in flat) == list(range(1, total + 1))
    assert all(r.post_value == (r.pre_value or 0) + 1 for r in flat)
    # The faults happened: connections were cut and applied writes lost their replies.
    assert drops >= 5
    assert sum(1 for arm in lost_replies if arm.done()) >= 2
    # No marker node is left behind.
    assert await observer.children("/counters/hits") == []


async def test_a_shared_count_is_stale_while_cut_off_and_re_read_after_an_expiry(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=4)
    other = await zk_connect()
    async with (
        SharedCount(client, "/counters/shared", 1) as mine,
        SharedCount(other, "/counters/shared", 1) as theirs,
    ):
        zk_fault_proxy.blackhole()
        zk_fault_proxy.drop()
        await client.wait_for(State.SUSPENDED, timeout=5)
        await theirs.set(2)
        assert mine.value == 1  # stale, not wrong: nothing can reach it
        zk_fault_proxy.heal()
        assert (await mine.wait_for(lambda v: v == 2, timeout=10)).value == 2
        await expire_client(client, zookeeper.connect_string)
        await theirs.set(3)
        assert (await mine.wait_for(lambda v: v == 3, timeout=10)).value == 3
        assert await mine.try_set(4, mine.versioned.version)
        assert (await theirs.wait_for(lambda v: v == 4, timeout=10)).value == 4


async def test_an_increment_whose_reply_is_lost_before_an_expiry_is_a_connection_loss(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    """The marker went with the session: the change may or may not have been applied, and
    it is not silently sent again."""
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=2)
    observer = await zk_connect()
    counter = AtomicCounter(client, "/counters/expiry")
    await counter.increment()
    session = client.session_id
    password = session_of(client).password
    zk_fault_proxy.hold_new_connections()
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
    changing = asyncio.ensure_future(counter.increment())
    await lost  # applied on the server, the reply lost; no new connection gets through
    await expire_session(session, password, zookeeper.connect_string)
    zk_fault_proxy.hold_new_connections(False)
    with pytest.raises(ConnectionLossError, match="may or may not"):
        await asyncio.wait_for(changing, 20)
    assert await AtomicCounter(observer, "/counters/expiry").get() == 2  # applied once
    await counter.close()


async def test_no_marker_outlives_close_after_a_storm_of_lost_replies(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    """Nine in ten transaction replies lost while tasks share one counter: a transaction behind
    a lost one never reaches the server, so its check fences it off (a marker made by the
    client itself). ``close()`` leaves none of them, nor any marker, behind; and the count is
    exact. Repeated: the faults fall differently each round."""
    proxy = zk_fault_proxy
    client = await zk_connect(proxy.connect_string, session_timeout=3)
    observer = await zk_connect()
    retry = ExponentialBackoff(0.001, 10_000, 0.05)
    chance = random.Random(47)
    storming = True

    def lose(xid: int, op: int) -> bool:
        return storming and op == Op.MULTI and chance.random() < 0.9

    async def storm() -> None:
        while True:
            await proxy.drop_after_request(lose)

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 6
    rounds = fenced = 0
    while rounds < 2 or (rounds < 8 and loop.time() < deadline):
        path = f"/counters/storm{rounds}"
        counter = AtomicCounter(client, path, retry=retry)

        async def worker(counter: AtomicCounter = counter) -> None:
            for _ in range(10):
                assert (await counter.increment()).succeeded

        storming = True
        storming_task = asyncio.ensure_future(storm())
        try:
            await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(6))), 30)
        finally:
            storming = False
            storming_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await storming_task
        for name in await observer.children(path):
            with contextlib.suppress(NoNodeError):
                fenced += (await observer.get(f"{path}/{name}"))[0] == FENCE
        await counter.close()
        assert await observer.children(path) == [], f"round {rounds}"
        assert await AtomicCounter(observer, path).get() == 60
        rounds += 1
    assert fenced  # the storm made fences, which close() waited out and deleted
