"""TTL nodes against a real server (started with ``zookeeper.extendedTypesEnabled=true`` and a
100 ms ``znode.container.checkIntervalMs``): ``create(ttl=)`` in every form, the server
reaping an untouched TTL node, PersistentNode in the TTL and CONTAINER modes,
PersistentTtlNode keeping its node while it runs and letting it go after close, and the
errors for bad input and for a server without TTL nodes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import Client, CreateMode, PersistentNode, PersistentTtlNode, connect
from aiocoord._session.watch import EventType
from aiocoord.errors import BadArgumentsError, InvalidTypeError, UnimplementedError
from aiocoord.testing import ZooKeeperServer, expire_session, session_of


async def _reaped(client: Client, path: str) -> None:
    """Wait for the server to delete ``path`` (it must exist now)."""
    stat, watch = await client.exists(path, watch=True)
    assert stat is not None, path
    assert (await asyncio.wait_for(watch, 10)).type is EventType.DELETED, path


async def test_an_untouched_ttl_node_is_reaped_after_its_ttl_and_a_touched_one_is_not(
    zk_client: Client,
) -> None:
    # (The server reports no TTL in a node's Stat: ephemeral_owner reads 0, as for any
    # persistent node; a TTL node is known by being reaped.)
    loop = asyncio.get_running_loop()
    await zk_client.create("/reaped", ttl=0.3)
    start = loop.time()
    await _reaped(zk_client, "/reaped")
    assert loop.time() - start >= 0.25  # not before its TTL (mtime is the server's clock)
    # A write restarts the TTL: touched every 0.1 s, a 1 s TTL node outlives 1.5 s.
    # (A set on a reaped node would raise NoNodeError.)
    await zk_client.create("/touched", ttl=1)
    for _ in range(15):
        await zk_client.set("/touched", b"")
        await asyncio.sleep(0.1)  # the touch period: time has to pass for a TTL
    await _reaped(zk_client, "/touched")
    # A child keeps it too, however old its last write.
    await zk_client.create("/parent", ttl=0.2)
    await zk_client.create("/parent/child")
    _, parent_gone = await zk_client.exists("/parent", watch=True)
    await asyncio.sleep(0.6)  # three TTLs, six reaper rounds
    assert not parent_gone.done()
    await zk_client.delete("/parent/child")
    assert (await asyncio.wait_for(parent_gone, 10)).type is EventType.DELETED


async def test_every_form_of_create_with_ttl_makes_a_ttl_node(zk_client: Client) -> None:
    await zk_client.create("/s")
    seq = await zk_client.create("/s/item-", ttl=0.2, sequential=True)
    # A protected create keeps its TTL (it used to make a plain persistent node).
    prot = await zk_client.create("/s/p-", ttl=0.2, sequential=True, protected=True)
    assert "_c_" in prot
    results = await zk_client.transaction().create("/s/txn", b"t", ttl=0.2).commit()
    assert results[0].path == "/s/txn"
    await asyncio.gather(*(_reaped(zk_client, p) for p in (seq, prot, "/s/txn")))
    assert await zk_client.exists("/s") is not None  # the plain parent stays


async def test_ttl_is_refused_where_it_does_not_apply(zk_client: Client) -> None:
    for kwargs in (
        {"ttl": 0},
        {"ttl": -1},
        {"ttl": float("nan")},
        {"ttl": 1, "ephemeral": True},
        {"ttl": 1, "container": True},
    ):
        with pytest.raises(BadArgumentsError):
            await zk_client.create("/bad", **kwargs)
        with pytest.raises(BadArgumentsError):
            zk_client.transaction().create("/bad", **kwargs)
    with pytest.raises(BadArgumentsError):
        await zk_client.create("/bad", container=True, protected=True)
    with pytest.raises(InvalidTypeError):
        await zk_client.create("/bad", ttl="1")  # type: ignore[call-overload]  # the refusal tested
    with pytest.raises(BadArgumentsError, match="needs a ttl"):
        PersistentNode(zk_client, "/bad", mode=CreateMode.PERSISTENT_WITH_TTL)
    with pytest.raises(BadArgumentsError, match="TTL modes only"):
        PersistentNode(zk_client, "/bad", mode=CreateMode.PERSISTENT, ttl=1)
    with pytest.raises(BadArgumentsError):
        PersistentNode(zk_client, "/bad", mode=CreateMode.CONTAINER, protected=True)
    with pytest.raises(BadArgumentsError):
        PersistentTtlNode(zk_client, "/bad", ttl=0)
    with pytest.raises(BadArgumentsError):
        PersistentTtlNode(zk_client, "/bad", ttl=1, touch_schedule_factor=1)
    with pytest.raises(InvalidTypeError):
        PersistentTtlNode(zk_client, "/bad", ttl=1, touch_schedule_factor=True)
    with pytest.raises(BadArgumentsError):
        PersistentTtlNode(zk_client, "/bad", ttl=1, child_name="a/b")
    with pytest.raises(BadArgumentsError):
        PersistentTtlNode(zk_client, "/", ttl=1)
    assert await zk_client.exists("/bad") is None


async def test_persistent_node_in_a_ttl_mode_is_made_again_after_the_server_reaps_it(
    zk_client: Client, zk_connect: Factory
) -> None:
    observer = await zk_connect()
    node = PersistentNode(zk_client, "/kept", b"v", mode=CreateMode.PERSISTENT_WITH_TTL, ttl=0.2)
    async with node:
        await node.wait_for_initial_create(10)
        await _reaped(observer, "/kept")
        await eventually(lambda: _exists(observer, "/kept"), what="/kept made again")
        assert node.creations >= 2
    # close() waits only briefly for its delete to be answered: wait for it before looking.
    await zk_client.wait_background()
    assert await observer.exists("/kept") is None  # close() deletes it, as for any mode


async def _exists(client: Client, path: str) -> bool:
    return await client.exists(path) is not None


async def test_persistent_ttl_node_stays_while_it_runs_and_goes_after_close(
    zk_client: Client, zk_connect: Factory
) -> None:
    observer = await zk_connect()
    node = PersistentTtlNode(
        zk_client, "/workers/w1", ttl=1, data=b"alive", touch_schedule_factor=4
    )
    await node.start()
    await node.wait_for_initial_create(10)
    stat, parent_gone = await observer.exists("/workers/w1", watch=True)
    assert stat is not None
    assert (await observer.get("/workers/w1"))[0] == b"alive"
    # Six touches of the child are 1.5 TTLs: the node is still there, never deleted.
    await eventually(lambda: _exists(observer, "/workers/w1/touch"), what="the child")
    touches = 0
    while touches < 6:
        _, _, touched = await observer.get("/workers/w1/touch", watch=True)
        event = await asyncio.wait_for(touched, 10)
        assert event.type is EventType.DATA_CHANGED
        touches += 1
    assert not parent_gone.done()
    loop = asyncio.get_running_loop()
    await node.close()
    closed = loop.time()
    # The child goes after its TTL, then the container with its last child.
    assert (await asyncio.wait_for(parent_gone, 10)).type is EventType.DELETED
    assert loop.time() - closed >= 0.5  # not at close: the last touch was < TTL/4 ago
    await node.close()  # idempotent


async def test_persistent_ttl_node_closed_at_once_leaves_nothing(zk_client: Client) -> None:
    for _ in range(3):
        node = PersistentTtlNode(zk_client, "/brief", ttl=0.3)
        await node.start()
        await node.close()
        await eventually(lambda: _absent(zk_client, "/brief"), what="/brief gone")
    assert await zk_client.children("/") == []


async def _absent(client: Client, path: str) -> bool:
    return await client.exists(path) is None


async def test_a_server_without_ttl_nodes_is_named_in_the_error() -> None:
    plain = ZooKeeperServer(jvm_options=["-Dzookeeper.extendedTypesEnabled=false"])
    async with plain:
        client = await connect(plain.connect_string, session_timeout=10)
        try:
            with pytest.raises(UnimplementedError, match="extendedTypesEnabled"):
                await client.create("/ttl", ttl=1)
            node = PersistentTtlNode(client, "/ttl-node", ttl=1)
            await node.start()
            await node.wait_for_initial_create(10)
            await eventually(lambda: _failed(node), what="the refused touch")
            with pytest.raises(UnimplementedError):
                await node.close()
            assert await client.exists("/ttl-node") is None  # never touched: deleted
        finally:
            await client.close()


async def _failed(node: PersistentTtlNode) -> bool:
    return node._failure is not None


async def test_persistent_ttl_node_keeps_touching_on_a_new_session_after_expiry(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, observer = await zk_connect(session_timeout=4), await zk_connect()
    # A TTL well above the time to notice the expiry and reconnect: a client cut off for
    # longer than the TTL would let the server reap the node, as documented.
    async with PersistentTtlNode(client, "/survivor", ttl=3, touch_schedule_factor=6) as node:
        await node.wait_for_initial_create(10)
        await eventually(lambda: _exists(observer, "/survivor/touch"), what="the child")
        _, parent_gone = await observer.exists("/survivor", watch=True)
        old = client.session_id
        await expire_session(
            client.session_id, session_of(client).password, zookeeper.connect_string
        )
        # The node and its child are persistent: nothing went with the session, and the
        # touches go on from the new one (a reaped node would fire the watch).
        await eventually(lambda: _true(client.connected and client.session_id != old))
        for _ in range(3):
            _, _, touched = await observer.get("/survivor/touch", watch=True)
            assert (await asyncio.wait_for(touched, 10)).type is EventType.DATA_CHANGED
        assert not parent_gone.done()
        parent_gone.cancel()


async def _true(value: bool) -> bool:
    return value
