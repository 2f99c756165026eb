"""``aiocoord inspect lock|rwlock|election|semaphore PATH``: holders and waiters, in queue
order.

It only reads (``children``, ``get``), pipelined, and never sets a watch, so pointing it at a
production ensemble disturbs nothing. The contender layouts are the recipes' own (see
:mod:`aiocoord.recipes.lock`): protected sequential nodes ordered by their sequence number
alone, holding the contender's identifier as data.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass

from aiocoord._paths import join, sort_by_sequence
from aiocoord._wire.data import Stat
from aiocoord.cli._common import connect_help, default_connect, read_only, shown, timeout_help
from aiocoord.cli._locks import adding_lease
from aiocoord.client import Client
from aiocoord.errors import NoNodeError
from aiocoord.recipes.election import ELECTION_NAME, LATCH_NAME
from aiocoord.recipes.lock import LOCK_NAME
from aiocoord.recipes.rwlock import READ_NAME, WRITE_NAME
from aiocoord.recipes.semaphore import LEASE_NAME, LEASES, LOCKS

__all__ = ["KINDS", "Contender", "add_parser", "contenders", "queue_json", "queue_lines", "run"]

#: The recipe kinds ``inspect`` understands.
KINDS = ("lock", "rwlock", "election", "semaphore")


@dataclass(frozen=True, slots=True)
class Contender:
    """One contender node of a lock, election or semaphore, as the server has it now."""

    #: place in the queue, 0 first
    position: int
    #: ``holder``/``waiting`` (locks); ``reader``/``writer``, ``waiting reader``/``waiting
    #: writer`` (rwlock); ``leader``/``candidate`` (elections); ``lease`` (held),
    #: ``acquiring`` (the head of the semaphore's lock queue, adding its lease nodes) and
    #: ``waiting`` (semaphores)
    role: str
    #: the contender's identifier (the node's data)
    identifier: str
    #: the session that owns the node (0 for a persistent node)
    session_id: int
    #: the node's name under the recipe's path
    node: str
    #: the node's creation zxid: a holder's fencing token
    czxid: int


async def _read_queue(
    client: Client, path: str, names_with: tuple[str, ...]
) -> list[tuple[str, bytes, Stat]]:
    """``(name, data, stat)`` of the sequential children of ``path`` whose names contain one
    of ``names_with``, in queue order; nodes that vanish meanwhile are left out."""
    try:
        names = await client.children(path)
    except NoNodeError:
        return []
    ordered = sort_by_sequence([n for n in names if any(w in n for w in names_with)])
    replies = await asyncio.gather(
        *(client.get(join(path, n)) for n in ordered), return_exceptions=True
    )
    out: list[tuple[str, bytes, Stat]] = []
    for name, reply in zip(ordered, replies, strict=True):
        if isinstance(reply, NoNodeError):
            continue
        if isinstance(reply, BaseException):
            raise reply
        out.append((name, reply[0], reply[1]))
    return out


def _contender(position: int, role: str, name: str, data: bytes, stat: Stat) -> Contender:
    ident = data.decode("utf-8", "replace") or "-"
    return Contender(position, role, ident, stat.ephemeral_owner, name, stat.czxid)


def _rw_roles(nodes: list[tuple[str, bytes, Stat]]) -> list[str]:
    """A writer holds when nothing is ahead of it; a reader when no writer is ahead."""
    roles = []
    writer_ahead = False
    for i, (name, _, _) in enumerate(nodes):
        if WRITE_NAME in name:
            roles.append("writer" if i == 0 else "waiting writer")
            writer_ahead = True
        else:
            roles.append("waiting reader" if writer_ahead else "reader")
    return roles


async def contenders(client: Client, kind: str, path: str) -> list[Contender]:
    """Every contender of the ``kind`` recipe (see :data:`KINDS`) at ``path``, holders first,
    in queue order. Empty if there is none (an unused recipe path may not exist at all: its
    parents are containers, which the server removes once empty)."""
    if kind == "semaphore":
        leases, queue = await asyncio.gather(
            _read_queue(client, join(path, LEASES), (LEASE_NAME,)),
            _read_queue(client, join(path, LOCKS), (LOCK_NAME,)),
        )
        # Only the head of the lock queue adds lease nodes, and it holds them once at most
        # max_leases exist (a number ZooKeeper does not store). Its nodes of this tenure are
        # those of its session created after its lock node: shown as "acquiring".
        head = queue[0] if queue else None
        head_stat = head[2] if head is not None else None
        rows = [
            _contender(i, "acquiring" if adding_lease(node[2], head_stat) else "lease", *node)
            for i, node in enumerate(leases)
        ]
        if head is not None and not any(r.role == "acquiring" for r in rows):
            rows.append(_contender(len(rows), "acquiring", *head))
        for node in queue[1:]:
            rows.append(_contender(len(rows), "waiting", *node))
        return rows
    if kind == "election":
        nodes = await _read_queue(client, path, (LATCH_NAME, ELECTION_NAME))
        return [
            _contender(i, "leader" if i == 0 else "candidate", *node)
            for i, node in enumerate(nodes)
        ]
    if kind in ("lock", "rwlock"):
        nodes = await _read_queue(client, path, (LOCK_NAME, READ_NAME, WRITE_NAME))
        if kind == "rwlock" or any(READ_NAME in n or WRITE_NAME in n for n, _, _ in nodes):
            roles = _rw_roles(nodes)
        else:
            roles = ["holder" if i == 0 else "waiting" for i in range(len(nodes))]
        return [_contender(i, roles[i], *node) for i, node in enumerate(nodes)]
    raise ValueError(f"unknown recipe kind {kind!r}; expected one of {', '.join(KINDS)}")


def _summary(kind: str, rows: list[Contender]) -> str:
    if kind == "election":
        leader = next((r.identifier for r in rows if r.role == "leader"), None)
        return f"leader {leader}, {len(rows) - 1} candidate(s)" if leader else "no leader"
    if kind == "semaphore":
        held = sum(r.role == "lease" for r in rows)
        return f"{held} lease(s) held, {len(rows) - held} waiting or acquiring"
    holding = [r for r in rows if not r.role.startswith("waiting")]
    who = ", ".join(shown(r.identifier) for r in holding) or "nobody"
    return f"held by {who}; {len(rows) - len(holding)} waiting"


def queue_lines(kind: str, path: str, rows: list[Contender]) -> list[str]:
    """Holders and waiters of a lock / rwlock / election / semaphore, in queue order, as a
    table: position, role, identifier, owning session, node name, creation zxid."""
    if not rows:
        return [f"{kind} {path}: nobody holds or waits"]
    idents = [shown(r.identifier) for r in rows]
    width = max(10, *(len(i) for i in idents))
    header = f"{'#':>3}  {'role':<14}  {'identifier':<{width}}  {'session':<18}  node  (czxid)"
    lines = [f"{kind} {path}: {_summary(kind, rows)}", header]
    for r, ident in zip(rows, idents, strict=True):
        session = f"0x{r.session_id:x}" if r.session_id else "-"
        lines.append(
            f"{r.position:>3}  {r.role:<14}  {ident:<{width}}  {session:<18}  {r.node}  ({r.czxid})"
        )
    return lines


def queue_json(kind: str, path: str, rows: list[Contender]) -> dict[str, object]:
    """The contenders as ``--json`` shows them (the keys are documented in
    docs/operations.md)."""
    return {
        "kind": kind,
        "path": path,
        "summary": _summary(kind, rows) if rows else "nobody holds or waits",
        "contenders": [
            {
                "position": r.position,
                "role": r.role,
                "identifier": r.identifier,
                "session_id": f"0x{r.session_id:x}" if r.session_id else None,
                "node": r.node,
                "czxid": r.czxid,
            }
            for r in rows
        ],
    }


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``inspect`` command to the subcommands ``sub``."""
    inspect = sub.add_parser(
        "inspect",
        help="holders and waiters of a lock, rwlock, election or semaphore",
        description="Show who holds and who waits for a recipe, in queue order, with their "
        "identifiers and sessions. Read-only: sets no watch, changes nothing.",
    )
    inspect.add_argument("kind", choices=KINDS)
    inspect.add_argument("path", help="the recipe's path, e.g. /locks/orders")
    inspect.add_argument("--connect", metavar="HOSTS", default=None, help=connect_help())
    inspect.add_argument("--timeout", type=float, default=5.0, help=timeout_help())
    inspect.add_argument("--json", action="store_true", help="one JSON object (keys documented)")


async def run(args: argparse.Namespace) -> int:
    """Run ``inspect`` as parsed into ``args``; the exit status."""
    kind: str = args.kind
    path: str = args.path
    status, rows = await read_only(
        args.connect or default_connect(),
        args.timeout,
        "inspect",
        path,
        lambda c: contenders(c, kind, path),
    )
    if rows is not None:
        if args.json:
            print(json.dumps(queue_json(kind, path, rows)))
        else:
            print("\n".join(queue_lines(kind, path, rows)))
    return status
