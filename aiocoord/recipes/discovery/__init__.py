"""Service discovery with Curator's layout and JSON: ServiceDiscovery registers instances,
ServiceCache follows a service, ServiceProvider picks an instance.

Registration is in ``_registry``, the instance and its JSON in ``_codec`` (this host's address in
``_host``), the cache in ``_service_cache``, the provider and its strategies in ``_provider``."""

from aiocoord._shown import show_in
from aiocoord.recipes.discovery._registry import (
    DiscoveryError,
    DownInstancePolicy,
    InstanceEvent,
    InstanceFormatError,
    InstanceSubscription,
    ProviderStrategy,
    Random,
    RoundRobin,
    ServiceCache,
    ServiceDiscovery,
    ServiceInstance,
    ServiceProvider,
    ServiceType,
    Sticky,
    UriPart,
    UriSpec,
)

__all__ = [
    "DiscoveryError",
    "DownInstancePolicy",
    "InstanceEvent",
    "InstanceFormatError",
    "InstanceSubscription",
    "ProviderStrategy",
    "Random",
    "RoundRobin",
    "ServiceCache",
    "ServiceDiscovery",
    "ServiceInstance",
    "ServiceProvider",
    "ServiceType",
    "Sticky",
    "UriPart",
    "UriSpec",
]

# Shown as defined here: the private modules of this package are no place to import from.
show_in(__name__, globals(), __all__)
