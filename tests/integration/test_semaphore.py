"""Semaphore against a real server: the bound holds under contention, several leases at once,
timeouts and cancellation leave no node, Curator's InterProcessSemaphoreV2 layout."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client, State
from aiocoord.errors import BadArgumentsError, InvalidPathError, InvalidTypeError, LockLostError
from aiocoord.recipes.semaphore import Lease, Semaphore
from aiocoord.testing import FaultProxy, expire_session, session_of

LEASE_NODE = re.compile(
    r"^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-\d{10}$"
)


#: The failure-semantics rows of docs/recipes/semaphore.md and its row of docs/recipes.md, with
#: the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | `Semaphore` leases": [
        "test_lease_lost_with_the_session_cancels_the_body",
        "test_a_lease_is_kept_through_a_cut_link_and_lost_at_once_under_suspended_is_loss",
    ],
    "recipes/semaphore.md | Failure semantics | Loss: connection lost (SUSPENDED)": [
        "test_a_lease_is_kept_through_a_cut_link_and_lost_at_once_under_suspended_is_loss",
    ],
    "recipes/semaphore.md | Failure semantics | "
    "Loss: session expired (LOST), or the lease node deleted": [
        "test_lease_lost_with_the_session_cancels_the_body",
        "test_lock_partition.py::test_semaphore_lease_is_lost_when_its_node_is_deleted",
    ],
    "recipes/semaphore.md | Failure semantics | Cancellation": [
        "test_timed_out_and_cancelled_acquires_leave_no_node",
    ],
    "recipes/semaphore.md | Failure semantics | Timeout": [
        "test_timed_out_and_cancelled_acquires_leave_no_node",
        "test_lease_context_times_out",
    ],
    "recipes/semaphore.md | Failure semantics | Release": [
        "test_lock_partition.py::test_semaphore_lease_and_latch_leave_at_once_on_a_blackholed_link",
    ],
}


async def test_never_more_than_max_leases_under_20_contenders(zk_connect: Factory) -> None:
    clients = [await zk_connect() for _ in range(20)]
    holding = 0
    most = 0
    total = 0

    async def worker(client: Client) -> None:
        nonlocal holding, most, total
        sem = Semaphore(client, "/sem", 3)
        for _ in range(5):
            async with sem.lease():
                holding += 1
                most = max(most, holding)
                # Work while holding (a round trip and some time), so that holders overlap
                # as much as they may.
                await client.exists("/sem")
                await asyncio.sleep(0.02)
                holding -= 1
                total += 1

    await asyncio.wait_for(asyncio.gather(*(worker(c) for c in clients)), 60)
    assert total == 100
    assert most == 3  # reached, never exceeded
    # Releases return before their deletes are answered: wait for them before looking.
    await asyncio.gather(*(c.wait_background() for c in clients))
    assert await child_names(clients[0], "/sem/leases") == []
    assert await child_names(clients[0], "/sem/locks") == []


async def test_several_leases_at_once_and_the_layout(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    sem = Semaphore(a, "/sem-n", 3, identifier="a")
    leases = await sem.acquire(2)
    assert len(leases) == 2
    assert all(lease.is_held for lease in leases)
    names = await child_names(a, "/sem-n/leases")
    assert len(names) == 2
    assert all(LEASE_NODE.match(n) for n in names)
    assert sorted(lease.path.rsplit("/", 1)[1] for lease in leases) == names
    assert await child_names(a, "/sem-n/locks") == []  # the lock is only held while acquiring
    holders = await sem.participants()
    assert [(p.identifier, p.holds) for p in holders] == [("a", True), ("a", True)]
    assert sorted(p.node_name for p in holders) == names
    other = Semaphore(b, "/sem-n", 3)
    # One lease left: asking for two waits (and times out), asking for one works.
    with pytest.raises(aiocoord.TimeoutError):
        await other.acquire(2, timeout=0.5)
    await b.wait_background()  # a give-up waits only briefly for its deletes to be answered
    assert len(await child_names(a, "/sem-n/leases")) == 2
    (one,) = await other.acquire(1, timeout=5)
    await one.release()
    for lease in leases:
        await lease.release()
    await leases[0].release()  # releasing again does nothing
    assert not leases[0].is_held
    await b.wait_background()  # `one`'s release, answered
    assert await child_names(a, "/sem-n/leases") == []


async def test_timed_out_and_cancelled_acquires_leave_no_node(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    full = await Semaphore(a, "/sem-gone", 2).acquire(2)
    sem = Semaphore(b, "/sem-gone", 2)
    with pytest.raises(aiocoord.TimeoutError):
        await sem.acquire(1, timeout=0.3)
    await b.wait_background()  # its lease and lock nodes gone: they must not count below
    waiting = asyncio.create_task(sem.acquire(1))
    # The waiter holds <path>/locks and has made its lease node: 3 leases, 1 lock node.
    await eventually(lambda: _n(a, "/sem-gone/leases", 3))
    queued = asyncio.create_task(sem.acquire(1))  # a second waiter queues on the lock
    await eventually(lambda: _n(a, "/sem-gone/locks", 2))
    waiting.cancel()
    queued.cancel()
    await asyncio.gather(waiting, queued, return_exceptions=True)
    await b.wait_background()
    assert len(await child_names(a, "/sem-gone/leases")) == 2
    assert await child_names(a, "/sem-gone/locks") == []
    for lease in full:
        await lease.release()
    (lease,) = await sem.acquire(1, timeout=5)
    await lease.release()


async def _n(client: Client, path: str, n: int) -> bool:
    return len(await child_names(client, path)) == n


async def test_a_returned_lease_lets_the_next_waiter_in(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    (held,) = await Semaphore(a, "/sem-next", 1).acquire()
    waiter = Semaphore(b, "/sem-next", 1)
    entered = asyncio.Event()

    async def wait_for_lease() -> None:
        async with waiter.lease(timeout=10) as lease:
            assert lease.is_held
            entered.set()

    task = asyncio.create_task(wait_for_lease())
    await eventually(lambda: _n(a, "/sem-next/leases", 2))
    assert not entered.is_set()
    await held.release()
    await asyncio.wait_for(task, 10)
    assert entered.is_set()


async def test_lease_context_times_out(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    (held,) = await Semaphore(a, "/sem-to", 1).acquire()
    with pytest.raises(asyncio.TimeoutError):
        async with Semaphore(b, "/sem-to", 1).lease(timeout=0.3):
            pytest.fail("entered without a lease")
    await b.wait_background()  # the timed-out lease node's delete, answered
    assert len(await child_names(a, "/sem-to/leases")) == 1
    await held.release()


async def test_lease_lost_with_the_session_cancels_the_body(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, other = await zk_connect(session_timeout=4), await zk_connect()
    sem = Semaphore(client, "/sem-lost", 1, cancel_on_loss=True)
    entered = asyncio.Event()
    held: list[Lease] = []

    async def body() -> None:
        async with sem.lease() as lease:
            held.append(lease)
            entered.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(body())
    await asyncio.wait_for(entered.wait(), 10)
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
    assert await held[0].lost.wait(10) is State.LOST
    assert not held[0].is_held
    with pytest.raises(LockLostError):
        await asyncio.wait_for(task, 10)
    (lease,) = await Semaphore(other, "/sem-lost", 1).acquire(timeout=10)
    await lease.release()


async def test_bad_input_is_refused_before_anything_is_sent(zk_client: Client) -> None:
    before = dict(session_of(zk_client).sent)
    with pytest.raises(BadArgumentsError):
        Semaphore(zk_client, "/s", 0)
    with pytest.raises(BadArgumentsError):
        Semaphore(zk_client, "/s", -3)
    with pytest.raises(InvalidTypeError):
        Semaphore(zk_client, "/s", 2.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        Semaphore(zk_client, "/s", True)
    with pytest.raises(InvalidPathError):
        Semaphore(zk_client, "s", 1)
    sem = Semaphore(zk_client, "/s", 2)
    with pytest.raises(BadArgumentsError):
        await sem.acquire(0)
    with pytest.raises(BadArgumentsError):
        await sem.acquire(3)  # more than can ever be had
    with pytest.raises(BadArgumentsError):
        await sem.acquire(1, timeout=-1)
    with pytest.raises(BadArgumentsError):
        sem.lease(timeout=-1)
    assert dict(session_of(zk_client).sent) == before
    assert not await zk_client.exists("/s")


@pytest.mark.parametrize("suspended_is_loss", [False, True])
async def test_a_lease_is_kept_through_a_cut_link_and_lost_at_once_under_suspended_is_loss(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, suspended_is_loss: bool
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    admin = await zk_connect()
    sem = Semaphore(client, "/sem-cut", 1, suspended_is_loss=suspended_is_loss)
    (lease,) = await sem.acquire(timeout=10)
    lost = lease.lost
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    if suspended_is_loss:
        assert await asyncio.wait_for(lost, 5) is State.SUSPENDED
        assert not lease.is_held
    else:
        assert lease.is_held and not lost.is_set()
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    await client.wait_background()
    # Under the standard policy the node goes once reconnected; under the session one it stays.
    assert len(await child_names(admin, "/sem-cut/leases")) == (0 if suspended_is_loss else 1)
    if not suspended_is_loss:
        assert lease.is_held
        await lease.release()
