"""The one way a waiting call of aiocoord ends when its ``timeout=`` passes:
:class:`aiocoord.TimeoutError`, naming what did not happen."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from aiocoord.errors import TimeoutError as CoordTimeoutError

__all__ = ["timed_out", "wait_at_most", "within"]

T = TypeVar("T")


def timed_out(what: str, timeout: float | None) -> CoordTimeoutError:
    """The :class:`aiocoord.TimeoutError` a waiting call raises when its ``timeout`` passed:
    ``what`` is what did not happen (``"lock /a not acquired"``)."""
    return CoordTimeoutError(f"{what} within {timeout:g} s" if timeout is not None else what)


async def within(aw: Awaitable[T], timeout: float | None, what: str) -> T:
    """Await ``aw`` for at most ``timeout`` seconds (None: for as long as it takes); after
    that, :class:`aiocoord.TimeoutError` naming ``what``. ``aw`` is cancelled then."""
    if timeout is None:
        return await aw
    try:
        return await wait_at_most(aw, timeout)
    except asyncio.TimeoutError:
        raise timed_out(what, timeout) from None


async def wait_at_most(aw: Awaitable[T], timeout: float) -> T:
    """Await ``aw`` (in a task of its own) for at most ``timeout`` seconds, else cancel it,
    let it finish, and raise :class:`asyncio.TimeoutError`. A cancellation of the caller
    cancels ``aw`` too, and always goes on.

    Not ``asyncio.wait_for``: before Python 3.12, a caller cancelled in the loop turn in which
    ``aw`` completed gets ``aw``'s result and its cancellation is dropped (CPython gh-86296),
    so a task being cancelled (a recipe's ``close()``) would carry on, and whoever awaits it
    waits for ever.
    """
    fut = asyncio.ensure_future(aw)
    try:
        await asyncio.wait((fut,), timeout=timeout)
    except BaseException:
        fut.cancel()
        await asyncio.wait((fut,))
        raise
    if not fut.done():
        fut.cancel()
        await asyncio.wait((fut,))
        if fut.cancelled():
            raise asyncio.TimeoutError()
    return fut.result()
