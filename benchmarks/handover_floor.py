"""The least a lock hand-over between two clients can take, at each round trip time.

``python -m benchmarks.handover_floor [--connect HOST:PORT] [--rtt 0,0.5,2] [--count 300]``

W2's hand-over is the time from one holder's release to the next holder's grant, in another
client. Whatever a lock recipe does, that time holds the holder's delete reaching the server,
its log flush, and the deletion's notification reaching the waiter. A waiter that lists the
queue after its wake (Curator's ``InterProcessMutex``, and aiocoord next to the server) adds
the listing's round trip; aiocoord's look-ahead, across a network, lists before the wake.

This measures both shapes with nothing else going on, two aiocoord clients through the same
latency proxy as ``make bench`` (``benchmarks/latency.py``; straight to the server at RTT 0):
client A deletes a node that client B watches; *notification* is the time from A's delete
being written to B's watch firing, *+ listing* adds B's listing of the parent written then.
Their ratio is the least W2 hand-over ratio against Curator that a design granting on the
event alone can show on this machine, at that RTT, through that proxy: issue 29's goal of
0.6x at +0.5 ms is to be read against it. A local server with the production settings is
started unless ``--connect``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections.abc import Iterator

import aiocoord
from benchmarks.latency import LatencyProxy
from benchmarks.settings import RTTS_MS

_PARENT = "/bench-handover-floor"


async def measure(connect: str, count: int) -> tuple[list[float], list[float]]:
    """``count`` hand-overs between two clients on ``connect``: the times (ms) from the
    delete to the watcher's notification, and from the delete to the answer of the listing
    the watcher writes on that notification."""
    holder = await aiocoord.connect(connect)
    waiter = await aiocoord.connect(connect)
    notified: list[float] = []
    listed: list[float] = []
    try:
        await holder.ensure_path(_PARENT)
        node = f"{_PARENT}/n"
        start = 0.0

        async def release() -> None:
            nonlocal start
            start = time.perf_counter()  # the delete is written before this task yields
            await holder.delete(node)

        for _ in range(count):
            await holder.create(node, ephemeral=True)
            _, _, watch = await waiter.get(node, watch=True)
            deleted = asyncio.ensure_future(release())
            await watch
            woke = time.perf_counter()
            await waiter.children(_PARENT)
            done = time.perf_counter()
            await deleted
            notified.append((woke - start) * 1000.0)
            listed.append((done - start) * 1000.0)
        await holder.delete(_PARENT)
    finally:
        await holder.close()
        await waiter.close()
    return notified, listed


@contextlib.contextmanager
def _through(connect: str, rtt_ms: float) -> Iterator[str]:
    if rtt_ms == 0:
        yield connect
        return
    with LatencyProxy(connect, rtt_ms) as proxy:
        yield proxy.connect_string


def main(argv: list[str] | None = None) -> int:
    """Print, per RTT, the medians of both shapes and their ratio."""
    from benchmarks.cli import standalone_server

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.handover_floor", description=__doc__
    )
    parser.add_argument("--connect", default=None, help="HOST:PORT of a running server")
    parser.add_argument(
        "--rtt",
        default=",".join(f"{r:g}" for r in RTTS_MS),
        help="milliseconds added, comma-separated (default: the bench's RTTs)",
    )
    parser.add_argument("--count", type=int, default=300, help="hand-overs per RTT")
    args = parser.parse_args(argv)
    rtts = [float(r) for r in args.rtt.split(",") if r.strip()]
    print("| RTT added | notification p50, ms | + listing p50, ms | ratio |")
    print("|---|---:|---:|---:|")
    with standalone_server(args.connect) as (connect, _):
        for rtt in rtts:
            with _through(connect, rtt) as target:
                notified, listed = asyncio.run(measure(target, args.count))
            alone = statistics.median(notified)
            with_listing = statistics.median(listed)
            label = "loopback" if rtt == 0 else f"+{rtt:g} ms"
            print(f"| {label} | {alone:.3f} | {with_listing:.3f} | {alone / with_listing:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
