"""Real server-side session expiry, done the way ZooKeeper's own tests do it.

A second connection attaches to the session with its id and password, then closes it with a
closeSession request. The server ends the session for good: its ephemeral nodes and watches go,
and the original client is told ``SESSION_EXPIRED`` when it next reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import struct
from typing import TYPE_CHECKING, NamedTuple

from aiocoord._session.session import State, StateChange
from aiocoord._wire.handshake import CloseRequest, ConnectRequest, decode_connect
from aiocoord.errors import NoServersError
from aiocoord.testing.plumbing import session_of

if TYPE_CHECKING:
    from aiocoord.client import Client

__all__ = ["RawSession", "expire_client", "expire_session", "raw_session"]

_LENGTH = struct.Struct(">i")
_CLOSE_XID = 1
_EMPTY_PASSWORD = b"\x00" * 16


class RawSession(NamedTuple):
    """A session opened by a bare handshake: no pings are sent, so it lives ``timeout`` ms.

    ``session_id`` is 0 when the server refused to attach to the session asked for (it had
    expired); the server then closes the connection. Close ``writer`` when done.
    """

    #: the session's id, as the server answered; 0 if it refused the session asked for
    session_id: int
    #: the session's password, as the server answered: with ``session_id``, what attaches
    #: to the session (:func:`expire_session` takes both)
    password: bytes
    #: the connection's read side, positioned after the handshake's reply
    reader: asyncio.StreamReader
    #: the connection's write side; closing it leaves the session to expire
    writer: asyncio.StreamWriter


def _servers(connect_string: str) -> list[tuple[str, int]]:
    hosts = connect_string.split("/", 1)[0]
    servers: list[tuple[str, int]] = []
    for item in hosts.split(","):
        host, _, port = item.strip().rpartition(":")
        if host and port.isdigit():
            servers.append((host.strip("[]"), int(port)))
    if not servers:
        raise ValueError(f"no host:port in connect string {connect_string!r}")
    return servers


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (length,) = _LENGTH.unpack(await reader.readexactly(4))
    return await reader.readexactly(length)


async def _handshake(
    host: str,
    port: int,
    session_id: int,
    password: bytes,
    timeout_ms: int,
    deadline: float,
    then: bytes = b"",
) -> RawSession:
    """Connect and send a ConnectRequest, followed at once by ``then`` (already framed)."""
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(host, port), max(0.0, deadline - loop.time())
    )
    try:
        request = ConnectRequest(
            protocol_version=0,
            last_zxid=0,
            timeout_ms=timeout_ms,
            session_id=session_id,
            password=password,
            read_only=False,
        )
        writer.write(request.frame() + then)
        payload = await asyncio.wait_for(_read_frame(reader), max(0.0, deadline - loop.time()))
        response = decode_connect(payload)
    except BaseException:
        await _close(writer)
        raise
    return RawSession(response.session_id, response.password, reader, writer)


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()


async def raw_session(
    connect_string: str,
    *,
    session_id: int = 0,
    password: bytes = _EMPTY_PASSWORD,
    timeout_ms: int = 10000,
    timeout: float = 10.0,
) -> RawSession:
    """Open a session (or, with ``session_id`` and ``password``, attach to one) by a bare
    handshake with the first server of ``connect_string`` that answers.

    Raises :class:`~aiocoord.errors.NoServersError` when none answers within ``timeout``
    seconds in all. Cancelling leaves no connection open.
    """
    deadline = asyncio.get_running_loop().time() + timeout
    last: BaseException | None = None
    for host, port in _servers(connect_string):
        try:
            return await _handshake(host, port, session_id, password, timeout_ms, deadline)
        except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
            last = exc
    raise NoServersError(f"no server of {connect_string} completed a handshake: {last!r}")


async def expire_session(
    session_id: int, password: bytes, connect_string: str, *, timeout: float = 10.0
) -> None:
    """Expire session ``session_id`` on the server, for real, and return once it has.

    Attaches to the session over a new connection (to the first server of ``connect_string``
    that accepts) and sends closeSession. Attaching takes the session away from the client's
    connection, and a client that re-attaches at once takes it back and can beat the close;
    so the close goes out in the same write as the handshake, and the whole is repeated until
    the server either answers the close or answers a handshake with "expired". Returns at
    once if the session had expired already.

    Raises :class:`~aiocoord.errors.NoServersError` when no server could be reached, and
    ``asyncio.TimeoutError`` when the session could not be closed within ``timeout`` seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    close = CloseRequest().frame(_CLOSE_XID)
    reached = False
    last: BaseException | None = None
    attempt = 0
    while loop.time() < deadline:
        if attempt:
            # Two parties attaching in turn can take the session from each other forever;
            # a growing random pause breaks the tie.
            await asyncio.sleep(random.uniform(0, min(0.2, 0.005 * 2**attempt)))
        attempt += 1
        for host, port in _servers(connect_string):
            try:
                session = await _handshake(
                    host, port, session_id, password, 10000, deadline, then=close
                )
            except asyncio.IncompleteReadError:
                # Closed before the handshake's answer: the client took the session back.
                reached = True
                break
            except (TimeoutError, OSError) as exc:
                last = exc
                continue
            reached = True
            try:
                if session.session_id == 0:
                    return  # the server says the session has expired
                if await _close_answered(session.reader, deadline):
                    return
            finally:
                await _close(session.writer)
            break  # the session was taken back before the close: attach again
        else:
            if not reached:
                raise NoServersError(
                    f"could not reach any server of {connect_string} to expire session "
                    f"0x{session_id:x}: {last!r}"
                )
    raise TimeoutError(
        f"session 0x{session_id:x} could not be expired within {timeout} s ({connect_string})"
    )


async def _close_answered(reader: asyncio.StreamReader, deadline: float) -> bool:
    """Whether the server answered the close (xid 1) before closing the connection."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            reply = await asyncio.wait_for(_read_frame(reader), max(0.0, deadline - loop.time()))
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            return False
        if len(reply) >= 16:
            xid, _zxid, err = struct.unpack_from(">iqi", reply)
            if xid == _CLOSE_XID:
                return bool(err == 0)


async def expire_client(client: Client, connect_string: str, *, timeout: float = 10.0) -> None:
    """Expire ``client``'s session on the server and wait until the client has heard: a new
    session announced (the default ``reconnect_after_expiry``), else the LOST state.

    It listens before it expires, so a client quick to start its new session is not missed.
    Raises ``asyncio.TimeoutError`` if that takes longer than ``timeout`` seconds.
    """
    heard = asyncio.Event()
    renews = session_of(client).reconnect_after_expiry

    def on_change(change: StateChange) -> None:
        if change.new_session if renews else change.state is State.LOST:
            heard.set()

    stop = client.add_state_listener(on_change)
    try:
        await expire_session(
            client.session_id, session_of(client).password, connect_string, timeout=timeout
        )
        await asyncio.wait_for(heard.wait(), timeout)
    finally:
        stop()
