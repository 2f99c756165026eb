"""Semaphore, LeaderLatch, Election and SharedCount share their nodes with Apache Curator
itself, on each version of support.CURATOR_VERSIONS: a Java program
(tests/integration/java/CuratorRecipesPeer.java) holds InterProcessSemaphoreV2 leases,
LeaderLatch and LeaderSelector terms and compare-and-sets a SharedCount on the paths our
recipes use. Each side counts the other's leases, waits behind the other's leader and is
let through by its going, and reads and refuses the other's writes."""

from __future__ import annotations

import asyncio

import pytest
from support import Factory, ask_running_peer, java_line, tell_running_peer

import aiocoord
from aiocoord import Election, LeaderLatch, Semaphore, SharedCount, VersionedValue


async def test_semaphore_leases_count_across_curator_and_us(
    zk_connect: Factory, curator_process: asyncio.subprocess.Process
) -> None:
    a, b = await zk_connect(), await zk_connect()
    ours, other = Semaphore(a, "/sem", 2), Semaphore(b, "/sem", 2)
    (first,) = await ours.acquire()
    assert await ask_running_peer(curator_process, "semaphore /sem 2") == "ok"
    assert await ask_running_peer(curator_process, "acquire 20000") == "lease"
    # Two leases out, one ours and one Curator's: neither side gets a third.
    with pytest.raises(aiocoord.TimeoutError):
        await other.acquire(timeout=0.5)
    assert await ask_running_peer(curator_process, "acquire 300") == "none"
    # Curator's lease returned lets our waiter through, and ours lets Curator's.
    waiting = asyncio.create_task(other.acquire())
    assert await ask_running_peer(curator_process, "return") == "returned"
    (second,) = await asyncio.wait_for(waiting, 20)
    await tell_running_peer(curator_process, "acquire 20000")  # waits: both leases are ours
    await first.release()
    assert await java_line(curator_process, 30) == "lease"
    assert await ask_running_peer(curator_process, "return") == "returned"
    await second.release()


async def test_a_leader_latch_hands_over_between_curator_and_us(
    zk_connect: Factory, curator_process: asyncio.subprocess.Process
) -> None:
    a, b = await zk_connect(), await zk_connect()
    ours = LeaderLatch(a, "/latch", identifier="py-first")
    await ours.start()
    assert await ours.wait_until_leader(20)
    assert await ask_running_peer(curator_process, "latch /latch java") == "ok"
    assert await ask_running_peer(curator_process, "latch-await 300") == "leader false"
    # Each reads the other's identifier in the other's node.
    assert await ask_running_peer(curator_process, "latch-leader") == "leader-id py-first"
    assert [(p.identifier, p.holds) for p in await ours.participants()] == [
        ("py-first", True),
        ("java", False),
    ]
    await ours.close()
    assert await ask_running_peer(curator_process, "latch-await 20000") == "leader true"
    async with LeaderLatch(b, "/latch", identifier="py-second") as second:
        with pytest.raises(aiocoord.TimeoutError):
            await second.wait_until_leader(0.5)
        leader = await second.leader()
        assert leader is not None and leader.identifier == "java"
        assert await ask_running_peer(curator_process, "latch-close") == "closed"
        assert await second.wait_until_leader(20)


async def test_an_election_hands_over_between_curator_and_us(
    zk_connect: Factory, curator_process: asyncio.subprocess.Process
) -> None:
    a, b = await zk_connect(), await zk_connect()
    ours = Election(a, "/elect", identifier="py-first")
    async with ours.leadership(timeout=20):
        assert await ask_running_peer(curator_process, "select /elect java") == "ok"
        assert await ask_running_peer(curator_process, "selector-leader") == "leader-id py-first"
    # Our term's end lets Curator's LeaderSelector lead.
    assert await java_line(curator_process, 20) == "leading"
    other = Election(b, "/elect", identifier="py-second")
    with pytest.raises(aiocoord.TimeoutError):
        async with other.leadership(timeout=0.5):
            pass
    leader = await other.leader()
    assert leader is not None and leader.identifier == "java"

    async def lead() -> list[tuple[str, bool]]:
        async with other.leadership(timeout=20):
            return [(p.identifier, p.holds) for p in await other.contenders()]

    # Curator's term's end lets ours lead (its selector does not join again).
    leading = asyncio.create_task(lead())
    assert await ask_running_peer(curator_process, "resign") == "resigned"
    assert await asyncio.wait_for(leading, 30) == [("py-second", True)]


async def test_a_shared_count_is_compare_and_set_with_curator(
    zk_connect: Factory, curator_process: asyncio.subprocess.Process
) -> None:
    client = await zk_connect()
    async with SharedCount(client, "/count", 5) as ours:
        # Curator reads our seed (not its own) and we read its writes, negative ones too.
        assert await ask_running_peer(curator_process, "count /count 0") == "count 5 0"
        assert await ask_running_peer(curator_process, "count-snapshot") == "count 5 0"
        assert await ours.try_set(7, 0)
        assert await ask_running_peer(curator_process, "count-await 7 20000") == "count 7 1"
        # Curator's compare-and-set on the version it saw before ours is refused, and ours
        # on a version before Curator's.
        assert await ask_running_peer(curator_process, "count-try 9") == "set false"
        assert await ask_running_peer(curator_process, "count-snapshot") == "count 7 1"
        assert await ask_running_peer(curator_process, "count-try 9") == "set true"
        assert await ours.wait_for(lambda v: v == 9, timeout=20) == VersionedValue(9, 2)
        assert not await ours.try_set(11, 1)
        assert await ask_running_peer(curator_process, "count-set -3") == "ok"
        assert (await ours.wait_for(lambda v: v == -3, timeout=20)).version == 3
