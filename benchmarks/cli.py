"""``python -m benchmarks``: start ZooKeeper, run every workload for every peer, write results.

Each (workload, case, peer, repeat) runs in a fresh worker subprocess with a deadline; the
repeats of the peers are interleaved (aiocoord, kazoo, aiozk, aiocoord, ...) so that a drift
of the machine during the run spreads over all of them. The median of the repeats is
reported. Nodes of a run are deleted by the parent after the run, whatever became of it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks import machine, report
from benchmarks.common import (
    ROOT,
    make_children,
    make_nodes,
    quantiles,
    remove_tree,
    run_path,
    w6_tree,
    w9_instances,
    warm_up,
)
from benchmarks.latency import LatencyProxy
from benchmarks.settings import (
    FULL,
    MATRIX_WORKLOADS,
    PEERS,
    QUICK,
    RTTS_MS,
    SERVER_SETTINGS,
    WORKLOADS,
    ServerSettings,
    Settings,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: The bench server is tuned for throughput, not for starting fast as the test servers are:
#: the full JIT (the test default stops at C1) and a larger heap for 10,000 waiters.
SERVER_JVM_OPTIONS = ("-XX:TieredStopAtLevel=4", "-Xmx1g")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmark aiocoord against Curator, kazoo and aiozk on a local ZooKeeper.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="one repeat, about a second per workload, small N"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated workloads to run, e.g. W1,W2 (default: all)"
    )
    parser.add_argument(
        "--peers", default=",".join(PEERS), help=f"comma-separated peers (default: {PEERS})"
    )
    parser.add_argument(
        "--connect",
        default=None,
        metavar="HOST:PORT",
        help="use this ZooKeeper for W0-W4 instead of starting one (W5 always starts an ensemble)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="output directory (default: benchmarks/results for a full run, "
        "benchmarks/results/quick for --quick, benchmarks/results/partial for a run of some "
        "workloads or against --connect)",
    )
    parser.add_argument("--repeats", type=int, default=None, help="override the repeat count")
    parser.add_argument(
        "--server-settings",
        default=",".join(SERVER_SETTINGS),
        help="comma-separated server settings, the headline first (default: "
        f"{','.join(SERVER_SETTINGS)}); the others run the matrix workloads on loopback",
    )
    parser.add_argument(
        "--rtt",
        default=",".join(f"{r:g}" for r in RTTS_MS),
        help="comma-separated round trip times in ms added by the latency proxy for the "
        f"matrix workloads under the headline settings (default: {','.join(map(str, RTTS_MS))})",
    )
    parser.add_argument(
        "--matrix",
        default=",".join(MATRIX_WORKLOADS),
        help="workloads run in every matrix cell (default: "
        f"{','.join(MATRIX_WORKLOADS)}; any of W0-W4)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    only = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = [w for w in only if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    peers = [p.strip().lower() for p in args.peers.split(",") if p.strip()]
    bad = [p for p in peers if p not in PEERS]
    if bad or not peers:
        parser.error(f"unknown peers {bad}; choose from {list(PEERS)}")
    args.only = only or list(WORKLOADS)
    args.peers = [p for p in PEERS if p in peers]
    names = [n.strip().lower() for n in args.server_settings.split(",") if n.strip()]
    if not names or any(n not in SERVER_SETTINGS for n in names):
        parser.error(f"unknown server settings {names}; choose from {list(SERVER_SETTINGS)}")
    args.server_settings = list(dict.fromkeys(names))
    try:
        args.rtt = sorted({float(r) for r in args.rtt.split(",") if r.strip()})
    except ValueError:
        parser.error(f"--rtt takes milliseconds, e.g. 0,0.5,2, not {args.rtt!r}")
    if any(r < 0 for r in args.rtt):
        parser.error("--rtt values must be >= 0")
    matrix = [w.strip().upper() for w in args.matrix.split(",") if w.strip()]
    if any(w not in ("W0", "W1", "W2", "W3", "W4") for w in matrix):
        parser.error(f"--matrix takes workloads among W0-W4, not {matrix}")
    args.matrix = matrix
    return args


def log(message: str) -> None:
    """Progress on standard error."""
    print(message, file=sys.stderr, flush=True)


class Runner:
    """Runs workers and gathers their results into the JSON document."""

    def __init__(self, settings: Settings, peers: list[str]) -> None:
        self.settings = settings
        self.peers = peers
        self.workloads: dict[str, Any] = {}
        #: peers that timed out in a case; W3 carries them on to larger N
        self.timed_out: dict[str, set[str]] = {}
        #: the standalone server this run started (None with --connect, or for W5)
        self.server: Any = None
        #: the servers whose CPU a run is charged with (the standalone one, or the ensemble's)
        self.cpu_servers: list[Any] = []
        #: the latency proxy every client goes through in a matrix cell (None: loopback)
        self.proxy: LatencyProxy | None = None
        self.server_crashes: list[dict[str, Any]] = []

    def check_server(self, result: dict[str, Any], where: str) -> None:
        """Restart the standalone server if the last run brought it down, and say so.

        A client can crash a server: replies queued for it count against the server's heap,
        and an O(N^2) pattern (N listings of N names) exhausts it. The run is recorded with
        the server's last words; the following runs get a fresh server with the same data.
        """
        server = self.server
        if server is None or (server.is_running and server.mode() is not None):
            return
        evidence = [
            line.strip()
            for line in server.log_tail(400).splitlines()
            if "OutOfMemoryError" in line or "Severe unrecoverable error" in line
        ]
        reason = "; ".join(dict.fromkeys(evidence)) or "the server stopped serving"
        crash = {"during": where, "reason": reason}
        self.server_crashes.append(crash)
        result["server_crashed"] = reason
        log(f"  !! ZooKeeper went down during {where}: {reason}; restarting it")
        server.kill()
        server.start()

    # --- one run ----------------------------------------------------------------------------

    def run_worker(
        self, key: str, peer: str, connect: str, params: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Run one worker. One that outlives ``timeout`` is killed ("timeout"); one whose
        resident memory passes the cap is killed too ("killed"), before it can starve the
        machine (an O(N^2) recipe at N=10,000 can want many GB)."""
        spec = {"key": key, "peer": peer, "connect": connect, "params": params}
        cap_mb = self.settings.worker_rss_cap_mb
        with tempfile.TemporaryDirectory(prefix="aiocoord-bench-") as tmp:
            out = Path(tmp) / "result.json"
            err_path = Path(tmp) / "stderr.txt"
            began = time.monotonic()
            with open(err_path, "w") as err:
                verdict, returncode = run_capped(
                    [sys.executable, "-m", "benchmarks.worker", json.dumps(spec), str(out)],
                    began + timeout,
                    cap_mb,
                    err,
                )
            took = time.monotonic() - began
            if verdict == "timeout":
                return {"status": "timeout", "timeout_s": timeout, "metrics": {}}
            if verdict == "memory":
                return {
                    "status": "killed",
                    "reason": f"resident memory over {cap_mb:.0f} MB after {took:.0f} s",
                    "metrics": {},
                }
            if not out.exists():
                tail = " | ".join(err_path.read_text().strip().splitlines()[-5:])
                return {
                    "status": "error",
                    "reason": f"worker exited with status {returncode}: {tail}",
                    "metrics": {},
                }
            result: dict[str, Any] = json.loads(out.read_text())
        result["worker_s"] = round(took, 2)
        return result

    # --- bookkeeping --------------------------------------------------------------------------

    def case(self, workload: str, case: str) -> dict[str, Any]:
        """The JSON entry of one case of a workload (created empty)."""
        entry = self.workloads.setdefault(workload, {"title": WORKLOADS[workload], "cases": {}})
        cases: dict[str, Any] = entry["cases"]
        entry_case: dict[str, Any] = cases.setdefault(case, {"params": {}, "peers": {}})
        return entry_case

    def slot(self, workload: str, case: str, peer: str) -> dict[str, Any]:
        """The JSON entry of one peer in one case."""
        peers: dict[str, Any] = self.case(workload, case)["peers"]
        slot: dict[str, Any] = peers.setdefault(peer, {"runs": [], "samples": {}})
        return slot

    def record(self, workload: str, case: str, peer: str, result: dict[str, Any]) -> None:
        """Add one run's result (its samples are pooled over the repeats)."""
        slot = self.slot(workload, case, peer)
        samples = result.pop("samples", None) or {}
        result.setdefault("metrics", {})
        slot["runs"].append(result)
        if result.get("status") == "ok":
            for name, values in samples.items():
                slot["samples"].setdefault(name, []).extend(values)

    def finish(self, workload: str, case: str) -> None:
        """Summarise the runs of every peer of a case (medians, status, distributions)."""
        for slot in self.case(workload, case)["peers"].values():
            samples = slot.pop("samples", {})
            slot.update(report.aggregate(slot["runs"]))
            if samples:
                slot["distribution"] = {name: quantiles(v) for name, v in samples.items()}
                slot["samples_n"] = {name: len(v) for name, v in samples.items()}

    @staticmethod
    def describe(result: dict[str, Any]) -> str:
        """One line about a run, for the progress log."""
        status = result.get("status")
        if status == "ok":
            shown = [
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in result.get("metrics", {}).items()
                if not k.endswith(("p90_ms", "max_ms", "mean_ms"))
            ]
            return " ".join(shown[:7])
        if status == "timeout":
            return f"timeout >{result['timeout_s']:.0f}s"
        return f"{status}: {result.get('reason', '')}"

    def run_case(
        self,
        workload: str,
        case: str,
        key: str,
        params: Callable[[int], tuple[str, dict[str, Any]]],
        timeout: float,
        *,
        after: Callable[[str, dict[str, Any]], None] | None = None,
        reported_cap: float | None = None,
        skip: set[str] | None = None,
    ) -> None:
        """Every repeat of every peer of one case, interleaved.

        ``params(repeat)`` gives the connect string and the worker's parameters; ``after``
        cleans up after each run. A peer that times out (reported as "timeout >cap s") or
        is unavailable is not run again in this case; peers in ``skip`` are not run at all.
        """
        timed_out = self.timed_out.setdefault(f"{workload}/{case}", set())
        given_up: set[str] = set()
        for peer in sorted(skip or ()):
            if peer in self.peers:
                self.record(
                    workload,
                    case,
                    peer,
                    {
                        "status": "timeout",
                        "timeout_s": reported_cap or timeout,
                        "reason": "not run: it timed out or was killed at a smaller size",
                    },
                )
                timed_out.add(peer)
        for repeat in range(self.settings.repeats):
            for peer in self.peers:
                if peer in given_up or peer in timed_out:
                    continue
                connect, p = params(repeat)
                shown = {k: v for k, v in p.items() if k not in ("path", "members", "seed")}
                self.case(workload, case)["params"] = shown
                began = time.monotonic()
                servers = self.cpu_servers or ([self.server] if self.server else [])
                before = server_counters(servers)
                frames = self.proxy.frames_up if self.proxy else None
                result = self.run_worker(key, peer, connect, p, timeout)
                after_run = server_counters(servers)
                if result["status"] == "ok":
                    per_op(result, key, p, before, after_run)
                    if frames is not None and self.proxy is not None:
                        count = operations(key, result, p)
                        if count:
                            result["metrics"]["frames_per_op"] = (
                                self.proxy.frames_up - frames
                            ) / count
                self.check_server(result, f"{workload} {case} {peer} #{repeat + 1}")
                if after is not None:
                    after(connect, p)
                if result["status"] == "timeout":
                    result["timeout_s"] = reported_cap or timeout
                    timed_out.add(peer)
                elif result["status"] == "killed":
                    timed_out.add(peer)
                elif result["status"] == "unavailable":
                    given_up.add(peer)
                self.record(workload, case, peer, result)
                log(
                    f"  {workload} {case:<10} {peer:<8} #{repeat + 1} "
                    f"({time.monotonic() - began:5.1f}s) {self.describe(result)}"
                )
        self.finish(workload, case)


