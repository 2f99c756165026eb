"""A service's instances followed by a :class:`~aiocoord.ChildrenCache` of its node
(Curator's ``ServiceCache``): :class:`ServiceCache`, its change events
(:class:`InstanceEvent`) and their stream (:class:`InstanceSubscription`). Re-exported from
:mod:`aiocoord.recipes.discovery`, where the API reference shows them.

The stream is the children cache's, each event turned into an instance event as it is read:
no task of its own, and the cache's guarantees hold (bounded buffer, RESYNCED on overflow,
connection events). A node whose data is not an instance (anything another client wrote:
not JSON, not UTF-8, nested too deep, fields of the wrong type) is left out of
:meth:`instances`, of :meth:`wait_for` and of the stream, with a warning logged once per
version of the node and counted in ``client.stats().recipes["discovery"].undecodable``;
the rest is served as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiocoord._client import door
from aiocoord._deadline import within
from aiocoord.client import ChildData, Client
from aiocoord.errors import InvalidTypeError
from aiocoord.recipes.cache import CacheEventType, ChildrenCache, EventSubscription, NodeEvent
from aiocoord.recipes.discovery._codec import InstanceFormatError, ServiceInstance, decode_instance

if TYPE_CHECKING:
    from aiocoord.recipes.discovery import ServiceDiscovery

__all__ = ["InstanceEvent", "InstanceSubscription", "ServiceCache"]

log = logging.getLogger("aiocoord.recipes.discovery")

_NODE_KINDS = (
    CacheEventType.CHILD_ADDED,
    CacheEventType.CHILD_UPDATED,
    CacheEventType.CHILD_REMOVED,
)


@dataclass(frozen=True, slots=True)
class InstanceEvent:
    """One change seen by a :class:`ServiceCache`.

    ``type`` is a :class:`~aiocoord.recipes.cache.CacheEventType`: CHILD_ADDED, CHILD_UPDATED,
    CHILD_REMOVED for an instance (``id`` is its node's name, ``instance`` its new state,
    None when removed, ``previous`` its state before, None when added), else INITIALIZED,
    SUSPENDED, RECONNECTED, LOST or RESYNCED (``id``, ``instance`` and ``previous`` None;
    after RESYNCED read ``cache.instances()``).
    """

    #: CHILD_ADDED, CHILD_UPDATED or CHILD_REMOVED for an instance; else the cache's
    #: INITIALIZED, SUSPENDED, RECONNECTED, LOST or RESYNCED
    type: CacheEventType
    #: the instance's node name (its id); None for the events that concern no instance
    id: str | None = None
    #: the instance's new state; None when it was removed (or no longer reads as an
    #: instance), and for the events that concern no instance
    instance: ServiceInstance | None = None
    #: the instance's state before the change; None when it was added (or reads as an
    #: instance only now), and for the events that concern no instance
    previous: ServiceInstance | None = None


class InstanceDecoder:
    """Decodes a service's nodes, once per version of each node: a node that is not an
    instance (written by anyone, hostile or not) is left out, logged once per version and
    counted in the client's ``stats().recipes["discovery"].undecodable``."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._seen: dict[str, tuple[int, int, ServiceInstance | None]] = {}

    def __call__(self, child: ChildData | None) -> ServiceInstance | None:
        if child is None:
            return None
        stat = child.stat
        known = self._seen.get(child.path)
        if known is not None and known[:2] == (stat.czxid, stat.mzxid):
            return known[2]
        try:
            instance: ServiceInstance | None = decode_instance(child.data, child.path)
        except InstanceFormatError as exc:
            log.warning("skipping a node that is not a service instance: %s", exc)
            door.recorder(self._client).undecodable("discovery")
            instance = None
        self._seen[child.path] = (stat.czxid, stat.mzxid, instance)
        return instance

    def forget(self, keep: Mapping[str, ChildData]) -> None:
        """Drop what is known of nodes no longer in ``keep`` (once it is worth it)."""
        if len(self._seen) > 2 * len(keep) + 16:
            live = {child.path for child in keep.values()}
            self._seen = {p: v for p, v in self._seen.items() if p in live}


