"""Distributed queues: :class:`Queue` (FIFO) and :class:`PriorityQueue`, in Curator's layout
(:class:`~aiocoord.LockingQueue`, kazoo's take-then-consume queue, is in
:mod:`aiocoord.recipes.locking_queue`; Curator's other queues on this mechanism are in
:mod:`~aiocoord.recipes.simple_queue`, :mod:`~aiocoord.recipes.delay_queue` and
:mod:`~aiocoord.recipes.id_queue`).

**Queue** is Apache Curator's ``DistributedQueue`` layout: each item is a persistent
sequential node ``<path>/queue-<10-digit sequence>`` whose data is the item in Curator's
queue framing (version ``0x00010001``, then ``0x01 <length> <bytes>`` per item, then
``0x02``), so a Curator ``DistributedQueue<byte[]>`` can share the queue. Consumers take the
items in name order, which for these names is the order they were put in. An item is
claimed by deleting its node, on the version read: whoever's delete succeeds has it, so each
item goes to exactly one consumer. A consumer with nothing to take waits on a children watch.

**PriorityQueue** is Curator's ``DistributedPriorityQueue``: the priority is part of the
name, ``queue-<sign><8 hex digits><sequence>`` (sign ``0`` for negative priorities, ``1``
otherwise), so name order is priority order (lowest first) and then arrival order.

**Exactly once, even when replies are lost.** A put or a claim whose reply is lost to a
connection loss may or may not have happened; doing it again could put an item twice, and
not doing it could lose one. Both go in a transaction with an ephemeral marker child
(``<path>/_c_<uuid>-op``, see :mod:`aiocoord.recipes._marker`), which tells after the
reconnect whether it was applied. Consumers skip those nodes (Curator's log them as
foreign nodes).

**kazoo's layout** (``layout="kazoo"``) is kazoo's ``Queue``: each item is its raw bytes in a
persistent sequential node ``<path>/entry-<priority, 3 digits>-<sequence>``, taken in name
order (priority 0..999, lowest first, then arrival order; a :class:`Queue` puts at kazoo's
default 100, a :class:`PriorityQueue` at the priority given, 100 if none), so kazoo and
aiocoord producers and consumers share one queue and each item goes to exactly one consumer of
either side. kazoo's consumers take the first child of the path whatever its name, so nothing
else may live there: kazoo's layout carries no marker nodes, and a put or a claim whose reply
is lost is not resolved exactly once (as with kazoo itself). A put whose reply is lost raises
:class:`~aiocoord.ConnectionLossError` (it may or may not have been applied), and a claim whose
reply is lost may lose that item. ``put_all`` puts one node per item in one transaction.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import struct
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

from aiocoord._deadline import Deadline, Expired, deadline_after, expiring, time_left
from aiocoord._paths import join
from aiocoord._validation import validate_data, validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client
from aiocoord.errors import (
    BadArgumentsError,
    BadVersionError,
    InvalidTypeError,
    NoNodeError,
    SessionExpiredError,
    TransactionFailedError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._marker import MARKER_NAME, MarkedCommit
from aiocoord.recipes._watching import call_with_watch, wait_watches
from aiocoord.recipes.layout import Layout, _make_node, check_layout
from aiocoord.transaction import Transaction

__all__ = [
    "QUEUE_ITEM_NAME",
    "PriorityQueue",
    "Queue",
]

log = logging.getLogger(__name__)
_Q = TypeVar("_Q", bound="Queue")

#: Curator's item node name (before the sequence number).
QUEUE_ITEM_NAME = "queue-"

# Curator's ItemSerializer framing.
_FRAME_VERSION = 0x00010001
_ITEM = 0x01
_EOF = 0x02
_HEADER = struct.Struct(">i")
_ITEM_HEADER = struct.Struct(">bi")


#: The digits of the sequence number the server appends to a sequential node's name.
_SEQUENCE_DIGITS = 10

#: kazoo's ``Queue`` item name, and its default priority.
KAZOO_ITEM_NAME = "entry-"
KAZOO_DEFAULT_PRIORITY = 100


def _kazoo_priority(priority: int | None) -> str:
    """kazoo's priority part of an item name, ``<3 digits>-`` (kazoo's range: 0..999)."""
    if priority is None:
        priority = KAZOO_DEFAULT_PRIORITY
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise InvalidTypeError(f"priority must be int, not {type(priority).__name__}")
    if not 0 <= priority <= 999:
        raise BadArgumentsError(f"kazoo's priorities are 0..999, got {priority}")
    return f"{priority:03d}-"


def frame(items: Sequence[bytes]) -> bytes:
    """Curator's queue framing of ``items`` (one node's data)."""
    out = [_HEADER.pack(_FRAME_VERSION)]
    for item in items:
        out.append(_ITEM_HEADER.pack(_ITEM, len(item)))
        out.append(item)
    out.append(bytes([_EOF]))
    return b"".join(out)


def unframe(data: bytes) -> list[bytes] | None:
    """The items of a node in Curator's framing, or None if it is not in that framing."""
    try:
        (version,) = _HEADER.unpack_from(data, 0)
        if version != _FRAME_VERSION:
            return None
        offset = _HEADER.size
        items: list[bytes] = []
        while True:
            opcode = data[offset]
            if opcode == _EOF:
                return items if offset + 1 == len(data) else None
            _, size = _ITEM_HEADER.unpack_from(data, offset)
            offset += _ITEM_HEADER.size
            if opcode != _ITEM or size < 0 or offset + size > len(data):
                return None
            items.append(data[offset : offset + size])
            offset += size
    except (struct.error, IndexError):
        return None


