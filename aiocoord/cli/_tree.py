"""``aiocoord tree [PATH]``: the nodes under a path, indented.

It only reads (``children``, ``get``), siblings pipelined, and never sets a watch, so pointing
it at a production ensemble disturbs nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
from dataclasses import dataclass

from aiocoord._paths import join, sequence_of, split
from aiocoord._wire.data import Stat
from aiocoord.cli._common import (
    EXIT_USAGE,
    add_hosts,
    hosts_of,
    non_negative_int,
    positive_seconds,
    read_only,
    timeout_help,
)
from aiocoord.cli._progress import Progress
from aiocoord.client import Client
from aiocoord.errors import NoNodeError

__all__ = [
    "TreeNode",
    "add_parser",
    "run",
    "sibling_order",
    "tree_json",
    "tree_lines",
    "walk_tree",
]

#: Data previews in ``tree --data`` are cut to this many characters.
_PREVIEW = 60


def _preview(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes binary>"
    if not text.isprintable():
        return repr(data[:_PREVIEW])
    return repr(text if len(text) <= _PREVIEW else text[:_PREVIEW] + "...")


def sibling_order(name: str) -> tuple[bool, int, str]:
    """The sort key of siblings: names without a sequence number first, by name; then the
    sequential ones by their number alone, so that a lock's queue reads in queue order (a
    protected node's name starts with a random UUID, which must not decide)."""
    sequence = sequence_of(name)
    return (sequence is not None, sequence or 0, name)


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One node of a walk: its path, depth below the start, Stat, data (None unless asked
    for) and how many of its children were left out by ``--depth``."""

    path: str
    depth: int
    stat: Stat
    data: bytes | None
    hidden_children: int


async def walk_tree(
    client: Client,
    path: str,
    *,
    max_depth: int | None = None,
    show_data: bool = False,
    progress: Progress | None = None,
) -> list[TreeNode]:
    """``path`` and its descendants, depth first, siblings in :func:`sibling_order`; siblings
    are read concurrently (pipelined on the one connection).

    Raises NoNodeError if ``path`` does not exist; nodes deleted during the walk are left out.
    """
    read = 0

    async def walk(node: str, depth: int) -> list[TreeNode]:
        nonlocal read
        try:
            data: bytes | None = None
            if show_data:
                (data, stat), names = await asyncio.gather(client.get(node), client.children(node))
            else:
                names, stat = await client.children(node, with_stat=True)
        except NoNodeError:
            if depth == 0:
                raise
            return []
        read += 1
        if progress is not None:
            progress.update(f"read {read} node(s) ...")
        if max_depth is not None and depth >= max_depth:
            return [TreeNode(node, depth, stat, data, len(names))]
        out = [TreeNode(node, depth, stat, data, 0)]
        below = await asyncio.gather(
            *(walk(join(node, n), depth + 1) for n in sorted(names, key=sibling_order))
        )
        for sub in below:
            out.extend(sub)
        return out

    return await walk(path, 0)


def tree_lines(nodes: list[TreeNode]) -> list[str]:
    """An indented listing: one line per node with its data size, ``[ephemeral 0x<session>]``
    for ephemeral nodes and, when the data was read, a preview of it."""
    lines = []
    for n in nodes:
        label = n.path if n.depth == 0 else split(n.path)[1]
        line = f"{'  ' * n.depth}{label}  ({n.stat.data_length} B)"
        if n.stat.ephemeral_owner:
            line += f"  [ephemeral 0x{n.stat.ephemeral_owner:x}]"
        if n.data:
            line += f"  {_preview(n.data)}"
        lines.append(line)
        if n.hidden_children:
            lines.append(f"{'  ' * (n.depth + 1)}... {n.hidden_children} children not shown")
    return lines


def tree_json(root: str, nodes: list[TreeNode]) -> dict[str, object]:
    """The walk as ``--json`` shows it (the keys are documented in docs/operations.md)."""

    def one(n: TreeNode) -> dict[str, object]:
        text = None
        if n.data is not None:
            with contextlib.suppress(UnicodeDecodeError):  # binary: data_base64 has it
                text = n.data.decode("utf-8")
        st = n.stat
        return {
            "path": n.path,
            "depth": n.depth,
            "data_length": st.data_length,
            "num_children": st.num_children,
            "hidden_children": n.hidden_children,
            "ephemeral_owner": f"0x{st.ephemeral_owner:x}" if st.ephemeral_owner else None,
            "czxid": st.czxid,
            "mzxid": st.mzxid,
            "ctime_ms": st.ctime,
            "mtime_ms": st.mtime,
            "version": st.version,
            "data": text,
            "data_base64": None if n.data is None else base64.b64encode(n.data).decode(),
        }

    return {"path": root, "nodes": [one(n) for n in nodes]}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``tree`` command to the subcommands ``sub``."""
    tree = sub.add_parser(
        "tree",
        help="print the nodes under a path",
        description="Print the nodes under PATH, indented, with data sizes and ephemeral "
        "owners. Read-only.",
    )
    add_hosts(tree)
    tree.add_argument(
        "path", nargs="?", metavar="PATH", default=None, help="where to start (default /)"
    )
    tree.add_argument("--timeout", type=positive_seconds, default=5.0, help=timeout_help())
    tree.add_argument(
        "--depth", type=non_negative_int, default=None, help="levels to show below PATH"
    )
    tree.add_argument("--data", action="store_true", help="show a preview of each node's data")
    tree.add_argument("--json", action="store_true", help="one JSON object (keys documented)")


async def run(args: argparse.Namespace) -> int:
    """Run ``tree`` as parsed into ``args``; the exit status."""
    hosts = hosts_of(args, "tree")
    if hosts is None:
        return EXIT_USAGE
    path: str = args.path if args.path is not None else "/"
    progress = Progress()
    try:
        status, nodes = await read_only(
            hosts,
            args.timeout,
            "tree",
            path,
            lambda c: walk_tree(
                c, path, max_depth=args.depth, show_data=args.data, progress=progress
            ),
        )
    finally:
        progress.clear()
    if nodes is not None:
        if args.json:
            print(json.dumps(tree_json(path, nodes)))
        else:
            print("\n".join(tree_lines(nodes)))
    return status
