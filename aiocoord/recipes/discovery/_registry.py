"""Service discovery on Apache Curator's curator-x-discovery layout, readable and writable by
Curator 5.x clients: :class:`ServiceDiscovery` registers and finds instances,
:class:`ServiceCache` follows a service's instances, :class:`ServiceProvider` picks one.

**Layout.** An instance of service ``name`` is the node ``<base_path>/<name>/<id>``, holding
the :class:`ServiceInstance` as Curator's ``JsonInstanceSerializer`` writes it (see
:mod:`aiocoord.recipes.discovery._codec`). Missing parents are made as container nodes, as
Curator does. A DYNAMIC instance is an ephemeral node, DYNAMIC_SEQUENTIAL an ephemeral
sequential one (named ``_c_<uuid>-<id><seq>``: protected, so that a create whose reply was
lost is not made twice), STATIC and PERMANENT persistent nodes.

**Registrations are kept.** Each registration is a :class:`~aiocoord.PersistentNode`: when the
session expires and the client makes a new one, the ephemeral node is made again with the
instance's latest data (Curator re-registers on reconnection); a node deleted by someone else
comes back as well. A node of the same name that another live session owns (or, for a
DYNAMIC instance, a persistent one) is waited out, never taken over (Curator deletes it).
``register(timeout=)`` waits for the first creation; what the server refuses (no auth, a bad
ACL) is raised to the caller. ``update()`` keeps the new data for re-creations before it
writes it: after a ConnectionLossError, call it again (it is idempotent).

**Cancellation.** A cancelled or timed-out :meth:`ServiceDiscovery.register` leaves no node:
the registration is dropped and its node deleted (a create still on its way is looked for
after it). :meth:`~ServiceDiscovery.unregister` and :meth:`~ServiceDiscovery.close` delete the
nodes as Curator's ``unregisterService`` and ``close`` do, whatever the type; the delete is
guaranteed (finished in the background if the connection is down).

**watch_instances** (Curator's option): a registration follows its node with a
:class:`~aiocoord.NodeCache`, so that data written by someone else (an operator disabling the
instance, say) is what the node is re-created with (not for DYNAMIC_SEQUENTIAL instances,
whose node changes its name).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiocoord._client import door
from aiocoord._deadline import within
from aiocoord._paths import join
from aiocoord._validation import (
    validate_create_size,
    validate_data,
    validate_flag,
    validate_path,
    validate_timeout,
)
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import ChildData, Client
from aiocoord.errors import (
    BadArgumentsError,
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    DiscoveryError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes.cache import CacheEventType, NodeCache
from aiocoord.recipes.discovery._codec import (
    InstanceFormatError,
    ServiceInstance,
    ServiceType,
    UriPart,
    UriSpec,
    decode_instance,
    encode_instance,
)
from aiocoord.recipes.discovery._provider import (
    DownInstancePolicy,
    ProviderStrategy,
    Random,
    RoundRobin,
    ServiceProvider,
    Sticky,
)
from aiocoord.recipes.discovery._service_cache import (
    InstanceDecoder,
    InstanceEvent,
    InstanceSubscription,
    ServiceCache,
)
from aiocoord.recipes.nodes import CreateMode, PersistentNode

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

log = logging.getLogger("aiocoord.recipes.discovery")

_MODES = {
    ServiceType.DYNAMIC: CreateMode.EPHEMERAL,
    ServiceType.DYNAMIC_SEQUENTIAL: CreateMode.EPHEMERAL_SEQUENTIAL,
    ServiceType.STATIC: CreateMode.PERSISTENT,
    ServiceType.PERMANENT: CreateMode.PERSISTENT,
}


def check_segment(value: Any, what: str) -> str:
    """``value`` if it can be one node name (a service name or an instance id)."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be str, not {type(value).__name__}")
    if not value or "/" in value or value in (".", ".."):
        raise BadArgumentsError(f"{what} must be a node name (non-empty, no '/'), got {value!r}")
    validate_path("/" + value)
    return value


