"""A distributed read-write lock on Apache Curator 5.4's ``InterProcessReadWriteLock`` layout.

**Layout.** Readers and writers queue under one path: ``<path>/_c_<uuid>-__READ__<seq>`` and
``<path>/_c_<uuid>-__WRIT__<seq>`` (protected ephemeral sequential nodes, ordered by the
sequence number alone). A writer is through when no node at all is ahead of it; a reader when
no *writer* is ahead of it. Writers are exclusive and fair; a reader waits only while a writer
is ahead, so readers that queued before a writer are not held up by it.

In kazoo's layout (``layout="kazoo"``) the nodes are kazoo's ``ReadLock`` and ``WriteLock``
ones, ``<uuid hex>__rlock__<seq>`` and ``<uuid hex>__lock__<seq>``, with the same rules. In
either layout a reader counts every node that is not a reader as a writer: a contender of
another layout is waited for, never ignored.

**Herd-free.** A writer watches the node just ahead of it; a reader watches the nearest writer
ahead (Curator's reader watches the *first* writer, waking readers queued behind a later
writer for nothing).

**Reentrancy, downgrade, upgrade.** Both locks are reentrant per task (like :class:`Lock`).
The task holding the write lock may take the read lock too: that is a downgrade (acquire read,
then release write). As in Curator 5.4, the downgraded read node is a plain EPHEMERAL node named
with the write node's sequence number, ``_c_<uuid>-__READ__<write seq>``, so it sorts ahead of
every writer queued meanwhile and keeps them out until it is released. The opposite, a reader
asking for the write lock, would wait for itself forever; it is refused with
:class:`~aiocoord.errors.LockUpgradeError`.

Loss, cancellation and fencing behave as for :class:`~aiocoord.recipes.lock.Lock`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from aiocoord._validation import validate_flag, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client
from aiocoord.errors import LockUpgradeError
from aiocoord.recipes._args import current_task
from aiocoord.recipes._contention.contender import QueueNode
from aiocoord.recipes._contention.drivers import Driver, LeaseDriver
from aiocoord.recipes._contention.naming import KAZOO_LOCK, KAZOO_READ
from aiocoord.recipes.layout import Layout, check_layout
from aiocoord.recipes.lock import _Hold, _QueueLock

__all__ = ["READ_NAME", "WRITE_NAME", "ReadLock", "ReadWriteLock", "WriteLock"]

#: Curator's node names (the same length, as Curator's LockInternals requires).
READ_NAME = "__READ__"
WRITE_NAME = "__WRIT__"


class _ReaderDriver(Driver):
    """Through while no writer is ahead; waits for the nearest writer ahead. Every node that
    is not a reader of the layout counts as a writer (a contender of another layout, too:
    waiting for it is safe, ignoring it is not)."""

    window = 1

    def __init__(self, read_name: str = READ_NAME) -> None:
        self.read_name = read_name

    def relevant(self, name: str) -> bool:
        return self.read_name not in name

    def blocker(self, ahead: Sequence[str]) -> str | None:
        return ahead[-1] if ahead else None


class _WriterDriver(LeaseDriver):
    """Through when nothing is ahead; waits for the node just ahead."""

    def __init__(self, read_name: str = READ_NAME) -> None:
        super().__init__(1)
        self.read_name = read_name

    def needs_listing_after(self, gone: str) -> bool:
        # A write holder may have downgraded before it went: its read node carries the write
        # node's sequence number, so it entered the queue ahead of us unseen.
        return self.read_name not in gone


class _RWPart(_QueueLock):
    """The read or the write half: a reentrant lock sharing the pair's path."""

    def __init__(self, pair: ReadWriteLock) -> None:
        super().__init__(
            pair.client,
            pair.path,
            identifier=pair.identifier,
            cancel_on_loss=pair.cancel_on_loss,
            suspended_is_loss=pair.suspended_is_loss,
            acl=pair.acl,
            layout=pair.layout,
        )
        self._pair = pair

    async def acquire(self, timeout: float | None = None, blocking: bool = True) -> bool:
        """Take this half of the lock; see :meth:`Lock.acquire`."""
        return await self._acquire_hold(timeout, blocking) is not None

    async def release(self) -> None:
        """Release one level of the calling task's hold; see :meth:`Lock.release`."""
        await self._release_own()


