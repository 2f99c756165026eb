"""FaultProxy: a TCP proxy between ZooKeeper clients and a server that breaks the network on cue.

Put it in front of a server, connect clients to :attr:`FaultProxy.connect_string`, then:

* :meth:`~FaultProxy.drop` cuts every current connection (new ones are still accepted);
* :meth:`~FaultProxy.blackhole` is a partition: sockets stay open, nothing crosses in either
  direction, new connections are accepted but not put through; :meth:`~FaultProxy.heal`
  ends it;
* :meth:`~FaultProxy.latency` delays every forwarded chunk;
* :meth:`~FaultProxy.refuse` resets new connections at once;
  :meth:`~FaultProxy.hold_new_connections` accepts them but puts none through until released;
* :meth:`~FaultProxy.drop_after_request` lets the next client request reach the server, then
  cuts that connection before its reply gets back: the server applied it, the client never
  heard.

Traffic is parsed as ZooKeeper frames (a 4-byte big-endian length, then the payload); a
connection whose first bytes are no plausible frame length (a four-letter word, say) is
forwarded as raw bytes. The proxy owns every task it starts; :meth:`~FaultProxy.aclose`
ends them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections import deque
from collections.abc import Callable
from enum import Enum
from types import TracebackType

from aiocoord._shown import show_in
from aiocoord.testing._drops import DroppedRequest, PendingDrop
from aiocoord.testing._frames import (
    CLOSE_OPCODE,
    FrameBuffer,
    default_drop_predicate,
    reply_xid,
    request_header,
)
from aiocoord.testing._frames import MAX_FRAME as MAX_FRAME

__all__ = [
    "CLOSE_OPCODE",
    "DroppedRequest",
    "FaultProxy",
    "FrameBuffer",
    "PendingDrop",
    "default_drop_predicate",
    "reply_xid",
    "request_header",
]

_CHUNK = 65536


# --- the proxy --------------------------------------------------------------------------------


class _Dir(Enum):
    UP = "client->server"
    DOWN = "server->client"


class _Link:
    """One proxied connection: the client side, later the server side, and what is held back."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.client = (reader, writer)
        self.server: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.pending = {_Dir.UP: bytearray(), _Dir.DOWN: bytearray()}
        self.frames = {_Dir.UP: FrameBuffer(), _Dir.DOWN: FrameBuffer()}
        self.count = {_Dir.UP: 0, _Dir.DOWN: 0}
        self.cut = False
        self.ended_in_partition = False
        self.doom: PendingDrop | None = (
            None  # armed: a request went up, its reply must not come down
        )
        self.discard_up = False

    def reader(self, direction: _Dir) -> asyncio.StreamReader | None:
        side = self.client if direction is _Dir.UP else self.server
        return None if side is None else side[0]

    def writer(self, direction: _Dir) -> asyncio.StreamWriter | None:
        """The writer that data travelling in ``direction`` goes out through."""
        side = self.server if direction is _Dir.UP else self.client
        return None if side is None else side[1]

    def close(self) -> None:
        self.cut = True
        for side in (self.client, self.server):
            if side is not None:
                side[1].transport.abort()

    async def wait_closed(self) -> None:
        for side in (self.client, self.server):
            if side is not None:
                with contextlib.suppress(Exception):
                    await side[1].wait_closed()


