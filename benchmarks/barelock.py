"""The least a Python lock client can spend per W1 cycle against a real ZooKeeper.

``python -m benchmarks.barelock [--connect HOST:PORT] [--seconds 3] [--rounds 3]``

A bare ``asyncio.Protocol`` speaks just enough of ZooKeeper's protocol (hand-encoded here:
no aiocoord in it) to run W1's cycle the way aiocoord's ``Lock`` does: the create of an
``EPHEMERAL_SEQUENTIAL`` node and the listing of its parent written in one step and awaited,
the lowest sequence checked, then the delete written and not awaited (its answer comes back
with the next cycle's). It keeps none of what a client owes its users (no reconnect, retry,
watch table, validation, metrics, liveness, cancellation safety, protected names), so its
client CPU per cycle is a floor for any asyncio lock client on this machine and this server,
measured in the same units as ``make bench``'s W1 row: on asyncio's loop and on uvloop where
it is installed, with the server's production settings (a local one is started unless
``--connect``). ``benchmarks.floor`` gives the event loop's own share of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import sys
from typing import Any, cast

from benchmarks.floor import child_result, loops, medians, run_on, time_cycles

_INT = struct.Struct(">i")
_HEADER = struct.Struct(">iqi")  # reply: xid, zxid, err
_CREATE2, _DELETE, _GET_CHILDREN = 15, 2, 8
_EPHEMERAL_SEQUENTIAL = 3
_PARENT = "/barelock"
# world:anyone, all permissions (OPEN_ACL_UNSAFE)
_OPEN_ACL = _INT.pack(1) + _INT.pack(31) + _INT.pack(5) + b"world" + _INT.pack(6) + b"anyone"


def ustring(text: str) -> bytes:
    """``text`` as the protocol writes a string: its UTF-8 length, then its bytes."""
    raw = text.encode()
    return _INT.pack(len(raw)) + raw


def _frame(xid: int, opcode: int, body: bytes) -> bytes:
    return _INT.pack(8 + len(body)) + struct.pack(">ii", xid, opcode) + body


class _BareClient(asyncio.Protocol):
    """A session's handshake, then requests matched to their answers by xid."""

    def __init__(self) -> None:
        self._buf = b""
        self._transport: asyncio.Transport | None = None
        self._xid = 0
        self._waiting: dict[int, asyncio.Future[tuple[int, bytes]]] = {}
        self.handshake: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # a stream transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # protocol 0, last zxid 0, timeout 10 s, session 0, a 16-byte empty password, read-write
        body = struct.pack(">iqiq", 0, 0, 10_000, 0) + _INT.pack(16) + bytes(16) + b"\0"
        self._transport.write(_INT.pack(len(body)) + body)

    def data_received(self, data: bytes) -> None:
        buf = self._buf + data
        pos = 0
        while len(buf) - pos >= 4:
            size = _INT.unpack_from(buf, pos)[0]
            if len(buf) - pos - 4 < size:
                break
            frame = buf[pos + 4 : pos + 4 + size]
            pos += 4 + size
            if not self.handshake.done():
                self.handshake.set_result(frame)
                continue
            xid, _, err = _HEADER.unpack_from(frame)
            self._waiting.pop(xid).set_result((err, frame[16:]))
        self._buf = buf[pos:]

    def send(self, opcode: int, body: bytes) -> asyncio.Future[tuple[int, bytes]]:
        assert self._transport is not None
        self._xid += 1
        fut: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        self._waiting[self._xid] = fut
        self._transport.write(_frame(self._xid, opcode, body))
        return fut


def _children(body: bytes) -> list[str]:
    (count,) = _INT.unpack_from(body)
    names, pos = [], 4
    for _ in range(count):
        (size,) = _INT.unpack_from(body, pos)
        names.append(body[pos + 4 : pos + 4 + size].decode())
        pos += 4 + size
    return names


async def measure(host: str, port: int, seconds: float) -> dict[str, Any]:
    """W1's cycle for ``seconds`` against the server at ``host:port``: the CPU per cycle and
    the cycles per second (:func:`benchmarks.floor.time_cycles`)."""
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(_BareClient, host, port)
    await client.handshake
    err, _ = await client.send(1, ustring(_PARENT) + _INT.pack(0) + _OPEN_ACL + _INT.pack(0))
    assert err in (0, -110), err  # made, or there already (NODEEXISTS)
    create = ustring(_PARENT + "/lock-") + _INT.pack(0) + _OPEN_ACL
    create += _INT.pack(_EPHEMERAL_SEQUENTIAL)
    listing = ustring(_PARENT) + b"\0"
    released: list[asyncio.Future[tuple[int, bytes]]] = []

    async def cycle() -> None:
        made = client.send(_CREATE2, create)
        listed = client.send(_GET_CHILDREN, listing)
        err, body = await made
        assert err == 0, err
        (size,) = _INT.unpack_from(body)
        path = body[4 : 4 + size].decode()
        err, body = await listed
        assert err == 0, err
        mine = int(path[-10:])
        assert min(int(name[-10:]) for name in _children(body)) == mine, "not first"
        # The release: written, not awaited (the next cycle's answers come after it).
        released.append(client.send(_DELETE, ustring(path) + _INT.pack(-1)))
        if len(released) > 64:
            assert all(f.done() and f.result()[0] == 0 for f in released[:32])
            del released[:32]

    result = await time_cycles(cycle, seconds)
    await asyncio.gather(*released)
    return result


def _child(args: list[str]) -> None:
    host, port, seconds, loop_name = args[1], int(args[2]), float(args[3]), args[4]
    print(json.dumps(run_on(loop_name, measure(host, port, seconds))))


def main(argv: list[str] | None = None) -> int:
    """Measure and print the bare lock's CPU per W1 cycle (medians over rounds, each in a
    fresh process)."""
    from benchmarks.cli import standalone_server

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--measure":
        _child(argv)
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks.barelock", description=__doc__)
    parser.add_argument("--connect", default=None, help="HOST:PORT of a running server")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rows: dict[str, list[dict[str, float]]] = {}
    with standalone_server(args.connect) as (connect, _):
        host, _, port = connect.split(",")[0].rpartition(":")
        me = [sys.executable, "-m", "benchmarks.barelock"]
        for _ in range(args.rounds):
            for loop_name in loops():
                command = [*me, "--measure", host, port, str(args.seconds), loop_name]
                rows.setdefault(loop_name, []).append(child_result(command))
    print("| loop | user µs/cycle | system µs/cycle | total | cycles/s |")
    print("|---|---:|---:|---:|---:|")
    for loop_name, results in rows.items():
        user, system, rate = medians(results)
        print(f"| {loop_name} | {user:.0f} | {system:.0f} | {user + system:.0f} | {rate:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
