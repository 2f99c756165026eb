"""A/B in one process: aiocoord at a git commit against the working tree, interleaved.

``python -m benchmarks.abi REF [--workload W1|W2|W8] [--rounds 30] [--cycles 400]``

:mod:`benchmarks.ab` alternates whole processes, a few seconds each; on a shared 2-core
machine the server's and the machine's drift between two runs is often larger than a change
worth keeping (5% of the client's CPU). This tool loads both trees into one process instead:
``REF``'s ``aiocoord`` package is copied out of git and renamed (``aiocoord_ref``), and the two
clients take turns on one server in short blocks (``--cycles`` lock cycles; acquisitions for
W2; for W8, locks on fresh paths held, then released), reversing the order every round.
Each block's CPU is the process's CPU time (``time.process_time``, exact, not sampled), so
both sides see the same machine within a fraction of a second. Prints the medians and in
how many rounds each side used less CPU per operation; a change that helps wins most rounds.
``REF`` against ``HEAD`` with a clean tree (an A/A run) shows the noise floor.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.cli import standalone_server

_REF_NAME = "aiocoord_ref"
# `aiocoord` as a module name (not in a task name such as "aiocoord-create:...").
_MODULE = re.compile(r"\baiocoord\b(?![-])")
_REPO = Path(__file__).resolve().parent.parent


def resolve(ref: str) -> str:
    """The commit ``ref`` names."""
    return subprocess.run(
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"],
        cwd=_REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def export_ref(ref: str, into: Path) -> Path:
    """Copy ``ref``'s ``aiocoord`` package into ``into``, renamed to ``aiocoord_ref`` (every
    import of it rewritten); the directory to put on ``sys.path``."""
    archive = subprocess.run(
        ["git", "archive", ref, "aiocoord"], cwd=_REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "aiocoord").rename(into / _REF_NAME)
    for source in (into / _REF_NAME).rglob("*.py"):
        text = source.read_text()
        source.write_text(_MODULE.sub(_REF_NAME, text))
    return into


Block = Callable[[int], Awaitable[int]]


async def _w1(package: ModuleType, connect: str, path: str) -> tuple[Block, Any]:
    client = await package.connect(connect, session_timeout=10.0)
    lock = package.Lock(client, path)

    async def block(n: int) -> int:
        for _ in range(n):
            await lock.acquire()
            await lock.release()
        return n

    return block, [client]


async def _w2(package: ModuleType, connect: str, path: str) -> tuple[Block, Any]:
    clients = [await package.connect(connect, session_timeout=10.0) for _ in range(8)]
    locks = [package.Lock(c, path) for c in clients]

    async def block(n: int) -> int:
        count = 0

        async def hammer(lock: Any) -> None:
            nonlocal count
            while count < n:
                await lock.acquire()
                count += 1
                await lock.release()

        await asyncio.gather(*(hammer(lock) for lock in locks))
        return count

    return block, clients


async def _w8(package: ModuleType, connect: str, path: str) -> tuple[Block, Any]:
    client = await package.connect(connect, session_timeout=10.0)
    blocks = 0

    async def block(n: int) -> int:
        # W8's shape: locks on fresh paths (their parents missing), acquired one after
        # another and held, then released; done once the server applied every release.
        nonlocal blocks
        blocks += 1
        locks = [package.Lock(client, f"{path}/b{blocks}/l{i:05d}") for i in range(n)]
        for lock in locks:
            await lock.acquire()
        for lock in locks:
            await lock.release()
        await client.wait_background()
        await client.sync(path)
        return n

    return block, [client]


_WORKLOADS = {"W1": _w1, "W2": _w2, "W8": _w8}


async def compare(
    connect: str,
    ref: ModuleType,
    work: ModuleType,
    workload: str,
    rounds: int,
    cycles: int,
    *,
    verbose: bool = False,
) -> dict[str, list[tuple[float, float]]]:
    """Per side, (CPU µs per operation, operations/s) of every counted round (printed as it
    ends with ``verbose``)."""
    make = _WORKLOADS[workload]
    sides = {
        "ref": await make(ref, connect, f"/abi/{workload.lower()}-ref"),
        "working tree": await make(work, connect, f"/abi/{workload.lower()}-work"),
    }
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    try:
        for block, _ in sides.values():  # warm-up: the server's JIT, both caches
            await block(cycles)
        for round_no in range(rounds):
            order = list(sides) if round_no % 2 == 0 else list(reversed(sides))
            for name in order:
                block = sides[name][0]
                gc.collect()  # each block pays for its own garbage, not the other side's
                c0, t0 = time.process_time(), time.perf_counter()
                n = await block(cycles)
                c1, t1 = time.process_time(), time.perf_counter()
                out[name].append((1e6 * (c1 - c0) / n, n / (t1 - t0)))
                if verbose:
                    print(
                        f"{name:>13}  cpu_us_per_op={out[name][-1][0]:.1f}  "
                        f"ops_per_s={out[name][-1][1]:.0f}"
                    )
    finally:
        for _, clients in sides.values():
            for client in clients:
                await client.close()
    return out


def report(results: dict[str, list[tuple[float, float]]]) -> str:
    """The medians, and the rounds each side won on CPU and on rate."""
    ref, work = results["ref"], results["working tree"]
    lines = []
    for name, rows in results.items():
        cpu = statistics.median(r[0] for r in rows)
        rate = statistics.median(r[1] for r in rows)
        lines.append(f"{name:>13}  median cpu_us_per_op={cpu:.1f}  median ops_per_s={rate:.0f}")
    less_cpu = sum(w[0] < r[0] for w, r in zip(work, ref, strict=True))
    faster = sum(w[1] > r[1] for w, r in zip(work, ref, strict=True))
    ratio = statistics.median(w[0] / r[0] for w, r in zip(work, ref, strict=True))
    lines.append(
        f"working tree used less CPU in {less_cpu} of {len(ref)} rounds "
        f"(median ratio {ratio:.3f}), was faster in {faster} of {len(ref)}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.abi", description=__doc__)
    parser.add_argument("ref", help="git commit to compare the working tree against")
    parser.add_argument("--workload", choices=sorted(_WORKLOADS), default="W1")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cycles", type=int, default=400, help="operations per block")
    parser.add_argument("--connect", help="a running server (default: start one)")
    parser.add_argument("--verbose", action="store_true", help="print every block")
    args = parser.parse_args(argv)
    commit = resolve(args.ref)
    print(
        f"{args.workload}: ref {commit[:12]} ({args.ref}) against the working tree, "
        f"{args.rounds} rounds of {args.cycles}"
    )
    with tempfile.TemporaryDirectory(prefix="aiocoord-abi-") as tmp:
        sys.path.insert(0, str(export_ref(commit, Path(tmp))))
        ref = importlib.import_module(_REF_NAME)
        work = importlib.import_module("aiocoord")

        def run(connect: str) -> dict[str, list[tuple[float, float]]]:
            return asyncio.run(
                compare(
                    connect,
                    ref,
                    work,
                    args.workload,
                    args.rounds,
                    args.cycles,
                    verbose=args.verbose,
                )
            )

        if args.connect:
            results = run(args.connect)
        else:
            with standalone_server(None) as (connect, _):
                results = run(connect)
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
