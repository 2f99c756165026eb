"""TLS to ZooKeeper's secure client port, against the local server with a self-signed
certificate made for the test (:mod:`aiocoord.testing.tls`)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from aiocoord import Client, Lock, State, TreeCache, connect
from aiocoord.errors import NoServersError
from aiocoord.testing import ZooKeeperServer, session_of
from aiocoord.testing.tls import TLSConfig, make_self_signed_certificate, tls_config


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TLSConfig, ZooKeeperServer]]:
    """A standalone server with a secure client port (and its plain one)."""
    config = tls_config(tmp_path_factory.mktemp("tls"))
    with config.server() as server:
        yield config, server


@pytest_asyncio.fixture
async def tls_client(tls: tuple[TLSConfig, ZooKeeperServer]) -> AsyncIterator[Client]:
    config, _ = tls
    client = await connect(config.connect_string, ssl=config.client_context(), session_timeout=10)
    try:
        yield client
    finally:
        await client.close()


def _ssl_object(client: Client) -> ssl.SSLObject | None:
    # The transport is the one place that knows whether the bytes are encrypted.
    conn = session_of(client)._conn
    assert conn is not None and conn._transport is not None
    return conn._transport.get_extra_info("ssl_object")  # type: ignore[no-any-return]


def test_certificate_names_the_loopback_address(tmp_path: Path) -> None:
    cert = make_self_signed_certificate(tmp_path)
    assert cert.keystore.read_bytes().startswith(b"-----BEGIN")
    decoded = ssl._ssl._test_decode_cert(str(cert.cert))  # type: ignore[attr-defined]
    assert ("IP Address", "127.0.0.1") in decoded["subjectAltName"]
    assert ("DNS", "localhost") in decoded["subjectAltName"]


async def test_client_works_over_tls(tls_client: Client) -> None:
    tls_object = _ssl_object(tls_client)
    assert tls_object is not None
    assert tls_object.version() in ("TLSv1.2", "TLSv1.3")
    await tls_client.create("/tls/node", b"over tls", make_parents=True)
    assert (await tls_client.get("/tls/node"))[0] == b"over tls"
    async with TreeCache(tls_client, "/tls") as cache:
        await tls_client.set("/tls/node", b"changed")
        await cache.wait_for(lambda nodes: nodes["/tls/node"].data == b"changed", 10)
    lock = Lock(tls_client, "/tls/lock")
    assert await lock.acquire(timeout=10)
    await lock.release()
    await tls_client.delete("/tls", recursive=True)


async def test_session_resumes_over_a_new_tls_connection(tls_client: Client) -> None:
    await tls_client.create("/tls-resume", b"1")
    session = tls_client.session_id
    _, _, watch = await tls_client.get("/tls-resume", watch=True)
    session_of(tls_client).drop_connection()
    await tls_client.wait_for(State.RECONNECTED, 10)
    assert tls_client.session_id == session
    assert _ssl_object(tls_client) is not None
    await tls_client.set("/tls-resume", b"2")  # the restored watch fires
    event = await asyncio.wait_for(watch, 10)
    assert event.path == "/tls-resume"
    await tls_client.delete("/tls-resume")


async def test_an_untrusted_certificate_is_refused(tls: tuple[TLSConfig, ZooKeeperServer]) -> None:
    config, _ = tls
    strict = ssl.create_default_context()  # system CAs only: our self-signed cert is unknown
    # The refusal is reported even when the deadline cut a later, slower handshake short.
    with pytest.raises(NoServersError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify"):
        await connect(config.connect_string, ssl=strict, connect_timeout=3)


async def test_a_certificate_from_another_issuer_is_refused(
    tls: tuple[TLSConfig, ZooKeeperServer], tmp_path: Path
) -> None:
    config, _ = tls
    other = make_self_signed_certificate(tmp_path, common_name="other.example")
    # Trusts a certificate issued to someone else: the server's does not chain to it.
    context = ssl.create_default_context(cafile=str(other.cert))
    with pytest.raises(NoServersError):
        await connect(config.connect_string, ssl=context, connect_timeout=1)


async def test_plain_client_on_the_secure_port_fails_in_time(
    tls: tuple[TLSConfig, ZooKeeperServer],
) -> None:
    config, _ = tls
    with pytest.raises(NoServersError):
        await asyncio.wait_for(connect(config.connect_string, connect_timeout=1), 10)


async def test_tls_client_on_the_plain_port_fails_in_time(
    tls: tuple[TLSConfig, ZooKeeperServer],
) -> None:
    config, server = tls
    with pytest.raises(NoServersError):
        await asyncio.wait_for(
            connect(server.connect_string, ssl=config.client_context(), connect_timeout=2), 10
        )


async def test_ssl_argument_is_type_checked(
    tls: tuple[TLSConfig, ZooKeeperServer],
) -> None:
    from aiocoord.errors import InvalidTypeError

    config, _ = tls
    with pytest.raises(InvalidTypeError):
        await connect(config.connect_string, ssl="yes", connect_timeout=2)  # type: ignore[arg-type]
