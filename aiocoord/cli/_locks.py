"""``aiocoord locks [HOSTS] PATH``: the queue of a lock-like recipe, holders first, with what
an on-call engineer needs to find each contender: its session, the client address ``cons``
shows for that session, its fencing token and its age.

The queue is read by the recipes themselves (``Lock.contenders()``, the read and write locks',
``LeaderLatch.participants()``, ``Semaphore.participants()``), so "holds" means what the
recipe's own driver decides; each node's Stat is read after. The layouts are ours and
Curator's, which are the same: a lock's ``-lock-`` nodes (also an ``Election``'s, and
Curator's ``LeaderSelector``), a read-write lock's ``__READ__``/``__WRIT__`` nodes, a leader
latch's ``latch-`` nodes, and a semaphore's ``leases/…-lease-`` nodes with its
``locks/…-lock-`` queue; and kazoo's lock and read-write lock nodes (``__lock__``,
``__rlock__``, also a kazoo ``Election``'s). Read-only: no watch, no write.

**Mixed paths.** A lock or read-write lock whose contenders are of both layouts, Curator's
and kazoo's, is marked (``MIXED LAYOUTS`` on the summary line, a ``layout`` column, and
``mixed_layouts`` in ``--json``): kazoo's recipes do not wait for Curator-layout nodes unless
given ``extra_lock_patterns``, so two contenders may hold at once, and the recipes themselves
cannot always tell (docs/from-kazoo.md says which arrival order warns).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass

from aiocoord._paths import join, sequence_of, sort_by_sequence, split
from aiocoord._session.servers import Server
from aiocoord._wire.data import Stat
from aiocoord.cli._common import (
    EXIT_OK,
    add_hosts,
    hosts_of,
    positive_seconds,
    read_only,
    servers_of,
    shown,
    timeout_help,
)
from aiocoord.cli._fourletter import (
    FourLetterError,
    SessionConnection,
    four_letter,
    parse_cons,
)
from aiocoord.cli._progress import Progress
from aiocoord.client import Client
from aiocoord.errors import NoNodeError
from aiocoord.recipes.election import LATCH_NAME, LeaderLatch, Participant
from aiocoord.recipes.layout import KAZOO_LOCK, KAZOO_READ, Layout, contender_layout
from aiocoord.recipes.lock import LOCK_NAME, Lock
from aiocoord.recipes.rwlock import READ_NAME, WRITE_NAME, ReadWriteLock
from aiocoord.recipes.semaphore import LEASES, LOCKS, Semaphore

__all__ = ["LAYOUTS", "LockEntry", "add_parser", "detect_layout", "lock_entries", "run"]

#: The layouts ``locks`` reads (``auto``: found from the node names). ``election``: an
#: ``Election``'s ``-lock-`` nodes or a ``LeaderLatch``'s ``latch-`` nodes, as leader and
#: candidates (found as ``lock`` or ``latch``: an election's nodes are named as a lock's).
LAYOUTS = ("auto", "lock", "rwlock", "latch", "election", "semaphore")


@dataclass(frozen=True, slots=True)
class LockEntry:
    """One contender: its :class:`~aiocoord.Participant` record, its role, and its node's
    Stat (the session is ``stat.ephemeral_owner``, the fencing token ``stat.czxid``)."""

    participant: Participant
    #: ``holder``/``waiting`` (lock), ``reader``/``writer``/``waiting reader``/``waiting
    #: writer`` (rwlock), ``leader``/``candidate`` (latch), ``lease``/``acquiring``/``waiting``
    #: (semaphore)
    role: str
    #: the node's path below PATH (``leases/…``, ``locks/…`` for a semaphore)
    node: str
    stat: Stat

    @property
    def fencing_token(self) -> int:
        """The node's creation zxid, as our recipes' ``fencing_token``."""
        return self.stat.czxid

    @property
    def node_layout(self) -> Layout | None:
        """Whose layout the node's name is in
        (:func:`~aiocoord.recipes.layout.contender_layout`)."""
        return contender_layout(split(self.node)[1])


def adding_lease(lease: Stat, head: Stat | None) -> bool:
    """Whether a semaphore's lease node is the one the head of its lock queue is adding (its
    session's, made after its lock node): counted, but not held until at most ``max_leases``
    remain (a number ZooKeeper does not store)."""
    return (
        head is not None
        and lease.ephemeral_owner == head.ephemeral_owner
        and lease.czxid > head.czxid
    )


def _kind_of(names: list[str]) -> str | None:
    if LEASES in names or LOCKS in names:
        return "semaphore"
    if any(READ_NAME in n or WRITE_NAME in n or KAZOO_READ in n for n in names):
        return "rwlock"
    if any(LATCH_NAME in n for n in names):
        return "latch"
    if any(LOCK_NAME in n or KAZOO_LOCK in n for n in names):
        return "lock"
    return None


async def detect_layout(client: Client, path: str) -> str | None:
    """The layout of the recipe at ``path`` from its children's names; None if none is
    there. Raises NoNodeError if ``path`` does not exist."""
    return _kind_of(await client.children(path))


def _in_queue_order(found: list[Participant]) -> list[tuple[str, Participant]]:
    by_name = {p.node_name: p for p in found}
    return [(n, by_name[n]) for n in sort_by_sequence(list(by_name))]


async def _participants(
    client: Client, layout: str, path: str, names: list[str]
) -> list[tuple[str, Participant]]:
    """``(node below path, participant)`` in queue order, as the recipe lists them: the
    recipe of each layout whose contenders are among ``names`` (the path's children), so
    that a mixed path shows them all."""
    if layout == "election":
        # An Election's nodes are named as a lock's, a LeaderLatch's are not.
        layout = "latch" if any(LATCH_NAME in n for n in names) else "lock"
    layouts = sorted({found for n in names if (found := contender_layout(n))}) or [Layout.CURATOR]
    if layout == "lock":
        halves = await asyncio.gather(
            *(Lock(client, path, layout=speaks).contenders() for speaks in layouts)
        )
        return _in_queue_order([p for half in halves for p in half])
    if layout == "latch":
        return [(p.node_name, p) for p in await LeaderLatch(client, path).participants()]
    if layout == "rwlock":
        rws = [ReadWriteLock(client, path, layout=speaks) for speaks in layouts]
        halves = await asyncio.gather(
            *(half.contenders() for rw in rws for half in (rw.write, rw.read))
        )
        return _in_queue_order([p for half in halves for p in half])
    leases, queue = await asyncio.gather(
        Semaphore(client, path, 1).participants(), Lock(client, join(path, LOCKS)).contenders()
    )
    return [
        *((f"{LEASES}/{p.node_name}", p) for p in leases),
        *((f"{LOCKS}/{p.node_name}", p) for p in queue),
    ]


def _roles(layout: str, found: list[tuple[str, Participant, Stat]]) -> list[str]:
    if layout == "semaphore":
        head = next((s for n, p, s in found if n.startswith(LOCKS + "/") and p.holds), None)
        roles = []
        for node, p, stat in found:
            if node.startswith(LEASES + "/"):
                roles.append("acquiring" if adding_lease(stat, head) else "lease")
            elif not p.holds:
                roles.append("waiting")
            else:  # shown as its lease node once it has added one
                roles.append("" if "acquiring" in roles else "acquiring")
        return roles
    if layout == "rwlock":
        return [
            ("" if p.holds else "waiting ")
            + ("reader" if READ_NAME in n or KAZOO_READ in n else "writer")
            for n, p, _ in found
        ]
    leaders = layout in ("latch", "election")
    held, waiting = ("leader", "candidate") if leaders else ("holder", "waiting")
    return [held if p.holds else waiting for _, p, _ in found]


async def lock_entries(
    client: Client, path: str, layout: str = "auto", progress: Progress | None = None
) -> tuple[str | None, list[LockEntry]]:
    """The layout found (or given) at ``path`` and its contenders, holders first, in queue
    order. ``(None, [])`` if ``path`` does not exist or holds no contender (an unused lock's
    parents are containers, which the server removes once empty)."""
    try:
        names = await client.children(path)
        found_layout = _kind_of(names) if layout == "auto" else layout
        if found_layout is None:
            return None, []
        listed = await _participants(client, found_layout, path, names)
    except NoNodeError:
        return None, []
    if progress is not None:
        progress.update(f"reading {len(listed)} node(s) ...")
    stats = await asyncio.gather(*(client.exists(join(path, node)) for node, _ in listed))
    # A node gone between the listing and its Stat has left the queue: leave it out.
    found = [(n, p, s) for (n, p), s in zip(listed, stats, strict=True) if s is not None]
    roles = _roles(found_layout, found)
    return found_layout, [
        LockEntry(p, role, n, s) for (n, p, s), role in zip(found, roles, strict=True) if role
    ]


#: Sessions by id, as `cons` shows them connected.
Connections = dict[int, SessionConnection]


async def _connections(servers: list[Server], timeout: float) -> Connections:
    """Every session connected to one of ``servers``, by session id, from ``cons``; members
    that do not answer (or do not allow ``cons``) are skipped."""

    async def one(server: Server) -> list[SessionConnection]:
        try:
            return parse_cons(
                await four_letter(server.host, server.port, "cons", timeout), str(server)
            )
        except (TimeoutError, FourLetterError, OSError):
            return []  # an address is a nicety: the table goes on without it

    out: dict[int, SessionConnection] = {}
    for found in await asyncio.gather(*(one(s) for s in servers)):
        out.update((c.session_id, c) for c in found)
    return out


def _age(seconds: float) -> str:
    s = max(0, int(seconds))
    for unit, size, sub, sub_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60)):
        if s >= size:
            return f"{s // size}{unit}{(s % size) // sub_size:02d}{sub}"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def entry_json(
    position: int, e: LockEntry, conns: dict[int, SessionConnection], now: float
) -> dict[str, object]:
    """One contender as ``--json`` shows it (the keys are documented in docs/operations.md)."""
    owner = e.stat.ephemeral_owner
    conn = conns.get(owner) if owner else None
    return {
        "position": position,
        "role": e.role,
        "holds": e.participant.holds,
        "identifier": e.participant.identifier,
        "node": e.node,
        "sequence": sequence_of(e.node),
        "session_id": f"0x{owner:x}" if owner else None,
        "client": conn.client_address if conn else None,
        "server": conn.server if conn else None,
        "fencing_token": e.fencing_token,
        "ctime_ms": e.stat.ctime,
        "age_seconds": round(max(0.0, now - e.stat.ctime / 1000), 3),
        "node_layout": None if e.node_layout is None else e.node_layout.value,
    }


def mixed_layouts(rows: list[dict[str, object]]) -> bool:
    """Whether the contenders are of both layouts, Curator's and kazoo's (see the module
    docstring): a path where two may hold at once."""
    return len({r["node_layout"] for r in rows} - {None}) > 1


#: What the summary line of a mixed path says.
MIXED = (
    "MIXED LAYOUTS (curator and kazoo): kazoo's recipes do not wait for Curator-layout nodes "
    "unless given extra_lock_patterns, so two may hold at once"
)


def _summary(layout: str, rows: list[dict[str, object]]) -> str:
    if layout == "semaphore":
        held = sum(r["role"] == "lease" for r in rows)
        return f"{held} lease(s) held; {len(rows) - held} waiting or acquiring"
    holding = [shown(str(r["identifier"])) for r in rows if r["holds"]]
    if layout in ("latch", "election"):
        return f"leader {holding[0]}; {len(rows) - 1} candidate(s)" if holding else "no leader"
    return f"held by {', '.join(holding) or 'nobody'}; {len(rows) - len(holding)} waiting"


def locks_lines(path: str, layout: str | None, rows: list[dict[str, object]]) -> list[str]:
    """The table: a summary line, then one line per contender in queue order."""
    if layout is None or not rows:
        return [f"{path}: nobody holds or waits"]
    mixed = mixed_layouts(rows)
    header: tuple[str, ...] = ("#", "role", "identifier", "session", "client", "token", "age")
    header += ("node", "layout") if mixed else ("node",)
    table = [header] + [
        (
            str(r["position"]),
            str(r["role"]),
            shown(str(r["identifier"] or "-")),
            str(r["session_id"] or "-"),
            str(r["client"] or "-"),
            str(r["fencing_token"]),
            _age(float(str(r["age_seconds"]))),
            str(r["node"]),
            *((str(r["node_layout"] or "-"),) if mixed else ()),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    summary = _summary(layout, rows) + (f"; {MIXED}" if mixed else "")
    lines = [f"{layout} {path}: {summary}"]
    for row in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return lines


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``locks`` command to the subcommands ``sub``."""
    locks = sub.add_parser(
        "locks",
        help="holder and waiters of a lock, rwlock, semaphore or leader latch, with sessions",
        description="Show the queue of the lock-like recipe at PATH (ours or Curator's: "
        "lock, read-write lock, semaphore, leader latch; found from the node names), holders "
        "first: node, sequence, session, the client address `cons` shows for it, fencing "
        "token (the node's czxid), age and identifier. Read-only: sets no watch.",
    )
    add_hosts(locks)
    locks.add_argument("path", metavar="PATH", help="the recipe's path, e.g. /locks/orders")
    locks.add_argument("--kind", choices=LAYOUTS, default="auto", help="the layout (default auto)")
    locks.add_argument("--timeout", type=positive_seconds, default=5.0, help=timeout_help())
    locks.add_argument("--json", action="store_true", help="one JSON object (keys documented)")


async def run(args: argparse.Namespace, what: str = "locks") -> int:
    """Run ``locks`` (or its alias ``what``) as parsed into ``args``; the exit status."""
    hosts = hosts_of(args, what)
    servers = servers_of(hosts, what)
    if hosts is None or servers is None:
        return 2
    path: str = args.path
    progress = Progress()
    progress.update(f"reading {path} ...")

    async def read(
        client: Client,
    ) -> tuple[str | None, list[LockEntry], dict[int, SessionConnection]]:
        (layout, entries), conns = await asyncio.gather(
            lock_entries(client, path, args.kind, progress), _connections(servers, args.timeout)
        )
        return layout, entries, conns

    try:
        status, result = await read_only(hosts, args.timeout, what, path, read)
    finally:
        progress.clear()
    if result is None:
        return status
    layout, entries, conns = result
    now = time.time()
    rows = [entry_json(i, e, conns, now) for i, e in enumerate(entries)]
    if args.json:
        doc = {
            "path": path,
            "layout": layout,
            "mixed_layouts": mixed_layouts(rows),
            "entries": rows,
        }
        print(json.dumps(doc))
    else:
        print("\n".join(locks_lines(path, layout, rows)))
    return EXIT_OK