def check_items(items: Any, path: str) -> list[bytes]:
    """The items of a ``put_all`` as a list of bytes; a typed error for anything else."""
    if isinstance(items, (bytes, bytearray, memoryview, str)) or not isinstance(items, Sequence):
        raise InvalidTypeError("items must be a sequence of bytes (a list, not bytes itself)")
    if not items:
        raise BadArgumentsError("items must not be empty")
    return [validate_data(item, path) for item in items]


class Queue:
    """A FIFO queue of byte strings shared by any number of producers and consumers
    (Curator's ``DistributedQueue``); see the module docstring.

    ``await queue.put(b"job")``; ``data = await queue.get(timeout)``. Each item goes to
    exactly one consumer. ``close()`` (or leaving ``async with``) waits for this object's
    claims in flight, puts back what it claimed and did not hand out, and deletes its
    marker nodes.

    **Cancellation.** A cancelled ``get()`` never loses an item: if its claim already went
    out, the item is kept in this object and returned by the next ``get()``. Items are
    removed when claimed, so an item whose consumer crashes while working on it is lost;
    use :class:`LockingQueue` when every item must be worked on to the end.

    ``acl`` is the ACL of the nodes it creates, parents included (None: the client's
    ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    #: The item node name before the sequence number (and any tag a subclass adds):
    #: Curator's ``queue-``, kazoo's ``entry-`` in kazoo's layout.
    item_name: str = QUEUE_ITEM_NAME
    #: The end of the marker nodes' names (see :mod:`aiocoord.recipes._marker`).
    marker_name: str = MARKER_NAME
    #: The layouts this class speaks (Curator's queues built on this one have no kazoo twin).
    _LAYOUTS: ClassVar[tuple[Layout, ...]] = (Layout.CURATOR, Layout.KAZOO)

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
    ) -> None:
        #: the client whose session makes and takes the queue's nodes
        self.client: Client = check_client(client)
        #: the queue's path, the parent of its item and marker nodes (as given, under the
        #: client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a queue cannot live on the root node")
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: whose node layout the queue speaks (:class:`~aiocoord.Layout`; see the module
        #: docstring for what kazoo's cannot carry)
        self.layout: Layout = check_layout(layout, type(self).__name__, self._LAYOUTS)
        if self.layout is Layout.KAZOO:
            self.item_name = KAZOO_ITEM_NAME
        self._marked = MarkedCommit(client, path, acl=self.acl, marker_name=self.marker_name)
        # Items claimed and not yet handed out (the rest of a multi-item node, and items
        # whose get() was cancelled after the claim), each with the prefix of the node it
        # came from: close() puts it back there, at its priority (or time, or id).
        self._ready: collections.deque[tuple[bytes, str]] = collections.deque()
        # Names from the last listing not tried yet, in queue order.
        self._candidates: collections.deque[str] = collections.deque()
        self._claims: set[asyncio.Task[list[bytes] | None]] = set()

    # --- producing -------------------------------------------------------------------------

    def _item_prefix(self) -> str:
        prefix = join(self.path, self.item_name)
        if self.layout is Layout.KAZOO:
            return prefix + _kazoo_priority(None)
        return prefix

    def _payloads(self, items: list[bytes]) -> list[bytes]:
        """The data of the nodes that hold ``items``: one node in Curator's framing, or a
        node per raw item in kazoo's layout."""
        if self.layout is Layout.KAZOO:
            return items
        return [frame(items)]

    async def _commit(self, build: Any) -> None:
        """Apply the ops of ``build``: with a marker (exactly once) in Curator's layout, as
        they are in kazoo's (no node but items may live on kazoo's queue path)."""
        if self.layout is Layout.KAZOO:
            txn: Transaction = self.client.transaction()
            build(txn)
            await txn.commit()
            return
        await self._marked.commit(build)

    async def put(self, data: bytes) -> None:
        """Add ``data`` at the tail of the queue (exactly once, even if a reply is lost)."""
        await self._put([validate_data(data, self.path)], self._item_prefix())

    async def put_all(self, items: Sequence[bytes]) -> None:
        """Add several items as one node (Curator's ``putMulti``): they are taken by one
        consumer, one per ``get()``, in this order."""
        await self._put(check_items(items, self.path), self._item_prefix())

    async def _put(self, items: list[bytes], item_path: str) -> None:
        payloads = [validate_data(p, self.path) for p in self._payloads(items)]
        acl = self.acl

        def build(txn: Any) -> None:
            for payload in payloads:
                txn.create(item_path, payload, sequential=True, acl=acl)

        while True:
            try:
                await self._commit(build)
                return
            except TransactionFailedError as exc:
                if exc.failed_index < len(payloads) and isinstance(exc.cause, NoNodeError):
                    # The queue's node, persistent; its parents containers in Curator's layout
                    # (as DistributedQueue's), persistent nodes in kazoo's (as its ensure_path).
                    await _make_node(self.client, self.path, self.layout, self.acl)
                    continue
                raise

    # --- consuming -------------------------------------------------------------------------

    def _is_item(self, name: str) -> bool:
        return name.startswith(self.item_name)

    def _due(self, names: list[str]) -> tuple[list[str], float | None]:
        """The item names among ``names`` that may be taken now, in queue order, and the
        seconds until another one may (None: none waits for a time)."""
        return sorted(n for n in names if self._is_item(n)), None

    async def get(self, timeout: float | None = None) -> bytes:
        """Take the item at the head of the queue, waiting for one if it is empty.

        Raises :class:`aiocoord.TimeoutError` after ``timeout`` seconds with nothing taken.
        """
        timeout = validate_timeout(timeout)
        with expiring(f"no item taken from {self.path}", timeout):
            item = await self._take(deadline_after(timeout), wait=True)
        assert item is not None  # a waiting take returns an item or raises
        return item

    async def _take(self, deadline: Deadline, *, wait: bool) -> bytes | None:
        """The head item, claimed; without ``wait``, None if there is none now (one listing,
        no watch)."""
        client = self.client
        while True:
            if self._ready:
                return self._ready.popleft()[0]
            while self._candidates:
                name = self._candidates.popleft()
                items = await self._claim_shielded(name)
                if items:
                    origin = self._origin(name)
                    self._ready.extend((item, origin) for item in items[1:])
                    return items[0]
            if self._claims:
                # Claims of cancelled getters may still bring items (kept in _ready).
                await asyncio.wait(list(self._claims), timeout=time_left(deadline))
                continue
            if not wait:
                try:
                    listed = await client.children(self.path)
                except NoNodeError:
                    return None
                except SessionExpiredError:
                    continue
                due_now, _ = self._due(listed)
                if not due_now:
                    return None
                self._candidates.extend(due_now)
                continue
            try:
                names, watch = await call_with_watch(
                    client.children(self.path, watch=True), deadline
                )
            except NoNodeError:
                stat, watch = await call_with_watch(client.exists(self.path, watch=True), deadline)
                if stat is None:
                    await wait_watches([watch], deadline)
                else:
                    watch.cancel()
                continue
            except SessionExpiredError:
                continue
            items_now, next_due = self._due(names)
            if items_now:
                watch.cancel()
                self._candidates.extend(items_now)
                continue
            # Woken by a change of the children, or when the first item waiting for its
            # time comes due: a timer, not a poll.
            timer = deadline_after(next_due)
            try:
                if timer is not None and (deadline is None or timer < deadline):
                    with contextlib.suppress(Expired):
                        await wait_watches([watch], timer)
                else:
                    await wait_watches([watch], deadline)
            except SessionExpiredError:
                continue

    async def _claim_shielded(self, name: str) -> list[bytes] | None:
        # The claim runs in a task of its own, so that cancelling the getter cannot cut it
        # between the delete and the hand-over: a claimed item would be lost.
        task = asyncio.ensure_future(self._claim(name))
        self._claims.add(task)
        task.add_done_callback(self._claims.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(functools.partial(self._keep, self._origin(name)))
            raise

    def _keep(self, origin: str, task: asyncio.Task[list[bytes] | None]) -> None:
        """The getter that waited for this claim was cancelled: keep its items for the next."""
        if task.cancelled() or task.exception() is not None:
            return
        items = task.result()
        if items:
            self._ready.extend((item, origin) for item in items)

    def _origin(self, name: str) -> str:
        """The path prefix item node ``name`` was put under: its name without the sequence
        number the server appended (``%010d``), so its priority (kazoo's ``entry-050-``,
        Curator's sign and hex), a DelayQueue's time or an IdQueue's id stay."""
        return join(self.path, name[:-_SEQUENCE_DIGITS])

    async def _claim(self, name: str) -> list[bytes] | None:
        """The items of node ``name`` if this call removed it, None if someone else did
        (exactly once: the delete goes in a marked transaction, on the version read)."""
        path = join(self.path, name)
        try:
            data, stat = await self.client.get(path)
        except NoNodeError:
            return None

        def build(txn: Any) -> None:
            txn.delete(path, stat.version)

        try:
            await self._commit(build)
        except TransactionFailedError as exc:
            if exc.failed_index == 0 and isinstance(exc.cause, (NoNodeError, BadVersionError)):
                return None  # another consumer got it
            raise
        return self._items_of(data, path)

    def _items_of(self, data: bytes, path: str) -> list[bytes]:
        """The items a claimed node held (possibly none: an empty multi-item node)."""
        if self.layout is Layout.KAZOO:
            return [data]
        items = unframe(data)
        if items is None:
            log.warning("queue item %s is not in Curator's framing; returning it raw", path)
            return [data]
        return items

    async def size(self) -> int:
        """The number of item nodes in the queue now (a multi-item node counts once)."""
        try:
            names = await self.client.children(self.path)
        except NoNodeError:
            return 0
        return sum(1 for n in names if self._is_item(n))

    async def close(self) -> None:
        """Wait for the claims in flight, put the items claimed but never handed out back
        (the rest of a multi-item node, or what a cancelled ``get()`` claimed) under the
        name they had but for its sequence number: at their priority (time, id), behind the
        items of that priority waiting, and delete this object's marker nodes."""
        if self._claims:
            await asyncio.gather(*list(self._claims), return_exceptions=True)
        while self._ready:
            item, origin = self._ready[0]
            await self._put([item], origin)
            self._ready.popleft()
        await self._marked.close()

    async def __aenter__(self: _Q) -> _Q:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path}>"


