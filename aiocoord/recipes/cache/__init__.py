"""Caches of ZooKeeper nodes: NodeCache, ChildrenCache and TreeCache, with their change streams.

The lifecycle and the streams are in ``_caches``, what is cached and how it changes in
``_store``, how changes are heard (persistent or one-shot watches) in ``_feeds``, the events and
other values in ``_types``."""

from aiocoord._shown import show_in
from aiocoord.recipes.cache._caches import (
    CacheError,
    CacheEventType,
    ChildrenCache,
    EventSubscription,
    NodeCache,
    NodeEvent,
    TreeCache,
    TreeCacheSelector,
    WatchMode,
)

__all__ = [
    "CacheError",
    "CacheEventType",
    "ChildrenCache",
    "EventSubscription",
    "NodeCache",
    "NodeEvent",
    "TreeCache",
    "TreeCacheSelector",
    "WatchMode",
]

# Shown as defined here: the private modules of this package are no place to import from.
show_in(__name__, globals(), __all__)
