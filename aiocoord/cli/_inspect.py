"""``aiocoord inspect KIND [HOSTS] PATH``: the old name of ``locks --kind KIND [HOSTS] PATH``.

``inspect`` and ``locks`` did one job twice (who holds a lock-like recipe, who waits) with two
tables; ``locks`` is the one command for it now. ``inspect`` stays as an alias, so that the
command lines already written keep working, and prints what ``locks`` prints.
"""

from __future__ import annotations

import argparse

from aiocoord.cli import _locks
from aiocoord.cli._common import add_hosts, positive_seconds, timeout_help

__all__ = ["KINDS", "add_parser", "run"]

#: The recipe kinds ``inspect`` took; each is a ``locks --kind``.
KINDS = ("lock", "rwlock", "election", "semaphore")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``inspect`` alias to the subcommands ``sub``."""
    inspect = sub.add_parser(
        "inspect",
        help="the same as `locks --kind KIND` (an alias kept for existing command lines)",
        description="The same as `locks --kind KIND [HOSTS] PATH`: holders and waiters of a "
        "lock, rwlock, election or semaphore in queue order. Read-only.",
    )
    inspect.add_argument("kind", choices=KINDS)
    add_hosts(inspect)
    inspect.add_argument("path", metavar="PATH", help="the recipe's path, e.g. /locks/orders")
    inspect.add_argument("--timeout", type=positive_seconds, default=5.0, help=timeout_help())
    inspect.add_argument("--json", action="store_true", help="one JSON object (keys documented)")


async def run(args: argparse.Namespace) -> int:
    """Run ``inspect`` as parsed into ``args``: ``locks`` with ``--kind`` of the kind given."""
    return await _locks.run(args, what="inspect")
