"""Futures the library settles for callers that may have left: one way to mark an exception
seen, so that asyncio does not log "Future exception was never retrieved" for a waiter that
already moved on (a timed-out acquire, a cancelled read)."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["retrieve"]


def retrieve(fut: asyncio.Future[Any]) -> None:
    """Mark a future's exception as retrieved (a done-callback for futures nobody may await)."""
    if not fut.cancelled():
        fut.exception()
