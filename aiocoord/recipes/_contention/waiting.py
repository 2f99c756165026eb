"""Deadlines for waiting recipes: the one place their arithmetic lives.

A deadline is a point in loop time (None: none). Two conventions meet here and are kept apart
on purpose: :func:`time_left`, :func:`bounded` and :func:`result_by` raise the private
:class:`TimedOut`, so that the sequential-node queue can tell its caller's deadline from a
``TimeoutError`` of anything it awaits; :func:`remaining`, :func:`call_with_watch` and
:func:`wait_watches` raise :class:`aiocoord.TimeoutError` (an ``asyncio.TimeoutError`` too)
for the recipes that pass it on. Bounded
watch-setting calls and waiting for the first of several watches never leak a watch when the
deadline passes. :func:`wait_gone` is the queue's wait for the node ahead."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from aiocoord._deadline import wait_at_most
from aiocoord.client import EventType, Watch, WatchEvent
from aiocoord.errors import TimeoutError as CoordTimeoutError

if TYPE_CHECKING:  # _listing imports this module
    from aiocoord.recipes._contention.listing import QueueState

__all__ = [
    "TimedOut",
    "bounded",
    "call_with_watch",
    "deadline_after",
    "left_or_zero",
    "remaining",
    "result_by",
    "time_left",
    "wait_gone",
    "wait_watches",
]

T = TypeVar("T")


def deadline_after(timeout: float | None) -> float | None:
    """The loop time ``timeout`` seconds from now (None: no deadline)."""
    return None if timeout is None else asyncio.get_running_loop().time() + timeout


def left_or_zero(deadline: float | None) -> float | None:
    """Seconds left before ``deadline``, 0 once it has passed (None: no deadline)."""
    if deadline is None:
        return None
    return max(deadline - asyncio.get_running_loop().time(), 0.0)


def remaining(deadline: float | None) -> float | None:
    """Seconds left before ``deadline``; TimeoutError if it has passed."""
    if deadline is None:
        return None
    left = deadline - asyncio.get_running_loop().time()
    if left <= 0:
        raise CoordTimeoutError()
    return left


class TimedOut(Exception):
    """The caller's deadline passed."""


def time_left(deadline: float | None) -> float | None:
    """Seconds left before ``deadline``; TimedOut if it has passed."""
    if deadline is None:
        return None
    left = deadline - asyncio.get_running_loop().time()
    if left <= 0:
        raise TimedOut()
    return left


async def bounded(aw: Awaitable[T], deadline: float | None) -> T:
    """Await ``aw`` before ``deadline`` (TimedOut after it)."""
    if deadline is None:
        return await aw
    try:
        left = time_left(deadline)
    except TimedOut:
        if asyncio.iscoroutine(aw):
            aw.close()
        raise
    assert left is not None  # a deadline was given
    try:
        return await wait_at_most(aw, left)
    except asyncio.TimeoutError:
        raise TimedOut() from None


async def result_by(fut: asyncio.Future[T], deadline: float | None) -> T:
    """The future's result, waiting at most until ``deadline``; never cancels ``fut``."""
    if not fut.done():
        await asyncio.wait((fut,), timeout=time_left(deadline))
        if not fut.done():
            raise TimedOut()
    return fut.result()


def _watches_in(result: Any) -> list[Watch]:
    if isinstance(result, Watch):
        return [result]
    if isinstance(result, tuple):
        return [item for item in result if isinstance(item, Watch)]
    return []


async def call_with_watch(coro: Coroutine[Any, Any, T], deadline: float | None) -> T:
    """Await a client call that sets a watch, at most until ``deadline`` (TimeoutError).

    A call can take long when it waits for a reconnect. Unlike ``asyncio.wait_for``, this
    never drops a result that races the deadline with its watch still armed: a call that
    completes anyway has its watch cancelled before TimeoutError is raised.
    """
    if deadline is None:
        return await coro
    try:
        left = remaining(deadline)
    except asyncio.TimeoutError:
        coro.close()
        raise
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait((task,), timeout=left)
    except BaseException:
        await _discard(task)
        raise
    if not done:
        await _discard(task)
        raise CoordTimeoutError()
    return task.result()


async def _discard(task: asyncio.Future[Any]) -> None:
    """Cancel a call that is no longer wanted; if it completed anyway, cancel its watch."""
    task.cancel()
    await asyncio.wait((task,))
    if not task.cancelled() and task.exception() is None:
        for watch in _watches_in(task.result()):
            watch.cancel()


async def wait_watches(watches: Sequence[Watch], deadline: float | None) -> None:
    """Wait until one of ``watches`` fires (TimeoutError after ``deadline``); every one is
    cancelled afterwards (a no-op for those that fired). A watch that failed (session
    expired, client closed) raises its error."""
    waiters = [asyncio.ensure_future(w.wait()) for w in watches]
    try:
        done, _ = await asyncio.wait(
            waiters, timeout=remaining(deadline), return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            raise CoordTimeoutError()
        for fut in done:
            fut.result()
    finally:
        for fut in waiters:
            fut.cancel()
        for w in watches:
            w.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)


async def wait_gone(
    watch: Watch,
    blocker: str,
    state: QueueState,
    deadline: float | None,
    own: Watch | None,
) -> bool:
    """Wait until ``blocker`` goes: True once it has (its deletion event came, or this
    client released it), False on another event (a data change: the node is still there,
    or the watch on our own node ``own`` fired: the caller looks at it).

    A node released by this client wakes its waiter here at once, before the server has
    deleted it: the hand-over inside one client costs no round trip. The watch is then
    left armed (the deletion on its way fires and clears it, sparing a request to remove
    it); in every other case it is fired or removed before returning.
    """
    local = state.when_gone(blocker)
    try:
        if local.done():
            return True
        if own is None and deadline is None:
            # The common wait: the task waits on the watch itself, so the deletion event
            # wakes it in the next loop turn (a go-between future costs a turn more). The
            # local hand-over fires the watch (left armed on the server, see above).
            gone = WatchEvent(EventType.DELETED, watch.path)
            local.add_done_callback(lambda _: watch._fire(gone))
            event = await watch
            return local.done() or event.type is EventType.DELETED
        # One future that whichever comes first wakes (no task per thing awaited): the
        # watch, the local hand-over, or the watch on our own node. The watches keep the
        # callback after we return: it marks a late failure seen, and wakes nobody.
        wake = asyncio.get_running_loop().create_future()

        def poke(source: object) -> None:
            if isinstance(source, Watch):
                source.failed()  # retrieves a failure nobody may await any more
            if not wake.done():
                wake.set_result(None)

        watch.add_done_callback(poke)
        local.add_done_callback(poke)
        if own is not None:
            own.add_done_callback(poke)
        if deadline is None:
            await wake
        else:
            await asyncio.wait((wake,), timeout=time_left(deadline))
            if not wake.done():
                watch.cancel()
                raise TimedOut()
        if watch.done():
            event = await watch  # done: the event, or the watch's failure raised
            return bool(event.type is EventType.DELETED)
        if local.done():
            return True
        watch.cancel()  # our own node changed (or went): the caller decides again
        return False
    except BaseException:
        watch.cancel()  # cancelled, timed out or failed: remove the server watch
        raise
    finally:
        state.stop_waiting(blocker, local)
