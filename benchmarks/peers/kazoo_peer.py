"""kazoo (threading handler): the raw client (W0), ``kazoo.recipe.lock.Lock`` (W1-W3, W5) and
``kazoo.recipe.cache.TreeCache`` (W4, kazoo's only cache recipe: it mirrors the node and its
children, which here are leaves, so it holds what a children cache holds).

Concurrency is kazoo's own: one thread per contender, as a kazoo user writes it.
"""

from __future__ import annotations

import random
import threading
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
from benchmarks.failover import Member, choose_member, kill_member, order_for

try:
    import kazoo
    from kazoo.client import KazooClient
    from kazoo.protocol.states import KazooState
except ImportError as _exc:  # the bench extra is not installed
    raise Unavailable(f"kazoo is not installed ({_exc}); pip install 'aiocoord[bench]'") from None

perf = time.perf_counter


def version() -> str:
    """The peer's version string."""
    return str(getattr(kazoo, "__version__", "unknown"))


def _open(connect: str, p: dict[str, Any], **options: Any) -> Any:
    client = KazooClient(hosts=connect, timeout=p["session_timeout"], **options)
    client.start(timeout=p["session_timeout"])
    return client


def _close(client: Any) -> None:
    client.stop()
    client.close()


def _join_all(threads: list[threading.Thread], errors: list[BaseException]) -> None:
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _guarded(errors: list[BaseException], func: Any) -> Any:
    def run() -> None:
        try:
            func()
        except BaseException as exc:
            errors.append(exc)

    return run


# --- W0 -------------------------------------------------------------------------------------


