"""The event loop's own floor: what a W1 cycle's traffic costs a Python client with no
ZooKeeper and no aiocoord in it.

``python -m benchmarks.floor [--seconds 3] [--rounds 3]``

An echo server runs in a child process on loopback; a bare ``asyncio.Protocol`` client sends
W1's traffic per cycle (three small frames written in one step, one future per frame, three
answers read) and reports its user and system CPU per cycle from ``getrusage``, on asyncio's
default loop and on uvloop when it is installed. The same for three round trips one after the
other (Curator's shape), for comparison. Nothing here is aiocoord's work, so the figure is the
least any asyncio client pays per cycle on this machine: what is left of a client CPU goal
once it is paid is what aiocoord's protocol and recipe code may spend.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import socket
import statistics
import subprocess
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

#: Payload per frame: about a create's or a listing's request.
_PAYLOAD = b"x" * 60


async def _serve(ready: Callable[[int], None]) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readexactly(4)
                body = await reader.readexactly(int.from_bytes(head, "big"))
                writer.write(head + body)
        except asyncio.IncompleteReadError:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    ready(server.sockets[0].getsockname()[1])
    await asyncio.Event().wait()


class _Client(asyncio.Protocol):
    """Frames out, a future per frame, answers matched in order: a client's bare minimum."""

    def __init__(self) -> None:
        self._buf = b""
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # a stream transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        while len(self._buf) >= 4:
            size = int.from_bytes(self._buf[:4], "big")
            if len(self._buf) < 4 + size:
                break
            self._buf = self._buf[4 + size :]
            self._waiting.popleft().set_result(None)

    def send(self) -> asyncio.Future[None]:
        assert self._transport is not None
        fut = asyncio.get_running_loop().create_future()
        self._waiting.append(fut)
        self._transport.write(len(_PAYLOAD).to_bytes(4, "big") + _PAYLOAD)
        return fut


async def _measure(port: int, seconds: float, shape: str) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(_Client, "127.0.0.1", port)

    async def pipelined() -> None:  # W1 in aiocoord: delete, create and listing in one step
        a, b, c = client.send(), client.send(), client.send()
        await a
        await b
        await c

    async def sequential() -> None:  # W1 in Curator: three round trips
        await client.send()
        await client.send()
        await client.send()

    return await time_cycles(pipelined if shape == "pipelined" else sequential, seconds)


async def time_cycles(cycle: Callable[[], Awaitable[None]], seconds: float) -> dict[str, Any]:
    """Run ``cycle`` 500 times to warm up, then for ``seconds``: the process's user and
    system CPU per cycle (µs) and the cycles per second."""
    loop = asyncio.get_running_loop()
    for _ in range(500):
        await cycle()
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = loop.time()
    n = 0
    while loop.time() - start < seconds:
        await cycle()
        n += 1
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "user_us": (after.ru_utime - before.ru_utime) / n * 1e6,
        "sys_us": (after.ru_stime - before.ru_stime) / n * 1e6,
        "cycles_per_s": n / (loop.time() - start),
    }


def child_result(command: list[str]) -> dict[str, float]:
    """Run one measurement in a fresh process (``command``) and read the JSON it prints."""
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def medians(results: list[dict[str, float]]) -> tuple[float, float, float]:
    """The medians of :func:`time_cycles` results over rounds: user and system CPU per cycle
    (µs), and cycles per second."""
    return (
        statistics.median(r["user_us"] for r in results),
        statistics.median(r["sys_us"] for r in results),
        statistics.median(r["cycles_per_s"] for r in results),
    )


def run_on(loop_name: str, coro: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """``coro``'s result, run on asyncio's default loop or on uvloop (``"uvloop"``)."""
    if loop_name == "uvloop":
        import uvloop

        result: dict[str, Any] = uvloop.run(coro)
        return result
    return asyncio.run(coro)


def _child(args: list[str]) -> None:
    """``--serve``: run the echo server and print its port; ``--measure``: one measurement."""
    if args[0] == "--serve":
        asyncio.run(_serve(lambda port: print(port, flush=True)))
        return
    port, seconds, shape, loop_name = int(args[1]), float(args[2]), args[3], args[4]
    print(json.dumps(run_on(loop_name, _measure(port, seconds, shape))))


def loops() -> list[str]:
    """The event loops to measure: asyncio's, and uvloop where it is installed."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return ["asyncio"]
    return ["asyncio", "uvloop"]


def main(argv: list[str] | None = None) -> int:
    """Measure and print the floor (medians over rounds, each in a fresh process)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("--serve", "--measure"):
        _child(argv)
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks.floor", description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    me = [sys.executable, "-m", "benchmarks.floor"]
    server = subprocess.Popen([*me, "--serve"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        rows: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for loop_name in loops():
                for shape in ("pipelined", "sequential"):
                    command = [*me, "--measure", port, str(args.seconds), shape, loop_name]
                    rows.setdefault((loop_name, shape), []).append(child_result(command))
    finally:
        server.kill()
        server.wait()
    print("| loop | cycle (3 frames) | user µs/cycle | system µs/cycle | total | cycles/s |")
    print("|---|---|---:|---:|---:|---:|")
    for (loop_name, shape), results in rows.items():
        user, system, rate = medians(results)
        label = "one step, 3 answers" if shape == "pipelined" else "3 round trips"
        print(
            f"| {loop_name} | {label} | {user:.0f} | {system:.0f} | {user + system:.0f} "
            f"| {rate:,.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
