"""Picking an instance of a service (Curator's ``ServiceProvider``): :class:`ServiceProvider`
over a :class:`ServiceCache`, the strategies :class:`RoundRobin`, :class:`Random` and
:class:`Sticky`, and :class:`DownInstancePolicy` for instances that fail. Re-exported from
:mod:`aiocoord.recipes.discovery`, where the API reference shows them.

**Down instances** as Curator's ``DownInstanceManager``: :meth:`ServiceProvider.note_error`
counts an instance's errors from its first one; once the count reaches
``error_threshold``, the instance is left out until ``timeout`` seconds after that first
error, when its count starts again from zero. (Curator clears its counts at most every
``timeout / 2``, so an instance may stay out up to half a timeout longer there.)
"""

from __future__ import annotations

import math
import random as _random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from aiocoord.errors import BadArgumentsError, InvalidTypeError
from aiocoord.recipes.discovery._codec import ServiceInstance
from aiocoord.recipes.discovery._service_cache import ServiceCache

if TYPE_CHECKING:
    from aiocoord.recipes.discovery import ServiceDiscovery

__all__ = [
    "DownInstancePolicy",
    "ProviderStrategy",
    "Random",
    "RoundRobin",
    "ServiceProvider",
    "Sticky",
]

InstanceFilter = Callable[[ServiceInstance], bool]


@runtime_checkable
class ProviderStrategy(Protocol):
    """How a :class:`ServiceProvider` picks one of the usable instances (Curator's
    ``ProviderStrategy``): ``choose`` gets them sorted by id, never empty."""

    def choose(self, instances: Sequence[ServiceInstance]) -> ServiceInstance:
        """The instance to use."""
        ...


class RoundRobin:
    """Each instance in turn (Curator's ``RoundRobinStrategy``)."""

    def __init__(self) -> None:
        self._next = 0

    def choose(self, instances: Sequence[ServiceInstance]) -> ServiceInstance:
        """The next instance in turn."""
        index = self._next % len(instances)
        self._next += 1
        return instances[index]


