"""The ``aiocoord`` command: ``python -m aiocoord demo|server|inspect|tree``.

* ``demo``: locks, an election and a membership cache on an embedded 3-member ensemble,
  surviving the loss of the member the leader is connected to (``--connect`` for your own);
* ``server``: a development ZooKeeper in the foreground, like ``redis-server``;
* ``inspect lock|rwlock|election|semaphore PATH``: holders and waiters, in queue order;
* ``tree [PATH]``: the nodes under a path.

``--connect`` defaults to ``$AIOCOORD_CONNECT``, else ``127.0.0.1:2181`` (where ``server``
listens by default).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from types import FrameType

from aiocoord import __version__
from aiocoord._cli_inspect import KINDS, queue_lines, tree_lines
from aiocoord._connect import connect as connect_client
from aiocoord._validation import validate_path
from aiocoord.client import Client
from aiocoord.errors import (
    CoordinationError,
    NoNodeError,
    NoServersError,
    PortInUseError,
    ServerSetupError,
)
from aiocoord.testing import ZooKeeperServer

__all__ = ["DEFAULT_CONNECT", "main"]

#: Where ``inspect`` and ``tree`` connect when given no ``--connect`` and no AIOCOORD_CONNECT.
DEFAULT_CONNECT = "127.0.0.1:2181"
CONNECT_ENV = "AIOCOORD_CONNECT"


def _default_connect() -> str:
    return os.environ.get(CONNECT_ENV) or DEFAULT_CONNECT


def program_name() -> str:
    """How the command line was invoked: ``aiocoord`` (the console script) or
    ``python -m aiocoord``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not name or name in ("__main__.py", "-c") or name.startswith("python"):
        return "python -m aiocoord"
    return name


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

    server = sub.add_parser(
        "server",
        help="run a local development ZooKeeper in the foreground (Ctrl-C stops it)",
        description="Run a ZooKeeper server on 127.0.0.1 in the foreground and print its "
        "connect string; Ctrl-C stops it. Without --data-dir its data lives in a temporary "
        "directory removed at exit. For development and tests, not production.",
    )
    server.add_argument("--port", type=int, default=2181, help="client port (default 2181)")
    server.add_argument("--data-dir", metavar="DIR", help="keep the data here across runs")

    inspect = sub.add_parser(
        "inspect",
        help="holders and waiters of a lock, rwlock, election or semaphore",
        description="Show who holds and who waits for a recipe, in queue order, with their "
        "identifiers and sessions. Read-only: sets no watch, changes nothing.",
    )
    inspect.add_argument("kind", choices=KINDS)
    inspect.add_argument("path", help="the recipe's path, e.g. /locks/orders")
    inspect.add_argument("--connect", metavar="HOSTS", default=None, help=_connect_help())
    inspect.add_argument("--timeout", type=float, default=5.0, help=_timeout_help())

    tree = sub.add_parser(
        "tree",
        help="print the nodes under a path",
        description="Print the nodes under PATH, indented, with data sizes and ephemeral "
        "owners. Read-only.",
    )
    tree.add_argument("path", nargs="?", default="/", help="where to start (default /)")
    tree.add_argument("--connect", metavar="HOSTS", default=None, help=_connect_help())
    tree.add_argument("--timeout", type=float, default=5.0, help=_timeout_help())
    tree.add_argument("--depth", type=int, default=None, help="levels to show below PATH")
    tree.add_argument("--data", action="store_true", help="show a preview of each node's data")
    return parser


def _timeout_help() -> str:
    return "seconds to wait for a server to answer (default 5)"


def _connect_help() -> str:
    return f"ZooKeeper connect string (default ${CONNECT_ENV}, else {DEFAULT_CONNECT})"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``aiocoord`` command line; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "server":
        return _server(args.port, args.data_dir)
    if args.command == "demo":
        from aiocoord._demo import run

        if args.workers < 1:
            print("aiocoord demo: --workers must be at least 1", file=sys.stderr)
            return 2
        try:
            return asyncio.run(run(connect=args.connect, workers=args.workers, plain=args.plain))
        except KeyboardInterrupt:
            print("\naiocoord demo: interrupted", file=sys.stderr)
            return 130
    connect = args.connect or _default_connect()
    try:
        if args.command == "inspect":
            return asyncio.run(_inspect(connect, args.timeout, args.kind, args.path))
        return asyncio.run(_tree(connect, args.timeout, args.path, args.depth, args.data))
    except KeyboardInterrupt:
        return 130


