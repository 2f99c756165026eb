"""Barriers: :class:`Barrier` (one gate that is set and removed) and :class:`DoubleBarrier`
(enter together, leave together), on Apache Curator's layouts.

**Barrier** is Curator's ``DistributedBarrier``: the barrier is up while its node exists.
``set()`` creates it (parents as containers; in kazoo's layout persistent nodes, as kazoo's
``ensure_path`` makes them), ``remove()`` deletes it, and ``wait()`` blocks on an exists watch
until it is gone.

**DoubleBarrier** is Curator's ``DistributedDoubleBarrier``. Each participant creates an
ephemeral node ``<path>/<uuid>``; the one that brings the count to ``n`` creates
``<path>/ready``, whose creation lets every participant in (each waits on an exists watch on
``ready``). To leave, participants remove their nodes in a fixed order that needs one watch
each and no herd: the lowest node (by name) waits for the highest to go; every other node
deletes itself and waits for the lowest. When the last node is gone, everybody is out, and
``ready`` is deleted so the barrier can be used again.

**kazoo's layout** (``layout="kazoo"``): kazoo's ``Barrier`` is the same single node, and
kazoo's ``DoubleBarrier`` the same nodes left in the same order, with two differences that
the layout takes up. kazoo names a member with a UUID's hex digits (Curator a dashed UUID; both
sides sort every name alike). kazoo's leave counts ``ready`` as a member (it sorts after every
UUID), so its lowest member waits for ``ready`` to go, and every kazoo member deletes it first
thing when it leaves: in kazoo's layout ours does too, whenever it sees it while leaving. Share
a double barrier with kazoo in kazoo's layout: in Curator's, a member of ours that made
``ready`` again after a kazoo leaver deleted it (it counted ``n`` just before ``ready`` was
made) would leave it there, and kazoo's lowest member would wait for it for ever. In kazoo's
layout the barrier's path (and every parent made) is a persistent node, as kazoo's
``ensure_path`` makes it: a kazoo ``DoubleBarrier`` checks its path once, so were it a
container, removed by the server once everybody had left, that kazoo member's next ``enter()``
would fail to make its node and return at once, with ``participating`` False, before the
others arrived.

kazoo's own races stay kazoo's: its enter makes its node before it watches ``ready``, so a
kazoo member that is that slow while the others enter and already leave misses ``ready`` and
waits (as among kazoo members alone); and a kazoo member whose session expires while it waits
to enter is left waiting (its watch went with the session; kazoo's docs say to listen for the
session's loss). Its node went with its session, so the others do not count it, and nobody
enters until an ``n``-th member arrives.

**Timeouts** bound the waiting for the other participants; a request that has to wait for a
reconnect meanwhile may take longer. **Cancellation and timeouts** leave nothing behind on
entering: the participant node is
deleted (now, or once reconnected). A cancelled or timed-out leave keeps its place: the
node, if still there, is deleted by the next ``leave()`` or with the session.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from types import TracebackType

from aiocoord._deadline import Expired, deadline_after, timed_out
from aiocoord._paths import join
from aiocoord._validation import validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client, State
from aiocoord.errors import (
    BadArgumentsError,
    BarrierError,
    ConnectionLossError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._contention.contender import delete_node
from aiocoord.recipes._watching import call_with_watch, wait_watches
from aiocoord.recipes.layout import Layout, _make_node, check_layout

__all__ = ["READY_NODE", "Barrier", "BarrierError", "DoubleBarrier"]

#: Curator's name for the node that opens a double barrier.
READY_NODE = "ready"


class Barrier:
    """A gate clients wait at until it is removed (Curator's ``DistributedBarrier``).

    ``await barrier.set()`` puts it up, ``await barrier.remove()`` takes it down, ``await
    barrier.wait(timeout)`` returns True once it is down (at once if it is not up), and raises
    :class:`aiocoord.TimeoutError` after ``timeout`` seconds. Waiting survives connection loss and
    session expiry. ``acl`` is the ACL of the node it creates, parents included (None: the client's
    ``acl_provider``, else OPEN_ACL_UNSAFE). ``layout`` is accepted for either peer: Curator's
    ``DistributedBarrier`` and kazoo's ``Barrier`` are the same node (only the parents differ:
    containers in Curator's layout, persistent nodes in kazoo's).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
    ) -> None:
        #: the client whose session sets, removes and watches the barrier's node
        self.client: Client = check_client(client)
        #: the barrier's node, which exists while the barrier is up (as given, under the
        #: client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a Barrier cannot live on the root node")
        #: the ACL of the node it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: whose layout it speaks (:class:`~aiocoord.Layout`; the node is the same in both)
        self.layout: Layout = check_layout(layout, "Barrier")

    async def set(self) -> None:
        """Put the barrier up (creating its node; a barrier already up stays up)."""
        await _make_node(self.client, self.path, self.layout, self.acl)

    async def remove(self) -> None:
        """Take the barrier down (deleting its node; a barrier not up stays down)."""
        with contextlib.suppress(NoNodeError):
            await self.client.delete(self.path)

    async def is_set(self) -> bool:
        """True while the barrier is up."""
        return await self.client.exists(self.path) is not None

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until the barrier is down: True. Raises :class:`aiocoord.TimeoutError` after
        ``timeout`` seconds.

        Cancelling, or a timeout, leaves nothing behind (the watch is withdrawn).
        """
        timeout = validate_timeout(timeout)
        deadline = deadline_after(timeout)
        client = self.client
        try:
            while True:
                try:
                    stat, watch = await call_with_watch(
                        client.exists(self.path, watch=True), deadline
                    )
                except SessionExpiredError:
                    continue  # a request that waited across an expiry: ask the new session
                if stat is None:
                    watch.cancel()
                    return True
                try:
                    await wait_watches([watch], deadline)
                except SessionExpiredError:
                    continue  # the watch went with the session; set a new one
        except Expired:
            raise timed_out(f"barrier {self.path} still up", timeout) from None

    def __repr__(self) -> str:
        return f"<Barrier {self.path}>"


class DoubleBarrier:
    """``n`` participants enter together and leave together (Curator's
    ``DistributedDoubleBarrier``); see the module docstring.

    ``async with DoubleBarrier(client, path, n):`` returns once ``n`` participants have entered and
    exits once all of them have left. ``enter(timeout)`` and ``leave(timeout)`` do the same
    explicitly and raise :class:`aiocoord.TimeoutError` on timeout (an ``enter`` then leaves no
    node; a ``leave`` may be called again). One object is one participant. ``acl`` is the ACL of the
    nodes it creates, parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    ``layout="kazoo"`` names the participant node and deletes ``ready`` on leaving as kazoo's
    ``DoubleBarrier`` does: use it to share a barrier with kazoo's (module docstring).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        n: int,
        *,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
    ) -> None:
        #: the client whose session holds this participant's ephemeral node
        self.client: Client = check_client(client)
        #: the barrier's path, the parent of the participants' nodes and of ``ready`` (as
        #: given, under the client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a DoubleBarrier cannot live on the root node")
        if isinstance(n, bool) or not isinstance(n, int):
            raise InvalidTypeError(f"n must be int, not {type(n).__name__}")
        if n < 1:
            raise BadArgumentsError(f"n (the number of participants) must be >= 1, got {n}")
        #: the number of participants that must enter before any of them is let in
        self.n: int = n
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: whose layout it speaks (:class:`~aiocoord.Layout`): the participant's name, and
        #: when ``ready`` is deleted
        self.layout: Layout = check_layout(layout, "DoubleBarrier")
        member = uuid.uuid4()
        #: this participant's node name, a random UUID (dashed in Curator's layout, hex
        #: digits in kazoo's), fixed for the object's life
        self.node_name: str = member.hex if self.layout is Layout.KAZOO else str(member)
        #: ``<path>/<node_name>``, this participant's ephemeral node
        self.node_path: str = join(self.path, self.node_name)
        #: ``<path>/ready``, the node whose creation lets the participants in
        self.ready_path: str = join(self.path, READY_NODE)
        self._entered = False
        self._generation: int | None = None

    @property
    def entered(self) -> bool:
        """True between a successful ``enter()`` and the end of ``leave()``."""
        return self._entered

    # --- entering -----------------------------------------------------------------------

    async def _create_node(self) -> None:
        client = self.client
        while True:
            generation = client.generation
            try:
                await client.create(
                    self.node_path,
                    ephemeral=True,
                    make_parents=True,
                    parents_as_containers=self.layout.parents_as_containers,
                    acl=self.acl,
                )
            except ConnectionLossError:
                await client.wait_for(State.CONNECTED)
                continue  # the name is ours alone: a second try either makes it or finds it
            except NodeExistsError:
                stat = await client.exists(self.node_path)
                if stat is None:
                    continue
                if stat.ephemeral_owner != client.session_id:
                    # Made by our session before it expired; it is on its way out.
                    with contextlib.suppress(NoNodeError):
                        await client.delete(self.node_path)
                    continue
            if client.generation == generation:
                self._generation = generation
                return

    async def _count(self) -> int:
        try:
            names = await self.client.children(self.path)
        except NoNodeError:
            return 0
        return sum(1 for name in names if name != READY_NODE)

    async def enter(self, timeout: float | None = None) -> bool:
        """Join and wait until ``n`` participants have joined: True. Raises
        :class:`aiocoord.TimeoutError` after ``timeout`` seconds (then, as after cancellation,
        the participant node is gone).

        If the session expires while waiting, the node is made again on the new session.
        """
        timeout = validate_timeout(timeout)
        deadline = deadline_after(timeout)
        if self._entered:
            raise BarrierError(f"this participant already entered {self.path}; leave first")
        client = self.client
        done = False
        try:
            while True:
                try:
                    try:
                        ready, watch = await call_with_watch(
                            client.exists(self.ready_path, watch=True), deadline
                        )
                    except Expired:
                        raise timed_out(f"{self.n} not in {self.path}", timeout) from None
                    await self._create_node()
                    if ready is None and await self._count() >= self.n:
                        with contextlib.suppress(NodeExistsError):
                            await client.create(self.ready_path, acl=self.acl)
                        ready = await client.exists(self.ready_path)
                    if ready is not None:
                        watch.cancel()
                        done = True
                        break
                    try:
                        await wait_watches([watch], deadline)
                    except Expired:
                        raise timed_out(f"{self.n} not in {self.path}", timeout) from None
                    done = True
                    break
                except SessionExpiredError:
                    continue  # our node went with the session: make it again
        finally:
            if not done:
                await delete_node(client, self.node_path, confirm=True)
        self._entered = True
        return True

    # --- leaving ------------------------------------------------------------------------

    async def leave(self, timeout: float | None = None) -> bool:
        """Leave and wait until every participant has left: True. Raises
        :class:`aiocoord.TimeoutError` after ``timeout`` seconds (call again to keep
        waiting)."""
        timeout = validate_timeout(timeout)
        deadline = deadline_after(timeout)
        if not self._entered:
            raise BarrierError(f"this participant has not entered {self.path}")
        client = self.client
        should_exist = True
        while True:
            try:
                names = await client.children(self.path)
            except NoNodeError:
                names = []
            except SessionExpiredError:
                continue
            if READY_NODE in names and self.layout is Layout.KAZOO:
                # kazoo's leave counts `ready` as a member, sorted after every UUID, so kazoo's
                # lowest waits for it to go; kazoo's leavers delete it first thing, and so do
                # we. It can be there again after a leaver deleted it: a member that counted
                # n just before it was made makes it anew (ours, or kazoo's own enter).
                with contextlib.suppress(NoNodeError):
                    await client.delete(self.ready_path)
            nodes = sorted(n for n in names if n != READY_NODE)
            if not nodes:
                break
            mine = self.node_name in nodes
            if not mine and should_exist:
                if client.generation != self._generation:
                    break  # our node went with our session: nothing of ours is left
                raise BarrierError(
                    f"participant node {self.node_path} vanished while its session lived"
                )
            if len(nodes) == 1:
                if should_exist and not mine:
                    raise BarrierError(f"{self.path} holds a stranger's node {nodes[0]}")
                await delete_node(client, self.node_path, confirm=True)
                break
            if nodes[0] == self.node_name:
                # The lowest leaves last: wait for the highest to go.
                target = nodes[-1]
            else:
                target = nodes[0]
                if should_exist:
                    await delete_node(client, self.node_path, confirm=True)
                    should_exist = False
            try:
                stat, watch = await client.exists(self.path + "/" + target, watch=True)
            except SessionExpiredError:
                continue
            if stat is None:
                watch.cancel()
                continue
            try:
                await wait_watches([watch], deadline)
            except SessionExpiredError:
                continue
            except Expired:
                raise timed_out(f"participants still in {self.path}", timeout) from None
        with contextlib.suppress(NoNodeError):
            await client.delete(self.ready_path)
        self._entered = False
        return True

    # --- async with ---------------------------------------------------------------------

    async def __aenter__(self) -> DoubleBarrier:
        await self.enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.leave()

    def __repr__(self) -> str:
        state = "entered" if self._entered else "outside"
        return f"<DoubleBarrier {self.path} n={self.n} {state}>"
