"""``aiocoord stat [HOSTS]``: every member of a connect string in one table, from its
four-letter words (``srvr``, and ``mntr`` when the server allows it).

Each member is asked on its own, all at once, so one that is down or slow is a row saying so
and does not hold up the others. Nothing is sent through a session: a member that has lost
its quorum still answers (as "not serving").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass

from aiocoord._session.servers import Server
from aiocoord.cli._common import (
    EXIT_OK,
    EXIT_SERVER,
    add_hosts,
    hosts_of,
    positive_seconds,
    servers_of,
)
from aiocoord.cli._fourletter import FourLetterError, four_letter, parse_mntr, parse_srvr
from aiocoord.cli._progress import Progress

__all__ = ["MemberStat", "add_parser", "member_stat", "run", "stat_lines"]


@dataclass(frozen=True, slots=True)
class MemberStat:
    """One member, as its four-letter words describe it; ``error`` set (and the numbers
    None) when it could not be asked. The field names are the keys of ``--json``."""

    server: str
    reachable: bool
    error: str | None = None
    mode: str | None = None
    version: str | None = None
    zxid: int | None = None
    connections: int | None = None
    latency_min_ms: float | None = None
    latency_avg_ms: float | None = None
    latency_max_ms: float | None = None
    outstanding: int | None = None
    znode_count: int | None = None
    watch_count: int | None = None
    ephemerals_count: int | None = None
    received: int | None = None
    sent: int | None = None


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        return None


def _num(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return int(number) if number.is_integer() else number


async def member_stat(server: Server, timeout: float) -> MemberStat:
    """Ask ``server`` for ``srvr`` (and ``mntr``, for watch and ephemeral counts)."""
    name = str(server)
    try:
        srvr = parse_srvr(await four_letter(server.host, server.port, "srvr", timeout))
    except FourLetterError as exc:
        return MemberStat(name, True, str(exc))
    except (TimeoutError, OSError) as exc:
        if isinstance(exc, asyncio.TimeoutError):
            why = f"no answer within {timeout:g} s"
        elif isinstance(exc, ConnectionRefusedError):
            why = "connection refused"
        else:
            why = exc.strerror or str(exc)
        return MemberStat(name, False, f"unreachable: {why}")
    try:
        mntr = parse_mntr(await four_letter(server.host, server.port, "mntr", timeout))
    except (TimeoutError, FourLetterError, OSError):
        mntr = {}  # optional: not every server allows it
    latency = [_num(x) for x in srvr.get("Latency min/avg/max", "").split("/")]
    if len(latency) != 3:
        latency = [None, None, None]
    return MemberStat(
        server=name,
        reachable=True,
        mode=srvr.get("Mode"),
        version=srvr.get("Zookeeper version", "").split("-", 1)[0].split(",", 1)[0] or None,
        zxid=_int(srvr.get("Zxid")),
        connections=_int(srvr.get("Connections")),
        latency_min_ms=latency[0],
        latency_avg_ms=latency[1],
        latency_max_ms=latency[2],
        outstanding=_int(srvr.get("Outstanding")),
        znode_count=_int(srvr.get("Node count")),
        watch_count=_int(mntr.get("zk_watch_count")),
        ephemerals_count=_int(mntr.get("zk_ephemerals_count")),
        received=_int(srvr.get("Received")),
        sent=_int(srvr.get("Sent")),
    )


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def stat_lines(rows: list[MemberStat]) -> list[str]:
    """The table: one line per member, in connect-string order; a member that could not be
    asked shows its error in place of the numbers."""
    header = ("server", "mode", "zxid", "conns", "latency ms", "outst", "znodes", "watches")
    cells: list[tuple[str, ...] | str] = []
    for r in rows:
        if r.mode is None:
            cells.append(r.error or "no answer")
            continue
        latency = (r.latency_min_ms, r.latency_avg_ms, r.latency_max_ms)
        cells.append(
            (
                r.server,
                r.mode,
                "-" if r.zxid is None else f"0x{r.zxid:x}",
                _cell(r.connections),
                "/".join(_cell(x) for x in latency),
                _cell(r.outstanding),
                _cell(r.znode_count),
                _cell(r.watch_count),
            )
        )
    table = [header, *(c for c in cells if isinstance(c, tuple))]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    widths[0] = max(widths[0], *(len(r.server) for r in rows))

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    lines = [line(header)]
    for r, c in zip(rows, cells, strict=True):
        lines.append(line(c) if isinstance(c, tuple) else f"{r.server:<{widths[0]}}  {c}")
    versions = sorted({r.version for r in rows if r.version})
    if versions:
        lines.append(f"version: {', '.join(versions)}")
    return lines


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``stat`` command to the subcommands ``sub``."""
    stat = sub.add_parser(
        "stat",
        help="mode, zxid, connections, latency and znodes of every member",
        description="Ask every member of the connect string for its four-letter words "
        "(srvr, and mntr if allowed) and show one row each: mode, last zxid, connections, "
        "latency min/avg/max, outstanding requests, znode and watch counts. A member that "
        "does not answer is a row saying so. Exit status 1 if any member did not answer.",
    )
    add_hosts(stat)
    stat.add_argument(
        "--timeout", type=positive_seconds, default=5.0, help="seconds per member (default 5)"
    )
    stat.add_argument(
        "--watch",
        type=positive_seconds,
        metavar="SECONDS",
        help="refresh every SECONDS until Ctrl-C",
    )
    stat.add_argument("--count", type=int, metavar="N", help="with --watch: stop after N tables")
    stat.add_argument(
        "--json", action="store_true", help="one JSON object per table (JSON Lines with --watch)"
    )


async def run(args: argparse.Namespace) -> int:
    """Run ``stat`` as parsed into ``args``; the exit status."""
    hosts = hosts_of(args, "stat")
    servers = servers_of(hosts, "stat")
    if hosts is None or servers is None:
        return 2
    if (args.watch is not None and args.watch <= 0) or (args.count is not None and args.count < 1):
        print("aiocoord stat: --watch and --count must be positive", file=sys.stderr)
        return 2
    progress = Progress()
    shown = 0
    status = EXIT_OK
    clear = args.watch is not None and not args.json and sys.stdout.isatty()
    while True:
        progress.update(f"asking {len(servers)} member(s) ...")
        started = time.monotonic()
        rows = list(await asyncio.gather(*(member_stat(s, args.timeout) for s in servers)))
        progress.clear()
        status = EXIT_OK if all(r.error is None for r in rows) else EXIT_SERVER
        if args.json:
            doc = {"connect": hosts, "time": time.time(), "members": [asdict(r) for r in rows]}
            print(json.dumps(doc), flush=True)
        else:
            if clear:
                print("\x1b[H\x1b[2J", end="")
            if args.watch is not None:
                print(time.strftime("%Y-%m-%d %H:%M:%S"), hosts)
            print("\n".join(stat_lines(rows)), flush=True)
        shown += 1
        if args.watch is None or (args.count is not None and shown >= args.count):
            return status
        await asyncio.sleep(max(0.0, args.watch - (time.monotonic() - started)))
        if not clear and not args.json:
            print()
