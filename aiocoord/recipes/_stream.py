"""The change stream shared by the recipes (caches, group members, counters, leader
latches): one bounded buffer per subscriber, opened with the recipe's ``changes()``.

A publisher (:class:`EventStream`) hands every event to each subscriber's buffer and never
waits: a consumer that falls behind must not slow the cache down or make it grow without
bound. When a subscriber's buffer is full, its buffered events are dropped, and so is every
event published until it reads again; the next thing it reads is one *resynced* event made at
that moment, after which it receives events again as they come. Because the resynced event is
made when the subscriber reads it (not when the overflow happened), the cache's state read
right then, before the next ``await``, already contains every event that subscriber missed,
and every later event applies on top of it. Nothing is lost silently.
"""

from __future__ import annotations

import asyncio
import collections
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from aiocoord._deadline import within
from aiocoord.errors import BadArgumentsError, InvalidTypeError

E = TypeVar("E")

__all__ = ["EventStream", "EventSubscription", "check_buffer_size"]


def check_buffer_size(buffer_size: Any) -> int:
    """``buffer_size`` if it is an int >= 1; else InvalidTypeError or BadArgumentsError."""
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
        raise InvalidTypeError(f"buffer_size must be int, not {type(buffer_size).__name__}")
    if buffer_size < 1:
        raise BadArgumentsError(f"buffer_size must be >= 1, got {buffer_size}")
    return buffer_size


class _End:
    """Marks the end of a stream; carries the error that ended it, if any."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class EventSubscription(Generic[E]):
    """One subscriber's view of a cache's change stream: ``async for event in subscription``.

    Holds at most ``buffer_size`` unread events. On overflow the unread events are dropped
    and the next read returns one ``RESYNCED`` event instead: read the cache's current state
    then (before awaiting anything) and carry on; later events apply on top of that state.
    Iteration ends when the cache is closed (after the buffered events are read), or raises
    the error that stopped the cache. Leave early with ``aclose()`` or ``async with``;
    a subscription that is merely dropped is unsubscribed when it is garbage-collected.
    """

    __slots__ = ("__weakref__", "_buffer", "_end", "_limit", "_overflowed", "_resynced", "_waiter")

    def __init__(self, limit: int, resynced: Callable[[], E]) -> None:
        self._buffer: collections.deque[E] = collections.deque()
        self._limit = limit
        self._overflowed = False
        self._resynced = resynced
        self._waiter: asyncio.Future[None] | None = None
        self._end: _End | None = None

    # --- publisher side ------------------------------------------------------------------

    def _push(self, event: E) -> None:
        if self._overflowed or self._end is not None:
            return  # the coming RESYNCED covers it
        buffer = self._buffer
        if len(buffer) >= self._limit:
            buffer.clear()
            self._overflowed = True
        else:
            buffer.append(event)
        self._wake()

    def _finish(self, error: BaseException | None) -> None:
        if self._end is None:
            self._end = _End(error)
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- consumer side -------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Events buffered and not read yet."""
        return len(self._buffer)

    def __aiter__(self) -> EventSubscription[E]:
        return self

    async def __anext__(self) -> E:
        while True:
            if self._overflowed:
                self._overflowed = False
                return self._resynced()
            if self._buffer:
                return self._buffer.popleft()
            end = self._end
            if end is not None:
                if end.error is not None:
                    raise end.error
                raise StopAsyncIteration
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    async def get(self, timeout: float | None = None) -> E:
        """The next event; :class:`aiocoord.TimeoutError` after ``timeout`` seconds (then
        nothing is consumed).

        Raises StopAsyncIteration once the stream has ended.
        """
        return await within(self.__anext__(), timeout, "no event")

    async def aclose(self) -> None:
        """Stop receiving events; buffered ones are discarded."""
        self._buffer.clear()
        self._overflowed = False
        self._finish(None)

    async def __aenter__(self) -> EventSubscription[E]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class EventStream(Generic[E]):
    """The publisher: fans each event out to every live subscription without waiting."""

    __slots__ = ("_end", "_resynced", "_subs")

    def __init__(self, resynced: Callable[[], E]) -> None:
        self._subs: weakref.WeakSet[EventSubscription[E]] = weakref.WeakSet()
        self._resynced = resynced
        self._end: _End | None = None

    def subscribe(self, limit: int) -> EventSubscription[E]:
        """A new subscription that receives every event published from now on."""
        sub: EventSubscription[E] = EventSubscription(limit, self._resynced)
        if self._end is not None:
            sub._finish(self._end.error)
        else:
            self._subs.add(sub)
        return sub

    def publish(self, event: E) -> None:
        """Hand ``event`` to every subscription (never blocks)."""
        for sub in self._subs:
            sub._push(event)

    def close(self, error: BaseException | None = None) -> None:
        """End every subscription: after their buffered events, iteration stops or raises."""
        if self._end is not None:
            return
        self._end = _End(error)
        subs = list(self._subs)
        self._subs = weakref.WeakSet()
        for sub in subs:
            sub._finish(error)

    @property
    def subscribers(self) -> int:
        """Live subscriptions."""
        return len(self._subs)
