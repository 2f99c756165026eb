"""DistributedAtomicValue: Curator's layout (the data as written), compare-and-set, the
optimistic and promoted phases (the mutex is really held, given up after its timeout, left
behind by no cancelled change), exactly once under lost replies, and AtomicCounter on its
promoted mode under contention."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory

from aiocoord import AtomicCounter, DistributedAtomicValue, Lock, NoRetry, RetryNTimes
from aiocoord._wire.opcodes import Op
from aiocoord.errors import BadArgumentsError, InvalidTypeError, NoNodeError
from aiocoord.recipes.atomic_value import PromotedToLock
from aiocoord.testing import FaultProxy

#: The failure-semantics rows of docs/recipes/atomic-value.md with the tests that hold each
#: under the fault it names (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/atomic-value.md | Failure semantics | Connection lost (SUSPENDED)": [
        "test_a_try_set_whose_reply_is_lost_is_applied_once",
        "test_counter_faults.py::"
        "test_concurrent_increments_are_exact_under_dropped_connections_and_lost_replies",
    ],
    "recipes/atomic-value.md | Failure semantics | Session expired (LOST)": [
        "test_counter_faults.py::test_an_increment_whose_reply_is_lost_before_an_expiry_is_a_connection_loss",
    ],
    "recipes/atomic-value.md | Failure semantics | Cancellation": [
        "test_a_change_cancelled_while_waiting_for_the_mutex_leaves_no_lock_node",
    ],
    "recipes/atomic-value.md | Failure semantics | Timeout": [
        "test_the_promoted_phase_fails_when_the_mutex_is_not_had_in_time",
        "test_counter.py::test_gives_up_with_succeeded_false_when_retries_run_out",
    ],
    "recipes/atomic-value.md | Failure semantics | Hostile or foreign node data": [
        "test_any_bytes_are_a_value_and_bad_input_is_refused_before_anything_is_sent",
    ],
}


class InterferedValue(DistributedAtomicValue):
    """A value whose first ``interfere`` reads are each followed by another client's write;
    each read also records the lock nodes present at ``lock_path``."""

    other: DistributedAtomicValue
    interfere = 1
    lock_path = "/lock"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.locks_seen: list[list[str]] = []

    async def read(self) -> tuple[bytes | None, int]:
        read = await super().read()
        try:
            names = await self.client.children(self.lock_path)
        except NoNodeError:
            names = []  # the mutex's container, emptied and reaped by the server: no node
        self.locks_seen.append(names)
        if self.interfere > 0:
            self.interfere -= 1
            await self.other.force_set(b"other-%d" % len(self.locks_seen))
        return read


async def test_try_set_creates_the_node_then_writes_on_the_version_read(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    async with DistributedAtomicValue(client, "/values/v") as value:
        assert await value.get() is None
        first = await value.try_set(b"a")
        assert (first.succeeded, first.pre_value, first.post_value) == (True, None, b"a")
        second = await value.try_set(b"b")
        assert (second.succeeded, second.pre_value, second.post_value) == (True, b"a", b"b")
        assert (second.stats.optimistic_tries, second.stats.promoted_lock_tries) == (1, 0)
    data, stat = await client.get("/values/v")
    assert (data, stat.version) == (b"b", 1)  # Curator's layout: the bytes as written
    assert await client.children("/values/v") == []  # close() took the markers


async def test_compare_and_set_matches_the_bytes_and_never_a_missing_node(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    async with DistributedAtomicValue(client, "/cas") as value:
        missing = await value.compare_and_set(b"", b"x")
        assert (missing.succeeded, missing.pre_value) == (False, None)
        assert await client.exists("/cas") is None
        assert await value.initialize(b"x")
        assert not await value.initialize(b"y")
        wrong = await value.compare_and_set(b"y", b"z")
        assert (wrong.succeeded, wrong.pre_value, wrong.post_value) == (False, b"x", b"z")
        right = await value.compare_and_set(b"x", b"z")
        assert (right.succeeded, right.pre_value, right.post_value) == (True, b"x", b"z")
        assert await value.get() == b"z"
        await value.force_set(b"forced")
        assert await value.get() == b"forced"
    async with DistributedAtomicValue(client, "/deep/er/node") as deep:
        await deep.force_set(b"made")  # parents as containers, as Curator's
        assert (await client.get("/deep/er/node"))[0] == b"made"


async def test_the_promoted_phase_gets_a_change_through_under_the_mutex(
    zk_connect: Factory,
) -> None:
    client, other = await zk_connect(), await zk_connect()
    await client.ensure_path("/lock")
    value = InterferedValue(
        client, "/promoted", retry=NoRetry(), promoted_to_lock=PromotedToLock("/lock")
    )
    value.other = DistributedAtomicValue(other, "/promoted")
    await value.force_set(b"start")
    result = await value.try_set(b"mine")
    assert result.succeeded and result.post_value == b"mine"
    assert result.pre_value == b"other-1"  # the second read saw the interfering write
    assert (result.stats.optimistic_tries, result.stats.promoted_lock_tries) == (1, 1)
    assert result.attempts == 2
    assert result.stats.promoted_time > 0
    # No lock node at the optimistic read, this client's mutex node at the promoted one.
    assert value.locks_seen[0] == []
    assert len(value.locks_seen[1]) == 1 and value.locks_seen[1][0].startswith("_c_")
    assert value.locks_seen[1][0].split("-")[-2] == "lock"
    assert await client.children("/lock") == []  # released
    assert await value.get() == b"mine"
    await value.close()


async def test_the_promoted_phase_fails_when_the_mutex_is_not_had_in_time(
    zk_connect: Factory,
) -> None:
    client, other, holder_client = await zk_connect(), await zk_connect(), await zk_connect()
    holder = Lock(holder_client, "/lock")
    await holder.acquire()
    value = InterferedValue(
        client,
        "/held",
        retry=NoRetry(),
        promoted_to_lock=PromotedToLock("/lock", timeout=0.3),
    )
    value.other = DistributedAtomicValue(other, "/held")
    await value.force_set(b"start")
    result = await value.try_set(b"mine")
    assert not result.succeeded
    assert (result.stats.optimistic_tries, result.stats.promoted_lock_tries) == (1, 0)
    assert result.stats.promoted_time >= 0.3
    assert await value.get() == b"other-1"  # nothing written
    assert len(await client.children("/lock")) == 1  # the holder's node only
    await holder.release()
    await value.close()


async def test_a_change_cancelled_while_waiting_for_the_mutex_leaves_no_lock_node(
    zk_connect: Factory,
) -> None:
    client, other, holder_client = await zk_connect(), await zk_connect(), await zk_connect()
    holder = Lock(holder_client, "/lock")
    await holder.acquire()
    value = InterferedValue(
        client, "/waits", retry=NoRetry(), promoted_to_lock=PromotedToLock("/lock")
    )
    value.other = DistributedAtomicValue(other, "/waits")
    changing = asyncio.ensure_future(value.try_set(b"mine"))
    while True:  # until the change's mutex node is queued behind the holder's
        names, watch = await client.children("/lock", watch=True)
        if len(names) == 2:
            watch.cancel()
            break
        await asyncio.wait_for(watch.wait(), 10)
    changing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await changing
    await client.wait_background()
    assert len(await holder_client.children("/lock")) == 1
    await holder.release()
    assert (await value.try_set(b"after")).succeeded  # the value works on
    await value.close()


async def test_a_try_set_whose_reply_is_lost_is_applied_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    async with DistributedAtomicValue(client, "/lossy") as value:
        await value.force_set(b"a")
        lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
        # A plain retry would meet its own write's version and write again.
        result = await value.try_set(b"b")
        await lost.wait(5)
        assert result.succeeded and result.attempts == 1
        data, stat = await observer.get("/lossy")
        assert (data, stat.version) == (b"b", 1)
    await client.close()


async def test_any_bytes_are_a_value_and_bad_input_is_refused_before_anything_is_sent(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    hostile = bytes(range(256)) * 4
    await client.create("/foreign", hostile)
    async with DistributedAtomicValue(client, "/foreign") as value:
        assert await value.get() == hostile
        result = await value.compare_and_set(hostile, b"")
        assert result.succeeded and await value.get() == b""
        with pytest.raises(InvalidTypeError):
            await value.try_set("text")  # type: ignore[arg-type]
        with pytest.raises(InvalidTypeError):
            await value.compare_and_set(None, b"x")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        DistributedAtomicValue(client, "/v", retry=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        DistributedAtomicValue(client, "/v", promoted_to_lock="/lock")  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        PromotedToLock("/lock", timeout=-1)
    with pytest.raises(BadArgumentsError):
        DistributedAtomicValue(client, "/")
    assert (await client.get("/foreign"))[1].version == 1


async def test_promoted_counters_under_contention_lose_no_update(zk_connect: Factory) -> None:
    clients = [await zk_connect() for _ in range(6)]
    promoted = PromotedToLock("/counter-lock", retry=RetryNTimes(100, 0.005))
    counters = [
        AtomicCounter(c, "/contended", retry=NoRetry(), promoted_to_lock=promoted) for c in clients
    ]
    await counters[0].force_set(0)

    async def worker(counter: AtomicCounter) -> list[Any]:
        return [await counter.increment() for _ in range(30)]

    results = [r for rs in await asyncio.gather(*(worker(c) for c in counters)) for r in rs]
    done = [r for r in results if r.succeeded]
    assert await counters[0].get() == len(done)
    assert sorted(r.post_value for r in done) == list(range(1, len(done) + 1))
    # Contention sent changes to the promoted phase, and the mutex got them through.
    assert sum(r.stats.promoted_lock_tries for r in results) > 0
    assert len(done) == len(results)
    for counter in counters:
        await counter.close()
