"""What every ``aiocoord`` command shares: the connect string default, the program name, the
exit statuses, and connecting for a read-only command with its usual failures turned into
one line on stderr."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiocoord._connect import connect as connect_client
from aiocoord._session.servers import Server, parse_connect_string
from aiocoord._validation import validate_path
from aiocoord.client import Client
from aiocoord.errors import CoordinationError, NoNodeError, NoServersError

__all__ = [
    "CONNECT_ENV",
    "shown",
    "add_hosts",
    "hosts_of",
    "non_negative_int",
    "positive_seconds",
    "resolve_or_say",
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


def positive_seconds(text: str) -> float:
    """An argparse ``type``: a number of seconds greater than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse ``type``: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def add_hosts(parser: argparse.ArgumentParser) -> None:
    """The connect string, as every command that reads a live ensemble takes it: ``--connect
    HOSTS``, or ``HOSTS`` as the first argument (a connect string never starts with ``/``, a
    path always does, so the two cannot be confused). Add it before the other positionals."""
    parser.add_argument("hosts", nargs="?", metavar="HOSTS", default=None, help=connect_help())
    parser.add_argument("--connect", metavar="HOSTS", default=None, help="the same as HOSTS")


def hosts_of(args: argparse.Namespace, what: str) -> str | None:
    """The connect string of ``HOSTS`` or ``--connect``, else the default; None (said on
    stderr) if both are given and differ, or it is empty or malformed (an empty member, as in
    ``h:1,,h2``: a typo that would otherwise silently drop a member).

    A command whose PATH is optional (``tree``) may receive a lone PATH in ``args.hosts``:
    it is moved to ``args.path`` (a connect string never starts with ``/``)."""
    if args.hosts is not None and args.hosts.startswith("/"):
        if "path" in vars(args) and args.path is None:
            args.path, args.hosts = args.hosts, None
        else:
            print(
                f"aiocoord {what}: {args.hosts!r} is a path, not a connect string "
                "(HOSTS comes first, or give --connect HOSTS)",
                file=sys.stderr,
            )
            return None
    if args.hosts is not None and args.connect is not None and args.hosts != args.connect:
        print(f"aiocoord {what}: give HOSTS or --connect, not both", file=sys.stderr)
        return None
    given = args.hosts if args.hosts is not None else args.connect
    hosts = given if given is not None else default_connect()
    if not hosts.strip():
        print(
            f"aiocoord {what}: the connect string is empty; give host:port[,host:port...]"
            f"[/chroot] (or leave --connect out for ${CONNECT_ENV}, else {DEFAULT_CONNECT})",
            file=sys.stderr,
        )
        return None
    members = hosts.split("/", 1)[0].split(",")
    if any(not m.strip() for m in members):
        print(
            f"aiocoord {what}: the connect string {hosts!r} has an empty member; give "
            "host:port[,host:port...][/chroot]",
            file=sys.stderr,
        )
        return None
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


async def resolve_or_say(servers: list[Server], timeout: float, what: str) -> bool:
    """Whether at least one of ``servers`` has a name that resolves; if none does, says so on
    stderr. A connect string of names that cannot resolve (a typo) fails here at once,
    instead of after the client has retried them for the whole timeout."""
    loop = asyncio.get_running_loop()

    async def error_of(server: Server) -> str | None:
        try:
            await asyncio.wait_for(
                loop.getaddrinfo(server.host, server.port, type=socket.SOCK_STREAM), timeout
            )
        except socket.gaierror as exc:
            return f"{server.host}: {exc.strerror or exc}"
        except (TimeoutError, OSError):
            return None  # not a verdict on the name: let the connection attempt tell
        return None

    errors = await asyncio.gather(*(error_of(s) for s in servers))
    if servers and all(errors):
        print(
            f"aiocoord {what}: cannot resolve {'; '.join(e for e in errors if e)}",
            file=sys.stderr,
        )
        return False
    return True


async def read_only(
    connect: str,
    timeout: float,
    what: str,
    path: str,
    result_of: Callable[[Client], Awaitable[T]],
) -> tuple[int, T | None]:
    """Connect, return ``(EXIT_OK, await result_of(client))``; the usual failures become one
    line on stderr and ``(status, None)``: a bad path, or a connect string none of whose
    names resolves, is a usage error; an unreachable
    ensemble, a missing path or a server error a server error."""
    try:
        validate_path(path)
        servers = parse_connect_string(connect)[0]
    except CoordinationError as exc:
        print(f"aiocoord {what}: {exc}", file=sys.stderr)
        return EXIT_USAGE, None
    if not await resolve_or_say(servers, timeout, what):
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
