"""Profile one workload of one peer with py-spy and show where its time goes.

``python -m benchmarks.profile W1 [--peer aiocoord] [--seconds 10] [--connect HOST:PORT]``

Starts a local ZooKeeper (unless ``--connect``), runs the workload's worker under
``py-spy record --format raw`` (``pip install py-spy``), and prints the functions with the
most samples: *self* (the function's own code) and *total* (it or anything it called), as a
share of all samples of the process while it was busy. ``--filter aiocoord`` (the default)
lists only functions whose file path contains that text, so the table points at our code.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.cli import standalone_server
from benchmarks.common import make_w4_children, remove_tree, run_path, warm_up, worker_params

#: The worker parameters of each workload, at full size.
_KEYS = {"W1": "W1/lock", "W2": "W2/handoff", "W3": "W3/waiters", "W4": "W4/cache"}


def _frame(frame: str) -> tuple[str, str]:
    """``func (path/file.py:line)`` -> (``file.py:func``, path)."""
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    return f"{Path(path).name}:{name}", path


def summarize(raw: str, filter_text: str, top: int) -> str:
    """Self and total shares per function from py-spy's raw (collapsed stacks) output."""
    self_count: Counter[str] = Counter()
    total_count: Counter[str] = Counter()
    paths: dict[str, str] = {}
    samples = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";") if f]
        if not frames:
            continue
        samples += count
        for func, path in frames:
            paths[func] = path
        self_count[frames[-1][0]] += count
        for func in {f for f, _ in frames}:
            total_count[func] += count
    if not samples:
        return "no samples"

    def keep(func: str) -> bool:
        return filter_text in paths.get(func, "")

    lines = [f"{samples} samples; functions whose path contains {filter_text!r}", ""]
    lines.append(f"{'self %':>7} {'total %':>8}  function")
    ranked = sorted((f for f in total_count if keep(f)), key=lambda f: -self_count[f])[:top]
    for func in ranked:
        lines.append(
            f"{100 * self_count[func] / samples:7.1f} {100 * total_count[func] / samples:8.1f}"
            f"  {func}"
        )
    lines += ["", "by total:", f"{'total %':>8}  function"]
    for func in sorted((f for f in total_count if keep(f)), key=lambda f: -total_count[f])[:top]:
        lines.append(f"{100 * total_count[func] / samples:8.1f}  {func}")
    outside = sum(c for f, c in self_count.items() if not keep(f))
    lines += ["", f"self time outside the filter: {100 * outside / samples:.1f}%"]
    by_file: Counter[str] = Counter()
    for func, count in self_count.items():
        by_file[Path(paths.get(func, "?")).parent.name + "/" + func.split(":")[0]] += count
    lines += ["", "self time by file:"]
    for name, count in by_file.most_common(top):
        lines.append(f"{100 * count / samples:7.1f}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the profile and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.add_argument("workload", choices=sorted(_KEYS))
    parser.add_argument("--peer", default="aiocoord", choices=("aiocoord", "kazoo", "aiozk"))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connect", default=None)
    parser.add_argument("--filter", default="aiocoord", help="path text of functions to list")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument("--raw", default=None, help="also keep py-spy's raw output here")
    args = parser.parse_args(argv)
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        print("py-spy is not installed: pip install py-spy", file=sys.stderr)
        return 2
    with standalone_server(args.connect) as (connect, _), tempfile.TemporaryDirectory() as tmp:
        warm_up(connect, 5.0)
        params = worker_params(args.workload, args.seconds, run_path(args.workload))
        if args.workload == "W4":
            make_w4_children(connect, params["path"])
        spec = {"key": _KEYS[args.workload], "peer": args.peer, "connect": connect}
        spec["params"] = params
        raw = Path(args.raw) if args.raw else Path(tmp) / "profile.txt"
        result = Path(tmp) / "result.json"
        command = [
            py_spy, "record", "--format", "raw", "--rate", str(args.rate), "--output", str(raw),
            "--", sys.executable, "-m", "benchmarks.worker", json.dumps(spec), str(result),
        ]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True)
        remove_tree(connect, str(params["path"]))
        outcome = json.loads(result.read_text())
        shown = {k: round(v, 3) for k, v in outcome.get("metrics", {}).items()}
        print(f"{args.workload} {args.peer}: {outcome['status']} {shown}")
        print(summarize(raw.read_text(), args.filter, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
