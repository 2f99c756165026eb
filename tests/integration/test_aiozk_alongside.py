"""aiozk and aiocoord in one process, on one server: each reads what the other writes, both
are told of the other's changes, and aiozk's replies are decoded by aiozk's own tables (we
used to register ours in its process-wide response table)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiozk
import pytest
from aiozk.protocol import WatchEvent as ZWatchEvent

from aiocoord import Client, EventType
from aiocoord.testing import ServerHandle


@pytest.fixture
async def zk_aiozk(zookeeper: ServerHandle, zk_namespace: str) -> AsyncIterator[aiozk.ZKClient]:
    """An aiozk client chrooted to this test's namespace (which zk_client creates)."""
    client = aiozk.ZKClient(zookeeper.connect_string, chroot=zk_namespace, session_timeout=10)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


def aiozk_event(client: aiozk.ZKClient, kind: int, path: str) -> asyncio.Future[None]:
    """A future aiozk resolves when its session sees a watch event of ``kind`` on ``path``
    (the watch itself is set by the read that follows)."""
    return client.wait_for_events([kind], path)


async def test_both_clients_create_read_and_delete_each_others_nodes(
    zk_client: Client, zk_aiozk: aiozk.ZKClient
) -> None:
    await zk_aiozk.create("/by-aiozk", b"from aiozk")
    created = await zk_client.create("/by-aiocoord", b"from aiocoord", sequential=True)

    assert (await zk_client.get("/by-aiozk"))[0] == b"from aiozk"
    assert await zk_aiozk.get_data(created) == b"from aiocoord"
    assert sorted(await zk_aiozk.get_children("/")) == sorted(await zk_client.children("/"))

    await zk_client.set("/by-aiozk", b"changed by aiocoord")
    await zk_aiozk.set_data(created, b"changed by aiozk", force=True)
    assert await zk_aiozk.get_data("/by-aiozk") == b"changed by aiocoord"
    assert (await zk_client.get(created))[0] == b"changed by aiozk"

    txn = zk_aiozk.begin_transaction()
    txn.create("/txn-by-aiozk", b"t")
    txn.set_data("/by-aiozk", b"in a transaction")
    result = await txn.commit()
    assert result.created == {"/txn-by-aiozk"}
    results = await zk_client.transaction().delete("/txn-by-aiozk").create("/txn2").commit()
    assert [r.op for r in results] == ["delete", "create"]
    assert not await zk_aiozk.exists("/txn-by-aiozk")

    await zk_client.delete("/by-aiozk")
    await zk_aiozk.delete(created, force=True)
    await zk_aiozk.delete("/txn2", force=True)
    assert await zk_client.exists("/by-aiozk") is None
    assert await zk_client.exists(created) is None
    assert await zk_aiozk.get_children("/") == []


async def test_both_clients_see_watches_fire(zk_client: Client, zk_aiozk: aiozk.ZKClient) -> None:
    await zk_client.create("/watched", b"0")

    # Both watch the same node's data and the parent's children.
    changed_aiozk = aiozk_event(zk_aiozk, ZWatchEvent.DATA_CHANGED, "/watched")
    assert await zk_aiozk.get_data("/watched", watch=True) == b"0"
    _, _, changed = await zk_client.get("/watched", watch=True)
    children_aiozk = aiozk_event(zk_aiozk, ZWatchEvent.CHILDREN_CHANGED, "/")
    await zk_aiozk.get_children("/", watch=True)
    _, children = await zk_client.children("/", watch=True)

    await zk_aiozk.set_data(
        "/watched", b"1", force=True
    )  # aiozk's write fires aiocoord's watch too
    assert (await changed.wait(10)).type is EventType.DATA_CHANGED
    await asyncio.wait_for(changed_aiozk, 10)

    await zk_client.create("/new-child")  # aiocoord's write fires aiozk's watch too
    assert (await children.wait(10)).type is EventType.CHILDREN_CHANGED
    await asyncio.wait_for(children_aiozk, 10)

    # One more round the other way round: aiocoord writes, both hear of the delete.
    deleted_aiozk = aiozk_event(zk_aiozk, ZWatchEvent.DELETED, "/watched")
    await zk_aiozk.get_data("/watched", watch=True)
    stat, gone = await zk_client.exists("/watched", watch=True)
    assert stat is not None
    await zk_client.delete("/watched")
    assert (await gone.wait(10)).type is EventType.DELETED
    await asyncio.wait_for(deleted_aiozk, 10)


@pytest.mark.parametrize("first", ["aiozk", "aiocoord"])
async def test_an_ephemeral_of_either_vanishes_with_its_session_only(
    first: str, zookeeper: ServerHandle, zk_client: Client, zk_aiozk: aiozk.ZKClient
) -> None:
    await zk_aiozk.create("/eph-aiozk", ephemeral=True)
    await zk_client.create("/eph-aiocoord", ephemeral=True)
    if first == "aiozk":
        await zk_aiozk.close()
        assert await zk_client.children("/") == ["eph-aiocoord"]
    else:
        await zk_client.close()
        assert await zk_aiozk.get_children("/") == ["eph-aiozk"]