def server_counters(servers: list[Any]) -> dict[int, tuple[int, float]]:
    """Of each running server (by its pid): the requests it has received so far (``mntr``'s
    zk_packets_received, pings and handshakes included) and the CPU seconds its JVM has used
    (utime + stime from /proc). A server that does not answer is left out."""
    out: dict[int, tuple[int, float]] = {}
    for server in servers:
        if server is None or not server.is_running or server.pid is None:
            continue
        try:
            mntr = server.four_letter("mntr")
            packets = next(
                int(line.split()[1])
                for line in mntr.splitlines()
                if line.startswith("zk_packets_received")
            )
            with open(f"/proc/{server.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, StopIteration, ValueError, IndexError):
            continue
        out[server.pid] = (packets, ticks / os.sysconf("SC_CLK_TCK"))
    return out


def operations(key: str, result: dict[str, Any], p: dict[str, Any]) -> float | None:
    """How many operations a run did, counted the same way for every peer: W0 cycles, W1
    acquire+release cycles (warm-up included), W2 acquisitions, W3 contenders, W8 locks
    (each acquired and released once)."""
    metrics, samples = result.get("metrics", {}), result.get("samples", {})
    if key in ("W0/cycle", "W1/lock") and "cycle_ms" in samples:
        return float(len(samples["cycle_ms"]) + p.get("warmup", 0))
    if key == "W2/handoff" and "acq_per_s" in metrics:
        return float(metrics["acq_per_s"] * p["duration"])
    if key == "W3/waiters":
        return float(p["n"])
    if key == "W8/locks":
        return float(p["locks"])
    return None


def per_op(
    result: dict[str, Any],
    key: str,
    p: dict[str, Any],
    before: dict[int, tuple[int, float]],
    after: dict[int, tuple[int, float]],
) -> None:
    """Add the servers' requests and CPU to the run's metrics: per operation where the
    workload has operations, else the CPU of the whole run (servers that ran throughout
    only: a member the run killed is not counted)."""
    both = [pid for pid in before if pid in after]
    if not both:
        return
    requests = sum(after[pid][0] - before[pid][0] for pid in both)
    cpu = sum(after[pid][1] - before[pid][1] for pid in both)
    metrics = result.setdefault("metrics", {})
    ops = operations(key, result, p)
    if ops:
        metrics["requests_per_op"] = requests / ops
        metrics["server_cpu_us_per_op"] = cpu / ops * 1e6
    else:
        metrics["server_requests"] = requests
        metrics["server_cpu_s"] = cpu


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def group_pids(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` (from /proc): a worker and what it started."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after it
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            pids.append(int(entry))
    return pids


def run_capped(
    argv: list[str], deadline: float, cap_mb: float, stderr: Any = None
) -> tuple[str, int | None]:
    """Run ``argv`` in a process group of its own: ``("done", returncode)``, or
    ``("timeout", None)`` / ``("memory", None)`` once it had to be killed, after its deadline
    or with more than ``cap_mb`` resident in the group. Killing takes the whole group: a peer
    that runs its workload in a child process (Curator's JVM) must not go on loading the
    server through the runs after it."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    try:
        verdict = _watch(proc, deadline, cap_mb)
    finally:
        # The worker's children too, whether it ended or not: what it started must not
        # outlive it (start_new_session made its pid the group's id).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return verdict, proc.returncode if verdict == "done" else None


def _watch(proc: subprocess.Popen[bytes], deadline: float, cap_mb: float) -> str:
    """Wait for ``proc``: "done", or "timeout" / "memory" when it must be killed."""
    while True:
        try:
            proc.wait(timeout=0.25)
            return "done"
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            return "timeout"
        if sum(_rss_mb(pid) for pid in group_pids(proc.pid)) > cap_mb:
            return "memory"


@contextmanager
def standalone_server(
    connect: str | None, server_settings: ServerSettings | None = None
) -> Iterator[tuple[str, Any]]:
    """The server for W0-W4, W6, W8 and W9: the given one, or a fresh local one with
    ``server_settings`` (default: the production defaults) for this run."""
    if connect:
        yield connect, None
        return
    from aiocoord.testing import ZooKeeperServer

    options = (server_settings or SERVER_SETTINGS["production"]).server_options()
    with ZooKeeperServer(jvm_options=SERVER_JVM_OPTIONS, **options) as server:
        yield server.connect_string, server


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Run the selected workloads and return the results document.

    The headline table (``doc["workloads"]``) is every selected workload under the first
    server settings, clients straight on loopback. The matrix (``doc["matrix"]``) runs the
    matrix workloads again through the latency proxy at each other RTT under the headline
    settings, and on loopback under each other server settings.
    """
    settings = QUICK if args.quick else FULL
    if args.repeats is not None:
        settings = Settings(**{**settings.as_dict(), "repeats": max(1, args.repeats)})
    runner = Runner(settings, args.peers)
    began = time.monotonic()
    names = args.server_settings if not args.connect else args.server_settings[:1]
    headline = SERVER_SETTINGS[names[0]]
    doc: dict[str, Any] = {
        "schema": 1,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "mode": settings.mode,
        "command": " ".join(["python -m benchmarks", *(args.argv or [])]),
        "commit": machine.git_commit(),
        "machine": machine.describe(),
        "peers": machine.peer_versions(args.peers),
        "settings": settings.as_dict(),
        "server_settings": "external server (--connect)" if args.connect else headline.describe(),
        "workloads": runner.workloads,
        "matrix": [],
    }
    standalone = ("W0", "W1", "W2", "W3", "W4", "W6", "W8", "W9")
    matrix = [w for w in args.matrix if w in args.only]
    for name in names:
        server_settings = SERVER_SETTINGS[name]
        is_headline = name == names[0]
        cells = [r for r in args.rtt if r > 0] if is_headline else [0.0]
        if is_headline:
            wanted = any(w in args.only for w in standalone) or bool(cells and matrix)
        else:
            wanted = bool(matrix)
        if not wanted:
            continue
        with standalone_server(args.connect, server_settings) as (connect, server):
            described = machine.describe_server(connect, server, server_settings.describe())
            log(f"ZooKeeper {described.get('version')} at {connect} ({described.get('config')})")
            rounds = warm_up(connect, settings.server_warmup_s)
            log(f"  server warmed up for {settings.server_warmup_s:.0f}s ({rounds} rounds)")
            if is_headline:
                doc["server"] = described
                runner.server = server
                _run_standalone_workloads(runner, args.only, connect)
                runner.server = None
                doc["server"]["crashes"] = runner.server_crashes
            for rtt in cells if matrix else []:
                doc["matrix"].append(
                    _run_cell(args, settings, matrix, connect, server, server_settings, rtt)
                )
            remove_tree(connect, ROOT)
    if "W5" in args.only or "W7" in args.only:
        doc["ensemble"] = _run_ensemble(runner, args.only, headline)
    doc["elapsed_s"] = round(time.monotonic() - began, 1)
    doc["machine"]["load_average_end"] = machine.load_average()
    doc["targets"] = report.targets(doc)
    return doc


def _run_cell(
    args: argparse.Namespace,
    settings: Settings,
    workloads: list[str],
    connect: str,
    server: Any,
    server_settings: ServerSettings,
    rtt_ms: float,
) -> dict[str, Any]:
    """One matrix cell: the matrix workloads, ``matrix_s`` long each, through the latency
    proxy at ``rtt_ms`` (straight to the server at 0)."""
    s = dataclasses.replace(settings, w0_cycle_s=settings.matrix_s, w1_s=settings.matrix_s,
                            w2_s=settings.matrix_s)  # fmt: skip
    runner = Runner(s, args.peers)
    runner.server = server
    label = f"{server_settings.describe()}, " + (
        f"+{rtt_ms:g} ms RTT (latency proxy)" if rtt_ms else "loopback"
    )
    if args.connect:
        label = f"external server, +{rtt_ms:g} ms RTT (latency proxy)"
    log(f"matrix: {label}")
    cell: dict[str, Any] = {
        "server_settings": server_settings.name,
        "rtt_ms": rtt_ms,
        "label": label,
        "workloads": runner.workloads,
    }
    if rtt_ms > 0:
        with LatencyProxy(connect, rtt_ms) as proxy:
            runner.proxy = proxy
            cpu0 = proxy.cpu_s()
            _run_standalone_workloads(runner, workloads, proxy.connect_string)
            cell["proxy"] = {
                "connections": proxy.connections,
                "frames_up": proxy.frames_up,
                "frames_down": proxy.frames_down,
                "cpu_s": round(proxy.cpu_s() - cpu0, 3),
            }
    else:
        _run_standalone_workloads(runner, workloads, connect)
    cell["crashes"] = runner.server_crashes
    return cell


def _cleanup(connect: str, params: dict[str, Any]) -> None:
    remove_tree(connect, params["path"])


def _run_standalone_workloads(runner: Runner, only: list[str], connect: str) -> None:
    s = runner.settings
    base = {"session_timeout": s.session_timeout}

    def fresh(workload: str, **extra: Any) -> Callable[[int], tuple[str, dict[str, Any]]]:
        return lambda repeat: (connect, {**base, "path": run_path(workload), **extra})

    slack = s.worker_slack_s
    if "W0" in only:
        log("W0: " + WORKLOADS["W0"])
        cycle = fresh("W0", duration=s.w0_cycle_s, warmup=s.warmup_cycles)
        runner.run_case("W0", "cycle", "W0/cycle", cycle, s.w0_cycle_s + slack, after=_cleanup)
        pipelined = fresh("W0", count=s.w0_pipeline_creates, window=s.w0_pipeline_window)
        runner.run_case("W0", "pipelined", "W0/pipelined", pipelined, slack, after=_cleanup)
    if "W1" in only:
        log("W1: " + WORKLOADS["W1"])
        w1 = fresh("W1", duration=s.w1_s, warmup=s.warmup_cycles)
        runner.run_case("W1", "lock", "W1/lock", w1, s.w1_s + slack, after=_cleanup)
    if "W2" in only:
        log("W2: " + WORKLOADS["W2"])
        w2 = fresh("W2", duration=s.w2_s, clients=s.w2_clients)
        runner.run_case("W2", "handoff", "W2/handoff", w2, s.w2_s + slack, after=_cleanup)
    if "W3" in only:
        log("W3: " + WORKLOADS["W3"])
        timed_out: set[str] = set()
        for n in s.w3_ns:
            case = f"N={n}"
            # Worker start-up and connecting come on top of the wall time the cap is about.
            runner.run_case(
                "W3",
                case,
                "W3/waiters",
                fresh("W3", n=n),
                s.w3_timeout_s + 10.0,
                after=_cleanup,
                reported_cap=s.w3_timeout_s,
                skip=set(timed_out),
            )
            # A peer that timed out at this N would at a larger one.
            timed_out |= runner.timed_out["W3/" + case]
    if "W4" in only:
        log("W4: " + WORKLOADS["W4"])
        path = run_path("W4")
        make_children(
            connect, path, [f"c{i:05d}" for i in range(s.w4_children)], b"x" * s.w4_data_size
        )
        load_timeout = 120.0
        try:
            runner.run_case(
                "W4",
                "cache",
                "W4/cache",
                lambda repeat: (
                    connect,
                    {
                        **base,
                        "path": path,
                        "children": s.w4_children,
                        "data_size": s.w4_data_size,
                        "updates": s.w4_updates,
                        "seed": repeat,
                        "load_timeout": load_timeout,
                    },
                ),
                load_timeout + slack,
            )
        finally:
            remove_tree(connect, path)
    if "W6" in only:
        log("W6: " + WORKLOADS["W6"])
        path = run_path("W6")
        make_nodes(connect, path, w6_tree(path, s.w6_nodes, s.w6_fanout))
        leaves = s.w6_nodes - s.w6_nodes % s.w6_fanout
        try:
            runner.run_case(
                "W6",
                f"N={leaves}",
                "W6/tree",
                lambda repeat: (
                    connect,
                    {
                        **base,
                        "path": path,
                        "nodes": leaves,
                        "fanout": s.w6_fanout,
                        "updates": min(s.w6_updates, leaves),
                        "rate": s.w6_rate,
                        "seed": repeat,
                    },
                ),
                180.0 + s.w6_updates / s.w6_rate + slack,
            )
        finally:
            remove_tree(connect, path)
    if "W8" in only:
        log("W8: " + WORKLOADS["W8"])
        runner.run_case(
            "W8", f"N={s.w8_locks}", "W8/locks", fresh("W8", locks=s.w8_locks), 300.0 + slack,
            after=_cleanup,
        )  # fmt: skip
    if "W9" in only:
        log("W9: " + WORKLOADS["W9"])
        path = run_path("W9")
        make_nodes(connect, path, w9_instances(path, s.w9_instances))
        try:
            runner.run_case(
                "W9",
                f"N={s.w9_instances}",
                "W9/services",
                lambda repeat: (
                    connect,
                    {
                        **base,
                        "path": path,
                        "instances": s.w9_instances,
                        "updates": s.w9_updates,
                        "rate": s.w9_rate,
                        "seed": repeat,
                    },
                ),
                60.0 + s.w9_updates / s.w9_rate + slack,
            )
        finally:
            remove_tree(connect, path)


def _run_ensemble(
    runner: Runner, only: list[str], server_settings: ServerSettings
) -> dict[str, Any]:
    """W5 and W7 on a local 3-member ensemble with the headline server settings."""
    s = runner.settings
    log("ensemble workloads: " + ", ".join(w for w in ("W5", "W7") if w in only))
    cases = [("W5", c) for c in s.w5_cases if "W5" in only]
    if "W7" in only:
        cases.append(("W7", f"N={s.w7_sessions}"))
    try:
        from aiocoord.testing import ZooKeeperEnsemble

        options = server_settings.server_options()
        ensemble = ZooKeeperEnsemble(3, jvm_options=SERVER_JVM_OPTIONS, **options)
        ensemble.start()
    except Exception as exc:  # no JVM, no ZooKeeper here: W5 and W7 cannot run
        reason = f"cannot start a 3-member ensemble: {exc}"
        for workload, case in cases:
            for peer in runner.peers:
                runner.record(workload, case, peer, {"status": "unavailable", "reason": reason})
            runner.finish(workload, case)
        return {"error": reason}
    try:

        def members() -> list[dict[str, Any]]:
            modes = ensemble.modes()
            return [
                {"index": i, "port": m.port, "pid": m.pid, "mode": modes[i]}
                for i, m in enumerate(ensemble.members)
            ]

        def restore(connect: str, params: dict[str, Any]) -> None:
            # The worker SIGKILLed one member: reap it and start it again with its data.
            for i, member in enumerate(ensemble.members):
                if not member.is_running:
                    ensemble.kill(i)
                    ensemble.start(i)
            ensemble.wait_for_quorum(60.0)
            remove_tree(connect, params["path"])

        def failover(case: str) -> Callable[[int], tuple[str, dict[str, Any]]]:
            def params(repeat: int) -> tuple[str, dict[str, Any]]:
                return ensemble.connect_string, {
                    "session_timeout": s.w5_session_timeout,
                    "path": run_path("W5"),
                    "case": case,
                    "members": members(),
                    "attempts": 30,
                    "reconnect_timeout": s.w5_reconnect_timeout_s,
                }

            return params

        if "W5" in only:
            log("W5: " + WORKLOADS["W5"])
            for case in s.w5_cases:
                runner.run_case(
                    "W5",
                    case,
                    "W5/failover",
                    failover(case),
                    s.w5_reconnect_timeout_s + s.worker_slack_s,
                    after=restore,
                )
        if "W7" in only:
            log("W7: " + WORKLOADS["W7"])

            def w7(repeat: int) -> tuple[str, dict[str, Any]]:
                # A follower: killing the leader is W5's other case (an election for all).
                victim = next(m for m in members() if m["mode"] == "follower")
                return ensemble.connect_string, {
                    "session_timeout": s.session_timeout,
                    "path": run_path("W7"),
                    "sessions": s.w7_sessions,
                    "kill_port": victim["port"],
                    "kill_pid": victim["pid"],
                    "reconnect_timeout": s.w7_timeout_s,
                }

            runner.cpu_servers = list(ensemble.members)
            try:
                runner.run_case(
                    "W7",
                    f"N={s.w7_sessions}",
                    "W7/sessions",
                    w7,
                    s.w7_timeout_s + s.w7_sessions * 0.05 + s.worker_slack_s,
                    after=restore,
                )
            finally:
                runner.cpu_servers = []
        return {
            "members": 3,
            "start_s": ensemble.last_start_seconds,
            "settings": server_settings.describe(),
        }
    finally:
        ensemble.close()


def output_dir(args: argparse.Namespace) -> Path:
    """Where a run writes its results: ``--out``, else ``results/quick`` for a smoke run,
    ``results/partial`` for a run of some workloads only or against another server (so that
    a look at one workload never overwrites the committed full run), else ``results``."""
    if args.out:
        return Path(args.out)
    if args.quick:
        return RESULTS_DIR / "quick"
    if args.connect or set(args.only) != set(WORKLOADS):
        return RESULTS_DIR / "partial"
    return RESULTS_DIR


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and write ``latest.json``, ``latest.md`` and the plots."""
    args = parse_args(argv)
    out = output_dir(args)
    out.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    doc = run_all(args)
    if args.no_plots:
        doc["plots"] = []
    else:
        from benchmarks import plots

        doc["plots"], reason = plots.write_all(doc, out)
        if reason:
            doc["plots_unavailable"] = reason
    doc["total_s"] = round(time.monotonic() - began, 1)
    (out / "latest.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "latest.md").write_text(report.markdown(doc))
    log(report.markdown(doc))
    log(f"wrote {out / 'latest.json'}, {out / 'latest.md'} and {len(doc['plots'])} plots")
    log(f"total {doc['total_s']:.1f}s")
    return 0
