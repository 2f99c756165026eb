"""The request drops FaultProxy arms (its ``drop_after_request``, see
:mod:`aiocoord.testing.faults`): :class:`PendingDrop`, awaited until the connection was cut
after the chosen request, and the :class:`DroppedRequest` it resolves to. Re-exported from
:mod:`aiocoord.testing.faults`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

__all__ = ["DroppedRequest", "PendingDrop"]


@dataclass(frozen=True)
class DroppedRequest:
    """A request whose reply :meth:`FaultProxy.drop_after_request` kept from the client."""

    #: the request's xid, which its reply would have carried
    xid: int
    #: the request's opcode (``ZooDefs.OpCode``: 1 for create, 5 for setData...)
    opcode: int


class PendingDrop:
    """An armed :meth:`FaultProxy.drop_after_request`; ``await`` it to wait until the
    connection has been cut after the chosen request. Its result is the
    :class:`DroppedRequest`. If the proxy closes first, awaiting it raises
    ``asyncio.CancelledError``."""

    def __init__(
        self, predicate: Callable[[int, int], bool], future: asyncio.Future[DroppedRequest]
    ) -> None:
        self._predicate = predicate
        self._future = future
        #: the request taken, once one was; None while the drop waits for one
        self.request: DroppedRequest | None = None

    def matches(self, xid: int, opcode: int) -> bool:
        """Whether this drop takes a request with this header."""
        return bool(self._predicate(xid, opcode))

    def done(self) -> bool:
        """Whether the connection has been cut (or the proxy closed)."""
        return self._future.done()

    async def wait(self, timeout: float | None = None) -> DroppedRequest:
        """Wait (at most ``timeout`` seconds) for the drop; cancelling the wait leaves it armed."""
        return await asyncio.wait_for(asyncio.shield(self._future), timeout)

    def __await__(self) -> Generator[Any, None, DroppedRequest]:
        return asyncio.shield(self._future).__await__()

    def _resolve(self) -> None:
        if not self._future.done() and self.request is not None:
            self._future.set_result(self.request)

    def _cancel(self) -> None:
        self._future.cancel()
