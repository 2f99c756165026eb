"""Caches that mirror ZooKeeper nodes and stream their changes: NodeCache, ChildrenCache,
TreeCache.

All three share one mechanism (:class:`_Cache`) and differ only in how deep they look:

- :class:`NodeCache` holds one node (depth 0),
- :class:`ChildrenCache` the children of a node, not the node itself (depth 1),
- :class:`TreeCache` a node and its subtree (to ``max_depth``, unbounded by default).

**How they stay equal to the server.** Watch events are hints; reads are the truth: an
event schedules a read, and only a read result changes the cache, compared by ``czxid`` and
``mzxid`` (see :mod:`aiocoord.recipes.cache._store`). On servers >= 3.6 the subtree is
watched by *one* persistent watch (recursive unless the cache holds a single node), as
Curator's CuratorCache does; after every reconnect the cache re-reads the whole subtree
(pipelined) and emits exactly the differences. On older servers (``addWatch`` answers
UnimplementedError) each node gets its own one-shot watches. The two feeds are in
:mod:`aiocoord.recipes.cache._feeds`, the events and other values in
:mod:`aiocoord.recipes.cache._types`; this module holds the lifecycle, the streams and the
three views.

A state that lasts less than a read takes may be skipped (the read made for one change
already sees the next), as with any ZooKeeper watch; the cache never reports a state the
node did not have, and always ends at the latest one.

**Events.** A node that appears is *added*, one whose ``mzxid`` moved is *updated*, one that
is gone is *removed*; a node deleted and re-created while the client was not looking (its
``czxid`` changed) is reported as removed and then added. Connection changes are reported as
SUSPENDED, RECONNECTED and LOST; INITIALIZED follows the initial load. Replaying the events
from the start onto an empty mapping gives the cache's content (a stat is replaced only
together with an event, so child-related stat fields such as ``num_children`` are those of the
last data change, not live).

**Streams.** ``async for event in cache.changes():`` reads from a buffer of its own, bounded by
``buffer_size``. A consumer that falls behind is never blocked on and never silently loses
events: on overflow it receives one RESYNCED event, and reading the cache's state right then
(before awaiting anything) gives the state with everything it missed; later events apply on
top of it.

**Tasks.** Each cache owns its tasks: ``close()`` (or leaving ``async with``) cancels and
awaits every one of them and removes the cache's watches from the server. Cancelling
``start()`` closes the cache the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from aiocoord._deadline import within
from aiocoord._validation import validate_flag, validate_path, validate_timeout
from aiocoord.client import ChildData, Client, State, StateChange
from aiocoord.errors import (
    BadArgumentsError,
    ClientClosedError,
    InvalidTypeError,
    UnimplementedError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._stream import (
    EventStream,
    EventSubscription,
    check_buffer_size,
)
from aiocoord.recipes.cache._feeds import Feed, OneShotFeed, PersistentFeed, add_persistent_watch
from aiocoord.recipes.cache._store import Change, Store
from aiocoord.recipes.cache._types import (
    CacheError,
    CacheEventType,
    ChildrenView,
    NodeEvent,
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

log = logging.getLogger("aiocoord.recipes.cache")

#: Events a subscriber may leave unread before it is resynced (see :class:`EventSubscription`).
DEFAULT_BUFFER_SIZE = 10_000


_UNBOUNDED = sys.maxsize

V = TypeVar("V")


class _Cache(Generic[V]):
    """The mechanism shared by the three caches (see the module docstring)."""

    _ADDED: CacheEventType
    _UPDATED: CacheEventType
    _REMOVED: CacheEventType

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        max_depth: int | None,
        include_root: bool,
        cache_data: bool,
        buffer_size: int,
        watch_mode: WatchMode | str,
    ) -> None:
        check_client(client)
        validate_path(path)
        if max_depth is not None:
            if isinstance(max_depth, bool) or not isinstance(max_depth, int):
                raise InvalidTypeError(
                    f"max_depth must be int or None, not {type(max_depth).__name__}"
                )
            if max_depth < 0:
                raise BadArgumentsError(
                    f"max_depth must be >= 0 (0 caches the node alone), got {max_depth}"
                )
        validate_flag(cache_data, "cache_data")
        check_buffer_size(buffer_size)
        try:
            mode = WatchMode(watch_mode)
        except ValueError:
            names = [m.value for m in WatchMode]
            raise BadArgumentsError(
                f"watch_mode must be a WatchMode or one of {names}, got {watch_mode!r}"
            ) from None
        self._client = client
        #: the node the cache is rooted at (as given, under the client's chroot): a
        #: NodeCache's node, the parent of a ChildrenCache's children, a TreeCache's root
        self.path: str = path
        self._cache_data = cache_data
        self._buffer_size = buffer_size
        self._watch_mode = mode
        limit = _UNBOUNDED if max_depth is None else max_depth
        self._store = Store(path, limit=limit, include_root=include_root, emit=self._emit)
        self._nodes = self._store.nodes  # the views read it directly
        self._feed: Feed | None = None
        self._remove_listener: Callable[[], None] | None = None
        self._status = "new"  # new -> starting -> started -> closed
        self._error: BaseException | None = None
        self._stream: EventStream[NodeEvent] = EventStream(self._resynced_event)
        self._waiters: list[tuple[Callable[[V], bool], asyncio.Future[V]]] = []
        self._kinds = {
            Change.ADDED: self._ADDED,
            Change.UPDATED: self._UPDATED,
            Change.REMOVED: self._REMOVED,
        }

    # --- public surface --------------------------------------------------------------------

    def changes(self, *, buffer_size: int | None = None) -> EventSubscription[NodeEvent]:
        """Subscribe to the change stream: ``async for event in cache.changes():``.

        The subscription receives every event from this call on (subscribe before
        ``start()`` to see the initial load). It buffers up to ``buffer_size`` unread events
        (the cache's default if None); on overflow it yields one RESYNCED event, after which
        the cache's current state includes everything missed. It ends when the cache closes.
        """
        limit = self._buffer_size if buffer_size is None else check_buffer_size(buffer_size)
        return self._stream.subscribe(limit)

    async def wait_for(self, predicate: Callable[[V], bool], timeout: float | None = None) -> V:
        """Wait until ``predicate(state)`` is true and return that state.

        The predicate is called now and after every change, synchronously, with the cache's
        state (keep it cheap): ``current`` for a NodeCache, the live ``children`` or ``nodes``
        mapping otherwise. :class:`aiocoord.TimeoutError` after ``timeout`` seconds;
        CacheError if the cache closes first. Cancelling leaves nothing behind.
        """
        timeout = validate_timeout(timeout)
        if self._error is not None:
            raise self._error
        if self._status == "closed":
            raise self._closed_error()
        state = self._view()
        if predicate(state):
            return state
        fut: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        entry = (predicate, fut)
        self._waiters.append(entry)
        try:
            return await within(fut, timeout, f"the cache of {self.path} not as awaited")
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(entry)

    async def start(self) -> None:
        """Load the initial state (pipelined) and start following changes.

        Returns once the initial state is loaded and INITIALIZED was emitted. A cache starts
        once: a second call raises CacheError. If this is cancelled or fails, the cache is
        closed (no task or watch is left).
        """
        if self._status != "new":
            now = "closed" if self._status == "closed" else "already started"
            raise CacheError(
                f"{type(self).__name__} for {self.path} is {now}; a cache starts once, "
                "so make a new one to start again"
            )
        self._status = "starting"
        try:
            self._remove_listener = self._client.add_state_listener(self._on_state)
            await self._start()
        except BaseException:
            await self.close()
            raise
        if self._status == "starting":
            self._status = "started"
            self._stream.publish(NodeEvent(CacheEventType.INITIALIZED, self.path))

    async def close(self) -> None:
        """Stop: cancel and await every task of the cache, remove its watches, end streams.

        Idempotent. Subscriptions end after their buffered events.
        """
        if self._status == "closed":
            return
        self._status = "closed"
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None
        if self._feed is not None:
            await self._feed.close()
        self._stream.close(self._error)
        error = self._closed_error()
        for _, fut in self._waiters:
            if not fut.done():
                fut.set_exception(error)

    async def __aenter__(self: _C) -> _C:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """True once the cache was closed (or stopped because its client closed)."""
        return self._status == "closed" or self._error is not None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path} {self._status} nodes={len(self._nodes)}>"

    # --- subclass hooks --------------------------------------------------------------------

    def _view(self) -> V:
        raise NotImplementedError

    # --- start and changes -------------------------------------------------------------------

    async def _start(self) -> None:
        client, store = self._client, self._store
        options: dict[str, Any] = {
            "cache_data": self._cache_data,
            "fail": self._fail,
            "owner": self,
            "logger": log,
        }
        feed: Feed | None = None
        if self._watch_mode is not WatchMode.ONE_SHOT:
            # The watch goes first, so no change after the initial reads can be missed.
            try:
                watch = await add_persistent_watch(client, store)
                feed = PersistentFeed(client, store, watch, **options)
            except UnimplementedError:
                if self._watch_mode is WatchMode.PERSISTENT:
                    raise
                log.info("server lacks persistent watches; %s uses one-shot watches", self)
        if feed is None:
            feed = OneShotFeed(client, store, **options)
        self._feed = feed
        await feed.start()
        if self._error is not None:
            raise self._error

    def _emit(
        self, change: Change, path: str, data: ChildData | None, old: ChildData | None
    ) -> None:
        if self._stream.subscribers:  # a load with nobody listening makes no events
            self._stream.publish(NodeEvent(self._kinds[change], path, data, old))
        if self._waiters:
            self._check_waiters()

    def _check_waiters(self) -> None:
        state = self._view()
        for predicate, fut in list(self._waiters):
            if fut.done():
                continue
            try:
                if predicate(state):
                    fut.set_result(state)
            except Exception as exc:
                fut.set_exception(exc)

    # --- connection state and failure --------------------------------------------------------

    def _on_state(self, change: StateChange) -> None:
        state = change.state
        if self._status == "closed":
            return
        if state is State.SUSPENDED:
            self._stream.publish(NodeEvent(CacheEventType.SUSPENDED, self.path))
        elif state is State.LOST:
            self._stream.publish(NodeEvent(CacheEventType.LOST, self.path))
        elif state is State.RECONNECTED or (
            state is State.READ_ONLY and change.previous is not None
        ):
            self._stream.publish(NodeEvent(CacheEventType.RECONNECTED, self.path))
            if self._feed is not None:
                self._feed.reconnected(change.new_session)
        elif state is State.CLOSED:
            self._fail(ClientClosedError(f"the client of {self} was closed"))

    def _fail(self, exc: BaseException) -> None:
        if self._error is not None or self._status == "closed":
            return
        if not isinstance(exc, ClientClosedError):
            log.error("%s stopped: %r", self, exc)
        self._error = exc
        self._stream.close(exc)
        for _, fut in self._waiters:
            if not fut.done():
                fut.set_exception(exc)
        if self._feed is not None:
            self._feed.abort()

    def _closed_error(self) -> BaseException:
        return CacheError(f"{type(self).__name__} for {self.path} is closed")

    def _resynced_event(self) -> NodeEvent:
        return NodeEvent(CacheEventType.RESYNCED, self.path)


_C = TypeVar("_C", bound=_Cache[Any])


class NodeCache(_Cache[ChildData | None]):
    """Mirror one node: ``current`` is its ChildData, or None while it does not exist.

    Events: CREATED, UPDATED, DELETED (``NodeEvent.data`` / ``previous``), plus INITIALIZED,
    SUSPENDED, RECONNECTED, LOST and RESYNCED. Uses one persistent (non-recursive) watch on
    servers >= 3.6, a one-shot data watch re-armed after each change on older ones.

    ``watch_mode`` is a :class:`WatchMode` (or its value): "auto" (persistent if the server
    has it), "persistent" or "one-shot".
    """

    _ADDED = CacheEventType.CREATED
    _UPDATED = CacheEventType.UPDATED
    _REMOVED = CacheEventType.DELETED

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        watch_mode: WatchMode | str = WatchMode.AUTO,
    ) -> None:
        super().__init__(
            client,
            path,
            max_depth=0,
            include_root=True,
            cache_data=True,
            buffer_size=buffer_size,
            watch_mode=watch_mode,
        )

    @property
    def current(self) -> ChildData | None:
        """The node's path, data and stat, or None if it does not exist (or not loaded yet)."""
        return self._nodes.get(self.path)

    def _view(self) -> ChildData | None:
        return self._nodes.get(self.path)


class ChildrenCache(_Cache[Mapping[str, ChildData]]):
    """Mirror the children of a node (Curator's PathChildrenCache).

    ``children`` maps each child's name to its ChildData. Events: CHILD_ADDED,
    CHILD_UPDATED, CHILD_REMOVED, then INITIALIZED after the initial load, SUSPENDED,
    RECONNECTED, LOST and RESYNCED. The node itself may be missing: the cache is then empty
    and fills when it appears.

    The initial load lists the children once and pipelines the children's reads, not one
    round trip per child (on servers >= 3.6 in multiReads, a bounded window at a time). With
    ``cache_data=False`` only stats are kept (``ChildData.data`` is ``b""``), read with
    ``exists``, which is cheaper.

    On servers >= 3.6 one recursive persistent watch on the node serves all children, as
    Curator's CuratorCache does; events of deeper nodes reach the client and are ignored.
    ``watch_mode`` is "auto", "persistent" or "one-shot" (one watch per child).
    """

    _ADDED = CacheEventType.CHILD_ADDED
    _UPDATED = CacheEventType.CHILD_UPDATED
    _REMOVED = CacheEventType.CHILD_REMOVED

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        cache_data: bool = True,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        watch_mode: WatchMode | str = WatchMode.AUTO,
    ) -> None:
        super().__init__(
            client,
            path,
            max_depth=1,
            include_root=False,
            cache_data=cache_data,
            buffer_size=buffer_size,
            watch_mode=watch_mode,
        )
        self._children = ChildrenView(self._nodes, "/" if path == "/" else path + "/")

    @property
    def children(self) -> Mapping[str, ChildData]:
        """Live read-only mapping: child name -> ChildData. Copy with ``dict()`` to keep."""
        return self._children

    def _view(self) -> Mapping[str, ChildData]:
        return self._children


