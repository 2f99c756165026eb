"""kazoo (2.x, in threads) and aiocoord contend for one lock, one read-write lock and one
election on the same path, as a fleet moving from kazoo does while both run.

The rows of issue 41's table, each a test:

- aiocoord holds in Curator's layout, plain kazoo asks: kazoo cannot see Curator's nodes. The
  documented configurations make that impossible (aiocoord in kazoo's layout, or kazoo with
  ``extra_lock_patterns``); when aiocoord meets a kazoo contender on a Curator-layout path it
  says so (:class:`MixedLayoutWarning`).
- kazoo holds, aiocoord asks (either layout): aiocoord waits.
- aiocoord holds in Curator's layout, kazoo asks with ``extra_lock_patterns=["-lock-"]``: kazoo
  waits.

Exclusion is counted by an unversioned read-modify-write counter that both sides bump under
the lock: any double grant loses increments, so the total must come out exact.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import Client, Election, Layout, Lock, Mutex, ReadWriteLock, State
from aiocoord.errors import MixedLayoutWarning
from aiocoord.testing import expire_client, expire_session

kazoo_exceptions = pytest.importorskip("kazoo.exceptions", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/locks.md | Failure semantics | Mixed layouts: a contender of another layout on the "
    "path": [
        "test_a_kazoo_contender_on_a_curator_layout_lock_is_reported",
        "test_kazoo_holds_and_aiocoord_waits_in_either_layout",
    ],
    "recipes/locks.md | Failure semantics | Kazoo and aiocoord on one path: a session expires "
    "mid-hold": [
        "test_an_expired_aiocoord_holder_is_told_and_kazoo_takes_over",
        "test_an_expired_kazoo_holder_lets_our_waiter_through",
    ],
}

#: The one pattern a kazoo lock needs to see Curator-layout contenders (kazoo >= 2.7.1).
CURATOR_PATTERN = ["-lock-"]


class Overlap:
    """Counts the holders of one exclusive resource across threads and tasks, and the most
    that ever held it at once (for readers and writers: writers alone, or readers alone)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self.readers = 0
        self.writers = 0
        self.violations: list[str] = []

    def enter(self, who: str, *, reader: bool = False) -> None:
        with self._mutex:
            if self.writers or (not reader and self.readers):
                self.violations.append(
                    f"{who} entered with {self.writers} writer(s), {self.readers} reader(s)"
                )
            if reader:
                self.readers += 1
            else:
                self.writers += 1

    def leave(self, *, reader: bool = False) -> None:
        with self._mutex:
            if reader:
                self.readers -= 1
            else:
                self.writers -= 1


async def _bump(client: Client, path: str) -> None:
    data, _ = await client.get(path)
    await asyncio.sleep(0)  # a window for a second holder to read the same value
    await client.set(path, str(int(data) + 1).encode())


def _kazoo_bump(kazoo: Any, path: str) -> None:
    data, _ = kazoo.get(path)
    kazoo.set(path, str(int(data) + 1).encode())


async def _contend(
    client: Client,
    kazoo: Any,
    make_ours: Callable[[int], Lock | Mutex],
    make_theirs: Callable[[], Any],
    rounds: int = 15,
) -> None:
    """Two aiocoord tasks and two kazoo threads bump /count under the lock ``rounds`` times
    each; the count must be exact and no two ever held together."""
    await client.create("/count", b"0")
    overlap = Overlap()

    async def ours(i: int) -> None:
        lock = make_ours(i)
        for _ in range(rounds):
            async with lock:
                overlap.enter(f"aiocoord-{i}")
                try:
                    await _bump(client, "/count")
                finally:
                    overlap.leave()

    def theirs(i: int) -> None:
        lock = make_theirs()
        for _ in range(rounds):
            assert lock.acquire(timeout=60)
            overlap.enter(f"kazoo-{i}")
            try:
                _kazoo_bump(kazoo, "/count")
            finally:
                overlap.leave()
                lock.release()

    await asyncio.gather(
        ours(0), ours(1), asyncio.to_thread(theirs, 0), asyncio.to_thread(theirs, 1)
    )
    assert overlap.violations == []
    data, _ = await client.get("/count")
    assert int(data) == 4 * rounds


