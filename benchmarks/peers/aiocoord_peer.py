"""aiocoord: the raw client (W0), ``client.lock`` (W1-W3, W5) and ``ChildrenCache`` (W4)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import aiocoord
from aiocoord.testing import session_of
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
    return await aiocoord.connect(connect, session_timeout=params["session_timeout"])


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
        await client.close()
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

        cpu0 = cpu_s()
        await asyncio.gather(*(hammer(lock) for lock in locks))
        cpu = cpu_s() - cpu0
    finally:
        for c in clients:
            await c.close()
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
        server = session_of(client).server
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


# --- W6 -------------------------------------------------------------------------------------


async def _paced(count: int, rate_per_s: float, send: Any) -> list[asyncio.Task[Any]]:
    """Start ``send(i)`` for i in 0..count-1 at ``rate_per_s``, open loop: a slow reply does not
    hold the next one back. Returns the tasks (awaited by the caller)."""
    tasks = []
    began = perf()
    for i in range(count):
        delay = began + i / rate_per_s - perf()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(send(i)))
    return tasks


async def _w6(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    from aiocoord.recipes.cache import CacheEventType, TreeCache

    base, leaves, fanout = p["path"], p["nodes"], p["fanout"]
    reader = await _open(connect, p)
    writer = await _open(connect, p)
    rng = random.Random(p["seed"])
    try:
        baseline = current_rss_mb()
        cache = TreeCache(reader, base, buffer_size=max(4 * p["updates"], 1024))
        start = perf()
        await cache.start()
        load = perf() - start
        rss = current_rss_mb() - baseline
        try:
            held = len(cache.nodes)
            expected = 1 + leaves // fanout + leaves
            if held != expected:
                raise RuntimeError(f"cache holds {held} nodes, not {expected}")
            sent: dict[bytes, float] = {}
            latencies: list[float] = []
            all_seen = asyncio.get_running_loop().create_future()
            subscription = cache.changes()

            async def consume() -> None:
                async for event in subscription:
                    if event.type is not CacheEventType.NODE_UPDATED or event.data is None:
                        continue
                    t0 = sent.pop(event.data.data[:12], None)
                    if t0 is not None:
                        latencies.append((perf() - t0) * 1000.0)
                        if len(latencies) == p["updates"] and not all_seen.done():
                            all_seen.set_result(None)

            consumer = asyncio.ensure_future(consume())

            # Distinct nodes: two quick updates of one node may reach a cache as one.
            picks = rng.sample(range(leaves), p["updates"])

            async def send(i: int) -> None:
                node = f"{base}/p{picks[i] // fanout:03d}/c{picks[i] % fanout:04d}"
                data = f"u{i:011d}".encode().ljust(100, b"u")
                sent[data[:12]] = perf()
                await writer.set(node, data)

            try:
                cpu0 = cpu_s()
                await asyncio.gather(*await _paced(p["updates"], p["rate"], send))
                await asyncio.wait_for(all_seen, 30.0)
                cpu = cpu_s() - cpu0
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
            "cache_rss_mb": rss,
            **summary(latencies, "update_"),
            "client_cpu_us_per_op": cpu_us_per_op(cpu, p["updates"]),
            "peak_rss_mb": peak_rss_mb(),
        },
        "samples": {"update_ms": latencies},
    }


def w6(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """TreeCache over ``nodes`` leaves: load time and memory, then paced updates to events."""
    return asyncio.run(_w6(connect, p))


# --- W7 -------------------------------------------------------------------------------------


async def _w7(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.machine import member_sessions

    n = p["sessions"]
    clients: list[aiocoord.Client] = []
    back: dict[int, float] = {}  # client -> when it was connected again
    expired: set[int] = set()
    done = asyncio.Event()
    expected = [0]

    def listener_for(i: int) -> Any:
        def listener(change: aiocoord.StateChange) -> None:
            if change.state is aiocoord.State.LOST or change.new_session:
                expired.add(i)
            if change.state is aiocoord.State.RECONNECTED:
                back.setdefault(i, perf())
                if expected[0] and len(back) >= expected[0]:
                    done.set()

        return listener

    try:
        for i in range(n):
            client = await _open(connect, p)
            client.add_state_listener(listener_for(i))
            clients.append(client)
        ids = {c.session_id for c in clients}
        # The clients on the member to be killed: what it says it serves, our connections only.
        expected[0] = member_sessions(p["kill_port"])
        if not expected[0]:
            raise RuntimeError("no session is on the member to be killed")
        cpu0 = cpu_s()
        t0 = perf()
        kill_member(Member(index=-1, port=p["kill_port"], pid=p["kill_pid"], mode="follower"))
        await asyncio.wait_for(done.wait(), p["reconnect_timeout"])
        cpu = cpu_s() - cpu0
        same = sum(1 for c in clients if c.session_id in ids)
    finally:
        for client in clients:
            await client.close()
    return {
        "metrics": {
            "sessions": n,
            "moved": expected[0],
            "all_back_s": max(back.values()) - t0,
            "back_p50_s": summary([(t - t0) * 1000 for t in back.values()])["p50_ms"] / 1000,
            "expiries": len(expired),
            "same_sessions": same,
            "client_cpu_ms": cpu * 1000,
            "peak_rss_mb": peak_rss_mb(),
        },
        "samples": {},
    }


def w7(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``sessions`` clients on the ensemble; SIGKILL one member; time until every session
    that was on it is connected again, and count the expiries."""
    return asyncio.run(_w7(connect, p))


