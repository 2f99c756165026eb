"""NodeCache, ChildrenCache and TreeCache against a real server: events, streams, stop, input."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory

from aiocoord import Client, State
from aiocoord.errors import BadArgumentsError, InvalidPathError, InvalidTypeError
from aiocoord.recipes._stream import EventSubscription
from aiocoord.recipes.cache import (
    CacheError,
    CacheEventType,
    ChildrenCache,
    NodeCache,
    NodeEvent,
    TreeCache,
)
from aiocoord.testing import session_of

T = CacheEventType
MODES = ["auto", "one-shot"]
NODE_KINDS = {
    T.CREATED, T.UPDATED, T.DELETED,
    T.CHILD_ADDED, T.CHILD_UPDATED, T.CHILD_REMOVED,
    T.NODE_ADDED, T.NODE_UPDATED, T.NODE_REMOVED,
}  # fmt: skip


async def next_node_events(sub: EventSubscription[NodeEvent], n: int) -> list[NodeEvent]:
    """The next ``n`` node events (connection and INITIALIZED events skipped)."""
    out: list[NodeEvent] = []
    while len(out) < n:
        event = await sub.get(timeout=10)
        if event.type in NODE_KINDS:
            out.append(event)
    return out


async def no_more_node_events(sub: EventSubscription[NodeEvent], cache: Any) -> None:
    """Close the cache and check nothing but non-node events was left in the stream."""
    await cache.close()
    rest = [event async for event in sub if event.type in NODE_KINDS]
    assert rest == []


@pytest.mark.parametrize("mode", MODES)
async def test_node_cache_follows_create_update_delete(zk_client: Client, mode: str) -> None:
    async with NodeCache(zk_client, "/n", watch_mode=mode) as cache:
        assert cache.current is None
        sub = cache.changes()
        # Each change waits for the cache to show it: a state shorter than a read may be
        # skipped (the read after the event already sees the next one), as with any watch.
        await zk_client.create("/n", b"v1")
        await cache.wait_for(lambda d: d is not None, timeout=5)
        await zk_client.set("/n", b"v2")
        await cache.wait_for(lambda d: d is not None and d.data == b"v2", timeout=5)
        await zk_client.create("/n/kid")  # a child is not a change of the node
        await zk_client.delete("/n/kid")
        await zk_client.delete("/n")
        events = await next_node_events(sub, 3)
        assert [(e.type, e.path) for e in events] == [
            (T.CREATED, "/n"),
            (T.UPDATED, "/n"),
            (T.DELETED, "/n"),
        ]
        assert events[0].data is not None
        assert events[0].data.data == b"v1"
        assert events[1].data is not None
        assert events[1].data.data == b"v2"
        assert events[1].previous == events[0].data
        assert events[2].data is None
        assert events[2].previous == events[1].data
        assert cache.current is None
        await no_more_node_events(sub, cache)


async def test_node_cache_wait_for_returns_matching_state(zk_client: Client) -> None:
    await zk_client.create("/w", b"0")
    async with NodeCache(zk_client, "/w") as cache:
        assert cache.current is not None
        assert cache.current.data == b"0"
        waiter = asyncio.ensure_future(
            cache.wait_for(lambda d: d is not None and d.data == b"3", timeout=10)
        )
        for i in (1, 2, 3):
            await zk_client.set("/w", str(i).encode())
        found = await waiter
        assert found is not None
        assert found.data == b"3"
        assert found.stat.version == 3
        with pytest.raises(asyncio.TimeoutError):
            await cache.wait_for(lambda d: d is None, timeout=0.05)
    with pytest.raises(CacheError):
        await cache.wait_for(lambda d: True)


@pytest.mark.parametrize("mode", MODES)
async def test_children_cache_data_and_child_events_arrive_once(
    zk_client: Client, mode: str
) -> None:
    await zk_client.create("/p")
    await zk_client.create("/p/old", b"o")
    cache = ChildrenCache(zk_client, "/p", watch_mode=mode)
    sub = cache.changes()
    await cache.start()
    initial = [await sub.get(timeout=5) for _ in range(2)]
    assert [(e.type, e.name) for e in initial] == [(T.CHILD_ADDED, "old"), (T.INITIALIZED, "p")]

    await zk_client.create("/p/a", b"1")
    await cache.wait_for(lambda ch: "a" in ch, timeout=5)
    await zk_client.set("/p/a", b"2")
    await cache.wait_for(lambda ch: ch["a"].data == b"2", timeout=5)
    await zk_client.create("/p/a/grandchild")  # deeper nodes are not children
    await zk_client.set("/p/a/grandchild", b"x")
    await zk_client.set("/p", b"parent data")  # the parent's own data is not cached
    await zk_client.delete("/p/old")
    events = await next_node_events(sub, 3)
    assert [(e.type, e.name) for e in events] == [
        (T.CHILD_ADDED, "a"),
        (T.CHILD_UPDATED, "a"),
        (T.CHILD_REMOVED, "old"),
    ]
    assert events[1].data is not None
    assert events[1].data.data == b"2"
    assert set(cache.children) == {"a"}
    assert cache.children["a"].data == b"2"
    assert "old" not in cache.children
    await no_more_node_events(sub, cache)


async def test_children_cache_without_data_keeps_stats(zk_client: Client) -> None:
    await zk_client.create("/s")
    await zk_client.create("/s/k", b"payload")
    async with ChildrenCache(zk_client, "/s", cache_data=False) as cache:
        assert cache.children["k"].data == b""
        assert cache.children["k"].stat.data_length == len(b"payload")
        await zk_client.set("/s/k", b"more")
        await cache.wait_for(lambda ch: ch["k"].stat.version == 1, timeout=5)


async def test_children_cache_of_missing_node_fills_when_created(zk_client: Client) -> None:
    async with ChildrenCache(zk_client, "/later") as cache:
        assert len(cache.children) == 0
        await zk_client.create("/later/x", b"1", make_parents=True)
        await cache.wait_for(lambda ch: "x" in ch, timeout=5)
        await zk_client.delete("/later", recursive=True)
        await cache.wait_for(lambda ch: len(ch) == 0, timeout=5)
        await zk_client.create("/later/y", b"2", make_parents=True)
        children = await cache.wait_for(lambda ch: "y" in ch, timeout=5)
        assert set(children) == {"y"}


@pytest.mark.parametrize("mode", MODES)
async def test_tree_cache_follows_the_subtree_to_max_depth(zk_client: Client, mode: str) -> None:
    await zk_client.create("/t/a/b", b"ab", make_parents=True)
    async with TreeCache(zk_client, "/t", max_depth=2, watch_mode=mode) as cache:
        assert set(cache.nodes) == {"/t", "/t/a", "/t/a/b"}
        sub = cache.changes()
        await zk_client.create("/t/a/b/c")  # depth 3: below max_depth
        await zk_client.create("/t/d", b"d")
        await cache.wait_for(lambda nodes: "/t/d" in nodes, timeout=5)
        await zk_client.set("/t/a/b", b"ab2")
        await zk_client.set("/t", b"root")
        await cache.wait_for(lambda nodes: nodes["/t"].data == b"root", timeout=5)
        await zk_client.delete("/t/d")
        events = await next_node_events(sub, 4)
        assert [(e.type, e.path) for e in events] == [
            (T.NODE_ADDED, "/t/d"),
            (T.NODE_UPDATED, "/t/a/b"),
            (T.NODE_UPDATED, "/t"),
            (T.NODE_REMOVED, "/t/d"),
        ]
        assert set(cache.nodes) == {"/t", "/t/a", "/t/a/b"}
        assert cache.get("/t/a/b") is not None
        assert set(cache.children("/t/a")) == {"b"}
        assert cache.get("/t/a/b/c") is None
        await zk_client.delete("/t", recursive=True)
        await cache.wait_for(lambda nodes: len(nodes) == 0, timeout=5)
        removed = await next_node_events(sub, 3)
        assert {e.path for e in removed} == {"/t", "/t/a", "/t/a/b"}
        assert all(e.type is T.NODE_REMOVED for e in removed)
        await no_more_node_events(sub, cache)


async def test_tree_cache_of_root_path(zk_client: Client) -> None:
    # The client is chrooted to the test's namespace, so "/" is that namespace.
    await zk_client.create("/x/y", b"1", make_parents=True)
    async with TreeCache(zk_client, "/") as cache:
        assert {"/", "/x", "/x/y"} <= set(cache.nodes)
        assert set(cache.children("/")) >= {"x"}
        await zk_client.create("/x/z")
        await cache.wait_for(lambda nodes: "/x/z" in nodes, timeout=5)


async def test_slow_consumer_gets_one_resynced_then_current_state(zk_client: Client) -> None:
    await zk_client.create("/slow")
    async with ChildrenCache(zk_client, "/slow") as cache:
        sub = cache.changes(buffer_size=5)
        other = cache.changes()
        for i in range(20):
            await zk_client.create(f"/slow/{i:02d}", b"x")
        await cache.wait_for(lambda ch: len(ch) == 20, timeout=10)
        event = await sub.get(timeout=5)
        assert event.type is T.RESYNCED
        # Read right after RESYNCED: the state includes everything the consumer missed.
        assert set(cache.children) == {f"{i:02d}" for i in range(20)}
        await zk_client.create("/slow/after")
        nxt = await next_node_events(sub, 1)
        assert (nxt[0].type, nxt[0].name) == (T.CHILD_ADDED, "after")
        # The other subscriber, with room to spare, lost nothing.
        got = await next_node_events(other, 21)
        assert [e.name for e in got] == [f"{i:02d}" for i in range(20)] + ["after"]


@pytest.mark.parametrize("kind", ["node", "children", "tree"])
@pytest.mark.parametrize("mode", MODES)
async def test_stopping_removes_watches_and_leaves_no_task(
    zk_connect: Factory, zookeeper: Any, zk_namespace: str, kind: str, mode: str
) -> None:
    client = await zk_connect()
    await client.create("/stop/a/b", b"1", make_parents=True)
    await client.create("/stop/c", b"2")
    tasks_before = asyncio.all_tasks()
    cache: Any = {"node": NodeCache, "children": ChildrenCache, "tree": TreeCache}[kind](
        client, "/stop", watch_mode=mode
    )
    await cache.start()
    counts = session_of(client).watches.counts()
    assert counts["server_watches"] > 0
    assert counts["persistent"] == (1 if mode == "auto" else 0)
    # wchp lists data and persistent watches (child watches are not shown).
    assert any(p.startswith(zk_namespace + "/stop") for p in await server_watches(zookeeper))
    assert asyncio.all_tasks() - tasks_before  # it runs tasks of its own...

    await cache.close()
    assert asyncio.all_tasks() == tasks_before  # ...and none is left after close
    assert session_of(client).watches.counts() == {
        "server_watches": 0,
        "waiters": 0,
        "persistent": 0,
    }
    await client.sync("/")  # the removals were sent before; this reply comes after theirs
    assert not any(p.startswith(zk_namespace) for p in await server_watches(zookeeper))
    await cache.close()  # idempotent


async def server_watches(zookeeper: Any) -> set[str]:
    """Paths the server holds watches on (wchp), for any session."""
    out = zookeeper.four_letter("wchp")
    if asyncio.iscoroutine(out):
        out = await out
    return {line.strip() for line in str(out).splitlines() if line.startswith("/")}


async def test_bad_input_is_refused_before_anything_is_sent(zk_client: Client) -> None:
    sent = sum(session_of(zk_client).sent.values())
    with pytest.raises(InvalidPathError):
        NodeCache(zk_client, "no-slash")
    with pytest.raises(InvalidPathError):
        ChildrenCache(zk_client, "/a//b")
    with pytest.raises(InvalidTypeError):
        TreeCache(zk_client, 42)  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        TreeCache(zk_client, "/t", max_depth=-1)
    with pytest.raises(InvalidTypeError):
        TreeCache(zk_client, "/t", max_depth=True)
    with pytest.raises(InvalidTypeError):
        ChildrenCache(zk_client, "/t", cache_data="yes")  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        ChildrenCache(zk_client, "/t", buffer_size=0)
    with pytest.raises(BadArgumentsError):
        TreeCache(zk_client, "/t", watch_mode="sometimes")
    with pytest.raises(InvalidTypeError):
        NodeCache("not a client", "/t")  # type: ignore[arg-type]
    cache = ChildrenCache(zk_client, "/t")
    with pytest.raises(BadArgumentsError):
        cache.changes(buffer_size=-5)
    assert sum(session_of(zk_client).sent.values()) == sent

    await cache.start()
    with pytest.raises(CacheError, match="already started"):
        await cache.start()
    await cache.close()
    with pytest.raises(CacheError, match="is closed"):
        await cache.start()
    assert isinstance(CacheError("x"), RuntimeError)


async def test_cache_ends_streams_when_its_client_closes(zk_connect: Factory) -> None:
    client = await zk_connect()
    cache = TreeCache(client, "/gone")
    await cache.start()
    sub = cache.changes()
    await client.close()
    with pytest.raises(Exception, match="closed"):
        async for _ in sub:
            pass
    assert cache.closed
    await cache.close()


@pytest.mark.parametrize("mode", MODES)
async def test_cancelled_start_closes_the_cache_and_leaves_no_task(
    zk_connect: Factory, zk_fault_proxy: Any, mode: str
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=3)
    await client.create("/c/k", make_parents=True)
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    cache = TreeCache(client, "/c", watch_mode=mode)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(cache.start(), 0.2)  # cannot load while cut off
    assert cache.closed
    # (The proxy's own tasks come and go with the client's connection attempts.)
    assert [t for t in asyncio.all_tasks() if _is_cache_task(t)] == []
    zk_fault_proxy.heal()
    await client.wait_for(State.CONNECTED, timeout=10)
    assert session_of(client).watches.counts()["server_watches"] == 0
    # Closed here, while the proxy is up: closing it later, once the proxy is gone, takes
    # about a session timeout (a session issue, not the cache's).
    await client.close()


def _is_cache_task(task: asyncio.Task[Any]) -> bool:
    return getattr(task.get_coro(), "__qualname__", "").startswith("_Cache.")


async def test_a_cache_has_one_stream_name(zk_client: Client) -> None:
    # Every recipe's stream is changes(); the old name went before any release.
    cache = ChildrenCache(zk_client, "/one-name")
    assert not hasattr(cache, "events")
    async with cache:
        changes = cache.changes()
        await zk_client.create("/one-name/kid", make_parents=True)
        (event,) = await next_node_events(changes, 1)
        assert (event.type, event.name) == (T.CHILD_ADDED, "kid")
