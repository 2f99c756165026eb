"""Resource hygiene: after ``close()`` nothing is left behind. No task, no open socket (file
descriptors of this process, counted in /proc/self/fd), no watch (the client's table and the
server's ``wchc``), no object kept alive; and nothing reported to the loop's exception handler
(tasks destroyed while pending, exceptions never retrieved). asyncio debug mode is on.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import os
import termios
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from support import eventually

import aiocoord
from aiocoord import (
    AtomicCounter,
    Barrier,
    ChildrenCache,
    Client,
    DelayQueue,
    DoubleBarrier,
    Election,
    EventType,
    GroupMember,
    IdQueue,
    LeaderLatch,
    Lock,
    LockingQueue,
    NodeCache,
    PersistentNode,
    PersistentTtlNode,
    Queue,
    ReadWriteLock,
    Semaphore,
    SharedCount,
    SharedValue,
    SimpleQueue,
    State,
    TreeCache,
)
from aiocoord._connect import open_client  # the awaitable form, under a name of its own
from aiocoord._wire.opcodes import Op
from aiocoord.errors import ClientClosedError, NoNodeError, NoServersError
from aiocoord.testing import FaultProxy, expire_session, session_of

FD_DIR = "/proc/self/fd"
pytestmark = pytest.mark.skipif(not os.path.isdir(FD_DIR), reason="needs /proc/self/fd")


def open_fds() -> int:
    return len(os.listdir(FD_DIR))


@dataclass
class Baseline:
    """What existed before the test made its clients, and what the loop reported since."""

    tasks: set[asyncio.Task[Any]]
    fds: int
    reports: list[dict[str, Any]] = field(default_factory=list)

    def new_tasks(self) -> set[asyncio.Task[Any]]:
        current = asyncio.current_task()
        return {t for t in asyncio.all_tasks() if t not in self.tasks and t is not current}

    async def assert_clean(self, timeout: float = 5.0) -> None:
        """Wait (bounded) until every new task is gone and the fd count is back; then
        check the loop's reports."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.new_tasks() or open_fds() > self.fds:
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.02)  # sockets close on a later loop turn
        left = self.new_tasks()
        assert not left, f"tasks left after close: {[t.get_name() for t in left]} {left}"
        assert open_fds() <= self.fds, f"file descriptors: {open_fds()} now, {self.fds} before"
        gc.collect()
        await asyncio.sleep(0)
        assert not self.reports, f"the loop reported: {self.reports}"


@pytest_asyncio.fixture
async def baseline(zk_connect: Any, zk_fault_proxy: FaultProxy) -> AsyncIterator[Baseline]:
    """Debug mode, a reporting exception handler, and the counts before the test's clients
    (``zk_connect`` and the proxy are set up first: their tasks and sockets are not ours)."""
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    gc.collect()
    base = Baseline(set(asyncio.all_tasks()), open_fds())
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: base.reports.append(context))
    try:
        yield base
    finally:
        loop.set_exception_handler(previous)
        loop.set_debug(False)


async def connect(zookeeper: Any, namespace: str, hosts: str | None = None, **opts: Any) -> Client:
    opts.setdefault("session_timeout", 10)
    return await open_client((hosts or zookeeper.connect_string) + namespace, **opts)


def wchc_paths(zookeeper: Any, session_id: int) -> list[str]:
    """The paths the server watches for ``session_id``."""
    text = zookeeper.four_letter("wchc")
    out: list[str] = []
    mine = False
    for line in text.splitlines():
        if line.startswith(("\t", " ")):
            if mine:
                out.append(line.strip())
        else:
            mine = line.strip() == f"0x{session_id:x}"
    return out


