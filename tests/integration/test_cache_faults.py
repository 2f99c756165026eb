"""Caches under faults and load: convergence through drops and expiry, changes made while
away, re-created nodes, and the pipelined initial load of 10,000 children."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from support import Factory

import aiocoord
from aiocoord import ChildData, Client, State
from aiocoord._wire.opcodes import Op
from aiocoord.errors import NodeExistsError, NoNodeError, NoServersError, NotEmptyError
from aiocoord.recipes._stream import EventSubscription
from aiocoord.recipes.cache import CacheEventType, ChildrenCache, NodeCache, NodeEvent, TreeCache
from aiocoord.recipes.cache._feeds import BATCH, WINDOW
from aiocoord.testing import FaultProxy, expire_session, session_of

Summary = dict[str, tuple[bytes, int, int]]
T = CacheEventType
ADDED = {T.CREATED, T.CHILD_ADDED, T.NODE_ADDED}
UPDATED = {T.UPDATED, T.CHILD_UPDATED, T.NODE_UPDATED}
REMOVED = {T.DELETED, T.CHILD_REMOVED, T.NODE_REMOVED}


#: The failure-semantics rows of docs/recipes/caches.md and its row of docs/recipes.md, with the
#: tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | "
    "`NodeCache`, `ChildrenCache`, `TreeCache`": [
        "test_cache_converges_under_drops_and_expiry",
        "test_changes_made_while_disconnected_still_arrive",
        "test_cache_rearms_after_session_expiry",
    ],
    "recipes/caches.md | Failure semantics | Connection lost (SUSPENDED)": [
        "test_changes_made_while_disconnected_still_arrive",
        "test_cache_converges_under_drops_and_expiry",
    ],
    "recipes/caches.md | Failure semantics | Reconnected (same session)": [
        "test_node_recreated_while_away_is_removed_then_added",
        "test_changes_made_while_disconnected_still_arrive",
    ],
    "recipes/caches.md | Failure semantics | Session expired (LOST)": [
        "test_cache_rearms_after_session_expiry",
        "test_cache_converges_under_drops_and_expiry",
    ],
    "recipes/caches.md | Failure semantics | Client closed": [
        "test_cache.py::test_cache_ends_streams_when_its_client_closes",
        "test_cache.py::test_stopping_removes_watches_and_leaves_no_task",
    ],
    "recipes/caches.md | Failure semantics | Cancellation": [
        "test_a_timed_out_or_cancelled_get_consumes_nothing",
        "test_cache.py::test_cancelled_start_closes_the_cache_and_leaves_no_task",
    ],
    "recipes/caches.md | Failure semantics | Timeout": [
        "test_a_timed_out_or_cancelled_get_consumes_nothing",
        "test_cache.py::test_node_cache_wait_for_returns_matching_state",
    ],
}


def summary(nodes: Iterable[ChildData]) -> Summary:
    """What must match the server: each node's data, czxid and mzxid."""
    return {d.path: (d.data, d.stat.czxid, d.stat.mzxid) for d in nodes}


def cache_nodes(cache: Any) -> Iterable[ChildData]:
    if isinstance(cache, ChildrenCache):
        return cache.children.values()
    if isinstance(cache, TreeCache):
        return cache.nodes.values()
    return [cache.current] if cache.current is not None else []


async def server_summary(client: Client, path: str, depth: int | None) -> Summary:
    """The server's state of what a cache of ``path`` to ``depth`` holds (root included
    unless depth is 1, the ChildrenCache shape)."""
    out: Summary = {}

    async def visit(node: str, level: int) -> None:
        if level or depth != 1:
            try:
                data, stat = await client.get(node)
            except NoNodeError:
                return
            out[node] = (data, stat.czxid, stat.mzxid)
        if depth is not None and level >= depth:
            return
        try:
            names = await client.children(node)
        except NoNodeError:
            return
        base = "" if node == "/" else node
        await asyncio.gather(*(visit(f"{base}/{n}", level + 1) for n in names))

    await visit(path, 0)
    return out