class InstanceSubscription:
    """A :class:`ServiceCache`'s change stream: ``async for event in cache.changes():``.

    The children cache's subscription with each event turned into an :class:`InstanceEvent`
    (same buffering, RESYNCED on overflow; see :class:`~aiocoord.EventSubscription`).
    """

    __slots__ = ("_decode", "_inner")

    def __init__(self, inner: EventSubscription[NodeEvent], decode: InstanceDecoder) -> None:
        self._inner = inner
        self._decode = decode

    def __aiter__(self) -> InstanceSubscription:
        return self

    async def __anext__(self) -> InstanceEvent:
        while True:
            event = await self._inner.__anext__()
            if event.type not in _NODE_KINDS:
                return InstanceEvent(event.type)
            new, old = self._decode(event.data), self._decode(event.previous)
            if new is None and old is None:
                continue  # not an instance before nor after: nothing to report
            kind = event.type
            if new is None:
                kind = CacheEventType.CHILD_REMOVED  # no longer readable as an instance
            elif old is None:
                kind = CacheEventType.CHILD_ADDED  # readable as an instance from now on
            return InstanceEvent(kind, event.name, new, old)

    async def get(self, timeout: float | None = None) -> InstanceEvent:
        """The next event; :class:`aiocoord.TimeoutError` after ``timeout`` seconds.
        Raises StopAsyncIteration once the stream has ended."""
        return await within(self.__anext__(), timeout, "no instance event")

    @property
    def pending(self) -> int:
        """Events buffered and not read yet (some may turn out to be no instance change)."""
        return self._inner.pending

    async def aclose(self) -> None:
        """Stop receiving events."""
        await self._inner.aclose()

    async def __aenter__(self) -> InstanceSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ServiceCache:
    """The instances of one service, kept up to date (Curator's ``ServiceCache``), on a
    :class:`~aiocoord.ChildrenCache` of ``<base_path>/<name>``.

    ``async with discovery.cache("api") as cache:`` loads the instances and follows them;
    :meth:`instances` lists them now, :meth:`changes` streams their changes and
    :meth:`wait_for` waits for a state. ``options`` go to the ChildrenCache
    (``buffer_size``, ``watch_mode``). The ChildrenCache's failure semantics apply: across a
    reconnect or a new session it re-reads the service's nodes and reports the differences.
    """

    def __init__(self, discovery: ServiceDiscovery, name: str, **options: Any) -> None:
        from aiocoord.recipes.discovery import ServiceDiscovery  # the module imports this one

        if not isinstance(discovery, ServiceDiscovery):
            raise InvalidTypeError(
                f"discovery must be a ServiceDiscovery, not {type(discovery).__name__}"
            )
        #: the discovery the cache was made from, which closes it on its own close
        self.discovery: ServiceDiscovery = discovery
        #: the name of the service whose instances it follows
        self.name: str = name
        #: the service's node, ``<base_path>/<name>``, whose children are the instances' nodes
        self.path: str = discovery.path_for_name(name)
        self._cache = ChildrenCache(discovery.client, self.path, **options)
        self._decode = InstanceDecoder(discovery.client)

    def instances(self) -> list[ServiceInstance]:
        """The instances as the cache sees them now, sorted by id."""
        return self._list(self._cache.children)

    def changes(self, *, buffer_size: int | None = None) -> InstanceSubscription:
        """Subscribe to the instance changes from this call on (subscribe before ``start()``
        to see the initial load as CHILD_ADDED events, then INITIALIZED)."""
        return InstanceSubscription(self._cache.changes(buffer_size=buffer_size), self._decode)

    async def wait_for(
        self, predicate: Callable[[list[ServiceInstance]], bool], timeout: float | None = None
    ) -> list[ServiceInstance]:
        """Wait until ``predicate(instances)`` holds and return those instances;
        :class:`aiocoord.TimeoutError` after ``timeout`` seconds."""
        if not callable(predicate):
            raise InvalidTypeError("predicate must be callable")
        found = await self._cache.wait_for(lambda c: bool(predicate(self._list(c))), timeout)
        return self._list(found)

    async def start(self) -> None:
        """Load the instances and start following them (see ChildrenCache.start)."""
        self.discovery._track(self, True)
        try:
            await self._cache.start()
        except BaseException:
            self.discovery._track(self, False)
            raise

    async def close(self) -> None:
        """Stop following (idempotent); the stream ends."""
        self.discovery._track(self, False)
        await self._cache.close()

    async def __aenter__(self) -> ServiceCache:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """True once the cache was closed (or its client was)."""
        return self._cache.closed

    def _list(self, children: Mapping[str, ChildData]) -> list[ServiceInstance]:
        decode = self._decode
        found = [i for i in map(decode, children.values()) if i is not None]
        decode.forget(children)
        return sorted(found, key=lambda i: i.id)

    def __repr__(self) -> str:
        return f"<ServiceCache {self.path} instances={len(self._cache.children)}>"