class TreeCache(_Cache[Mapping[str, ChildData]]):
    """Mirror a node and its subtree down to ``max_depth`` levels below it (all if None).

    ``nodes`` maps each cached path (the root included, when it exists) to its ChildData.
    Events: NODE_ADDED, NODE_UPDATED, NODE_REMOVED, then INITIALIZED after the initial load,
    SUSPENDED, RECONNECTED, LOST and RESYNCED. A removed node's cached descendants are
    removed first, deepest first.

    On servers >= 3.6 the whole subtree is served by one recursive persistent watch (like
    Curator's CuratorCache); on older ones each node gets a data watch and each node above
    ``max_depth`` a child watch. ``watch_mode`` is "auto", "persistent" or "one-shot".
    ``selector`` (a :class:`TreeCacheSelector`) narrows which nodes are followed.
    """

    _ADDED = CacheEventType.NODE_ADDED
    _UPDATED = CacheEventType.NODE_UPDATED
    _REMOVED = CacheEventType.NODE_REMOVED

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        max_depth: int | None = None,
        cache_data: bool = True,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        watch_mode: WatchMode | str = WatchMode.AUTO,
        selector: TreeCacheSelector | None = None,
    ) -> None:
        super().__init__(
            client,
            path,
            max_depth=max_depth,
            include_root=True,
            cache_data=cache_data,
            buffer_size=buffer_size,
            watch_mode=watch_mode,
        )
        self._store.select(selector)
        self._view_proxy = MappingProxyType(self._nodes)

    @property
    def nodes(self) -> Mapping[str, ChildData]:
        """Live read-only mapping: path -> ChildData. Copy with ``dict()`` to keep."""
        return self._view_proxy

    def get(self, path: str) -> ChildData | None:
        """The cached ChildData of ``path``, or None."""
        return self._nodes.get(path)

    def children(self, path: str) -> dict[str, ChildData]:
        """The cached children of ``path``: name -> ChildData (empty if none or unknown)."""
        cut = len(path) + (0 if path == "/" else 1)
        return {kid[cut:]: self._nodes[kid] for kid in self._store.kids.get(path, ())}

    def _view(self) -> Mapping[str, ChildData]:
        return self._view_proxy
