"""The one deadline convention every waiting call uses (:mod:`aiocoord._deadline`): a timeout
ends a wait, a cancellation is never lost, and the caller sees aiocoord.TimeoutError naming
what did not happen, converted once at the public edge."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import aiocoord
from aiocoord._deadline import (
    Expired,
    bounded,
    deadline_after,
    expiring,
    left_or_zero,
    result_by,
    time_left,
    within,
)


async def _within(fut: asyncio.Future[int]) -> int:
    return await within(fut, 10, "the answer")


async def _bounded(fut: asyncio.Future[int]) -> int:
    return await bounded(fut, asyncio.get_running_loop().time() + 10)


WAITS: list[Callable[[asyncio.Future[int]], Awaitable[int]]] = [_within, _bounded]


@pytest.mark.parametrize("wait", WAITS, ids=["within", "bounded"])
async def test_a_cancellation_in_the_turn_the_result_came_goes_on(
    wait: Callable[[asyncio.Future[int]], Awaitable[Any]],
) -> None:
    # asyncio.wait_for before Python 3.12 returns the result here and drops the cancellation
    # (CPython gh-86296): a recipe task cancelled by close() at that moment carried on, and
    # close() waited for it for ever (seen with SetPartitioner).
    fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(wait(fut))
    await asyncio.sleep(0)  # the task is waiting now
    fut.set_result(42)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("wait", WAITS, ids=["within", "bounded"])
async def test_the_result_comes_back_and_a_cancellation_cancels_what_was_awaited(
    wait: Callable[[asyncio.Future[int]], Awaitable[Any]],
) -> None:
    fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(wait(fut))
    await asyncio.sleep(0)
    fut.set_result(7)
    assert await task == 7
    other: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(wait(other))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert other.cancelled()


async def test_a_timeout_cancels_what_was_awaited_and_raises() -> None:
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[int] = loop.create_future()
    with pytest.raises(aiocoord.TimeoutError, match=r"the answer within 0\.01 s"):
        await within(fut, 0.01, "the answer")
    assert fut.cancelled()
    fut = loop.create_future()
    with pytest.raises(Expired):
        await bounded(fut, loop.time() + 0.01)
    assert fut.cancelled()


async def test_one_deadline_bounds_every_step_and_expires_once_at_the_edge() -> None:
    deadline = deadline_after(0.05)
    assert deadline is not None
    left = time_left(deadline)
    assert left is not None and 0 < left <= 0.05
    assert deadline_after(None) is None and time_left(None) is None
    assert left_or_zero(None) is None
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[int] = loop.create_future()

    async def take() -> None:
        with expiring("item not taken from /q", 0.05):
            await result_by(pending, deadline)  # the first step takes the whole deadline
            await bounded(asyncio.sleep(1), deadline)  # never reached

    with pytest.raises(aiocoord.TimeoutError, match=r"^item not taken from /q within 0\.05 s$"):
        await take()
    assert not pending.cancelled()  # result_by never cancels what it waits for
    assert left_or_zero(deadline) == 0.0
    with pytest.raises(Expired):
        time_left(deadline)
    # A coroutine handed to an expired deadline is closed, not left un-awaited.
    never = asyncio.sleep(1)
    with pytest.raises(Expired):
        await bounded(never, deadline)
    assert never.cr_frame is None
