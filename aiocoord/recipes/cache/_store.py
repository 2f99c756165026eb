"""What a cache holds, and the rule that turns a read into a change.

The store maps each cached path to its ChildData and keeps a parent -> children index, so a
removed node takes its cached subtree with it. A read result changes the store only when it
is newer than what is held, compared by ``czxid`` and ``mzxid`` (never by version, which
restarts at 0 when a node is re-created); every change is handed to ``emit`` as it happens,
so replaying the changes onto an empty mapping gives the store's content.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from aiocoord._paths import split
from aiocoord._wire.data import Stat
from aiocoord.client import ChildData
from aiocoord.errors import InvalidTypeError
from aiocoord.recipes.cache._types import TreeCacheSelector

__all__ = ["Change", "Emit", "Store"]


class Change(enum.Enum):
    """What happened to a cached node (each cache names these its own way)."""

    ADDED = "added"
    UPDATED = "updated"
    REMOVED = "removed"


#: ``emit(change, path, new, old)``: called for every change, in the order they happen.
Emit = Callable[[Change, str, "ChildData | None", "ChildData | None"], None]


class Store:
    """A cache's nodes: ``root`` and, to ``limit`` levels below it, its subtree."""

    __slots__ = (
        "_emit",
        "_prefix",
        "_slashes",
        "include_root",
        "kids",
        "limit",
        "nodes",
        "root",
        "selector",
    )

    def __init__(self, root: str, *, limit: int, include_root: bool, emit: Emit) -> None:
        self.root = root
        self.limit = limit
        self.include_root = include_root
        self.nodes: dict[str, ChildData] = {}
        #: parent path -> cached child paths
        self.kids: dict[str, set[str]] = {}
        self._emit = emit
        self._prefix = "/" if root == "/" else root + "/"
        self._slashes = 0 if root == "/" else root.count("/")
        #: which nodes within ``limit`` are followed (None: all)
        self.selector: TreeCacheSelector | None = None

    def select(self, selector: TreeCacheSelector | None) -> None:
        """Follow only the nodes ``selector`` picks (None: all within the limit)."""
        if selector is not None and not isinstance(selector, TreeCacheSelector):
            raise InvalidTypeError(
                f"selector must be a TreeCacheSelector or None, not {type(selector).__name__}"
            )
        self.selector = selector

    def depth(self, path: str) -> int | None:
        """Levels of ``path`` below the root (0 for the root), None if outside it."""
        if path == self.root:
            return 0
        if not path.startswith(self._prefix):
            return None
        return path.count("/") - self._slashes

    def wants(self, path: str) -> bool:
        """True if ``path`` is one the cache holds when it exists."""
        depth = self.depth(path)
        if depth is None or depth > self.limit or (depth == 0 and not self.include_root):
            return False
        return depth == 0 or self.selector is None or self._selected(path)

    def _selected(self, path: str) -> bool:
        """The selector's rule (TreeCacheSelector's docstring) for ``path`` below the root."""
        assert self.selector is not None
        parent = split(path)[0]
        if not (self.selector.traverse_children(parent) and self.selector.accept_child(path)):
            return False
        return parent == self.root or self._selected(parent)

    def follows(self, path: str, depth: int) -> bool:
        """Whether the children of ``path``, ``depth`` levels below the root and held, are
        listed: within the limit, and traversed by the selector."""
        return depth < self.limit and (
            self.selector is None or self.selector.traverse_children(path)
        )

    def accepts(self, path: str) -> bool:
        """Whether ``path``, a child of a followed node, is held (the selector's word)."""
        return self.selector is None or self.selector.accept_child(path)

    def put(self, path: str, data: bytes, stat: Stat) -> None:
        """A read found ``path`` with ``data`` and ``stat``: keep it if it is news."""
        old = self.nodes.get(path)
        if old is None:
            new = ChildData(path, data, stat)
            self.nodes[path] = new
            if path != self.root:
                parent = split(path)[0]
                kids = self.kids.get(parent)
                if kids is None:
                    kids = self.kids[parent] = set()
                kids.add(path)
            self._emit(Change.ADDED, path, new, None)
            return
        ostat = old.stat
        if stat.czxid == ostat.czxid:
            if stat.mzxid > ostat.mzxid:
                new = ChildData(path, data, stat)
                self.nodes[path] = new
                self._emit(Change.UPDATED, path, new, old)
            return
        if stat.czxid < ostat.czxid:
            return  # an older incarnation than the one held: stale, ignore
        # Deleted and re-created while we were not looking: a different node now.
        new = ChildData(path, data, stat)
        self.nodes[path] = new
        self._emit(Change.REMOVED, path, None, old)
        self._emit(Change.ADDED, path, new, None)

    def remove(self, path: str) -> None:
        """The node is gone (a read said so): so is every held node below it."""
        kids = self.kids.get(path)
        if kids:
            for kid in list(kids):
                self.remove(kid)
        self.drop(path)

    def drop(self, path: str) -> None:
        """Forget ``path`` alone (a deletion event: its children have events of their own)."""
        old = self.nodes.pop(path, None)
        if old is None:
            return
        if path != self.root:
            parent = split(path)[0]
            kids = self.kids.get(parent)
            if kids is not None:
                kids.discard(path)
                if not kids:
                    del self.kids[parent]
        self._emit(Change.REMOVED, path, None, old)
