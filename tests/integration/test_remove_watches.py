"""Client.remove_watches (issue 28): ZooKeeper's removeWatches / removeAllWatches. The watch
goes on the server (its ``wchc`` no longer lists it), its waiters wake with a *_REMOVED event,
other kinds stay, and what cannot be done is refused before anything is sent."""

from __future__ import annotations

import asyncio

import pytest
from support import Factory

from aiocoord import Client, EventType, State
from aiocoord.errors import BadArgumentsError, InvalidTypeError, NoWatcherError
from aiocoord.testing import FaultProxy


async def _server_watches(client: Client) -> str:
    """This session's watches as the server lists them (``wchc``: by session)."""
    text = await client.command("wchc")
    ours, _, _ = text.partition(f"0x{client.session_id:x}")[2].partition("\n0x")
    return ours


async def test_removed_data_watch_wakes_its_waiters_and_leaves_the_server(
    zk_client: Client, zk_connect: Factory
) -> None:
    await zk_client.create("/node", b"v1")
    _, _, first = await zk_client.get("/node", watch=True)
    _, second = await zk_client.exists("/node", watch=True)  # shares the server watch
    assert "/node" in await _server_watches(zk_client)

    await zk_client.remove_watches("/node", "data")

    assert (await first.wait(5)).type is EventType.DATA_WATCH_REMOVED
    assert (await second.wait(5)).type is EventType.DATA_WATCH_REMOVED
    assert (await first.wait(5)).path == "/node"
    assert "/node" not in await _server_watches(zk_client)
    assert zk_client.stats().watches.data == 0
    assert zk_client.stats().requests["remove_watches"].count == 1


async def test_removing_one_kind_keeps_the_other(zk_client: Client, zk_connect: Factory) -> None:
    await zk_client.create("/node", b"v1")
    await zk_client.create("/node/child")
    _, _, data_watch = await zk_client.get("/node", watch=True)
    _, child_watch = await zk_client.children("/node", watch=True)

    await zk_client.remove_watches("/node", "child")
    assert (await child_watch.wait(5)).type is EventType.CHILD_WATCH_REMOVED
    assert not data_watch.done()

    other = await zk_connect()
    await other.set("/node", b"v2")
    assert (await data_watch.wait(10)).type is EventType.DATA_CHANGED
    with pytest.raises(NoWatcherError):  # both gone now: the second fired by its event
        await zk_client.remove_watches("/node")


async def test_any_removes_both_kinds(zk_client: Client) -> None:
    await zk_client.create("/node")
    _, _, data_watch = await zk_client.get("/node", watch=True)
    _, child_watch = await zk_client.children("/node", watch=True)
    await zk_client.remove_watches("/node")
    assert (await data_watch.wait(5)).type is EventType.DATA_WATCH_REMOVED
    assert (await child_watch.wait(5)).type is EventType.CHILD_WATCH_REMOVED
    assert "/node" not in await _server_watches(zk_client)


async def test_no_watch_is_a_typed_error_before_anything_is_sent(zk_client: Client) -> None:
    await zk_client.create("/node")
    _, _, data_watch = await zk_client.get("/node", watch=True)
    with pytest.raises(NoWatcherError) as info:
        await zk_client.remove_watches("/node", "child")
    assert info.value.path == "/node"
    with pytest.raises(NoWatcherError):
        await zk_client.remove_watches("/elsewhere")
    assert "remove_watches" not in zk_client.stats().requests  # none was sent
    assert not data_watch.done()


async def test_local_removal_works_while_disconnected(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string)
    await client.create("/node")
    _, _, watch = await client.get("/node", watch=True)
    zk_fault_proxy.refuse()
    zk_fault_proxy.drop()
    try:
        await client.wait_for(State.SUSPENDED, timeout=10)
        await client.remove_watches("/node", "data", local=True)
        assert (await watch.wait(5)).type is EventType.DATA_WATCH_REMOVED
    finally:
        zk_fault_proxy.accept()
    await client.wait_for(State.CONNECTED, timeout=20)
    # Nothing is restored on the reconnect: the table no longer holds it.
    assert client.stats().watches.data == 0


async def test_bad_arguments(zk_client: Client) -> None:
    with pytest.raises(BadArgumentsError):
        await zk_client.remove_watches("/node", "exists")  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        await zk_client.remove_watches("node")
    with pytest.raises(InvalidTypeError):
        await zk_client.remove_watches("/node", local=1)  # type: ignore[arg-type]


async def test_a_watch_served_by_a_persistent_one_leaves_the_persistent_one_alone(
    zk_client: Client, zk_connect: Factory
) -> None:
    # ZOOKEEPER-4466: a one-shot data watch on a path with our persistent watch is not set
    # on the server; removing it there (type DATA) would end the persistent watch too.
    await zk_client.create("/node", b"v1")
    async with await zk_client.add_watch("/node") as persistent:
        _, _, one_shot = await zk_client.get("/node", watch=True)
        await zk_client.remove_watches("/node", "data")
        assert (await one_shot.wait(5)).type is EventType.DATA_WATCH_REMOVED
        other = await zk_connect()
        await other.set("/node", b"v2")
        event = await asyncio.wait_for(anext(persistent), 10)
        assert (event.type, event.path) == (EventType.DATA_CHANGED, "/node")
