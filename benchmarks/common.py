"""Helpers shared by the workers of every peer: statistics, memory, node set-up and clean-up.

Set-up and clean-up (creating 10,000 children, deleting a workload's nodes) always use the
aiocoord raw client, outside the measured part, so that every peer measures the same thing.
"""

from __future__ import annotations

import asyncio
import math
import resource
import statistics
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import aiocoord

#: Every workload's nodes live under this path (one sub-path per run).
ROOT = "/aiocoord-bench"

#: How many requests the set-up and clean-up helpers keep in flight.
_WINDOW = 1_000


class Unavailable(Exception):
    """A peer cannot run a workload (a recipe or library missing); the message says why."""


def run_path(workload: str) -> str:
    """A fresh path for one run of ``workload``."""
    return f"{ROOT}/{workload.lower()}-{uuid.uuid4().hex[:12]}"


#: W4's cache: this many children of CHILD_DATA, made before the worker runs.
W4_CHILDREN = 10_000
W4_CHILD_DATA = b"x" * 100


def worker_params(workload: str, seconds: float, path: str, seed: int = 0) -> dict[str, Any]:
    """aiocoord's worker parameters for one run of W1-W4 at full size on ``path`` (W4's
    children must exist already: :func:`make_w4_children`)."""
    base: dict[str, Any] = {"session_timeout": 10.0, "path": path}
    if workload == "W1":
        return {**base, "duration": seconds, "warmup": 50}
    if workload == "W2":
        return {**base, "duration": seconds, "clients": 8}
    if workload == "W3":
        return {**base, "n": 2000}
    return {
        **base,
        "children": W4_CHILDREN,
        "data_size": len(W4_CHILD_DATA),
        "updates": 500,
        "seed": seed,
        "load_timeout": 120.0,
    }


def make_w4_children(connect: str, path: str) -> None:
    """Create W4's children under ``path``."""
    make_children(connect, path, [f"c{i:05d}" for i in range(W4_CHILDREN)], W4_CHILD_DATA)