async def test_in_kazoos_layout_kazoo_and_aiocoord_exclude_each_other(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    await _contend(
        client,
        kazoo,
        lambda i: Lock(client, "/lock", identifier=f"py-{i}", layout="kazoo"),
        lambda: kazoo.Lock("/lock", "kazoo"),
    )


async def test_a_mutex_in_kazoos_layout_excludes_kazoo(zk_connect: Factory, kazoo: Any) -> None:
    client = await zk_connect()
    await _contend(
        client,
        kazoo,
        lambda i: Mutex(client, "/lock", layout=Layout.KAZOO),
        lambda: kazoo.Lock("/lock", "kazoo"),
    )


async def test_in_curators_layout_kazoo_with_the_extra_pattern_excludes_aiocoord(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    with warnings.catch_warnings():
        # aiocoord sees kazoo's nodes and cannot know kazoo was given the pattern.
        warnings.simplefilter("ignore", MixedLayoutWarning)
        await _contend(
            client,
            kazoo,
            lambda i: Lock(client, "/lock", identifier=f"py-{i}"),
            lambda: kazoo.Lock("/lock", "kazoo", extra_lock_patterns=CURATOR_PATTERN),
        )


async def test_our_kazoo_layout_nodes_are_kazoos_names_and_contenders(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    lock = Lock(client, "/lock", identifier="py-holder", layout="kazoo")
    await lock.acquire()
    name = lock.node_path
    assert name is not None
    child = name.rsplit("/", 1)[1]
    prefix, _, sequence = child.partition("__lock__")
    assert len(prefix) == 32 and int(prefix, 16) >= 0 and len(sequence) == 10
    theirs = kazoo.Lock("/lock", "kazoo-waiter")
    waiter = asyncio.ensure_future(asyncio.to_thread(theirs.acquire, True, 30))
    await eventually(
        lambda: _has_children(client, "/lock", 2), what="kazoo's contender on the path"
    )
    assert await asyncio.to_thread(theirs.contenders) == ["py-holder", "kazoo-waiter"]
    assert [p.identifier for p in await lock.contenders()] == ["py-holder", "kazoo-waiter"]
    assert not waiter.done()
    await lock.release()
    assert await waiter
    await asyncio.to_thread(theirs.release)


async def _has_children(client: Client, path: str, n: int) -> bool:
    return len(await client.children(path)) == n


@pytest.mark.parametrize("layout", [Layout.CURATOR, Layout.KAZOO])
async def test_kazoo_holds_and_aiocoord_waits_in_either_layout(
    zk_connect: Factory, kazoo: Any, layout: Layout
) -> None:
    client = await zk_connect()
    theirs = kazoo.Lock("/lock", "kazoo-holder")
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    ours = Lock(client, "/lock", layout=layout)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(TimeoutError):
            await ours.acquire(timeout=0.5)
        await asyncio.to_thread(theirs.release)
        assert await ours.acquire(timeout=10)
    await ours.release()
    mixed = [w for w in seen if issubclass(w.category, MixedLayoutWarning)]
    # In Curator's layout the kazoo contender cannot see us: aiocoord says so.
    assert bool(mixed) is (layout is Layout.CURATOR)
    if mixed:
        assert "extra_lock_patterns" in str(mixed[0].message)


async def test_a_kazoo_contender_on_a_curator_layout_lock_is_reported(
    zk_connect: Factory, kazoo: Any
) -> None:
    # The first row of issue 41's table: aiocoord holds in Curator's layout and a kazoo Lock
    # comes along. Whether kazoo waits depends on its extra_lock_patterns, which aiocoord
    # cannot see: it reports any kazoo contender the first time it lists the path. (This
    # kazoo is given the pattern, so that the test never makes two holders.)
    client = await zk_connect()
    holder = Lock(client, "/lock", identifier="py-holder")
    await holder.acquire()
    theirs = kazoo.Lock("/lock", "kazoo", extra_lock_patterns=CURATOR_PATTERN)
    waiter = asyncio.ensure_future(asyncio.to_thread(theirs.acquire, True, 30))
    await eventually(lambda: _has_children(client, "/lock", 2), what="kazoo's contender")
    second = Lock(client, "/lock", identifier="py-second")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixedLayoutWarning)
        with pytest.raises(MixedLayoutWarning) as raised:
            await second.acquire(timeout=5)
    assert raised.value.path == "/lock"
    assert "__lock__" in raised.value.node
    # Turned into an error, the warning left nothing behind: the holder and kazoo only.
    assert len(await client.children("/lock")) == 2
    assert not waiter.done()
    await holder.release()
    assert await waiter
    await asyncio.to_thread(theirs.release)


async def test_kazoo_readers_and_writers_and_ours_never_overlap_a_writer(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    await client.create("/count", b"0")
    overlap = Overlap()
    rounds = 8

    async def ours(i: int, write: bool) -> None:
        rw = ReadWriteLock(client, "/rw", identifier=f"py-{i}", layout="kazoo")
        half = rw.write if write else rw.read
        for _ in range(rounds):
            async with half:
                overlap.enter(f"py-{i}", reader=not write)
                try:
                    if write:
                        await _bump(client, "/count")
                    else:
                        await asyncio.sleep(0.001)
                finally:
                    overlap.leave(reader=not write)

    def theirs(i: int, write: bool) -> None:
        lock = (kazoo.WriteLock if write else kazoo.ReadLock)("/rw", f"kazoo-{i}")
        for _ in range(rounds):
            assert lock.acquire(timeout=60)
            overlap.enter(f"kazoo-{i}", reader=not write)
            try:
                if write:
                    _kazoo_bump(kazoo, "/count")
            finally:
                overlap.leave(reader=not write)
                lock.release()

    await asyncio.gather(
        ours(0, True),
        ours(1, False),
        ours(2, False),
        asyncio.to_thread(theirs, 0, True),
        asyncio.to_thread(theirs, 1, False),
    )
    assert overlap.violations == []
    data, _ = await client.get("/count")
    assert int(data) == 2 * rounds


async def test_a_kazoo_reader_shares_with_ours_and_a_kazoo_writer_waits(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    rw = ReadWriteLock(client, "/rw", layout="kazoo")
    await rw.read.acquire()
    reader = kazoo.ReadLock("/rw", "kazoo-reader")
    assert await asyncio.to_thread(reader.acquire, True, 5)  # readers share
    writer = kazoo.WriteLock("/rw", "kazoo-writer")
    assert not await asyncio.to_thread(writer.acquire, False)
    # A writer of ours queued behind both readers waits for them; a kazoo reader that comes
    # after that writer waits for it, as kazoo's own would.
    granted = asyncio.Event()

    async def write_once() -> None:
        assert await rw.write.acquire(timeout=30)
        granted.set()
        await rw.write.release()

    ours = asyncio.ensure_future(write_once())
    await eventually(lambda: _has_children(client, "/rw", 3), what="our writer queued")
    late = kazoo.ReadLock("/rw", "kazoo-late")
    assert not await asyncio.to_thread(late.acquire, False)
    await asyncio.to_thread(reader.release)
    assert not granted.is_set()
    await rw.read.release()
    await ours
    assert granted.is_set()


async def test_election_terms_never_overlap_across_kazoo_and_aiocoord(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    overlap = Overlap()
    terms: list[str] = []
    rounds = 4

    async def ours(i: int) -> None:
        election = Election(client, "/election", identifier=f"py-{i}", layout="kazoo")
        for _ in range(rounds):
            async with election.leadership(timeout=60):
                overlap.enter(f"py-{i}")
                terms.append(f"py-{i}")
                await asyncio.sleep(0.01)
                overlap.leave()

    def theirs(i: int) -> None:
        def lead() -> None:
            overlap.enter(f"kazoo-{i}")
            terms.append(f"kazoo-{i}")
            threading.Event().wait(0.01)
            overlap.leave()

        for _ in range(rounds):
            kazoo.Election("/election", f"kazoo-{i}").run(lead)

    await asyncio.gather(ours(0), ours(1), asyncio.to_thread(theirs, 0))
    assert overlap.violations == []
    assert sorted(terms) == sorted([f"py-{i}" for i in (0, 1)] * rounds + ["kazoo-0"] * rounds)


async def test_kazoos_election_and_ours_read_the_same_contenders(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Election(client, "/election", identifier="py-leader", layout=Layout.KAZOO)
    async with ours.leadership(timeout=10):
        theirs = kazoo.Election("/election", "kazoo-candidate")
        running = threading.Event()
        led = asyncio.ensure_future(asyncio.to_thread(theirs.run, running.set))
        await eventually(lambda: _has_children(client, "/election", 2), what="kazoo's node")
        assert await asyncio.to_thread(theirs.contenders) == ["py-leader", "kazoo-candidate"]
        assert [p.identifier for p in await ours.contenders()] == [
            "py-leader",
            "kazoo-candidate",
        ]
        leader = await ours.leader()
        assert leader is not None and leader.identifier == "py-leader"
        assert not running.is_set()
    await led
    assert running.is_set()


async def test_an_expired_aiocoord_holder_is_told_and_kazoo_takes_over(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Lock(client, "/lock", layout="kazoo")
    await ours.acquire()
    theirs = kazoo.Lock("/lock", "kazoo")
    waiter = asyncio.ensure_future(asyncio.to_thread(theirs.acquire, True, 60))
    await eventually(lambda: _has_children(client, "/lock", 2), what="kazoo's contender")
    await expire_client(client, zookeeper.connect_string)
    assert await ours.lost.wait(30) is State.LOST
    assert not ours.is_held
    assert await waiter  # the node went with the session: kazoo's turn
    await asyncio.to_thread(theirs.release)


async def test_an_expired_kazoo_holder_lets_our_waiter_through(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    theirs = kazoo.Lock("/lock", "kazoo")
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    ours = Mutex(client, "/lock", layout="kazoo")  # any task may release it
    waiting = asyncio.ensure_future(ours.acquire(timeout=60))
    await eventually(lambda: _has_children(client, "/lock", 2), what="our contender")
    session_id, password = kazoo.client_id
    await expire_session(session_id, password, zookeeper.connect_string)
    assert await waiting
    assert ours.fencing_token is not None
    await ours.release()


async def test_a_downgrade_in_kazoos_layout_keeps_a_queued_kazoo_writer_out(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    rw = ReadWriteLock(client, "/rw", layout="kazoo")
    await rw.write.acquire()
    write_path = rw.write.node_path
    assert write_path is not None
    writer = kazoo.WriteLock("/rw", "kazoo-writer")
    waiting = asyncio.ensure_future(asyncio.to_thread(writer.acquire, True, 30))
    await eventually(lambda: _has_children(client, "/rw", 2), what="kazoo's writer queued")
    assert await rw.read.acquire(blocking=False)  # the downgrade
    read_path = rw.read.node_path
    assert read_path is not None
    # kazoo's reader name at the write node's sequence number: ahead of kazoo's writer.
    assert read_path.endswith("__rlock__" + write_path[-10:])
    await rw.write.release()
    await client.wait_background()  # the write node's delete is answered
    # kazoo's own test of who is ahead of its writer now names our read node.
    ahead = await asyncio.to_thread(writer._get_predecessor, writer.node)
    assert ahead == read_path.rsplit("/", 1)[1]
    assert not waiting.done()
    await rw.read.release()
    assert await waiting
    await asyncio.to_thread(writer.release)
