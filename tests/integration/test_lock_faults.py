"""Locks under faults against a real server: dropped connections, lost replies, session
expiry while waiting and while holding, release while disconnected, both loss policies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory, child_names, eventually

from aiocoord import Client, State
from aiocoord.errors import LockLostError
from aiocoord.recipes.lock import Lock, Mutex
from aiocoord.testing import FaultProxy, expire_session


async def test_waiter_acquires_after_a_connection_drop_with_one_node(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    holder_client = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    holder = Lock(holder_client, "/drop")
    await holder.acquire()
    waiter = Mutex(client, "/drop")  # a Mutex: this task releases what another one took
    task = asyncio.create_task(waiter.acquire())
    await eventually(lambda: _len(holder_client, "/drop", 2))
    session_id = client.session_id

    # The lock is released while the waiter cannot hear it; the restored watch tells it.
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    await holder.release()
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert await asyncio.wait_for(task, 10)
    assert client.session_id == session_id
    assert waiter.node_path is not None
    assert await child_names(holder_client, "/drop") == [waiter.node_path.rsplit("/", 1)[1]]
    await waiter.release()


async def test_lost_create_reply_is_found_by_its_prefix_not_created_twice(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    await observer.ensure_path("/lost-reply")
    lock = Lock(client, "/lost-reply")
    # The create reaches the server; its reply does not reach the client.
    zk_fault_proxy.drop_after_request(lambda xid, opcode: opcode == 15)
    assert await lock.acquire(timeout=15)
    assert lock.node_path is not None
    assert await child_names(observer, "/lost-reply") == [lock.node_path.rsplit("/", 1)[1]]
    await lock.release()
    await client.wait_background()  # the release's delete is answered: others see it
    assert await child_names(observer, "/lost-reply") == []


async def test_session_expiry_while_holding_fires_lost_cancels_the_body_and_frees_the_lock(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, other = await zk_connect(session_timeout=4), await zk_connect()
    lock = client.lock("/expiry", cancel_on_loss=True)
    entered = asyncio.Event()
    body_cancelled = asyncio.Event()

    async def hold_forever() -> None:
        async with lock:
            entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                body_cancelled.set()
                raise

    task = asyncio.create_task(hold_forever())
    await asyncio.wait_for(entered.wait(), 10)
    lost = lock.lost
    assert not lost.is_set()
    await expire_session(client.session_id, client.session.password, zookeeper.connect_string)
    assert await lost.wait(10) is State.LOST
    assert not lock.is_held
    with pytest.raises(LockLostError):
        await asyncio.wait_for(task, 10)
    assert body_cancelled.is_set()
    assert not task.cancelled()  # the cancellation was ours: it became LockLostError
    other_lock = Lock(other, "/expiry")
    assert await other_lock.acquire(timeout=10)
    await other_lock.release()


async def test_loss_without_cancel_on_loss_is_raised_when_the_body_ends(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client = await zk_connect(session_timeout=4)
    lock = Lock(client, "/expiry2")

    async def body() -> None:
        async with lock:
            await expire_session(
                client.session_id, client.session.password, zookeeper.connect_string
            )
            await lock.lost.wait(10)
            assert not lock.is_held

    with pytest.raises(LockLostError):
        await body()
    # The next holding has a fresh `lost` event.
    async with lock:
        assert not lock.lost.is_set()


async def test_waiter_whose_session_expires_queues_again_with_one_node(
    zk_connect: Factory, zookeeper: Any
) -> None:
    holder_client, client = await zk_connect(), await zk_connect(session_timeout=4)
    holder = Lock(holder_client, "/requeue")
    await holder.acquire()
    waiter = Mutex(client, "/requeue")
    task = asyncio.create_task(waiter.acquire())
    await eventually(lambda: _len(holder_client, "/requeue", 2))
    old = set(await child_names(holder_client, "/requeue"))
    await expire_session(client.session_id, client.session.password, zookeeper.connect_string)
    # The old node vanished with the session and a new one took its place in the queue.
    await eventually(lambda: _replaced(holder_client, "/requeue", old))
    await holder.release()
    assert await asyncio.wait_for(task, 10)
    assert waiter.node_path is not None
    assert await child_names(holder_client, "/requeue") == [waiter.node_path.rsplit("/", 1)[1]]
    await waiter.release()


async def _replaced(client: Client, path: str, old: set[str]) -> bool:
    now = set(await child_names(client, path))
    return len(now) == 2 and len(now - old) == 1


async def _len(client: Client, path: str, n: int) -> bool:
    return len(await child_names(client, path)) == n


async def test_release_while_disconnected_is_immediate_and_deletes_after_reconnect(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    lock = Lock(client, "/offline")
    await lock.acquire()
    path = lock.node_path
    assert path is not None
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await lock.release()
    assert loop.time() - started < 1  # it did not wait for the connection
    assert not lock.is_held
    assert await observer.exists(path) is not None  # the server has not heard yet
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    await asyncio.wait_for(client.wait_background(), 10)
    assert await observer.exists(path) is None


async def test_release_into_a_silent_connection_says_not_held_at_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    lock = Mutex(client, "/silent")  # a Mutex, so that another task may run release()
    await lock.acquire()
    path = lock.node_path
    assert path is not None
    zk_fault_proxy.blackhole()  # the socket stays up; nothing gets through
    before = client.pending_deletes()
    release = asyncio.create_task(lock.release())
    await asyncio.sleep(0)  # one step: release() writes the delete and returns, no wait
    assert release.done() and release.exception() is None
    assert not lock.is_held
    assert client.pending_deletes() > before  # the delete's answer, followed
    zk_fault_proxy.heal()
    await asyncio.wait_for(client.wait_background(), 10)
    await eventually(lambda: _gone(observer, path))


async def _gone(client: Client, path: str) -> bool:
    return await client.exists(path) is None


async def test_suspended_is_loss_policy_gives_the_lock_up_on_disconnect(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    other = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    lock = Lock(client, "/strict", suspended_is_loss=True)
    await lock.acquire()
    session_id = client.session_id
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    assert await lock.lost.wait(5) is State.SUSPENDED
    assert not lock.is_held
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert client.session_id == session_id
    # The session survived, but the holder gave the lock up: its node is deleted.
    other_lock = Lock(other, "/strict")
    assert await other_lock.acquire(timeout=10)
    with pytest.raises(LockLostError):
        await lock.release()
    await other_lock.release()


async def test_session_policy_keeps_the_lock_through_a_disconnect(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    other = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    lock = Lock(client, "/lenient")
    await lock.acquire()
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    assert lock.is_held
    assert not lock.lost.is_set()
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert lock.is_held
    assert not lock.lost.is_set()
    assert not await Lock(other, "/lenient").acquire(blocking=False)
    await lock.release()
