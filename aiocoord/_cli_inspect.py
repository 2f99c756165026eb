"""What ``python -m aiocoord tree`` and ``inspect`` print: read-only views of a live ensemble.

Both only read (``children``, ``get``), pipelined, and never set a watch, so pointing them at
a production ensemble disturbs nothing. The contender layouts are the recipes' own (see
:mod:`aiocoord.recipes._queue`): protected sequential nodes ordered by their sequence number
alone, holding the contender's identifier as data.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiocoord._paths import join, sort_by_sequence
from aiocoord._wire.data import Stat
from aiocoord.client import Client
from aiocoord.errors import NoNodeError
from aiocoord.recipes.election import ELECTION_NAME, LATCH_NAME
from aiocoord.recipes.lock import LOCK_NAME
from aiocoord.recipes.rwlock import READ_NAME, WRITE_NAME
from aiocoord.recipes.semaphore import LEASE_NAME, LEASES, LOCKS

__all__ = ["KINDS", "Contender", "contenders", "queue_lines", "tree_lines"]

#: The recipe kinds ``inspect`` understands.
KINDS = ("lock", "rwlock", "election", "semaphore")

#: Data previews in ``tree --data`` are cut to this many characters.
_PREVIEW = 60


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


# --- tree ---------------------------------------------------------------------------------


def _preview(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes binary>"
    if not text.isprintable():
        return repr(data[:_PREVIEW])
    return repr(text if len(text) <= _PREVIEW else text[:_PREVIEW] + "...")


async def tree_lines(
    client: Client, path: str, *, max_depth: int | None = None, show_data: bool = False
) -> list[str]:
    """An indented listing of ``path`` and its descendants: one line per node with its data
    size, ``[ephemeral 0x<session>]`` for ephemeral nodes and, with ``show_data``, a preview of
    the data. Siblings are read concurrently (pipelined on the one connection).

    Raises NoNodeError if ``path`` does not exist; nodes deleted during the walk are left out.
    """

    async def walk(node: str, depth: int) -> list[str]:
        try:
            if show_data:
                (data, stat), names = await asyncio.gather(client.get(node), client.children(node))
            else:
                names, stat = await client.children(node, with_stat=True)
                data = b""
        except NoNodeError:
            if depth == 0:
                raise
            return []
        label = node if depth == 0 else node.rsplit("/", 1)[1]
        line = f"{'  ' * depth}{label}  ({stat.data_length} B)"
        if stat.ephemeral_owner:
            line += f"  [ephemeral 0x{stat.ephemeral_owner:x}]"
        if show_data and data:
            line += f"  {_preview(data)}"
        lines = [line]
        if max_depth is not None and depth >= max_depth:
            if names:
                lines.append(f"{'  ' * (depth + 1)}... {len(names)} children not shown")
            return lines
        below = await asyncio.gather(*(walk(join(node, n), depth + 1) for n in sorted(names)))
        for sub in below:
            lines.extend(sub)
        return lines

    return await walk(path, 0)


# --- contenders ---------------------------------------------------------------------------


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

        def adding(stat: Stat) -> bool:
            return head is not None and (
                stat.ephemeral_owner == head[2].ephemeral_owner and stat.czxid > head[2].czxid
            )

        rows = [
            _contender(i, "acquiring" if adding(node[2]) else "lease", *node)
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
    who = ", ".join(r.identifier for r in holding) or "nobody"
    return f"held by {who}; {len(rows) - len(holding)} waiting"


async def queue_lines(client: Client, kind: str, path: str) -> list[str]:
    """Holders and waiters of a lock / rwlock / election / semaphore, in queue order, as a
    table: position, role, identifier, owning session, node name, creation zxid."""
    rows = await contenders(client, kind, path)
    if not rows:
        return [f"{kind} {path}: nobody holds or waits"]
    width = max(10, *(len(r.identifier) for r in rows))
    header = f"{'#':>3}  {'role':<14}  {'identifier':<{width}}  {'session':<18}  node  (czxid)"
    lines = [f"{kind} {path}: {_summary(kind, rows)}", header]
    for r in rows:
        session = f"0x{r.session_id:x}" if r.session_id else "-"
        lines.append(
            f"{r.position:>3}  {r.role:<14}  {r.identifier:<{width}}  {session:<18}  "
            f"{r.node}  ({r.czxid})"
        )
    return lines
