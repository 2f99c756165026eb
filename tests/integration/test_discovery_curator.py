"""Service discovery with Apache Curator itself on the other side: Curator 5.x's
ServiceDiscovery (tests/integration/java/DiscoveryPeer.java, run on the OS's Curator jars)
registers an instance that aiocoord finds, and finds the one aiocoord registers.

Needs a JDK and the Curator 5 jars (Debian: libcurator-discovery-java default-jdk-headless;
``AIOCOORD_JAVA_LIBS`` names another folder); skipped without them. The byte-for-byte format
is tested without Java in test_discovery.py."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import Factory

from aiocoord import CacheEventType, ServiceDiscovery, ServiceInstance, ServiceType

LIBS = Path(os.environ.get("AIOCOORD_JAVA_LIBS", "/usr/share/java"))
JARS = [
    "curator-x-discovery",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-nop",
    "jackson-annotations",
    "jackson-core",
    "jackson-databind",
]
SOURCE = Path(__file__).parent / "java" / "DiscoveryPeer.java"


@pytest.fixture(scope="module")
def curator_peer(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that runs the compiled peer (skips the module without Java or jars)."""
    missing = [jar for jar in JARS if not (LIBS / f"{jar}.jar").exists()]
    if shutil.which("javac") is None or shutil.which("java") is None or missing:
        pytest.skip(f"needs a JDK and Curator 5's jars in {LIBS} (missing: {missing or 'javac'})")
    classpath = ":".join(str(LIBS / f"{jar}.jar") for jar in JARS)
    out = tmp_path_factory.mktemp("curator-peer")
    subprocess.run(
        ["javac", "-d", str(out), "-cp", classpath, str(SOURCE)], check=True, timeout=120
    )
    return ["java", "-cp", f"{classpath}:{out}", "DiscoveryPeer"]


async def test_curator_and_aiocoord_find_each_others_instances(
    curator_peer: list[str], zookeeper: Any, zk_namespace: str, zk_connect: Factory
) -> None:
    client = await zk_connect()
    peer = await asyncio.create_subprocess_exec(
        *curator_peer,
        zookeeper.connect_string + zk_namespace,
        "/services",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert peer.stdin is not None and peer.stdout is not None
    try:
        assert await asyncio.wait_for(peer.stdout.readline(), 60) == b"REGISTERED\n"
        async with ServiceDiscovery(client, "/services") as discovery:
            [java] = await discovery.instances("api")
            assert (java.id, java.address, java.port, java.ssl_port) == (
                "java-1",
                "10.0.0.7",
                8080,
                8443,
            )
            # Curator's Jackson gives the map payload its class as a type hint.
            assert java.payload == {"@class": "java.util.HashMap", "lang": "java"}
            assert (java.service_type, java.enabled) == (ServiceType.DYNAMIC, True)
            assert java.build_uri_spec() == "https://10.0.0.7:8443"

            cache = discovery.cache("api")
            changes = cache.changes()
            async with cache:
                mine = ServiceInstance.build(
                    "api",
                    id="py-1",
                    address="10.0.0.8",
                    port=9090,
                    payload={"@class": "java.util.HashMap", "lang": "python"},
                    service_type=ServiceType.STATIC,
                    enabled=False,
                    uri_spec="{scheme}://{address}:{port}",
                )
                await discovery.register(mine, timeout=10)
                peer.stdin.write(b"go\n")
                await peer.stdin.drain()
                seen = []
                while (line := await asyncio.wait_for(peer.stdout.readline(), 60)) != b"":
                    seen.append(line.decode().split(" ", 9))
                assert await asyncio.wait_for(peer.wait(), 60) == 0
                assert sorted(seen) == [
                    [
                        "INSTANCE",
                        "java-1",
                        "10.0.0.7",
                        "8080",
                        "8443",
                        "DYNAMIC",
                        "true",
                        "java.util.HashMap",
                        "{lang=java}",
                        "https://10.0.0.7:8443\n",
                    ],
                    [
                        "INSTANCE",
                        "py-1",
                        "10.0.0.8",
                        "9090",
                        "null",
                        "STATIC",
                        "false",
                        "java.util.HashMap",
                        "{lang=python}",
                        "http://10.0.0.8:9090\n",
                    ],
                ]
                # Curator's close() unregistered its instance: the cache sees it go.
                while (event := await changes.get(10)).id != "java-1" or (
                    event.type is not CacheEventType.CHILD_REMOVED
                ):
                    pass
                assert cache.instances() == [mine]
    finally:
        if peer.returncode is None:
            peer.kill()
            await peer.wait()