class Replay:
    """Applies a cache's events to an empty dict, checking each is a real difference and that
    a node's events go forward in zxid order."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self.state: dict[str, ChildData] = {}
        self.last_zxid: dict[str, int] = {}
        self.counts: Counter[CacheEventType] = Counter()

    def apply(self, event: NodeEvent) -> None:
        self.counts[event.type] += 1
        path = event.path
        if event.type in ADDED:
            assert event.data is not None
            assert event.previous is None
            assert path not in self.state, f"added twice: {event}"
            self._forward(path, event.data)
            self.state[path] = event.data
        elif event.type in UPDATED:
            assert event.data is not None
            assert self.state.get(path) == event.previous, f"update of a stale state: {event}"
            assert event.previous is not None
            assert event.data.stat.czxid == event.previous.stat.czxid
            self._forward(path, event.data)
            self.state[path] = event.data
        elif event.type in REMOVED:
            assert event.data is None
            assert self.state.pop(path, None) == event.previous, f"removal of unknown: {event}"
        elif event.type is T.RESYNCED:
            self.state = {d.path: d for d in cache_nodes(self.cache)}

    def _forward(self, path: str, data: ChildData) -> None:
        last = self.last_zxid.get(path, 0)
        assert data.stat.mzxid > last, f"{path}: mzxid {data.stat.mzxid} after {last}"
        self.last_zxid[path] = data.stat.mzxid


async def replay_all(sub: EventSubscription[NodeEvent], replay: Replay) -> None:
    async for event in sub:
        replay.apply(event)


async def drop_periodically(proxy: FaultProxy, stop: asyncio.Event, drops: list[int]) -> None:
    """The fault injector: cut the cache's connection every 200 ms until told to stop."""
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), 0.2)
        except TimeoutError:
            proxy.drop()
            drops[0] += 1


async def random_writes(
    client: Client, paths: list[str], ops: int, seed: int, done: list[int], half: asyncio.Event
) -> None:
    rng = random.Random(seed)
    for _ in range(ops):
        path = rng.choice(paths)
        roll = rng.random()
        try:
            if roll < 0.4:
                await client.create(path, rng.randbytes(8))
            elif roll < 0.75:
                await client.set(path, rng.randbytes(8))
            else:
                await client.delete(path)
        except (NodeExistsError, NoNodeError, NotEmptyError):
            pass
        done[0] += 1
        if done[0] == 1000:
            half.set()
        # Spread the 2,000 writes over a few seconds, so many drops fall among them.
        await asyncio.sleep(rng.random() * 0.008)


async def force_expiry(client: Client, zookeeper: Any) -> None:
    """Expire the client's session on the server and wait until the client reports LOST.

    expire_session attaches to the session and closes it; if the client re-attaches in
    between (it reconnects at once when the server moves the session away from it), the
    close can miss, so try again until the client has seen the expiry.
    """
    lost = asyncio.Event()
    remove = client.add_state_listener(
        lambda change: lost.set() if change.state is State.LOST else None
    )
    try:
        for _ in range(10):
            with contextlib.suppress(NoServersError):
                await expire_session(
                    client.session_id, session_of(client).password, zookeeper.connect_string
                )
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(lost.wait(), 2)
                return
        raise AssertionError("the session could not be expired")
    finally:
        remove()


def tree_paths() -> list[str]:
    paths = []
    for a in "abcde":
        paths.append(f"/conv/{a}")
        for b in "xyz":
            paths.append(f"/conv/{a}/{b}")
            paths.append(f"/conv/{a}/{b}/q")
    return paths


