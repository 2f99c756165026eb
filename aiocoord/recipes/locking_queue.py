"""kazoo's ``LockingQueue``: take an item, then consume it or give it back.

The layout is kazoo's: items are persistent sequential nodes
``<path>/entries/entry-<priority, 3 digits>-<sequence>`` holding the raw item; a consumer
takes one by creating the ephemeral lock node ``<path>/taken/<entry name>`` (holding the
consumer's id), and the item stays in the queue until the consumer calls
:meth:`LockedItem.consume` (which deletes the entry and the lock in one transaction) or
gives it back with :meth:`LockedItem.release`. If the consumer's session ends first, the lock
vanishes with it and the item is delivered again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from aiocoord._deadline import Deadline, deadline_after, expiring
from aiocoord._paths import join
from aiocoord._validation import validate_data, validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client, State
from aiocoord.errors import (
    BadArgumentsError,
    ConnectionLossError,
    InvalidTypeError,
    LockLostError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    TransactionFailedError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._contention.contender import delete_node
from aiocoord.recipes._marker import MarkedCommit
from aiocoord.recipes._watching import call_with_watch, wait_watches
from aiocoord.recipes.queue import check_items

__all__ = ["ENTRIES", "ENTRY_NAME", "TAKEN", "LockedItem", "LockingQueue"]

#: kazoo LockingQueue's children of the queue path and its entry name.
ENTRIES = "entries"
TAKEN = "taken"
ENTRY_NAME = "entry"


class LockedItem:
    """An item taken from a :class:`LockingQueue`: locked for this consumer until it is
    consumed or released. ``data`` is the item.

    ``await item.consume()`` removes it from the queue for good; ``await item.release()``
    gives it back. If the session ends first, the lock vanishes and the item is delivered
    again; ``consume()`` then raises LockLostError.
    """

    def __init__(self, queue: LockingQueue, name: str, data: bytes, generation: int) -> None:
        #: the queue the item was taken from
        self.queue: LockingQueue = queue
        #: the item's node name under ``entries`` (``entry-<priority>-<sequence>``), also
        #: its lock node's name under ``taken``
        self.name: str = name
        #: the item, as put
        self.data: bytes = data
        self._generation = generation
        self._done = False

    @property
    def entry_path(self) -> str:
        """The item's node."""
        return self.queue.entries_path + "/" + self.name

    @property
    def lock_path(self) -> str:
        """The lock node that holds the item for this consumer."""
        return self.queue.taken_path + "/" + self.name

    async def holds_lock(self) -> bool:
        """True while the item is still locked by this consumer's session."""
        client = self.queue.client
        if self._done or client.generation != self._generation:
            return False
        stat = await client.exists(self.lock_path)
        return (
            stat is not None
            and stat.ephemeral_owner == client.session_id
            and client.generation == self._generation
        )

    async def consume(self) -> None:
        """Remove the item from the queue (exactly once, even if the reply is lost).

        Raises LockLostError if the lock was lost first (the session ended): the item
        is then someone else's to take.
        """
        if self._done:
            raise LockLostError(f"item {self.name} was already consumed or released")
        # Bound to the session that holds the item's lock: sent on a later session it would
        # consume an item that is someone else's by then.
        client = self.queue.client.bound(self._generation)

        while True:
            try:
                await client.transaction().delete(self.entry_path).delete(self.lock_path).commit()
                self._done = True
                return
            except SessionExpiredError:
                self._done = True
                raise LockLostError(
                    f"the lock on queue item {self.name} went with the session; "
                    "it will be delivered again"
                ) from None
            except TransactionFailedError as exc:
                self._done = True
                raise LockLostError(
                    f"queue item {self.name} is no longer locked by this consumer ({exc.cause})"
                ) from None
            except ConnectionLossError:
                if await self._check_consumed():
                    self._done = True
                    return

    async def _check_consumed(self) -> bool:
        """After a lost reply: True if the consume was applied, False to send it again;
        LockLostError if the session ended with the item still there."""
        client = self.queue.client
        while True:
            await client.wait_for(State.CONNECTED)
            try:
                await client.sync(self.entry_path)
                stat = await client.exists(self.entry_path)
            except (ConnectionLossError, SessionExpiredError):
                continue
            if stat is None:
                return True  # only the lock's holder deletes an entry
            if client.generation != self._generation:
                self._done = True
                raise LockLostError(
                    f"the lock on queue item {self.name} went with the session; "
                    "it will be delivered again"
                )
            return False

    async def release(self) -> None:
        """Give the item back to the queue (its lock is deleted; a lost lock is no-op)."""
        if self._done:
            return
        self._done = True
        client = self.queue.client
        if client.generation != self._generation:
            return  # the lock went with the session
        await delete_node(client, self.lock_path)

    def __repr__(self) -> str:
        return f"<LockedItem {self.entry_path} {'done' if self._done else 'locked'}>"


