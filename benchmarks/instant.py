"""What a W1 cycle costs the client when nothing makes it wait: a peer that answers at once,
beside the same clients against a real ZooKeeper.

``python -m benchmarks.instant [--connect HOST:PORT] [--seconds 3] [--rounds 3]``

The *instant peer* (a child process) speaks just enough of ZooKeeper's protocol for W1's cycle:
the handshake, create (plain, sequential, container), getChildren, delete, ping and
closeSession, over nodes it keeps in memory, answered as each frame is read: no log, no disk
flush, no JVM. It is not a ZooKeeper and tests nothing; it only takes the server's time out of
the cycle. Each client runs W1's cycle for ``--seconds`` in a fresh process, against the instant
peer and against a real server (production settings; a local one is started unless
``--connect``), and the table gives its CPU per cycle from ``getrusage``:

- the bare lock of :mod:`benchmarks.barelock` (the least a Python lock client does);
- aiocoord's ``Lock``, as W1 runs it.

Against the instant peer a client hardly sleeps between round trips; against ZooKeeper it
sleeps through every log flush while the server's threads run on the same cores. The difference
between its two rows is what those waits cost it (waking, caches taken over by the server), and
grows with the code a cycle runs; the instant row is its own work.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import struct
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

from benchmarks import barelock
from benchmarks.barelock import ustring
from benchmarks.floor import child_result, medians, time_cycles

_INT = struct.Struct(">i")
_REQUEST = struct.Struct(">ii")  # xid, opcode
_REPLY = struct.Struct(">iqi")  # xid, zxid, err
_STAT = struct.Struct(">qqqqiiiqiiq")
_CREATE, _DELETE, _GET_CHILDREN, _PING, _CREATE2, _CONTAINER, _CLOSE = 1, 2, 8, 11, 15, 19, -11
_NO_NODE, _NODE_EXISTS = -101, -110
_EPHEMERAL, _SEQUENTIAL = 1, 2


class _InstantPeer(asyncio.Protocol):
    """One client connection of the instant peer; ``nodes`` is shared by all of them."""

    sessions: ClassVar[Iterator[int]] = itertools.count(0x1000)
    zxids: ClassVar[Iterator[int]] = itertools.count(1)
    sequences: ClassVar[Iterator[int]] = itertools.count()
    #: path -> names of its children (a path is there once made)
    nodes: ClassVar[dict[str, set[str]]] = {"/": set()}

    def __init__(self) -> None:
        self._buf = b""
        self._session = 0
        self._closed = False
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        buf = self._buf + data
        pos, out = 0, []
        while len(buf) - pos >= 4:
            (size,) = _INT.unpack_from(buf, pos)
            if len(buf) - pos - 4 < size:
                break
            frame = buf[pos + 4 : pos + 4 + size]
            pos += 4 + size
            out.append(self._answer(frame))
        self._buf = buf[pos:]
        assert self._transport is not None
        self._transport.write(b"".join(out))
        if self._closed:
            self._transport.close()

    def _answer(self, frame: bytes) -> bytes:
        if not self._session:  # the handshake: the timeout asked for, a new session
            self._session = next(self.sessions)
            (timeout,) = _INT.unpack_from(frame, 12)
            body = struct.pack(">iiqi", 0, timeout, self._session, 16) + bytes(16) + b"\0"
            return _INT.pack(len(body)) + body
        xid, opcode = _REQUEST.unpack_from(frame)
        err, body = 0, b""
        if opcode == _CLOSE:
            self._closed = True  # once this answer is written
        elif opcode != _PING:
            (size,) = _INT.unpack_from(frame, 8)
            path = frame[12 : 12 + size].decode()
            err, body = self._op(opcode, path, frame)
        reply = _REPLY.pack(xid, next(self.zxids), err) + body
        return _INT.pack(len(reply)) + reply

    def _op(self, opcode: int, path: str, frame: bytes) -> tuple[int, bytes]:
        parent, _, name = path.rpartition("/")
        parent = parent or "/"
        if opcode in (_CREATE, _CREATE2, _CONTAINER):
            (flags,) = _INT.unpack_from(frame, len(frame) - 4)
            if flags & _SEQUENTIAL:
                name += f"{next(self.sequences):010d}"
                path = f"{path}{name[-10:]}"
            if path in self.nodes:
                return _NODE_EXISTS, b""
            if parent not in self.nodes:
                return _NO_NODE, b""
            self.nodes[path] = set()
            self.nodes[parent].add(name)
            owner = self._session if flags & _EPHEMERAL else 0
            stat = _STAT.pack(1, 1, 0, 0, 0, 0, 0, owner, 0, 0, 1)
            return 0, ustring(path) + (b"" if opcode == _CREATE else stat)
        if opcode == _GET_CHILDREN:
            children = self.nodes.get(path)
            if children is None:
                return _NO_NODE, b""
            return 0, _INT.pack(len(children)) + b"".join(ustring(n) for n in children)
        if opcode == _DELETE:
            if self.nodes.pop(path, None) is None:
                return _NO_NODE, b""
            self.nodes[parent].discard(name)
            return 0, b""
        return _NO_NODE, b""  # nothing else is asked in W1's cycle


async def _serve() -> None:
    server = await asyncio.get_running_loop().create_server(_InstantPeer, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


async def _aiocoord_lock(host: str, port: int, seconds: float) -> dict[str, Any]:
    import aiocoord
    from aiocoord.recipes.lock import Lock

    client = await aiocoord.connect(f"{host}:{port}", session_timeout=10)
    try:
        lock = Lock(client, "/instant-lock")

        async def cycle() -> None:
            await lock.acquire()
            await lock.release()

        return await time_cycles(cycle, seconds)
    finally:
        await client.close()


def _measure(args: list[str]) -> None:
    client, host, port, seconds = args[1], args[2], int(args[3]), float(args[4])
    if client == "bare":
        result = asyncio.run(barelock.measure(host, port, seconds))
    else:
        result = asyncio.run(_aiocoord_lock(host, port, seconds))
    print(json.dumps(result))


def main(argv: list[str] | None = None) -> int:
    """Measure and print each client's CPU per W1 cycle against both servers (medians over
    rounds, each measurement in a fresh process)."""
    from benchmarks.cli import standalone_server

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--serve":
        asyncio.run(_serve())
        return 0
    if argv and argv[0] == "--measure":
        _measure(argv)
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instant", description=__doc__)
    parser.add_argument("--connect", default=None, help="HOST:PORT of a running ZooKeeper")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    me = [sys.executable, "-m", "benchmarks.instant"]
    peer = subprocess.Popen([*me, "--serve"], stdout=subprocess.PIPE, text=True)
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        assert peer.stdout is not None
        servers = {"instant peer": ("127.0.0.1", peer.stdout.readline().strip())}
        with standalone_server(args.connect) as (connect, _):
            host, _, port = connect.split(",")[0].rpartition(":")
            servers["ZooKeeper"] = (host, port)
            for _ in range(args.rounds):
                for client in ("bare", "aiocoord"):
                    for server, (host, port) in servers.items():
                        command = [*me, "--measure", client, host, port, str(args.seconds)]
                        rows.setdefault((client, server), []).append(child_result(command))
    finally:
        peer.kill()
        peer.wait()
    names = {"bare": "bare lock", "aiocoord": "aiocoord `Lock`"}
    print("| client | server | user µs/cycle | system µs/cycle | total | cycles/s |")
    print("|---|---|---:|---:|---:|---:|")
    for (client, server), results in rows.items():
        user, system, rate = medians(results)
        print(
            f"| {names[client]} | {server} | {user:.0f} | {system:.0f} | {user + system:.0f} "
            f"| {rate:,.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
