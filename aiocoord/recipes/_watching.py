"""Waiting for watches within a deadline: a watch-setting call whose result races the
deadline never leaks its watch, and a wait for the first of several watches withdraws them all.
Both raise :class:`~aiocoord._deadline.Expired` when the deadline passes (see
:mod:`aiocoord._deadline` for the one convention)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from aiocoord._deadline import Deadline, Expired, time_left
from aiocoord.client import Watch

__all__ = ["call_with_watch", "wait_watches"]

T = TypeVar("T")


def _watches_in(result: Any) -> list[Watch]:
    if isinstance(result, Watch):
        return [result]
    if isinstance(result, tuple):
        return [item for item in result if isinstance(item, Watch)]
    return []


async def call_with_watch(coro: Coroutine[Any, Any, T], deadline: Deadline) -> T:
    """Await a client call that sets a watch, at most until ``deadline`` (then
    :class:`~aiocoord._deadline.Expired`).

    A call can take long when it waits for a reconnect. Unlike ``asyncio.wait_for``, this
    never drops a result that races the deadline with its watch still armed: a call that
    completes anyway has its watch cancelled before Expired is raised.
    """
    if deadline is None:
        return await coro
    try:
        left = time_left(deadline)
    except Expired:
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
        raise Expired()
    return task.result()


async def _discard(task: asyncio.Future[Any]) -> None:
    """Cancel a call that is no longer wanted; if it completed anyway, cancel its watch."""
    task.cancel()
    await asyncio.wait((task,))
    if not task.cancelled() and task.exception() is None:
        for watch in _watches_in(task.result()):
            watch.cancel()


async def wait_watches(watches: Sequence[Watch], deadline: Deadline) -> None:
    """Wait until one of ``watches`` fires (Expired after ``deadline``); every one is
    cancelled afterwards (a no-op for those that fired). A watch that failed (session
    expired, client closed) raises its error."""
    waiters = [asyncio.ensure_future(w.wait()) for w in watches]
    try:
        done, _ = await asyncio.wait(
            waiters, timeout=time_left(deadline), return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            raise Expired()
        for fut in done:
            fut.result()
    finally:
        for fut in waiters:
            fut.cancel()
        for w in watches:
            w.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
