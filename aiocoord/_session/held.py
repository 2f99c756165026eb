"""Requests a session accepted while no connection could take them.

A request made while SUSPENDED is *held* and written first thing on the next connection, in
the order the session accepted it, before anyone hears the session is back: nothing accepted
later overtakes it (a release held while offline, then ``sync()``: the delete goes first, so
the sync's answer means others see the lock free). A held request pinned to a session
(``generation``) fails unsent if that session ends first.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from aiocoord._session.connection import Connection, Reply
from aiocoord._wire.framing import Request
from aiocoord.errors import NotSentError, SessionExpiredError

__all__ = ["Held", "HeldRequests"]

R = TypeVar("R")


class Held(Generic[R]):
    """One held request: ``reply`` is its answer's future (cancel it to withdraw the request
    while it is still held); ``sent`` the connection and xid once written."""

    __slots__ = ("generation", "reply", "request", "sent")

    def __init__(self, request: Request[R], generation: int | None) -> None:
        self.request = request
        self.generation = generation
        self.reply: asyncio.Future[Reply[R]] = asyncio.get_running_loop().create_future()
        self.sent: tuple[Connection, int] | None = None


class HeldRequests:
    """The held requests of one session, oldest first (see the module docstring)."""

    def __init__(self) -> None:
        self._queue: deque[Held[Any]] = deque()

    def __bool__(self) -> bool:
        return bool(self._queue)

    def hold(self, request: Request[R], generation: int | None) -> Held[R]:
        """Hold ``request`` for the next connection, behind those held before it."""
        held = Held(request, generation)
        self._queue.append(held)
        return held

    def write(
        self,
        conn: Connection,
        generation: int,
        next_xid: Callable[[], int],
        sent: Counter[int],
    ) -> None:
        """Write the held requests on ``conn``, oldest first; those pinned to a session
        other than ``generation`` fail unsent. Stops, keeping the rest, if ``conn`` dies."""
        queue = self._queue
        while queue:
            held = queue[0]
            if held.reply.done():  # withdrawn before it could be sent
                queue.popleft()
                continue
            if held.generation is not None and held.generation != generation:
                queue.popleft()
                held.reply.set_exception(
                    SessionExpiredError("the session this request belonged to expired")
                )
                continue
            xid = next_xid()
            try:
                conn.send(xid, held.request, held.reply)
            except NotSentError:
                return  # this connection is gone already: the rest wait for the next one
            except Exception as exc:  # too large for the server: only this one fails
                queue.popleft()
                held.reply.set_exception(exc)
                continue
            queue.popleft()
            sent[held.request.opcode] += 1
            held.sent = (conn, xid)

    def fail(self, exc: BaseException, *, pinned_only: bool = False) -> None:
        """Fail the held requests with ``exc`` (only those pinned to a session, if asked)."""
        keep: deque[Held[Any]] = deque()
        for held in self._queue:
            if pinned_only and held.generation is None:
                keep.append(held)
            elif not held.reply.done():
                held.reply.set_exception(exc)
        self._queue = keep
