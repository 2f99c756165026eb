"""``aiocoord tree [PATH]``: the nodes under a path, indented.

It only reads (``children``, ``get``), siblings pipelined, and never sets a watch, so pointing
it at a production ensemble disturbs nothing.
"""

from __future__ import annotations

import argparse
import asyncio

from aiocoord._paths import join
from aiocoord.cli._common import connect_help, default_connect, read_only, timeout_help
from aiocoord.client import Client
from aiocoord.errors import NoNodeError

__all__ = ["add_parser", "run", "tree_lines"]

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


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``tree`` command to the subcommands ``sub``."""
    tree = sub.add_parser(
        "tree",
        help="print the nodes under a path",
        description="Print the nodes under PATH, indented, with data sizes and ephemeral "
        "owners. Read-only.",
    )
    tree.add_argument("path", nargs="?", default="/", help="where to start (default /)")
    tree.add_argument("--connect", metavar="HOSTS", default=None, help=connect_help())
    tree.add_argument("--timeout", type=float, default=5.0, help=timeout_help())
    tree.add_argument("--depth", type=int, default=None, help="levels to show below PATH")
    tree.add_argument("--data", action="store_true", help="show a preview of each node's data")


async def run(args: argparse.Namespace) -> int:
    """Run ``tree`` as parsed into ``args``; the exit status."""
    path: str = args.path
    status, lines = await read_only(
        args.connect or default_connect(),
        args.timeout,
        "tree",
        path,
        lambda c: tree_lines(c, path, max_depth=args.depth, show_data=args.data),
    )
    if lines is not None:
        print("\n".join(lines))
    return status
