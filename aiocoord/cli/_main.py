"""The ``aiocoord`` command line: the parser and the dispatch to one module per command."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from aiocoord import __version__
from aiocoord.cli import _devserver, _inspect, _locks, _stat, _tree
from aiocoord.cli._common import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, program_name

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name(),
        description="asyncio-native coordination for Apache ZooKeeper: demo, dev server, "
        "and read-only views of a live ensemble.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    demo = sub.add_parser(
        "demo",
        help="locks, election and a membership cache surviving a server failure",
        description="Start an embedded 3-member ZooKeeper ensemble, run five workers sharing "
        "work under one lock, a leader election and a membership cache; then kill the member "
        "the leader is connected to and show the session, the lock, the leadership and the "
        "cache surviving. With --connect, run against an existing ZooKeeper instead (the "
        "leader's connection is dropped in place of the kill).",
    )
    demo.add_argument("--connect", metavar="HOSTS", help="use this ZooKeeper, not an embedded one")
    demo.add_argument("--workers", type=int, default=5, help="worker tasks (default 5)")
    demo.add_argument(
        "--plain",
        action="store_true",
        help="a line-by-line log even on a terminal (the default when stdout is not a TTY)",
    )
    demo.add_argument(
        "--json",
        action="store_true",
        help="the log to stderr, the result (measures and checks) as one JSON object to stdout",
    )
    _devserver.add_parser(sub)
    _inspect.add_parser(sub)
    _tree.add_parser(sub)
    _stat.add_parser(sub)
    _locks.add_parser(sub)
    return parser


def _demo(args: argparse.Namespace) -> int:
    from aiocoord.cli.demo import run

    if args.workers < 1:
        print("aiocoord demo: --workers must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if args.connect is not None and not args.connect.strip():
        # Not the embedded ensemble: that is what leaving --connect out means.
        print("aiocoord demo: the connect string is empty", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(
            run(connect=args.connect, workers=args.workers, plain=args.plain, as_json=args.json)
        )
    except KeyboardInterrupt:
        print("\naiocoord demo: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``aiocoord`` command line; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "server":
        return _devserver.run(args)
    if args.command == "demo":
        return _demo(args)
    try:
        if args.command == "locks":
            return asyncio.run(_locks.run(args))
        if args.command == "stat":
            return asyncio.run(_stat.run(args))
        if args.command == "inspect":  # an alias of locks
            return asyncio.run(_inspect.run(args))
        return asyncio.run(_tree.run(args))
    except KeyboardInterrupt:
        # Ctrl-C is how `stat --watch` is meant to end.
        return EXIT_OK if getattr(args, "watch", None) is not None else EXIT_INTERRUPTED