class ReadLock(_RWPart):
    """The shared half of a :class:`ReadWriteLock`."""

    _LOCK_NAMES: ClassVar[dict[Layout, str]] = {Layout.CURATOR: READ_NAME, Layout.KAZOO: KAZOO_READ}

    def _new_driver(self) -> Driver:
        return _ReaderDriver(ReadLock._LOCK_NAMES[self.layout])

    async def _acquire_hold(self, timeout: float | None, blocking: bool) -> _Hold | None:
        return await self._acquire_reentrant(timeout, blocking)

    async def _enter(
        self, task: asyncio.Task[Any], timeout: float | None, blocking: bool
    ) -> QueueNode | None:
        write_hold = self._pair.write._hold_of(task)
        if write_hold is not None and write_hold.lost is None:
            # A downgrade: sort at the write node's place, ahead of every writer queued since.
            return await self._queue.enter_at(self._data(task), write_hold.node.sequence)
        return await super()._enter(task, timeout, blocking)

    async def __aenter__(self) -> ReadLock:
        await super().__aenter__()
        return self


class WriteLock(_RWPart):
    """The exclusive half of a :class:`ReadWriteLock`."""

    _LOCK_NAMES: ClassVar[dict[Layout, str]] = {
        Layout.CURATOR: WRITE_NAME,
        Layout.KAZOO: KAZOO_LOCK,
    }

    def _new_driver(self) -> Driver:
        return _WriterDriver(ReadLock._LOCK_NAMES[self.layout])

    async def _acquire_hold(self, timeout: float | None, blocking: bool) -> _Hold | None:
        validate_timeout(timeout)
        validate_flag(blocking, "blocking")
        task = current_task()
        if self._hold_of(task) is None:
            read_hold = self._pair.read._hold_of(task)
            if read_hold is not None and read_hold.lost is None:
                raise LockUpgradeError(
                    f"this task holds the read lock on {self.path}; the write lock would wait "
                    "for it forever. Release the read lock first (upgrading is not supported)."
                )
        return await self._acquire_reentrant(timeout, blocking)

    async def __aenter__(self) -> WriteLock:
        await super().__aenter__()
        return self


class ReadWriteLock:
    """A pair of locks on one path: :attr:`read` (shared) and :attr:`write` (exclusive).

    ``async with rw.read:`` / ``async with rw.write:``; both are reentrant per task and take the
    same options as :class:`~aiocoord.recipes.lock.Lock`. See the module docstring for the layout,
    downgrading and why upgrading is refused. ``acl`` is the ACL of the nodes both halves create,
    parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        identifier: str | None = None,
        cancel_on_loss: bool = False,
        suspended_is_loss: bool = False,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
    ) -> None:
        # The halves check the options they are given (below), before anything is sent.
        #: the client whose session holds both halves' nodes
        self.client: Client = client
        #: the path both halves queue under, the parent of their nodes (as given)
        self.path: str = path
        #: the data of both halves' nodes; None: each node gets ``host:pid:task-name`` of
        #: the task that acquires it
        self.identifier: str | None = identifier
        #: whether a loss cancels the body of ``async with rw.read:`` / ``rw.write:`` (which
        #: then raises :class:`~aiocoord.LockLostError`), as for :class:`~aiocoord.Lock`
        self.cancel_on_loss: bool = cancel_on_loss
        #: whether a lost connection (SUSPENDED) already loses a hold, not only the
        #: session's end, as for :class:`~aiocoord.Lock`
        self.suspended_is_loss: bool = suspended_is_loss
        #: the ACL of the nodes both halves create, parents included (None: the client's
        #: ``acl_provider``, else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: whose node layout both halves speak (:class:`~aiocoord.Layout`)
        self.layout: Layout = check_layout(layout, "ReadWriteLock")
        #: the exclusive half
        self.write: WriteLock = WriteLock(self)
        #: the shared half
        self.read: ReadLock = ReadLock(self)

    def __repr__(self) -> str:
        return f"<ReadWriteLock {self.path} read={self.read!r} write={self.write!r}>"
