"""Which server to talk to: the order servers are tried in, how long each attempt may take,
how long to pause between rounds, when to give up, and, while connected read-only, the
search for a server that serves writes.

The session owns the session (its id, password and state); :class:`Connector` only finds a
server that answers the handshake the session describes (``attempt``), like the Java
client's HostProvider and ClientCnxn connect loop together.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl as _ssl
import time
from collections.abc import Awaitable, Callable

from aiocoord._observe.logs import HasSession, SessionLogger
from aiocoord._session.connection import Connection
from aiocoord._session.servers import Server
from aiocoord._wire.handshake import ConnectResponse
from aiocoord.errors import CoordinationError, NoServersError

__all__ = ["RW_PROBE_MAX", "RW_PROBE_MIN", "Attempt", "Connector", "Expired"]

log = logging.getLogger("aiocoord.session")

#: While connected read-only, other servers are asked whether they serve writes, first after
#: this many seconds, then twice as long after each round that found none (the Java client's
#: schedule), up to the max.
RW_PROBE_MIN = 0.1
RW_PROBE_MAX = 60.0

#: ``attempt(server, timeout)``: open a connection to ``server`` and make the handshake.
Attempt = Callable[[Server, float], Awaitable[tuple[Connection, ConnectResponse]]]


class Expired(Exception):
    """No server could resume the session in time, or one said it expired."""


class Connector:
    """Finds a server for the session; see the module docstring."""

    def __init__(
        self,
        servers: list[Server],
        connect_timeout: float,
        *,
        ssl: _ssl.SSLContext | None,
        owner: HasSession | None = None,
    ) -> None:
        #: this module's logger; with ``owner`` (the session), records carry its id and server
        self.log: logging.Logger | SessionLogger = (
            log if owner is None else SessionLogger(log, owner)
        )
        self.servers = list(servers)
        self.connect_timeout = connect_timeout
        self.ssl = ssl
        # A server found serving writes while we were read-only: the next connect tries it first.
        self._preferred: Server | None = None

    def replace_servers(self, servers: list[Server], current: Server | None) -> bool:
        """Use ``servers`` from the next connect on (the ensemble tracker's update). Returns
        whether ``current``, the server connected to, was listed and no longer is (a member
        removed by reconfig): then the session should move (as the Java client's
        HostProvider does); otherwise the connection stays where it is."""
        if not servers:
            raise ValueError("a client needs at least one server")
        dropped = current in self.servers and current not in servers
        self.servers = list(servers)
        return dropped

    async def establish(
        self,
        attempt: Attempt,
        *,
        first: bool,
        deadline: float | None,
        last: Server | None,
        session_timeout: float,
        closing: Callable[[], bool],
    ) -> tuple[Connection, ConnectResponse, Server]:
        """Try the servers until one completes the handshake.

        ``first``: the client's first connect (NoServersError when ``deadline`` passes, or at
        once when every server refused). Otherwise :class:`Expired` when ``deadline`` (the
        moment the server may have expired the session) passes; with no deadline (a fresh
        session after LOST) it tries until ``closing()``. ``last`` is the server just lost:
        it goes last, being the likeliest to be down.
        """
        order = list(self.servers)
        random.shuffle(order)
        if last in order and len(order) > 1:
            order.remove(last)
            order.append(last)
        preferred, self._preferred = self._preferred, None
        if preferred in order:
            order.remove(preferred)
            order.insert(0, preferred)
        delay = 0.0
        last_error: BaseException | None = None
        # Like the Java client: a share of the timeout per server, but never so long that one
        # unanswered handshake uses up the whole session timeout.
        per_server = session_timeout / max(len(order), 1)
        attempt_timeout = max(min(per_server, session_timeout / 3), 0.5)
        while True:
            refusals = 0
            for server in order:
                if closing():
                    raise asyncio.CancelledError()
                remaining = attempt_timeout
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if first:
                        raise NoServersError(
                            f"no ZooKeeper server answered within {self.connect_timeout:.1f}s: "
                            + ", ".join(map(str, self.servers))
                            + (f" (last error: {last_error!r})" if last_error else "")
                        )
                    # Nobody could tell us within the session timeout: the server must have
                    # expired the session by now, so stop acting as if we still had it.
                    raise Expired()
                try:
                    conn, reply = await attempt(server, min(attempt_timeout, remaining))
                except (TimeoutError, OSError, CoordinationError) as exc:
                    self.log.debug("connect to %s failed: %r", server, exc)
                    # A timeout (often the deadline cutting the last attempt short) tells less
                    # than a refusal seen before it, such as a certificate that fails to verify.
                    if not (
                        isinstance(exc, asyncio.TimeoutError)
                        and last_error is not None
                        and not isinstance(last_error, asyncio.TimeoutError)
                    ):
                        last_error = exc
                    if isinstance(exc, ConnectionRefusedError):
                        refusals += 1
                    continue
                if reply.timeout_ms <= 0:
                    conn.abort()
                    raise Expired()
                return conn, reply, server
            if first and refusals == len(order):
                # Nothing listens on any of the ports: waiting out the connect timeout would
                # only hide the mistake (a wrong port, a server that is not running).
                raise NoServersError(
                    "connection refused by every server: "
                    + ", ".join(map(str, self.servers))
                    + f" ({last_error!r}); is ZooKeeper running there?"
                )
            # A session that may still be alive is worth a tighter retry: an ensemble that
            # lost its leader answers again as soon as its election ends (a few hundred ms).
            cap = min(0.2, session_timeout / 10) if deadline is not None else 1.0
            delay = min(max(delay * 2, 0.05), cap)
            pause = delay * (0.5 + random.random() / 2)
            if deadline is not None:
                # Never sleep past the moment the session must be declared LOST.
                pause = min(pause, max(deadline - time.monotonic(), 0.0))
            await asyncio.sleep(pause)

    async def seek_rw_server(
        self, conn: Connection, current: Server, session_timeout: float
    ) -> None:
        """While read-only on ``current``, ask the other servers now and then whether they
        serve writes ("isro", which a server always answers); on the first that does, drop
        ``conn`` so that the reconnect goes there (SUSPENDED, then the usual reconnect)."""
        delay = RW_PROBE_MIN
        others = [s for s in self.servers if s != current]
        while not conn.closed.done():
            await asyncio.sleep(delay)
            for server in others:
                if await self.serves_writes(server, session_timeout) and not conn.closed.done():
                    self.log.info("%s serves writes: leaving read-only %s", server, current)
                    self._preferred = server
                    conn.abort()
                    return
            delay = min(delay * 2, RW_PROBE_MAX)

    async def serves_writes(self, server: Server, session_timeout: float) -> bool:
        """Whether ``server`` answers "isro" with "rw" (not "ro", nothing, or an error)."""
        writer: asyncio.StreamWriter | None = None

        async def ask() -> bytes:
            nonlocal writer
            reader, writer = await asyncio.open_connection(server.host, server.port, ssl=self.ssl)
            writer.write(b"isro")
            return await reader.readexactly(2)

        try:
            answer = await asyncio.wait_for(ask(), max(min(session_timeout / 3, 2.0), 0.5))
        except (TimeoutError, OSError, EOFError) as exc:
            self.log.debug("read-write probe of %s failed: %r", server, exc)
            return False
        finally:
            if writer is not None:
                writer.close()
        return answer == b"rw"
