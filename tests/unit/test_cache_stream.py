"""The caches' change stream: bounded per-subscriber buffers, RESYNCED on overflow, endings."""

from __future__ import annotations

import asyncio
import gc

import pytest

from aiocoord.recipes._stream import EventStream, EventSubscription
from aiocoord.recipes.cache import CacheEventType, NodeEvent

RESYNCED = "RESYNCED"


def make_stream() -> EventStream[str]:
    return EventStream(lambda: RESYNCED)


async def drain(sub: EventSubscription[str]) -> list[str]:
    return [event async for event in sub]


async def test_each_subscriber_gets_every_event_in_order() -> None:
    stream = make_stream()
    a, b = stream.subscribe(10), stream.subscribe(10)
    for i in range(5):
        stream.publish(str(i))
    stream.close()
    assert await drain(a) == ["0", "1", "2", "3", "4"]
    assert await drain(b) == ["0", "1", "2", "3", "4"]


async def test_overflow_yields_one_resynced_then_later_events() -> None:
    stream = make_stream()
    slow, fast = stream.subscribe(3), stream.subscribe(100)
    for i in range(10):
        stream.publish(str(i))
    # Events published after the overflow and before the next read are covered by RESYNCED.
    assert await slow.get(timeout=1) == RESYNCED
    stream.publish("10")
    stream.close()
    assert await drain(slow) == ["10"]
    assert await drain(fast) == [str(i) for i in range(11)]


async def test_resynced_is_made_when_read_not_when_overflowing() -> None:
    made: list[int] = []
    counter = iter(range(100))

    def resynced() -> str:
        made.append(next(counter))
        return RESYNCED

    stream: EventStream[str] = EventStream(resynced)
    sub = stream.subscribe(1)
    stream.publish("a")
    stream.publish("b")
    stream.publish("c")
    assert made == []
    assert await sub.get(timeout=1) == RESYNCED
    assert made == [0]


async def test_a_waiting_reader_is_woken_by_publish() -> None:
    stream = make_stream()
    sub = stream.subscribe(10)
    reader = asyncio.ensure_future(sub.get(timeout=5))
    await asyncio.sleep(0)  # let the reader block on the empty buffer
    assert not reader.done()
    stream.publish("x")
    assert await reader == "x"


async def test_close_with_error_raises_after_buffered_events() -> None:
    stream = make_stream()
    sub = stream.subscribe(10)
    stream.publish("x")
    stream.close(RuntimeError("boom"))
    assert await sub.get(timeout=1) == "x"
    with pytest.raises(RuntimeError, match="boom"):
        await sub.get(timeout=1)
    # A subscription made after the end ends at once, the same way.
    with pytest.raises(RuntimeError, match="boom"):
        await stream.subscribe(10).get(timeout=1)


async def test_aclose_ends_iteration_and_drops_buffer() -> None:
    stream = make_stream()
    sub = stream.subscribe(10)
    stream.publish("x")
    async with sub:
        pass
    stream.publish("y")
    assert await drain(sub) == []


async def test_dropped_subscription_is_unsubscribed() -> None:
    stream = make_stream()
    stream.subscribe(10)
    gc.collect()
    assert stream.subscribers == 0
    kept = stream.subscribe(10)
    assert stream.subscribers == 1
    assert kept.pending == 0


async def test_get_timeout_consumes_nothing() -> None:
    stream = make_stream()
    sub = stream.subscribe(10)
    with pytest.raises(asyncio.TimeoutError):
        await sub.get(timeout=0.01)
    stream.publish("late")
    assert await sub.get(timeout=1) == "late"


def test_node_event_name_is_last_segment() -> None:
    assert NodeEvent(CacheEventType.CHILD_ADDED, "/a/b/c").name == "c"
    assert NodeEvent(CacheEventType.INITIALIZED, "/").name == ""