@dataclass(eq=False)
class _Registration:
    """One instance registered by this discovery: its node, and the task following it."""

    instance: ServiceInstance
    node: PersistentNode
    follower: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class ServiceDiscovery:
    """Register and find service instances (Curator's ``ServiceDiscovery``); see the module
    docstring for the layout and the failure semantics.

    ``async with ServiceDiscovery(client, "/services") as discovery:`` — leaving it (or
    :meth:`close`) closes the caches and providers made from it and unregisters every
    instance it registered. ``acl`` is the ACL of the instance nodes and of the parents made
    for them (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        base_path: str,
        *,
        acl: Sequence[ACL] | None = None,
        watch_instances: bool = False,
    ) -> None:
        #: the client whose session registers and reads the instances
        self.client: Client = check_client(client)
        #: the node under which each service has its node, ``<base_path>/<name>`` (as given,
        #: under the client's chroot)
        self.base_path: str = validate_path(base_path)
        #: the ACL of the instance nodes and of the parents made for them (None: the client's
        #: ``acl_provider``, else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: whether a registration follows its node, so that data written by someone else is
        #: what the node is made again with (Curator's option; see the module docstring)
        self.watch_instances: bool = validate_flag(watch_instances, "watch_instances")
        self._registrations: dict[str, _Registration] = {}
        self._opened: set[ServiceCache | ServiceProvider] = set()
        self._closed = False
        self._decoders: dict[str, InstanceDecoder] = {}

    # --- paths ---------------------------------------------------------------------------

    def path_for_name(self, name: str) -> str:
        """The node holding service ``name``'s instances."""
        return join(self.base_path, check_segment(name, "service name"))

    def path_for_instance(self, name: str, instance_id: str) -> str:
        """The node of instance ``instance_id`` of service ``name`` (a DYNAMIC_SEQUENTIAL
        instance's node has a prefix and a sequence number added)."""
        return join(self.path_for_name(name), check_segment(instance_id, "instance id"))

    # --- registering ---------------------------------------------------------------------

    async def register(self, instance: ServiceInstance, *, timeout: float | None = None) -> None:
        """Register ``instance`` and wait until its node exists; keep it registered (see the
        module docstring) until :meth:`unregister` or :meth:`close`.

        Registering an id registered here already updates it (:meth:`update`).
        :class:`aiocoord.TimeoutError` after ``timeout`` seconds (a node of that name held
        by another session is waited for); a timed-out or cancelled registration leaves no
        node and is not kept.
        """
        self._check_open()
        data, path = self._encode(instance)
        timeout = validate_timeout(timeout)
        reg = self._registrations.get(instance.id)
        if reg is not None:
            await self.update(instance)
            return
        node = PersistentNode(
            self.client, path, data, mode=_MODES[instance.service_type], acl=self.acl
        )
        reg = self._registrations[instance.id] = _Registration(instance, node)
        try:
            await within(self._start(reg, path, data), timeout, f"{path} not registered")
        except BaseException:
            if self._registrations.get(instance.id) is reg:
                del self._registrations[instance.id]
            # A client task, so that a second cancellation cannot stop the removal halfway.
            removal = door.spawn(
                self.client, self._remove(reg, sweep=True), f"aiocoord-discovery-remove:{path}"
            )
            try:
                await asyncio.shield(removal)
            except Exception as exc:  # the caller gets the error that stopped the registration
                log.warning("could not remove the registration of %s: %r", path, exc)
            raise

    async def _start(self, reg: _Registration, path: str, data: bytes) -> None:
        node = reg.node
        async with reg.lock:
            if not node.mode.sequential:
                # The first create is ours, so that what the server refuses (no auth, a bad
                # ACL) reaches the caller instead of being retried in the background. The
                # node then adopts the node made (or waits out another's).
                with contextlib.suppress(NodeExistsError, ConnectionLossError):
                    await self.client.create(
                        path,
                        data,
                        ephemeral=node.mode.ephemeral,
                        make_parents=True,
                        parents_as_containers=True,
                        acl=self.acl,
                    )
            await node.start()
            await node.wait_for_initial_create()
            if self.watch_instances and not node.mode.sequential:
                reg.follower = asyncio.get_running_loop().create_task(
                    self._follow(reg, path), name=f"aiocoord-discovery-follow:{path}"
                )

    async def update(self, instance: ServiceInstance) -> None:
        """Write ``instance``'s new fields to its node (and keep them for re-creations).

        The instance must be registered here with the same name and type (DiscoveryError,
        BadArgumentsError otherwise), as Curator's ``updateService`` requires.
        """
        self._check_open()
        data, _ = self._encode(instance)
        reg = self._registrations.get(instance.id)
        if reg is None:
            raise DiscoveryError(
                f"instance {instance.id!r} of {instance.name!r} is not registered by this "
                "discovery; register() it first"
            )
        old = reg.instance
        if (old.name, old.service_type) != (instance.name, instance.service_type):
            raise BadArgumentsError(
                f"instance {instance.id!r} is registered as {old.name!r} "
                f"({old.service_type.value}); unregister it to change its name or type"
            )
        async with reg.lock:
            reg.instance = instance
            await reg.node.set_data(data)

    async def unregister(self, instance: ServiceInstance) -> bool:
        """Remove a registration of this discovery and delete its node: True if it was
        registered here, False (nothing done) if not, as Curator's ``unregisterService``."""
        if not isinstance(instance, ServiceInstance):
            raise InvalidTypeError(
                f"instance must be a ServiceInstance, not {type(instance).__name__}"
            )
        reg = self._registrations.pop(instance.id, None)
        if reg is None:
            return False
        await self._remove(reg, sweep=reg.node.actual_path is None)
        return True

    def registered(self) -> list[ServiceInstance]:
        """The instances this discovery keeps registered, as last given or (with
        ``watch_instances``) as last seen on their nodes."""
        return [reg.instance for reg in self._registrations.values()]

    # --- queries -------------------------------------------------------------------------

    async def service_names(self) -> list[str]:
        """The names of every service under the base path (sorted; [] if there is none)."""
        try:
            return sorted(await self.client.children(self.base_path))
        except NoNodeError:
            return []

    async def instances(self, name: str) -> list[ServiceInstance]:
        """Every instance of service ``name`` (reads pipelined; sorted by id). A node whose
        data is not an instance is left out, with a warning logged."""
        parent = self.path_for_name(name)
        try:
            ids = await self.client.children(parent)
        except NoNodeError:
            return []
        reads = await asyncio.gather(
            *(self.client.get(join(parent, i)) for i in ids), return_exceptions=True
        )
        found = []
        decode = self._decoders.get(parent)
        if decode is None:
            # One per service: a bad node is logged and counted once per version, however
            # often the service is listed.
            decode = self._decoders[parent] = InstanceDecoder(self.client)
        children = {}
        for node_name, read in zip(ids, reads, strict=True):
            if isinstance(read, NoNodeError):
                continue  # deleted since the listing
            if isinstance(read, BaseException):
                raise read
            child = children[node_name] = ChildData(join(parent, node_name), *read)
            instance = decode(child)
            if instance is not None:
                found.append(instance)
        decode.forget(children)
        return sorted(found, key=lambda i: i.id)

    async def instance(self, name: str, instance_id: str) -> ServiceInstance | None:
        """Instance ``instance_id`` of service ``name``, None if there is no such node;
        InstanceFormatError if its data is not an instance (counted in the client's
        ``stats().recipes["discovery"].undecodable``)."""
        path = self.path_for_instance(name, instance_id)
        try:
            data, _ = await self.client.get(path)
        except NoNodeError:
            return None
        try:
            return decode_instance(data, path)
        except InstanceFormatError:
            door.recorder(self.client).undecodable("discovery")
            raise

    # --- caches and providers ------------------------------------------------------------

    def cache(self, name: str, **options: Any) -> ServiceCache:
        """A :class:`ServiceCache` of service ``name`` (start it, or use ``async with``)."""
        return ServiceCache(self, name, **options)

    def provider(
        self, name: str, strategy: ProviderStrategy | None = None, **options: Any
    ) -> ServiceProvider:
        """A :class:`ServiceProvider` of service ``name`` (RoundRobin unless given)."""
        return ServiceProvider(self, name, strategy, **options)

    # --- lifecycle -----------------------------------------------------------------------

    async def close(self) -> None:
        """Close the caches and providers made from this discovery and unregister every
        instance it registered (their nodes are deleted). Idempotent."""
        if self._closed:
            return
        self._closed = True
        for opened in list(self._opened):
            await opened.close()
        regs = list(self._registrations.values())
        self._registrations.clear()
        for reg in regs:
            await self._remove(reg, sweep=reg.node.actual_path is None)

    async def __aenter__(self) -> ServiceDiscovery:
        self._check_open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def __repr__(self) -> str:
        return f"<ServiceDiscovery {self.base_path} registered={len(self._registrations)}>"

    # --- the inside ----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise DiscoveryError(f"the ServiceDiscovery of {self.base_path} is closed")

    def _track(self, opened: ServiceCache | ServiceProvider, alive: bool) -> None:
        """A cache or provider of ours started (``alive``) or closed."""
        if alive:
            self._check_open()
            self._opened.add(opened)
        else:
            self._opened.discard(opened)

    def _encode(self, instance: ServiceInstance) -> tuple[bytes, str]:
        if not isinstance(instance, ServiceInstance):
            raise InvalidTypeError(
                f"instance must be a ServiceInstance, not {type(instance).__name__}"
            )
        path = self.path_for_instance(instance.name, instance.id)
        data = validate_data(encode_instance(instance), path)
        validate_create_size(path, data, self.acl, self.client.chroot)
        return data, path

    async def _remove(self, reg: _Registration, *, sweep: bool) -> None:
        """Stop keeping ``reg`` and delete its node; with ``sweep``, also a node whose create
        was on its way when the registration stopped."""
        follower = reg.follower
        if follower is not None:
            follower.cancel()
            await asyncio.wait((follower,))
            if not follower.cancelled() and follower.exception() is not None:
                log.warning("following %s failed: %r", reg.node.path, follower.exception())
        data = reg.node.data
        await reg.node.close()
        if sweep and not self.client.closed:
            try:
                await self._sweep(reg.instance, data)
            except (ClientClosedError, SessionExpiredError):
                pass  # an ephemeral node went with the session; nothing else was made
            except CoordinationError as exc:
                log.warning("could not look for a stray node of %s: %r", reg.instance.id, exc)

    async def _sweep(self, instance: ServiceInstance, data: bytes) -> None:
        # Requests of one session are answered in order: this listing sees any create the
        # stopped registration had sent.
        parent = self.path_for_name(instance.name)
        try:
            names = await self.client.children(parent)
        except NoNodeError:
            return
        own = re.compile(r"_c_[0-9a-f-]{36}-" + re.escape(instance.id) + r"\d{10}")
        for name in names:
            if name != instance.id and not own.fullmatch(name):
                continue
            path = join(parent, name)
            try:
                found, stat = await self.client.get(path)
            except NoNodeError:
                continue
            ours = stat.ephemeral_owner in (0, self.client.session_id) and found == data
            if ours:
                with contextlib.suppress(NoNodeError):
                    await self.client.delete(path, stat.version)

    async def _follow(self, reg: _Registration, path: str) -> None:
        """watch_instances: keep what someone else writes to our node for re-creations."""
        cache = NodeCache(self.client, path)
        events = cache.changes()
        try:
            await cache.start()
            async for event in events:
                if event.type not in (CacheEventType.CREATED, CacheEventType.UPDATED):
                    continue
                child = event.data
                if child is None or child.data == reg.node.data:
                    continue
                try:
                    seen = decode_instance(child.data, path)
                except InstanceFormatError as exc:
                    log.warning("registered instance %s was overwritten: %s", path, exc)
                    continue
                async with reg.lock:
                    reg.instance = seen
                    await reg.node.set_data(child.data, write=False)
        except ClientClosedError:
            pass  # the registration ends with the client
        except CoordinationError as exc:
            # Only the following stops: the node itself is still kept (with the data last
            # given or seen), so the error is worth a warning, not the registration.
            log.warning("watch_instances: stopped following %s: %r", path, exc)
        finally:
            await cache.close()
