"""The one way a waiting call of aiocoord ends when its ``timeout=`` passes:
:class:`aiocoord.TimeoutError`, naming what did not happen."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from aiocoord.errors import TimeoutError as CoordTimeoutError

__all__ = ["timed_out", "within"]

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
        return await asyncio.wait_for(aw, timeout)
    except asyncio.TimeoutError:
        raise timed_out(what, timeout) from None