class PriorityQueue(Queue):
    """A queue that hands out the lowest priority number first, and items of equal
    priority in the order they were put in (Curator's ``DistributedPriorityQueue``).

    Priorities are 32-bit signed integers. An item put later with a lower number overtakes
    the ones already waiting. ``acl`` is as for :class:`Queue`.
    """

    def _priority_tag(self, priority: int | None) -> str:
        if self.layout is Layout.KAZOO:
            return _kazoo_priority(priority)
        if priority is None:
            priority = 0
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise InvalidTypeError(f"priority must be int, not {type(priority).__name__}")
        if not -(2**31) <= priority < 2**31:
            raise BadArgumentsError(f"priority must be a 32-bit signed int, got {priority}")
        # Curator's priorityToString: sign digit, then the two's complement in hex.
        return ("1" if priority >= 0 else "0") + f"{priority & 0xFFFFFFFF:08X}"

    def _item_base(self) -> str:
        return join(self.path, self.item_name)

    async def put(self, data: bytes, priority: int | None = None) -> None:
        """Add ``data`` with ``priority`` (lower numbers come out first; None: 0 in Curator's
        layout, kazoo's default 100 in kazoo's, where priorities are 0..999)."""
        tag = self._priority_tag(priority)
        await self._put([validate_data(data, self.path)], self._item_base() + tag)

    async def put_all(self, items: Sequence[bytes], priority: int | None = None) -> None:
        """Add several items with one priority: as one node (Curator's ``putMulti``), or a
        node each in one transaction (kazoo's layout)."""
        tag = self._priority_tag(priority)
        await self._put(check_items(items, self.path), self._item_base() + tag)


# --- LockingQueue ------------------------------------------------------------------------
