"""Typed views over the caches of :mod:`aiocoord.recipes.cache`: :class:`ModelCache`, its
change stream :class:`ModelChanges` and the changes it yields, :class:`ModelChange`.

There is no second cache: a view holds a :class:`~aiocoord.NodeCache`,
:class:`~aiocoord.ChildrenCache` or :class:`~aiocoord.TreeCache` and decodes what that cache
holds, lazily, when it is read, remembering the last decoding of each node (by the
:class:`~aiocoord.ChildData` the cache holds, which the cache replaces on every change). Nodes
of the cache that are not the model's (a TreeCache's intermediate nodes) are left out.

**A node that does not decode** is an entry whose :attr:`~aiocoord.modeled.ModelEntry.error`
is the :class:`~aiocoord.modeled.ModelDecodeError` and whose ``data`` are the bytes: the
stream yields it like any other change, the cache keeps it, and both go on; only reading its
``value`` raises. The stream ends as the cache's does (when the cache is closed, or with the
error that stopped it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aiocoord._deadline import within
from aiocoord.client import ChildData, Client
from aiocoord.errors import BadArgumentsError, InvalidTypeError
from aiocoord.modeled.entry import ModelEntry, ModelLike, count_undecodable
from aiocoord.modeled.template import PathTemplate
from aiocoord.recipes.cache import (
    CacheEventType,
    ChildrenCache,
    EventSubscription,
    NodeCache,
    NodeEvent,
    TreeCache,
)

__all__ = ["ModelCache", "ModelChange", "ModelChanges"]

T = TypeVar("T")


@dataclass(frozen=True)
class ModelChange(Generic[T]):
    """One change of a typed stream: the cache's event ``type`` (a
    :class:`~aiocoord.recipes.cache.CacheEventType`), the node's ``path``, its new ``entry``
    (None when it was removed, and for INITIALIZED, connection events and RESYNCED) and its
    ``previous`` entry (None when it was added).

    A node that does not decode still makes a change: its entry carries the error and the
    bytes (``change.entry.ok`` is False).
    """

    #: what happened, the cache's event type
    type: CacheEventType
    #: the node's path (for INITIALIZED, connection events and RESYNCED the cache's path)
    path: str
    #: the node's new entry; None when it was removed, and for INITIALIZED, connection
    #: events and RESYNCED
    entry: ModelEntry[T] | None = None
    #: the node's entry before the change; None when it was added
    previous: ModelEntry[T] | None = None

    @property
    def value(self) -> T | None:
        """The new value (None if there is no entry); raises the entry's
        :class:`~aiocoord.modeled.ModelDecodeError` if it did not decode."""
        return None if self.entry is None else self.entry.value


class ModelChanges(Generic[T]):
    """A typed change stream: ``async for change in changes`` yields
    :class:`ModelChange` values decoded from a cache's :class:`~aiocoord.NodeEvent` stream.

    The underlying subscription's rules hold: at most ``buffer_size`` unread changes; after
    an overflow one RESYNCED change, then read the view's state. A stream made by
    :meth:`~aiocoord.modeled.ModeledNode.changes` owns its cache: it starts it on the first read (or
    on entering ``async with``) and closes it with :meth:`aclose` (or on leaving). A plain
    ``async for`` that is left early leaves that cache running until the client closes:
    prefer ``async with``.
    """

    def __init__(
        self, view: ModelCache[T], subscription: EventSubscription[NodeEvent], owned: bool
    ) -> None:
        self._view = view
        self._sub = subscription
        self._owned = owned
        self._started = not owned

    async def _start(self) -> None:
        if not self._started:
            self._started = True
            await self._view.start()

    def __aiter__(self) -> ModelChanges[T]:
        return self

    async def __anext__(self) -> ModelChange[T]:
        await self._start()
        while True:
            event = await self._sub.__anext__()
            change = self._view._change(event)
            if change is not None:
                return change

    async def get(self, timeout: float | None = None) -> ModelChange[T]:
        """The next change; :class:`aiocoord.TimeoutError` after ``timeout`` seconds.
        StopAsyncIteration once the stream has ended."""
        return await within(self.__anext__(), timeout, "no change")

    async def aclose(self) -> None:
        """Stop the stream (and the cache it owns)."""
        await self._sub.aclose()
        if self._owned:
            await self._view.close()

    async def __aenter__(self) -> ModelChanges[T]:
        await self._start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ModelCache(Generic[T]):
    """A typed view over one of the existing caches (``cache``, a cache of ``client``),
    keeping the model's nodes.

    ``async with view:`` starts and closes the cache (or use :meth:`start` / :meth:`close`;
    a cache already started by its owner is used as it is). :attr:`entries` maps each cached
    node of the model to its :class:`~aiocoord.modeled.ModelEntry`; :attr:`values` to its
    value (nodes that do not decode left out); :attr:`current` is the value of a NodeCache's
    node. :meth:`changes` is the typed stream. ``template`` (default: the model's) decides
    which paths of the cache are the model's. Versions of nodes that do not decode are counted
    once each in ``client.stats().recipes["modeled"].undecodable``.
    """

    def __init__(
        self,
        client: Client,
        cache: NodeCache | ChildrenCache | TreeCache,
        model: ModelLike[T],
        template: PathTemplate | None = None,
    ) -> None:
        if not isinstance(cache, (NodeCache, ChildrenCache, TreeCache)):
            raise InvalidTypeError(
                f"cache must be a NodeCache, ChildrenCache or TreeCache, not {type(cache).__name__}"
            )
        #: the client of the cache, whose stats count the nodes that do not decode
        self.client: Client = client
        #: the cache viewed, which holds the nodes' bytes
        self.cache: NodeCache | ChildrenCache | TreeCache = cache
        #: the model the nodes are decoded with
        self.model: ModelLike[T] = model
        #: which paths of the cache are the model's (default: the model's template)
        self.template: PathTemplate = template if template is not None else model.template
        self._memo: dict[str, tuple[ChildData, ModelEntry[T]]] = {}

    # --- lifecycle (the cache's) ---------------------------------------------------------

    async def start(self) -> None:
        """Start the cache (loads it; see the cache's ``start``)."""
        await self.cache.start()

    async def close(self) -> None:
        """Close the cache; its streams end."""
        await self.cache.close()
        self._memo.clear()

    async def __aenter__(self) -> ModelCache[T]:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- state ---------------------------------------------------------------------------

    def _raw(self) -> dict[str, ChildData]:
        cache = self.cache
        if isinstance(cache, NodeCache):
            node = cache.current
            return {} if node is None else {node.path: node}
        if isinstance(cache, ChildrenCache):
            return {data.path: data for data in cache.children.values()}
        return dict(cache.nodes)

    def _entry(self, data: ChildData) -> ModelEntry[T] | None:
        if self.template.match(data.path) is None:
            return None
        return self._decode(data)

    def _decode(self, data: ChildData) -> ModelEntry[T]:
        """The entry of ``data`` (a version of a node as the cache holds it), decoded once:
        the state and the stream share it, and an undecodable version is counted once."""
        seen = self._memo.get(data.path)
        if seen is not None and seen[0] is data:
            return seen[1]
        entry = self.model.decode(data.path, data.data, data.stat)
        self._memo[data.path] = (data, entry)
        count_undecodable(self.client, entry)
        return entry

    @property
    def entries(self) -> dict[str, ModelEntry[T]]:
        """Path -> entry of every cached node of the model (a snapshot)."""
        out: dict[str, ModelEntry[T]] = {}
        for path, data in self._raw().items():
            entry = self._entry(data)
            if entry is not None:
                out[path] = entry
        # Nodes gone from the cache need no memo.
        for gone in set(self._memo) - set(out):
            del self._memo[gone]
        return out

    @property
    def values(self) -> dict[str, T]:
        """Path -> value of every cached node of the model that decodes (a snapshot)."""
        return {path: e.value for path, e in self.entries.items() if e.ok}

    @property
    def current(self) -> T | None:
        """The value of the one node of a NodeCache (None while it does not exist); raises
        its :class:`~aiocoord.modeled.ModelDecodeError` if it does not decode."""
        entry = self.entry
        return None if entry is None else entry.value

    @property
    def entry(self) -> ModelEntry[T] | None:
        """The entry of the one node of a NodeCache (None while it does not exist)."""
        if not isinstance(self.cache, NodeCache):
            raise BadArgumentsError("entry and current are a NodeCache view's; use entries")
        node = self.cache.current
        return None if node is None else self._entry(node)

    async def wait_for(
        self, predicate: Callable[[dict[str, ModelEntry[T]]], bool], timeout: float | None = None
    ) -> dict[str, ModelEntry[T]]:
        """Wait until ``predicate(entries)`` is true; those entries.
        :class:`aiocoord.TimeoutError` after ``timeout`` seconds."""

        def check(_: Any) -> bool:
            return predicate(self.entries)

        await self.cache.wait_for(check, timeout)
        return self.entries

    # --- the stream ----------------------------------------------------------------------

    def changes(self, *, buffer_size: int | None = None, owned: bool = False) -> ModelChanges[T]:
        """The typed change stream (see :class:`ModelChanges`); subscribe before
        :meth:`start` to see the initial load. ``owned``: the stream starts and closes the
        cache."""
        return ModelChanges(self, self.cache.changes(buffer_size=buffer_size), owned)

    def _change(self, event: NodeEvent) -> ModelChange[T] | None:
        if event.data is None and event.previous is None:
            return ModelChange(event.type, event.path)  # INITIALIZED, connection, RESYNCED
        if self.template.match(event.path) is None:
            return None
        previous = None if event.previous is None else self._previous(event.previous)
        entry = None if event.data is None else self._decode(event.data)
        return ModelChange(event.type, event.path, entry, previous)

    def _previous(self, data: ChildData) -> ModelEntry[T]:
        # Usually the version decoded when it was current; not remembered again if not.
        seen = self._memo.get(data.path)
        if seen is not None and seen[0] is data:
            return seen[1]
        return self.model.decode(data.path, data.data, data.stat)

    def __repr__(self) -> str:
        return f"<ModelCache {self.template.pattern} over {self.cache!r}>"
