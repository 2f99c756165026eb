"""A node that outlives its process by at most a TTL: Curator's ``PersistentTtlNode``.

The node at ``path`` is a *container* kept present by a :class:`~aiocoord.PersistentNode`; a
task of the object keeps a *TTL* child under it, ``<path>/touch``, by writing it every
``ttl / touch_schedule_factor`` seconds (creating it with ``ttl`` when it is missing). The
server deletes a TTL node that went ``ttl`` without a change, and a container whose last child
is gone: so once nobody touches the child any more (the object was closed, or its process
died, or it lost the server for longer than the TTL), the child goes after the TTL, and the
node after it. Touching the child rather than the node itself keeps the node's own watchers
quiet: they see its data and its children list, never the keep-alive.

TTL nodes need ZooKeeper 3.5.3+ started with ``-Dzookeeper.extendedTypesEnabled=true``; the
server looks for expired nodes every ``znode.container.checkIntervalMs`` (a minute by
default), so a node outlives its last touch by the TTL plus up to two such intervals.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from aiocoord._paths import join
from aiocoord._validation import (
    MAX_TTL_MS,
    validate_create_size,
    validate_duration_ms,
    validate_path,
)
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client
from aiocoord.errors import (
    BadArgumentsError,
    ClientClosedError,
    CoordinationError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    UnimplementedError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes.nodes import CreateMode, PersistentNode

__all__ = [
    "DEFAULT_CHILD_NODE_NAME",
    "DEFAULT_TOUCH_SCHEDULE_FACTOR",
    "PersistentTtlNode",
]

log = logging.getLogger(__name__)

#: Curator's name of the TTL child.
DEFAULT_CHILD_NODE_NAME = "touch"
#: The child is touched every ``ttl / factor`` seconds (Curator's default factor).
DEFAULT_TOUCH_SCHEDULE_FACTOR = 2


class _KeptNode(PersistentNode):
    """The container: left in place on close, for the server to reap after the TTL."""

    _delete_on_close = False


class PersistentTtlNode:
    """A container node kept alive by a touched TTL child (Curator's ``PersistentTtlNode``);
    see the module docstring.

    ``async with PersistentTtlNode(client, "/workers/w1", ttl=30, data=b"...") as node:``
    creates the node and keeps it; leaving stops the touching, and the server deletes the
    node about ``ttl`` seconds later (unless another PersistentTtlNode on the same path still
    touches it). ``await node.wait_for_initial_create(timeout)`` waits for the first
    creation; ``set_data`` changes the node's data. ``acl`` is the ACL of the nodes it
    creates, parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        ttl: float,
        data: bytes = b"",
        *,
        child_name: str = DEFAULT_CHILD_NODE_NAME,
        touch_schedule_factor: int = DEFAULT_TOUCH_SCHEDULE_FACTOR,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        #: the client whose session creates the node and touches its child
        self.client: Client = check_client(client)
        #: the container node kept present (as given, under the client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a PersistentTtlNode cannot be the root node")
        #: the TTL of the child, in seconds, as sent (whole milliseconds)
        self.ttl: float = validate_duration_ms(ttl, "ttl", MAX_TTL_MS) / 1000
        if not isinstance(child_name, str):
            raise InvalidTypeError(f"child_name must be str, not {type(child_name).__name__}")
        if not child_name or "/" in child_name:
            raise BadArgumentsError(f"child_name must be a node name without '/': {child_name!r}")
        #: ``<path>/<child_name>``, the TTL child that is touched (Curator's ``touch``)
        self.child_path: str = validate_path(join(self.path, child_name))
        factor = touch_schedule_factor
        if isinstance(factor, bool) or not isinstance(factor, int):
            raise InvalidTypeError(
                f"touch_schedule_factor must be int, not {type(factor).__name__}"
            )
        if factor < 2:
            # At a factor of 1 the touch is due exactly when the TTL runs out: any delay
            # lets the server reap the node under a running object.
            raise BadArgumentsError(f"touch_schedule_factor must be at least 2, got {factor}")
        #: the child is touched every ``ttl / touch_schedule_factor`` seconds (at least 2)
        self.touch_schedule_factor: int = factor
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        # The child is written by the touch task, after the container: refused now, it
        # would leave the container behind and fail in the background instead.
        validate_create_size(self.child_path, b"", self.acl, self.client.chroot)
        self._node = _KeptNode(client, path, data, mode=CreateMode.CONTAINER, acl=self.acl)
        self._task: asyncio.Task[None] | None = None
        #: how many times the child was written (created or touched); 0 before the first
        self.touches: int = 0
        self._failure: UnimplementedError | None = None

    @property
    def node(self) -> PersistentNode:
        """The PersistentNode that keeps the container present."""
        return self._node

    @property
    def data(self) -> bytes:
        """The node's data (as given; see :meth:`set_data`)."""
        return self._node.data

    async def set_data(self, data: bytes) -> None:
        """Change the node's data now and for every re-creation."""
        await self._node.set_data(data)

    async def wait_for_initial_create(self, timeout: float | None = None) -> bool:
        """Wait until the node was first created: True; :class:`aiocoord.TimeoutError`
        after ``timeout`` seconds."""
        return await self._node.wait_for_initial_create(timeout)

    async def start(self) -> None:
        """Start keeping the node (returns at once; the node follows in the background)."""
        if self._task is not None:
            raise CoordinationError(f"the PersistentTtlNode {self.path} was already started")
        await self._node.start()
        self._task = asyncio.get_running_loop().create_task(
            self._touching(), name=f"aiocoord-ttl-node:{self.path}"
        )

    async def close(self) -> None:
        """Stop touching the child and stop keeping the node; the server deletes both once
        the TTL has passed. Idempotent.

        Raises :class:`~aiocoord.errors.UnimplementedError` if the server refused the TTL child
        (a server without ``extendedTypesEnabled``): the node was then never kept alive.
        """
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        started = task is not None
        await self._node.close()
        if started and self.touches == 0 and not self.client.closed:
            # Closed before its first touch: a container that never had a child is never
            # reaped by the server, so it goes now, unless another object's child is in it.
            # Its create may have been cut short by the close with its request already
            # sent: the delete, sent after it on the same session, still finds the node.
            with contextlib.suppress(NoNodeError, NotEmptyError):
                await self.client.delete(self.path)
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    async def __aenter__(self) -> PersistentTtlNode:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _touching(self) -> None:
        interval = self.ttl / self.touch_schedule_factor
        await self._node.wait_for_initial_create()
        while True:
            try:
                await self._touch()
            except ClientClosedError:
                return
            except UnimplementedError as exc:
                # Not a passing fault: reported by close(), logged now.
                log.error("cannot keep %s: %s", self.path, exc)
                self._failure = exc
                return
            except CoordinationError as exc:
                # Connection loss, say: the next touch, well within the TTL, tries again.
                log.debug("could not touch %s: %r", self.child_path, exc)
            await asyncio.sleep(interval)

    async def _touch(self) -> None:
        """Write the child, or create it with the TTL (Curator's create-or-set)."""
        client = self.client
        try:
            await client.set(self.child_path, b"")
        except NoNodeError:
            try:
                await client.create(self.child_path, ttl=self.ttl, acl=self.acl)
            except NodeExistsError:
                await client.set(self.child_path, b"")
            except NoNodeError:
                return  # the container is gone: the PersistentNode makes it again
        self.touches += 1

    def __repr__(self) -> str:
        return f"<PersistentTtlNode {self.path} ttl={self.ttl}s>"
