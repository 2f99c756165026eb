"""SimpleQueue against a real server: Curator's SimpleDistributedQueue layout (``qn-<seq>``,
raw data), the BlockingQueue methods, waiting on a children watch, exactly-once claims with
lost replies, cancellation, and bad input refused before anything is sent."""

from __future__ import annotations

import asyncio
import re

import pytest
from support import Factory, eventually

from aiocoord import Client, SimpleQueue
from aiocoord._wire.opcodes import Op
from aiocoord.errors import BadArgumentsError, InvalidTypeError, QueueEmptyError
from aiocoord.testing import FaultProxy, session_of


async def _watched(client: Client) -> bool:
    return session_of(client).watches.counts()["waiters"] > 0


async def test_layout_is_curators_raw_qn_nodes_taken_lowest_sequence_first(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    async with SimpleQueue(client, "/simple") as queue:
        await queue.offer(b"one")
        await queue.offer(b"")
        await queue.put_all([b"three", b"four"])
        # Besides the items, only the ephemeral marker of the last write (``_c_...-op``).
        children = await client.children("/simple")
        names = sorted(n for n in children if not n.startswith("_c_"))
        assert len(names) == 4 and all(re.fullmatch(r"qn-\d{10}", n) for n in names)
        assert len(children) == 5
        assert [(await client.get("/simple/" + n))[0] for n in names] == [
            b"one",
            b"",
            b"three",
            b"four",
        ]
        # A node written by another program in the same layout is an item like ours.
        await client.create("/simple/qn-", b"foreign", sequential=True)
        assert await queue.peek() == b"one"
        assert await queue.element() == b"one"
        assert await queue.size() == 5  # peek and element take nothing
        assert await queue.poll() == b"one"
        assert await queue.remove() == b""
        assert await queue.take(timeout=5) == b"three"
        assert await queue.get(timeout=5) == b"four"
        assert await queue.poll(timeout=5) == b"foreign"
    assert await client.children("/simple") == []  # markers deleted on close


async def test_empty_queue_answers_none_or_raises_queue_empty(zk_connect: Factory) -> None:
    client = await zk_connect()
    queue = SimpleQueue(client, "/never-made")
    assert await queue.peek() is None
    assert await queue.poll() is None
    assert await queue.poll(timeout=0.1) is None
    with pytest.raises(QueueEmptyError, match="empty"):
        await queue.element()
    with pytest.raises(QueueEmptyError):
        await queue.remove()
    with pytest.raises(asyncio.TimeoutError):
        await queue.take(timeout=0.1)
    assert session_of(client).watches.counts()["waiters"] == 0  # no watch left behind
    await queue.close()


async def test_take_waits_on_a_children_watch_for_another_clients_offer(
    zk_connect: Factory,
) -> None:
    consumer_client, producer_client = await zk_connect(), await zk_connect()
    consumer = SimpleQueue(consumer_client, "/wait")
    producer = SimpleQueue(producer_client, "/wait")
    taking = asyncio.ensure_future(consumer.take())
    polling = asyncio.ensure_future(consumer.poll(timeout=10))
    await eventually(lambda: _watched(consumer_client))
    await producer.offer(b"a")
    await producer.offer(b"b")
    assert sorted([await taking, await polling or b""]) == [b"a", b"b"]
    assert session_of(consumer_client).watches.counts()["waiters"] == 0


async def test_every_item_to_exactly_one_consumer(zk_connect: Factory) -> None:
    producer = SimpleQueue(await zk_connect(), "/many")
    consumers = [SimpleQueue(await zk_connect(), "/many") for _ in range(3)]
    for i in range(60):
        await producer.offer(b"%d" % i)

    async def drain(q: SimpleQueue) -> list[int]:
        got = []
        while (item := await q.poll()) is not None:
            got.append(int(item))
        return got

    results = await asyncio.gather(*(drain(q) for q in consumers))
    flat = [x for r in results for x in r]
    assert sorted(flat) == list(range(60))
    for r in results:
        assert r == sorted(r)  # each consumer took them in queue order


async def test_claim_whose_reply_is_lost_is_delivered_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    queue = SimpleQueue(client, "/lossy")
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
    await queue.offer(b"once")
    await lost.wait(5)
    assert len([n for n in await observer.children("/lossy") if n.startswith("qn-")]) == 1
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
    assert await queue.remove() == b"once"
    await lost.wait(5)
    assert await queue.poll() is None
    await queue.close()
    assert await observer.children("/lossy") == []


async def test_a_cancelled_take_leaves_no_watch_and_loses_no_item(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    queue = SimpleQueue(client, "/cancel")
    waiting = asyncio.ensure_future(queue.take())
    await eventually(lambda: _watched(client))
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert session_of(client).watches.counts()["waiters"] == 0
    async with SimpleQueue(observer, "/cancel") as producer:
        await producer.offer(b"precious")
    zk_fault_proxy.latency(0.3)
    multis = session_of(client).sent[Op.MULTI]
    taking = asyncio.ensure_future(queue.take())
    await eventually(lambda: _true(session_of(client).sent[Op.MULTI] > multis))
    taking.cancel()  # the claim is on its way
    with pytest.raises(asyncio.CancelledError):
        await taking
    zk_fault_proxy.heal()
    assert await queue.peek() == b"precious"  # kept by the object, handed out first
    assert await queue.take(5) == b"precious"
    await queue.close()
    assert await observer.children("/cancel") == []


async def _true(value: bool) -> bool:
    return value


async def test_bad_input_is_refused_before_anything_is_sent(zk_connect: Factory) -> None:
    client = await zk_connect()
    with pytest.raises(BadArgumentsError):
        SimpleQueue(client, "/")
    with pytest.raises(InvalidTypeError):
        SimpleQueue("not a client", "/q")  # type: ignore[arg-type]  # the refusal tested
    queue = SimpleQueue(client, "/q")
    with pytest.raises(InvalidTypeError):
        await queue.offer("text")  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(InvalidTypeError):
        await queue.put_all(b"bytes itself")  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(BadArgumentsError):
        await queue.put_all([])
    with pytest.raises(BadArgumentsError):
        await queue.poll(timeout=-1)
    assert await client.exists("/q") is None
