"""FaultProxy and expire_session against a real server, observed from raw client connections."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import uuid

import pytest
from aiozk.protocol import (
    UNRESTRICTED_ACCESS,
    CreateRequest,
    ExistsRequest,
    PingRequest,
)

from aiocoord.errors import NoServersError
from aiocoord.testing import (
    DroppedRequest,
    FaultProxy,
    RawSession,
    ServerHandle,
    expire_session,
    raw_session,
)

NO_NODE = -101
EOF_ERRORS = (asyncio.IncompleteReadError, ConnectionError)


def send(session: RawSession, xid: int, request: object) -> None:
    payload = request.serialize(xid)  # type: ignore[attr-defined]
    session.writer.write(struct.pack(">i", len(payload)) + payload)


async def reply(session: RawSession, timeout: float = 5.0) -> tuple[int, int]:
    """The next reply's (xid, error code)."""

    async def read() -> tuple[int, int]:
        (length,) = struct.unpack(">i", await session.reader.readexactly(4))
        body = await session.reader.readexactly(length)
        xid, _zxid, err = struct.unpack_from(">iqi", body)
        return xid, err

    return await asyncio.wait_for(read(), timeout)


async def exists(session: RawSession, xid: int, path: str) -> int:
    """Round trip an exists; return its error code (0: the node exists)."""
    send(session, xid, ExistsRequest(path=path, watch=False))
    got_xid, err = await reply(session)
    assert got_xid == xid
    return err


def create(path: str, *, ephemeral: bool = False) -> CreateRequest:
    request = CreateRequest(path=path, data=b"x", acl=[UNRESTRICTED_ACCESS])
    request.set_flags(ephemeral=ephemeral)
    return request


async def close(session: RawSession) -> None:
    session.writer.close()
    with contextlib.suppress(ConnectionError):
        await session.writer.wait_closed()


async def test_drop_cuts_live_connections_and_accepts_new_ones(
    zk_fault_proxy: FaultProxy,
) -> None:
    session = await raw_session(zk_fault_proxy.connect_string)
    assert await exists(session, 1, "/") == 0
    assert zk_fault_proxy.drop() == 1
    with pytest.raises(EOF_ERRORS):
        await reply(session)
    # The session lives on: a new connection through the proxy attaches to it.
    again = await raw_session(
        zk_fault_proxy.connect_string, session_id=session.session_id, password=session.password
    )
    assert again.session_id == session.session_id
    assert await exists(again, 1, "/") == 0
    assert (zk_fault_proxy.drops, zk_fault_proxy.connections_total) == (1, 2)
    await close(session)
    await close(again)


async def test_blackhole_holds_traffic_both_ways_until_heal(zk_fault_proxy: FaultProxy) -> None:
    session = await raw_session(zk_fault_proxy.connect_string)
    zk_fault_proxy.blackhole()
    send(session, 1, ExistsRequest(path="/", watch=False))
    with pytest.raises(asyncio.TimeoutError):
        await reply(session, timeout=1.0)
    # New connections are accepted but get no answer either.
    with pytest.raises(NoServersError):
        await raw_session(zk_fault_proxy.connect_string, timeout=0.5)
    zk_fault_proxy.heal()
    assert await reply(session) == (1, 0)  # held, then delivered
    assert await exists(session, 2, "/") == 0
    await close(session)


async def test_connection_abandoned_during_blackhole_never_reaches_the_server(
    zk_fault_proxy: FaultProxy,
) -> None:
    zk_fault_proxy.blackhole()
    with pytest.raises(NoServersError):  # times out and closes its connection
        await raw_session(zk_fault_proxy.connect_string, timeout=0.5)
    await zk_fault_proxy.wait_for(lambda p: p.open_connections == 0, timeout=5)
    zk_fault_proxy.heal()
    assert zk_fault_proxy.server_connections == 0
    session = await raw_session(zk_fault_proxy.connect_string)
    assert await exists(session, 1, "/") == 0
    assert zk_fault_proxy.server_connections == 1
    await close(session)


async def test_drop_after_request_applies_it_but_loses_the_reply(
    zookeeper: ServerHandle, zk_fault_proxy: FaultProxy
) -> None:
    path = f"/dropped-{uuid.uuid4().hex}"
    proxied = await raw_session(zk_fault_proxy.connect_string)
    direct = await raw_session(zookeeper.connect_string)
    dropped = zk_fault_proxy.drop_after_request()
    send(proxied, -2, PingRequest())  # not an ordinary request: passes untouched
    assert await reply(proxied) == (-2, 0)
    send(proxied, 7, create(path))
    with pytest.raises(EOF_ERRORS):
        await reply(proxied)  # the connection ends; the create's reply never came
    assert await asyncio.wait_for(dropped, 5) == DroppedRequest(xid=7, opcode=1)
    assert await exists(direct, 1, path) == 0  # ...but the server did create it
    assert zk_fault_proxy.drops == 1
    await close(proxied)
    await close(direct)


