"""The session manager: owns the connection, the session, its state and its watches.

One :class:`Session` keeps one ZooKeeper session alive across connections. It connects to a
server from the list, resumes the same session after a connection loss (restoring every
watch from the last seen zxid), declares the session LOST when the server says it expired
or when no server answered within the session timeout, and, if asked, starts a new one. While
connected read-only, it asks the other servers now and then whether they serve writes and
moves to the first that does. When the session can be trusted (:meth:`Session.trusted`) and
when a client with no connection gives it up is worked out in :mod:`aiocoord._session.liveness`;
what a new connection carries first (SASL, auth, watches) is :mod:`aiocoord._session.prelude`'s.

Requests from any number of tasks are pipelined on the one socket. A request is written
only while connected; one made while SUSPENDED is *held* (:mod:`aiocoord._session.held`)
and written first thing on the next connection, before anyone hears that the session is
back: **requests reach the server in the order the session accepted them, whatever the link
did meanwhile** (a release held while offline, then ``sync()``: the delete is written before
the sync). A held request fails with SessionExpiredError if the session it is pinned to is
lost first. Nothing is ever sent twice here: retries are the client's business, and only for
operations that are safe to repeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl as _ssl
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

from aiocoord._observe.logs import SessionLogger
from aiocoord._observe.metrics import Recorder
from aiocoord._paths import Chroot
from aiocoord._session import liveness as liveness
from aiocoord._session.connection import Connection, Reply
from aiocoord._session.held import Held, HeldRequests
from aiocoord._session.hosts import Connector, Expired
from aiocoord._session.liveness import EXPIRY_MARGIN as EXPIRY_MARGIN
from aiocoord._session.liveness import EXPIRY_MARGIN_MAX as EXPIRY_MARGIN_MAX
from aiocoord._session.liveness import LIVENESS_WINDOW as LIVENESS_WINDOW
from aiocoord._session.prelude import SaslCredentials, authenticate, prime
from aiocoord._session.servers import Server
from aiocoord._session.states import CONNECTED_STATES, State, StateBroadcast, StateChange
from aiocoord._session.watch import Watch
from aiocoord._session.watch_table import WatchTable
from aiocoord._wire.framing import Request
from aiocoord._wire.handshake import CloseRequest, ConnectResponse
from aiocoord._wire.opcodes import OP_NAMES, Op
from aiocoord._wire.watches import SetWatches2Request, SetWatchesRequest, WatchNotification
from aiocoord.errors import (
    AuthFailedError,
    ClientClosedError,
    ConnectionLossError,
    NoServersError,
    NotSentError,
    SessionExpiredError,
    error_for_code,
)

__all__ = ["Session", "State", "StateChange"]

log = logging.getLogger("aiocoord.session")
R = TypeVar("R")


class Session:
    """Keeps one ZooKeeper session alive; see the module docstring."""

    def __init__(
        self,
        servers: list[Server],
        *,
        session_timeout: float = 10.0,
        connect_timeout: float | None = None,
        auth: list[tuple[str, bytes]] | None = None,
        read_only: bool = False,
        reconnect_after_expiry: bool = True,
        ssl: _ssl.SSLContext | None = None,
        chroot: str = "",
        sasl: SaslCredentials | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout if connect_timeout is not None else session_timeout
        self._connector = Connector(servers, self.connect_timeout, ssl=ssl, owner=self)
        #: SASL credentials (DIGEST-MD5's (user, password), or GSSAPI), used on every connection
        self.sasl = sasl
        self.requested_timeout = session_timeout
        self._auth = list(auth or [])
        self.read_only = read_only
        self.reconnect_after_expiry = reconnect_after_expiry
        self.ssl = ssl
        self.chroot = chroot
        self.paths = Chroot(chroot)  #: adds and strips the chroot
        self.log = SessionLogger(log, self)  #: records carry the session id and server

        self.session_id = 0
        self.password = b"\x00" * 16
        self.negotiated_timeout = session_timeout
        self.last_zxid = 0
        #: increases each time a new session starts; requests never cross generations
        self.generation = 0
        self.state: State | None = None
        self.server: Server | None = None
        #: count of requests written, by opcode (tests use it to show nothing was sent)
        self.sent: Counter[int] = Counter()
        self.recorder = Recorder()  #: what Client.stats() reports (see aiocoord._observe.metrics)

        self._conn: Connection | None = None
        #: requests accepted while no connection could take them, in the order accepted
        self._held = HeldRequests()
        self._xid = 0
        self._states = StateBroadcast()
        self._watches = WatchTable(self)
        self._run_task: asyncio.Task[None] | None = None
        self._closing = False
        self._last_contact = time.monotonic()
        self._first: asyncio.Future[None] | None = None

    @property
    def servers(self) -> list[Server]:
        """The servers connects go to: the connect string's, or the ensemble tracker's."""
        return self._connector.servers

    @servers.setter
    def servers(self, servers: list[Server]) -> None:
        if self._connector.replace_servers(servers, self.server) and self._conn is not None:
            self._conn.abort()  # its server left the ensemble: move, keeping the session

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and establish a session; raises NoServersError after ``connect_timeout``."""
        loop = asyncio.get_running_loop()
        self._first = loop.create_future()
        self._run_task = loop.create_task(self._run(), name="aiocoord-session")
        try:
            await self._first
        except BaseException:
            await self._stop_run()
            raise

    async def close(self) -> None:
        """End the session on the server (its ephemerals vanish) and close the socket."""
        if self._closing:
            if self._run_task is not None:
                await asyncio.shield(self._run_task)
            return
        self._closing = True
        conn = self._conn
        if conn is not None and self.state is not None and self.state.is_connected:
            with contextlib.suppress(Exception):
                fut = conn.send(self._next_xid(), CloseRequest())
                self.sent[Op.CLOSE] += 1
                await asyncio.wait_for(asyncio.shield(fut), max(self.negotiated_timeout / 3, 0.5))
        if conn is not None:
            conn.abort()
        await self._stop_run()
        self._held.fail(ClientClosedError("client closed before the request could be sent"))
        self._watches.fail_all(ClientClosedError("client closed"))
        self._set_state(State.CLOSED)

    async def _stop_run(self) -> None:
        task, self._run_task = self._run_task, None
        if task is None:
            return
        # wait_for (3.10/3.11) may swallow a cancel racing its result: cancel until it ends.
        while not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=0.5)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            task.result()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closing

    # --- state --------------------------------------------------------------------------

    def add_listener(self, callback: Callable[[StateChange], None]) -> Callable[[], None]:
        """Call ``callback`` synchronously on every transition; returns an unsubscribe function."""
        return self._states.add_listener(callback)

    def _set_state(self, state: State, *, new_session: bool = False) -> None:
        previous = self.state
        if previous is state and not new_session:
            return
        self.state = state
        server = str(self.server) if self.server else None
        self.log.info("session 0x%x: %s -> %s", self.session_id, previous, state)
        self._states.publish(StateChange(state, previous, self.session_id, new_session, server))

    async def wait_for(self, state: State, timeout: float | None = None) -> None:
        """Wait until the state is ``state`` (CONNECTED also matches RECONNECTED). Returns at
        once if it already is; otherwise the first transition into ``state`` counts, even if
        the state has moved on again by the time the caller runs."""
        await self._states.wait_for(self.state, state, timeout)

    def changes(self) -> AsyncIterator[StateChange]:
        """Yield every transition from now on, until the client closes."""
        return self._states.changes()

    # --- liveness -----------------------------------------------------------------------

    @property
    def alive_until(self) -> float:
        """The ``time.monotonic()`` moment before which the server cannot have expired this
        session on its own: the write time of the newest answered request + the timeout."""
        conn = self._conn
        proof = self._last_contact
        if conn is not None and conn.proof > proof:
            proof = conn.proof
        return liveness.alive_until(proof, self.negotiated_timeout)

    def trusted(self) -> bool:
        """Whether the session may be acted on without asking the server: connected, and the
        newest answered request written within the liveness window
        (:mod:`aiocoord._session.liveness`)."""
        conn = self._conn
        if conn is None or self.state is None or not self.state.is_connected:
            return False
        return liveness.trusted(conn.proof, self.negotiated_timeout)

    # --- requests -----------------------------------------------------------------------

    def _next_xid(self) -> int:
        self._xid = self._xid + 1 if self._xid < 0x7FFFFFFF else 1
        return self._xid

    def _writable(self) -> Connection | None:
        """The connection if a request may be written on it now (connected, open), else None."""
        conn = self._conn
        if conn is None or conn.closed.done() or self._closing:
            return None
        return conn if self.state in CONNECTED_STATES else None

    async def _ready_connection(self, generation: int | None) -> Connection:
        while True:
            if self._closing:
                raise ClientClosedError("client is closed; open a new one with aiocoord.connect()")
            if generation is not None and generation != self.generation:
                raise SessionExpiredError("the session this request belonged to expired")
            conn = self._writable()
            if conn is not None:
                return conn
            if self.state is State.LOST and not self.reconnect_after_expiry:
                raise SessionExpiredError("session expired and reconnect_after_expiry is off")
            await self._states.next_change()

    async def request(
        self,
        request: Request[R],
        *,
        path: str | None = None,
        watch: Watch | None = None,
        generation: int | None = None,
    ) -> R:
        """Send one request and return its reply's body; the server's error is raised.

        ``watch`` must already be registered in the watch table; it is withdrawn when the
        request fails before setting a server watch. ``generation`` pins the request to a
        session: if that session is lost first, SessionExpiredError is raised unsent. While
        not connected the request is held, and written in its turn (module docstring).
        """
        conn = self._writable()
        sent: tuple[Connection, int] | None = None
        held: Held[R] | None = None
        try:
            if generation is not None and generation != self.generation:
                raise SessionExpiredError("the session this request belonged to expired")
            if conn is not None and not self._held:
                xid = self._next_xid()
                try:
                    fut = conn.send(xid, request)
                    sent = (conn, xid)
                    self.sent[request.opcode] += 1
                except NotSentError:
                    # The socket is closing and the loop has not heard yet: hold it for the
                    # next connection.
                    pass
            if sent is None:
                held = self._hold(request, generation)
                fut = held.reply
        except BaseException:
            # Nothing was sent, so no server watch was set: the waiter must not linger (a
            # reconnect would otherwise restore it on the server).
            if watch is not None:
                self._watches.unregister(watch)
            raise
        if watch is not None:
            self._watches.written(watch, fut)
        try:
            reply = await fut
        except asyncio.CancelledError:
            if held is not None:
                sent = held.sent  # awaiting it cancelled it: if not yet written, it never is
            if sent is not None:
                sent[0].forget(sent[1])
            if watch is not None:
                if sent is not None:
                    # The request went out, so the server may set the watch: remove it there
                    # too (when nobody else shares it), or it would outlive its waiter.
                    self._watches.abandon(watch)
                else:
                    self._watches.unregister(watch)
            raise
        except ConnectionLossError as exc:
            if watch is not None:
                # The caller gets no Watch from a failed call (a retry registers a new one),
                # so this waiter must not linger in the table.
                self._watches.unregister(watch)
            op = OP_NAMES.get(request.opcode)
            raise ConnectionLossError(str(exc), path=path, op=op) from None
        except BaseException:
            if watch is not None:  # never written (expired, closed, too large)
                self._watches.unregister(watch)
            raise
        if watch is not None:
            self._watches.settle(watch, request.opcode, reply.err)
        if reply.err:
            raise error_for_code(reply.err, path=path, op=OP_NAMES.get(request.opcode))
        assert reply.body is not None  # the connection decodes every successful reply
        return reply.body

    def submit(
        self, request: Request[R], *, generation: int | None = None
    ) -> asyncio.Future[Reply[R]]:
        """Write ``request`` now, or hold it for the next connection if there is none (it is
        then written before any request accepted after it); the future of its answer.

        The future fails with ConnectionLossError if the connection is lost after the request
        was written, SessionExpiredError if the session ``generation`` (if given) ends before
        it was, and ClientClosedError if the client closes first. For a request whose answer
        is followed rather than awaited (a release's delete): unlike :meth:`send_now`, it is
        never refused, and never overtaken by a later one.
        """
        if self._closing:
            raise ClientClosedError("client is closed; open a new one with aiocoord.connect()")
        if generation is not None and generation != self.generation:
            raise SessionExpiredError("the session this request belonged to expired")
        if not self._held:
            fut = self.send_now(request)
            if fut is not None:
                return fut
        return self._hold(request, generation).reply

    def _hold(self, request: Request[R], generation: int | None) -> Held[R]:
        if self._closing:
            raise ClientClosedError("client is closed; open a new one with aiocoord.connect()")
        if self.state is State.LOST and not self.reconnect_after_expiry:
            raise SessionExpiredError("session expired and reconnect_after_expiry is off")
        return self._held.hold(request, generation)

    @property
    def watches(self) -> WatchTable:
        """The session's watch table."""
        return self._watches

    @contextlib.contextmanager
    def corked(self) -> Iterator[None]:
        """The requests written in this (synchronous) block leave together at its end, in
        one write (:meth:`Connection.cork`); their order is unchanged."""
        conn = self._conn
        corked = conn is not None and conn.cork()
        try:
            yield
        finally:
            if corked:
                assert conn is not None
                conn.uncork()

    @property
    def round_trip(self) -> float | None:
        """The current connection's round trip to its server (:attr:`Connection.round_trip`);
        None when not connected or before its first read."""
        conn = self._conn
        return None if conn is None else conn.round_trip

    def send_now(self, request: Request[R]) -> asyncio.Future[Reply[R]] | None:
        """Write ``request`` at once on the current connection; None if not connected."""
        conn = self._conn
        if conn is None or self.state not in CONNECTED_STATES or self._closing:
            return None
        try:
            fut = conn.send(self._next_xid(), request)
        except NotSentError:
            return None
        self.sent[request.opcode] += 1
        return fut

    async def add_auth(self, scheme: str, credential: bytes) -> None:
        """Authenticate this session; replayed automatically on every reconnect."""
        conn = await self._ready_connection(None)
        await authenticate(conn, scheme, credential, self.sent)
        self._auth.append((scheme, credential))

    # --- the connection loop ------------------------------------------------------------

    def _note_zxid(self, zxid: int) -> None:
        if zxid > self.last_zxid:
            self.last_zxid = zxid

    def _on_watch(self, note: WatchNotification) -> None:
        if note.type == -1:  # a state notification (e.g. session expired); the loop handles it
            return
        self._watches.dispatch(note.type, note.path, self.paths.strip(note.path))

    def _on_connection_lost(self, conn: Connection) -> None:
        # Called before the connection fails its pending requests, so that a caller seeing
        # ConnectionLossError already finds the state SUSPENDED (and waits for the reconnect
        # instead of sending into the dead socket).
        if conn is not self._conn or self._closing:
            return
        self._conn = None
        if conn.proof > self._last_contact:
            self._last_contact = conn.proof
        if self.state is not None and self.state.is_connected:
            self._set_state(State.SUSPENDED)

    def strip_chroot(self, server_path: str) -> str:
        """Turn a server path into the client-relative path."""
        return self.paths.strip(server_path)

    async def _run(self) -> None:
        assert self._first is not None
        try:
            while not self._closing:
                try:
                    conn, reply, server = await self._establish()
                except Expired:
                    if self._first is not None and not self._first.done():
                        self._first.set_exception(SessionExpiredError("session expired at connect"))
                        return
                    self._expire()
                    if not self.reconnect_after_expiry:
                        return
                    continue
                except NoServersError as exc:
                    if not self._first.done():
                        self._first.set_exception(exc)
                        return
                    raise
                if self._closing:
                    conn.abort()
                    return
                await self._connected_to(conn, reply, server)
                seeker = None
                if self.state is State.READ_ONLY and len(self.servers) > 1:
                    seek = self._connector.seek_rw_server(conn, server, self.negotiated_timeout)
                    seeker = asyncio.create_task(seek, name="aiocoord-rw-probe")
                try:
                    reason = await conn.closed
                finally:
                    if seeker is not None:
                        seeker.cancel()
                        await asyncio.wait([seeker])
                if self._closing:
                    return
                self.log.info("connection to %s lost: %s", server, reason)
                self._on_connection_lost(conn)
                self._conn = None
                if self.state is not State.SUSPENDED:
                    self._set_state(State.SUSPENDED)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # pragma: no cover - a bug; surface it to the waiters
            self.log.exception("session loop failed")
            if not self._first.done():
                self._first.set_exception(exc)
            self._expire()

    def _expire(self) -> None:
        """The session is gone: fail its watches, forget its id, announce LOST."""
        self.generation += 1
        self.recorder.expiries += 1
        # Requests pinned to the old session fail unsent; the others wait for the new one.
        self._held.fail(
            SessionExpiredError("the session this request belonged to expired"),
            pinned_only=self.reconnect_after_expiry,
        )
        self._watches.fail_all(SessionExpiredError("session expired; its watches are gone"))
        self._set_state(State.LOST)
        self.session_id = 0
        self.password = b"\x00" * 16
        self.last_zxid = 0

    async def _establish(self) -> tuple[Connection, ConnectResponse, Server]:
        """Connect to some server, resuming the current session; see the module docstring."""
        first = self._first is not None and not self._first.done()
        deadline = liveness.connect_deadline(
            first,
            bool(self.session_id),
            self.connect_timeout,
            self.alive_until,
            self.negotiated_timeout,
        )
        return await self._connector.establish(
            self._attempt,
            first=first,
            deadline=deadline,
            last=self.server,
            session_timeout=self.negotiated_timeout,
            closing=lambda: self._closing,
        )

    async def _attempt(self, server: Server, timeout: float) -> tuple[Connection, ConnectResponse]:
        """Open a connection to ``server`` and ask it to resume (or start) this session."""
        return await Connection.open(
            server.host,
            server.port,
            timeout=timeout,
            session_id=self.session_id,
            password=self.password,
            session_timeout_ms=int(self.requested_timeout * 1000),
            last_zxid=self.last_zxid,
            read_only=self.read_only,
            on_watch=self._on_watch,
            on_zxid=self._note_zxid,
            on_lost=self._on_connection_lost,
            ssl=self.ssl,
            recorder=self.recorder,
        )

    async def _connected_to(self, conn: Connection, reply: ConnectResponse, server: Server) -> None:
        new_session = reply.session_id != self.session_id
        self.session_id = reply.session_id
        self.password = reply.password
        self.negotiated_timeout = reply.timeout_ms / 1000
        self.server = server
        self._last_contact = conn.proof
        conn.start_keepalive(self.negotiated_timeout)

        def restores() -> list[SetWatchesRequest | SetWatches2Request]:
            # A new session has no watches to restore (the old ones failed with it).
            return [] if new_session else self._watches.restore_requests(self.last_zxid)

        def attach() -> None:
            self._conn = conn

        try:
            await prime(
                conn,
                sasl=self.sasl,
                auth=self._auth,
                restores=restores,
                attach=attach,
                next_xid=self._next_xid,
                sent=self.sent,
            )
        except ConnectionLossError:
            return  # the loop notices the closed connection
        except AuthFailedError as refused:
            if self._first is not None and not self._first.done():
                self._first.set_exception(refused)
            conn.abort()
            return
        self._held.write(conn, self.generation, self._next_xid, self.sent)
        if self._first is not None and not self._first.done():
            self._set_state(State.READ_ONLY if reply.read_only else State.CONNECTED)
            self._first.set_result(None)
        elif reply.read_only:
            self._set_state(State.READ_ONLY, new_session=new_session)
        else:
            self._set_state(State.RECONNECTED, new_session=new_session)

    # --- diagnostics --------------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        """Requests written on the current connection and not yet answered."""
        return self._conn.pending_count if self._conn is not None else 0

    def drop_connection(self) -> None:
        """Abort the current socket (for tests of our own recovery; the session survives)."""
        if self._conn is not None:
            self._conn.abort()
