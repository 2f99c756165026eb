"""The issue-18 recipes share their nodes with Apache Curator 5 itself, on each version of
support.CURATOR_VERSIONS: a Java program (tests/integration/java/CuratorQueuesPeer.java)
takes what aiocoord put in a SimpleQueue, DelayQueue, IdQueue and SharedValue, and aiocoord
takes what it puts back; a Curator PersistentTtlNode on the path of one of ours shares its
``touch`` child."""

from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any

import pytest
from support import Factory, JavaPeers

from aiocoord import DelayQueue, IdQueue, PersistentTtlNode, SharedValue, SimpleQueue


@pytest.fixture
def peer_command(curator_peers: JavaPeers) -> list[str]:
    """The peer's command, on each Curator version."""
    return curator_peers.command("CuratorQueuesPeer")


async def test_curator_takes_what_aiocoord_put_and_the_other_way_round(
    zk_connect: Factory, zookeeper: Any, zk_namespace: str, peer_command: list[str]
) -> None:
    client = await zk_connect()
    simple = SimpleQueue(client, "/simple")
    delay = DelayQueue(client, "/delay")
    ids = IdQueue(client, "/ids")
    shared = SharedValue(client, "/shared", b"from-python")
    await simple.offer(b"from-python")
    # Due after Curator's consumer first looks (its JVM starts in well under 3 s): it must
    # wait for the item's time. Our put's marker node in the queue path once hid that time
    # from it (a foreign node sorted first, with no time: it waited for a change instead).
    await delay.put(b"from-python", int(time.time() * 1000) + 3000)
    await ids.put(b"from-python", "python-id")
    await shared.start()
    ttl = PersistentTtlNode(client, "/ttl", ttl=5, data=b"python")
    await ttl.start()
    await ttl.wait_for_initial_create(10)

    java = await asyncio.to_thread(
        subprocess.run,
        [
            peer_command[0],
            "-Xmx256m",
            "-XX:+UseSerialGC",
            *peer_command[1:],
            zookeeper.connect_string + zk_namespace,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert java.returncode == 0, java.stderr[-3000:]
    assert java.stdout.splitlines() == [
        "simple: from-python",
        "delay: from-python",
        "ids removed: 1",
        "shared: from-python",  # our seed: Curator's start found the node there
        "shared set: true",
        "ttl created: true",
        "ttl children: [touch]",
    ]

    assert await simple.take(timeout=10) == b"from-java"
    assert await delay.get(timeout=10) == b"from-java"
    assert await ids.ids() == ["python-id", "java-id"]
    assert [await ids.get(timeout=10), await ids.get(timeout=10)] == [b"from-python", b"from-java"]
    assert (await shared.wait_for(lambda v: v == b"from-java", timeout=10)).version == 1
    for recipe in (simple, delay, ids, shared, ttl):
        await recipe.close()