# --- W8 -------------------------------------------------------------------------------------


async def _w8(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    lock_class = _lock_class()
    n, base = p["locks"], p["path"]
    client = await _open(connect, p)
    try:
        locks = [lock_class(client, f"{base}/l{i:05d}") for i in range(n)]
        baseline = current_rss_mb()
        cpu0 = cpu_s()
        start = perf()
        for lock in locks:
            await lock.acquire()
        acquired = perf()
        held_mb = current_rss_mb() - baseline
        for lock in locks:
            await lock.release()
        # release() returns before the server has deleted the node (the delete is settled
        # in the background); Curator's waits for its delete. So that the rates compare, the
        # phase ends once every delete is answered and a sync ordered behind them returned.
        await client.wait_background()
        await client.sync(base)
        released = perf()
        cpu = cpu_s() - cpu0
    finally:
        await client.close()
    return {
        "metrics": {
            "acquire_per_s": rate(n, acquired - start),
            "release_per_s": rate(n, released - acquired),
            "kb_per_lock": held_mb * 1024 / n,
            "client_cpu_us_per_op": cpu_us_per_op(cpu, n),
            "peak_rss_mb": peak_rss_mb(),
        },
        "samples": {},
    }


def w8(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """One client acquires ``locks`` locks on distinct paths one after another, holds them
    all, then releases them: rates and memory per held lock. The release phase ends once
    the server has applied every release."""
    return asyncio.run(_w8(connect, p))


# --- W9 -------------------------------------------------------------------------------------


async def _w9(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    from aiocoord.recipes.cache import CacheEventType
    from aiocoord.recipes.discovery import ServiceDiscovery, ServiceInstance

    base, n = p["path"], p["instances"]
    reader = await _open(connect, p)
    writer = await _open(connect, p)
    rng = random.Random(p["seed"])
    try:
        discovery = ServiceDiscovery(reader, base)
        cache = discovery.cache("svc")
        start = perf()
        await cache.start()
        load = perf() - start
        try:
            if len(cache.instances()) != n:
                raise RuntimeError(f"cache holds {len(cache.instances())} instances, not {n}")
            sent: dict[int, float] = {}
            latencies: list[float] = []
            all_seen = asyncio.get_running_loop().create_future()
            subscription = cache.changes()

            async def consume() -> None:
                async for event in subscription:
                    if event.type is not CacheEventType.CHILD_UPDATED or event.instance is None:
                        continue
                    payload = event.instance.payload
                    t0 = sent.pop(payload.get("seq", -1), None)
                    if t0 is not None:
                        latencies.append((perf() - t0) * 1000.0)
                        if len(latencies) == p["updates"] and not all_seen.done():
                            all_seen.set_result(None)

            consumer = asyncio.ensure_future(consume())

            # Each instance once before any twice: two quick updates may reach a cache as one.
            order = list(range(n))
            rng.shuffle(order)

            async def send(i: int) -> None:
                instance_id = f"i{order[i % n]:05d}"
                instance = ServiceInstance(
                    name="svc", id=instance_id, address="10.0.0.1", port=8080,
                    payload={"seq": i}, registration_time_utc=1,
                )  # fmt: skip
                sent[i] = perf()
                await writer.set(f"{base}/svc/{instance_id}", instance.to_json())

            try:
                cpu0 = cpu_s()
                await asyncio.gather(*await _paced(p["updates"], p["rate"], send))
                await asyncio.wait_for(all_seen, 30.0)
                cpu = cpu_s() - cpu0
            finally:
                consumer.cancel()
                await asyncio.gather(consumer, return_exceptions=True)
        finally:
            await cache.close()
            await discovery.close()
    finally:
        await writer.close()
        await reader.close()
    return {
        "metrics": {
            "load_s": load,
            **summary(latencies, "event_"),
            "client_cpu_us_per_op": cpu_us_per_op(cpu, p["updates"]),
            "client_cpu_ms": cpu * 1000,
            "peak_rss_mb": peak_rss_mb(),
        },
        "samples": {"event_ms": latencies},
    }


def w9(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """ServiceCache over ``instances`` instances; paced updates: update-to-event latency, CPU."""
    return asyncio.run(_w9(connect, p))