@pytest.mark.parametrize(
    ("kind", "mode"),
    [("children", "auto"), ("tree", "auto"), ("children", "one-shot"), ("tree", "one-shot")],
)
async def test_cache_converges_under_drops_and_expiry(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any, kind: str, mode: str
) -> None:
    writers = [await zk_connect() for _ in range(4)]
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=4)
    await writers[0].create("/conv")
    if kind == "children":
        paths = [f"/conv/k{i:02d}" for i in range(40)]
        cache: Any = ChildrenCache(client, "/conv", watch_mode=mode)
        depth: int | None = 1
    else:
        paths = tree_paths()
        cache = TreeCache(client, "/conv", watch_mode=mode)
        depth = None
    replay = Replay(cache)
    sub = cache.changes()
    consumer = asyncio.ensure_future(replay_all(sub, replay))
    await cache.start()

    stop, half = asyncio.Event(), asyncio.Event()
    drops, done = [0], [0]
    injector = asyncio.ensure_future(drop_periodically(zk_fault_proxy, stop, drops))
    writing = asyncio.gather(
        *(random_writes(w, paths, 500, seed, done, half) for seed, w in enumerate(writers))
    )
    await asyncio.wait_for(half.wait(), 30)
    await force_expiry(client, zookeeper)
    await asyncio.wait_for(writing, 60)
    stop.set()
    await injector

    expected = await server_summary(writers[0], "/conv", depth)
    assert len(expected) > 5  # the writes left something to compare
    await cache.wait_for(lambda _: summary(cache_nodes(cache)) == expected, timeout=30)
    await client.wait_for(State.CONNECTED, timeout=10)
    final = summary(cache_nodes(cache))
    await cache.close()
    await asyncio.wait_for(consumer, 10)

    assert final == expected
    assert summary(replay.state.values()) == expected
    assert drops[0] >= 5, drops  # about 2 s of writes: some ten drops fell among them
    assert replay.counts[T.SUSPENDED] >= 3
    assert replay.counts[T.LOST] >= 1  # the forced expiry happened while the cache ran
    assert replay.counts[T.RECONNECTED] >= 3
    assert replay.counts[T.RESYNCED] == 0


CACHES: dict[str, Callable[..., Any]] = {
    "node": lambda c, mode: NodeCache(c, "/away/x", watch_mode=mode),
    "children": lambda c, mode: ChildrenCache(c, "/away", watch_mode=mode),
    "tree": lambda c, mode: TreeCache(c, "/away", watch_mode=mode),
}


async def node_events(sub: EventSubscription[NodeEvent], n: int) -> list[NodeEvent]:
    out: list[NodeEvent] = []
    while len(out) < n:
        event = await sub.get(timeout=10)
        if event.type in ADDED | UPDATED | REMOVED:
            out.append(event)
    return out


async def cut(proxy: FaultProxy, client: Client) -> None:
    proxy.blackhole()
    proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)


@pytest.mark.parametrize("mode", ["auto", "one-shot"])
@pytest.mark.parametrize("kind", ["node", "children", "tree"])
async def test_node_recreated_while_away_is_removed_then_added(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, kind: str, mode: str
) -> None:
    writer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    await writer.create("/away/x", b"same", make_parents=True)
    cache = CACHES[kind](client, mode)
    await cache.start()
    before = cache.get("/away/x") if kind == "tree" else _find(cache, "/away/x")
    assert before is not None
    sub = cache.changes()
    session = client.session_id

    await cut(zk_fault_proxy, client)
    await writer.delete("/away/x")
    await writer.create("/away/x", b"same")  # same data, same version 0: only czxid differs
    zk_fault_proxy.heal()
    await client.wait_for(State.CONNECTED, timeout=10)
    assert client.session_id == session

    removed, added = await node_events(sub, 2)
    assert removed.type in REMOVED
    assert removed.previous == before
    assert added.type in ADDED
    assert added.data is not None
    assert added.data.stat.version == before.stat.version == 0
    assert added.data.stat.czxid > before.stat.czxid
    await cache.close()


def _find(cache: Any, path: str) -> ChildData | None:
    for d in cache_nodes(cache):
        if d.path == path:
            return d
    return None


