"""The session manager under faults: reconnects, watch restore, expiry, reply loss."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory

import aiocoord
from aiocoord import Client, EventType, State, StateChange
from aiocoord.errors import SessionExpiredError
from aiocoord.testing import FaultProxy, expire_session, session_of


def record_states(client: Client) -> list[StateChange]:
    changes: list[StateChange] = []
    client.add_state_listener(changes.append)
    return changes


async def test_watches_set_before_a_drop_fire_for_changes_made_while_away(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    writer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    await writer.create("/changed", b"0")
    await writer.create("/deleted", b"0")
    await writer.create("/parent")
    session_id = client.session_id

    _, _, data_watch = await client.get("/changed", watch=True)
    _, created_watch = await client.exists("/created", watch=True)
    _, _, deleted_watch = await client.get("/deleted", watch=True)
    _, child_watch = await client.children("/parent", watch=True)

    # Cut the link and keep it cut while the changes happen.
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    await writer.set("/changed", b"1")
    await writer.create("/created")
    await writer.delete("/deleted")
    await writer.create("/parent/kid")
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert client.session_id == session_id

    events = await asyncio.wait_for(
        asyncio.gather(data_watch, created_watch, deleted_watch, child_watch), 5
    )
    assert [e.type for e in events] == [
        EventType.DATA_CHANGED,
        EventType.CREATED,
        EventType.DELETED,
        EventType.CHILDREN_CHANGED,
    ]
    assert [e.path for e in events] == ["/changed", "/created", "/deleted", "/parent"]


async def test_persistent_watch_is_restored_after_reconnect(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    writer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    await writer.create("/tree")
    watch = await client.add_watch("/tree", recursive=True)
    sent = session_of(client).sent[105]  # SetWatches2
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert session_of(client).sent[105] == sent + 1
    # ZooKeeper re-arms persistent watches without replaying the gap (caches re-read for
    # that); what matters is that the watch works again without being added anew.
    await writer.create("/tree/a")
    event = await asyncio.wait_for(anext(watch), 5)
    assert (event.type, event.path) == (EventType.CREATED, "/tree/a")
    await watch.aclose()


async def test_blackhole_past_the_session_timeout_loses_the_session(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=2)
    changes = record_states(client)
    old_session = client.session_id
    await client.create("/mine", ephemeral=True)
    _, gone = await observer.exists("/mine", watch=True)
    _, _, pending = await client.get("/mine", watch=True)

    zk_fault_proxy.blackhole()
    await client.wait_for(State.SUSPENDED, timeout=5)
    await client.wait_for(State.LOST, timeout=10)
    with pytest.raises(SessionExpiredError):
        await asyncio.wait_for(pending, 1)
    # The server expires the session too, and with it the ephemeral node.
    assert (await asyncio.wait_for(gone, 10)).type is EventType.DELETED

    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert client.session_id not in (0, old_session)
    states = [c.state for c in changes]
    assert states[:3] == [State.SUSPENDED, State.LOST, State.RECONNECTED]
    assert changes[2].new_session is True
    assert await client.exists("/mine") is None


async def expire_and_wait_new_session(client: Client, zookeeper: Any, path: str) -> None:
    """Expire the client's session on the server and return once the client is on a new
    one. A watch on ``path`` (a node that exists) tells of the expiry: the client may be on
    its new session before a wait for State.LOST would begin."""
    old = client.session_id
    _, _, watch = await client.get(path, watch=True)
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
    with pytest.raises(SessionExpiredError):
        await asyncio.wait_for(watch, 10)
    await client.wait_for(State.CONNECTED, timeout=10)
    assert client.session_id != old


async def test_server_side_expiry_is_reported_and_a_new_session_announced(
    zookeeper,
    zk_connect: Factory,  # type: ignore[no-untyped-def]
) -> None:
    client = await zk_connect(session_timeout=4)
    changes = record_states(client)
    await client.create("/eph", ephemeral=True)
    await expire_and_wait_new_session(client, zookeeper, "/eph")
    # The expiring connection may briefly take the session from the client first (then the
    # client reconnects to it once more), but LOST always comes, then a new session.
    states = [c.state for c in changes]
    assert State.LOST in states
    after_lost = [c for c in changes[states.index(State.LOST) + 1 :] if c.state.is_connected]
    assert after_lost[0].state is State.RECONNECTED and after_lost[0].new_session
    assert await client.exists("/eph") is None


async def test_no_reconnect_after_expiry_when_disabled(zookeeper, zk_connect: Factory) -> None:  # type: ignore[no-untyped-def]
    client = await zk_connect(reconnect_after_expiry=False)
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
    await client.wait_for(State.LOST, timeout=10)
    with pytest.raises(SessionExpiredError):
        await client.get("/")


async def test_protected_create_survives_reply_loss(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    await client.create("/locks")
    created: list[str] = []
    for _ in range(200):
        dropped = zk_fault_proxy.drop_after_request()
        path = await client.create("/locks/lock-", ephemeral=True, sequential=True, protected=True)
        created.append(path)
        await dropped  # the reply of that create really was lost
    names = await observer.children("/locks")
    assert len(names) == 200 == len(set(created))
    assert sorted("/locks/" + n for n in names) == sorted(created)
    for path in created:
        await client.delete(path)
    assert await observer.children("/locks") == []


async def test_protected_create_after_expiry_between_loss_and_retry(
    zookeeper,
    zk_connect: Factory,
    zk_fault_proxy: FaultProxy,  # type: ignore[no-untyped-def]
) -> None:
    observer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    await client.create("/locks")
    for _ in range(5):
        old_session = client.session_id
        dropped = zk_fault_proxy.drop_after_request()
        zk_fault_proxy.hold_new_connections(True)
        create = asyncio.ensure_future(
            client.create("/locks/lock-", ephemeral=True, sequential=True, protected=True)
        )
        await dropped
        await expire_session(old_session, session_of(client).password, zookeeper.connect_string)
        zk_fault_proxy.hold_new_connections(False)
        path = await asyncio.wait_for(create, 15)
        names = await observer.children("/locks")
        assert ["/locks/" + n for n in names] == [path]
        stat = await observer.exists(path)
        assert stat is not None and stat.ephemeral_owner == client.session_id != old_session
        await client.delete(path)


async def test_killing_the_connected_member_keeps_the_session(zookeeper_ensemble) -> None:  # type: ignore[no-untyped-def]
    async with aiocoord.connect(zookeeper_ensemble.connect_string, session_timeout=8) as client:
        path = await client.create("/failover-eph", ephemeral=True)
        session_id = client.session_id
        assert session_of(client).server is not None
        index = zookeeper_ensemble.index_of_port(session_of(client).server.port)
        changes = record_states(client)
        await asyncio.to_thread(zookeeper_ensemble.kill, index)
        try:
            await client.wait_for(State.RECONNECTED, timeout=15)
            assert client.session_id == session_id
            assert session_of(client).server.port != zookeeper_ensemble.member_port(index)
            assert await client.exists(path) is not None
            assert [c.state for c in changes][:2] == [State.SUSPENDED, State.RECONNECTED]
        finally:
            await client.delete(path)
            await asyncio.to_thread(zookeeper_ensemble.restart, index)


async def test_a_bound_view_serves_again_for_its_session_and_policies(
    zookeeper,
    zk_connect: Factory,  # type: ignore[no-untyped-def]
) -> None:
    """bound() hands out the view it made last while that view is for the same session and
    the client's retry policy and ACL provider are still the ones it was made with; a view
    of a session that has ended refuses every call, and the next bound() is a fresh view of
    the new session."""
    client = await zk_connect(session_timeout=4)
    view = client.bound()
    assert client.bound() is view
    assert client.bound(session_of(client).generation) is view
    await view.create("/bound", b"")

    client.retry = aiocoord.RetryNTimes(2, 0.01)
    with_retry = client.bound()
    assert with_retry is not view
    assert with_retry.retry is client.retry
    client.acl_provider = lambda path: aiocoord.OPEN_ACL_UNSAFE
    with_acl = client.bound()
    assert with_acl is not with_retry
    assert with_acl.acl_provider is client.acl_provider

    await expire_and_wait_new_session(client, zookeeper, "/bound")
    with pytest.raises(SessionExpiredError):
        await with_acl.exists("/bound")
    fresh = client.bound()
    assert fresh is not with_acl
    assert await fresh.exists("/bound") is not None
