"""QueueSharder: Curator's layout (a container of ``queue-<uuid>`` shards, each a Queue), the
leader adding shards at the threshold up to max_queues, followers adopting them, puts going to
preferred shards, gets taking from any shard and waiting across them, the owned check task,
and the failure semantics of docs/recipes/queue-sharder.md."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import Any

import pytest
from support import Factory

from aiocoord import Queue, QueueSharder, QueueSharderPolicies
from aiocoord.errors import CoordinationError, NoNodeError
from aiocoord.errors import TimeoutError as CoordTimeoutError
from aiocoord.recipes.queue import frame
from aiocoord.testing import FaultProxy, expire_client

#: The failure-semantics rows of docs/recipes/queue-sharder.md with the tests that hold each
#: under the fault it names (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/queue-sharder.md | Failure semantics | Connection lost (SUSPENDED)": [
        "test_a_get_waiting_across_a_dropped_connection_takes_the_next_item",
        "test_a_leader_cut_off_stops_leading_and_adds_a_shard_once_it_leads_again",
        "test_queue.py::test_put_and_claim_whose_replies_are_lost_happen_exactly_once",
    ],
    "recipes/queue-sharder.md | Failure semantics | Session expired (LOST)": [
        "test_a_get_waiting_across_an_expiry_takes_the_next_item_and_leadership_returns",
    ],
    "recipes/queue-sharder.md | Failure semantics | Cancellation": [
        "test_a_cancelled_get_loses_no_item",
    ],
    "recipes/queue-sharder.md | Failure semantics | Timeout": [
        "test_get_times_out_on_empty_shards",
    ],
    "recipes/queue-sharder.md | Failure semantics | Hostile or foreign node data": [
        "test_a_foreign_child_is_a_shard_as_for_curator_and_raw_items_come_out_raw",
        "test_a_get_waits_through_its_path_being_deleted_and_made_again",
        "unit/test_queue_sharder_decision.py::"
        "test_policies_default_to_curators_and_refuse_what_curator_refuses",
    ],
}

SHARD = re.compile(r"^queue-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: A check only when a test asks for one (check()), unless it says otherwise.
MANUAL = QueueSharderPolicies(new_queue_threshold=3, threshold_check_interval=3600, max_queues=3)


async def _children_count(client: Any, path: str, count: int) -> list[str]:
    """Wait (on watches) until ``path`` has ``count`` children; the names."""
    while True:
        names, watch = await client.children(path, watch=True)
        if len(names) >= count:
            watch.cancel()
            return sorted(names)
        await asyncio.wait_for(watch.wait(), 10)


async def test_start_makes_a_first_shard_of_curators_queue(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    async with QueueSharder(client, "/jobs", "/jobs-leader", policies=MANUAL) as sharder:
        assert sharder.latch.path == "/jobs-leader"
        (name,) = await client.children("/jobs")
        assert SHARD.match(name)
        assert sharder.shard_paths == {f"/jobs/{name}"} and sharder.shard_count == 1
        await sharder.put(b"one")
        await sharder.put_all([b"two", b"three"])
        items = sorted(n for n in await client.children(f"/jobs/{name}") if n.startswith("queue-"))
        assert len(items) == 2
        assert (await client.get(f"/jobs/{name}/{items[0]}"))[0] == frame([b"one"])
        assert [await sharder.get(timeout=5) for _ in range(3)] == [b"one", b"two", b"three"]
    with pytest.raises(CoordinationError, match="closed"):
        sharder.queue()


async def test_the_leader_adds_shards_at_the_threshold_up_to_max_queues(
    zk_connect: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    client, other = await zk_connect(), await zk_connect()
    async with QueueSharder(client, "/q", "/q-leader", policies=MANUAL) as leader:
        assert await leader.latch.wait_until_leader(10)
        follower = QueueSharder(other, "/q", "/q-leader", policies=MANUAL)
        await follower.start()
        (first,) = leader.shard_paths
        assert follower.shard_paths == {first}
        for i in range(3):
            await leader.put(b"%d" % i)
        await follower.check()  # at the threshold, but a follower adds nothing
        assert follower.shard_count == 1 and follower.preferred_paths == frozenset()
        await leader.check()
        assert leader.shard_count == 2
        (second,) = leader.shard_paths - {first}
        assert leader.preferred_paths == {second}  # the full shard takes no more puts
        assert leader.queue().path == second
        for i in range(3):
            await leader.put(b"%d" % i)
        await leader.check()
        assert leader.shard_count == 3
        await follower.check()  # adopts what the leader added
        assert follower.shard_paths == leader.shard_paths
        (third,) = leader.shard_paths - {first, second}
        await Queue(other, third).put_all([b"a"])
        for i in range(2):
            await Queue(other, third).put(b"%d" % i)
        with caplog.at_level(logging.WARNING, logger="aiocoord.recipes.queue_sharder"):
            await leader.check()
        assert leader.shard_count == 3  # max_queues
        assert "max of 3 shards" in caplog.text
        assert len(await client.children("/q")) == 3
        await follower.close()


async def test_the_check_task_adds_a_shard_by_itself_and_ends_with_the_sharder(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    policies = QueueSharderPolicies(new_queue_threshold=2, threshold_check_interval=0.05)
    sharder = QueueSharder(client, "/auto", "/auto-leader", policies=policies)
    await sharder.start()
    assert await sharder.latch.wait_until_leader(10)
    await sharder.put(b"x")
    await sharder.put(b"y")
    assert len(await _children_count(client, "/auto", 2)) == 2
    task = sharder._task
    assert task is not None and not task.done()
    await sharder.close()
    assert task.done()
    # Left the election (the leader path is a container: it may be gone too).
    with contextlib.suppress(NoNodeError):
        assert await client.children("/auto-leader") == []


async def test_get_takes_from_any_shard_and_waits_for_shards_added_meanwhile(
    zk_connect: Factory,
) -> None:
    client, other = await zk_connect(), await zk_connect()
    async with QueueSharder(client, "/w", "/w-leader", policies=MANUAL) as sharder:
        waiting = asyncio.ensure_future(sharder.get(timeout=20))
        # Another client adds a shard the waiter does not know yet, then an item in it.
        await other.create("/w/queue-00000000-0000-0000-0000-000000000001")
        await Queue(other, "/w/queue-00000000-0000-0000-0000-000000000001").put(b"late")
        assert await waiting == b"late"
        assert sharder.shard_count == 2  # adopted while waiting


async def test_get_times_out_on_empty_shards(zk_connect: Factory) -> None:
    client = await zk_connect()
    async with QueueSharder(client, "/empty", "/empty-leader", policies=MANUAL) as sharder:
        with pytest.raises(CoordTimeoutError):
            await sharder.get(timeout=0.2)
        with pytest.raises(asyncio.TimeoutError):  # aiocoord.TimeoutError is the builtin too
            await sharder.get(timeout=0)


async def test_a_cancelled_get_loses_no_item(zk_connect: Factory) -> None:
    client, other = await zk_connect(), await zk_connect()
    async with QueueSharder(client, "/c", "/c-leader", policies=MANUAL) as sharder:
        waiting = asyncio.ensure_future(sharder.get())
        await client.exists("/c")  # a round trip: the get has listed the shards by now
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        (shard,) = sharder.shard_paths
        await Queue(other, shard).put(b"kept")
        assert await sharder.get(timeout=10) == b"kept"


async def test_a_get_waiting_across_a_dropped_connection_takes_the_next_item(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    other = await zk_connect()
    async with QueueSharder(client, "/d", "/d-leader", policies=MANUAL) as sharder:
        (shard,) = sharder.shard_paths
        waiting = asyncio.ensure_future(sharder.get(timeout=20))
        await client.exists("/d")  # a round trip: the get has listed the shards by now
        zk_fault_proxy.drop()
        await Queue(other, shard).put(b"after the drop")
        assert await waiting == b"after the drop"
    await client.close()


async def test_a_get_waiting_across_an_expiry_takes_the_next_item_and_leadership_returns(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, other = await zk_connect(), await zk_connect()
    async with QueueSharder(client, "/e", "/e-leader", policies=MANUAL) as sharder:
        assert await sharder.latch.wait_until_leader(10)
        (shard,) = sharder.shard_paths
        waiting = asyncio.ensure_future(sharder.get(timeout=30))
        await expire_client(client, zookeeper.connect_string)
        await Queue(other, shard).put(b"after the expiry")
        assert await waiting == b"after the expiry"
        assert await sharder.latch.wait_until_leader(10)  # the latch joins again


async def test_a_foreign_child_is_a_shard_as_for_curator_and_raw_items_come_out_raw(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    await client.create("/f/junk/queue-0000000000", b"\xff not framed", make_parents=True)
    async with QueueSharder(client, "/f", "/f-leader", policies=MANUAL) as sharder:
        assert sharder.shard_paths == {"/f/junk"}  # a child is a shard: Curator's rule
        assert await sharder.get(timeout=5) == b"\xff not framed"


async def test_a_leader_cut_off_stops_leading_and_adds_a_shard_once_it_leads_again(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    other = await zk_connect()
    async with QueueSharder(client, "/s", "/s-leader", policies=MANUAL) as sharder:
        assert await sharder.latch.wait_until_leader(10)
        changes = sharder.latch.changes()
        (shard,) = sharder.shard_paths
        for i in range(3):
            await Queue(other, shard).put(b"%d" % i)
        zk_fault_proxy.hold_new_connections()
        zk_fault_proxy.drop()
        change = await changes.get(timeout=10)
        assert (change.is_leader, change.reason) == (False, "suspended")
        assert not sharder.latch.is_leader  # a check now would add no shard
        zk_fault_proxy.hold_new_connections(False)
        assert await sharder.latch.wait_until_leader(10)
        await sharder.check()
        assert sharder.shard_count == 2
        assert len(await other.children("/s")) == 2
        await changes.aclose()
    await client.close()


async def test_a_get_waits_through_its_path_being_deleted_and_made_again(
    zk_connect: Factory,
) -> None:
    client, other = await zk_connect(), await zk_connect()
    async with QueueSharder(client, "/gone", "/gone-leader", policies=MANUAL) as sharder:
        (shard,) = sharder.shard_paths
        await other.delete(shard)
        # As the server does to an emptied container (its reaper may have been first).
        with contextlib.suppress(NoNodeError):
            await other.delete("/gone")
        waiting = asyncio.ensure_future(sharder.get(timeout=20))
        await client.exists("/gone")  # a round trip: the get has listed the shards by now
        await Queue(other, shard).put(b"back")  # makes the path and the shard again
        assert await waiting == b"back"
