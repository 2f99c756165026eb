"""compressed=True (issue 28): Curator's ``.compressed()`` (GzipCompressionProvider). What
aiocoord writes is byte for byte what Curator 5.6 and later write on Java 16 and later (the
peers' Curator 5.7 on Java 17+), and Curator 5.4's but for the header's OS byte; each reads
the other's, through a real server too; a node that is not compressed is a typed error, not
garbage."""

from __future__ import annotations

import os
from typing import Any

import pytest
from support import Factory, JavaPeers, ask_java_peer

from aiocoord import Client
from aiocoord.compression import gzip_compress, gzip_decompress
from aiocoord.errors import CompressedDataError, DataTooLargeError, InvalidTypeError

PAYLOADS = [
    b"",
    b"x",
    b"hello hello hello",
    b'{"name": "service", "port": 8080}' * 40,
    bytes(range(256)) * 64,
    os.urandom(5000),  # incompressible: deflate's stored blocks
    b"\x00" * 300_000,
]


#: The gzip header's OS byte (its tenth) each Curator version writes on the peers' Java (17
#: and later). Curator 5.6 and later write what Java's GZIPOutputStream writes on the Java they
#: run on: 255 ("unknown") since Java 16 (JDK-8244706), 0 before; Curator 5.5 and earlier
#: write 0 on every Java. Readers of either ignore it.
CURATOR_OS_BYTE = {"5.4": 0x00, "5.7": 0xFF}


def _with_os_byte(member: bytes, os_byte: int) -> bytes:
    return member[:9] + bytes((os_byte,)) + member[10:]


@pytest.fixture
def curator_tools(curator_peers: JavaPeers) -> list[str]:
    """The command that runs CuratorToolsPeer, on each Curator version."""
    return curator_peers.command("CuratorToolsPeer")


def test_same_bytes_as_curator_and_each_reads_the_other(
    curator_tools: list[str], curator_peers: JavaPeers
) -> None:
    ours = [gzip_compress(p) for p in PAYLOADS]
    java = ask_java_peer(
        curator_tools,
        [f"gzip {p.hex()}" for p in PAYLOADS] + [f"gunzip {c.hex()}" for c in ours],
    )
    curators = [bytes.fromhex(line) for line in java[: len(PAYLOADS)]]
    assert {c[9] for c in curators} == {CURATOR_OS_BYTE[curator_peers.curator]}
    # Ours are Curator 5.7's on Java 16+ byte for byte; 5.4's but for the OS byte.
    theirs_as_ours = [_with_os_byte(c, 0xFF) for c in curators]
    assert [c.hex()[:40] for c in ours] == [c.hex()[:40] for c in theirs_as_ours]  # readable
    assert ours == theirs_as_ours
    assert [bytes.fromhex(line) for line in java[len(PAYLOADS) :]] == PAYLOADS
    assert [gzip_decompress(c) for c in curators] == PAYLOADS


async def test_curator_reads_our_node_and_we_read_its(
    zk_client: Client,
    zookeeper: Any,
    zk_namespace: str,
    curator_tools: list[str],
    curator_peers: JavaPeers,
) -> None:
    data = b"shared with Java " * 50
    await zk_client.create("/ours", data, compressed=True)
    connect = zookeeper.connect_string + zk_namespace
    java = ask_java_peer(
        curator_tools, [f"read {connect} /ours", f"write {connect} /theirs {data.hex()}"]
    )
    assert java == [data.hex(), "ok"]
    assert (await zk_client.get("/theirs", compressed=True))[0] == data
    stored, stat = await zk_client.get("/theirs")
    os_byte = CURATOR_OS_BYTE[curator_peers.curator]
    assert stored == _with_os_byte(gzip_compress(data), os_byte)
    assert stat.data_length == len(stored) < len(data)


async def test_set_and_get_compressed(zk_client: Client, zk_connect: Factory) -> None:
    await zk_client.create("/node", b"plain")
    stat = await zk_client.set("/node", b"v" * 10_000, compressed=True)
    assert stat.data_length < 100
    data, _, watch = await zk_client.get("/node", watch=True, compressed=True)
    assert data == b"v" * 10_000
    await zk_client.set("/node", b"v2", version=stat.version, compressed=True)
    await watch.wait(10)
    assert (await zk_client.get("/node", compressed=True))[0] == b"v2"
    # 4 MiB of zeros compress to a few KiB: the limit applies to what is sent.
    await zk_client.create("/big", bytes(4 << 20), compressed=True)
    assert len((await zk_client.get("/big", compressed=True))[0]) == 4 << 20


async def test_an_uncompressed_node_is_a_typed_error(zk_client: Client) -> None:
    await zk_client.create("/plain", b"not gzip")
    with pytest.raises(CompressedDataError) as info:
        await zk_client.get("/plain", compressed=True)
    assert info.value.path == "/plain"
    assert (await zk_client.get("/plain"))[0] == b"not gzip"  # left as it is
    whole = gzip_compress(b"payload" * 10)
    for broken in (whole[:-3], whole + b"tail", b""):
        with pytest.raises(CompressedDataError):
            gzip_decompress(broken)


async def test_bad_input_before_anything_is_sent(zk_client: Client) -> None:
    with pytest.raises(InvalidTypeError):
        await zk_client.create("/n", "text", compressed=True)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        await zk_client.set("/n", b"x", compressed="yes")  # type: ignore[arg-type]
    with pytest.raises(DataTooLargeError):
        await zk_client.create("/n", os.urandom(2 << 20), compressed=True)
    assert await zk_client.exists("/n") is None


async def test_a_transaction_writes_compressed_data(zk_client: Client) -> None:
    await zk_client.create("/existing", b"old")
    await (
        zk_client.transaction()
        .create("/made", b"m" * 1000, compressed=True)
        .set("/existing", b"e" * 1000, compressed=True)
        .commit()
    )
    assert (await zk_client.get("/made", compressed=True))[0] == b"m" * 1000
    assert (await zk_client.get("/existing"))[0] == gzip_compress(b"e" * 1000)
    with pytest.raises(InvalidTypeError):
        zk_client.transaction().set("/existing", b"x", compressed=1)  # type: ignore[arg-type]