class FaultProxy:
    """A TCP proxy to ``target_host:target_port`` with network faults on demand.

    All fault controls are plain (synchronous) methods, to be called from the event loop's
    thread. ``port=0`` picks a free port; read it from :attr:`port` after :meth:`start`.
    """

    def __init__(
        self,
        target_host: str,
        target_port: int,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        connect_timeout: float = 5.0,
    ) -> None:
        #: the host of the server the proxy forwards to
        self.target_host: str = target_host
        #: the port of the server the proxy forwards to
        self.target_port: int = target_port
        #: the address the proxy listens on
        self.host: str = host
        #: the port the proxy listens on: as given until :meth:`start`, then the port bound
        #: (the one picked, for ``port=0``)
        self.port: int = port
        #: seconds to wait for the server to accept a connection put through; past them the
        #: client's connection is closed
        self.connect_timeout: float = connect_timeout
        #: Connections accepted and served (refused ones are not counted).
        self.connections_total: int = 0
        #: Connections cut by :meth:`drop` or :meth:`drop_after_request`.
        self.drops: int = 0
        #: Connections put through to the server.
        self.server_connections: int = 0
        #: Client frames forwarded after the handshake (pings included).
        self.requests_forwarded: int = 0
        self._flowing = True
        self._holding = False
        self._refusing = False
        self._latency = 0.0
        self._arms: deque[PendingDrop] = deque()
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()
        self._sock: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._closed = False

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def connect_string(self) -> str:
        """``"host:port"`` of the proxy, for clients."""
        return f"{self.host}:{self.port}"

    @property
    def open_connections(self) -> int:
        """Connections currently proxied (or held)."""
        return len(self._links)

    async def start(self) -> FaultProxy:
        """Listen and start accepting; returns the proxy."""
        if self._sock is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(128)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self.port = int(sock.getsockname()[1])
        self._acceptor = asyncio.ensure_future(self._accept_loop(sock))
        return self

    async def aclose(self) -> None:
        """Stop listening, cut every connection and end every task; armed drops are cancelled."""
        self._closed = True
        if self._acceptor is not None:
            self._acceptor.cancel()
            await asyncio.gather(self._acceptor, return_exceptions=True)
            self._acceptor = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for link in list(self._links):
            link.close()
        self._notify()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        while self._arms:
            self._arms.popleft()._cancel()

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"<FaultProxy {self.connect_string} -> {self.target_host}:{self.target_port} "
            f"links={len(self._links)} flowing={self._flowing}>"
        )

    # --- faults ---------------------------------------------------------------------------

    def drop(self) -> int:
        """Cut every current connection now (both sides see it closed); return how many.

        New connections are still accepted (subject to the other faults).
        """
        links = list(self._links)
        for link in links:
            self._cut(link)
        self._notify()
        return len(links)

    def blackhole(self) -> None:
        """Partition: nothing is forwarded in either direction until :meth:`heal`.

        Sockets stay open and new connections are accepted but not put through. What is sent
        meanwhile is held and delivered on heal, as TCP would; a connection that either side
        closes during the partition is cut on heal with nothing it sent delivered.
        """
        self._flowing = False
        self._notify()

    def heal(self) -> None:
        """End every fault: blackhole, latency, refusal and holding. Armed drops stay armed."""
        self._flowing = True
        self._holding = False
        self._refusing = False
        self._latency = 0.0
        for link in list(self._links):
            if link.ended_in_partition:
                link.close()
            elif link.server is not None:
                self._flush(link, _Dir.UP)
                self._flush(link, _Dir.DOWN)
        self._notify()

    def latency(self, seconds: float) -> None:
        """Hold each forwarded chunk ``seconds`` before writing it (0 ends the delay).

        Chunks of one direction are delayed one after another.
        """
        if seconds < 0:
            raise ValueError(f"latency must be >= 0, not {seconds}")
        self._latency = float(seconds)

    def refuse(self) -> None:
        """Reset new connections as soon as they are accepted (until :meth:`accept`)."""
        self._refusing = True

    def accept(self) -> None:
        """Accept new connections again after :meth:`refuse`."""
        self._refusing = False

    def hold_new_connections(self, hold: bool = True) -> None:
        """Accept new connections but do not connect them to the server while ``hold`` is true.

        Held connections go through, with what their clients sent, when released.
        """
        self._holding = hold
        self._notify()

    def drop_after_request(
        self, predicate: Callable[[int, int], bool] | None = None
    ) -> PendingDrop:
        """Arm a reply loss: the next client request that ``predicate(xid, opcode)`` accepts
        (default: :func:`default_drop_predicate`) is forwarded, then its connection is cut as
        soon as the server's reply to it arrives, before any of that reply reaches the client.
        Requests the client sends after it are not forwarded.

        Arms queue up: each matching request takes the oldest. Returns a :class:`PendingDrop`
        to ``await``.
        """
        future: asyncio.Future[DroppedRequest] = asyncio.get_running_loop().create_future()
        arm = PendingDrop(predicate or default_drop_predicate, future)
        self._arms.append(arm)
        return arm

    async def wait_for(
        self, condition: Callable[[FaultProxy], bool], timeout: float | None = None
    ) -> None:
        """Wait until ``condition(proxy)`` holds, re-checked whenever a connection opens or
        closes or a fault changes (e.g. ``lambda p: p.open_connections == 0``)."""

        async def until() -> None:
            while not condition(self):
                await self._changed.wait()

        await asyncio.wait_for(until(), timeout)

    # --- internals ------------------------------------------------------------------------

    def _notify(self) -> None:
        # Wake every waiter; each re-checks its own condition.
        self._changed.set()
        self._changed = asyncio.Event()

    async def _until(self, link: _Link, condition: Callable[[], bool]) -> None:
        while not link.cut and not condition():
            await self._changed.wait()

    def _cut(self, link: _Link) -> None:
        if not link.cut:
            self.drops += 1
            link.close()

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(sock)
            if self._refusing or self._closed:
                # Linger 0: close with a reset, the closest to a refusal once accepted.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
                continue
            self.connections_total += 1
            task = asyncio.ensure_future(self._serve(conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _serve(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
        except OSError:
            conn.close()
            return
        link = _Link(reader, writer)
        self._links.add(link)
        self._notify()
        pumps: set[asyncio.Task[None]] = set()
        try:
            up = asyncio.ensure_future(self._pump(link, _Dir.UP))
            pumps.add(up)
            gate = asyncio.ensure_future(
                self._until(link, lambda: self._flowing and not self._holding)
            )
            try:
                await asyncio.wait({up, gate}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                gate.cancel()
                await asyncio.gather(gate, return_exceptions=True)
            if up.done() or link.cut:
                return  # the client left (or was cut) before it was put through
            try:
                server = await asyncio.wait_for(
                    asyncio.open_connection(self.target_host, self.target_port),
                    self.connect_timeout,
                )
            except (TimeoutError, OSError):
                return  # server down: the client sees its connection closed
            link.server = server
            self.server_connections += 1
            if link.cut:
                return
            if self._flowing:
                self._flush(link, _Dir.UP)
            pumps.add(asyncio.ensure_future(self._pump(link, _Dir.DOWN)))
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            if not self._flowing and not link.cut:
                # A side closed during a partition: nobody may learn of it before heal.
                link.ended_in_partition = True
                await self._until(link, lambda: self._flowing)
        finally:
            link.close()
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            await link.wait_closed()
            self._links.discard(link)
            if link.doom is not None:
                # The server closed before replying, or the link was cut: the reply is lost.
                link.doom._resolve()
            self._notify()

    async def _pump(self, link: _Link, direction: _Dir) -> None:
        reader = link.reader(direction)
        assert reader is not None
        while not link.cut:
            try:
                data = await reader.read(_CHUNK)
            except OSError:
                return
            if not data or link.cut:
                if not self._flowing:
                    link.ended_in_partition = True
                return
            if self._latency > 0 and self._can_flow(link, direction):
                await asyncio.sleep(self._latency)
                if link.cut:
                    return
            link.pending[direction] += data
            if self._can_flow(link, direction):
                self._flush(link, direction)
                writer = link.writer(direction)
                if writer is not None:
                    try:
                        await writer.drain()
                    except OSError:
                        return

    def _can_flow(self, link: _Link, direction: _Dir) -> bool:
        return self._flowing and link.server is not None and not link.cut

    def _flush(self, link: _Link, direction: _Dir) -> None:
        data = bytes(link.pending[direction])
        link.pending[direction].clear()
        writer = link.writer(direction)
        if not data or link.cut or writer is None:
            return
        out = self._filter_up(link, data) if direction is _Dir.UP else self._filter_down(link, data)
        if out and not writer.transport.is_closing():
            writer.write(out)

    def _filter_up(self, link: _Link, data: bytes) -> bytes:
        frames = link.frames[_Dir.UP]
        if link.discard_up:
            return b""
        chunks = frames.feed(data)
        if frames.raw:
            return b"".join(chunks)
        out: list[bytes] = []
        for frame in chunks:
            link.count[_Dir.UP] += 1
            out.append(frame)
            if link.count[_Dir.UP] == 1:
                continue  # the ConnectRequest: no xid
            self.requests_forwarded += 1
            header = request_header(frame)
            if header is not None and self._arms and self._arms[0].matches(*header):
                arm = self._arms.popleft()
                arm.request = DroppedRequest(*header)
                link.doom = arm
                link.discard_up = True
                break
        return b"".join(out)

    def _filter_down(self, link: _Link, data: bytes) -> bytes:
        frames = link.frames[_Dir.DOWN]
        chunks = frames.feed(data)
        if frames.raw or link.doom is None:
            link.count[_Dir.DOWN] += len(chunks)
            return b"".join(chunks)
        out: list[bytes] = []
        target = link.doom.request
        assert target is not None
        for frame in chunks:
            link.count[_Dir.DOWN] += 1
            if link.count[_Dir.DOWN] > 1 and reply_xid(frame) == target.xid:
                # The server answered: it applied the request. Cut before the answer goes on.
                writer = link.writer(_Dir.DOWN)
                if out and writer is not None and not writer.transport.is_closing():
                    writer.write(b"".join(out))
                self._cut(link)
                link.doom._resolve()
                return b""
            out.append(frame)
        return b"".join(out)


# Shown as defined here: the private modules beside this one are no place to import from.
show_in(__name__, globals(), __all__)
