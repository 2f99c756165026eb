"""Barrier and DoubleBarrier against a real server: waiting until removed (also across a
dropped connection), five participants on separate clients entering and leaving together,
Curator's layout, timeouts leaving nothing behind."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client, State
from aiocoord.recipes.barrier import Barrier, BarrierError, DoubleBarrier
from aiocoord.testing import FaultProxy, expire_client, session_of

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


#: The failure-semantics rows of docs/recipes/barriers.md and its row of docs/recipes.md, with
#: the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | `Barrier`, `DoubleBarrier`": [
        "test_a_barrier_waiter_goes_on_through_a_cut_link_and_an_expiry",
        "test_a_double_barrier_participant_whose_session_expires_makes_its_node_again",
    ],
    "recipes/barriers.md | Failure semantics | Connection lost / session expired": [
        "test_barrier_removed_while_the_waiter_is_disconnected",
        "test_a_barrier_waiter_goes_on_through_a_cut_link_and_an_expiry",
        "test_a_double_barrier_participant_whose_session_expires_makes_its_node_again",
    ],
    "recipes/barriers.md | Failure semantics | Cancellation": [
        "test_a_cancelled_wait_or_enter_leaves_nothing",
    ],
    "recipes/barriers.md | Failure semantics | Timeout": [
        "test_enter_times_out_and_leaves_no_node",
    ],
}


async def test_barrier_holds_waiters_until_removed(zk_connect: Factory) -> None:
    waiter_client, owner_client = await zk_connect(), await zk_connect()
    waiter, owner = Barrier(waiter_client, "/gate/a"), Barrier(owner_client, "/gate/a")
    assert await waiter.wait(0.1)  # not up: passes at once
    await owner.set()
    await owner.set()  # idempotent
    assert await waiter.is_set()
    assert await owner_client.exists("/gate/a") is not None
    with pytest.raises(aiocoord.TimeoutError):
        await waiter.wait(0.1)
    waiting = [asyncio.ensure_future(waiter.wait()) for _ in range(3)]
    await eventually(lambda: _waiters(waiter_client, 3))
    assert not any(w.done() for w in waiting)
    await owner.remove()
    await owner.remove()  # idempotent
    assert await asyncio.wait_for(asyncio.gather(*waiting), 5) == [True, True, True]
    # A waiter that saw the node gone cancels the exists watch it just set; that waiter
    # leaves the table on the cancellation's callback, a loop turn or two later.
    await eventually(lambda: _no_waiters(waiter_client), 5, "the waiters to leave the table")


async def _no_waiters(client: Client) -> bool:
    return session_of(client).watches.counts()["waiters"] == 0


async def _waiters(client: Client, n: int) -> bool:
    return session_of(client).watches.counts()["waiters"] >= n


async def test_barrier_removed_while_the_waiter_is_disconnected(zk_connect: Factory) -> None:
    waiter_client, owner_client = await zk_connect(), await zk_connect()
    owner = Barrier(owner_client, "/gate/b")
    await owner.set()
    waiting = asyncio.ensure_future(Barrier(waiter_client, "/gate/b").wait(15))
    await eventually(lambda: _waiters(waiter_client, 1))
    session_of(waiter_client).drop_connection()
    await owner.remove()
    await waiter_client.wait_for(State.RECONNECTED, timeout=10)
    assert await asyncio.wait_for(waiting, 10)


async def test_five_participants_enter_together_and_leave_together(zk_connect: Factory) -> None:
    n = 5
    clients = [await zk_connect() for _ in range(n)]
    barriers = [DoubleBarrier(c, "/double", n) for c in clients]
    loop = asyncio.get_running_loop()
    arrived: list[float] = []
    entered: list[float] = []
    leaving: list[float] = []
    left: list[float] = []
    may_leave = [asyncio.Event() for _ in range(n)]

    async def participant(i: int) -> None:
        arrived.append(loop.time())
        async with barriers[i]:
            entered.append(loop.time())
            await may_leave[i].wait()
            leaving.append(loop.time())
        left.append(loop.time())

    tasks: list[asyncio.Task[None]] = []
    for i in range(n):
        tasks.append(asyncio.ensure_future(participant(i)))
        # One at a time: each is inside the barrier's node set before the next arrives.
        await eventually(lambda i=i: _nodes(clients[0], i + 1))
        if i < n - 1:
            assert entered == []
    await eventually(lambda: _true(len(entered) == n))
    assert min(entered) >= max(arrived)
    names = await clients[0].children("/double")
    assert "ready" in names
    assert sorted(x for x in names if x != "ready") == sorted(b.node_name for b in barriers)
    assert all(UUID.match(b.node_name) for b in barriers)
    assert all(b.entered for b in barriers)

    # They leave one at a time; nobody is out before the last one started leaving.
    for i in range(n):
        may_leave[i].set()
        await eventually(lambda i=i: _true(len(leaving) == i + 1))
        if i < n - 1:
            assert left == []
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert min(left) >= max(leaving)
    assert await child_names(clients[0], "/double") == []
    assert not any(b.entered for b in barriers)


async def _nodes(client: Client, n: int) -> bool:
    try:
        names = await client.children("/double")
    except Exception:
        return False
    return len([x for x in names if x != "ready"]) == n


async def _true(value: bool) -> bool:
    return value


async def test_enter_times_out_and_leaves_no_node(zk_connect: Factory) -> None:
    client = await zk_connect()
    barrier = DoubleBarrier(client, "/lonely", 2)
    with pytest.raises(aiocoord.TimeoutError):
        await barrier.enter(timeout=0.2)
    assert not barrier.entered
    await client.wait_background()
    assert await child_names(client, "/lonely") == []
    with pytest.raises(BarrierError):
        await barrier.leave()


async def test_a_single_participant_barrier_opens_at_once(zk_connect: Factory) -> None:
    client = await zk_connect()
    async with DoubleBarrier(client, "/solo", 1) as barrier:
        assert barrier.entered
        assert sorted(await client.children("/solo")) == sorted([barrier.node_name, "ready"])
    assert await child_names(client, "/solo") == []


async def test_a_barrier_waiter_goes_on_through_a_cut_link_and_an_expiry(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    waiter_client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=4)
    owner = Barrier(await zk_connect(), "/gate/faults")
    await owner.set()
    waiting = asyncio.ensure_future(Barrier(waiter_client, "/gate/faults").wait(30))
    await eventually(lambda: _waiters(waiter_client, 1))
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await waiter_client.wait_for(State.SUSPENDED, timeout=5)
    zk_fault_proxy.heal()
    await waiter_client.wait_for(State.RECONNECTED, timeout=10)
    await expire_client(waiter_client, zookeeper.connect_string)
    assert not waiting.done()  # still waiting, on the new session
    await eventually(lambda: _waiters(waiter_client, 1))
    await owner.remove()
    assert await asyncio.wait_for(waiting, 10)


async def test_a_double_barrier_participant_whose_session_expires_makes_its_node_again(
    zk_connect: Factory, zookeeper: Any
) -> None:
    a, b = await zk_connect(session_timeout=4), await zk_connect()
    first, second = DoubleBarrier(a, "/double-exp", 2), DoubleBarrier(b, "/double-exp", 2)
    entering = asyncio.ensure_future(first.enter(timeout=30))
    await eventually(lambda: _participants(b, "/double-exp", 1))
    await expire_client(a, zookeeper.connect_string)

    async def remade() -> bool:
        for name in await child_names(b, "/double-exp"):
            stat = await b.exists(f"/double-exp/{name}")
            if stat is not None and stat.ephemeral_owner == a.session_id:
                return True
        return False

    await eventually(remade, what="the participant's node on the new session")
    await second.enter(timeout=10)
    await asyncio.wait_for(entering, 10)
    assert first.entered and second.entered
    await asyncio.gather(first.leave(timeout=10), second.leave(timeout=10))


async def test_a_cancelled_wait_or_enter_leaves_nothing(zk_connect: Factory) -> None:
    client, owner_client = await zk_connect(), await zk_connect()
    await Barrier(owner_client, "/gate/cancel").set()
    waiting = asyncio.ensure_future(Barrier(client, "/gate/cancel").wait())
    await eventually(lambda: _waiters(client, 1))
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert session_of(client).watches.counts()["waiters"] == 0  # its watch is withdrawn
    barrier = DoubleBarrier(client, "/double-cancel", 2)
    entering = asyncio.ensure_future(barrier.enter())
    await eventually(lambda: _participants(owner_client, "/double-cancel", 1))
    entering.cancel()
    with pytest.raises(asyncio.CancelledError):
        await entering
    await client.wait_background()
    assert await child_names(owner_client, "/double-cancel") == []


async def _participants(client: Client, path: str, n: int) -> bool:
    return len([c for c in await child_names(client, path) if c != "ready"]) == n