# --- inspect and tree -----------------------------------------------------------------------


async def _read_only(
    connect: str,
    timeout: float,
    what: str,
    path: str,
    lines_of: Callable[[Client], Awaitable[list[str]]],
) -> int:
    """Connect, print ``await lines_of(client)``; turn the usual failures into one line."""
    try:
        validate_path(path)
    except CoordinationError as exc:
        print(f"aiocoord {what}: {exc}", file=sys.stderr)
        return 2
    try:
        async with connect_client(
            connect, session_timeout=10, connect_timeout=max(timeout, 0.1)
        ) as client:
            lines = await lines_of(client)
    except NoServersError as exc:
        print(
            f"aiocoord {what}: cannot reach ZooKeeper at {connect}: {exc}\n"
            f"  (start a local one with: {program_name()} server)",
            file=sys.stderr,
        )
        return 1
    except NoNodeError:
        print(f"aiocoord {what}: {path} does not exist", file=sys.stderr)
        return 1
    except CoordinationError as exc:
        print(f"aiocoord {what}: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


async def _inspect(connect: str, timeout: float, kind: str, path: str) -> int:
    return await _read_only(connect, timeout, "inspect", path, lambda c: queue_lines(c, kind, path))


async def _tree(connect: str, timeout: float, path: str, depth: int | None, show_data: bool) -> int:
    return await _read_only(
        connect,
        timeout,
        "tree",
        path,
        lambda c: tree_lines(c, path, max_depth=depth, show_data=show_data),
    )


# --- server ---------------------------------------------------------------------------------


def _server(port: int, data_dir: str | None) -> int:
    server = ZooKeeperServer(port=port, data_dir=data_dir, startup_timeout=60)
    print(f"aiocoord server: starting ZooKeeper on 127.0.0.1:{port} ...", flush=True)
    stopping = False
    started = False

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        # Treated as Ctrl-C, so that `kill <pid>` stops the JVM cleanly too.
        if not stopping:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    # Started in the background by a non-interactive shell, Python inherits SIGINT ignored;
    # Ctrl-C (or kill -INT) must stop the server all the same.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            server.start()
        except PortInUseError:
            prog = program_name()
            print(
                f"aiocoord server: port {port} is already in use (another ZooKeeper, or "
                "another program, listens there); nothing was started.\n"
                f"  Start this one on another port: {prog} server --port {port + 1}\n"
                f"  If it is a ZooKeeper, point clients at it: {prog} tree --connect "
                f"127.0.0.1:{port}",
                file=sys.stderr,
            )
            return 2
        except ServerSetupError as exc:
            print(f"aiocoord server: {exc}", file=sys.stderr)
            return 1
        started = True
        version = ""
        with contextlib.suppress(OSError):
            found = re.search(r"version: (\d+(?:\.\d+)*)", server.four_letter("srvr"))
            version = found.group(1) if found else ""
        where = data_dir if data_dir is not None else f"{server.data_dir} (removed at exit)"
        print(f"aiocoord server: ZooKeeper {version} serving (pid {server.pid})")
        print(f"  connect string: {server.connect_string}")
        print(f"  data dir:       {where}")
        print(f"  log:            {server.log_path}")
        print("  Ctrl-C to stop", flush=True)
        while server.is_running:
            time.sleep(0.2)
        print(
            "aiocoord server: ZooKeeper exited on its own; the end of its log:\n"
            + server.log_tail(),
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("\naiocoord server: stopping ...", flush=True)
        return 0
    finally:
        stopping = True
        # A second Ctrl-C must not interrupt the stop half-way and leave a JVM running.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        server.close()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if started and not server.is_running:
            print("aiocoord server: stopped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
