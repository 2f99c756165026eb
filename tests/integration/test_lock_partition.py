"""Mutual exclusion across a partition, against a real server behind a fault proxy.

Client A holds a lock and one of A's own tasks waits behind it on the same path. A's link is
blackholed (the socket stays open, nothing flows) past the session timeout, so the server
expires A's session and client B takes the lock. A's holder releases while A is still cut
off: at once, once A is SUSPENDED, or once B holds the lock. A grant log records every
holding of every client (token, start, end at release or at the loss the holder is told of)
and must show no overlap and strictly increasing fencing tokens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest
from support import Factory, GrantLog, eventually, stale_grant_scenario

from aiocoord import Client, LeaderLatch, Semaphore, State
from aiocoord.errors import LockLostError, NoNodeError
from aiocoord.recipes.lock import Lock
from aiocoord.testing import FaultProxy

SESSION_TIMEOUT = 4.0


@pytest.mark.parametrize("release_when", ["connected", "suspended", "after_other_holder"])
async def test_no_stale_grant_to_a_same_client_waiter_when_the_holder_releases_cut_off(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, release_when: str
) -> None:
    a = await zk_connect(zk_fault_proxy.connect_string, session_timeout=SESSION_TIMEOUT)
    b = await zk_connect()

    async def release(log: GrantLog) -> None:
        if release_when == "suspended":
            await a.wait_for(State.SUSPENDED, timeout=10)
        elif release_when == "after_other_holder":
            await asyncio.wait_for(log.wait_granted("b"), 20)

    log = await stale_grant_scenario(
        a, b, cut=zk_fault_proxy.blackhole, heal=zk_fault_proxy.heal, release=release, b_holds=1.0
    )
    assert log.violations() == []
    holders = [g.holder for g in log.grants]
    if release_when == "connected":
        # Released while A still trusted its session: the hand-over inside A may happen at
        # once, and A hears of the loss before the server can let B in (no overlap above).
        assert holders in (["a-holder", "b", "a-waiter"], ["a-holder", "a-waiter", "b", "a-waiter"])
    else:
        # Released while A could not trust its session: the waiter waited for the server.
        assert holders == ["a-holder", "b", "a-waiter"]


# --- releasing on a dead link -----------------------------------------------------------------

PROMPT = 0.1  # seconds: a release on a dead link returns well within this


async def _blackholed_client(zk_connect: Factory, proxy: FaultProxy) -> Client:
    return await zk_connect(proxy.connect_string, session_timeout=SESSION_TIMEOUT)


async def _released_promptly(release: Awaitable[None]) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    await release
    return loop.time() - start


async def _gone_after_heal(client: Client, observer: Client, path: str, proxy: FaultProxy) -> None:
    proxy.heal()
    await client.wait_background()
    await eventually(lambda: _empty(observer, path))


async def _empty(client: Client, path: str) -> bool:
    try:
        return not await client.children(path)
    except NoNodeError:
        return True  # a container parent the server removed once it was empty


@pytest.mark.parametrize("exit_by", ["release", "async_with"])
async def test_lock_release_returns_at_once_on_a_blackholed_link(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, exit_by: str
) -> None:
    client = await _blackholed_client(zk_connect, zk_fault_proxy)
    observer = await zk_connect()
    lock = Lock(client, "/dead-link")
    loop = asyncio.get_running_loop()
    if exit_by == "release":
        assert await lock.acquire(timeout=10)
        zk_fault_proxy.blackhole()
        took = await _released_promptly(lock.release())
    else:
        async with lock:
            zk_fault_proxy.blackhole()
            start = loop.time()
        took = loop.time() - start
    assert took < PROMPT
    assert not lock.is_held
    assert client.state is State.CONNECTED  # the dead link is not even detected yet
    # The node is not left behind: the delete is delivered once the link heals.
    await _gone_after_heal(client, observer, "/dead-link", zk_fault_proxy)


async def test_semaphore_lease_and_latch_leave_at_once_on_a_blackholed_link(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await _blackholed_client(zk_connect, zk_fault_proxy)
    observer = await zk_connect()
    sem = Semaphore(client, "/dead-sem", 2)
    (lease,) = await sem.acquire(timeout=10)
    latch = LeaderLatch(client, "/dead-latch", identifier="me")
    await latch.start()
    assert await latch.wait_until_leader(timeout=10)
    zk_fault_proxy.blackhole()
    assert await _released_promptly(lease.release()) < PROMPT
    assert await _released_promptly(latch.close()) < PROMPT
    await _gone_after_heal(client, observer, "/dead-sem/leases", zk_fault_proxy)
    await eventually(lambda: _empty(observer, "/dead-latch"))


# --- a third party deletes the holder's node --------------------------------------------------


async def test_lock_holder_is_told_when_another_client_deletes_its_node(
    zk_connect: Factory,
) -> None:
    client, operator, other = await zk_connect(), await zk_connect(), await zk_connect()
    lock = Lock(client, "/deleted-by-operator", cancel_on_loss=True)
    entered = asyncio.Event()
    cancelled = asyncio.Event()

    async def body() -> None:
        async with lock:
            entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

    task = asyncio.create_task(body())
    await asyncio.wait_for(entered.wait(), 10)
    lost = lock.lost
    node = lock.node_path
    assert node is not None
    await operator.delete(node)
    assert await lost.wait(10) is State.LOST
    assert lost.reason == "deleted"
    assert not lock.is_held
    with pytest.raises(LockLostError):
        await asyncio.wait_for(task, 10)
    assert cancelled.is_set()
    # The lock is free for the next contender, and the old holder may take it again.
    other_lock = Lock(other, "/deleted-by-operator")
    assert await other_lock.acquire(timeout=10)
    await other_lock.release()
    assert await lock.acquire(timeout=10)
    await lock.release()


async def test_semaphore_lease_is_lost_when_its_node_is_deleted(zk_connect: Factory) -> None:
    client, operator = await zk_connect(), await zk_connect()
    sem = Semaphore(client, "/sem-deleted", 1)
    (lease,) = await sem.acquire(timeout=10)
    await operator.delete(lease.path)
    assert await lease.lost.wait(10) is State.LOST
    assert lease.lost.reason == "deleted"
    assert not lease.is_held
    with pytest.raises(LockLostError):
        await lease.release()
