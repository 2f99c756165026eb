"""The values the caches of :mod:`aiocoord.recipes.cache` hand out: how a cache follows the
server (:class:`WatchMode`), its events (:class:`CacheEventType`, :class:`NodeEvent`), its
error (:class:`CacheError`), the live ``name -> ChildData`` view of a ChildrenCache
(:class:`ChildrenView`) and which nodes a TreeCache follows (:class:`TreeCacheSelector`).
Plain data, no I/O; re-exported from :mod:`aiocoord.recipes.cache`,
where the API reference shows them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from aiocoord._paths import split
from aiocoord.client import ChildData
from aiocoord.errors import CacheError

__all__ = [
    "CacheError",
    "CacheEventType",
    "ChildrenView",
    "NodeEvent",
    "TreeCacheSelector",
    "WatchMode",
]


class WatchMode(enum.StrEnum):
    """How a cache follows the server (``watch_mode=``; the plain strings work too)."""

    #: one persistent watch where the server has them (3.6+), else one-shot watches
    AUTO = "auto"
    #: one persistent (for a tree: recursive) watch; CacheError on a server without them
    PERSISTENT = "persistent"
    #: one-shot watches, re-armed after every event
    ONE_SHOT = "one-shot"


class CacheEventType(enum.Enum):
    """What a :class:`NodeEvent` reports. Each cache uses its own three node kinds."""

    #: NodeCache: the node appeared.
    CREATED = "created"
    #: NodeCache: the node's data was written (its ``mzxid`` moved).
    UPDATED = "updated"
    #: NodeCache: the node disappeared.
    DELETED = "deleted"
    #: ChildrenCache: a child appeared.
    CHILD_ADDED = "child_added"
    #: ChildrenCache: a child's data was written (its ``mzxid`` moved).
    CHILD_UPDATED = "child_updated"
    #: ChildrenCache: a child disappeared.
    CHILD_REMOVED = "child_removed"
    #: TreeCache: a node of the subtree appeared.
    NODE_ADDED = "node_added"
    #: TreeCache: a node of the subtree had its data written (its ``mzxid`` moved).
    NODE_UPDATED = "node_updated"
    #: TreeCache: a node of the subtree disappeared.
    NODE_REMOVED = "node_removed"
    #: Every cache: the initial load is done (the events before it describe that state).
    INITIALIZED = "initialized"
    #: Every cache: the connection was lost; the cache may be stale until RECONNECTED.
    SUSPENDED = "suspended"
    #: Every cache: connected again; the differences found by re-reading follow.
    RECONNECTED = "reconnected"
    #: Every cache: the session expired; a new one is made and the cache refreshed on it.
    LOST = "lost"
    #: Every cache: this subscriber's buffer overflowed; read the cache's state now.
    RESYNCED = "resynced"


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """One change seen by a cache.

    ``data`` is the node's new state (None when it was removed), ``previous`` its state before
    (None when it was added). For INITIALIZED, connection events and RESYNCED, ``path`` is the
    cache's path and both are None.
    """

    #: what happened
    type: CacheEventType
    #: the path of the node concerned; for INITIALIZED, connection events and RESYNCED, the
    #: cache's path
    path: str
    #: the node's new state; None when it was removed, and for the events that concern
    #: no node
    data: ChildData | None = None
    #: the node's state before the change; None when it was added, and for the events that
    #: concern no node
    previous: ChildData | None = None

    @property
    def name(self) -> str:
        """The last segment of ``path`` (a child's name in a ChildrenCache)."""
        return split(self.path)[1]


class ChildrenView(Mapping[str, ChildData]):
    """A live, read-only ``name -> ChildData`` view over a ChildrenCache."""

    __slots__ = ("_nodes", "_prefix")

    def __init__(self, nodes: dict[str, ChildData], prefix: str) -> None:
        self._nodes = nodes
        self._prefix = prefix

    def __getitem__(self, name: str) -> ChildData:
        return self._nodes[self._prefix + name]

    def __iter__(self) -> Iterator[str]:
        cut = len(self._prefix)
        return (path[cut:] for path in self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (self._prefix + name) in self._nodes

    def __repr__(self) -> str:
        return f"ChildrenView({dict(self)!r})"


class TreeCacheSelector:
    """Which nodes a :class:`~aiocoord.TreeCache` follows (Curator's ``TreeCacheSelector``):
    pass a subclass as ``selector=`` and override either method; both say yes by default.

    A node is cached when it is within ``max_depth``, every ancestor below the cache's root
    was accepted, every ancestor (the root included) has its children traversed, and the node
    itself is accepted. Paths are full and client-relative (``/app/config/db``). The methods
    are called on the event loop for every node read and every event: keep them quick, pure
    (the same answer for the same path, every time) and free of exceptions.
    """

    def traverse_children(self, path: str) -> bool:
        """Whether the children of ``path`` are cached (listed and watched)."""
        return True

    def accept_child(self, path: str) -> bool:
        """Whether ``path``, a child of a traversed node, is cached; a refused node is not
        followed further either."""
        return True
