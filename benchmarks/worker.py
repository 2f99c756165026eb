"""One run of one workload by one peer, in a process of its own.

``python -m benchmarks.worker SPEC_JSON RESULT_FILE``: SPEC is ``{"key": "W1/lock", "peer":
"kazoo", "connect": "127.0.0.1:2181", "params": {...}}``. The result file receives
``{"status": "ok", "metrics": {...}, "samples": {...}}``, or ``status`` "unavailable" (the peer
lacks the library or recipe; ``reason`` says which) or "error" (``reason``: the exception).
A fresh process per run keeps peak RSS per run and leaves no thread or task of one run behind
for the next.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import traceback
from typing import Any

from benchmarks.common import Unavailable, peak_rss_mb
from benchmarks.peers import FUNCTIONS


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the workload ``spec`` describes and return its result (never raises)."""
    try:
        module = importlib.import_module(f"benchmarks.peers.{spec['peer']}_peer")
        func = getattr(module, FUNCTIONS[spec["key"]])
        result: dict[str, Any] = func(spec["connect"], spec["params"])
        result["status"] = "ok"
    except Unavailable as exc:
        result = {"status": "unavailable", "reason": str(exc)}
    except BaseException as exc:  # a failed run is a result too, with its reason
        tail = traceback.format_exc().strip().splitlines()[-6:]
        result = {"status": "error", "reason": f"{type(exc).__name__}: {exc}", "trace": tail}
    result["process_peak_rss_mb"] = peak_rss_mb()
    return result


def main(argv: list[str]) -> int:
    """Entry point: run ``argv[0]`` (spec JSON) and write the result to ``argv[1]``."""
    logging.basicConfig(level=logging.CRITICAL)
    spec = json.loads(argv[0])
    result = run(spec)
    with open(argv[1], "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
