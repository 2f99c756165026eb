"""The lock queue at scale against a real server: no herd on release, and hundreds of waiters
that give up (timeout, cancellation, cancellation racing the create) leave nothing behind."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import Any

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client
from aiocoord._wire.opcodes import Op
from aiocoord.recipes._contention import kernel
from aiocoord.recipes.lock import Lock, Mutex
from aiocoord.testing import FaultProxy, session_of


def server_watches(wchc: str, session_id: int) -> list[str]:
    """The watched paths of one session in the output of ``wchc``."""
    out: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in wchc.splitlines():
        if line.startswith("0x"):
            current = out.setdefault(int(line.strip(), 16), [])
        elif line.strip() and current is not None:
            current.append(line.strip())
    return out.get(session_id, [])


def count_dispatches(client: Client) -> Counter[int]:
    """Count the watch notifications the client's session receives, by event type."""
    table = session_of(client).watches
    seen: Counter[int] = Counter()
    original = table.dispatch

    def counting(etype: int, server_path: str, user_path: str) -> None:
        seen[etype] += 1
        original(etype, server_path, user_path)

    table.dispatch = counting  # type: ignore[method-assign]
    return seen


async def test_one_release_wakes_exactly_one_of_100_waiters(
    zk_connect: Factory, zookeeper: Any
) -> None:
    holder_client, waiters_client = await zk_connect(), await zk_connect()
    holder = Lock(holder_client, "/herd")
    await holder.acquire()
    order: list[int] = []
    gates = [asyncio.Event() for _ in range(100)]

    async def waiter(i: int) -> None:
        lock = Lock(waiters_client, "/herd")
        async with lock:
            order.append(i)
            await gates[i].wait()

    tasks = []
    for i in range(100):
        tasks.append(asyncio.create_task(waiter(i)))
        # Queue them one after the other, so the expected order is known.
        await eventually(lambda n=i + 2: _has(holder_client, "/herd", n))
    # Each waiter watches the node ahead and its own node (to learn if a third party deletes
    # it); within one client those share one server watch per node: the holder's node and
    # the 100 waiters' nodes.
    await eventually(lambda: _watching(waiters_client, 101))
    # The server agrees: one watch per node, each on a different node.
    watched = server_watches(zookeeper.four_letter("wchc"), waiters_client.session_id)
    assert len(watched) == 101
    assert len(set(watched)) == 101
    seen = count_dispatches(waiters_client)
    before = dict(session_of(waiters_client).sent)

    await holder.release()
    await eventually(lambda: _done(order, 1))
    assert order == [0]
    assert sum(seen.values()) == 1  # one notification for one release: no herd

    for k in range(1, 100):
        gates[k - 1].set()
        await eventually(lambda k=k: _done(order, k + 1))
        # Each hand-over wakes one waiter, which already knew every node ahead of it was
        # gone: no listing, no probe. Inside one client it is woken by the release itself;
        # the server's one notification for the deleted node follows, and no other.
        await eventually(lambda k=k: _notified(seen, k + 1))
    assert order == list(range(100))
    gates[99].set()
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    # From the first release on, the waiters sent nothing but their own deletes: no listing,
    # no probe, no watch to re-arm or remove.
    sent = {op: n - before.get(op, 0) for op, n in session_of(waiters_client).sent.items()}
    assert {op: n for op, n in sent.items() if n} == {2: 100}
    await waiters_client.wait_background()  # the last release's delete, answered
    assert len(await child_names(holder_client, "/herd")) == 0


async def _has(client: Client, path: str, n: int) -> bool:
    return len(await child_names(client, path)) == n


async def _watching(client: Client, n: int) -> bool:
    # The table counts a watch once it is asked for; the server has it only once the request
    # was answered (wchc right after the count could miss the last one, seen once in CI).
    session = session_of(client)
    return session.pending_count == 0 and session.watches.counts()["server_watches"] == n


async def _notified(seen: Counter[int], n: int) -> bool:
    assert sum(seen.values()) <= n, "more than one notification for one release"
    return sum(seen.values()) == n


async def _done(order: list[int], n: int) -> bool:
    return len(order) >= n