def w0_cycle(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """Sequential create + get_children + delete of one node: cycles/s and latency."""
    client = _open(connect, p)
    try:
        base = p["path"]
        client.ensure_path(base)
        node = base + "/n"
        for _ in range(p["warmup"]):
            client.create(node)
            client.get_children(base)
            client.delete(node)
        samples: list[float] = []
        start = perf()
        end = start + p["duration"]
        now = start
        while now < end:
            t0 = now
            client.create(node)
            client.get_children(base)
            client.delete(node)
            now = perf()
            samples.append((now - t0) * 1000.0)
        elapsed = now - start
    finally:
        _close(client)
    return {
        "metrics": {"ops_per_s": rate(len(samples), elapsed), **summary(samples)},
        "samples": {"cycle_ms": samples},
    }


def w0_pipelined(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``count`` create_async calls, ``window`` in flight at a time: creates/s."""
    client = _open(connect, p)
    try:
        base = p["path"]
        client.ensure_path(base)
        count, window = p["count"], p["window"]
        start = perf()
        for first in range(0, count, window):
            pending = [
                client.create_async(f"{base}/p{i}")
                for i in range(first, min(first + window, count))
            ]
            for result in pending:
                result.get()
        elapsed = perf() - start
    finally:
        _close(client)
    return {"metrics": {"creates_per_s": rate(count, elapsed)}, "samples": {}}


# --- W1 -------------------------------------------------------------------------------------


def w1(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """One client, one Lock object: acquire + release in a loop."""
    client = _open(connect, p)
    try:
        lock = client.Lock(p["path"])
        for _ in range(p["warmup"]):
            lock.acquire()
            lock.release()
        cycles: list[float] = []
        acquires: list[float] = []
        cpu0 = cpu_s()
        start = perf()
        end = start + p["duration"]
        now = start
        while now < end:
            t0 = now
            lock.acquire()
            t1 = perf()
            lock.release()
            now = perf()
            acquires.append((t1 - t0) * 1000.0)
            cycles.append((now - t0) * 1000.0)
        elapsed = now - start
        cpu = cpu_s() - cpu0
    finally:
        _close(client)
    return {
        "metrics": {
            "ops_per_s": rate(len(cycles), elapsed),
            **summary(cycles),
            **summary(acquires, "acquire_"),
            "client_cpu_us_per_op": cpu_us_per_op(cpu, len(cycles)),
        },
        "samples": {"cycle_ms": cycles},
    }


# --- W2 -------------------------------------------------------------------------------------


def w2(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``clients`` clients (own sessions), one thread each, hammer one lock path."""
    clients = [_open(connect, p) for _ in range(p["clients"])]
    try:
        locks = [c.Lock(p["path"]) for c in clients]
        errors: list[BaseException] = []
        tracker = HandoffTracker(perf() + p["duration"])

        def hammer(lock: Any) -> None:
            while perf() < tracker.end:
                lock.acquire()
                tracker.acquired(lock)
                tracker.releasing(lock)
                lock.release()

        threads = [threading.Thread(target=_guarded(errors, lambda k=k: hammer(k))) for k in locks]
        cpu0 = cpu_s()
        _join_all(threads, errors)
        cpu = cpu_s() - cpu0
    finally:
        for c in clients:
            _close(c)
    return {
        "metrics": {
            "acq_per_s": rate(tracker.acquisitions, p["duration"]),
            **summary(tracker.handoffs_ms, "handoff_"),
            "violations": tracker.violations,
            "client_cpu_us_per_op": cpu_us_per_op(cpu, tracker.acquisitions),
        },
        "samples": {"handoff_ms": tracker.handoffs_ms},
    }


# --- W3 -------------------------------------------------------------------------------------


def w3(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """``n`` threads, each with its own Lock object on one client, acquire once and release."""
    client = _open(connect, p)
    try:
        baseline = current_rss_mb()
        tracker = HandoffTracker()
        errors: list[BaseException] = []

        def contender() -> None:
            lock = client.Lock(p["path"])
            lock.acquire()
            tracker.acquired(lock)
            tracker.releasing(lock)
            lock.release()

        start = perf()
        threads = [threading.Thread(target=_guarded(errors, contender)) for _ in range(p["n"])]
        _join_all(threads, errors)
        wall = perf() - start
    finally:
        _close(client)
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


# --- W4 -------------------------------------------------------------------------------------


def w4(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """TreeCache over ``children`` children: load time, then setData-to-event latency."""
    from kazoo.recipe.cache import TreeCache, TreeEvent

    base, n = p["path"], p["children"]
    reader = _open(connect, p)
    writer = _open(connect, p)
    rng = random.Random(p["seed"])
    initialized = threading.Event()
    seen_event = threading.Event()
    state: dict[str, Any] = {"data": None, "seen": 0.0}

    def listener(event: Any) -> None:
        if event.event_type == TreeEvent.INITIALIZED:
            initialized.set()
        elif (
            event.event_type == TreeEvent.NODE_UPDATED
            and event.event_data.data == state["data"]
            and not seen_event.is_set()
        ):
            state["seen"] = perf()
            seen_event.set()

    try:
        cache = TreeCache(reader, base)
        cache.listen(listener)
        start = perf()
        cache.start()
        if not initialized.wait(p["load_timeout"]):
            raise RuntimeError(f"TreeCache not initialized within {p['load_timeout']} s")
        load = perf() - start
        try:
            held = cache.get_children(base) or ()
            if len(held) != n:
                raise RuntimeError(f"cache holds {len(held)} children, not {n}")
            latencies: list[float] = []
            for i in range(p["updates"]):
                child = f"{base}/c{rng.randrange(n):05d}"
                data = f"update-{i:06d}-".encode().ljust(p["data_size"], b"u")
                seen_event.clear()
                state["data"] = data
                t0 = perf()
                writer.set(child, data)
                if not seen_event.wait(10.0):
                    raise RuntimeError(f"no update event for {child} within 10 s")
                latencies.append((state["seen"] - t0) * 1000.0)
        finally:
            cache.close()
    finally:
        _close(writer)
        _close(reader)
    return {
        "metrics": {
            "load_s": load,
            **summary(latencies, "update_"),
            "peak_rss_mb": peak_rss_mb(),
        },
        "samples": {"update_ms": latencies},
    }


# --- W5 -------------------------------------------------------------------------------------


def _connected_port(client: Any) -> int | None:
    # kazoo does not expose the server it is on; its connection's socket does.
    try:
        return int(client._connection._socket.getpeername()[1])
    except (AttributeError, OSError):
        return None


def w5(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    """Hold a lock, SIGKILL the member the client is connected to, time the reconnect."""
    members = [Member(**m) for m in p["members"]]
    hosts = ",".join(f"127.0.0.1:{m.port}" for m in order_for(members, p["case"]))
    client = None
    member = None
    for _ in range(p["attempts"]):
        client = _open(hosts, p, randomize_hosts=False)
        port = _connected_port(client)
        member = choose_member(members, port, p["case"]) if port is not None else None
        if member is not None:
            break
        _close(client)
        client = None
    if client is None or member is None:
        raise RuntimeError(f"never connected to a {p['case']} in {p['attempts']} attempts")
    try:
        lock = client.Lock(p["path"])
        lock.acquire()
        session_id = client.client_id[0]
        back = threading.Event()
        marks: dict[str, float] = {}

        def listener(state: Any) -> bool:
            now = perf()
            if state == KazooState.SUSPENDED:
                marks.setdefault("suspended", now)
            elif state == KazooState.LOST:
                marks.setdefault("lost", now)
            elif state == KazooState.CONNECTED and "back" not in marks:
                marks["back"] = now
                back.set()
                return True  # done: kazoo removes a listener that returns True
            return False

        client.add_listener(listener)
        t0 = perf()
        kill_member(member)
        if not back.wait(p["reconnect_timeout"]):
            raise TimeoutError(f"not reconnected within {p['reconnect_timeout']} s")
        same = "lost" not in marks and client.client_id[0] == session_id
        held = bool(lock.is_acquired and lock.node)
        if held:
            held = client.exists(f"{lock.path}/{lock.node}") is not None
        if held:
            lock.release()
    finally:
        _close(client)
    return {
        "metrics": {
            "reconnect_s": marks["back"] - t0,
            "detect_s": marks["suspended"] - t0 if "suspended" in marks else None,
            "same_session": same,
            "lock_held": held,
            "killed_mode": member.mode,
        },
        "samples": {},
    }


# --- W6-W9 ----------------------------------------------------------------------------------


def _scale_not_measured(connect: str, p: dict[str, Any]) -> dict[str, Any]:
    raise Unavailable("the scale workloads (W6-W9) measure aiocoord against Curator (issue 29)")


w6 = w7 = w8 = w9 = _scale_not_measured