@pytest.mark.parametrize("mode", ["auto", "one-shot"])
async def test_changes_made_while_disconnected_still_arrive(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, mode: str
) -> None:
    writer = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    await writer.create("/away/a", b"1", make_parents=True)
    await writer.create("/away/b", b"1")
    cache = ChildrenCache(client, "/away", watch_mode=mode)
    await cache.start()
    sub = cache.changes()

    await cut(zk_fault_proxy, client)
    await writer.set("/away/a", b"2")
    await writer.delete("/away/b")
    await writer.create("/away/c", b"3")
    zk_fault_proxy.heal()

    kinds = []
    while len([k for k in kinds if k not in (T.SUSPENDED, T.RECONNECTED)]) < 3:
        event = await sub.get(timeout=10)
        kinds.append(event.type)
        if event.type in ADDED | UPDATED | REMOVED:
            kinds[-1] = (event.type, event.name)  # type: ignore[call-overload]
    assert kinds[:2] == [T.SUSPENDED, T.RECONNECTED]
    assert set(kinds[2:]) == {
        (T.CHILD_UPDATED, "a"),
        (T.CHILD_REMOVED, "b"),
        (T.CHILD_ADDED, "c"),
    }
    assert {n: d.data for n, d in cache.children.items()} == {"a": b"2", "c": b"3"}
    await cache.close()
    leftover = [e async for e in sub if e.type in ADDED | UPDATED | REMOVED]
    assert leftover == []  # each change arrived exactly once


@pytest.mark.parametrize("mode", ["auto", "one-shot"])
@pytest.mark.parametrize("kind", ["node", "children", "tree"])
async def test_cache_rearms_after_session_expiry(
    zk_connect: Factory, zookeeper: Any, kind: str, mode: str
) -> None:
    writer = await zk_connect()
    client = await zk_connect(session_timeout=4)
    await writer.create("/away/x", b"1", make_parents=True)
    await writer.create("/away/y", b"1")
    cache = CACHES[kind](client, mode)
    replay = Replay(cache)
    sub = cache.changes()
    consumer = asyncio.ensure_future(replay_all(sub, replay))
    await cache.start()
    watches_before = session_of(client).watches.counts()

    await force_expiry(client, zookeeper)
    await writer.set("/away/x", b"2")
    await writer.delete("/away/y")
    await writer.create("/away/z", b"3")
    depth = {"node": 0, "children": 1, "tree": None}[kind]
    expected = await server_summary(writer, "/away/x" if kind == "node" else "/away", depth)
    await cache.wait_for(lambda _: summary(cache_nodes(cache)) == expected, timeout=15)

    # The watches are armed again on the new session: a later change still arrives.
    await writer.set("/away/x", b"4")
    await cache.wait_for(lambda _: any(d.data == b"4" for d in cache_nodes(cache)), timeout=10)
    assert session_of(client).watches.counts()["server_watches"] == watches_before["server_watches"]
    final = summary(cache_nodes(cache))
    await cache.close()
    await asyncio.wait_for(consumer, 5)
    assert replay.counts[T.LOST] == 1
    # The client may first get its old session back (the expiry races its reconnect).
    assert replay.counts[T.RECONNECTED] >= 1
    assert summary(replay.state.values()) == final


