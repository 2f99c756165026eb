"""Our Lock and Curator 5's InterProcessMutex in one queue: a Java program
(tests/integration/java/CuratorLockPeer.java, on each Curator version of
support.CURATOR_VERSIONS) runs InterProcessMutex contenders on the path our
Locks contend for, at the same time. Our waiters watch the nodes ahead of theirs, Curator's or
ours, two deep (the look-ahead); Curator's waiters see our nodes as their own. Each holder, of
either side, proves it holds alone by creating one ephemeral node and deleting it before it
releases: two holders at once would meet NodeExists. Some of ours give up after a few
milliseconds, so nodes also leave the queue ungranted."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from support import Factory, JavaPeers, java_line, start_java_peer

import aiocoord
from aiocoord import Lock
from aiocoord.errors import NodeExistsError, NoNodeError

JAVA_THREADS, PY_CLIENTS, QUITTERS, ROUNDS = 4, 4, 2, 30


@pytest.fixture
def peer_command(curator_peers: JavaPeers) -> list[str]:
    """The peer's command, on each Curator version."""
    return curator_peers.command("CuratorLockPeer")


async def test_our_locks_and_curators_mutexes_share_one_queue_one_holder_at_a_time(
    zk_connect: Factory, zookeeper: Any, zk_namespace: str, peer_command: list[str]
) -> None:
    clients = [await zk_connect() for _ in range(PY_CLIENTS)]
    locks = [Lock(c, "/shared") for c in clients]
    java = await start_java_peer(
        peer_command,
        zookeeper.connect_string + zk_namespace,
        "/shared",
        "/holder",
        str(JAVA_THREADS),
        str(ROUNDS),
    )
    # Contenders that give up after a few milliseconds, mostly while queued: their nodes go
    # without being granted, so a waiter must never take a node's going for a grant.
    quitters = [await zk_connect() for _ in range(QUITTERS)]
    done = asyncio.Event()
    violations = 0

    async def give_up(lock: Lock) -> int:
        nonlocal violations
        n = 0
        while not done.is_set():
            try:
                await lock.acquire(timeout=0.003)
            except aiocoord.TimeoutError:
                n += 1
                continue
            try:
                await lock.client.create("/holder", ephemeral=True)
                await lock.client.delete("/holder")
            except NodeExistsError:
                violations += 1
            finally:
                await lock.release()
        return n

    async def contend(lock: Lock) -> int:
        nonlocal violations
        client = lock.client
        for _ in range(ROUNDS):
            async with lock:
                try:
                    await client.create("/holder", ephemeral=True)
                    await client.delete("/holder")
                except NodeExistsError:
                    violations += 1
        return ROUNDS

    try:
        assert await java_line(java) == "ready"
        assert java.stdin is not None
        java.stdin.write(b"go\n")
        await java.stdin.drain()
        impatient = [asyncio.create_task(give_up(Lock(c, "/shared"))) for c in quitters]
        ours = await asyncio.wait_for(asyncio.gather(*(contend(lock) for lock in locks)), 120)
        done.set()
        gave_up = sum(await asyncio.gather(*impatient))
        lines = [await java_line(java, 120) for _ in range(3)]
        assert await asyncio.wait_for(java.wait(), 60) == 0
    finally:
        if java.returncode is None:
            java.kill()
            await java.wait()
    report = dict(line.split(" ", 1) for line in lines)
    # Every acquisition of both sides was granted, each alone.
    assert sum(ours) == PY_CLIENTS * ROUNDS
    assert int(report["acquired"]) == JAVA_THREADS * ROUNDS
    assert violations == 0
    assert int(report["violations"]) == 0
    # They did contend: our waiters queued behind others (Curator's among them), and nodes
    # went from the queue ungranted.
    assert sum(c.stats().recipes["lock"].waits for c in clients) > 0
    assert gave_up > 0
    with contextlib.suppress(NoNodeError):  # nothing left behind (the container may be gone)
        assert await clients[0].children("/shared") == []
