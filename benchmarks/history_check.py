"""The linearizability checker's cost (aiocoord.testing.history): time and peak memory per
history size, for histories of 8 clients with faults (lost replies, failed operations).

``python -m benchmarks.history_check [--kinds counter,register] [--sizes 1000,10000,50000]
[--clients 8] [--planted] [--timeout 60] [--json out.json]``

Each history is generated (tests/unit/history_samples.py: a simulated linearizable object,
2 % of the operations UNKNOWN, 1 % FAIL) and checked in a fresh child process, so that one
check's memory is not the next one's: the peak is the child's resident set high-water mark
during the check alone (Linux's ``/proc/self/clear_refs`` resets it once the history is
built; elsewhere it includes building the history). ``--planted`` adds, per size, the same
history with its kind's anomaly planted in the middle: proving that no order exists is the
expensive direction. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _peak_kib() -> int:
    """The process's resident high-water mark, KiB (/proc's VmHWM where there is one)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _reset_peak() -> bool:
    """Reset the high-water mark to the resident set now (Linux 4.0+); False if it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def measure(
    kind: str, operations: int, clients: int, planted: bool, timeout: float
) -> dict[str, Any]:
    """One check, in this process: the row's figures."""
    from aiocoord.testing.history import Outcome, check
    from tests.unit.history_samples import generate, model_for

    sample = generate(kind, operations, clients=clients, anomaly=planted, seed=1)
    ops = sample.history.operations()
    reset = _reset_peak()
    before = _peak_kib()
    started = time.perf_counter()
    result = check(sample.history, model_for(kind), timeout=timeout)
    seconds = time.perf_counter() - started
    peak = _peak_kib()
    return {
        "kind": kind,
        "operations": len(ops),
        "clients": clients,
        "planted": planted,
        "unknown": sum(op.outcome is Outcome.UNKNOWN for op in ops),
        "failed": sum(op.outcome is Outcome.FAIL for op in ops),
        "verdict": result.verdict.value,
        "found": None if result.violation is None else result.violation.stuck.id in sample.planted,
        "seconds": round(seconds, 3),
        "configurations": result.explored,
        "peak_mib": round(peak / 1024, 1),
        "check_mib": round((peak - before) / 1024, 1) if reset else None,
    }


def _child(
    kind: str, operations: int, clients: int, planted: bool, timeout: float
) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.history_check",
            "--one",
            json.dumps([kind, operations, clients, planted, timeout]),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout * 3 + 120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    if done.returncode:
        raise SystemExit(f"history_check: {kind} {operations} failed:\n{done.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table of ``rows``."""
    out = [
        "| history | operations | clients | unknown / failed | verdict | seconds | "
        "configurations | peak MiB (check's own) |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        what = r["kind"] + (" (anomaly planted)" if r["planted"] else "")
        verdict = r["verdict"] + (
            "" if r["found"] is None else (", planted one found" if r["found"] else ", elsewhere")
        )
        own = "" if r["check_mib"] is None else f" ({r['check_mib']:.1f})"
        out.append(
            f"| {what} | {r['operations']:,} | {r['clients']} | {r['unknown']} / {r['failed']} "
            f"| {verdict} | {r['seconds']:.2f} | {r['configurations']:,} | "
            f"{r['peak_mib']:.1f}{own} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.history_check")
    parser.add_argument("--kinds", default="counter,register")
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--planted", action="store_true", help="also with an anomaly planted")
    parser.add_argument("--timeout", type=float, default=60.0, help="the checker's budget, s")
    parser.add_argument("--json", type=Path, help="also write the rows there")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child's single measurement
    args = parser.parse_args(argv)
    if args.one:
        kind, operations, clients, planted, timeout = json.loads(args.one)
        print(json.dumps(measure(kind, operations, clients, planted, timeout)))
        return 0
    rows = []
    for kind in args.kinds.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            for planted in (False, True) if args.planted else (False,):
                rows.append(_child(kind, size, args.clients, planted, args.timeout))
                print(
                    f"  {kind} {size}{' planted' if planted else ''}: {rows[-1]['seconds']} s",
                    file=sys.stderr,
                )
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
