"""aiocoord: the raw client (W0), ``client.lock`` (W1-W3, W5) and ``ChildrenCache`` (W4)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import aiocoord
from benchmarks.common import (
    HandoffTracker,
    Unavailable,
    current_rss_mb,
    peak_rss_mb,
    rate,
    summary,
)
from benchmarks.failover import Member, choose_member, kill_member

perf = time.perf_counter


def version() -> str:
    """The peer's version string."""
    return aiocoord.__version__


def _lock_class() -> Any:
    try:
        from aiocoord.recipes.lock import Lock
    except ImportError as exc:
        raise Unavailable(f"aiocoord.recipes.lock.Lock cannot be imported ({exc})") from None
    return Lock


async def _open(connect: str, params: dict[str, Any]) -> aiocoord.Client:
    return await aiocoord.open_client(connect, session_timeout=params["session_timeout"])


# --- W0 -------------------------------------------------------------------------------------


async def _w0_cycle(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    client = await _open(connect, p)
    try:
        base = p["path"]
        await client.ensure_path(base)
        node = base + "/n"
        for _ in range(p["warmup"]):
            await client.create(node)
            await client.children(base)
            await client.delete(node)
        samples: list[float] = []
        start = perf()
        end = start + p["duration"]
        now = start
        while now < end:
            t0 = now
            await client.create(node)
            await client.children(base)
            await client.delete(node)
            now = perf()
            samples.append((now - t0) * 1000.0)
        elapsed = now - start
    finally:
        await client.close()
    return {
        "metrics": {"ops_per_s": rate(len(samples), elapsed), **summary(samples)},
        "samples": {"cycle_ms": samples},
    }


def w0_cycle(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """Sequential create + getChildren + delete of one node: cycles/s and latency."""
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
        await client.close()
    return {"metrics": {"creates_per_s": rate(count, elapsed)}, "samples": {}}


def w0_pipelined(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``count`` creates, ``window`` of them in flight at a time: creates/s."""
    return asyncio.run(_w0_pipelined(connect, p))


# --- W1 -------------------------------------------------------------------------------------


async def _w1(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    lock_class = _lock_class()
    client = await _open(connect, p)
    try:
        lock = lock_class(client, p["path"])
        for _ in range(p["warmup"]):
            await lock.acquire()
            await lock.release()
        cycles: list[float] = []
        acquires: list[float] = []
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
    finally:
        await client.close()
    return {
        "metrics": {
            "ops_per_s": rate(len(cycles), elapsed),
            **summary(cycles),
            **summary(acquires, "acquire_"),
        },
        "samples": {"cycle_ms": cycles},
    }


def w1(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """One client, one Lock object: acquire + release in a loop."""
    return asyncio.run(_w1(connect, p))


# --- W2 -------------------------------------------------------------------------------------


async def _w2(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    lock_class = _lock_class()
    clients = [await _open(connect, p) for _ in range(p["clients"])]
    try:
        locks = [lock_class(c, p["path"]) for c in clients]
        start = perf()
        tracker = HandoffTracker(start + p["duration"])

        async def hammer(lock: Any) -> None:
            while perf() < tracker.end:
                await lock.acquire()
                tracker.acquired(lock)
                tracker.releasing(lock)
                await lock.release()

        await asyncio.gather(*(hammer(lock) for lock in locks))
    finally:
        for c in clients:
            await c.close()
    return {
        "metrics": {
            "acq_per_s": rate(tracker.acquisitions, p["duration"]),
            **summary(tracker.handoffs_ms, "handoff_"),
            "violations": tracker.violations,
        },
        "samples": {"handoff_ms": tracker.handoffs_ms},
    }


def w2(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``clients`` clients, each with its own session and Lock, hammer one lock path."""
    return asyncio.run(_w2(connect, p))


# --- W3 -------------------------------------------------------------------------------------


async def _w3(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    lock_class = _lock_class()
    client = await _open(connect, p)
    try:
        baseline = current_rss_mb()
        tracker = HandoffTracker()

        async def contender() -> None:
            lock = lock_class(client, p["path"])
            await lock.acquire()
            tracker.acquired(lock)
            tracker.releasing(lock)
            await lock.release()

        start = perf()
        await asyncio.gather(*(contender() for _ in range(p["n"])))
        wall = perf() - start
    finally:
        await client.close()
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
    """``n`` tasks, each with its own Lock object on one client, acquire once and release."""
    return asyncio.run(_w3(connect, p))


# --- W4 -------------------------------------------------------------------------------------


async def _w4(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    try:
        from aiocoord.recipes.cache import CacheEventType, ChildrenCache
    except ImportError as exc:
        raise Unavailable(f"aiocoord.recipes.cache cannot be imported ({exc})") from None
    base, n = p["path"], p["children"]
    reader = await _open(connect, p)
    writer = await _open(connect, p)
    rng = random.Random(p["seed"])
    try:
        start = perf()
        cache = ChildrenCache(reader, base)
        await cache.start()
        load = perf() - start
        try:
            if len(cache.children) != n:
                raise RuntimeError(f"cache holds {len(cache.children)} children, not {n}")
            subscription = cache.changes()
            waiting: dict[str, Any] = {}

            async def consume() -> None:
                async for event in subscription:
                    if event.type is not CacheEventType.CHILD_UPDATED or event.data is None:
                        continue
                    seen = perf()
                    expected = waiting.get("data")
                    if event.data.data == expected and not waiting["fut"].done():
                        waiting["fut"].set_result(seen)

            consumer = asyncio.ensure_future(consume())
            latencies: list[float] = []
            try:
                loop = asyncio.get_running_loop()
                for i in range(p["updates"]):
                    child = f"{base}/c{rng.randrange(n):05d}"
                    data = f"update-{i:06d}-".encode().ljust(p["data_size"], b"u")
                    waiting["data"] = data
                    waiting["fut"] = loop.create_future()
                    t0 = perf()
                    await writer.set(child, data)
                    seen = await asyncio.wait_for(waiting["fut"], 10.0)
                    latencies.append((seen - t0) * 1000.0)
            finally:
                consumer.cancel()
                await asyncio.gather(consumer, return_exceptions=True)
        finally:
            await cache.close()
    finally:
        await writer.close()
        await reader.close()
    return {
        "metrics": {
            "load_s": load,
            **summary(latencies, "update_"),
            "peak_rss_mb": peak_rss_mb(),
        },
        "samples": {"update_ms": latencies},
    }


def w4(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """ChildrenCache over ``children`` children: load time, then setData-to-event latency."""
    return asyncio.run(_w4(connect, p))


# --- W5 -------------------------------------------------------------------------------------


async def _w5(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    lock_class = _lock_class()
    members = [Member(**m) for m in p["members"]]
    client = None
    member = None
    for _ in range(p["attempts"]):
        client = await _open(connect, p)
        server = client.session.server
        assert server is not None
        member = choose_member(members, server.port, p["case"])
        if member is not None:
            break
        await client.close()
        client = None
    if client is None or member is None:
        raise RuntimeError(f"never connected to a {p['case']} in {p['attempts']} attempts")
    try:
        lock = lock_class(client, p["path"])
        await lock.acquire()
        session_id = client.session_id
        loop = asyncio.get_running_loop()
        back: asyncio.Future[tuple[float, bool]] = loop.create_future()
        suspended: list[float] = []

        def on_change(change: aiocoord.StateChange) -> None:
            if change.state is aiocoord.State.SUSPENDED and not suspended:
                suspended.append(perf())
            if change.state is aiocoord.State.RECONNECTED and not back.done():
                back.set_result((perf(), change.new_session))

        remove = client.add_state_listener(on_change)
        t0 = perf()
        kill_member(member)
        try:
            seen, new_session = await asyncio.wait_for(back, p["reconnect_timeout"])
        finally:
            remove()
        held = lock.is_held and lock.node_path is not None
        if held:
            held = await client.exists(lock.node_path) is not None
        same = not new_session and client.session_id == session_id
        if held:
            await lock.release()
    finally:
        await client.close()
    return {
        "metrics": {
            "reconnect_s": seen - t0,
            "detect_s": suspended[0] - t0 if suspended else None,
            "same_session": same,
            "lock_held": held,
            "killed_mode": member.mode,
        },
        "samples": {},
    }


def w5(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """Hold a lock, SIGKILL the member the client is connected to, time the reconnect."""
    return asyncio.run(_w5(connect, p))
