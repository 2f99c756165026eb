"""Service discovery with Apache Curator itself on the other side: Curator 5.x's
ServiceDiscovery (tests/integration/java/DiscoveryPeer.java, on each version of
support.CURATOR_VERSIONS) registers an instance that aiocoord finds, and finds the one
aiocoord registers. The byte-for-byte format is tested without Java in test_discovery.py."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from support import Factory, JavaPeers

from aiocoord.errors import InstanceFormatError
from aiocoord.recipes.cache import CacheEventType
from aiocoord.recipes.discovery import (
    ServiceDiscovery,
    ServiceInstance,
    ServiceType,
    UriPart,
    UriSpec,
)


@pytest.fixture
def curator_peer(curator_peers: JavaPeers) -> list[str]:
    """The command that runs DiscoveryPeer, on each Curator version."""
    return curator_peers.command("DiscoveryPeer")


@pytest.fixture
def jackson_echo(curator_peers: JavaPeers) -> list[str]:
    """The command that runs JacksonEcho (Curator's serializer as a filter), on each Curator
    version."""
    return curator_peers.command("JacksonEcho")


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


#: Strings at every edge of Jackson's escaping: C0 controls (short escapes and \u00XX in
#: upper-case hex), DEL and C1 (raw), the quote and backslash, non-ASCII of two and three
#: UTF-8 bytes, U+2028, the last BMP characters, and characters beyond the BMP (which Jackson
#: writes as an escaped surrogate pair).
EDGY = [
    '\x00\x01\x08\t\n\x0b\x0c\r\x1f "\\/',
    "\x7f\x80\x9f é 中 \u2028 \ufffd \uffff",
    "\U0001f600 smile \U00010000\U0010ffff",
    "</script>",
]
#: Doubles of every magnitude where Java's Double.toString switches notation (1e-3, 1e7),
#: integral ones, the extremes, negative zero.
DOUBLES = [
    0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 0.001, 0.00099, 0.0001, 1e-7, 1.5e-7, 123.456,
    1234567.0, 9999999.0, 1e7, 12345678.9, 1e16, 2.0**53, 1e20, 1e21, 1e22, 1e23,
    1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, -2.5e-5, 3.141592653589793,
    100.0, 1e100, 6.02214076e23,
]  # fmt: skip


def _instances() -> list[ServiceInstance]:
    out = []
    for i, text in enumerate(EDGY):
        out.append(
            ServiceInstance(
                name=f"api{text}",
                id=f"id-{i}{text}",
                address=text,
                port=80,
                ssl_port=443 if i % 2 else None,
                payload=text,
                registration_time_utc=1764111600000 + i,
                service_type=ServiceType.STATIC,
                uri_spec=UriSpec.from_parts([UriPart(text, False), UriPart("port", True)]),
                enabled=bool(i % 2),
            )
        )
    for j, value in enumerate(DOUBLES):
        out.append(ServiceInstance(name="api", id=f"d{j}", payload=value))
    nested = {
        "@class": "java.util.LinkedHashMap",
        "doubles": DOUBLES,
        "text": EDGY,
        "deep": {"a": [1, -2, 2**31, 2**63 - 1, 2**64, True, None, {"b": [1e-7, "\U0001f600"]}]},
        "\U0001f600\x1f": 1e20,
    }
    out.append(ServiceInstance(name="api", id="nested", payload=nested))
    out.append(ServiceInstance(name="api", id="long", payload=["java.lang.Long", 2**40]))
    listed = ["java.util.ArrayList", [1.0, 1e20, "x\U0001f600"]]
    out.append(ServiceInstance(name="api", id="list", payload=listed))
    return out


async def _echo(command: list[str], lines: list[bytes]) -> tuple[int, list[str]]:
    """The Java feature version, and what Curator's serializer writes back for each node
    data (base64 lines)."""
    peer = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    stdin = b"".join(base64.b64encode(line) + b"\n" for line in lines)
    out, _ = await asyncio.wait_for(peer.communicate(stdin), 120)
    assert peer.returncode == 0
    first, *answers = out.decode().splitlines()
    return int(first.removeprefix("JAVA ")), answers


def _rewritten(data: bytes) -> bytes:
    """``data`` read with Python's json (doubles lose their text) and written by aiocoord."""
    text = json.dumps(json.loads(data), ensure_ascii=False)
    return ServiceInstance.from_json(text.encode()).to_json()


async def test_instances_are_byte_for_byte_what_jackson_writes(jackson_echo: list[str]) -> None:
    instances = _instances()
    ours = [i.to_json() for i in instances]
    java, answers = await _echo(jackson_echo, ours)
    assert len(answers) == len(ours)
    differing = []
    for instance, mine, answer in zip(instances, ours, answers, strict=True):
        assert not answer.startswith("ERROR"), (instance.id, answer)
        theirs = base64.b64decode(answer)
        if theirs != mine:
            # aiocoord writes Java 17's Double.toString digits; Java 19 and later print the
            # shortest (JDK-4511638: 1e23 is 1.0E23 there, 9.999999999999999E22 in Java 17):
            # the same double, so the bytes differ there and nowhere else.
            assert java >= 19, (instance.id, mine, theirs)
            assert _rewritten(theirs) == mine, (instance.id, theirs)
            differing.append(instance.id)
        # A node Curator wrote reads back to the same instance, and is written back to the
        # very bytes Curator wrote, its doubles' digits included.
        assert ServiceInstance.from_json(theirs) == instance
        assert ServiceInstance.from_json(theirs).to_json() == theirs
    # Java 17's digits, every one: no node differs (on Java 19, 1e23 does, alone and nested).
    if java < 19:
        assert differing == [], differing


async def test_a_payload_curator_cannot_read_is_refused_before_sending(
    jackson_echo: list[str],
) -> None:
    # Curator reads an array payload as a [type id, value] wrapper: a bare list makes the
    # node (and so queryForInstances of the whole service) unreadable to it.
    bare = b'{"name":"api","id":"x","payload":[1,2,3],"serviceType":"DYNAMIC","enabled":true}'
    _, [answer] = await _echo(jackson_echo, [bare])
    assert answer.startswith("ERROR"), answer
    with pytest.raises(InstanceFormatError, match="type wrapper"):
        ServiceInstance.build("api", payload=[1, 2, 3])
    with pytest.raises(InstanceFormatError, match="type wrapper"):
        ServiceInstance.build("api", payload=["not a class", 1])
