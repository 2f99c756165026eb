"""A/B: aiocoord at a git commit against the working tree, on one workload, on one server.

``python -m benchmarks.ab REF [--workload W2] [--rounds 8] [--seconds 4] [--warmup 1]
[--rtt 0.5]``

Checks ``REF`` out into a temporary git worktree, then alternates short runs of aiocoord's
worker for the workload from each tree (each run in a fresh process that imports aiocoord from
that tree), against one local ZooKeeper, reversing the order every round so that neither side
always runs first; the warm-up rounds (the server's JIT) are not counted. Prints every run and
the medians, with the client's CPU per operation where the workload measures it (W1, W2).
On this noisy shared machine a change worth keeping shows up in most pairs, not
only in the medians; ``REF`` against ``HEAD`` with a clean tree (an A/A run) shows the noise
floor.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.cli import standalone_server
from benchmarks.common import make_w4_children, worker_params
from benchmarks.latency import LatencyProxy

#: Per workload: the metric compared (and whether higher is better), and a latency shown too.
_METRICS = {
    "W1": ("ops_per_s", True, "p50_ms"),
    "W2": ("acq_per_s", True, "handoff_p50_ms"),
    "W3": ("wall_s", False, "peak_rss_mb"),
    "W4": ("update_p50_ms", False, "load_s"),
}

#: The client's CPU per operation (µs), reported by the workloads that measure it.
_CPU = "client_cpu_us_per_op"

_WORKER = """
import json, sys
from benchmarks.peers.aiocoord_peer import {fn}
print(json.dumps({fn}(sys.argv[1], json.loads(sys.argv[2]))["metrics"]))
"""


def _params(workload: str, seconds: float, round_no: int) -> dict[str, Any]:
    # W1-W3 get a fresh lock path per round; W4 reuses its one set of children.
    path = "/ab/w4" if workload == "W4" else f"/ab/{workload.lower()}-{round_no}"
    return worker_params(workload, seconds, path, seed=round_no)


def _run(tree: Path, workload: str, connect: str, params: dict[str, Any]) -> dict[str, Any]:
    code = _WORKER.format(fn=workload.lower())
    done = subprocess.run(
        [sys.executable, "-c", code, connect, json.dumps(params)],
        cwd=tree,  # `python -c` puts the working directory first on sys.path
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker in {tree} failed:\n{done.stderr[-2000:]}")
    metrics: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return metrics


def main(argv: list[str] | None = None) -> int:
    """Run the A/B and print the medians; exit status 0."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__)
    parser.add_argument("ref", help="the commit to compare the working tree with (e.g. HEAD)")
    parser.add_argument("--workload", default="W2", choices=sorted(_METRICS))
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0, help="per run (W1, W2)")
    parser.add_argument(
        "--warmup", type=int, default=1, help="rounds run first and not counted (server JIT)"
    )
    parser.add_argument("--connect", default=None, help="an existing ZooKeeper")
    parser.add_argument(
        "--rtt",
        type=float,
        default=0.0,
        help="ms of round trip time added between the clients and the server (latency proxy)",
    )
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    metric, higher_better, extra = _METRICS[args.workload]
    with tempfile.TemporaryDirectory(prefix="aiocoord-ab-") as tmp:
        other = Path(tmp) / "ref"
        subprocess.run(
            ["git", "-C", str(here), "worktree", "add", "-q", "--detach", str(other), args.ref],
            check=True,
        )
        trees = {args.ref: other, "working tree": here}
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        try:
            with contextlib.ExitStack() as stack:
                connect, _ = stack.enter_context(standalone_server(args.connect))
                if args.rtt > 0:
                    connect = stack.enter_context(LatencyProxy(connect, args.rtt)).connect_string
                if args.workload == "W4":
                    make_w4_children(connect, _params("W4", 0, 0)["path"])
                order = list(trees)
                for round_no in range(args.warmup + args.rounds):
                    counted = round_no >= args.warmup
                    for name in order if round_no % 2 == 0 else order[::-1]:
                        params = _params(args.workload, args.seconds, round_no)
                        m = _run(trees[name], args.workload, connect, params)
                        if counted:
                            results[name].append(m)
                        print(
                            f"{name:>14}  {metric}={m[metric]:.4g}  {extra}={m[extra]:.4g}"
                            + (f"  {_CPU}={m[_CPU]:.4g}" if _CPU in m else "")
                            + ("" if counted else "  (warm-up)")
                        )
        finally:
            subprocess.run(
                ["git", "-C", str(here), "worktree", "remove", "--force", str(other)], check=False
            )
    print()
    for name, runs in results.items():
        if runs:
            med = statistics.median(r[metric] for r in runs)
            lat = statistics.median(r[extra] for r in runs)
            cpu = (
                f"  median {_CPU}={statistics.median(r[_CPU] for r in runs):.4g}"
                if all(_CPU in r for r in runs)
                else ""
            )
            print(f"{name:>14}  median {metric}={med:.4g}  median {extra}={lat:.4g}{cpu}")
    pairs = list(zip(*results.values(), strict=False))
    if pairs and all(_CPU in a and _CPU in b for a, b in pairs):
        less = sum(1 for a, b in pairs if b[_CPU] < a[_CPU])
        print(f"working tree used less client CPU in {less} of {len(pairs)} pairs ({_CPU})")
    wins = sum(
        1 for a, b in pairs if (b[metric] > a[metric]) == higher_better and b[metric] != a[metric]
    )
    print(f"working tree better in {wins} of {len(pairs)} pairs ({metric})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
