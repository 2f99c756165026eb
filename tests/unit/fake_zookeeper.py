"""A tiny scripted ZooKeeper peer for wire-level unit tests.

It completes real handshakes (echoing the session asked for, or making one), answers pings
and closeSession, answers auth and SetWatches with success, and hands every other request to
``handler(xid, opcode, body)``, which returns the bytes to send back (whole frames, any
garbage the test wants) or None to stay silent. The default handler answers NoNode (-101).
It is not a ZooKeeper: it exists so that a test can put exact bytes on a real socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

LEN = struct.Struct(">i")
HEADER = struct.Struct(">iqi")  # xid, zxid, err
STAT = struct.Struct(">qqqqiiiqiiq")

Handler = Callable[[int, int, bytes], bytes | None]


def frame(payload: bytes) -> bytes:
    """Length-prefix ``payload``."""
    return LEN.pack(len(payload)) + payload


def reply(xid: int, err: int = 0, body: bytes = b"", zxid: int = 1) -> bytes:
    """A whole reply frame."""
    return frame(HEADER.pack(xid, zxid, err) + body)


def stat_bytes(version: int = 0, data_length: int = 0) -> bytes:
    """A Stat, as the server encodes it."""
    return STAT.pack(1, 1, 0, 0, version, 0, 0, 0, data_length, 0, 1)


def get_data_body(data: bytes) -> bytes:
    """The body of a getData reply."""
    return LEN.pack(len(data)) + data + stat_bytes(data_length=len(data))


def no_node(xid: int, opcode: int, body: bytes) -> bytes:
    """The default handler: every request fails with NoNode."""
    return reply(xid, -101)


class Sink:
    """A transport that takes the bytes and goes nowhere: a ``Connection`` past its handshake
    is given one to send into, and a test feeds it answers with ``data_received``."""

    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        pass


@dataclass
class Peer:
    """One accepted connection."""

    writer: asyncio.StreamWriter
    session_id: int
    requests: asyncio.Queue[tuple[int, int, bytes]] = field(default_factory=asyncio.Queue)


class FakeZooKeeper:
    """Listen on loopback; ``await fake.start()``, connect to :attr:`connect_string`."""

    def __init__(self, handler: Handler = no_node, *, timeout_ms: int | None = None) -> None:
        self.handler = handler
        self.timeout_ms = timeout_ms
        self.peers: list[Peer] = []
        self.connected = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._ids = itertools.count(0x1000)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def connect_string(self) -> str:
        """``127.0.0.1:<port>``."""
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"127.0.0.1:{port}"

    @property
    def port(self) -> int:
        """The listening port."""
        return int(self.connect_string.rsplit(":", 1)[1])

    async def start(self) -> FakeZooKeeper:
        """Start listening."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def aclose(self) -> None:
        """Stop listening and drop every connection."""
        if self._server is not None:
            self._server.close()
        for peer in self.peers:
            peer.writer.transport.abort()
        # Aborted sockets end the handlers; they are not cancelled (asyncio's stream server
        # would report a cancelled handler as an error).
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def __aenter__(self) -> FakeZooKeeper:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._session(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._tasks.discard(task)
            writer.transport.abort()

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        (size,) = LEN.unpack(await reader.readexactly(4))
        connect = await reader.readexactly(size)
        _proto, _zxid, timeout, session_id = struct.unpack_from(">iqiq", connect)
        session_id = session_id or next(self._ids)
        # A server clamps the timeout asked for into its bounds (by default 2 to 20 ticks).
        negotiated = self.timeout_ms if self.timeout_ms is not None else max(timeout, 1000)
        response = struct.pack(">iiqi", 0, negotiated, session_id, 16) + b"p" * 16 + b"\x00"
        writer.write(frame(response))
        peer = Peer(writer, session_id)
        self.peers.append(peer)
        self.connected.set()
        while True:
            (size,) = LEN.unpack(await reader.readexactly(4))
            body = await reader.readexactly(size)
            xid, opcode = struct.unpack_from(">ii", body)
            peer.requests.put_nowait((xid, opcode, body))
            if opcode == 11:  # ping
                writer.write(reply(-2))
            elif opcode == -11:  # closeSession
                writer.write(reply(xid))
                await writer.drain()
                return
            elif xid in (-4, -8):  # auth, SetWatches
                writer.write(reply(xid))
            else:
                out = self.handler(xid, opcode, body)
                if out:
                    writer.write(out)
