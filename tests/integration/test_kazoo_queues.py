"""kazoo's ``Queue`` (2.x, in threads) and aiocoord's ``Queue``/``PriorityQueue`` in kazoo's
layout share one queue: items put by either side are taken exactly once by the consumers of
both (also with every producer and consumer running at once), in kazoo's priority order, also
across an expiry of our consumer's session; our get times out and cancels leaving nothing on
kazoo's path. kazoo's ``LockingQueue`` and ours hand each item out once, and kazoo's
``TreeCache`` and ours see one tree."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest
from support import Factory, eventually

import aiocoord
from aiocoord import BadArgumentsError, Client, LockingQueue, PriorityQueue, Queue, TreeCache
from aiocoord.testing import expire_client, session_of

pytest.importorskip("kazoo.client", reason="kazoo is not installed")
kazoo_cache = pytest.importorskip("kazoo.recipe.cache")

SEMANTICS = {
    "recipes/queues.md | Failure semantics | kazoo and aiocoord consumers on one queue, our "
    "consumer's session expires": [
        "test_items_of_both_sides_are_taken_exactly_once_by_both_sides",
        "test_producers_and_consumers_of_both_sides_at_once_take_each_item_once",
        "test_an_expiry_of_our_consumer_loses_and_doubles_no_item",
    ],
}


class Taken:
    """The items every consumer took, across threads and tasks; ``all_taken`` is set once
    ``expected`` items were (if given)."""

    def __init__(self, expected: int | None = None) -> None:
        self._mutex = threading.Lock()
        self.items: list[bytes] = []
        self.expected = expected
        self.all_taken = threading.Event()

    def add(self, item: bytes) -> None:
        with self._mutex:
            self.items.append(item)
            if self.expected is not None and len(self.items) >= self.expected:
                self.all_taken.set()


def _kazoo_consumes(kazoo: Any, path: str, taken: Taken) -> None:
    queue = kazoo.Queue(path)
    while (item := queue.get()) is not None:  # kazoo's get: None once the queue is empty
        taken.add(item)


async def _our_consumes(queue: Queue, taken: Taken) -> None:
    # Every item was put before the consumers start: an empty queue stays empty.
    while await queue.size():
        try:
            taken.add(await queue.get(timeout=1))
        except TimeoutError:
            return  # another consumer took the last one between the look and the take


async def test_items_of_both_sides_are_taken_exactly_once_by_both_sides(
    zk_connect: Factory, kazoo: Any
) -> None:
    a, b = await zk_connect(), await zk_connect()
    n = 40
    theirs = kazoo.Queue("/jobs")

    def kazoo_puts() -> None:
        for i in range(n):
            theirs.put(f"kazoo-{i}".encode())

    async def ours_put(queue: Queue) -> None:
        for i in range(n):
            await queue.put(f"py-{i}".encode())

    producer = Queue(a, "/jobs", layout="kazoo")
    await asyncio.gather(ours_put(producer), asyncio.to_thread(kazoo_puts))
    names = await a.children("/jobs")
    assert len(names) == 2 * n
    assert all(name.startswith("entry-100-") for name in names)  # kazoo's names, default 100
    taken = Taken()
    consumers = [Queue(c, "/jobs", layout="kazoo") for c in (a, b)]
    await asyncio.gather(
        *(_our_consumes(q, taken) for q in consumers),
        asyncio.to_thread(_kazoo_consumes, kazoo, "/jobs", taken),
        asyncio.to_thread(_kazoo_consumes, kazoo, "/jobs", taken),
    )
    expected = [f"{side}-{i}".encode() for side in ("py", "kazoo") for i in range(n)]
    assert sorted(taken.items) == sorted(expected)  # each item once: none lost, none twice
    assert await a.children("/jobs") == []
    for queue in (producer, *consumers):
        await queue.close()


def _kazoo_consumes_until_all_taken(kazoo: Any, path: str, taken: Taken) -> None:
    queue = kazoo.Queue(path)
    while not taken.all_taken.is_set():
        item = queue.get()
        if item is not None:
            taken.add(item)
            continue
        names, changed = _kazoo_children_watched(kazoo, path)
        if not names:
            # Empty now: woken by the next put; the bound only notices that the others
            # took the last item (no change of the children tells that).
            changed.wait(0.2)


def _kazoo_children_watched(kazoo: Any, path: str) -> tuple[list[str], threading.Event]:
    """kazoo's listing of ``path`` and an event set when its children change."""
    changed = threading.Event()
    return kazoo.get_children(path, watch=lambda _event: changed.set()), changed


