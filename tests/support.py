"""Helpers shared by the test layers (``pythonpath = ["tests"]`` makes this ``import support``).

Only what more than one test module needs lives here: waiting for server-side conditions that
have no local event, and the grant log that referees exclusive holdings.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    """Wait until ``check()`` is true (re-checked every 10 ms), or fail after ``timeout``.

    For conditions on the server that no watch of the test reports (another session's nodes,
    the server's watch table); anything the client itself announces is awaited directly.
    """

    async def poll() -> None:
        while not await check():  # noqa: ASYNC110 - server state has no local event
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


@dataclass
class Grant:
    """One holding of an exclusive resource: who, with which fencing token, from when to when
    (``end`` None while it lasts; it ends at release or when the holder is told of a loss)."""

    holder: str
    token: int
    start: float
    end: float | None = None


class GrantLog:
    """Records every grant of one exclusive lock, from every client, and referees them: no two
    holdings overlap in time, and fencing tokens increase strictly in grant order."""

    def __init__(self) -> None:
        self.grants: list[Grant] = []

    def enter(self, holder: str, token: int | None) -> Grant:
        """``holder`` was granted the lock with fencing ``token``."""
        assert token is not None, f"{holder} holds with no fencing token"
        grant = Grant(holder, token, time.monotonic())
        self.grants.append(grant)
        return grant

    def exit(self, grant: Grant) -> None:
        """The holding ended (released, or its holder was told it was lost)."""
        if grant.end is None:
            grant.end = time.monotonic()

    def violations(self) -> list[str]:
        """Every overlap between two holdings and every fencing token that did not grow."""
        found: list[str] = []
        now = time.monotonic()
        for i, a in enumerate(self.grants):
            for b in self.grants[i + 1 :]:
                a_end = a.end if a.end is not None else now
                b_end = b.end if b.end is not None else now
                overlap = min(a_end, b_end) - max(a.start, b.start)
                if overlap > 0:
                    found.append(
                        f"{a.holder} (token {a.token}) and {b.holder} (token {b.token}) "
                        f"held together for {overlap:.3f} s"
                    )
        for prev, cur in zip(self.grants, self.grants[1:], strict=False):
            if cur.token <= prev.token:
                found.append(
                    f"{cur.holder} was granted token {cur.token} after {prev.holder}'s {prev.token}"
                )
        return found
