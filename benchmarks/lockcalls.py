"""Count what one uncontended lock cycle costs in aiocoord's own code: modules and calls.

``python -m benchmarks.lockcalls [--connect HOST:PORT] [--warmup 20]``

The count everyone gets the same way: on a real server (a fresh local one with production
settings unless ``--connect``), after ``--warmup`` cycles of ``async with lock: pass``,
``sys.setprofile`` records the ``"call"`` events whose code file lies under the ``aiocoord``
package (a coroutine's resumption is a call event too) around one ``async with lock: pass``
followed by ``await client.sync("/")``, which waits for the release's answer. Prints the
number of modules and of calls, then the calls per module and per function.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import aiocoord
from benchmarks.cli import standalone_server

_PACKAGE = str(Path(aiocoord.__file__).resolve().parent)


async def count_cycle(connect: str, warmup: int) -> tuple[Counter[str], Counter[str]]:
    """Calls per module and per ``module:function`` of one cycle, after ``warmup`` cycles."""
    per_module: Counter[str] = Counter()
    per_function: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(_PACKAGE):
            return
        module = Path(path).relative_to(_PACKAGE).as_posix()
        per_module[module] += 1
        per_function[f"{module}:{frame.f_code.co_name}"] += 1

    async with aiocoord.connect(connect) as client:
        lock = aiocoord.Lock(client, "/bench-lockcalls")
        for _ in range(warmup):
            async with lock:
                pass
        await client.sync("/")
        sys.setprofile(profile)
        try:
            async with lock:
                pass
            await client.sync("/")
        finally:
            sys.setprofile(None)
        await client.delete("/bench-lockcalls", recursive=True)
    return per_module, per_function


def main(argv: list[str] | None = None) -> int:
    """Print the modules and calls of one lock cycle."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lockcalls")
    parser.add_argument("--connect", help="a running server (default: a fresh local one)")
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args(argv)
    with standalone_server(args.connect) as (connect, _server):
        per_module, per_function = asyncio.run(count_cycle(connect, args.warmup))
    print(
        f"one uncontended lock cycle: {len(per_module)} aiocoord modules, "
        f"{sum(per_module.values())} calls"
    )
    print("\ncalls per module:")
    for module, calls in per_module.most_common():
        print(f"  {calls:4d}  {module}")
    print("\ncalls per function:")
    for function, calls in per_function.most_common():
        print(f"  {calls:4d}  {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