def percentile(sorted_samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of already sorted samples, linearly interpolated."""
    if not sorted_samples:
        return math.nan
    pos = (len(sorted_samples) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return sorted_samples[lo]
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def summary(samples_ms: Iterable[float], prefix: str = "") -> dict[str, float]:
    """p50/p90/p99/max/mean of latency samples in milliseconds, keys prefixed by ``prefix``."""
    ordered = sorted(samples_ms)
    if not ordered:
        return {}
    return {
        f"{prefix}p50_ms": percentile(ordered, 50),
        f"{prefix}p90_ms": percentile(ordered, 90),
        f"{prefix}p99_ms": percentile(ordered, 99),
        f"{prefix}max_ms": ordered[-1],
        f"{prefix}mean_ms": statistics.fmean(ordered),
    }


def quantiles(samples: Iterable[float], points: int = 101) -> list[float]:
    """``points`` evenly spaced quantiles (0 %..100 %): a compact latency distribution."""
    ordered = sorted(samples)
    if not ordered:
        return []
    return [round(percentile(ordered, 100.0 * i / (points - 1)), 4) for i in range(points)]


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0  # the kernel reports kB
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """The peak resident set size of this process so far, in MiB.

    VmHWM, not ``ru_maxrss``: Linux carries ru_maxrss over from the parent's image across
    fork + exec, so a small worker would report its parent's size.
    """
    hwm = _status_mb("VmHWM")
    if hwm is not None:
        return hwm
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # not Linux


def current_rss_mb() -> float:
    """The resident set size of this process now, in MiB."""
    rss = _status_mb("VmRSS")
    return rss if rss is not None else peak_rss_mb()


async def _windowed(coros: Iterable[Any]) -> None:
    batch: list[Any] = []
    for coro in coros:
        batch.append(coro)
        if len(batch) >= _WINDOW:
            await asyncio.gather(*batch)
            batch = []
    if batch:
        await asyncio.gather(*batch)


async def _make_children(connect: str, path: str, names: Sequence[str], data: bytes) -> None:
    async with aiocoord.connect(connect) as client:
        await client.ensure_path(path)
        await _windowed(client.create(f"{path}/{name}", data) for name in names)


async def _make_nodes(connect: str, path: str, nodes: dict[str, bytes]) -> None:
    async with aiocoord.connect(connect) as client:
        await client.ensure_path(path)
        parents = sorted({n.rpartition("/")[0] for n in nodes} - {path, ""})
        await _windowed(client.create(parent) for parent in parents)
        await _windowed(client.create(node, data) for node, data in nodes.items())


def make_nodes(connect: str, path: str, nodes: dict[str, bytes]) -> None:
    """Create ``path``, then each node of ``nodes`` (full path -> data) under it, their parents
    one level above them first (pipelined, not measured)."""
    asyncio.run(_make_nodes(connect, path, nodes))


def w6_tree(path: str, leaves: int, fanout: int) -> dict[str, bytes]:
    """W6's tree: ``leaves // fanout`` parents of ``fanout`` leaves of 100 bytes each."""
    return {
        f"{path}/p{i // fanout:03d}/c{i % fanout:04d}": b"x" * 100
        for i in range(leaves - leaves % fanout)
    }


def w9_instances(path: str, count: int) -> dict[str, bytes]:
    """W9's service: ``count`` instances of ``svc`` in Curator's JSON, as ServiceDiscovery
    writes them (persistent nodes, so that no registering session has to stay open)."""
    from aiocoord.recipes.discovery import ServiceInstance

    return {
        f"{path}/svc/i{i:05d}": ServiceInstance(
            name="svc", id=f"i{i:05d}", address="10.0.0.1", port=8080, payload={"seq": -1},
            registration_time_utc=1,
        ).to_json()
        for i in range(count)
    }  # fmt: skip


def make_children(connect: str, path: str, names: Sequence[str], data: bytes) -> None:
    """Create ``path`` and one child per name holding ``data`` (pipelined, not measured)."""
    asyncio.run(_make_children(connect, path, names, data))


async def _remove_tree(connect: str, path: str) -> None:
    async with aiocoord.connect(connect) as client:
        await remove_tree_with(client, path)


async def remove_tree_with(client: aiocoord.Client, path: str) -> None:
    """Delete ``path`` and its subtree with the aiocoord ``client``, children pipelined."""
    try:
        names = await client.children(path)
    except aiocoord.NoNodeError:
        return

    async def delete(child: str) -> None:
        try:
            await client.delete(child)
        except aiocoord.NoNodeError:
            pass
        except aiocoord.NotEmptyError:
            # A workload's nodes are one level deep, rarely two: recurse only where needed.
            await remove_tree_with(client, child)

    await _windowed(delete(f"{path}/{name}") for name in names)
    try:
        await client.delete(path)
    except aiocoord.NoNodeError:
        pass
    except aiocoord.NotEmptyError:
        await remove_tree_with(client, path)


def remove_tree(connect: str, path: str) -> None:
    """Delete ``path`` and everything under it (not measured)."""
    asyncio.run(_remove_tree(connect, path))


async def _warm_up(connect: str, seconds: float) -> int:
    path = run_path("warmup")
    done = 0
    async with aiocoord.connect(connect) as client:
        await client.ensure_path(path)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            names = [f"{path}/w{i}" for i in range(100)]
            await asyncio.gather(*(client.create(n, b"x" * 100) for n in names))
            for name in names[:10]:
                await client.create(name + "-s", ephemeral=True, sequential=True)
                await client.children(path)
                await client.get(name)
            await asyncio.gather(*(client.delete(n, recursive=True) for n in names))
            done += 1
        await remove_tree_with(client, path)
    return done


def warm_up(connect: str, seconds: float) -> int:
    """Exercise the server for ``seconds`` (creates, listings, reads, deletes), so that its JIT
    has compiled the request path before the first peer is measured. Returns rounds done."""
    return asyncio.run(_warm_up(connect, seconds))


def rate(count: int, seconds: float) -> float:
    """``count / seconds``, NaN when no time passed."""
    return count / seconds if seconds > 0 else math.nan


class HandoffTracker:
    """Counts acquisitions and handoff latencies of one lock shared by several contenders.

    A handoff is the time from the moment one holder calls release to the moment the
    acquire of the *next* holder (a different contender) returns. Thread-safe, so kazoo's
    threads and the asyncio peers' tasks use the same bookkeeping. It also checks mutual
    exclusion: ``violations`` counts acquisitions made while someone else held the lock.
    """

    def __init__(self, end: float = math.inf) -> None:
        self.end = end
        self.acquisitions = 0
        self.handoffs_ms: list[float] = []
        self.violations = 0
        self._holders = 0
        self._last_release: float | None = None
        self._last_holder: object = None
        self._lock = threading.Lock()

    def acquired(self, who: object) -> None:
        """Call right after ``who``'s acquire returned."""
        now = time.perf_counter()
        with self._lock:
            self._holders += 1
            if self._holders > 1:
                self.violations += 1
            if now <= self.end:
                self.acquisitions += 1
                if self._last_release is not None and self._last_holder is not who:
                    self.handoffs_ms.append((now - self._last_release) * 1000.0)
            self._last_release = None

    def releasing(self, who: object) -> None:
        """Call right before ``who`` calls release."""
        with self._lock:
            self._holders -= 1
            self._last_holder = who
            self._last_release = time.perf_counter()


def cpu_s() -> float:
    """CPU seconds this process has used so far, every thread, user and system: what a client
    costs its machine (kazoo's threads and the event loop alike)."""
    return time.process_time()


def cpu_us_per_op(cpu_seconds: float, ops: int | float) -> float:
    """Client CPU per operation in microseconds, NaN without operations."""
    return cpu_seconds / ops * 1e6 if ops else math.nan