class Random:
    """A random instance each time (Curator's ``RandomStrategy``); ``seed`` for a
    repeatable sequence."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = _random.Random(seed)

    def choose(self, instances: Sequence[ServiceInstance]) -> ServiceInstance:
        """A random instance."""
        return instances[self._random.randrange(len(instances))]


class Sticky:
    """The same instance for as long as it is usable (Curator's ``StickyStrategy``): the
    ``inner`` strategy picks a new one when it is gone, down or disabled. The instance is
    recognised by its id, and returned as it is now (with its latest data).
    ``instance_number`` counts the picks (0 after the first, as Curator's)."""

    def __init__(self, inner: ProviderStrategy) -> None:
        if not isinstance(inner, ProviderStrategy):
            raise InvalidTypeError(
                f"inner must be a strategy with choose(), not {type(inner).__name__}"
            )
        #: the strategy that picks a new instance when the sticky one is not usable
        self.inner: ProviderStrategy = inner
        self._id: str | None = None
        #: how many times ``inner`` was asked for a new instance, less one (-1 before the
        #: first pick, 0 after it, as Curator's)
        self.instance_number: int = -1

    def choose(self, instances: Sequence[ServiceInstance]) -> ServiceInstance:
        """The sticky instance, or a new pick of ``inner``'s."""
        for instance in instances:
            if instance.id == self._id:
                return instance
        chosen = self.inner.choose(instances)
        self._id = chosen.id
        self.instance_number += 1
        return chosen


@dataclass(frozen=True, slots=True)
class DownInstancePolicy:
    """When an instance counts as down (Curator's ``DownInstancePolicy``, same defaults):
    after ``error_threshold`` errors noted within ``timeout`` seconds of its first one,
    until ``timeout`` seconds after that first error."""

    #: the seconds after an instance's first noted error during which its errors count: one
    #: with ``error_threshold`` of them is down until then, and then counted from zero again
    timeout: float = 30.0
    #: how many errors noted within ``timeout`` make an instance down (at least 1)
    error_threshold: int = 2

    def __post_init__(self) -> None:
        t = self.timeout
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise InvalidTypeError(f"timeout must be a number of seconds, not {type(t).__name__}")
        if not math.isfinite(t) or t < 0:
            raise BadArgumentsError(f"timeout must be finite and >= 0, got {t}")
        n = self.error_threshold
        if isinstance(n, bool) or not isinstance(n, int):
            raise InvalidTypeError(f"error_threshold must be int, not {type(n).__name__}")
        if n < 1:
            raise BadArgumentsError(f"error_threshold must be >= 1, got {n}")


class ServiceProvider:
    """Hands out instances of one service (Curator's ``ServiceProvider``), from a
    :class:`ServiceCache` of it.

    ``async with discovery.provider("api") as provider:`` then ``provider.get_instance()``
    for each use (do not keep it: ask again). Disabled instances, instances that ``filters``
    refuse (callables taking an instance) and down instances (:meth:`note_error`,
    ``down_policy``) are left out. ``strategy`` is RoundRobin unless given. Closing the
    provider closes its cache; closing the discovery closes the provider.
    """

    def __init__(
        self,
        discovery: ServiceDiscovery,
        name: str,
        strategy: ProviderStrategy | None = None,
        *,
        down_policy: DownInstancePolicy | None = None,
        filters: Sequence[InstanceFilter] = (),
        clock: Callable[[], float] = time.monotonic,
        **cache_options: Any,
    ) -> None:
        if strategy is None:
            strategy = RoundRobin()
        if not isinstance(strategy, ProviderStrategy):
            raise InvalidTypeError(
                f"strategy must have a choose() method, not {type(strategy).__name__}"
            )
        if down_policy is None:
            down_policy = DownInstancePolicy()
        if not isinstance(down_policy, DownInstancePolicy):
            raise InvalidTypeError(
                f"down_policy must be a DownInstancePolicy, not {type(down_policy).__name__}"
            )
        #: the predicates an instance must pass to be handed out (empty: none)
        self.filters: tuple[Callable[[ServiceInstance], bool], ...] = tuple(filters)
        if not all(callable(f) for f in self.filters):
            raise InvalidTypeError("filters must be callables taking a ServiceInstance")
        if not callable(clock):
            raise InvalidTypeError("clock must be callable")
        self._cache = ServiceCache(discovery, name, **cache_options)
        #: the discovery the provider was made from, which closes it on its own close
        self.discovery: ServiceDiscovery = discovery
        #: the name of the service whose instances it hands out
        self.name: str = name
        #: how one of the usable instances is picked
        self.strategy: ProviderStrategy = strategy
        #: when an instance whose errors were noted (:meth:`note_error`) is left out
        self.down_policy: DownInstancePolicy = down_policy
        self._clock = clock
        #: instance id -> (time of the first error, errors since)
        self._errors: dict[str, tuple[float, int]] = {}

    @property
    def cache(self) -> ServiceCache:
        """The provider's cache of the service."""
        return self._cache

    def get_instance(self) -> ServiceInstance | None:
        """An instance to use now, chosen by the strategy among the usable ones; None if
        there is none (as Curator's ``getInstance`` answers null)."""
        usable = self.get_all_instances()
        return self.strategy.choose(usable) if usable else None

    def get_all_instances(self) -> list[ServiceInstance]:
        """Every usable instance now (enabled, not down, passing the filters), by id."""
        self._purge()
        threshold = self.down_policy.error_threshold
        out = []
        for instance in self._cache.instances():
            if not instance.enabled:
                continue
            noted = self._errors.get(instance.id)
            if noted is not None and noted[1] >= threshold:
                continue
            if all(f(instance) for f in self.filters):
                out.append(instance)
        return out

    def note_error(self, instance: ServiceInstance) -> None:
        """Count an error of ``instance`` (see the module docstring for when it is down)."""
        if not isinstance(instance, ServiceInstance):
            raise InvalidTypeError(
                f"instance must be a ServiceInstance, not {type(instance).__name__}"
            )
        self._purge()
        first, count = self._errors.get(instance.id, (self._clock(), 0))
        self._errors[instance.id] = (first, count + 1)

    def is_down(self, instance: ServiceInstance) -> bool:
        """True while ``instance`` is left out for its errors."""
        self._purge()
        noted = self._errors.get(instance.id)
        return noted is not None and noted[1] >= self.down_policy.error_threshold

    async def start(self) -> None:
        """Start the cache (returns once the instances are loaded)."""
        await self._cache.start()

    async def close(self) -> None:
        """Close the cache (idempotent)."""
        await self._cache.close()

    async def __aenter__(self) -> ServiceProvider:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _purge(self) -> None:
        deadline = self._clock() - self.down_policy.timeout
        expired = [i for i, (first, _) in self._errors.items() if first <= deadline]
        for instance_id in expired:
            del self._errors[instance_id]

    def __repr__(self) -> str:
        return f"<ServiceProvider {self.name!r} {type(self.strategy).__name__}>"
