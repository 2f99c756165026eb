"""Futures the library settles for callers that may have left: one way to mark an exception
seen, so that asyncio does not log "Future exception was never retrieved" for a waiter that
already moved on (a timed-out acquire, a cancelled read)."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["fail", "retrieve"]


def retrieve(fut: asyncio.Future[Any]) -> None:
    """Mark a future's exception as retrieved (a done-callback for futures nobody may await)."""
    if not fut.cancelled():
        fut.exception()


def fail(fut: asyncio.Future[Any], exc: BaseException) -> None:
    """Fail ``fut`` with ``exc``, marked as retrieved: for a future nobody may await that is
    failed only here (cheaper than a :func:`retrieve` done-callback, a loop callback on every
    future, failed or not)."""
    fut.set_exception(exc)
    fut.exception()
