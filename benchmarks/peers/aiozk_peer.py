"""aiozk: the raw client (W0), ``aiozk.recipes.Lock`` (W1-W3, W5) and ``aiozk.recipes.TreeCache``
(W4: aiozk's cache recipe, built on its DataWatcher and ChildrenWatcher; it has no change
events, so an update is timed by wrapping the cache's own DataWatcher.fetch, i.e. at the moment
aiozk has the new data in hand, before its callbacks run).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import Any

from benchmarks.common import (
    HandoffTracker,
    Unavailable,
    cpu_s,
    cpu_us_per_op,
    current_rss_mb,
    peak_rss_mb,
    rate,
    summary,
)
from benchmarks.failover import Member, choose_member, kill_member

try:
    import aiozk
    from aiozk import ZKClient
    from aiozk.states import States
except ImportError as _exc:
    raise Unavailable(f"aiozk is not installed ({_exc}); pip install 'aiocoord[bench]'") from None

perf = time.perf_counter


def version() -> str:
    """The peer's version string."""
    return str(getattr(aiozk, "__version__", "unknown"))


async def _open(connect: str, p: dict[str, Any]) -> Any:
    client = ZKClient(connect, session_timeout=p["session_timeout"])
    await client.start()
    return client


async def _close(client: Any) -> None:
    # aiozk's close can wait on a dead connection for a whole session timeout.
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.close(), 5.0)


# --- W0 -------------------------------------------------------------------------------------