@pytest.mark.parametrize("mode", ["auto", "one-shot"])
async def test_initial_load_of_10000_children_is_pipelined(zk_connect: Factory, mode: str) -> None:
    client = await zk_connect()
    await client.create("/big")
    payload = bytes(range(100))
    commits = []
    for start in range(0, 10_000, 500):
        txn = client.transaction()
        for i in range(start, start + 500):
            txn.create(f"/big/n{i:05d}", payload)
        commits.append(txn.commit())
    await asyncio.gather(*commits)

    cache = ChildrenCache(client, "/big", watch_mode=mode)
    base = session_of(client).sent.copy()
    get_data_sent_at_first_child: list[int] = []
    registered = asyncio.Event()

    def reads(sent: Counter[int]) -> int:
        # getData requests, or multiRead requests of BATCH reads each (the persistent feed)
        return sent[Op.GET_DATA] + BATCH * sent[Op.MULTI_READ]

    def observe(children: Any) -> bool:
        # Called synchronously at every change: record how many reads had been written when
        # the first reply was applied.
        registered.set()
        if len(children) and not get_data_sent_at_first_child:
            get_data_sent_at_first_child.append(reads(session_of(client).sent - base))
        return False

    observer = asyncio.ensure_future(cache.wait_for(observe))
    await registered.wait()
    await cache.start()
    observer.cancel()
    sent = session_of(client).sent - base

    assert len(cache.children) == 10_000
    assert cache.children["n01234"].data == payload
    # One listing, one read per child, and reads were on the wire together before the first
    # reply was applied, not one round trip after another: all 10,000 with one-shot watches
    # (a getData each), a full window of them with the persistent watch (which bounds what a
    # load holds at once), BATCH in each multiRead.
    assert sent[Op.GET_CHILDREN] + sent[Op.GET_CHILDREN2] == 1
    if mode == "one-shot":
        assert sent[Op.GET_DATA] == 10_000
        assert get_data_sent_at_first_child == [10_000]
    else:
        assert sent[Op.GET_DATA] == 0
        assert sent[Op.MULTI_READ] == -(-10_000 // BATCH)
        assert get_data_sent_at_first_child == [-(-WINDOW // BATCH) * BATCH]
    await cache.close()


async def make_tree(client: Client, root: str, parents: int, leaves: int) -> None:
    await client.create(root)
    for p in range(parents):
        txn = client.transaction()
        txn.create(f"{root}/p{p}", b"p")
        for i in range(leaves):
            txn.create(f"{root}/p{p}/c{i:04d}", b"%d" % i)
        await txn.commit()


async def test_tree_load_lists_only_nodes_that_have_children(zk_connect: Factory) -> None:
    client = await zk_connect()
    await make_tree(client, "/lt", 3, 50)
    base = session_of(client).sent.copy()
    cache = TreeCache(client, "/lt")
    await cache.start()
    sent = session_of(client).sent - base
    assert len(cache.nodes) == 1 + 3 + 150
    # The root alone, then the parents, then their leaves in multiReads of up to BATCH (how
    # the leaves group depends on how the listings' answers arrive together).
    assert sent[Op.GET_DATA] == 1
    assert -(-153 // BATCH) <= sent[Op.MULTI_READ] <= 1 + 3 * -(-50 // BATCH)
    # The root and the parents: a leaf's read says it has no children, so it is not listed.
    assert sent[Op.GET_CHILDREN] + sent[Op.GET_CHILDREN2] == 4
    # A child of a leaf made after its read is still seen: the watch came before the reads.
    await client.create("/lt/p1/c0007/late", b"late")
    got = await cache.wait_for(lambda nodes: "/lt/p1/c0007/late" in nodes, timeout=10)
    assert got["/lt/p1/c0007/late"].data == b"late"
    await cache.close()


async def test_a_tree_load_cut_midway_completes_equal_to_the_server(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    writer = await zk_connect()
    await make_tree(writer, "/cutload", 4, 1_000)
    client = await zk_connect(zk_fault_proxy.connect_string)
    cache = TreeCache(client, "/cutload")
    dropped = []
    registered = asyncio.Event()

    def cut_at_first(nodes: Any) -> bool:
        # Called synchronously at every change: drop the connection once reads are landing,
        # with most of the window still unanswered.
        registered.set()
        if len(nodes) > 10 and not dropped:
            dropped.append(zk_fault_proxy.drop())
        return False

    observer = asyncio.ensure_future(cache.wait_for(cut_at_first))
    await registered.wait()  # the observer is in place before the load begins
    await asyncio.wait_for(cache.start(), 60)
    observer.cancel()
    assert dropped and dropped[0] >= 1  # the load really was cut
    expected = await server_summary(writer, "/cutload", None)
    assert len(expected) == 1 + 4 + 4_000
    assert summary(cache.nodes.values()) == expected
    await cache.close()


async def test_a_timed_out_or_cancelled_get_consumes_nothing(zk_connect: Factory) -> None:
    client = await zk_connect()
    await client.create("/timeouts", b"0")
    async with NodeCache(client, "/timeouts") as cache:
        events = cache.changes()
        with pytest.raises(aiocoord.TimeoutError):
            await cache.wait_for(lambda d: d is None, timeout=0.05)
        with pytest.raises(aiocoord.TimeoutError):
            await events.get(timeout=0.05)
        with pytest.raises(asyncio.TimeoutError):  # wait_for cancels the waiting get
            await asyncio.wait_for(events.get(), 0.05)
        await client.set("/timeouts", b"1")
        # The change goes to the next get: neither the timeout nor the cancellation took it.
        event = await events.get(timeout=10)
        assert event.type is CacheEventType.UPDATED and event.data is not None
        assert event.data.data == b"1"