class LockingQueue:
    """A queue whose items stay in it until their consumer says they are done (kazoo's
    ``LockingQueue``); see the module docstring.

    ``await q.put(data, priority=100)`` (0..999, lower first); ``item = await
    q.take(timeout)`` locks the head item for this consumer; then ``await item.consume()``
    or ``await item.release()``. An item whose consumer's session ends before ``consume()``
    is delivered again. ``acl`` is the ACL of the nodes it creates, parents included (None:
    OPEN_ACL_UNSAFE).
    """

    def __init__(self, client: Client, path: str, *, acl: Sequence[ACL] | None = None) -> None:
        #: the client whose session makes the nodes and holds the items' locks
        self.client: Client = check_client(client)
        #: the queue's path, the parent of ``entries`` and ``taken`` (as given, under the
        #: client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a queue cannot live on the root node")
        #: ``<path>/entries``, the parent of the item nodes
        self.entries_path: str = join(self.path, ENTRIES)
        #: ``<path>/taken``, the parent of the lock nodes of the items taken
        self.taken_path: str = join(self.path, TAKEN)
        #: stored in the lock nodes of the items this object takes (kazoo's queue id: a
        #: random UUID's hex digits, as bytes)
        self.id: bytes = uuid.uuid4().hex.encode()
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        # Markers go in the queue's root, where kazoo consumers do not look for entries.
        self._marked = MarkedCommit(client, self.path, acl=self.acl)

    @staticmethod
    def _check_priority(priority: Any) -> int:
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise InvalidTypeError(f"priority must be int, not {type(priority).__name__}")
        if not 0 <= priority <= 999:
            raise BadArgumentsError(f"priority must be in 0..999, got {priority}")
        return priority

    async def _ensure_paths(self) -> None:
        await self.client.ensure_path(self.entries_path, acl=self.acl)
        await self.client.ensure_path(self.taken_path, acl=self.acl)

    async def put(self, data: bytes, priority: int = 100) -> None:
        """Add ``data`` with ``priority`` (0..999, lower first; then in arrival order)."""
        payload = validate_data(data, self.entries_path)
        self._check_priority(priority)
        await self._create([payload], priority)

    async def put_all(self, items: Sequence[bytes], priority: int = 100) -> None:
        """Add several items (each its own entry) in one transaction."""
        payloads = check_items(items, self.entries_path)
        self._check_priority(priority)
        await self._create(payloads, priority)

    async def _create(self, payloads: list[bytes], priority: int) -> None:
        name = f"{self.entries_path}/{ENTRY_NAME}-{priority:03d}-"
        acl = self.acl

        def build(txn: Any) -> None:
            for payload in payloads:
                txn.create(name, payload, sequential=True, acl=acl)

        while True:
            try:
                await self._marked.commit(build)
                return
            except TransactionFailedError as exc:
                if exc.failed_index < len(payloads) and isinstance(exc.cause, NoNodeError):
                    await self._ensure_paths()
                    continue
                raise

    async def close(self) -> None:
        """Delete this object's marker nodes (items taken stay locked until consumed or
        released)."""
        await self._marked.close()

    async def __aenter__(self) -> LockingQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def take(self, timeout: float | None = None) -> LockedItem:
        """Lock the head item for this consumer and return it, waiting while there is none.

        Raises :class:`aiocoord.TimeoutError` after ``timeout`` seconds with nothing taken.
        Cancelling leaves no lock behind.
        """
        timeout = validate_timeout(timeout)
        with expiring(f"no item taken from {self.path}", timeout):
            return await self._take_within(deadline_after(timeout))

    async def _take_within(self, deadline: Deadline) -> LockedItem:
        client = self.client
        while True:
            try:
                entries, w_entries = await call_with_watch(
                    client.children(self.entries_path, watch=True), deadline
                )
                try:
                    taken, w_taken = await call_with_watch(
                        client.children(self.taken_path, watch=True), deadline
                    )
                except BaseException:
                    w_entries.cancel()
                    raise
            except NoNodeError:
                await self._ensure_paths()
                continue
            except SessionExpiredError:
                continue
            locked = set(taken)
            available = sorted(n for n in entries if n.startswith(ENTRY_NAME) and n not in locked)
            for name in available:
                try:
                    item = await self._take(name)
                except BaseException:
                    w_entries.cancel()
                    w_taken.cancel()
                    raise
                if item is not None:
                    w_entries.cancel()
                    w_taken.cancel()
                    return item
            try:
                await wait_watches([w_entries, w_taken], deadline)
            except SessionExpiredError:
                continue

    async def _take(self, name: str) -> LockedItem | None:
        client = self.client
        lock = f"{self.taken_path}/{name}"
        generation = client.generation
        try:
            try:
                await client.create(lock, self.id, ephemeral=True, acl=self.acl)
            except NodeExistsError:
                return None  # someone else holds it
            except ConnectionLossError:
                # Did the create get through? Only our session can own it, then.
                await client.wait_for(State.CONNECTED)
                stat = await client.exists(lock)
                if (
                    stat is None
                    or stat.ephemeral_owner != client.session_id
                    or client.generation != generation
                ):
                    return None
            if client.generation != generation:
                return None
            try:
                data, _ = await client.get(f"{self.entries_path}/{name}")
            except NoNodeError:
                # Consumed by the previous holder between our listing and our lock.
                await delete_node(client, lock)
                return None
        except BaseException:
            if client.generation == generation:
                await delete_node(client, lock)
            raise
        return LockedItem(self, name, data, generation)

    async def size(self) -> int:
        """The number of entries (taken or not) in the queue now."""
        try:
            names = await self.client.children(self.entries_path)
        except NoNodeError:
            return 0
        return sum(1 for n in names if n.startswith(ENTRY_NAME))

    def __repr__(self) -> str:
        return f"<LockingQueue {self.path}>"