async def _our_consumes_until_all_taken(queue: Queue, taken: Taken) -> None:
    while not taken.all_taken.is_set():
        # A get that times out after its claim went out keeps the item for the next get.
        with contextlib.suppress(TimeoutError):
            taken.add(await queue.get(timeout=0.2))


async def test_producers_and_consumers_of_both_sides_at_once_take_each_item_once(
    zk_connect: Factory, kazoo: Any
) -> None:
    a, b = await zk_connect(), await zk_connect()
    n = 30
    taken = Taken(expected=2 * n)
    theirs = kazoo.Queue("/jobs")

    def kazoo_puts() -> None:
        for i in range(n):
            theirs.put(f"kazoo-{i}".encode(), 50 + i % 3 * 50)

    producer = PriorityQueue(a, "/jobs", layout="kazoo")

    async def ours_put() -> None:
        for i in range(n):
            await producer.put(f"py-{i}".encode(), 50 + i % 3 * 50)

    consumers = [Queue(c, "/jobs", layout="kazoo") for c in (a, b)]
    try:
        await asyncio.wait_for(
            asyncio.gather(
                ours_put(),
                asyncio.to_thread(kazoo_puts),
                *(_our_consumes_until_all_taken(q, taken) for q in consumers),
                asyncio.to_thread(_kazoo_consumes_until_all_taken, kazoo, "/jobs", taken),
                asyncio.to_thread(_kazoo_consumes_until_all_taken, kazoo, "/jobs", taken),
            ),
            timeout=60,
        )
    finally:
        taken.all_taken.set()  # ends kazoo's threads whatever happened
    expected = [f"{side}-{i}".encode() for side in ("py", "kazoo") for i in range(n)]
    assert sorted(taken.items) == sorted(expected)  # each item once: none lost, none twice
    assert await a.children("/jobs") == []
    for queue in (producer, *consumers):
        await queue.close()
    assert await a.children("/jobs") == []  # nothing kept back to be put again


