"""``aiocoord server``: a development ZooKeeper in the foreground, like ``redis-server``."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import sys
import time
from types import FrameType

from aiocoord.cli._common import program_name
from aiocoord.errors import PortInUseError, ServerSetupError
from aiocoord.testing import ZooKeeperServer

__all__ = ["add_parser", "port_number", "run", "serve"]


def port_number(text: str) -> int:
    """An argparse ``type``: a TCP port, 1-65535, or 0 for a free one."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be 1-65535 (or 0: a free port), not {text}")
    return port


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``server`` command to the subcommands ``sub``."""
    server = sub.add_parser(
        "server",
        help="run a local development ZooKeeper in the foreground (Ctrl-C stops it)",
        description="Run a ZooKeeper server on 127.0.0.1 in the foreground and print its "
        "connect string; Ctrl-C stops it. Without --data-dir its data lives in a temporary "
        "directory removed at exit. For development and tests, not production.",
    )
    server.add_argument(
        "--port",
        type=port_number,
        default=2181,
        help="client port (default 2181; 0: a free port, printed in the banner)",
    )
    server.add_argument("--data-dir", metavar="DIR", help="keep the data here across runs")
    server.add_argument(
        "--json",
        action="store_true",
        help="print the banner as one JSON object (other messages go to stderr)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``server`` as parsed into ``args``; the exit status."""
    return serve(args.port, args.data_dir, args.json)


def serve(port: int, data_dir: str | None, as_json: bool = False) -> int:
    """Run a development ZooKeeper in the foreground until Ctrl-C; the exit status.

    ``as_json``: the banner is one JSON object on stdout, and every other message goes to
    stderr, so that a script can read the connect string from the first line. ``port`` 0: a
    free port, chosen here (the banner's connect string names it).
    """
    # ZooKeeper itself takes clientPort=0 for "none" and fails; a free port is chosen here.
    server = ZooKeeperServer(port=port or None, data_dir=data_dir, startup_timeout=60)
    port = server.port
    chatter = sys.stderr if as_json else sys.stdout
    print(f"aiocoord server: starting ZooKeeper on 127.0.0.1:{port} ...", file=chatter, flush=True)
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
        if as_json:
            banner = {
                "connect_string": server.connect_string,
                "version": version or None,
                "pid": server.pid,
                "data_dir": str(server.data_dir),
                "temporary": data_dir is None,
                "log": str(server.log_path),
            }
            print(json.dumps(banner), flush=True)
            print("aiocoord server: serving; Ctrl-C to stop", file=chatter, flush=True)
        else:
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
        print("\naiocoord server: stopping ...", file=chatter, flush=True)
        return 0
    finally:
        stopping = True
        # A second Ctrl-C must not interrupt the stop half-way and leave a JVM running.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        server.close()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if started and not server.is_running:
            print("aiocoord server: stopped", file=chatter, flush=True)
