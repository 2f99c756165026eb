"""The issue-18 recipes share their nodes with Apache Curator 5 itself: a Java program
(tests/integration/java/CuratorQueuesPeer.java, compiled here against the Curator jars of
/usr/share/java or ``$AIOCOORD_JAVA_LIBS``) takes what aiocoord put in a SimpleQueue,
DelayQueue, IdQueue and SharedValue, and aiocoord takes what it puts back; a Curator
PersistentTtlNode on the path of one of ours shares its ``touch`` child. Skipped where no
JDK or Curator jars are installed (``make bench-java`` installs them on Debian)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support import CURATOR_RECIPES_JARS, Factory

from aiocoord import DelayQueue, IdQueue, PersistentTtlNode, SharedValue, SimpleQueue

SOURCE = Path(__file__).resolve().parent / "java" / "CuratorQueuesPeer.java"
JAVA_DIR = Path(os.environ.get("AIOCOORD_JAVA_LIBS", "/usr/share/java"))
JARS = CURATOR_RECIPES_JARS


@pytest.fixture(scope="module")
def peer_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The compiled peer's classpath (the test is skipped without a JDK or the jars)."""
    missing = [jar for jar in JARS if not (JAVA_DIR / jar).exists()]
    if shutil.which("javac") is None or shutil.which("java") is None or missing:
        pytest.skip(f"needs a JDK and Curator's jars in {JAVA_DIR} (missing: {missing})")
    jars = os.pathsep.join(str(JAVA_DIR / jar) for jar in JARS)
    build = tmp_path_factory.mktemp("curator-peer")
    subprocess.run(
        ["javac", "-nowarn", "-cp", jars, "-d", str(build), str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return os.pathsep.join([str(build), jars])


async def test_curator_takes_what_aiocoord_put_and_the_other_way_round(
    zk_connect: Factory, zookeeper: Any, zk_namespace: str, peer_classpath: str
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
            "java",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-cp",
            peer_classpath,
            "CuratorQueuesPeer",
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