async def test_our_get_in_kazoos_layout_times_out_and_cancels_leaving_nothing(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Queue(client, "/empty", layout="kazoo")
    with pytest.raises(aiocoord.TimeoutError):
        await ours.get(timeout=0.2)
    waiting = asyncio.ensure_future(ours.get())
    await eventually(lambda: _watched(client), what="our get waiting on the queue")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not await _watched(client)  # its watch went with it
    await ours.close()
    # Nothing of ours on the path: kazoo's consumer takes kazoo's item, first and alone.
    theirs = kazoo.Queue("/empty")
    await asyncio.to_thread(theirs.put, b"kazoo-1")
    [name] = await client.children("/empty")
    assert name.startswith("entry-100-")
    assert await asyncio.to_thread(theirs.get) == b"kazoo-1"


async def test_priorities_are_honoured_across_sides(zk_connect: Factory, kazoo: Any) -> None:
    client = await zk_connect()
    ours = PriorityQueue(client, "/prio", layout="kazoo")
    theirs = kazoo.Queue("/prio")
    await asyncio.to_thread(theirs.put, b"kazoo-150", 150)
    await ours.put(b"py-default")  # kazoo's default, 100
    await asyncio.to_thread(theirs.put, b"kazoo-50", 50)
    await ours.put(b"py-10", 10)
    await ours.put(b"py-100-later", 100)
    assert await ours.get(timeout=5) == b"py-10"
    assert await asyncio.to_thread(theirs.get) == b"kazoo-50"
    assert await ours.get(timeout=5) == b"py-default"
    assert await asyncio.to_thread(theirs.get) == b"py-100-later"
    assert await ours.get(timeout=5) == b"kazoo-150"
    assert await asyncio.to_thread(theirs.get) is None
    await ours.close()


async def test_our_put_all_in_kazoos_layout_is_one_node_per_raw_item(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Queue(client, "/batch", layout="kazoo")
    await ours.put_all([b"a", b"b"])
    await asyncio.to_thread(kazoo.Queue("/batch").put, b"c")
    assert await ours.size() == 3
    theirs = kazoo.Queue("/batch")
    assert [await asyncio.to_thread(theirs.get) for _ in range(3)] == [b"a", b"b", b"c"]
    await ours.close()


async def test_kazoos_priority_range_is_refused_before_anything_is_sent(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    queue = PriorityQueue(client, "/prio", layout="kazoo")
    for priority in (-1, 1000):
        with pytest.raises(BadArgumentsError, match=r"0\.\.999"):
            await queue.put(b"x", priority)
    assert await client.exists("/prio") is None


async def test_an_expiry_of_our_consumer_loses_and_doubles_no_item(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client: Client = await zk_connect(session_timeout=6)
    queue = Queue(client, "/jobs", layout="kazoo")
    n = 20
    for i in range(n):
        await queue.put(str(i).encode())
    taken = Taken()
    for _ in range(5):
        taken.add(await queue.get(timeout=5))
    await expire_client(client, zookeeper.connect_string)
    await asyncio.gather(
        _our_consumes(queue, taken), asyncio.to_thread(_kazoo_consumes, kazoo, "/jobs", taken)
    )
    assert sorted(taken.items, key=int) == [str(i).encode() for i in range(n)]
    await queue.close()


async def test_kazoos_locking_queue_and_ours_hand_each_item_out_once(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = LockingQueue(client, "/locking")
    theirs = kazoo.LockingQueue("/locking")
    await ours.put(b"py-1", priority=10)
    await asyncio.to_thread(theirs.put, b"kazoo-1", 20)
    # kazoo takes our item (it locks it the way ours does): ours skips it and takes kazoo's.
    assert await asyncio.to_thread(theirs.get, 5) == b"py-1"
    item = await ours.take(5)
    assert item.data == b"kazoo-1"
    # Released by kazoo, our item comes back to us; consumed by both, nothing is left.
    assert await asyncio.to_thread(theirs.release)
    again = await ours.take(5)
    assert again.data == b"py-1"
    await again.consume()
    await item.consume()
    assert await asyncio.to_thread(len, theirs) == 0
    await ours.close()


async def test_kazoos_tree_cache_and_ours_see_one_tree(zk_connect: Factory, kazoo: Any) -> None:
    client = await zk_connect()
    await client.create("/tree/a", b"py", make_parents=True)
    await asyncio.to_thread(kazoo.create, "/tree/b/c", b"kazoo", makepath=True)
    async with TreeCache(client, "/tree") as ours:
        await ours.wait_for(lambda nodes: "/tree/b/c" in nodes, timeout=10)
        theirs = kazoo_cache.TreeCache(kazoo, "/tree")
        await asyncio.to_thread(theirs.start)
        try:
            await eventually(lambda: _kazoo_sees(theirs, "/tree/b/c"), what="kazoo's cache loaded")
            for path in ("/tree/a", "/tree/b/c"):
                mine = ours.get(path)
                assert mine is not None and theirs.get_data(path).data == mine.data
        finally:
            await asyncio.to_thread(theirs.close)


async def _kazoo_sees(cache: Any, path: str) -> bool:
    return cache.get_data(path) is not None


async def _watched(client: Client) -> bool:
    return session_of(client).watches.counts()["waiters"] > 0