async def _w0_cycle(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    client = await _open(connect, p)
    try:
        base = p["path"]
        await client.ensure_path(base)
        node = base + "/n"
        for _ in range(p["warmup"]):
            await client.create(node)
            await client.get_children(base)
            await client.delete(node)
        samples: list[float] = []
        start = perf()
        end = start + p["duration"]
        now = start
        while now < end:
            t0 = now
            await client.create(node)
            await client.get_children(base)
            await client.delete(node)
            now = perf()
            samples.append((now - t0) * 1000.0)
        elapsed = now - start
    finally:
        await _close(client)
    return {
        "metrics": {"ops_per_s": rate(len(samples), elapsed), **summary(samples)},
        "samples": {"cycle_ms": samples},
    }


def w0_cycle(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """Sequential create + get_children + delete of one node: cycles/s and latency."""
    return asyncio.run(_w0_cycle(connect, p))


async def _w0_pipelined(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    client = await _open(connect, p)
    try:
        base = p["path"]
        await client.ensure_path(base)
        count, window = p["count"], p["window"]
        start = perf()
        for first in range(0, count, window):
            await asyncio.gather(
                *(client.create(f"{base}/p{i}") for i in range(first, min(first + window, count)))
            )
        elapsed = perf() - start
    finally:
        await _close(client)
    return {"metrics": {"creates_per_s": rate(count, elapsed)}, "samples": {}}


def w0_pipelined(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``count`` creates, ``window`` of them in flight at a time: creates/s."""
    return asyncio.run(_w0_pipelined(connect, p))


# --- W1 -------------------------------------------------------------------------------------


async def _w1(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    client = await _open(connect, p)
    try:
        lock = client.recipes.Lock(p["path"])
        for _ in range(p["warmup"]):
            await lock.acquire()
            await lock.release()
        cycles: list[float] = []
        acquires: list[float] = []
        cpu0 = cpu_s()
        start = perf()
        end = start + p["duration"]
        now = start
        while now < end:
            t0 = now
            await lock.acquire()
            t1 = perf()
            await lock.release()
            now = perf()
            acquires.append((t1 - t0) * 1000.0)
            cycles.append((now - t0) * 1000.0)
        elapsed = now - start
        cpu = cpu_s() - cpu0
    finally:
        await _close(client)
    return {
        "metrics": {
            "ops_per_s": rate(len(cycles), elapsed),
            **summary(cycles),
            **summary(acquires, "acquire_"),
            "client_cpu_us_per_op": cpu_us_per_op(cpu, len(cycles)),
        },
        "samples": {"cycle_ms": cycles},
    }


def w1(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """One client, one Lock recipe: acquire + release in a loop."""
    return asyncio.run(_w1(connect, p))


# --- W2 -------------------------------------------------------------------------------------


async def _w2(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    clients = [await _open(connect, p) for _ in range(p["clients"])]
    try:
        locks = [c.recipes.Lock(p["path"]) for c in clients]
        tracker = HandoffTracker(perf() + p["duration"])

        async def hammer(lock: Any) -> None:
            while perf() < tracker.end:
                await lock.acquire()
                tracker.acquired(lock)
                tracker.releasing(lock)
                await lock.release()

        cpu0 = cpu_s()
        await asyncio.gather(*(hammer(lock) for lock in locks))
        cpu = cpu_s() - cpu0
    finally:
        for c in clients:
            await _close(c)
    return {
        "metrics": {
            "acq_per_s": rate(tracker.acquisitions, p["duration"]),
            **summary(tracker.handoffs_ms, "handoff_"),
            "violations": tracker.violations,
            "client_cpu_us_per_op": cpu_us_per_op(cpu, tracker.acquisitions),
        },
        "samples": {"handoff_ms": tracker.handoffs_ms},
    }


def w2(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``clients`` clients, each with its own session and Lock, hammer one lock path."""
    return asyncio.run(_w2(connect, p))


# --- W3 -------------------------------------------------------------------------------------


async def _w3(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    client = await _open(connect, p)
    try:
        baseline = current_rss_mb()
        tracker = HandoffTracker()

        async def contender() -> None:
            # One recipe object per contender: aiozk's Lock refuses concurrent acquires.
            lock = client.recipes.Lock(p["path"])
            await lock.acquire()
            tracker.acquired(lock)
            tracker.releasing(lock)
            await lock.release()

        start = perf()
        await asyncio.gather(*(contender() for _ in range(p["n"])))
        wall = perf() - start
    finally:
        await _close(client)
    return {
        "metrics": {
            "wall_s": wall,
            "peak_rss_mb": peak_rss_mb(),
            "baseline_rss_mb": baseline,
            "acquisitions": tracker.acquisitions,
            "violations": tracker.violations,
        },
        "samples": {},
    }


def w3(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``n`` tasks, each with its own Lock recipe on one client, acquire once and release."""
    return asyncio.run(_w3(connect, p))


# --- W4 -------------------------------------------------------------------------------------


async def _w4(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    base, n = p["path"], p["children"]
    reader = await _open(connect, p)
    writer = await _open(connect, p)
    rng = random.Random(p["seed"])
    loop = asyncio.get_running_loop()
    try:
        tree = reader.recipes.TreeCache(base)
        watcher = tree.data_watcher
        original_fetch = watcher.fetch
        armed: set[str] = set()
        all_armed: asyncio.Future[float] = loop.create_future()
        waiting: dict[str, Any] = {"data": None, "fut": None}

        async def fetch(path: str) -> Any:
            result = await original_fetch(path)
            now = perf()
            if path not in armed:
                armed.add(path)
                # the root's loop and one per child
                if len(armed) >= n + 1 and not all_armed.done():
                    all_armed.set_result(now)
            fut = waiting["fut"]
            if fut is not None and not fut.done() and result == waiting["data"]:
                fut.set_result(now)
            return result

        watcher.fetch = fetch
        start = perf()
        await tree.start()
        started = perf() - start
        # start() returns with the data read; the watches are set by the watch loops after.
        load = await asyncio.wait_for(all_armed, p["load_timeout"]) - start
        try:
            if len(tree.root.children) != n:
                raise RuntimeError(f"cache holds {len(tree.root.children)} children, not {n}")
            latencies: list[float] = []
            for i in range(p["updates"]):
                child = f"{base}/c{rng.randrange(n):05d}"
                data = f"update-{i:06d}-".encode().ljust(p["data_size"], b"u")
                waiting["data"] = data
                waiting["fut"] = loop.create_future()
                t0 = perf()
                await writer.set(child, data, -1)
                seen = await asyncio.wait_for(waiting["fut"], 10.0)
                latencies.append((seen - t0) * 1000.0)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(tree.stop(), 30.0)
    finally:
        await _close(writer)
        await _close(reader)
    return {
        "metrics": {
            "load_s": load,
            "start_returned_s": started,
            **summary(latencies, "update_"),
            "peak_rss_mb": peak_rss_mb(),
        },
        "samples": {"update_ms": latencies},
    }


def w4(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """TreeCache over ``children`` children: load (data read and every watch set), then
    setData-to-event latency."""
    return asyncio.run(_w4(connect, p))


# --- W5 -------------------------------------------------------------------------------------


async def _w5(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    members = [Member(**m) for m in p["members"]]
    client = None
    member = None
    for _ in range(p["attempts"]):
        client = await _open(connect, p)
        member = choose_member(members, int(client.session.conn.port), p["case"])
        if member is not None:
            break
        await _close(client)
        client = None
    if client is None or member is None:
        raise RuntimeError(f"never connected to a {p['case']} in {p['attempts']} attempts")
    try:
        lock = client.recipes.Lock(p["path"])
        await lock.acquire()
        session = client.session
        session_id = session.session_id
        down = session.state.wait_for(States.SUSPENDED, States.LOST)
        t0 = perf()
        kill_member(member)
        await asyncio.wait_for(down, p["reconnect_timeout"])
        detected = perf()
        remaining = p["reconnect_timeout"] - (detected - t0)
        await asyncio.wait_for(session.state.wait_for(States.CONNECTED), max(remaining, 0.01))
        back = perf()
        same = session.session_id == session_id
        node = lock.owned_paths.get("lock")
        held = bool(lock.locked() and node)
        if held:
            held = bool(await client.exists(node))
        if held:
            await lock.release()
    finally:
        await _close(client)
    return {
        "metrics": {
            "reconnect_s": back - t0,
            "detect_s": detected - t0,
            "same_session": same,
            "lock_held": held,
            "killed_mode": member.mode,
        },
        "samples": {},
    }


def w5(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """Hold a lock, SIGKILL the member the client is connected to, time the reconnect."""
    return asyncio.run(_w5(connect, p))


# --- W6-W9 ----------------------------------------------------------------------------------


def _scale_not_measured(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    raise Unavailable("the scale workloads (W6-W9) measure aiocoord against Curator (issue 29)")


w6 = w7 = w8 = w9 = _scale_not_measured