async def assert_no_watches(client: Client, zookeeper: Any) -> None:
    counts = session_of(client).watches.counts()
    table = session_of(client).watches
    assert not any(counts.values()), (
        f"client watch table: {counts} {list(table._one_shot)} {list(table._persistent)}"
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while True:  # removeWatches requests are on their way
        paths = await asyncio.to_thread(wchc_paths, zookeeper, client.session_id)
        if not paths or loop.time() > deadline:
            break
        await asyncio.sleep(0.05)
    assert not paths, f"server still watches {paths} for 0x{client.session_id:x}"


async def _waiting(client: Client) -> bool:
    """Whether a one-shot watch of the client has a waiter (a recipe waits on the server)."""
    return session_of(client).watches.counts()["waiters"] > 0


async def _idle(client: Client) -> bool:
    return session_of(client).watches.counts()["waiters"] == 0


def bouncer(client: Client, proxy: FaultProxy) -> Callable[[], Awaitable[None]]:
    """An awaitable fault: cut the client's connection and wait until it is back (same
    session)."""

    async def bounce() -> None:
        back = asyncio.Event()
        remove = client.add_state_listener(
            lambda change: back.set() if change.state is State.RECONNECTED else None
        )
        try:
            proxy.drop()
            await asyncio.wait_for(back.wait(), 10)
        finally:
            remove()

    return bounce


async def collectable(make: Callable[[], Awaitable[Client]]) -> weakref.ref[Any]:
    client = await make()
    ref = weakref.ref(session_of(client))
    await client.close()
    return ref


# --- the client --------------------------------------------------------------------------


async def test_client_close_leaves_no_task_socket_watch_or_reference(
    baseline: Baseline, zookeeper: Any, zk_namespace: str, zk_fault_proxy: FaultProxy
) -> None:
    client = await connect(zookeeper, zk_namespace, zk_fault_proxy.connect_string)
    await client.create("/a", b"1")
    _, _, data_watch = await client.get("/a", watch=True)
    _, child_watch = await client.children("/", watch=True)
    persistent = await client.add_watch("/", recursive=True)
    # A reconnect (watches restored), then a new session (watches failed).
    await bouncer(client, zk_fault_proxy)()
    await client.set("/a", b"2")
    await asyncio.wait_for(data_watch, 10)
    child_watch.cancel()
    await asyncio.sleep(0)  # the cancelled waiter leaves the table on the next loop turn
    await persistent.aclose()
    await assert_no_watches(client, zookeeper)
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
    await client.wait_for(State.LOST, 10)
    await client.wait_for(State.CONNECTED, 10)
    _, _, pending_watch = await client.get("/a", watch=True)  # left armed at close
    await client.delete("/gone", guaranteed=True) if await client.exists("/gone") else None
    await client.close()
    with pytest.raises(ClientClosedError):
        await pending_watch
    await baseline.assert_clean()
    ref = await collectable(lambda: connect(zookeeper, zk_namespace))
    gc.collect()
    assert ref() is None, f"a closed session is kept alive by: {gc.get_referrers(ref())[:3]}"
    await baseline.assert_clean()


async def test_failed_and_cancelled_connects_leave_nothing(
    baseline: Baseline, zookeeper: Any, zk_namespace: str, zk_fault_proxy: FaultProxy
) -> None:
    with pytest.raises(NoServersError):
        await open_client("127.0.0.1:1", connect_timeout=0.5)
    zk_fault_proxy.blackhole()  # accepted, never answered: the handshake hangs
    with pytest.raises(NoServersError):
        await connect(zookeeper, zk_namespace, zk_fault_proxy.connect_string, connect_timeout=0.5)
    attempt = asyncio.ensure_future(
        connect(zookeeper, zk_namespace, zk_fault_proxy.connect_string, connect_timeout=30)
    )
    await zk_fault_proxy.wait_for(lambda p: p.open_connections == 1, 5)  # in the handshake
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt
    zk_fault_proxy.heal()
    await zk_fault_proxy.wait_for(lambda p: p.open_connections == 0, 5)
    await baseline.assert_clean()


# --- recipes ------------------------------------------------------------------------------


async def _locks(client: Client, bounce: Callable[[], Awaitable[None]]) -> None:
    lock = Lock(client, "/lock")
    async with lock:
        await bounce()
    rw = ReadWriteLock(client, "/rw")
    async with rw.write, rw.read:
        pass
    sem = Semaphore(client, "/sem", 2)
    async with sem.lease():
        pass
    # A waiter that times out and one that is cancelled leave nothing either.
    holder = Lock(client, "/lock")
    await holder.acquire()
    waiter = asyncio.ensure_future(Lock(client, "/lock").acquire())
    with pytest.raises(aiocoord.TimeoutError):
        await Lock(client, "/lock").acquire(timeout=0.2)
    await eventually(lambda: _waiting(client), what="the lock waiter queued")
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    await holder.release()
    await client.wait_background()


async def _election(client: Client, bounce: Callable[[], Awaitable[None]]) -> None:
    async with LeaderLatch(client, "/latch", identifier="me") as latch:
        assert await latch.wait_until_leader(10)
        await bounce()
        assert await latch.wait_until_leader(10)
    election = Election(client, "/election", identifier="me")
    async with election.leadership(timeout=10):
        pass
    started = asyncio.Event()

    async def lead(term: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    election.start(lead)
    await asyncio.wait_for(started.wait(), 10)
    await election.close()
    await client.wait_background()


async def _caches(client: Client, bounce: Callable[[], Awaitable[None]]) -> None:
    await client.create("/tree/a", b"1", make_parents=True)
    caches: list[Any] = [TreeCache(client, "/tree"), ChildrenCache(client, "/tree")]
    caches.append(NodeCache(client, "/tree/a"))
    for cache in caches:
        await cache.start()
    events = caches[0].changes()
    await bounce()
    await client.set("/tree/a", b"2")
    await caches[2].wait_for(lambda d: d is not None and d.data == b"2", 10)
    for cache in caches:
        await cache.close()
    await events.aclose()


async def _queues(client: Client, bounce: Callable[[], Awaitable[None]]) -> None:
    async with Queue(client, "/q") as queue:
        await queue.put(b"x")
        await bounce()
        assert await queue.get(timeout=10) == b"x"
        getter = asyncio.ensure_future(queue.get())
        await eventually(lambda: _waiting(client), what="the consumer waits")
        getter.cancel()
        await asyncio.gather(getter, return_exceptions=True)
    async with LockingQueue(client, "/lq") as lq:
        await lq.put(b"y")
        item = await lq.take(timeout=10)
        await item.consume()
    async with AtomicCounter(client, "/count") as counter:
        await counter.increment()
    count = SharedCount(client, "/shared", 0)
    await count.start()
    await count.set(5)
    await count.close()
    barrier = Barrier(client, "/barrier")
    await barrier.set()
    waiting = asyncio.ensure_future(barrier.wait())
    await eventually(lambda: _waiting(client), what="the barrier waiter waits")
    await barrier.remove()
    assert await asyncio.wait_for(waiting, 10)
    double = DoubleBarrier(client, "/double", 1)
    assert await double.enter(timeout=10)
    assert await double.leave(timeout=10)


async def _nodes(client: Client, bounce: Callable[[], Awaitable[None]]) -> None:
    async with PersistentNode(client, "/node", b"me") as node:
        assert await node.wait_for_initial_create(10)
        await bounce()
    async with GroupMember(client, "/group", "me", b"data") as member:
        await member.wait_for(lambda members: "me" in members, 10)


async def _partitioning(client: Client, bounce: Callable[[], Awaitable[None]]) -> None:
    assert await aiocoord.NonBlockingLease(client, "/lease", 60, identifier="me").obtain(10)
    assert await aiocoord.MultiNonBlockingLease(client, "/leases", 2, 60, identifier="me").obtain(
        10
    )
    part = aiocoord.SetPartitioner(client, "/part", ["a", "b"], identifier="me", time_boundary=0)
    async with part:
        assert await part.wait_for_acquire(10) is aiocoord.PartitionState.ACQUIRED
        await bounce()  # SUSPENDED: RELEASE, then the share again
        while await part.wait_for_acquire(10) is not aiocoord.PartitionState.ACQUIRED:
            await part.release_set()
    # One closed while it waits for an item's lock (a foreign node holds it) leaves nothing.
    held = await client.create(
        "/part/locks/a/x__lock__", ephemeral=True, sequential=True, make_parents=True
    )
    waiting = aiocoord.SetPartitioner(client, "/part", ["a"], identifier="w", time_boundary=0)
    async with waiting:
        with pytest.raises(aiocoord.TimeoutError):
            await waiting.wait_for_acquire(0.2)
    await client.delete(held)


async def _curator_extras(client: Client, bounce: Callable[[], Awaitable[None]]) -> None:
    """The recipes of issue 18: SimpleQueue, DelayQueue, IdQueue, SharedValue,
    PersistentTtlNode."""
    async with SimpleQueue(client, "/sq") as simple:
        await simple.offer(b"x")
        await bounce()
        assert await simple.take(timeout=10) == b"x"
        taker = asyncio.ensure_future(simple.take())
        await eventually(lambda: _waiting(client), what="the taker waits")
        taker.cancel()
        await asyncio.gather(taker, return_exceptions=True)
    async with DelayQueue(client, "/dq") as delayed:
        await delayed.put(b"later", int(time.time() * 1000) + 3_600_000)
        getter = asyncio.ensure_future(delayed.get())  # on a timer and a watch
        await eventually(lambda: _waiting(client), what="the delayed getter waits")
        getter.cancel()
        await asyncio.gather(getter, return_exceptions=True)
    async with IdQueue(client, "/iq") as ids:
        await ids.put(b"x", "a")
        assert await ids.remove("a") == 1
    async with SharedValue(client, "/sv", b"a") as shared:
        assert await shared.try_set(b"b", shared.versioned.version)
    async with PersistentTtlNode(client, "/ttl", ttl=5) as node:
        assert await node.wait_for_initial_create(10)
        await bounce()


WORKLOADS: dict[str, Callable[[Client, Callable[[], Awaitable[None]]], Awaitable[None]]] = {
    "curator_extras": _curator_extras,
    "locks": _locks,
    "election": _election,
    "caches": _caches,
    "queues": _queues,
    "nodes": _nodes,
    "partitioning": _partitioning,
}


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
async def test_recipes_closed_then_client_closed_leave_nothing(
    baseline: Baseline,
    zookeeper: Any,
    zk_namespace: str,
    zk_fault_proxy: FaultProxy,
    workload: str,
) -> None:
    """Each recipe family used (with a connection drop in the middle, cancellations and
    timeouts), stopped, then the client closed: no task, socket or watch is left."""
    client = await connect(zookeeper, zk_namespace, zk_fault_proxy.connect_string)
    await WORKLOADS[workload](client, bouncer(client, zk_fault_proxy))
    await client.wait_background()
    await assert_no_watches(client, zookeeper)
    await client.close()
    await baseline.assert_clean()


async def test_closing_the_client_under_running_recipes_ends_their_tasks(
    baseline: Baseline, zookeeper: Any, zk_namespace: str
) -> None:
    """The client is closed while a latch waits, a cache follows, a lock waiter waits and a
    persistent node is kept: every task of theirs ends (the waiter with ClientClosedError)."""
    owner = await connect(zookeeper, zk_namespace)
    client = await connect(zookeeper, zk_namespace)
    await Lock(owner, "/lock").acquire()
    await LeaderLatch(owner, "/latch", identifier="owner").start()
    latch = LeaderLatch(client, "/latch", identifier="me")
    await latch.start()
    cache = TreeCache(client, "/")
    await cache.start()
    node = PersistentNode(client, "/node", b"")
    await node.start()
    part = aiocoord.SetPartitioner(client, "/part", ["a"], identifier="me", time_boundary=0)
    await part.start()
    await part.wait_for_acquire(10)
    waiter = asyncio.ensure_future(Lock(client, "/lock").acquire())
    await eventually(lambda: _waiting(client), what="the lock waiter queued")
    await client.close()
    with pytest.raises(ClientClosedError):
        await asyncio.wait_for(waiter, 5)
    assert part.failed
    await latch.close()
    await cache.close()
    await node.close()
    await part.close()
    await owner.close()
    await baseline.assert_clean()


# --- defects found (strict xfail: they fail once fixed, so the marker can go) ---------------


async def test_cancelled_cache_start_leaves_no_server_watch(
    baseline: Baseline, zookeeper: Any, zk_namespace: str
) -> None:
    client = await connect(zookeeper, zk_namespace)
    await client.ensure_path("/tree")
    starting = asyncio.ensure_future(TreeCache(client, "/tree").start())
    await asyncio.sleep(0)  # the addWatch request is written, its reply not yet read
    starting.cancel()
    await asyncio.gather(starting, return_exceptions=True)
    try:
        await assert_no_watches(client, zookeeper)
    finally:
        await client.close()


async def test_a_shared_watch_is_removed_when_its_setter_leaves_before_the_others_fail(
    baseline: Baseline, zookeeper: Any, zk_namespace: str
) -> None:
    """Waiters of one kind on one path share one server watch. The waiter whose request set
    it (an exists on a missing node) leaves first, while another waiter's get is still on
    its way; that get then fails with NoNode (setting nothing). The server watch must still
    be removed: it was set, and nobody waits on it any more."""
    client = await connect(zookeeper, zk_namespace)
    stat, setter = await client.exists("/missing", watch=True)  # sets an exist watch
    assert stat is None
    other = asyncio.ensure_future(client.get("/missing", watch=True))
    while session_of(client).pending_count == 0:  # noqa: ASYNC110 - until the get is written
        await asyncio.sleep(0)
    setter.cancel()  # the get still waits on the shared entry: nothing to remove yet
    with pytest.raises(NoNodeError):
        await other
    try:
        await assert_no_watches(client, zookeeper)
    finally:
        await client.close()


async def test_a_watch_consumed_by_an_event_read_with_its_answer_is_not_removed(
    baseline: Baseline, zookeeper: Any, zk_namespace: str
) -> None:
    """A get sets a watch; the delete written right after it fires the watch. When the get's
    answer and the deletion's event are read from the socket together, the get's caller
    runs only after the event fired its watch: the event came after the answer, so it
    consumed the watch the get set, and nothing is left to remove (no removeWatches; before,
    the table took the event for an earlier watch's and sent one)."""
    client = await connect(zookeeper, zk_namespace)
    try:
        await client.create("/consumed", b"")
        removes = session_of(client).sent[Op.REMOVE_WATCHES]
        get = asyncio.ensure_future(client.get("/consumed", watch=True))
        delete = asyncio.ensure_future(client.delete("/consumed"))
        while session_of(client).pending_count < 2:  # noqa: ASYNC110 - until both are written
            await asyncio.sleep(0)
        # The loop is held (a busy client) until the three frames wait in the socket: the
        # get's answer (92 bytes, an empty node), the event and the delete's answer.
        event_frame = 32 + len((zk_namespace + "/consumed").encode())
        _wait_unread(client, 92 + event_frame + 20)
        _, _, watch = await get
        await delete
        assert (await watch).type is EventType.DELETED
        assert session_of(client).sent[Op.REMOVE_WATCHES] == removes
        await assert_no_watches(client, zookeeper)
    finally:
        await client.close()


async def test_a_watch_set_after_the_event_that_fired_its_waiter_is_removed(
    baseline: Baseline, zookeeper: Any, zk_namespace: str, zk_fault_proxy: FaultProxy
) -> None:
    """The other side of the test above. A second get joins the waiter of a watch (they share
    the server's one watch on the path) and is written; a change fires that watch before the
    server reads the second get, which then sets a new watch that nobody waits on any more:
    it is removed."""
    client = await connect(zookeeper, zk_namespace, hosts=zk_fault_proxy.connect_string)
    other = await connect(zookeeper, zk_namespace)
    try:
        await client.create("/earlier", b"")
        _, _, first = await client.get("/earlier", watch=True)
        zk_fault_proxy.blackhole()  # held: the change's event, then the second get's answer
        await other.set("/earlier", b"changed")
        second = asyncio.ensure_future(client.get("/earlier", watch=True))
        while session_of(client).pending_count == 0:  # noqa: ASYNC110 - until it is written
            await asyncio.sleep(0)
        removes = session_of(client).sent[Op.REMOVE_WATCHES]
        zk_fault_proxy.heal()
        data, _, watch = await second
        assert data == b"changed"
        assert (await first).type is EventType.DATA_CHANGED
        assert watch.done()  # fired by the change, which came before its answer
        assert session_of(client).sent[Op.REMOVE_WATCHES] == removes + 1
        await assert_no_watches(client, zookeeper)
    finally:
        await client.close()
        await other.close()


def _wait_unread(client: Client, nbytes: int, timeout: float = 5.0) -> None:
    """Block the loop until ``nbytes`` wait unread in the client's socket."""
    conn = session_of(client)._conn
    assert conn is not None and conn._transport is not None
    sock = conn._transport.get_extra_info("socket")
    deadline = time.monotonic() + timeout
    while True:
        unread = int.from_bytes(fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"), "little")
        if unread >= nbytes:
            return
        assert time.monotonic() < deadline, f"{unread} of {nbytes} bytes arrived"
        time.sleep(0.001)


async def test_persistent_watch_sharing_a_path_is_removed_eventually(
    baseline: Baseline, zookeeper: Any, zk_namespace: str
) -> None:
    client = await connect(zookeeper, zk_namespace)
    _, child_watch = await client.children("/", watch=True)
    persistent = await client.add_watch("/", recursive=True)
    child_watch.cancel()
    await persistent.aclose()
    await eventually(lambda: _idle(client), what="the cancelled waiter left the table")
    try:
        await assert_no_watches(client, zookeeper)
    finally:
        await client.close()


async def test_queue_consumer_and_tree_cache_on_one_path_and_client(
    zookeeper: Any, zk_namespace: str, zk_connect: Any
) -> None:
    """A consumer waits on /jobs (a children watch); the same client then starts a
    TreeCache on /jobs; another client puts an item: the consumer must get it."""
    client = await connect(zookeeper, zk_namespace)
    producer = await connect(zookeeper, zk_namespace)
    try:
        await client.ensure_path("/jobs")
        getter = asyncio.ensure_future(Queue(client, "/jobs").get(timeout=5))

        async def consumer_waits() -> None:
            while not session_of(client).watches.counts()["waiters"]:  # noqa: ASYNC110
                await asyncio.sleep(0.01)

        await asyncio.wait_for(consumer_waits(), 5)
        async with TreeCache(client, "/jobs"):
            await Queue(producer, "/jobs").put(b"job")
            assert await getter == b"job"
    finally:
        await client.close()
        await producer.close()


@pytest.mark.parametrize("recursive", [False, True], ids=["persistent", "recursive"])
@pytest.mark.parametrize("one_shot", ["data", "exist", "child"])
@pytest.mark.parametrize(
    "one_shot_first", [True, False], ids=["one-shot-first", "persistent-first"]
)
async def test_one_shot_and_persistent_watches_on_one_path_and_client(
    zookeeper: Any, zk_connect: Any, recursive: bool, one_shot: str, one_shot_first: bool
) -> None:
    """Every one-shot kind with every persistent mode on the same path of one session, set in
    either order (ZOOKEEPER-4466: a 3.8 server keeps one mode per path and session): the
    one-shot waiter fires on its change, and the persistent watch goes on reporting after."""
    client, writer = await zk_connect(), await zk_connect()
    await client.ensure_path("/w")

    async def arm_one_shot() -> Any:
        if one_shot == "data":
            return (await client.get("/w", watch=True))[2]
        if one_shot == "exist":
            return (await client.exists("/w", watch=True))[1]
        return (await client.children("/w", watch=True))[1]

    if one_shot_first:
        watch = await arm_one_shot()
        persistent = await client.add_watch("/w", recursive=recursive)
    else:
        persistent = await client.add_watch("/w", recursive=recursive)
        watch = await arm_one_shot()
    if one_shot == "child":
        await writer.create("/w/c", b"")
    else:
        await writer.set("/w", b"1")
    event = await asyncio.wait_for(watch.wait(), 5)
    assert event.path == "/w"
    for value in (b"2", b"3"):
        await writer.set("/w", value)
    # The persistent watch saw every data change of /w (the first set too, unless the
    # one-shot change was a child's creation): it was not turned into a one-shot.
    expected = 2 if one_shot == "child" else 3

    async def data_changes() -> int:
        seen = 0
        async for e in persistent:
            if e.path == "/w" and e.type.name == "DATA_CHANGED":
                seen += 1
                if seen == expected:
                    break
        return seen

    assert await asyncio.wait_for(data_changes(), 5) == expected
    await persistent.aclose()
    await client.wait_background()
    await assert_no_watches(client, zookeeper)
