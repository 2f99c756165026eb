"""Promises the docs make that only a fault shows: requests accepted while offline reach the
server in the order accepted (``sync()`` after an offline release), a guaranteed delete
outlives an expired session, and no task is granted a lock on a guess while its session may
be ending unseen (an operator's forced expiry while the link is cut)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory, child_names, eventually

from aiocoord import Client, CreateMode, PersistentNode, State
from aiocoord._wire.opcodes import Op
from aiocoord.errors import LockLostError, SessionExpiredError
from aiocoord.recipes.discovery import ServiceDiscovery, ServiceInstance, ServiceType
from aiocoord.recipes.lock import Lock, Mutex
from aiocoord.testing import FaultProxy, expire_session, session_of


async def _cut_off(proxy: FaultProxy, client: Client) -> None:
    """The client's link is gone and it knows it (SUSPENDED) until ``proxy.heal()``."""
    proxy.blackhole()
    proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)


async def _cut_off_and_expired(proxy: FaultProxy, client: Client, connect_string: str) -> None:
    """Cut off, then the session expired on the server by force: on heal the client hears."""
    session_id, password = client.session_id, session_of(client).password
    await _cut_off(proxy, client)
    await expire_session(session_id, password, connect_string)


async def test_sync_after_an_offline_release_returns_once_other_sessions_see_the_lock_free(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    received: list[int] = []  # the opcodes of the requests the server was sent, in order

    def record(xid: int, opcode: int) -> bool:
        received.append(opcode)
        return False  # never drops anything

    zk_fault_proxy.drop_after_request(record)
    for round_ in range(10):
        lock = Lock(client, "/offline-release")
        await lock.acquire()
        node = lock.node_path
        assert node is not None
        await _cut_off(zk_fault_proxy, client)
        del received[:]
        await lock.release()  # accepted now, written once the link is back
        if round_ % 2:
            # Asked for while still offline.
            synced = asyncio.create_task(client.sync())
            zk_fault_proxy.heal()
            await asyncio.wait_for(synced, 10)
        else:
            # Asked for as soon as the client is back (the release's delete must not be
            # overtaken by requests made on hearing it).
            zk_fault_proxy.heal()
            await client.wait_for(State.RECONNECTED, timeout=10)
            await client.sync()
        # The sync was accepted after the delete, so it reached the server after it, and was
        # answered after it: others see the lock free.
        assert Op.DELETE in received, received
        assert received.index(Op.DELETE) < received.index(Op.SYNC), (round_, received)
        assert await observer.exists(node) is None
        other = Lock(observer, "/offline-release")
        assert await other.acquire(blocking=False)
        await other.release()


async def test_requests_accepted_while_offline_are_answered_in_the_order_accepted(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    await client.create("/ordered", b"0")
    await _cut_off(zk_fault_proxy, client)
    await client.delete("/ordered", guaranteed=True)  # returns at once: held for the link
    looked = asyncio.create_task(client.exists("/ordered"))
    zk_fault_proxy.heal()
    assert await asyncio.wait_for(looked, 10) is None
    assert client.pending_deletes() == 0  # answered before the exists


async def test_a_persistent_node_closed_while_cut_off_is_deleted_after_the_session_expires(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    node = PersistentNode(client, "/kept/config", b"v1", mode=CreateMode.PERSISTENT)
    await node.start()
    assert await node.wait_for_initial_create(timeout=10)
    await _cut_off_and_expired(zk_fault_proxy, client, zookeeper.connect_string)
    await node.close()  # a guaranteed delete, on its way once the link is back
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    await client.wait_background()
    assert session_of(client).recorder.expiries == 1
    assert await observer.exists("/kept/config") is None


async def test_a_static_instance_unregistered_while_cut_off_is_gone_after_the_expiry(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    discovery = ServiceDiscovery(client, "/services")
    instance = ServiceInstance.build("db", port=5432, service_type=ServiceType.STATIC)
    await discovery.register(instance)
    await _cut_off_and_expired(zk_fault_proxy, client, zookeeper.connect_string)
    assert await discovery.unregister(instance)
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    await client.wait_background()
    assert await child_names(observer, "/services/db") == []
    # Every other client's view agrees: the stale instance is not served.
    reader = ServiceDiscovery(observer, "/services")
    assert await reader.instances("db") == []
    await discovery.close()


async def test_an_ephemeral_node_of_another_session_is_left_alone_after_the_expiry(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    await client.create("/taken", b"mine", ephemeral=True)
    await _cut_off_and_expired(zk_fault_proxy, client, zookeeper.connect_string)
    await client.delete("/taken", guaranteed=True)
    # Ours went with the expired session; the name is now another session's node.
    await observer.create("/taken", b"theirs", ephemeral=True)
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    await client.wait_background()
    data, stat = await observer.get("/taken")
    assert (data, stat.ephemeral_owner) == (b"theirs", observer.session_id)


async def test_no_local_hand_over_while_the_session_is_being_expired_unseen(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    other = await zk_connect()
    first, second = Lock(client, "/forced"), Mutex(client, "/forced")
    await first.acquire()
    second_task = asyncio.create_task(second.acquire())
    await eventually(lambda: _count(other, "/forced", 2), what="the second contender queued")
    third = Mutex(other, "/forced")  # Mutex: released by this task, not the acquiring one
    third_task = asyncio.create_task(third.acquire())
    await eventually(lambda: _count(other, "/forced", 3), what="the other client queued")

    # Cut off without the client noticing, and expired on the server by force: the client
    # still trusts its session (it heard from the server moments ago).
    zk_fault_proxy.blackhole()
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
    assert session_of(client).trusted()
    await first.release()
    # The server has given the lock to the other client ...
    assert await asyncio.wait_for(third_task, 10)
    assert third.is_held
    third_token = third.fencing_token
    # ... so no task of the cut-off client may hold it: the release's delete was never
    # answered, and nothing else proved the session alive.
    assert not second_task.done()
    assert not second.is_held

    zk_fault_proxy.heal()
    await third.release()
    assert await asyncio.wait_for(second_task, 15)  # queued again on the new session
    assert second.fencing_token is not None and third_token is not None
    assert second.fencing_token > third_token
    await second.release()


async def _count(client: Client, path: str, n: int) -> bool:
    return len(await child_names(client, path)) == n


async def test_releasing_after_an_expiry_for_good_reports_the_loss_only(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    # With no new session to come, nothing can be sent: the release reports the loss, and the
    # delete it would have sent is not owed (the node went with the session). The link is
    # cut before the expiry, so the client hears of it only from the handshake on heal (a
    # live link hears the deletions first: see the next test).
    client = await zk_connect(zk_fault_proxy.connect_string, reconnect_after_expiry=False)
    lock, waiter = Lock(client, "/for-good"), Mutex(client, "/for-good")
    await lock.acquire()
    waiting = asyncio.create_task(waiter.acquire(timeout=30))
    await eventually(lambda: _count(client, "/for-good", 2), what="the waiter queued")
    await _cut_off_and_expired(zk_fault_proxy, client, zookeeper.connect_string)
    zk_fault_proxy.heal()
    await client.wait_for(State.LOST, timeout=10)
    with pytest.raises(LockLostError):
        await lock.release()
    with pytest.raises(SessionExpiredError):
        await waiting
    assert client.pending_deletes() == 0


async def test_an_expiry_forced_on_a_live_link_is_heard_and_owes_nothing(
    zk_connect: Factory, zookeeper: Any
) -> None:
    # Expired by force while the link is up: the client may take its session back between
    # the attach and the close (see aiocoord.testing.expire_session), and then hear the
    # deletions of its nodes before the expiry. Both were deleted in one transaction, the
    # holder's first or the waiter's first: the waiter either hears the expiry, or is
    # granted on the holder's deletion and hears its own node's deletion as the loss (as if
    # the two had gone one after the other, which no other session can tell apart). Either
    # way no raw server error escapes, and nothing is owed once the session is lost.
    client = await zk_connect(reconnect_after_expiry=False)
    lock, waiter = Lock(client, "/live-expiry"), Mutex(client, "/live-expiry")
    await lock.acquire()
    waiting = asyncio.create_task(waiter.acquire(timeout=30))
    await eventually(lambda: _count(client, "/live-expiry", 2), what="the waiter queued")
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
    await client.wait_for(State.LOST, timeout=10)
    with pytest.raises(LockLostError):
        await lock.release()
    try:
        granted = await waiting
    except SessionExpiredError:
        pass
    else:
        assert granted
        with pytest.raises(LockLostError):
            await waiter.release()
    assert client.pending_deletes() == 0


# --- what "pending deletes" and "wait_background" count: work that changes the server ---------


async def test_a_held_lock_whose_loss_watch_is_unanswered_owes_nothing(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    # The holding arms its loss watch in a task of the client from the next loop turn; cut the
    # link now, so that watch's request is written and never answered while the lock is held.
    client = await zk_connect(zk_fault_proxy.connect_string)
    lock = Lock(client, "/owes")
    await lock.acquire()
    zk_fault_proxy.blackhole()
    assert client.pending_deletes() == 0
    await asyncio.wait_for(client.wait_background(), 5)  # nothing to wait for: returns at once
    zk_fault_proxy.heal()
    await lock.release()
    await asyncio.wait_for(client.wait_background(), 10)
    assert client.pending_deletes() == 0


async def test_a_client_that_tracks_its_ensemble_owes_nothing_at_rest(zk_connect: Factory) -> None:
    # The tracker follows the configuration node for the client's whole life: it is no
    # background work anyone waits for, and close() ends it.
    client = await zk_connect(track_ensemble=True)
    assert client.pending_deletes() == 0
    await asyncio.wait_for(client.wait_background(), 5)
    await client.close()
