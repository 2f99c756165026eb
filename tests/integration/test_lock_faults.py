"""Locks under faults against a real server: dropped connections, lost replies, session
expiry while waiting and while holding, release while disconnected, both loss policies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory, child_names, eventually

from aiocoord import Client, RetryNTimes, State
from aiocoord._wire.opcodes import Op
from aiocoord.errors import LockLostError
from aiocoord.recipes.lock import Lock, Mutex
from aiocoord.recipes.multilock import MultiLock
from aiocoord.testing import FaultProxy, expire_client, expire_session, session_of

#: The failure-semantics rows of docs/recipes/locks.md and of the lock rows of docs/recipes.md,
#: with the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | "
    "`Lock`, `Mutex`, `ReadWriteLock`": [
        "test_session_policy_keeps_the_lock_through_a_disconnect",
        "test_suspended_is_loss_policy_gives_the_lock_up_on_disconnect",
        "test_session_expiry_while_holding_fires_lost_cancels_the_body_and_frees_the_lock",
        "test_loss_without_cancel_on_loss_is_raised_when_the_body_ends",
        "test_waiter_whose_session_expires_queues_again_with_one_node",
        "test_edge_promises.py::test_no_local_hand_over_while_the_session_is_being_expired_unseen",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | `MultiLock`": [
        "test_each_lock_of_a_multilock_reports_its_own_loss_on_expiry",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | waiting for any lock": [
        "test_waiter_acquires_after_a_connection_drop_with_one_node",
        "test_lock_partition.py::test_no_stale_grant_to_a_same_client_waiter_when_the_holder_releases_cut_off",
        "test_waiter_whose_session_expires_queues_again_with_one_node",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | "
    "releasing (`release()`, leaving `async with`, a lease's `release()`, a latch's or election's `close()`)": [  # noqa: E501 - a test name
        "test_release_while_disconnected_is_immediate_and_deletes_after_reconnect",
        "test_sync_after_a_release_while_disconnected_returns_once_others_see_it_free",
        "test_edge_promises.py::test_sync_after_an_offline_release_returns_once_other_sessions_see_the_lock_free",
        "test_lock_partition.py::test_lock_release_returns_at_once_on_a_blackholed_link",
        "test_lock_partition.py::test_semaphore_lease_and_latch_leave_at_once_on_a_blackholed_link",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | "
    "a lock node deleted by someone else (say, an operator's recursive delete of the lock path)": [
        "test_lock_partition.py::test_lock_holder_is_told_when_another_client_deletes_its_node",
        "test_lock_partition.py::test_semaphore_lease_is_lost_when_its_node_is_deleted",
    ],
    "recipes/locks.md | Failure semantics | Loss: connection lost (SUSPENDED)": [
        "test_session_policy_keeps_the_lock_through_a_disconnect",
        "test_suspended_is_loss_policy_gives_the_lock_up_on_disconnect",
    ],
    "recipes/locks.md | Failure semantics | Loss: session expired (LOST)": [
        "test_session_expiry_while_holding_fires_lost_cancels_the_body_and_frees_the_lock",
        "test_loss_without_cancel_on_loss_is_raised_when_the_body_ends",
    ],
    "recipes/locks.md | Failure semantics | Loss: node deleted by someone else": [
        "test_lock_partition.py::test_lock_holder_is_told_when_another_client_deletes_its_node",
    ],
    "recipes/locks.md | Failure semantics | Cancellation": [
        "test_a_waiter_cancelled_while_cut_off_leaves_no_node_once_reconnected",
        "test_lock_queue.py::test_cancelling_while_the_create_is_in_flight_leaves_no_node",
        "test_lock_queue.py::test_500_waiters_that_give_up_leave_no_node_and_the_next_one_gets_it",
        "test_multilock.py::test_cancelled_while_waiting_for_the_last_lock_releases_the_others",
    ],
    "recipes/locks.md | Failure semantics | Timeout": [
        "test_lock.py::test_timed_out_acquire_raises_and_leaves_no_node",
        "test_multilock.py::test_timeout_or_non_blocking_failure_holds_none",
    ],
    "recipes/locks.md | Failure semantics | Release on a dead link": [
        "test_lock_partition.py::test_lock_release_returns_at_once_on_a_blackholed_link",
        "test_release_into_a_silent_connection_says_not_held_at_once",
    ],
}


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


@pytest.mark.parametrize("layout", ["curator", "kazoo"])
async def test_lost_create_reply_is_found_by_its_prefix_not_created_twice(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, layout: str
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    await observer.ensure_path("/lost-reply")
    lock = Lock(client, "/lost-reply", layout=layout)
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
    lock = Lock(client, "/expiry", cancel_on_loss=True)
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
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
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
                client.session_id, session_of(client).password, zookeeper.connect_string
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
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
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


async def test_sync_after_a_release_while_disconnected_returns_once_others_see_it_free(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    """A release, then ``sync()``, means other sessions see the lock free, whatever the link
    did in between (issue 26, item 1)."""
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    lock = Lock(client, "/offline-sync")
    await lock.acquire()
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    await lock.release()
    # The proxy sees each request on its way to the server, in the order sent: a predicate
    # that accepts none records them without dropping any.
    sent: list[int] = []
    zk_fault_proxy.drop_after_request(lambda xid, op: sent.append(op) is not None)
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    await asyncio.wait_for(client.sync("/offline-sync"), 10)
    assert await child_names(observer, "/offline-sync") == []
    writes = [op for op in sent if op in (Op.DELETE, Op.MULTI, Op.SYNC)]
    assert len(writes) >= 2 and writes[-1] == Op.SYNC, (
        f"sync sent before the release's delete: {writes}"
    )


async def test_each_lock_of_a_multilock_reports_its_own_loss_on_expiry(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, other = await zk_connect(session_timeout=4), await zk_connect()
    locks = [Lock(client, "/multi-loss/a"), Lock(client, "/multi-loss/b")]
    multi = MultiLock(locks)
    await multi.acquire()
    losses = [lock.lost for lock in locks]
    await expire_client(client, zookeeper.connect_string)
    assert [await asyncio.wait_for(lost, 10) for lost in losses] == [State.LOST, State.LOST]
    assert not any(lock.is_held for lock in locks)
    assert not multi.is_held
    # The server freed both: another session takes them at once.
    assert await Lock(other, "/multi-loss/a").acquire(timeout=0)
    assert await Lock(other, "/multi-loss/b").acquire(timeout=0)


@pytest.mark.parametrize("layout", ["curator", "kazoo"])
async def test_a_waiter_cancelled_while_cut_off_leaves_no_node_once_reconnected(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, layout: str
) -> None:
    holder_client = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    holder = Lock(holder_client, "/cancel-cut", layout=layout)
    await holder.acquire()
    waiter = Lock(client, "/cancel-cut", layout=layout)
    task = asyncio.create_task(waiter.acquire())
    await eventually(lambda: _len(holder_client, "/cancel-cut", 2))
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    await asyncio.wait_for(client.wait_background(), 10)
    assert holder.node_path is not None
    assert await child_names(holder_client, "/cancel-cut") == [holder.node_path.rsplit("/", 1)[1]]
    await holder.release()


def _loss_watch_read(_xid: int, opcode: int) -> bool:
    # The read that arms a holder's watch on its own node: the first read an uncontended
    # acquire leaves behind it (its create and listing are neither).
    return opcode == Op.GET_DATA


async def test_a_holder_whose_node_watch_lost_its_answer_is_still_told_of_a_deletion(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    """The holder's watch on its own node is armed after the grant; when that answer is lost
    with the connection, it is armed again once reconnected, and a deletion by someone else
    is still reported."""
    other = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    lock = Lock(client, "/arm-again")
    dropped = zk_fault_proxy.drop_after_request(_loss_watch_read)
    await lock.acquire()
    await dropped.wait(10)
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert lock.is_held
    assert lock.node_path is not None
    await other.delete(lock.node_path)
    assert await lock.lost.wait(10) is State.LOST
    assert lock.lost.reason == "deleted"
    with pytest.raises(LockLostError):
        await lock.release()


async def test_a_release_leaves_nothing_of_a_node_watch_that_lost_its_answer(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    """Released while the answer that arms the holder's node watch is lost with the
    connection: once the release's delete is answered, nothing of the holding is left to ask
    again later (a read of the node, gone by then, and the watch it would set)."""
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    # A retry of the lost read would still be waiting out its pause when the checks run.
    client.retry = RetryNTimes(5, 2.0)
    lock = Lock(client, "/arm-lost")
    dropped = zk_fault_proxy.drop_after_request(_loss_watch_read)
    await lock.acquire()
    await dropped.wait(10)
    await lock.release()
    await client.wait_for(State.RECONNECTED, timeout=10)
    await asyncio.wait_for(client.wait_background(), 10)
    left = [t.get_name() for t in asyncio.all_tasks() if "/arm-lost" in t.get_name()]
    assert left == []
    assert session_of(client).watches.listing() == []
