"""DistributedAtomicValue, AtomicCounter (promoted mode) and QueueSharder share their nodes
with Apache Curator 5 itself, on each version of support.CURATOR_VERSIONS: a Java program
(tests/integration/java/CuratorAtomicShardPeer.java) compare-and-sets what aiocoord wrote and
the other way round, increments one promoted counter with aiocoord at the same time (same
node, same lock path: no update lost), and runs a QueueSharder on the shards aiocoord made
(items and shards both ways)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory, JavaPeers, java_line, start_java_peer

from aiocoord import (
    AtomicCounter,
    DistributedAtomicValue,
    NoRetry,
    QueueSharder,
    QueueSharderPolicies,
    RetryNTimes,
)
from aiocoord.errors import TimeoutError as CoordTimeoutError
from aiocoord.recipes.atomic_value import AtomicValue, PromotedToLock

#: Java's side of the contention (CuratorAtomicShardPeer's THREADS x INCREMENTS), and ours.
JAVA_INCREMENTS = 2 * 40
PY_CLIENTS, PY_INCREMENTS = 4, 40


@pytest.fixture
def peer_command(curator_peers: JavaPeers) -> list[str]:
    """The peer's command, on each Curator version."""
    return curator_peers.command("CuratorAtomicShardPeer")


async def test_atomic_values_and_a_promoted_counter_are_shared_with_curator(
    zk_connect: Factory, zookeeper: Any, zk_namespace: str, peer_command: list[str]
) -> None:
    client = await zk_connect()
    value = DistributedAtomicValue(client, "/value")
    assert await value.initialize(b"py-1")
    long = AtomicCounter(client, "/long")
    await long.force_set(41)
    promoted = PromotedToLock("/counter-lock", retry=RetryNTimes(100, 0.005))
    clients = [await zk_connect() for _ in range(PY_CLIENTS)]
    counters = [
        AtomicCounter(c, "/contended", retry=NoRetry(), promoted_to_lock=promoted) for c in clients
    ]
    await counters[0].force_set(0)

    java = await start_java_peer(peer_command, zookeeper.connect_string + zk_namespace, "atomic")
    try:
        # Curator reads ours, and compare-and-sets on it.
        assert [await java_line(java) for _ in range(5)] == [
            "value: py-1",
            "cas: true py-1 java-2",
            "cas stale: false",
            "long: true 41 -> 42",
            "ready",
        ]
        # Ours compare-and-sets on what Curator wrote.
        assert await value.get() == b"java-2"
        assert (await value.compare_and_set(b"py-1", b"no")).succeeded is False
        cas = await value.compare_and_set(b"java-2", b"py-3")
        assert (cas.succeeded, cas.pre_value) == (True, b"java-2")
        assert await long.get() == 42

        async def worker(counter: AtomicCounter) -> list[AtomicValue[int]]:
            return [await counter.increment() for _ in range(PY_INCREMENTS)]

        assert java.stdin is not None
        java.stdin.write(b"go\n")
        await java.stdin.drain()
        ours = [r for rs in await asyncio.gather(*(worker(c) for c in counters)) for r in rs]
        contended = await java_line(java)
        posts = await java_line(java)
        assert await asyncio.wait_for(java.wait(), 60) == 0
    finally:
        if java.returncode is None:
            java.kill()
            await java.wait()

    java_successes, java_promoted = (int(n) for n in contended.removeprefix("contended: ").split())
    java_posts = [int(p) for p in posts.removeprefix("posts: ").split(",") if p]
    our_posts = [r.post_value for r in ours if r.succeeded]
    total = java_successes + len(our_posts)
    assert len(java_posts) == java_successes
    # No update lost or doubled: the count is every success of both sides, each its own step.
    assert await counters[0].get() == total
    assert sorted(java_posts + our_posts) == list(range(1, total + 1))
    # Both sides went to the promoted phase (the shared mutex), and it got them through.
    assert java_promoted > 0
    assert sum(r.stats.promoted_lock_tries for r in ours) > 0
    assert total == JAVA_INCREMENTS + PY_CLIENTS * PY_INCREMENTS
    for counter in (*counters, long):
        await counter.close()
    await value.close()


async def test_a_queue_sharder_shares_items_and_shards_with_curator(
    zk_connect: Factory, zookeeper: Any, zk_namespace: str, peer_command: list[str]
) -> None:
    client = await zk_connect()
    policies = QueueSharderPolicies(new_queue_threshold=3, threshold_check_interval=3600)
    async with QueueSharder(client, "/sharded", "/sharded-leader", policies=policies) as ours:
        assert await ours.latch.wait_until_leader(10)
        for i in range(3):
            await ours.put(b"py-%d" % i)
        await ours.check()  # our leader adds the second shard
        assert ours.shard_count == 2
        python_shards = {p.rsplit("/", 1)[1] for p in ours.shard_paths}

    java = await start_java_peer(peer_command, zookeeper.connect_string + zk_namespace, "sharder")
    try:
        lines = [await java_line(java) for _ in range(4)]
        assert await asyncio.wait_for(java.wait(), 60) == 0
    finally:
        if java.returncode is None:
            java.kill()
            await java.wait()
    assert lines[0] == "initial shards: 2"  # ours, seen by Curator
    assert lines[1] == "took: py-0,py-1,py-2"  # our items, taken by Curator
    java_count = int(lines[2].removeprefix("shards after java: "))
    java_shards = set(lines[3].removeprefix("shard names: ").split(","))
    assert java_count >= 3 and len(java_shards) == java_count  # Curator's leader added some
    assert python_shards < java_shards

    async with QueueSharder(client, "/sharded", "/sharded-leader", policies=policies) as again:
        # The shards Curator added, seen by ours; its items, taken by ours.
        assert {p.rsplit("/", 1)[1] for p in again.shard_paths} == java_shards
        taken = sorted([(await again.get(timeout=10)).decode() for _ in range(6)])
        assert taken == [f"java-{i}" for i in range(6)]
        with pytest.raises(CoordTimeoutError):
            await again.get(timeout=0.2)
