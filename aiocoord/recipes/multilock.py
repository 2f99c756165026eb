"""All of several locks, or none (Curator's ``InterProcessMultiLock``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, runtime_checkable

from aiocoord._deadline import deadline_after, left_or_zero
from aiocoord._validation import validate_flag, validate_timeout
from aiocoord.errors import BadArgumentsError, CoordinationError, InvalidTypeError

__all__ = ["Lockable", "MultiLock"]


@runtime_checkable
class Lockable(Protocol):
    """What :class:`MultiLock` needs of a lock (Lock, Mutex, ReadLock, WriteLock, MultiLock)."""

    @property
    def is_held(self) -> bool:
        """True while held."""
        ...

    async def acquire(self, timeout: float | None = None, blocking: bool = True) -> bool:
        """Take the lock; False on timeout or when not blocking and taken."""
        ...

    async def release(self) -> None:
        """Release the lock."""
        ...


class MultiLock:
    """Acquires every lock in the given order, or none of them.

    If one cannot be had (``blocking=False``, a timeout), or the acquire fails or is
    cancelled, the ones already taken are released, newest first, before ``acquire`` returns
    False or raises. Take the locks in the same order everywhere, as with any set of locks, or two
    MultiLocks can wait for each other. ``async with MultiLock([...]):`` holds them all for
    the body. Each lock reports its own loss (``lock.lost``).
    """

    def __init__(self, locks: Sequence[Lockable]) -> None:
        if isinstance(locks, (str, bytes)) or not isinstance(locks, Sequence):
            raise InvalidTypeError("locks must be a sequence of locks")
        if not locks:
            raise BadArgumentsError("a MultiLock needs at least one lock")
        for lock in locks:
            if not isinstance(lock, Lockable):
                raise InvalidTypeError(
                    f"{type(lock).__name__} is not a lock (needs acquire, release, is_held)"
                )
        if len({id(lock) for lock in locks}) != len(locks):
            raise BadArgumentsError("the same lock object appears twice")
        #: the locks, in the order they are acquired
        self.locks: tuple[Lockable, ...] = tuple(locks)

    @property
    def is_held(self) -> bool:
        """True while every lock is held."""
        return all(lock.is_held for lock in self.locks)

    async def acquire(self, timeout: float | None = None, blocking: bool = True) -> bool:
        """Take every lock; True once all are held. With ``blocking=False``, False (with none
        held) if one is not free now. Raises :class:`aiocoord.TimeoutError` (with none held)
        if ``timeout`` seconds pass first."""
        timeout = validate_timeout(timeout)
        validate_flag(blocking, "blocking")
        deadline = deadline_after(timeout)
        taken: list[Lockable] = []
        try:
            for lock in self.locks:
                left = left_or_zero(deadline)
                if not await lock.acquire(timeout=left, blocking=blocking):
                    await self._release_all(taken)
                    return False
                taken.append(lock)
        except BaseException:
            await self._release_all(taken)
            raise
        return True

    async def release(self) -> None:
        """Release every lock, newest first; the first error is raised after all were tried."""
        await self._release_all(list(self.locks), raise_first=True)

    @staticmethod
    async def _release_all(taken: list[Lockable], raise_first: bool = False) -> None:
        first: BaseException | None = None
        for lock in reversed(taken):
            try:
                await lock.release()
            except CoordinationError as exc:
                first = first or exc
            except asyncio.CancelledError:
                # Each lock finishes its own deletion in the background when cancelled; the
                # others must still be released before the cancellation goes on.
                with contextlib.suppress(CoordinationError):
                    await MultiLock._release_all(taken[: taken.index(lock)])
                raise
        if raise_first and first is not None:
            raise first

    async def __aenter__(self) -> MultiLock:
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"<MultiLock {len(self.locks)} locks {'held' if self.is_held else 'not held'}>"
