"""Nodes kept present: :class:`PersistentNode` and :class:`GroupMember`, on Apache Curator's
layouts.

**PersistentNode** is Curator's ``PersistentNode``: a node that should exist for as long as
the object runs. A task owned by the object creates it (missing parents as containers), then
watches it with an exists watch and creates it again whenever it goes: deleted by someone, or
gone with an expired session (an ephemeral node). Each (re)creation uses the latest data given
to :meth:`PersistentNode.set_data`. Sequential modes are always created *protected*
(``_c_<uuid>-<name><seq>``), so that a create whose reply is lost is found again instead of
made twice; their :attr:`~PersistentNode.actual_path` changes with each re-creation.

If an ephemeral node of that name already exists and belongs to another session (another
process, or an earlier session of this client the server has not ended yet), it is left
alone and created once that node is gone. An existing persistent node is adopted and given
our data, as Curator does.

**GroupMember** is Curator's ``GroupMember``: an ephemeral PersistentNode
``<path>/<member_id>`` holding the member's data, plus a
:class:`~aiocoord.recipes.cache.ChildrenCache` of ``<path>`` for the membership view and its
change stream; the basis of service discovery.

**kazoo's parties** (``layout="kazoo"``): kazoo's ``Party``, an ephemeral
``<path>/<uuid hex>__party__`` node holding the member's identifier (``member_id``) as its
data, or with ``shallow=True`` kazoo's ``ShallowParty``, ``<path>/<uuid hex>-<member_id>``
(the identifier read from the name; kazoo writes it as the data too). kazoo and aiocoord
members then see each other: ``members()`` is keyed by identifier, read as kazoo reads it (a
``Party`` counts only the ``__party__`` nodes, a ``ShallowParty`` every child); kazoo's
``list(party)`` lists ours. The data is the identifier in kazoo's parties, so ``data`` must
stay empty there, and two members with one identifier show once in ``members()`` (kazoo's
``list(party)`` shows both). The party's path (and every parent made) is a persistent node
there, as kazoo's ``ensure_path`` makes it: a kazoo party checks its path once, so were it a
container, removed by the server once every member had left, that party's next ``join()``
would fail.

**Tasks.** Each object owns its task (and the cache's); ``close()`` cancels and awaits them
and deletes the node (as Curator does, whatever the mode). Cancelling ``start()`` leaves
nothing behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiocoord._client import door
from aiocoord._deadline import within
from aiocoord._paths import join, kazoo_prefix
from aiocoord._validation import (
    MAX_TTL_MS,
    encode_utf8,
    validate_create_size,
    validate_data,
    validate_duration_ms,
    validate_flag,
    validate_path,
    validate_timeout,
)
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client, EventType, State
from aiocoord.errors import (
    BadArgumentsError,
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._contention.contender import delete_node
from aiocoord.recipes._stream import EventSubscription
from aiocoord.recipes.cache import ChildrenCache, NodeEvent
from aiocoord.recipes.layout import Layout, check_layout

__all__ = ["CreateMode", "GroupMember", "PersistentNode"]

log = logging.getLogger(__name__)

#: kazoo's ``Party`` node name after its UUID.
KAZOO_PARTY = "__party__"


class CreateMode(enum.Enum):
    """How a :class:`PersistentNode` is created (ZooKeeper's ``CreateMode``)."""

    #: a node that stays until it is deleted
    PERSISTENT = "persistent"
    #: a node the server deletes when the session that made it ends
    EPHEMERAL = "ephemeral"
    #: a persistent node whose name gets a sequence number (a new one at each re-creation)
    PERSISTENT_SEQUENTIAL = "persistent_sequential"
    #: an ephemeral node whose name gets a sequence number (a new one at each re-creation)
    EPHEMERAL_SEQUENTIAL = "ephemeral_sequential"
    #: a node the server deletes once its last child is gone
    CONTAINER = "container"
    #: a persistent node the server deletes once it has gone ``ttl`` without a change or a
    #: child (ZooKeeper 3.5.3+, server option ``zookeeper.extendedTypesEnabled=true``)
    PERSISTENT_WITH_TTL = "persistent_with_ttl"
    #: a persistent TTL node (as PERSISTENT_WITH_TTL) whose name gets a sequence number
    PERSISTENT_SEQUENTIAL_WITH_TTL = "persistent_sequential_with_ttl"

    @property
    def ephemeral(self) -> bool:
        """True for the modes whose node goes with the session."""
        return self in (CreateMode.EPHEMERAL, CreateMode.EPHEMERAL_SEQUENTIAL)

    @property
    def sequential(self) -> bool:
        """True for the modes whose name gets a sequence number."""
        return self in (
            CreateMode.PERSISTENT_SEQUENTIAL,
            CreateMode.EPHEMERAL_SEQUENTIAL,
            CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL,
        )

    @property
    def ttl(self) -> bool:
        """True for the modes that need a ``ttl``."""
        return self in (CreateMode.PERSISTENT_WITH_TTL, CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL)


class PersistentNode:
    """A node kept present while the object runs (Curator's ``PersistentNode``); see the
    module docstring.

    ``async with PersistentNode(client, "/services/api/a", b"10.0.0.1:80") as node:`` creates it in
    the background (``await node.wait_for_initial_create(timeout)`` waits for that) and keeps it
    there; leaving deletes it. ``protected`` names a non-sequential node ``_c_<uuid>-<name>``
    (sequential modes always are; a CONTAINER cannot be). ``ttl`` (seconds) is required by the TTL
    modes and refused by the others. ``acl`` is the ACL of the node and of the parents it makes
    (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    #: Whether close() deletes the node (PersistentTtlNode leaves it to its TTL).
    _delete_on_close = True

    def __init__(
        self,
        client: Client,
        path: str,
        data: bytes = b"",
        *,
        mode: CreateMode = CreateMode.EPHEMERAL,
        protected: bool = False,
        ttl: float | None = None,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        #: the client whose session creates the node (and holds it, if ephemeral)
        self.client: Client = check_client(client)
        if not isinstance(mode, CreateMode):
            raise InvalidTypeError(f"mode must be a CreateMode, not {type(mode).__name__}")
        #: the node's path as given, before any protected prefix or sequence number (see
        #: :attr:`actual_path`)
        self.path: str = validate_path(path, sequential=mode.sequential)
        if path == "/":
            raise BadArgumentsError("a PersistentNode cannot be the root node")
        if not isinstance(protected, bool):
            raise InvalidTypeError(f"protected must be bool, not {type(protected).__name__}")
        if protected and mode is CreateMode.CONTAINER:
            raise BadArgumentsError("a CONTAINER node cannot be protected")
        if mode.ttl and ttl is None:
            raise BadArgumentsError(f"mode {mode.name} needs a ttl (seconds)")
        if not mode.ttl and ttl is not None:
            raise BadArgumentsError(f"ttl goes with the TTL modes only, not with {mode.name}")
        #: the TTL in seconds, as sent (whole milliseconds); None but in the TTL modes
        self.ttl: float | None = (
            None if ttl is None else validate_duration_ms(ttl, "ttl", MAX_TTL_MS) / 1000
        )
        #: how the node is created
        self.mode: CreateMode = mode
        #: whether the node's name gets the protected prefix ``_c_<uuid>-`` (always in the
        #: sequential modes)
        self.protected: bool = protected or mode.sequential
        self._data = validate_data(data, path)
        #: the ACL of the node and of the parents it makes (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        # Refused now, not at every attempt of the task that keeps the node.
        validate_create_size(path, self._data, self.acl, self.client.chroot)
        self._actual: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._created = asyncio.Event()
        self._closed = False
        # Curator's PersistentNode makes missing parents as containers; a kazoo-layout
        # GroupMember's node makes them persistent (Layout.parents_as_containers).
        self._parents_as_containers = True
        #: how many times the node was created, or an existing persistent node adopted
        #: (0 before, 1 after the first creation; one more at each re-creation)
        self.creations: int = 0

    # --- state ---------------------------------------------------------------------------

    @property
    def actual_path(self) -> str | None:
        """The node's path as created (with protected prefix and sequence), None before."""
        return self._actual

    @property
    def data(self) -> bytes:
        """The data the node is (re)created with."""
        return self._data

    async def wait_for_initial_create(self, timeout: float | None = None) -> bool:
        """Wait until the node was first created: True. Raises
        :class:`aiocoord.TimeoutError` after ``timeout`` seconds."""
        timeout = validate_timeout(timeout)
        if self._task is None:
            raise CoordinationError(f"the PersistentNode {self.path} was not started")
        await within(self._created.wait(), timeout, f"{self.path} not created")
        return True

    async def set_data(self, data: bytes, *, write: bool = True) -> None:
        """Change the node's data now (if it exists) and for every re-creation.
        ``write=False`` only keeps it for the re-creations: the node holds it already
        (someone else wrote it), and writing it again could undo a newer change."""
        payload = validate_data(data, self.path)
        validate_create_size(self.path, payload, self.acl, self.client.chroot)
        validate_flag(write, "write")
        self._data = payload
        actual = self._actual
        if actual is not None and write:
            with contextlib.suppress(NoNodeError):
                await self.client.set(actual, payload)  # if gone, the task makes it anew

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start keeping the node present (returns at once)."""
        if self._task is not None:
            raise CoordinationError(f"the PersistentNode {self.path} was already started")
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"aiocoord-persistent-node:{self.path}"
        )

    async def close(self) -> None:
        """Stop, await the task and delete the node (now, or once reconnected). Idempotent."""
        if self._closed:
            return
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        actual, self._actual = self._actual, None
        if actual is not None and not self.client.closed and self._delete_on_close:
            await delete_node(self.client, actual, confirm=True)

    async def __aenter__(self) -> PersistentNode:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- the task ------------------------------------------------------------------------

    async def _run(self) -> None:
        client = self.client
        delay = 0.05
        while True:
            try:
                path = await self._ensure()
                stat, watch = await client.exists(path, watch=True)
                if stat is None or (
                    self.mode.ephemeral and stat.ephemeral_owner != client.session_id
                ):
                    watch.cancel()
                    continue  # gone meanwhile, or not ours: make it again
                delay = 0.05
                event = await watch
                if event.type is EventType.DELETED:
                    log.info("persistent node %s was deleted; creating it again", path)
            except ClientClosedError:
                return
            except SessionExpiredError:
                # The watch (and an ephemeral node) went with the session.
                if not door.renews_sessions(client):
                    return
                with contextlib.suppress(asyncio.TimeoutError):
                    await client.wait_for(State.CONNECTED)
            except (ConnectionLossError, CoordinationError) as exc:
                if not isinstance(exc, ConnectionLossError):
                    log.warning("persistent node %s: %r; trying again", self.path, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    async def _ensure(self) -> str:
        """The path of our node, creating it if it is not there."""
        client = self.client
        actual = self._actual
        if actual is not None:
            stat = await client.exists(actual)
            if stat is not None and (
                not self.mode.ephemeral or stat.ephemeral_owner == client.session_id
            ):
                return actual
            if self.protected or self.mode.sequential:
                self._actual = None  # a new node gets a new name
        while True:
            try:
                created = await self._create_once()
            except NodeExistsError:
                if await self._adopt():
                    return self.path
                continue
            except ConnectionLossError:
                if self.protected:
                    raise  # the client looked for it already; start over
                # A plain create whose reply was lost: a second try either makes it or
                # finds ours (NodeExists, then adopted below).
                await asyncio.sleep(0.05)
                continue
            self._actual = created
            self.creations += 1
            self._created.set()
            return created

    async def _create_once(self) -> str:
        """One create of the node. If close() cancels the task while the create is in
        flight, the node the server makes is deleted once its answer comes (by a task of the
        client's, which :meth:`Client.wait_background` waits for): it must not outlive us."""
        create = asyncio.ensure_future(
            self.client.create(
                self.path,
                self._data,
                ephemeral=self.mode.ephemeral,
                sequential=self.mode.sequential,
                container=self.mode is CreateMode.CONTAINER,
                ttl=self.ttl,
                protected=self.protected,
                make_parents=True,
                parents_as_containers=self._parents_as_containers,
                acl=self.acl,
            )
        )
        try:
            return await asyncio.shield(create)
        except asyncio.CancelledError:
            if create.done():
                if not create.cancelled() and create.exception() is None:
                    self._actual = create.result()  # close() deletes it
            else:
                door.spawn(
                    self.client,
                    _delete_once_made(self.client, create),
                    f"aiocoord-node:{self.path}",
                )
            raise

    async def _adopt(self) -> bool:
        """An unprotected node of our name exists: True if it is ours to keep (ours, or a
        persistent node, which is given our data); else wait until it is gone."""
        client = self.client
        try:
            data, stat, watch = await client.get(self.path, watch=True)
        except NoNodeError:
            return False
        if self.mode.ephemeral and stat.ephemeral_owner != client.session_id:
            # Another session's: wait for it to go (its session ends, or it is deleted).
            log.info(
                "%s exists and belongs to session 0x%x; waiting for it to go",
                self.path,
                stat.ephemeral_owner,
            )
            try:
                while True:
                    event = await watch
                    if event.type is EventType.DELETED:
                        return False
                    try:
                        _, stat, watch = await client.get(self.path, watch=True)
                    except NoNodeError:
                        return False
            finally:
                watch.cancel()
        watch.cancel()
        if data != self._data:
            await client.set(self.path, self._data)
        if self._actual is None:
            self.creations += 1
        self._actual = self.path
        self._created.set()
        return True

    def __repr__(self) -> str:
        return f"<PersistentNode {self.actual_path or self.path} {self.mode.value}>"


class GroupMember:
    """Membership of a group (Curator's ``GroupMember``); see the module docstring.

    ``async with GroupMember(client, "/services/api", "node-1", b"10.0.0.1:80") as me:``
    keeps ``<path>/node-1`` present; ``me.members()`` gives every member's data by id (this
    member always included), ``me.changes()`` streams the cache's CHILD_ADDED /
    CHILD_UPDATED / CHILD_REMOVED events, and ``await me.wait_for(predicate, timeout)``
    waits for a membership. ``close()`` leaves the group. ``acl`` is the ACL of the member
    node and of the parents it makes (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        member_id: str,
        data: bytes = b"",
        *,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
        shallow: bool = False,
    ) -> None:
        #: the client whose session holds the member node and follows the group
        self.client: Client = check_client(client)
        #: the group's path, the parent of the member nodes (as given, under the client's
        #: chroot)
        self.path: str = validate_path(path)
        #: whose layout the membership speaks (:class:`~aiocoord.Layout`): Curator's
        #: ``GroupMember``, or kazoo's ``Party`` (``ShallowParty`` when :attr:`shallow`)
        self.layout: Layout = check_layout(layout, "GroupMember")
        #: kazoo's ``ShallowParty``: the identifier in the node's name
        self.shallow: bool = validate_flag(shallow, "shallow")
        if not isinstance(member_id, str):
            raise InvalidTypeError(f"member_id must be str, not {type(member_id).__name__}")
        kazoo = self.layout is Layout.KAZOO
        if self.shallow and not kazoo:
            raise BadArgumentsError("shallow=True is kazoo's ShallowParty: give layout='kazoo'")
        if kazoo and not self.shallow:
            name = f"{kazoo_prefix()}{KAZOO_PARTY}"  # the identifier goes in the data alone
        elif not member_id or "/" in member_id:
            raise BadArgumentsError(
                f"member_id must be a non-empty node name without '/', got {member_id!r}"
            )
        else:
            name = f"{kazoo_prefix()}-{member_id}" if kazoo else member_id
        if kazoo:
            if data:
                raise BadArgumentsError(
                    "kazoo's parties keep the member's identifier as the node's data: "
                    "leave data empty with layout='kazoo'"
                )
            data = encode_utf8(member_id, "member_id")
        #: this member's identifier, its key in :meth:`members`: the member node's name in
        #: Curator's layout; in kazoo's, the node's data (and the end of its name when
        #: :attr:`shallow`)
        self.member_id: str = member_id
        member_path = join(self.path, name)
        validate_path(member_path)
        #: the ACL of the member node and of the parents it makes (None: the client's
        #: ``acl_provider``, else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        self._node = PersistentNode(
            client, member_path, data, mode=CreateMode.EPHEMERAL, acl=self.acl
        )
        self._node._parents_as_containers = self.layout.parents_as_containers
        self._cache = ChildrenCache(client, self.path)

    async def start(self) -> None:
        """Join the group and start following it (returns once the view is loaded; the
        own node may follow a moment later: see :meth:`wait_for`)."""
        await self._node.start()
        try:
            await self._cache.start()
        except BaseException:
            await self._node.close()
            raise

    async def close(self) -> None:
        """Leave the group: the node is deleted, the cache and tasks stop."""
        try:
            await self._node.close()
        finally:
            await self._cache.close()

    async def __aenter__(self) -> GroupMember:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def node(self) -> PersistentNode:
        """This member's node."""
        return self._node

    def _identifier(self, name: str, data: bytes) -> str | None:
        """The member id of child ``name`` as this layout reads it, None if no member."""
        if self.layout is Layout.CURATOR:
            return name
        if self.shallow:
            return name[name.find("-") + 1 :]  # kazoo's ShallowParty reads it so
        if KAZOO_PARTY not in name:
            return None
        return data.decode("utf-8", "replace")

    def _view(self, children: Mapping[str, Any]) -> dict[str, bytes]:
        view: dict[str, bytes] = {}
        for name, child in children.items():
            member = self._identifier(name, child.data)
            if member is not None:
                view[member] = child.data
        return view

    def members(self) -> dict[str, bytes]:
        """Every member's data by member id, as the cache sees it now (this member with its
        current data, even before the cache saw its node). In kazoo's parties the id is the
        identifier and the data is the identifier too."""
        view = self._view(self._cache.children)
        view[self.member_id] = self._node.data
        return view

    def changes(self, *, buffer_size: int | None = None) -> EventSubscription[NodeEvent]:
        """The membership change stream (the ChildrenCache's; see its ``changes()``).

        The events name child nodes, as the cache sees them: in kazoo's layout a ``Party``
        event names ``<uuid hex>__party__`` (the identifier is its data) and may be about a
        child that is no member; :meth:`members` and :meth:`wait_for` read as kazoo does.
        """
        return self._cache.changes(buffer_size=buffer_size)

    async def wait_for(
        self, predicate: Callable[[dict[str, bytes]], bool], timeout: float | None = None
    ) -> dict[str, bytes]:
        """Wait until ``predicate(members)`` holds for the group *as the server has it*
        (this member counted only once its node is seen); return that membership.

        :class:`aiocoord.TimeoutError` after ``timeout`` seconds.
        """
        if not callable(predicate):
            raise InvalidTypeError("predicate must be callable")

        def check(children: Mapping[str, Any]) -> bool:
            return bool(predicate(self._view(children)))

        found = await self._cache.wait_for(check, timeout)
        return self._view(found)

    async def set_data(self, data: bytes) -> None:
        """Change this member's data."""
        await self._node.set_data(data)

    def __repr__(self) -> str:
        return f"<GroupMember {self.path} {self.member_id!r}>"


async def _delete_once_made(client: Client, create: asyncio.Future[str]) -> None:
    """Delete the node of a create its caller left in flight, once (if) it was made."""
    try:
        path = await create
    except Exception:  # not made; or a lost reply, which a protected create looks up itself
        return
    await delete_node(client, path)
