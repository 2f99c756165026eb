"""Our nodes in a queue: making them (protected, so a lost reply never leaves an orphan),
knowing them (:class:`QueueNode`, with the session that owns it), trusting them before a grant,
and deleting them for sure.

**Cancellation and timeouts leave no node.** The create is written from the caller's step and
its answer is followed by the client (a task of the client's when it must wait for a
connection or make more than the node's parent). A contender that gives up deletes its node
(a guaranteed delete, which finishes in the background if the connection is down); if it
gives up while the create is still in flight, the node is deleted when the answer comes;
and if the answer was lost to a connection loss, the node is found by its protected prefix
after a ``sync`` and deleted. :meth:`Client.wait_background` waits for those background deletions.

**Release.** A release writes the node's delete from the caller's task (or holds it for the
next connection, ahead of anything accepted later) and returns without waiting for the answer,
which the client sees through in the background (:meth:`Client.delete_for_sure`). Nobody is
granted anything before the server has applied it, this client's waiters included: they hear
that the node is gone from the delete's answer (the local hand-over, :func:`delete_node`) or
from their watch, never from a guess that the session is still alive.

**No grant on an untrusted session.** Whatever woke a waiter, its node is granted only while
the session is trusted (the rule, and why it is safe, is written once, in
:mod:`aiocoord._session.liveness`); otherwise it first asks the server, in the node's session,
whether the node still exists (:func:`confirm_alive`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from aiocoord._client import door
from aiocoord._client.door import Reply
from aiocoord._client.pathops import find_protected, protected_matches
from aiocoord._deadline import Deadline, bounded, result_by
from aiocoord._futures import fail
from aiocoord._paths import join, sequence_of, split
from aiocoord._validation import validate_create_size
from aiocoord._wire.data import ACL, Stat
from aiocoord._wire.opcodes import CreateFlag
from aiocoord._wire.writes import Create2Request, Create2Response
from aiocoord.client import Client, Watch
from aiocoord.errors import (
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    NoNodeError,
    SessionExpiredError,
    error_for_code,
)
from aiocoord.recipes._contention.listing import forget_node, next_stamp
from aiocoord.recipes._contention.naming import fresh_prefix
from aiocoord.recipes.layout import Layout

__all__ = [
    "CONFIRM_WAIT",
    "ProtectedNode",
    "QueueNode",
    "Restart",
    "check_entry",
    "confirm_alive",
    "delete_node",
    "watch_own",
]

log = logging.getLogger("aiocoord.recipes.contention")


@dataclass(frozen=True, slots=True)
class QueueNode:
    """A node of ours in a queue: where it is, its place, and the session that owns it."""

    path: str
    name: str
    sequence: int
    #: the zxid of its creation: grows with every node created later (a fencing token)
    czxid: int
    session_id: int
    #: the client's session generation the node belongs to (``client.generation``)
    generation: int
    #: a watch on the node itself that a waiter armed while it waited, handed to the holding
    #: (:class:`LossWatch`) so that a contended grant costs no request to watch the node
    own: Watch | None = field(default=None, compare=False)
    #: loop time the contender entered the queue, and whether it had to wait for a holder
    #: before its grant (counted by :meth:`Client.stats`)
    entered: float | None = field(default=None, compare=False)
    waited: bool = field(default=False, compare=False)
    #: its data was changed by someone while it waited (a revocation request, maybe: the
    #: holding reads it then, if it listens for one)
    touched: bool = field(default=False, compare=False)

    def alive_in(self, client: Client) -> bool:
        """False once the session that owns the node has ended."""
        return client.generation == self.generation and client.session_id == self.session_id

    def granted(self, own: Watch | None, waited: bool, touched: bool = False) -> QueueNode:
        """This node as its grant hands it to the holding: with the watch on it that the
        waiter armed (``own``), whether it waited, and whether its data changed meanwhile
        (``dataclasses.replace``, made directly: a contended grant makes one)."""
        return QueueNode(
            self.path,
            self.name,
            self.sequence,
            self.czxid,
            self.session_id,
            self.generation,
            own,
            self.entered,
            waited,
            touched,
        )


class Restart(Exception):
    """Our node is gone (session expired, or deleted by someone): enter the queue again."""


#: How long a delete that asks to be confirmed waits for the server (a live link answers well
#: within it) before it returns and lets the answer be settled in the background.
CONFIRM_WAIT = 0.025


async def delete_node(
    client: Client, path: str, *, cleared: bool = False, confirm: bool = False
) -> None:
    """Delete a node of ours for sure, without waiting for the server: the delete is written
    at once (or held and written first thing on the next connection), and seen through in the
    background (:meth:`Client.delete_for_sure`), so that cancelling the caller does not stop
    it and :meth:`Client.wait_background` waits for it. Requests this client makes later are
    answered after it (the session writes them in the order accepted, and the server answers
    a session's requests in order).

    This client's waiters hear that the node is gone from the server's answer to the delete
    (:func:`forget_node`), never before: a waiter of ours right behind the node goes ahead on
    that answer, which arrives with the notification other clients' waiters get, so the local
    hand-over costs no extra round trip. Until then the session may be ending unseen (an
    operator's forced expiry while the link is cut off) and the server may hand the node's
    place to another client: no task of ours is told it holds anything on a guess.
    ``cleared``: the node was granted by an exclusive driver, so no node ahead of it was left
    (see :meth:`~aiocoord.recipes._contention.listing.QueueState.mark_gone`). ``confirm``: wait up
    to :data:`CONFIRM_WAIT` for the server's answer, so that other sessions find the node gone once
    this returns while the link is live (closing a :class:`PersistentNode`, leaving a barrier, a
    contender giving up); a lock's release does not.
    """
    try:
        reply = client.delete_for_sure(path, on_deleted=lambda: forget_node(client, path, cleared))
    except (ClientClosedError, SessionExpiredError):
        # Closed, or expired for good (no reconnect_after_expiry): the session's end removed
        # what was ephemeral, and there is no session left to send anything on.
        return
    # The holding is over once the delete is accepted: nobody is granted anything before the
    # server has applied it, and waiting for its answer would only hold up the caller (a
    # release on a dead link, not yet detected, would wait for the link's timeout).
    if confirm:
        await asyncio.wait((reply,), timeout=CONFIRM_WAIT)


# --- making nodes ------------------------------------------------------------------------


def check_entry(
    client: Client, parent: str, name: str, data: bytes, acl: Sequence[ACL] | None
) -> None:
    """DataTooLargeError if a node of ours named ``name`` under ``parent`` holding ``data``
    (its name grown by a protected prefix and a sequence number) is more than a server
    takes: for a recipe to refuse a contender before it writes anything."""
    if acl is None and len(data) + 4 * (len(client.chroot) + len(parent) + len(name)) < _FITS:
        return  # far from the limit: no more work on every acquisition
    validate_create_size(door.server_path(client, join(parent, name)), data, acl)


# Below this many bytes of data and (at most 4 UTF-8 bytes a character) path, a contender's
# create fits the server's request limit whatever else it carries.
_FITS = 1 << 19


class ProtectedNode:
    """One protected ephemeral node being created: ``<parent>/<prefix><name>[<seq>]``, the
    prefix ``layout``'s (:func:`~aiocoord.recipes._contention.naming.fresh_prefix`: Curator's
    ``_c_<uuid>-``, kazoo's ``<uuid hex>``).

    The create is written at once, from the caller's step, so that it pipelines with whatever the
    caller sends next; the client follows its answer (``door.follow``). A missing parent is
    created right before it is sent again (:meth:`_write_parent`); a task of the client's takes over
    when the create must wait for a connection or make more levels. :meth:`result` waits for it;
    after a connection loss it finds the node by its prefix (after a ``sync``, so a create still on
    its way is ordered first) or creates it again. :meth:`discard` makes sure the node does not
    outlive its caller, whatever state the create is in. ``acl`` is the node's, and its parents' if
    they are made (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE), as ``layout``
    makes parents (:attr:`Layout.parents_as_containers
    <aiocoord.recipes.layout.Layout.parents_as_containers>`: containers in Curator's, persistent
    nodes in kazoo's, whose objects count on their paths staying).
    """

    def __init__(
        self,
        client: Client,
        parent: str,
        name: str,
        data: bytes,
        *,
        sequential: bool = True,
        acl: Sequence[ACL] | None = None,
        layout: Layout,
    ) -> None:
        # Refused before anything is sent (the parent's create goes with the first node's).
        check_entry(client, parent, name, data, acl)
        self.client = client
        self.parent = parent
        self.acl = acl
        #: whether the parents it makes are containers (else persistent nodes)
        self.parents_as_containers = layout.parents_as_containers
        #: what the node is found by after a lost reply (see
        #: :mod:`~aiocoord.recipes._contention.naming`)
        self.prefix = fresh_prefix(layout)
        self._path = join(parent, self.prefix + name)
        self._data = data
        self._sequential = sequential
        self.node: QueueNode | None = None
        #: when the create was handed to the session (None until it was)
        self.sent_stamp: int | None = None
        self._abandoned = False
        self._maybe_exists = True
        #: the first create, when written from the caller's step (see _write_create)
        self._sent: asyncio.Future[Reply[Create2Response]] | None = None
        #: the parent's create was written before ours (see _start and _write_parent)
        self.parent_written = False
        #: ours was written again behind the parent's, the first refused (see _write_parent)
        self.resent = False
        #: loop time the node was asked for (see QueueNode.entered)
        self.entered = asyncio.get_running_loop().time()
        self._reply: asyncio.Future[tuple[str, Stat]]
        self._start()

    def _start(self) -> None:
        # Failed only through fail(): its exception is marked seen for a caller that left.
        self._reply = asyncio.get_running_loop().create_future()
        # A path this client has not made a node under may be fresh (a lock per resource):
        # its create goes first, in the same round trip (refused if it exists).
        if self._sent is None and self._write_create(
            parent=not door.parent_known(self.client, self.parent)
        ):
            return
        # Not connected, or a second attempt: the create (with its parents) as a task.
        door.spawn(self.client, self._create(self._reply), f"aiocoord-create:{self._path}")

    def _write_create(self, *, parent: bool) -> bool:
        """Write the create now, from the caller's step (no task to start, and a request the
        caller writes next is ordered after it), behind the parent's create if ``parent``
        (see :func:`door.make_parent_now <aiocoord._client.door.make_parent_now>`), and follow
        its answer (:meth:`_created`); False if not connected."""
        client = self.client
        if parent and not door.make_parent_now(
            client, self.parent, self.acl, container=self.parents_as_containers
        ):
            return False
        request = Create2Request(
            path=door.server_path(client, self._path),
            data=self._data,
            acl=door.create_acl(client, self._path, self.acl),
            flags=CreateFlag.EPHEMERAL_SEQUENTIAL if self._sequential else CreateFlag.EPHEMERAL,
        )
        sent = door.send_now(client, request)
        if sent is None:
            return False
        self._sent = sent
        self.parent_written = self.parent_written or parent
        self.sent_stamp = next_stamp()
        # The client follows the answer, so that close() and wait_background() see it.
        door.follow(client, sent, self._created)
        return True

    def _write_parent(self) -> bool:
        """The parent is missing (an empty container the server removed, say): write its create and
        ours again behind it, now, without waiting between the two (the server applies them
        in order); the answer comes back to :meth:`_created`. False if not connected."""
        self.resent = self._write_create(parent=True)
        return self.resent

    def _created(self, sent: asyncio.Future[Reply[Create2Response]]) -> None:
        """The answer to a create written by :meth:`_write_create`, settled as the task of
        :meth:`_create` would: a missing parent goes the long way (the task makes it)."""
        reply = self._reply
        if sent.cancelled():  # only close() cancels what the client follows
            if not reply.done():
                fail(reply, ClientClosedError("client closed while creating a node"))
            return
        exc = sent.exception()
        if exc is None:
            answer = sent.result()
            if answer.err == NoNodeError.code:
                if not self.parent_written and not self._abandoned and self._write_parent():
                    return
                # More than the parent is missing (or not connected): the task makes the
                # parents first, instead of asking the server again for a create it has just
                # refused.
                door.spawn(
                    self.client,
                    self._create(reply, parents_missing=True),
                    f"aiocoord-create:{self._path}",
                )
                return
            if answer.err:
                exc = error_for_code(answer.err, path=self._path, op="create")
        if exc is not None:
            if self._abandoned:
                if isinstance(exc, ConnectionLossError):
                    door.spawn(self.client, self._sweep(), f"aiocoord-sweep:{self.parent}")
            elif not reply.done():
                fail(reply, exc)
            return
        assert answer.body is not None
        path = door.short_path(self.client, answer.body.path)
        if self._abandoned:
            # The caller left while the answer was on its way: the node is ours to remove.
            door.spawn(self.client, delete_node(self.client, path), f"aiocoord-discard:{path}")
        elif not reply.done():
            reply.set_result((path, answer.body.stat))

    async def _create(
        self, reply: asyncio.Future[tuple[str, Stat]], *, parents_missing: bool = False
    ) -> None:
        self.sent_stamp = next_stamp()
        try:
            if parents_missing:
                await self.client.ensure_path(
                    self.parent, container=self.parents_as_containers, acl=self.acl
                )
            result = await self._create_once()
        except asyncio.CancelledError:
            # Only the client cancels the tasks it owns, and only when it is closed.
            if not reply.done():
                fail(reply, ClientClosedError("client closed while creating a node"))
            raise
        except BaseException as exc:
            if self._abandoned:
                if isinstance(exc, ConnectionLossError):
                    await self._sweep()
            elif not reply.done():
                fail(reply, exc)
            return
        if self._abandoned:
            # The caller left while the reply was on its way: the node is ours to remove.
            await delete_node(self.client, result[0])
        elif not reply.done():
            reply.set_result(result)

    async def _create_once(self) -> tuple[str, Stat]:
        attempts = 3
        while True:
            try:
                return await self.client.create(
                    self._path,
                    self._data,
                    ephemeral=True,
                    sequential=self._sequential,
                    make_parents=True,
                    parents_as_containers=self.parents_as_containers,
                    acl=self.acl,
                    with_stat=True,
                )
            except NoNodeError:
                # The server removes an empty container parent on its own schedule; it may
                # have done so between making the parents and this create (or someone
                # deleted a persistent one).
                attempts -= 1
                if attempts == 0:
                    raise

    async def result(self, deadline: Deadline) -> QueueNode:
        """The created node; raises Restart if it belongs to a session that has ended."""
        client = self.client
        while self.node is None:
            try:
                path, stat = await result_by(self._reply, deadline)
            except ConnectionLossError:
                found = await self._find(deadline)
                if found is None:
                    # Not created (a sync ran first, so a create still in flight would show):
                    # the same name is safe to try again.
                    self._maybe_exists = True
                    self._start()
                    continue
                path, stat = found
            if stat.ephemeral_owner != client.session_id:
                raise Restart()  # made by a session that has ended: it vanishes with it
            name = split(path)[1]
            seq = sequence_of(name)
            # A plain node (kazoo's semaphore lease, ``<uuid hex>``) has no place in a queue.
            assert seq is not None or not self._sequential, name
            self.node = QueueNode(
                path,
                name,
                -1 if seq is None else seq,
                stat.czxid,
                stat.ephemeral_owner,
                client.generation,
                entered=self.entered,
            )
            door.note_parent(client, self.parent)
        return self.node

    async def _find(self, deadline: Deadline) -> tuple[str, Stat] | None:
        found = await bounded(find_protected(self.client, self.parent, self.prefix), deadline)
        if found is None:
            self._maybe_exists = False
        return found

    async def _sweep(self) -> None:
        """Find the node by its prefix and delete it (the create's reply was lost)."""
        try:
            paths = await protected_matches(self.client, self.parent, self.prefix)
        except CoordinationError as exc:
            log.info("could not look for %s* in %s: %r", self.prefix, self.parent, exc)
            return
        for path in paths:
            await delete_node(self.client, path)

    async def discard(self) -> None:
        """Make sure this node does not outlive its caller.

        A known node is deleted now (or in the background if the connection is down), and
        the server's answer is awaited briefly (``confirm``): a contender that gave up (timed
        out, not blocking, cancelled) has left the queue for every client once its call ends,
        while the link is live. A create still in flight deletes its node when the reply
        comes. A node whose create reply was lost is looked for by its prefix in the
        background.
        """
        self._abandoned = True
        if self.node is not None:
            await delete_node(self.client, self.node.path, confirm=True)
            return
        reply = self._reply
        if not reply.done() or reply.cancelled():
            return  # the create task sees _abandoned when it finishes
        exc = reply.exception()
        if exc is None:
            await delete_node(self.client, reply.result()[0], confirm=True)
        elif isinstance(exc, ConnectionLossError) and self._maybe_exists:
            door.spawn(self.client, self._sweep(), f"aiocoord-sweep:{self.parent}")


# --- trusting nodes ----------------------------------------------------------------------


async def confirm_alive(client: Client, node: QueueNode, deadline: Deadline) -> None:
    """Return once ``node``'s session may be trusted (see :mod:`aiocoord._session.liveness`);
    raise Restart if the node or its session is gone. An untrusted client (SUSPENDED, or
    silent for too long) asks the server first, in the node's session: an answer that finds
    the node proves the session alive at a moment from which its loss is reported in time.
    """
    pinned: Client | None = None
    while True:
        if not node.alive_in(client):
            raise Restart()
        if door.trusted(client):
            return
        if pinned is None:
            pinned = client.bound(node.generation)  # made only when asked: the common case is not
        try:
            stat = await bounded(pinned.exists(node.path), deadline)
        except ConnectionLossError:
            continue  # the request waits for the reconnect the next time round
        except SessionExpiredError:
            if door.renews_sessions(client):
                raise Restart() from None
            raise
        if stat is None:
            raise Restart()


async def watch_own(client: Client, pinned: Client, node: QueueNode) -> Watch | None:
    """Arm a watch on our own node, left in place until the node's deletion (by us or
    anyone) consumes it. None if it could not be armed now (a connection loss: the next
    probe tries again); raises Restart if the node or its session is gone."""
    try:
        stat, watch = await pinned.exists(node.path, watch=True)
    except ConnectionLossError:
        return None
    except SessionExpiredError:
        if door.renews_sessions(client):
            raise Restart() from None
        raise
    if stat is None:
        watch.cancel()
        raise Restart()
    watch.keep()
    return watch
