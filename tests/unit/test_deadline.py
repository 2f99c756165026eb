"""The bounded waits every recipe uses: a timeout ends them, and a cancellation is never lost."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import aiocoord
from aiocoord._deadline import within
from aiocoord.recipes._contention.waiting import TimedOut, bounded


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
    with pytest.raises(TimedOut):
        await bounded(fut, loop.time() + 0.01)
    assert fut.cancelled()
