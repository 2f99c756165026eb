"""Deadlines: the one convention every waiting call of aiocoord follows, and the one place a
passed deadline becomes :class:`aiocoord.TimeoutError`.

A public call takes ``timeout=`` (seconds, None: no limit) and turns it into a
:data:`Deadline`, a point in loop time, with :func:`deadline_after`; everything it awaits on
its way is bounded by that one deadline (:func:`bounded`, :func:`result_by`, :func:`time_left`)
and raises the private :class:`Expired` once it passes, so that a loop can tell its caller's
deadline from a ``TimeoutError`` of anything it awaits. At the public edge, and only there,
:func:`expiring` (or :func:`within`, for a single await) turns :class:`Expired` into
:class:`aiocoord.TimeoutError` naming what did not happen (:func:`timed_out`).

Not anyio: bounding an await with no deadline, the hot path of every recipe, is a plain
``await`` here; and a timed wait costs a round trip or more, beside which anyio's cheaper
cancel scope would not show, while it would be the package's first runtime dependency.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Iterator
from typing import TypeAlias, TypeVar

from aiocoord.errors import TimeoutError as CoordTimeoutError

__all__ = [
    "Deadline",
    "Expired",
    "bounded",
    "deadline_after",
    "expiring",
    "left_or_zero",
    "result_by",
    "time_left",
    "timed_out",
    "wait_at_most",
    "within",
]

T = TypeVar("T")

#: A point in loop time by which a wait must end; None: none.
Deadline: TypeAlias = "float | None"


class Expired(Exception):
    """The caller's deadline passed (turned into :class:`aiocoord.TimeoutError` at the public
    edge, by :func:`expiring`)."""


def deadline_after(timeout: float | None) -> Deadline:
    """The deadline ``timeout`` seconds from now (None: none)."""
    return None if timeout is None else asyncio.get_running_loop().time() + timeout


def time_left(deadline: Deadline) -> float | None:
    """Seconds left before ``deadline`` (None: no deadline); :class:`Expired` if it passed."""
    if deadline is None:
        return None
    left = deadline - asyncio.get_running_loop().time()
    if left <= 0:
        raise Expired()
    return left


def left_or_zero(deadline: Deadline) -> float | None:
    """Seconds left before ``deadline``, 0 once it has passed (None: no deadline): the
    ``timeout=`` to hand to an inner call that reports a passed deadline its own way."""
    if deadline is None:
        return None
    return max(deadline - asyncio.get_running_loop().time(), 0.0)


async def bounded(aw: Awaitable[T], deadline: Deadline) -> T:
    """Await ``aw`` before ``deadline`` (:class:`Expired` after it; ``aw`` is cancelled)."""
    if deadline is None:
        return await aw
    try:
        left = time_left(deadline)
    except Expired:
        if asyncio.iscoroutine(aw):
            aw.close()
        raise
    assert left is not None  # a deadline was given
    try:
        return await wait_at_most(aw, left)
    except TimeoutError:
        raise Expired() from None


async def result_by(fut: asyncio.Future[T], deadline: Deadline) -> T:
    """The future's result, waiting at most until ``deadline``; never cancels ``fut``."""
    if not fut.done():
        await asyncio.wait((fut,), timeout=time_left(deadline))
        if not fut.done():
            raise Expired()
    return fut.result()


def timed_out(what: str, timeout: float | None) -> CoordTimeoutError:
    """The :class:`aiocoord.TimeoutError` a waiting call raises when its ``timeout`` passed:
    ``what`` is what did not happen (``"lock /a not acquired"``)."""
    return CoordTimeoutError(f"{what} within {timeout:g} s" if timeout is not None else what)


@contextlib.contextmanager
def expiring(what: str, timeout: float | None) -> Iterator[None]:
    """The public edge: :class:`Expired` raised inside becomes :class:`aiocoord.TimeoutError`
    naming ``what`` (see :func:`timed_out`)."""
    try:
        yield
    except Expired:
        raise timed_out(what, timeout) from None


async def within(aw: Awaitable[T], timeout: float | None, what: str) -> T:
    """Await ``aw`` for at most ``timeout`` seconds (None: for as long as it takes); after
    that, :class:`aiocoord.TimeoutError` naming ``what``. ``aw`` is cancelled then."""
    if timeout is None:
        return await aw
    try:
        return await wait_at_most(aw, timeout)
    except TimeoutError:
        raise timed_out(what, timeout) from None


async def wait_at_most(aw: Awaitable[T], timeout: float) -> T:
    """Await ``aw`` (in a task of its own) for at most ``timeout`` seconds, else cancel it,
    let it finish, and raise :class:`TimeoutError`. A cancellation of the caller
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
            raise TimeoutError()
    return fut.result()
