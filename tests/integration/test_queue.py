"""Queue, PriorityQueue and LockingQueue against a real server: every item to exactly one
consumer in FIFO order per producer, Curator's and kazoo's layouts, waiting on a children
watch, lost replies on put and claim, redelivery after a consumer's session expired."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import struct
from collections import defaultdict
from typing import Any

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client
from aiocoord._wire.opcodes import Op
from aiocoord.errors import (
    ConnectionLossError,
    LockLostError,
    NodeExistsError,
    NoNodeError,
    TransactionFailedError,
)
from aiocoord.recipes._marker import FENCE, FENCE_LIFETIME
from aiocoord.recipes.delay_queue import DelayQueue
from aiocoord.recipes.id_queue import IdQueue
from aiocoord.recipes.locking_queue import LockingQueue
from aiocoord.recipes.queue import PriorityQueue, Queue, frame, unframe
from aiocoord.testing import FaultProxy, expire_session, session_of
from aiocoord.transaction import Transaction

PRODUCERS, CONSUMERS, ITEMS = 3, 3, 500


#: The failure-semantics rows of docs/recipes/queues.md (SimpleQueue's, DelayQueue's and
#: IdQueue's are Queue's) and its row of docs/recipes.md, with the tests that hold each under
#: the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/queues.md | Failure semantics | Hostile or foreign node data": [
        "test_an_item_not_in_curators_framing_is_handed_out_raw",
        "test_hostile_data.py::test_foreign_delay_item_names_are_read_as_curator_reads_them",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | `LockingQueue`": [
        "test_item_is_redelivered_when_its_consumers_session_expires_before_consume",
    ],
    "recipes/queues.md | Failure semantics | Connection lost (SUSPENDED)": [
        "test_fences_go_once_their_transactions_can_no_longer_arrive",
        "test_put_and_claim_whose_replies_are_lost_happen_exactly_once",
        "test_a_put_still_on_its_way_after_its_connection_was_given_up_applies_once",
        "test_consume_whose_reply_is_lost_happens_once",
        "test_simple_queue.py::test_claim_whose_reply_is_lost_is_delivered_once",
        "test_delay_queue_put_and_claim_whose_replies_are_lost_happen_once",
        "test_id_queue_remove_whose_reply_is_lost_counts_each_item_once",
    ],
    "recipes/queues.md | Failure semantics | Session expired (LOST)": [
        "test_item_is_redelivered_when_its_consumers_session_expires_before_consume",
        "test_delay_queue.py::test_a_waiting_consumer_gets_its_item_across_a_session_expiry",
    ],
    "recipes/queues.md | Failure semantics | Consumer crash": [
        "test_item_is_redelivered_when_its_consumers_session_expires_before_consume",
    ],
    "recipes/queues.md | Failure semantics | Cancellation": [
        "test_a_get_cancelled_while_claiming_keeps_the_item_for_the_next_get",
        "test_close_puts_back_what_was_claimed_and_not_handed_out",
        "test_close_puts_a_cancelled_gets_item_back_at_its_priority",
        "test_simple_queue.py::test_a_cancelled_take_leaves_no_watch_and_loses_no_item",
    ],
    "recipes/queues.md | Failure semantics | Timeout": [
        "test_get_waits_for_a_put_and_times_out_empty",
    ],
}


async def test_every_item_goes_to_one_consumer_in_fifo_order_per_producer(
    zk_connect: Factory,
) -> None:
    producers = [Queue(await zk_connect(), "/jobs") for _ in range(PRODUCERS)]
    consumers = [Queue(await zk_connect(), "/jobs") for _ in range(CONSUMERS)]
    total = PRODUCERS * ITEMS
    received: list[list[tuple[int, int]]] = [[] for _ in consumers]
    all_done = asyncio.Event()

    async def produce(p: int) -> None:
        for i in range(ITEMS):
            await producers[p].put(b"%d:%d" % (p, i))

    async def consume(c: int) -> None:
        while not all_done.is_set():
            try:
                item = await consumers[c].get(timeout=0.2)
            except TimeoutError:
                continue
            p, i = map(int, item.split(b":"))
            received[c].append((p, i))
            if sum(map(len, received)) == total:
                all_done.set()

    workers = [*(produce(p) for p in range(PRODUCERS)), *(consume(c) for c in range(CONSUMERS))]
    await asyncio.wait_for(asyncio.gather(*workers), 50)

    flat = [x for r in received for x in r]
    assert len(flat) == total
    assert sorted(flat) == [(p, i) for p in range(PRODUCERS) for i in range(ITEMS)]
    for r in received:
        # Each consumer got each producer's items in the order they were put.
        by_producer: dict[int, list[int]] = defaultdict(list)
        for p, i in r:
            by_producer[p].append(i)
        for items in by_producer.values():
            assert items == sorted(items)
    assert all(r for r in received)  # the work was shared
    for q in [*producers, *consumers]:
        await q.close()
    assert await producers[0].client.children("/jobs") == []


async def test_queue_layout_and_framing_are_curators(zk_connect: Factory) -> None:
    client = await zk_connect()
    queue = Queue(client, "/curator")
    await queue.put(b"one")
    await queue.put_all([b"two", b"three"])
    await queue.close()
    names = sorted(await client.children("/curator"))
    assert len(names) == 2
    assert all(re.fullmatch(r"queue-\d{10}", n) for n in names)
    data, _ = await client.get("/curator/" + names[0])
    assert data == struct.pack(">i", 0x00010001) + b"\x01" + struct.pack(">i", 3) + b"one\x02"
    assert unframe(frame([b"a", b""])) == [b"a", b""]
    # A node a Curator producer wrote comes out too; put_all's items come out in order.
    await client.create("/curator/queue-9999999999", frame([b"four"]))
    assert [await queue.get(1) for _ in range(4)] == [b"one", b"two", b"three", b"four"]
    await queue.close()
    assert await client.children("/curator") == []


async def test_an_item_not_in_curators_framing_is_handed_out_raw(
    zk_connect: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    client = await zk_connect()
    queue = Queue(client, "/foreign")
    await queue.put(b"first")
    # Written by another client: a truncated frame, a bad header, nothing at all.
    hostile = [b"\x00\x01\x00", b"\xff" * 16, b""]
    for data in hostile:
        await client.create("/foreign/queue-", data, sequential=True)
    await queue.put(b"last")
    with caplog.at_level(logging.WARNING, logger="aiocoord.recipes.queue"):
        got = [await queue.get(5) for _ in range(5)]
    assert got == [b"first", *hostile, b"last"]
    assert sum("not in Curator's framing" in r.getMessage() for r in caplog.records) == 3
    await queue.close()


async def test_close_puts_back_what_was_claimed_and_not_handed_out(zk_connect: Factory) -> None:
    first_client, second_client = await zk_connect(), await zk_connect()
    first, second = Queue(first_client, "/putback"), Queue(second_client, "/putback")
    await first.put_all([b"a", b"b", b"c"])
    assert await first.get(1) == b"a"  # b and c were claimed with it, as one node
    await first.close()
    assert [await second.get(1) for _ in range(2)] == [b"b", b"c"]
    await second.close()


async def test_priority_queue_orders_by_priority_then_arrival(zk_connect: Factory) -> None:
    client = await zk_connect()
    queue = PriorityQueue(client, "/prio")
    for data, priority in [(b"a", 5), (b"b", -1), (b"c", 5), (b"d", 0), (b"e", -(2**31))]:
        await queue.put(data, priority)
    names = sorted(await client.children("/prio"))
    assert [n[len("queue-") : len("queue-") + 9] for n in names if n.startswith("queue-")] == [
        "080000000",
        "0FFFFFFFF",
        "100000000",
        "100000005",
        "100000005",
    ]
    assert [await queue.get(1) for _ in range(5)] == [b"e", b"b", b"d", b"a", b"c"]
    await queue.close()


async def test_get_waits_for_a_put_and_times_out_empty(zk_connect: Factory) -> None:
    consumer_client, producer_client = await zk_connect(), await zk_connect()
    consumer, producer = Queue(consumer_client, "/wait"), Queue(producer_client, "/wait")
    with pytest.raises(asyncio.TimeoutError):
        await consumer.get(timeout=0.1)
    waiting = asyncio.ensure_future(consumer.get(timeout=10))
    await eventually(lambda: _watched(consumer_client))
    await producer.put(b"late")
    assert await waiting == b"late"
    assert session_of(consumer_client).watches.counts()["waiters"] == 0


async def _watched(client: Client) -> bool:
    return session_of(client).watches.counts()["waiters"] > 0


async def test_put_and_claim_whose_replies_are_lost_happen_exactly_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    queue = Queue(client, "/lossy")
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
    await queue.put(b"once")
    await lost.wait(5)
    assert len([n for n in await observer.children("/lossy") if n.startswith("queue-")]) == 1
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
    assert await queue.get(5) == b"once"  # claimed, reply lost, still delivered
    await lost.wait(5)
    await queue.close()
    assert await observer.children("/lossy") == []
    await client.close()


async def test_a_put_still_on_its_way_after_its_connection_was_given_up_applies_once(
    zk_connect: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A request can reach the server after the client gave its connection up (delayed in the
    # network or a proxy; the 30-minute soak found items put twice that way). Here the first
    # transaction is held back as if on its way, the put is told ConnectionLossError, checks,
    # sends again; then the held transaction arrives. It must fail, all of it.
    client, observer = await zk_connect(session_timeout=2), await zk_connect()
    await client.ensure_path("/late")
    queue = Queue(client, "/late")
    held: list[Transaction] = []
    real_commit = Transaction.commit

    async def first_on_its_way(self: Transaction) -> Any:
        if not held:
            held.append(self)
            raise ConnectionLossError("connection given up with the transaction on its way")
        return await real_commit(self)

    monkeypatch.setattr(Transaction, "commit", first_on_its_way)
    await queue.put(b"once")
    monkeypatch.undo()
    with pytest.raises(TransactionFailedError) as late:
        await real_commit(held[0])  # it arrives now: the check's fence makes it fail
    assert isinstance(late.value.cause, NodeExistsError)
    items = [n for n in await observer.children("/late") if n.startswith("queue-")]
    assert len(items) == 1
    assert await queue.get(5) == b"once"
    # The fence stays while the transaction could still come (FENCE_LIFETIME timeouts)...
    names = await observer.children("/late")
    (fence,) = [n for n in names if (await observer.get(f"/late/{n}"))[0] == FENCE]
    stat = await observer.exists(f"/late/{fence}")
    assert stat is not None and stat.ephemeral_owner == client.session_id
    await queue.close()  # ... and close() waits for that, then deletes it
    assert await observer.children("/late") == []


async def test_fences_go_once_their_transactions_can_no_longer_arrive(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=2)
    observer = await zk_connect()
    await client.ensure_path("/fenced")
    queue = Queue(client, "/fenced")
    # The first put's reply is lost and the link cut; the puts behind it never reach the
    # server: each check fences its transaction off, and the put is sent again.
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
    await asyncio.gather(*(queue.put(bytes([i])) for i in range(6)))
    await lost.wait(5)

    async def fences() -> list[str]:
        out = []
        for name in await child_names(observer, "/fenced"):
            with contextlib.suppress(NoNodeError):
                if (await observer.get(f"/fenced/{name}"))[0] == FENCE:
                    out.append(name)
        return out

    assert await fences()  # made, and kept while the lost transactions could arrive
    lifetime = FENCE_LIFETIME * session_of(client).negotiated_timeout

    async def gone() -> bool:
        return not await fences()

    await eventually(gone, timeout=lifetime + 10, what="the fences gone")
    items = [n for n in await observer.children("/fenced") if n.startswith("queue-")]
    assert len(items) == 6  # each put exactly once
    assert sorted([await queue.get(5) for _ in range(6)]) == [bytes([i]) for i in range(6)]
    await queue.close()


async def test_a_fence_whose_own_reply_was_lost_goes_at_close(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    """A put never reaches the server (its link is cut in a partition); the check's fence is
    made but its reply is lost too, so the check finds its own fence on the next try. That
    fence is deleted like any other (it stayed until the session ended), and the put applies
    once."""
    proxy = zk_fault_proxy
    client = await zk_connect(proxy.connect_string, session_timeout=2)
    observer = await zk_connect()
    await client.ensure_path("/own")
    queue = Queue(client, "/own")
    multis = session_of(client).sent[Op.MULTI]
    proxy.blackhole()
    putting = asyncio.ensure_future(queue.put(b"once"))
    await eventually(lambda: _true(session_of(client).sent[Op.MULTI] > multis))
    fence_lost = proxy.drop_after_request(lambda xid, op: op in (Op.CREATE, Op.CREATE2))
    proxy.drop()  # cut in the partition: nothing it held reaches the server
    proxy.heal()
    await asyncio.wait_for(putting, 20)
    assert (await fence_lost.wait(5)).opcode in (Op.CREATE, Op.CREATE2)
    await queue.close()
    names = await observer.children("/own")
    left = {n: (await observer.get(f"/own/{n}"))[0] for n in names if not n.startswith("queue-")}
    assert left == {}
    assert len(names) == 1
    assert await Queue(observer, "/own").get(5) == b"once"


@pytest.mark.parametrize("layout", ["curator", "kazoo"])
async def test_a_get_cancelled_while_claiming_keeps_the_item_for_the_next_get(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, layout: str
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    await Queue(observer, "/cancelled", layout=layout).put(b"precious")
    queue = Queue(client, "/cancelled", layout=layout)
    zk_fault_proxy.latency(0.3)
    multis = session_of(client).sent[Op.MULTI]
    getter = asyncio.ensure_future(queue.get(10))
    await eventually(lambda: _true(session_of(client).sent[Op.MULTI] > multis))
    getter.cancel()  # the claim is on its way to the server
    with pytest.raises(asyncio.CancelledError):
        await getter
    zk_fault_proxy.heal()
    assert await queue.get(5) == b"precious"
    assert [n for n in await observer.children("/cancelled") if n.startswith(queue.item_name)] == []
    await queue.close()
    await client.close()


@pytest.mark.parametrize("layout", ["curator", "kazoo"])
async def test_close_puts_a_cancelled_gets_item_back_at_its_priority(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, layout: str
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    other = PriorityQueue(observer, "/back", layout=layout)
    await other.put(b"urgent", 5)
    await other.put(b"later", 50)

    async def item_names() -> list[str]:
        return sorted(n for n in await observer.children("/back") if n.startswith(other.item_name))

    before = await item_names()
    queue = PriorityQueue(client, "/back", layout=layout)
    zk_fault_proxy.latency(0.3)
    multis = session_of(client).sent[Op.MULTI]
    getter = asyncio.ensure_future(queue.get(10))
    await eventually(lambda: _true(session_of(client).sent[Op.MULTI] > multis))
    getter.cancel()  # the claim of b"urgent" is on its way to the server
    with pytest.raises(asyncio.CancelledError):
        await getter
    zk_fault_proxy.heal()
    await queue.close()
    after = await item_names()
    assert after != before  # b"urgent" was claimed, then put back as a new node
    # Its name but for the sequence number: the same priority, so it still comes first.
    assert [n[:-10] for n in after] == [n[:-10] for n in before]
    assert [await other.get(5) for _ in range(2)] == [b"urgent", b"later"]
    await other.close()
    await client.close()


async def _true(value: bool) -> bool:
    return value


# --- LockingQueue ------------------------------------------------------------------------


async def test_locking_queue_layout_take_release_consume(zk_connect: Factory) -> None:
    client = await zk_connect()
    queue = LockingQueue(client, "/locking")
    await queue.put(b"low", priority=500)
    await queue.put_all([b"high-1", b"high-2"], priority=1)
    entries = sorted(await client.children("/locking/entries"))
    assert [re.sub(r"\d{10}$", "N", n) for n in entries] == [
        "entry-001-N",
        "entry-001-N",
        "entry-500-N",
    ]
    item = await queue.take(1)
    assert item.data == b"high-1"
    lock_data, lock_stat = await client.get(item.lock_path)
    assert lock_data == queue.id
    assert lock_stat.ephemeral_owner == client.session_id
    assert await item.holds_lock()
    await item.release()
    assert await client.children("/locking/taken") == []
    again = await queue.take(1)
    assert again.data == b"high-1"
    second = await queue.take(1)  # the locked head is skipped
    assert second.data == b"high-2"
    await again.consume()
    await second.consume()
    assert (await queue.take(1)).data == b"low"
    with pytest.raises(asyncio.TimeoutError):
        await queue.take(0.1)
    assert await queue.size() == 1


async def test_item_is_redelivered_when_its_consumers_session_expires_before_consume(
    zk_connect: Factory, zookeeper: Any
) -> None:
    a, b = await zk_connect(session_timeout=4), await zk_connect()
    first, second = LockingQueue(a, "/redeliver"), LockingQueue(b, "/redeliver")
    await first.put(b"job")
    taken = await first.take(5)
    assert taken.data == b"job"
    waiting = asyncio.ensure_future(second.take(15))
    await eventually(lambda: _watched(b))
    assert not waiting.done()
    await expire_session(a.session_id, session_of(a).password, zookeeper.connect_string)
    redelivered = await waiting
    assert redelivered.data == b"job"
    with pytest.raises(LockLostError):
        await taken.consume()
    await redelivered.consume()
    assert await second.size() == 0
    assert await b.children("/redeliver/taken") == []


async def test_consume_whose_reply_is_lost_happens_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    queue = LockingQueue(client, "/lossy-lock")
    await queue.put(b"a")
    await queue.put(b"b")
    item = await queue.take(5)
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
    await item.consume()
    await lost.wait(5)
    assert len(await observer.children("/lossy-lock/entries")) == 1
    assert await observer.children("/lossy-lock/taken") == []
    assert (await queue.take(5)).data == b"b"
    await queue.close()
    await client.close()


async def test_delay_queue_put_and_claim_whose_replies_are_lost_happen_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    async with DelayQueue(client, "/lossy-delay") as queue:
        lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
        await queue.put(b"once", 0)
        await lost.wait(5)
        items = [n for n in await observer.children("/lossy-delay") if n.startswith("queue-")]
        assert len(items) == 1  # put once, though its reply was lost
        lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
        assert await queue.get(timeout=10) == b"once"
        await lost.wait(5)
        with pytest.raises(aiocoord.TimeoutError):
            await queue.get(timeout=0.1)  # claimed once, not twice, not lost
    assert await observer.children("/lossy-delay") == []


async def test_id_queue_remove_whose_reply_is_lost_counts_each_item_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    async with IdQueue(client, "/lossy-ids") as queue:
        await queue.put(b"a1", "a")
        await queue.put(b"b1", "b")
        await queue.put(b"a2", "a")
        lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
        assert await queue.remove("a") == 2  # the lost reply is resolved by the marker
        assert lost.done()
        assert await queue.ids() == ["b"]
        assert await queue.get(timeout=10) == b"b1"
    assert await observer.children("/lossy-ids") == []
