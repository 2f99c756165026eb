"""One interface over the exclusive recipes (:class:`Contender`: a lock, the write half of a
read-write lock, a one-lease semaphore, a leader latch), so a scenario runs against each."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiocoord
from aiocoord import (
    Client,
    LeaderLatch,
    LeadershipChange,
    Lock,
    ReadWriteLock,
    Semaphore,
)
from aiocoord.errors import (
    CoordinationError,
    LockLostError,
    LockNotOwnedError,
    NoNodeError,
)


class Contender:
    """An exclusive holding over one recipe, so a scenario can run against each of them:

    ``lock`` (Lock), ``rwlock`` (the write half of a ReadWriteLock), ``semaphore`` (a
    Semaphore with one lease) and ``latch`` (LeaderLatch: holding = leading). All use the
    strict policy (``suspended_is_loss=True``) unless ``suspended_is_loss=False``.
    """

    KINDS = ("lock", "rwlock", "semaphore", "latch")

    def __init__(
        self,
        kind: str,
        client: Client,
        path: str,
        name: str,
        *,
        suspended_is_loss: bool = True,
    ) -> None:
        self.kind = kind
        self.client = client
        self.path = path
        self.name = name
        self.suspended_is_loss = suspended_is_loss
        self._lease: Any = None
        self._latch: LeaderLatch | None = None
        self._owner: asyncio.Task[None] | None = None
        self._release_now = asyncio.Event()
        self._lost_flag = asyncio.Event()
        if kind == "lock":
            self._lock: Any = Lock(
                client, path, identifier=name, suspended_is_loss=suspended_is_loss
            )
        elif kind == "rwlock":
            self._lock = ReadWriteLock(
                client, path, identifier=name, suspended_is_loss=suspended_is_loss
            ).write
        elif kind == "semaphore":
            self._sem = Semaphore(
                client, path, 1, identifier=name, suspended_is_loss=suspended_is_loss
            )
        elif kind != "latch":
            raise ValueError(kind)

    async def acquire(self, timeout: float | None = None) -> bool:
        """Take the holding (become leader, for a latch); False after ``timeout`` (the
        recipes raise aiocoord.TimeoutError; the scenarios ask yes or no).

        Locks are owned by the task that acquires them, so a lock is taken (and later
        released) by an owner task of this object: any task may call acquire and release.
        Cancelling acquire cancels the owner (and its acquire) with it.
        """
        try:
            return await self._acquire(timeout)
        except aiocoord.TimeoutError:
            return False

    async def _acquire(self, timeout: float | None) -> bool:
        if self.kind in ("lock", "rwlock"):
            loop = asyncio.get_running_loop()
            got: asyncio.Future[bool] = loop.create_future()
            self._release_now = asyncio.Event()
            owner = self._owner = asyncio.ensure_future(self._own(timeout, got))
            try:
                return await asyncio.shield(got)
            except asyncio.CancelledError:
                owner.cancel()
                await asyncio.gather(owner, return_exceptions=True)
                raise
            finally:
                if not got.done():
                    # The owner failed before deciding: surface its error here.
                    await asyncio.gather(owner, return_exceptions=True)
                    exc = owner.exception() if not owner.cancelled() else None
                    if exc is not None:
                        raise exc
        if self.kind == "semaphore":
            (self._lease,) = await self._sem.acquire(1, timeout=timeout)
            return True
        if self._latch is None:
            self._latch = LeaderLatch(
                self.client,
                self.path,
                identifier=self.name,
                suspended_is_loss=self.suspended_is_loss,
            )
            self._latch.add_listener(self._on_latch)
            await self._latch.start()
        return await self._latch.wait_until_leader(timeout)

    async def _own(self, timeout: float | None, got: asyncio.Future[bool]) -> None:
        try:
            ok = bool(await self._lock.acquire(timeout=timeout))
        except BaseException as exc:
            if not got.done():
                got.set_exception(exc)
                got.exception()
            raise
        got.set_result(ok)
        if not ok:
            return
        try:
            await self._release_now.wait()
        finally:
            await self._lock.release()

    def _on_latch(self, change: LeadershipChange) -> None:
        if not change.is_leader:
            self._lost_flag.set()
        else:
            self._lost_flag = asyncio.Event()

    async def release(self) -> None:
        """Give the holding up (close the latch); LockLostError if it had been lost."""
        if self.kind in ("lock", "rwlock"):
            owner = self._owner
            if owner is None:
                raise LockNotOwnedError(f"{self.name} does not hold {self.path}")
            self._owner = None
            self._release_now.set()
            await owner
        elif self.kind == "semaphore":
            lease, self._lease = self._lease, None
            if lease is not None:
                await lease.release()
        elif self._latch is not None:
            latch, self._latch = self._latch, None
            await latch.close()

    @property
    def held(self) -> bool:
        """True while held (and not lost)."""
        if self.kind in ("lock", "rwlock"):
            return bool(self._lock.is_held)
        if self.kind == "semaphore":
            return self._lease is not None and bool(self._lease.is_held)
        return self._latch is not None and self._latch.is_leader

    @property
    def token(self) -> int | None:
        """The fencing token of the holding."""
        if self.kind in ("lock", "rwlock"):
            return self._lock.fencing_token  # type: ignore[no-any-return]
        if self.kind == "semaphore":
            return None if self._lease is None else int(self._lease.fencing_token)
        return None if self._latch is None else self._latch.fencing_token

    @property
    def node_path(self) -> str | None:
        """The held node's path (relative to the client's chroot)."""
        if self.kind in ("lock", "rwlock"):
            return self._lock.node_path  # type: ignore[no-any-return]
        if self.kind == "semaphore":
            return None if self._lease is None else str(self._lease.path)
        term = None if self._latch is None else self._latch.term
        return None if term is None else term.node_path

    @property
    def node_parent(self) -> str:
        """Where this recipe's contender nodes live."""
        if self.kind == "semaphore":
            return self.path + "/leases"
        return self.path

    async def wait_lost(self, timeout: float) -> None:
        """Wait until the holding is lost (TimeoutError otherwise)."""
        if self.kind in ("lock", "rwlock"):
            await self._lock.lost.wait(timeout)
        elif self.kind == "semaphore":
            assert self._lease is not None
            await self._lease.lost.wait(timeout)
        else:
            await asyncio.wait_for(self._lost_flag.wait(), timeout)

    async def close(self) -> None:
        """Leave: release if held (ignoring a loss), close a latch."""
        with contextlib.suppress(LockLostError, CoordinationError):
            if self.held or self.kind == "latch" or self._owner is not None:
                await self.release()


async def contender_nodes(client: Client, contender: Contender) -> list[str]:
    """The contender nodes (``_c_`` children) of the recipe's queue, as the server has them
    (synced first: the observer's member may lag behind the one the contender wrote to)."""
    try:
        await client.sync(contender.node_parent)
        names = await client.children(contender.node_parent)
    except NoNodeError:
        return []
    return sorted(n for n in names if n.startswith("_c_") and not n.endswith("-op"))