async def test_drop_after_request_predicate_chooses_the_request(
    zookeeper: ServerHandle, zk_fault_proxy: FaultProxy
) -> None:
    path = f"/chosen-{uuid.uuid4().hex}"
    proxied = await raw_session(zk_fault_proxy.connect_string)
    dropped = zk_fault_proxy.drop_after_request(lambda xid, opcode: opcode == 1)
    assert await exists(proxied, 1, "/") == 0  # an exists is let through
    send(proxied, 2, create(path))
    with pytest.raises(EOF_ERRORS):
        await reply(proxied)
    assert (await dropped).opcode == 1
    await close(proxied)


async def test_latency_delays_replies(zk_fault_proxy: FaultProxy) -> None:
    session = await raw_session(zk_fault_proxy.connect_string)
    zk_fault_proxy.latency(0.3)
    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await exists(session, 1, "/") == 0
    assert loop.time() - began >= 0.3
    zk_fault_proxy.latency(0)
    assert await exists(session, 2, "/") == 0
    await close(session)


async def test_refused_and_held_connections(zk_fault_proxy: FaultProxy) -> None:
    zk_fault_proxy.refuse()
    with pytest.raises(NoServersError):
        await raw_session(zk_fault_proxy.connect_string, timeout=2)
    zk_fault_proxy.accept()
    zk_fault_proxy.hold_new_connections(True)
    pending = asyncio.ensure_future(raw_session(zk_fault_proxy.connect_string))
    done, _ = await asyncio.wait({pending}, timeout=0.5)
    assert not done  # accepted, but not put through
    zk_fault_proxy.hold_new_connections(False)
    session = await asyncio.wait_for(pending, 5)
    assert session.session_id != 0
    await close(session)


async def test_closing_the_proxy_leaves_no_task(zookeeper: ServerHandle) -> None:
    before = asyncio.all_tasks()
    proxy = await FaultProxy(zookeeper.host, zookeeper.port).start()
    sessions = [await raw_session(proxy.connect_string) for _ in range(3)]
    proxy.blackhole()
    held = asyncio.ensure_future(raw_session(proxy.connect_string, timeout=30))
    await proxy.wait_for(lambda p: p.open_connections == 4, timeout=5)
    armed = proxy.drop_after_request()
    await proxy.aclose()
    assert armed.done()
    with pytest.raises(NoServersError):
        await held
    assert asyncio.all_tasks() == before
    for session in sessions:
        with pytest.raises(EOF_ERRORS):
            await reply(session)
        await close(session)


async def test_expire_session_really_expires_it(zookeeper: ServerHandle) -> None:
    path = f"/ephemeral-{uuid.uuid4().hex}"
    victim = await raw_session(zookeeper.connect_string)
    observer = await raw_session(zookeeper.connect_string)
    send(victim, 1, create(path, ephemeral=True))
    assert await reply(victim) == (1, 0)

    await expire_session(victim.session_id, victim.password, zookeeper.connect_string)

    with pytest.raises(EOF_ERRORS):
        await reply(victim)  # the server closed the victim's connection
    assert await exists(observer, 1, path) == NO_NODE  # its ephemeral node went with it
    # Reattaching is answered the way the server answers an expired session.
    again = await raw_session(
        zookeeper.connect_string, session_id=victim.session_id, password=victim.password
    )
    assert again.session_id == 0
    # Expiring it again is a no-op.
    await expire_session(victim.session_id, victim.password, zookeeper.connect_string)
    for session in (victim, observer, again):
        await close(session)


async def test_expire_session_tries_each_server(zookeeper: ServerHandle) -> None:
    victim = await raw_session(zookeeper.connect_string)
    await expire_session(
        victim.session_id, victim.password, f"127.0.0.1:1,{zookeeper.connect_string}"
    )
    again = await raw_session(
        zookeeper.connect_string, session_id=victim.session_id, password=victim.password
    )
    assert again.session_id == 0
    with pytest.raises(NoServersError):
        await expire_session(victim.session_id, victim.password, "127.0.0.1:1", timeout=2)
    await close(victim)
    await close(again)


async def test_expire_session_wins_against_a_client_that_reattaches_at_once(
    zookeeper: ServerHandle,
) -> None:
    first = await raw_session(zookeeper.connect_string)

    async def eager_client() -> None:
        """Re-attach the moment the server takes the session away, as real clients do."""
        session = first
        try:
            while session.session_id != 0:
                with contextlib.suppress(*EOF_ERRORS):
                    await session.reader.read()  # until the server closes this connection
                await close(session)
                with contextlib.suppress(NoServersError):  # taken again during the handshake
                    session = await raw_session(
                        zookeeper.connect_string,
                        session_id=first.session_id,
                        password=first.password,
                    )
        finally:
            await close(session)

    client = asyncio.ensure_future(eager_client())
    try:
        await expire_session(first.session_id, first.password, zookeeper.connect_string)
        again = await asyncio.wait_for(reattach(zookeeper, first), 10)
        assert again.session_id == 0  # expired for good, whatever the client did meanwhile
        await close(again)
    finally:
        client.cancel()
        await asyncio.gather(client, return_exceptions=True)


async def reattach(zookeeper: ServerHandle, session: RawSession) -> RawSession:
    """Attach to ``session``; any attach (even to an expired session) cuts the other
    connections of that session short, so retry those."""
    while True:
        with contextlib.suppress(NoServersError):
            return await raw_session(
                zookeeper.connect_string, session_id=session.session_id, password=session.password
            )
