"""``with`` and ``async with`` for the test services (a ZooKeeper server, an ensemble, a
Docker container, a KDC): one copy of the rule they share.

Entering starts the service, and closes it again if the start fails half-way (so no process
is left behind); leaving closes it. ``async with`` runs the blocking start and close in a
thread (:func:`in_thread`), so the event loop keeps running meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

__all__ = ["StartClose", "in_thread"]

_T = TypeVar("_T")
_S = TypeVar("_S", bound="StartClose")


async def in_thread(func: Callable[[], _T], *, undo: Callable[[], object]) -> _T:
    """Run blocking ``func`` in a thread. A thread cannot be interrupted, so on cancellation
    this waits for ``func`` to finish, runs ``undo`` (so nothing is left running), then
    re-raises the cancellation."""
    task = asyncio.ensure_future(asyncio.to_thread(func))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await asyncio.wait({task})
        undoing = asyncio.ensure_future(asyncio.to_thread(undo))
        with contextlib.suppress(BaseException):
            await asyncio.wait({undoing})
        raise


class StartClose:
    """The context-manager half of a service that has ``start()`` and ``close()``."""

    def start(self) -> None:
        """Start the service (blocking)."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop the service (blocking, idempotent)."""
        raise NotImplementedError

    def __enter__(self: _S) -> _S:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self: _S) -> _S:
        await in_thread(self.start, undo=self.close)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await in_thread(self.close, undo=self.close)