@pytest.mark.parametrize("in_one_read", [False, True], ids=["events-apart", "events-together"])
@pytest.mark.parametrize(("ahead", "listings"), [(2, 0), (3, 1), (6, 1)])
async def test_woken_waiter_in_another_session_asks_at_most_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, ahead: int, listings: int, in_one_read: bool
) -> None:
    # Every contender has its own session, so the last one cannot learn from its own client
    # that the nodes ahead of it went. Across a network (the proxy adds 1 ms of round trip)
    # it watches the node it waits for and the one ahead of that (the look-ahead), and its
    # own node, in one round trip. When the look-ahead node goes, the node it waits for has
    # most likely been granted: one listing, read while that node is held, checks the others
    # it knew of (none is needed if it knew of no other), and the deletion of the node it
    # waits for then lets it through with no request at all. Events held up on the way (the
    # link stalls while the lock goes round) reach it in one read: the look-ahead's deletion
    # is taken first, and the outcome is the same.
    zk_fault_proxy.latency(0.0005)
    clients = [await zk_connect() for _ in range(ahead)]
    clients.append(await zk_connect(zk_fault_proxy.connect_string))
    stall = zk_fault_proxy if in_one_read else None
    rtt = await _woken_last_asks(clients, 3, {8: listings} if listings else {}, stall)
    # The round trip the waiter knew while it waited (it decided on it then): the stall's
    # heal also ends the proxy's latency, and a read after it may set a lower one.
    assert rtt is not None and rtt >= kernel.LOOK_AHEAD_MIN_RTT


