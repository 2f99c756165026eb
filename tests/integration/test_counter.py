"""SharedCount and AtomicCounter against a real server: Curator's data layouts, compare-and-
set, change streams, retries, wrap-around, corrupted data, markers cleaned up."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from support import Factory

from aiocoord import DistributedAtomicValue, NoRetry, RetryNTimes, RetryPolicy, ValueChange
from aiocoord.recipes.counter import (
    AtomicCounter,
    CorruptedValueError,
    SharedCount,
    VersionedValue,
)

# --- SharedCount --------------------------------------------------------------------------


async def test_shared_count_seeds_a_4_byte_big_endian_node_once(zk_connect: Factory) -> None:
    client = await zk_connect()
    async with SharedCount(client, "/app/count", 7) as count:
        assert count.value == 7
        assert count.versioned == VersionedValue(7, 0)
    assert await client.get("/app/count") == (
        struct.pack(">i", 7),
        (await client.get("/app/count"))[1],
    )
    data, _ = await client.get("/app/count")
    assert data == b"\x00\x00\x00\x07"
    # A second start does not overwrite the value with its own seed.
    async with SharedCount(client, "/app/count", 99) as again:
        assert again.value == 7


async def test_try_set_is_a_compare_and_set_on_the_version(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    async with SharedCount(a, "/cas", 0) as mine, SharedCount(b, "/cas", 0) as theirs:
        seen = mine.versioned
        assert await mine.try_set(5, seen.version)
        assert mine.versioned == VersionedValue(5, 1)  # our own write shows at once
        # `theirs` read before our write: its compare-and-set fails.
        assert not await theirs.try_set(6, seen.version)
        await theirs.wait_for(lambda v: v == 5, timeout=5)
        assert await theirs.try_set(6, theirs.versioned.version)
        assert (await mine.wait_for(lambda v: v == 6, timeout=5)).version == 2
        await mine.set(-3)
        assert (await theirs.wait_for(lambda v: v == -3, timeout=5)).value == -3
        data, _ = await a.get("/cas")
        assert data == struct.pack(">i", -3)
    # try_set leaves no marker node behind once closed.
    assert await a.children("/cas") == []


async def test_shared_count_streams_its_changes_in_order(zk_connect: Factory) -> None:
    client, writer = await zk_connect(), await zk_connect()
    count = SharedCount(client, "/stream", 0)
    changes = count.changes()
    await count.start()
    first = await changes.get(5)
    assert first == ValueChange(0, 0)
    for i in range(1, 6):
        await writer.set("/stream", struct.pack(">i", i * 10))
        assert await changes.get(5) == ValueChange(i * 10, i)
    # Changes faster than a read may come out as one: the stream ends at the latest value.
    for i in range(6, 11):
        await writer.set("/stream", struct.pack(">i", i * 10))
    values = []
    while not values or values[-1] != 100:
        change = await changes.get(5)
        values.append(change.value)
    assert values == sorted(values)
    await writer.delete("/stream")
    assert await changes.get(5) == ValueChange(None, -1)
    await count.close()
    assert [c async for c in changes] == []


async def test_shared_count_refuses_data_of_another_width(zk_connect: Factory) -> None:
    client = await zk_connect()
    await client.create("/odd", b"\x01\x02")
    async with SharedCount(client, "/odd") as count:
        with pytest.raises(CorruptedValueError):
            _ = count.value


# --- AtomicCounter ----------------------------------------------------------------------


async def test_atomic_counter_layout_and_results(zk_connect: Factory) -> None:
    client = await zk_connect()
    async with AtomicCounter(client, "/atomic/n") as counter:
        assert await counter.get() == 0
        first = await counter.increment()
        assert (first.succeeded, first.pre_value, first.post_value) == (True, None, 1)
        data, _ = await client.get("/atomic/n")
        assert data == struct.pack(">q", 1)
        r = await counter.add(41)
        assert (r.pre_value, r.post_value) == (1, 42)
        r = await counter.subtract(2)
        assert (r.pre_value, r.post_value) == (42, 40)
        r = await counter.decrement()
        assert (r.pre_value, r.post_value) == (40, 39)
        assert await counter.get() == 39
        assert not (await counter.compare_and_set(1, 100)).succeeded
        r = await counter.compare_and_set(39, 100)
        assert (r.succeeded, r.pre_value, r.post_value) == (True, 39, 100)
        await counter.force_set(-5)
        assert await counter.get() == -5
        assert not await counter.initialize(8)
    assert await client.children("/atomic/n") == []  # markers deleted on close
    fresh = AtomicCounter(client, "/atomic/fresh")
    assert await fresh.initialize(8)
    assert await fresh.get() == 8


async def test_atomic_counter_wraps_around_like_a_java_long(zk_connect: Factory) -> None:
    client = await zk_connect()
    async with AtomicCounter(client, "/wrap") as counter:
        await counter.force_set(2**63 - 1)
        r = await counter.increment()
        assert r.post_value == -(2**63)


async def test_empty_data_reads_as_zero_and_other_widths_are_refused(zk_connect: Factory) -> None:
    client = await zk_connect()
    await client.create("/empty")
    assert await AtomicCounter(client, "/empty").get() == 0
    await client.create("/short", b"\x01\x02\x03\x04")
    with pytest.raises(CorruptedValueError):
        await AtomicCounter(client, "/short").increment()


class InterferedValue(DistributedAtomicValue):
    """A value that someone else always writes to between its read and its write."""

    other: AtomicCounter

    async def read(self) -> tuple[bytes | None, int]:
        read = await super().read()
        await self.other.increment()
        return read


def interfered(client: Any, other: AtomicCounter, retry: RetryPolicy) -> AtomicCounter:
    """An AtomicCounter on /race whose every read is followed by ``other``'s increment (the
    counter is DistributedAtomicValue's mechanism: the interference goes in there)."""
    counter = AtomicCounter(client, "/race", retry=retry)
    value = InterferedValue(client, "/race", retry=retry)
    value.other = other
    counter._value = value
    return counter


async def test_gives_up_with_succeeded_false_when_retries_run_out(zk_connect: Factory) -> None:
    client, other = await zk_connect(), await zk_connect()
    await AtomicCounter(client, "/race").force_set(10)
    watcher = AtomicCounter(other, "/race")
    counter = interfered(client, watcher, RetryNTimes(2, 0))
    r = await counter.add(100)
    assert (r.succeeded, r.attempts) == (False, 3)
    assert (r.stats.optimistic_tries, r.stats.promoted_lock_tries) == (3, 0)
    assert await watcher.get() == 13  # only the interfering increments got through
    once = interfered(client, watcher, NoRetry())
    assert (await once.increment()).attempts == 1


async def test_concurrent_increments_without_faults_are_exact(zk_connect: Factory) -> None:
    clients = [await zk_connect() for _ in range(4)]
    counters = [AtomicCounter(c, "/many", retry=RetryNTimes(1000, 0.001)) for c in clients]
    results = await asyncio.gather(*(c.increment() for c in counters for _ in range(25)))
    assert all(r.succeeded for r in results)
    assert sorted(r.post_value for r in results) == list(range(1, 101))
    assert await counters[0].get() == 100
