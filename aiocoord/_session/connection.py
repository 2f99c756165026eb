"""One TCP (or TLS) connection to one ZooKeeper server.

The connection writes framed requests, reads reply frames, and matches replies to futures by
xid. It knows nothing about sessions, state or retries: when the socket dies it fails every
pending future with :class:`ConnectionLossError` and tells its owner once. It is an
``asyncio`` protocol rather than a reader task so a reply resolves its future in the same
callback that received the bytes: no task switch per reply. A *buffered* protocol: the
transport reads into the connection's own buffer, where a plain protocol would get a fresh
``bytes`` per read (asyncio allocates 256 KiB for each, then shrinks it) to be appended to a
buffer again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl as _ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeVar, cast

from aiocoord._observe.metrics import Recorder, error_name
from aiocoord._validation import MAX_REQUEST
from aiocoord._wire.framing import (
    EMPTY,
    REPLY_HEADER,
    REPLY_HEADER_SIZE,
    EmptyResponse,
    Request,
    decode_body,
)
from aiocoord._wire.handshake import ConnectRequest, ConnectResponse, PingRequest, decode_connect
from aiocoord._wire.opcodes import Op, Xid
from aiocoord._wire.watches import WatchNotification, decode_watch
from aiocoord.errors import (
    ConnectionLossError,
    DataTooLargeError,
    NotSentError,
    ProtocolError,
    SessionExpiredError,
    UnknownSessionError,
)

# A frame larger than this is garbage, not a reply: drop the connection instead of allocating.
MAX_FRAME = 64 * 1024 * 1024
# The read buffer: its usual size (a larger frame grows it for as long as it is needed), the
# least room a read is offered, and the largest size kept once the bytes in it are consumed.
_READ_SIZE = 16 * 1024
_MIN_READ = 2048
_KEEP_SIZE = 256 * 1024
# The round-trip floor (Connection.round_trip): the least time a ping or a plain read took,
# over a window of this many seconds. Reads only, since a write's answer waits for the log.
_RTT_WINDOW = 10.0
_PLAIN_READS = frozenset({Op.EXISTS, Op.GET_DATA, Op.GET_CHILDREN, Op.GET_CHILDREN2})
# Answers that say the server no longer has this connection's session (see Connection._gone).
_SESSION_GONE = frozenset({SessionExpiredError.code, UnknownSessionError.code})

R = TypeVar("R")


@dataclass(slots=True)
class Reply(Generic[R]):
    """A decoded reply: the server's zxid, its error code, and the body decoded as the
    request's reply record. The body is None when ``err`` is set, but for a transaction's,
    which lists each op's result, the failing op's error among them."""

    zxid: int
    err: int
    body: R | None


@dataclass(slots=True)
class _Pending(Generic[R]):
    request: Request[R]
    future: asyncio.Future[Reply[R]]
    #: when the request was written (an answer proves the server heard us at or after it)
    sent: float
    #: the sender's OpenTelemetry context, when the client reports to it (see _otel)
    trace: Any = None


class Connection(asyncio.BufferedProtocol):
    """A connected, handshaken socket to one server. Create with :meth:`open`."""

    def __init__(
        self,
        host: str,
        port: int,
        on_watch: Callable[[WatchNotification], None],
        on_zxid: Callable[[int], None],
        on_lost: Callable[[Connection], None] | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.host = host
        #: where answered requests, their latency and the bytes are counted (see _stats)
        self.recorder = recorder if recorder is not None else Recorder()
        self._on_lost = on_lost
        self.port = port
        self._on_watch = on_watch
        self._on_zxid = on_zxid
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        # Bytes read and not yet parsed are _rbuf[_rstart:_rend]; reads land after _rend.
        self._rbuf = bytearray(_READ_SIZE)
        self._rview = memoryview(self._rbuf)
        self._rstart = 0
        self._rend = 0
        self._pending: dict[int, _Pending[Any]] = {}
        # xids whose callers gave up: their replies still come, in order, and count
        self._forgotten: set[int] = set()
        # Auth and SetWatches replies carry fixed xids; the server answers them in order.
        self._special: dict[int, collections.deque[asyncio.Future[Reply[EmptyResponse]]]] = {
            Xid.AUTH: collections.deque(),
            Xid.SET_WATCHES: collections.deque(),
        }
        self._handshake: asyncio.Future[ConnectResponse] = self._loop.create_future()
        self.closed: asyncio.Future[BaseException] = self._loop.create_future()
        self._keepalive: asyncio.TimerHandle | None = None
        self.last_recv = time.monotonic()
        self.last_send = self.last_recv
        #: when the newest request that was answered had been written: the server heard from
        #: this session at or after that moment, so it cannot expire the session before
        #: ``proof`` + the session timeout (see :attr:`Session.alive_until`)
        self.proof = self.last_recv
        # write times of the pings not yet answered (the server answers them in order)
        self._pings: collections.deque[float] = collections.deque()
        # the round-trip floor and when it was taken (see round_trip)
        self._rtt = float("inf")
        self._rtt_at = 0.0
        self.requests_sent = 0
        # frames written while corked, to leave together (see cork); None when not corked
        self._corked: list[bytes] | None = None

    # --- opening --------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        timeout: float,
        session_id: int,
        password: bytes,
        session_timeout_ms: int,
        last_zxid: int,
        read_only: bool,
        on_watch: Callable[[WatchNotification], None],
        on_zxid: Callable[[int], None],
        on_lost: Callable[[Connection], None] | None = None,
        ssl: _ssl.SSLContext | None = None,
        recorder: Recorder | None = None,
    ) -> tuple[Connection, ConnectResponse]:
        """Connect and run the session handshake within ``timeout`` seconds.

        ``on_lost`` is called once, synchronously, when the socket dies, before any pending
        request is failed: whoever owns the connection can update its state first.
        """
        loop = asyncio.get_running_loop()
        conn = cls(host, port, on_watch, on_zxid, on_lost, recorder)

        async def handshake() -> ConnectResponse:
            transport, _ = await loop.create_connection(lambda: conn, host, port, ssl=ssl)
            if conn._transport is None:
                # uvloop calls connection_made on a later loop turn, after this returns.
                conn.connection_made(transport)
            assert conn._transport is not None
            sent = time.monotonic()
            frame = ConnectRequest(
                protocol_version=0,
                last_zxid=last_zxid,
                timeout_ms=session_timeout_ms,
                session_id=session_id,
                password=password,
                read_only=read_only,
            ).frame()
            conn._transport.write(frame)
            conn.recorder.bytes_out += len(frame)
            reply = await conn._handshake
            conn.proof = sent
            if reply.timeout_ms > 0:  # else the session expired: no connection served it
                conn.recorder.connections += 1
            return reply

        try:
            reply = await asyncio.wait_for(handshake(), timeout)
        except BaseException:
            conn.abort()
            raise
        return conn, reply

    # --- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though not always an asyncio.Transport subclass (uvloop's).
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            import socket

            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get_buffer(self, sizehint: int) -> memoryview:
        if len(self._rbuf) - self._rend < _MIN_READ:
            self._make_room()
        return self._rview[self._rend :]

    def _make_room(self) -> None:
        """Move the unparsed bytes to the front, or into a larger buffer when a frame needs
        more room than this one has."""
        start, end = self._rstart, self._rend
        held = end - start
        need = held + _MIN_READ
        if held >= 4:
            size = int.from_bytes(self._rbuf[start : start + 4], "big", signed=True)
            if 0 <= size <= MAX_FRAME:  # else the parser drops the connection
                need = max(need, 4 + size)
        if need <= len(self._rbuf):
            self._rbuf[:held] = bytes(self._rview[start:end])  # copied: the two overlap
        else:
            grown = bytearray(max(need, 2 * len(self._rbuf)))
            grown[:held] = self._rview[start:end]
            self._rbuf = grown
            self._rview = memoryview(grown)
        self._rstart = 0
        self._rend = held

    def buffer_updated(self, nbytes: int) -> None:
        self.last_recv = time.monotonic()
        self.recorder.bytes_in += nbytes
        end = self._rend = self._rend + nbytes
        buf = self._rbuf
        view = self._rview
        pos = self._rstart
        try:
            while end - pos >= 4:
                size = int.from_bytes(buf[pos : pos + 4], "big", signed=True)
                if size < 0 or size > MAX_FRAME:
                    raise ProtocolError(f"frame length {size} from {self.host}:{self.port}")
                if end - pos - 4 < size:
                    break
                frame = bytes(view[pos + 4 : pos + 4 + size])
                pos += 4 + size
                self._rstart = pos
                self._frame(frame)
        except (ProtocolError, ConnectionLossError) as exc:
            self._die(exc)
            return
        if pos == end:
            self._rstart = self._rend = 0
            if len(buf) > _KEEP_SIZE:  # a large frame is through: give its room back
                self._rbuf = bytearray(_READ_SIZE)
                self._rview = memoryview(self._rbuf)

    def data_received(self, data: bytes) -> None:
        """Take ``data`` as if the transport had read it into the buffer."""
        while data:
            room = self.get_buffer(len(data))
            n = min(len(room), len(data))
            room[:n] = data[:n]
            data = data[n:]
            self.buffer_updated(n)

    def connection_lost(self, exc: Exception | None) -> None:
        self._die(
            ConnectionLossError(
                f"connection to {self.host}:{self.port} lost: {exc or 'closed by server'}"
            )
        )

    # --- frames ---------------------------------------------------------------------------

    def _frame(self, frame: bytes) -> None:
        if not self._handshake.done():
            self._handshake.set_result(decode_connect(frame))
            return
        try:
            xid, zxid, err = REPLY_HEADER.unpack_from(frame, 0)
        except struct.error:
            raise ProtocolError(
                f"reply frame of {len(frame)} bytes is shorter than its header"
            ) from None
        # The zxid of a frame counts only once the frame is known to answer something of
        # ours: the session offers it on reconnect as the newest state it has seen, and one
        # taken from a stray frame (a connect reply read as a reply header gives the session
        # timeout as epoch) makes every server refuse the client for good.
        pending = self._pending.pop(xid, None) if xid > 0 else None
        if pending is None:
            self._other_frame(frame, xid, zxid, err)
            return
        if err and err in _SESSION_GONE:  # `err and`: no set lookup for the common answer
            self._pending[xid] = pending  # failed with the rest, as a connection loss
            self._gone(err)
        # The common frame, an answer to a request (the steps of _note and _prove inlined:
        # every reply passes here).
        if zxid > 0:
            self._on_zxid(zxid)
        sent = pending.sent
        if sent > self.proof:
            self.proof = sent
        request = pending.request
        opcode = request.opcode
        took = self.last_recv - sent
        recorder = self.recorder
        recorder.reply(opcode, err, took)
        if opcode in _PLAIN_READS:
            self._round_trip(took)
        if recorder.telemetry is not None:
            self._report(xid, pending, err, self.last_recv)
        body = None
        # A failed transaction still lists each op's result, the failing op's error among them.
        if err == 0 or (opcode == Op.MULTI and len(frame) > REPLY_HEADER_SIZE):
            try:
                body = decode_body(request, frame)
            except ProtocolError as exc:
                if not pending.future.done():
                    pending.future.set_exception(exc)
                raise
        future = pending.future
        if not future.done():
            future.set_result(Reply(zxid, err, body))

    def _gone(self, err: int) -> NoReturn:
        """The server answered that it no longer has this connection's session (closed from
        another connection that attached to it, say) while the connection still stands.
        Nothing sent on it can succeed, and the server may leave it open with its pings
        unanswered until the ping timeout; so it is dropped now, and every request on it
        fails as a connection loss. The reconnect's handshake then tells the session, which
        hears that it expired (and every waiter with it) within a round trip."""
        name = "session expired" if err == SessionExpiredError.code else "unknown session"
        raise ConnectionLossError(
            f"{self.host}:{self.port} answered {name}: the session is gone on the server"
        )

    def _other_frame(self, frame: bytes, xid: int, zxid: int, err: int) -> None:
        """A frame that answers no pending request: a watch event, a ping's answer, an auth
        or SetWatches answer, or the late answer to a request whose caller gave up."""
        if xid == Xid.WATCH:
            self._note(zxid)
            self._on_watch(decode_watch(frame, REPLY_HEADER_SIZE))
            return
        if xid == Xid.PING:
            if err in _SESSION_GONE:
                self._gone(err)
            self._note(zxid)
            if self._pings:
                sent = self._pings.popleft()
                self._prove(sent)
                self._round_trip(self.last_recv - sent)
            return
        queue = self._special.get(xid)
        if queue is not None:
            if not queue:
                raise ProtocolError(f"unexpected reply with xid {xid} from {self.host}:{self.port}")
            self._note(zxid)
            fut = queue.popleft()
            if not fut.done():
                fut.set_result(Reply(zxid, err, None if err else EMPTY))
            return
        if xid in self._forgotten:
            # The caller was cancelled and forgot this xid; the reply means nothing now.
            self._forgotten.discard(xid)
            self._note(zxid)
            return
        raise ProtocolError(f"reply to xid {xid}, never sent, from {self.host}:{self.port}")

    def _report(self, xid: int, pending: _Pending[Any], err: int, received: float) -> None:
        assert self.recorder.telemetry is not None
        name = error_name(err) if err else None
        self.recorder.telemetry.request(
            pending.request,
            xid,
            name,
            pending.sent,
            received,
            (self.host, self.port),
            pending.trace,
        )

    # --- sending ------------------------------------------------------------------------

    def send(
        self, xid: int, request: Request[R], future: asyncio.Future[Reply[R]] | None = None
    ) -> asyncio.Future[Reply[R]]:
        """Write one request and return the future its reply will resolve (``future``, if
        given: a held request's, so that its answer takes no extra hop).

        Raises :class:`NotSentError` when the socket is already closed (nothing was written,
        so the caller may safely wait for the next connection) and DataTooLargeError when the
        request is larger than a server reads.
        """
        transport = self._transport
        if transport is None or self.closed.done():
            raise NotSentError(f"connection to {self.host}:{self.port} is closed")
        frame = request.frame(xid)
        if len(frame) - 4 > MAX_REQUEST:
            raise DataTooLargeError(len(frame) - 4, MAX_REQUEST, getattr(request, "path", None))
        if transport.is_closing():
            # Closed on our side but not yet reported lost: writing would only make asyncio
            # log a failed send, and the request would never leave.
            raise NotSentError(f"connection to {self.host}:{self.port} is closing")
        fut = self._loop.create_future() if future is None else future
        # Registered before the bytes leave, so that even an instant reply finds its future.
        pending = self._pending[xid] = _Pending(request, fut, 0.0)
        pending.sent = self._write(frame)
        if self.recorder.telemetry is not None:
            pending.trace = self.recorder.telemetry.capture()
        return fut

    def send_special(
        self, xid: Xid, request: Request[EmptyResponse]
    ) -> asyncio.Future[Reply[EmptyResponse]]:
        """Write an auth or SetWatches request; its reply comes back under the same fixed xid."""
        fut: asyncio.Future[Reply[EmptyResponse]] = self._loop.create_future()
        if self.closed.done() or self._transport is None or self._transport.is_closing():
            fut.set_exception(NotSentError(f"connection to {self.host}:{self.port} is closed"))
            return fut
        self._special[xid].append(fut)
        self._write(request.frame(xid))
        return fut

    def forget(self, xid: int) -> None:
        """Drop a pending entry whose caller gave up (cancelled or timed out)."""
        if self._pending.pop(xid, None) is not None:
            self._forgotten.add(xid)

    def _note(self, zxid: int) -> None:
        if zxid > 0:
            self._on_zxid(zxid)

    def _prove(self, sent: float) -> None:
        if sent > self.proof:
            self.proof = sent

    def _round_trip(self, took: float) -> None:
        # A windowed minimum: the least sample, replaced by a newer one once it is older than
        # the window (a later server, or a route that got slower, shows within the window).
        if took <= self._rtt or self.last_recv - self._rtt_at > _RTT_WINDOW:
            self._rtt = took
            self._rtt_at = self.last_recv

    @property
    def round_trip(self) -> float | None:
        """The round trip to the server, in seconds, as this connection has seen it: the
        least time a ping or a plain read (exists, getData, getChildren) took over the last
        ten seconds or so; None before the first. Reads queued behind a write wait for the
        write's log flush, which the least of them leaves out."""
        return None if self._rtt == float("inf") else self._rtt

    @property
    def pending_count(self) -> int:
        """Requests written and not yet answered."""
        return len(self._pending)

    def cork(self) -> bool:
        """Hold the frames written from now on until :meth:`uncork`, which writes them in one
        go: one system call and as few packets as they fill, instead of one each. For a
        caller that writes many requests in one step; the step must uncork before it ends
        (nothing else can write meanwhile). False if corked already: the outer caller uncorks.
        """
        if self._corked is not None:
            return False
        self._corked = []
        return True

    def uncork(self) -> None:
        """Write the frames held since :meth:`cork` (their pending replies are registered)."""
        frames, self._corked = self._corked, None
        if frames and self._transport is not None and not self._transport.is_closing():
            # A closing transport drops them; connection_lost then fails their futures.
            self._transport.write(b"".join(frames))

    def _write(self, data: bytes) -> float:
        """Write (or cork) one frame; the time it was written at. Taken before the bytes
        leave: the server hears the request after it, which is what an answer proves (see
        :attr:`proof`; on loopback the server may read it before ``write`` returns)."""
        assert self._transport is not None
        now = self.last_send = time.monotonic()
        if self._corked is not None:
            self._corked.append(data)
        else:
            self._transport.write(data)
        self.recorder.bytes_out += len(data)
        self.requests_sent += 1
        return now

    # --- liveness -----------------------------------------------------------------------

    def start_keepalive(self, session_timeout: float) -> None:
        """Ping when idle a third of the timeout; declare the link dead after 2/3 of silence."""
        interval = session_timeout / 3
        read_timeout = session_timeout * 2 / 3
        tick = max(interval / 4, 0.01)
        ping = PingRequest().frame(Xid.PING)

        def check() -> None:
            if self.closed.done() or self._transport is None:
                return
            now = time.monotonic()
            if now - self.last_recv > read_timeout:
                self._die(
                    ConnectionLossError(
                        f"no reply from {self.host}:{self.port} for {now - self.last_recv:.2f}s"
                    )
                )
                return
            if now - self.last_send >= interval:
                self._transport.write(ping)
                self.recorder.bytes_out += len(ping)
                self.last_send = now
                self._pings.append(now)
            self._keepalive = self._loop.call_later(tick, check)

        self._keepalive = self._loop.call_later(tick, check)

    # --- closing ------------------------------------------------------------------------

    def abort(self) -> None:
        """Close the socket at once; pending requests fail with ConnectionLossError."""
        self._die(ConnectionLossError(f"connection to {self.host}:{self.port} closed"))

    def _die(self, exc: BaseException) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()
            self._keepalive = None
        if self._transport is not None:
            self._transport.abort()
        if not self._handshake.done():
            self._handshake.set_exception(
                exc if isinstance(exc, Exception) else ConnectionLossError(str(exc))
            )
            # Nobody may await it if open() already timed out; mark it retrieved.
            self._handshake.exception()
        if self.closed.done():
            return
        self.closed.set_result(exc)
        if self._on_lost is not None:
            self._on_lost(self)
        pending, self._pending = self._pending, {}
        now = time.monotonic()
        for xid, p in pending.items():
            self.recorder.lost(p.request.opcode)
            if self.recorder.telemetry is not None:
                self._report(xid, p, ConnectionLossError.code, now)
            if not p.future.done():
                p.future.set_exception(ConnectionLossError(str(exc)))
        for queue in self._special.values():
            while queue:
                fut = queue.popleft()
                if not fut.done():
                    fut.set_exception(ConnectionLossError(str(exc)))
