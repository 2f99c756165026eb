"""DelayQueue against a real server: Curator's DistributedDelayQueue layout
(``queue-|<hex time>|<seq>`` in Queue's framing), items handed out by time and not before,
a consumer woken by its timer or by a children change with no polling, and bad input
refused before anything is sent."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import Client, DelayQueue
from aiocoord._wire.opcodes import Op
from aiocoord.errors import BadArgumentsError, InvalidTypeError
from aiocoord.recipes.queue import unframe
from aiocoord.testing import expire_session, session_of


def now_ms() -> int:
    return int(time.time() * 1000)


def listings(client: Client) -> int:
    return session_of(client).sent[Op.GET_CHILDREN] + session_of(client).sent[Op.GET_CHILDREN2]


async def _watched(client: Client) -> bool:
    return session_of(client).watches.counts()["waiters"] > 0


async def test_layout_is_curators_and_items_come_out_by_time_then_arrival(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    base = now_ms() - 10_000  # all in the past: due at once, in time order
    async with DelayQueue(client, "/delay") as queue:
        await queue.put(b"third", base + 300)
        await queue.put(b"first", base + 100)
        await queue.put_all([b"second-a", b"second-b"], base + 200)
        await queue.put(b"second-c", base + 200)
        await queue.put(b"no delay")  # time 0: before all of them
        names = [n for n in await client.children("/delay") if n.startswith("queue-")]
        assert all(re.fullmatch(r"queue-\|[0-9A-F]{8,}\|\d{10}", n) for n in names)
        first = next(n for n in names if f"|{base + 100:08X}|" in n)
        assert unframe((await client.get("/delay/" + first))[0]) == [b"first"]
        assert "queue-|00000000|" in " ".join(names)
        got = [await queue.get(timeout=5) for _ in range(6)]
    assert got == [b"no delay", b"first", b"second-a", b"second-b", b"second-c", b"third"]
    assert await client.children("/delay") == []


async def test_an_item_comes_out_at_its_time_on_a_timer_not_by_polling(
    zk_connect: Factory,
) -> None:
    consumer_client, producer_client = await zk_connect(), await zk_connect()
    consumer = DelayQueue(consumer_client, "/timed")
    producer = DelayQueue(producer_client, "/timed")
    due = now_ms() + 1500
    await producer.put(b"later", due)
    # Not visible before its time: a shorter wait times out, the item stays.
    with pytest.raises(asyncio.TimeoutError):
        await consumer.get(timeout=0.2)
    assert await producer.size() == 1
    before = listings(consumer_client)
    assert await consumer.get(timeout=10) == b"later"
    assert now_ms() >= due
    # One listing before the wait, one when the timer fired (a stray early wake-up at most).
    assert listings(consumer_client) - before <= 3
    assert session_of(consumer_client).watches.counts()["waiters"] == 0


async def test_an_earlier_item_put_meanwhile_wakes_the_consumer(zk_connect: Factory) -> None:
    consumer_client, producer_client = await zk_connect(), await zk_connect()
    consumer = DelayQueue(consumer_client, "/wake")
    producer = DelayQueue(producer_client, "/wake")
    await producer.put(b"in an hour", now_ms() + 3_600_000)
    waiting = asyncio.ensure_future(consumer.get(timeout=10))
    await eventually(lambda: _watched(consumer_client))
    await producer.put(b"now")
    assert await waiting == b"now"
    # Cancelling a waiting get leaves no watch, and the item for later stays queued.
    waiting = asyncio.ensure_future(consumer.get())
    await eventually(lambda: _watched(consumer_client))
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert session_of(consumer_client).watches.counts()["waiters"] == 0
    assert await consumer.size() == 1
    await consumer.close()
    await producer.close()


async def test_bad_times_are_refused_before_anything_is_sent(zk_connect: Factory) -> None:
    client = await zk_connect()
    queue = DelayQueue(client, "/bad")
    for value in (-1, 2**63):
        with pytest.raises(BadArgumentsError):
            await queue.put(b"x", value)
    for wrong in (1.5, "1000", True, None):
        with pytest.raises(InvalidTypeError):
            await queue.put(b"x", wrong)  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(InvalidTypeError):
        await queue.put_all(b"x", 1)  # type: ignore[arg-type]  # the refusal tested
    assert await client.exists("/bad") is None


async def test_a_waiting_consumer_gets_its_item_across_a_session_expiry(
    zk_connect: Factory, zookeeper: Any
) -> None:
    consumer_client = await zk_connect(session_timeout=4)
    producer = DelayQueue(await zk_connect(), "/expiry")
    consumer = DelayQueue(consumer_client, "/expiry")
    due = now_ms() + 2500
    await producer.put(b"survives", due)
    getting = asyncio.ensure_future(consumer.get(timeout=20))
    await eventually(lambda: _watched(consumer_client))
    old = consumer_client.session_id
    await expire_session(old, session_of(consumer_client).password, zookeeper.connect_string)
    # The watch went with the session: the consumer lists again on the new one and waits
    # for the item's time there.
    assert await getting == b"survives"
    assert now_ms() >= due
    assert consumer_client.session_id not in (0, old)  # taken on the new session
    await producer.close()
    await consumer.close()