@pytest.mark.parametrize("ahead", [2, 6])
async def test_woken_waiter_next_to_its_server_lists_once_instead_of_looking_ahead(
    zk_connect: Factory, ahead: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where the round trip is below the look-ahead's threshold (loopback on a quick host; the
    # test server's JIT is too slow for loopback to be that quick, so the threshold is
    # raised here) the look-ahead's requests cost more than the round trip they save: the
    # last waiter watches only the node it waits for, and lists once after its wake; once
    # granted, it arms the watch its holding keeps on its node (a getData).
    monkeypatch.setattr(kernel, "LOOK_AHEAD_MIN_RTT", 10.0)
    clients = [await zk_connect() for _ in range(ahead + 1)]
    await _woken_last_asks(clients, 1, {8: 1, 4: 1})


async def test_the_round_trip_a_connection_measured_is_at_least_the_networks(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    # The look-ahead's choice rests on it: the least time a recent read took.
    zk_fault_proxy.latency(0.002)
    client = await zk_connect(zk_fault_proxy.connect_string)
    await client.create("/w", b"")  # a write does not count: its answer waits for the log
    for _ in range(3):
        await client.exists("/w")
        await client.get("/w")
        await client.children("/w")
    rtt = session_of(client).round_trip
    assert rtt is not None and 0.004 <= rtt < 1.0


async def _woken_last_asks(
    clients: list[Client], watches: int, asks: dict[int, int], stall: FaultProxy | None = None
) -> float | None:
    """The last of ``clients`` queues behind the others' Mutex nodes, on ``watches`` server
    watches; they hand the lock over one after the other; it asks ``asks`` from then on.
    With ``stall`` (the proxy the last one connects through), nothing reaches it while the
    others hand the lock over: their deletions' events come to it in one read. Returns the
    last one's round trip (``Session.round_trip``) as it waited, before the lock went round."""
    # Mutexes (same queue as Lock), so that this task may release what other tasks took.
    locks = [Mutex(c, "/known") for c in clients]
    await locks[0].acquire()
    tasks = []
    for i in range(1, len(clients)):
        tasks.append(asyncio.create_task(locks[i].acquire()))
        await eventually(lambda n=i + 1: _has(clients[0], "/known", n))
    last = clients[-1]
    await eventually(lambda: _watching(last, watches))
    waited_rtt = session_of(last).round_trip
    before = dict(session_of(last).sent)
    if stall is not None:
        stall.blackhole()
    await locks[0].release()
    for i in range(1, len(clients) - 1):
        assert await asyncio.wait_for(tasks[i - 1], 10)
        await locks[i].release()
    if stall is not None:
        stall.heal()
    assert await asyncio.wait_for(tasks[-1], 10)
    # The holding watches its node: the watch kept from the wait, or one it arms from the next
    # loop turn (a getData); wait until it is armed and every request answered.
    await eventually(lambda: _watching(last, 1))
    sent = {op: n - before.get(op, 0) for op, n in session_of(last).sent.items()}
    assert {op: n for op, n in sent.items() if n} == asks
    await locks[-1].release()
    return waited_rtt


async def test_500_waiters_that_give_up_leave_no_node_and_the_next_one_gets_it(
    zk_connect: Factory,
) -> None:
    holder_client, waiters_client, last_client = (
        await zk_connect(),
        await zk_connect(),
        await zk_connect(),
    )
    holder = Lock(holder_client, "/crowd")
    await holder.acquire()
    loop = asyncio.get_running_loop()
    # Half time out on their own, half are cancelled; all are queued before either happens.
    timed = [
        asyncio.create_task(Lock(waiters_client, "/crowd").acquire(timeout=2.5)) for _ in range(250)
    ]
    cancelled = [asyncio.create_task(Lock(waiters_client, "/crowd").acquire()) for _ in range(250)]
    await eventually(lambda: _has(holder_client, "/crowd", 501))
    last = Mutex(last_client, "/crowd")  # released below by this task
    last_task = asyncio.create_task(last.acquire())
    await eventually(lambda: _has(holder_client, "/crowd", 502))
    for t in cancelled:
        t.cancel()
    started = loop.time()
    results = await asyncio.wait_for(asyncio.gather(*timed, return_exceptions=True), 15)
    assert all(isinstance(r, aiocoord.TimeoutError) for r in results), results[:3]
    assert loop.time() - started < 10
    await asyncio.gather(*cancelled, return_exceptions=True)
    assert all(t.cancelled() for t in cancelled)
    await waiters_client.wait_background()
    assert len(await child_names(holder_client, "/crowd")) == 2  # the holder and the last one
    assert session_of(waiters_client).watches.counts()["waiters"] == 0
    await holder.release()
    assert await asyncio.wait_for(last_task, 10)
    await last.release()
    await last_client.wait_background()  # its delete, answered
    assert len(await child_names(holder_client, "/crowd")) == 0


async def test_cancelling_while_the_create_is_in_flight_leaves_no_node(zk_connect: Factory) -> None:
    holder_client, client = await zk_connect(), await zk_connect()
    holder = Lock(holder_client, "/race")
    await holder.acquire()

    async def give_up_after(yields: int) -> None:
        task = asyncio.create_task(Lock(client, "/race").acquire())
        for _ in range(yields):
            await asyncio.sleep(0)  # cancel at every step of the acquire in turn
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    await asyncio.gather(*(give_up_after(k % 12) for k in range(240)))
    await client.wait_background()
    assert len(await child_names(holder_client, "/race")) == 1
    await holder.release()
    lock = Lock(client, "/race")
    assert await lock.acquire(timeout=5)
    await lock.release()


async def test_contenders_entering_together_share_one_listing(zk_connect: Factory) -> None:
    holder_client, client = await zk_connect(), await zk_connect()
    holder = Lock(holder_client, "/burst")
    await holder.acquire()
    done: list[int] = []

    async def contender(i: int) -> None:
        async with Lock(client, "/burst"):
            done.append(i)

    before = session_of(client).sent[8]
    tasks = [asyncio.create_task(contender(i)) for i in range(50)]
    await eventually(lambda: _has(holder_client, "/burst", 51))
    # Fifty creates, two getChildren (op 8): the first contender, alone on the path when it
    # entered, lists at once (behind its create, one round trip); the 49 that entered while
    # it waited share one listing that saw them all.
    assert session_of(client).sent[8] - before == 2
    await holder.release()
    await asyncio.wait_for(asyncio.gather(*tasks), 20)
    assert sorted(done) == list(range(50))
    assert session_of(client).sent[8] - before == 2  # and no listing on any hand-over


def _record_writes(client: Client) -> list[tuple[int, set[int]]]:
    """From now on, each request the client's connection writes: its opcode and the xids
    still unanswered at that moment (the connection is only observed)."""
    conn = session_of(client)._conn
    assert conn is not None
    writes: list[tuple[int, set[int]]] = []
    send = conn.send

    def recording(xid: int, request: Any, future: Any = None) -> Any:
        writes.append((request.opcode, set(conn._pending)))
        return send(xid, request, future)

    conn.send = recording  # type: ignore[method-assign]  # an observer, on this test's client
    return writes


def _one_step(writes: list[tuple[int, set[int]]]) -> bool:
    """Whether the requests recorded went out in one step: none was answered before the
    last was written (each found all the earlier ones still unanswered)."""
    return all(len(after) == len(writes[0][1]) + i for i, (_, after) in enumerate(writes))


async def test_a_first_acquire_on_a_fresh_path_makes_its_parent_in_the_same_round_trip(
    zk_client: Client,
) -> None:
    # A lock per resource (/locks/order-1 under an existing /locks): the parent's create,
    # the node's and the listing go out together, one round trip for all (and one log flush
    # at the server), where waiting for each answer took three or four.
    await zk_client.create("/locks")
    writes = _record_writes(zk_client)
    lock = Lock(zk_client, "/locks/order-1")
    await lock.acquire()
    assert [op for op, _ in writes] == [Op.CREATE_CONTAINER, Op.CREATE2, Op.GET_CHILDREN]
    assert _one_step(writes)
    assert len(await zk_client.children("/locks/order-1")) == 1
    await lock.release()
    # Kept from the server's container reaper, which removes an empty container on its own
    # schedule (then the next create would rightly make it again).
    await zk_client.create("/locks/order-1/keep", make_parents=True)
    # The client made a node under it: the next acquire (a new Lock object too) sends no
    # create of the parent.
    writes.clear()
    async with Lock(zk_client, "/locks/order-1"):
        assert [op for op, _ in writes][:2] == [Op.CREATE2, Op.GET_CHILDREN]
    assert Op.CREATE_CONTAINER not in [op for op, _ in writes]


async def test_a_first_acquire_on_an_existing_path_is_one_round_trip_too(
    zk_client: Client, zk_connect: Factory
) -> None:
    # A path this client never used, made by another: the parent's create is refused
    # (NodeExists) in the same step as the node's create and the listing.
    other = await zk_connect()
    await other.create("/locks/shared", make_parents=True)
    await other.create("/locks/shared/keep")  # not empty: the server keeps it anyway
    writes = _record_writes(zk_client)
    lock = Lock(zk_client, "/locks/shared")
    await lock.acquire()
    assert [op for op, _ in writes] == [Op.CREATE_CONTAINER, Op.CREATE2, Op.GET_CHILDREN]
    assert _one_step(writes)
    assert lock.is_held
    await lock.release()


async def test_a_parent_removed_since_the_client_used_it_is_made_again(
    zk_client: Client, zk_connect: Factory
) -> None:
    # The client made a node under /locks/job, so it sends no create of the parent; the
    # parent was removed meanwhile (an empty container the server reaped, or an operator):
    # the refused create goes again right behind the parent's, the listing behind both.
    await zk_client.create("/locks")  # not a container: the reaper leaves it alone
    async with Lock(zk_client, "/locks/job"):
        pass
    await zk_client.wait_background()
    other = await zk_connect()
    with contextlib.suppress(aiocoord.NoNodeError):  # the reaper (every 0.1 s here) was first
        await other.delete("/locks/job")
    writes = _record_writes(zk_client)
    lock = Lock(zk_client, "/locks/job")
    await lock.acquire()
    ops = [op for op, _ in writes]
    assert ops == [
        Op.CREATE2,
        Op.GET_CHILDREN,
        Op.CREATE_CONTAINER,
        Op.CREATE2,
        Op.GET_CHILDREN,
    ], ops
    assert _one_step(writes[2:4])  # the create right behind the parent's, nothing between
    assert lock.is_held and len(await zk_client.children("/locks/job")) == 1
    await lock.release()


async def test_a_first_acquire_on_a_deeper_missing_path_makes_every_level(
    zk_client: Client,
) -> None:
    # More than the parent missing: the parent's create is refused too, and the node is made
    # once the walk made every level; the refused create is not sent again first.
    creates_before = session_of(zk_client).sent[Op.CREATE2]
    lock = Lock(zk_client, "/fresh/resource-1/lock")
    await lock.acquire()
    assert session_of(zk_client).sent[Op.CREATE2] - creates_before == 2
    nodes = await zk_client.children("/fresh/resource-1/lock")
    assert len(nodes) == 1
    await lock.release()
    await zk_client.wait_background()
    # Gone (its container parent may be gone too: the server's reaper removes it once empty).
    assert await zk_client.exists(f"/fresh/resource-1/lock/{nodes[0]}") is None
