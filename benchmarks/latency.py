"""LatencyProxy: the network between every benchmark client and ZooKeeper, with a round trip
time of our choosing.

Each byte is delayed by ``rtt / 2`` in each direction, measured from the moment the proxy read
it; order is kept, nothing is capped: a chunk read while an earlier one is still in flight is
delayed by its own ``rtt / 2``, not queued behind the other's delay, as on a wire. Clients of
every peer (Curator's JVM included) connect to :attr:`LatencyProxy.connect_string` alike.

It counts the frames (a 4-byte length, then the payload) going up, so a run's requests per
operation can be read off the wire: the ConnectRequest, pings and the close included.

Why not :class:`aiocoord.testing.FaultProxy`, which has a latency too: that one sleeps before
reading the next chunk of a direction, so every chunk waits for the ones before it (a
pipelined client pays the delay once per chunk in flight), and it parses frames for its
faults; a benchmark needs a delay, not a queue.

The proxy runs its own event loop in a thread of the benchmark's parent process, on a
``select()`` loop: epoll's timeout is whole milliseconds, which would turn 0.25 ms into 1 ms.
"""

from __future__ import annotations

import asyncio
import collections
import selectors
import socket
import threading
import time
from types import TracebackType


class _FrameCounter:
    """Counts whole frames in a byte stream without copying it."""

    __slots__ = ("_header", "_need", "frames")

    def __init__(self) -> None:
        self.frames = 0
        self._need = 0  # payload bytes still to skip in the current frame
        self._header = b""

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n:
            if self._need:
                step = min(self._need, n - i)
                self._need -= step
                i += step
                continue
            take = 4 - len(self._header)
            self._header += data[i : i + take]
            i += take
            if len(self._header) == 4:
                length = int.from_bytes(self._header, "big", signed=True)
                self._header = b""
                self.frames += 1
                self._need = max(length, 0)


class _Half(asyncio.Protocol):
    """One side of a proxied connection: what it reads goes, delayed, to its peer's transport."""

    def __init__(self, proxy: LatencyProxy, counter: _FrameCounter | None) -> None:
        self.proxy = proxy
        self.counter = counter
        self.transport: asyncio.Transport | None = None
        self.peer: _Half | None = None
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.timer: asyncio.TimerHandle | None = None
        self.closing = False
        #: what the client sent before the server side was connected
        self.early = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self.early += data
            return
        if self.counter is not None:
            self.counter.feed(data)
        delay = self.proxy.one_way_s
        if delay <= 0 and not self.queue:
            peer.transport.write(data)
            return
        loop = asyncio.get_running_loop()
        self.queue.append((loop.time() + delay, data))
        if self.timer is None:
            self.timer = loop.call_at(self.queue[0][0], self._deliver)

    def _deliver(self) -> None:
        # Everything due goes out in the order it came in; the timer is re-armed for the next.
        self.timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        peer = self.peer
        while self.queue and self.queue[0][0] <= now:
            _, data = self.queue.popleft()
            if peer is not None and peer.transport is not None:
                peer.transport.write(data)
        if self.queue:
            self.timer = loop.call_at(self.queue[0][0], self._deliver)
        elif self.closing and peer is not None and peer.transport is not None:
            peer.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        # What was read before the close still arrives, late, then the close.
        self.closing = True
        self.proxy._halves.discard(self)
        peer = self.peer
        if not self.queue and peer is not None and peer.transport is not None:
            peer.transport.close()


class LatencyProxy:
    """A TCP proxy to ``target`` (``"host:port"``) adding ``rtt_ms`` of round trip time.

    ``with LatencyProxy("127.0.0.1:2181", 2.0) as proxy:`` starts it (its own thread and
    loop) and stops it; clients connect to :attr:`connect_string`. :attr:`frames_up` and
    :attr:`frames_down` count the frames that passed; :meth:`cpu_s` is the proxy thread's CPU.
    """

    def __init__(self, target: str, rtt_ms: float, *, host: str = "127.0.0.1") -> None:
        if rtt_ms < 0:
            raise ValueError(f"rtt_ms must be >= 0, not {rtt_ms}")
        target_host, _, target_port = target.split(",")[0].rpartition(":")
        self.target = (target_host or "127.0.0.1", int(target_port))
        self.rtt_ms = float(rtt_ms)
        self.one_way_s = self.rtt_ms / 2000.0
        self.host = host
        self.port = 0
        self.connections = 0
        self._counters: list[tuple[_FrameCounter, _FrameCounter]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._halves: set[_Half] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None

    @property
    def connect_string(self) -> str:
        """``host:port`` of the proxy, for clients."""
        return f"{self.host}:{self.port}"

    @property
    def frames_up(self) -> int:
        """Frames sent by clients so far (ConnectRequests, requests, pings)."""
        return sum(up.frames for up, _ in self._counters)

    @property
    def frames_down(self) -> int:
        """Frames sent by the server so far (replies and notifications)."""
        return sum(down.frames for _, down in self._counters)

    def cpu_s(self) -> float:
        """CPU seconds the proxy's thread has used so far."""
        thread = self._thread
        if thread is None or thread.ident is None:
            return 0.0
        try:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except (OSError, AttributeError):
            return 0.0

    def start(self) -> LatencyProxy:
        """Start the proxy's thread and wait until it listens."""
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)
        self._thread.start()
        self._ready.wait(10.0)
        if self._failure is not None:
            raise RuntimeError(f"latency proxy failed to start: {self._failure}")
        return self

    def stop(self) -> None:
        """Close every connection and end the thread."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(10.0)

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<LatencyProxy {self.connect_string} -> {self.target} rtt={self.rtt_ms} ms>"

    # --- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # reported to start(), or lost at stop
            self._failure = exc
        finally:
            self._ready.set()
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._accept, self.host, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for half in list(self._halves):
                if half.transport is not None:
                    half.transport.abort()
            await self._server.wait_closed()

    def _accept(self) -> asyncio.Protocol:
        up, down = _FrameCounter(), _FrameCounter()
        self._counters.append((up, down))
        client = _Half(self, up)
        self.connections += 1
        self._halves.add(client)
        task = asyncio.ensure_future(self._connect(client, down))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return client

    async def _connect(self, client: _Half, counter: _FrameCounter) -> None:
        loop = asyncio.get_running_loop()
        server = _Half(self, counter)
        self._halves.add(server)
        try:
            await loop.create_connection(lambda: server, *self.target)
        except OSError:
            if client.transport is not None:
                client.transport.close()
            return
        client.peer, server.peer = server, client
        if client.closing:
            server.transport.close()  # type: ignore[union-attr]
        elif client.early:
            # Bytes the client sent before the server side was up were held: send them now.
            early, client.early = bytes(client.early), bytearray()
            client.data_received(early)
