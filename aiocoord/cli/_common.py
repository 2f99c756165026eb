"""What every ``aiocoord`` command shares: the connect string default, the program name, the
exit statuses, and connecting for a read-only command with its usual failures turned into
one line on stderr."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiocoord._client.connect import connect as connect_client
from aiocoord._session.servers import Server, parse_connect_string
from aiocoord._validation import validate_path
from aiocoord.client import Client
from aiocoord.errors import CoordinationError, NoNodeError, NoServersError

__all__ = [
    "CONNECT_ENV",
    "shown",
    "add_hosts",
    "hosts_of",
    "servers_of",
    "DEFAULT_CONNECT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SERVER",
    "EXIT_USAGE",
    "connect_help",
    "default_connect",
    "program_name",
    "read_only",
    "timeout_help",
]

T = TypeVar("T")

#: Where the commands connect when given no ``--connect`` and no AIOCOORD_CONNECT.
DEFAULT_CONNECT = "127.0.0.1:2181"
CONNECT_ENV = "AIOCOORD_CONNECT"

#: Exit statuses (argparse itself exits 2 on a usage error).
EXIT_OK = 0
EXIT_SERVER = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def default_connect() -> str:
    """``$AIOCOORD_CONNECT``, else :data:`DEFAULT_CONNECT`."""
    return os.environ.get(CONNECT_ENV) or DEFAULT_CONNECT


def program_name() -> str:
    """How the command line was invoked: ``aiocoord`` (the console script) or
    ``python -m aiocoord``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not name or name in ("__main__.py", "-c") or name.startswith("python"):
        return "python -m aiocoord"
    return name


def timeout_help() -> str:
    """The help text of ``--timeout``."""
    return "seconds to wait for a server to answer (default 5)"


def connect_help() -> str:
    """The help text of ``--connect``."""
    return f"ZooKeeper connect string (default ${CONNECT_ENV}, else {DEFAULT_CONNECT})"


def add_hosts(parser: argparse.ArgumentParser) -> None:
    """The optional ``HOSTS`` argument, and ``--connect`` for the same (as other commands)."""
    parser.add_argument("hosts", nargs="?", metavar="HOSTS", default=None, help=connect_help())
    parser.add_argument("--connect", metavar="HOSTS", default=None, help="the same as HOSTS")


def hosts_of(args: argparse.Namespace, what: str) -> str | None:
    """The connect string of ``HOSTS`` or ``--connect``, else the default; None (said on
    stderr) if both are given and differ."""
    if args.hosts and args.connect and args.hosts != args.connect:
        print(f"aiocoord {what}: give HOSTS or --connect, not both", file=sys.stderr)
        return None
    hosts: str = args.hosts or args.connect or default_connect()
    return hosts


def servers_of(hosts: str | None, what: str) -> list[Server] | None:
    """The servers of the connect string ``hosts``; None (said on stderr) if it is bad."""
    if hosts is None:
        return None
    try:
        return parse_connect_string(hosts)[0]
    except CoordinationError as exc:
        print(f"aiocoord {what}: {exc}", file=sys.stderr)
        return None


async def read_only(
    connect: str,
    timeout: float,
    what: str,
    path: str,
    result_of: Callable[[Client], Awaitable[T]],
) -> tuple[int, T | None]:
    """Connect, return ``(EXIT_OK, await result_of(client))``; the usual failures become one
    line on stderr and ``(status, None)``: a bad path is a usage error, an unreachable
    ensemble, a missing path or a server error a server error."""
    try:
        validate_path(path)
        parse_connect_string(connect)
    except CoordinationError as exc:
        print(f"aiocoord {what}: {exc}", file=sys.stderr)
        return EXIT_USAGE, None
    try:
        async with connect_client(
            connect, session_timeout=10, connect_timeout=max(timeout, 0.1)
        ) as client:
            return EXIT_OK, await result_of(client)
    except NoServersError as exc:
        print(
            f"aiocoord {what}: cannot reach ZooKeeper at {connect}: {exc}\n"
            f"  (start a local one with: {program_name()} server)",
            file=sys.stderr,
        )
    except NoNodeError:
        print(f"aiocoord {what}: {path} does not exist", file=sys.stderr)
    except CoordinationError as exc:
        print(f"aiocoord {what}: {exc}", file=sys.stderr)
    return EXIT_SERVER, None


#: A foreign value (an identifier read from a node) is cut to this many characters in a table.
SHOWN_MAX = 80


def shown(text: str) -> str:
    """``text`` safe for a terminal: a value any client wrote to a node (an identifier) may
    hold escape sequences or line breaks that would rewrite what the operator sees, or be a
    megabyte long; each non-printable character is shown as its Python escape, and the
    text is cut to :data:`SHOWN_MAX` characters."""
    safe = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: SHOWN_MAX + 1])
    return safe if len(safe) <= SHOWN_MAX else safe[: SHOWN_MAX - 3] + "..."
