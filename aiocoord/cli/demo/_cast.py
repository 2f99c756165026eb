"""What the parts of ``python -m aiocoord demo`` share: its settings, its worker, its result,
and the bound on every wait (see :mod:`aiocoord.cli.demo`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

from aiocoord._deadline import within
from aiocoord.client import Client
from aiocoord.recipes.election import LeaderLatch
from aiocoord.recipes.lock import Lock
from aiocoord.recipes.nodes import GroupMember

__all__ = [
    "LEADER_PATH",
    "LEDGER_PATH",
    "LOCK_PATH",
    "MEMBERS_PATH",
    "PHASE_JOBS",
    "PHASE_SECONDS",
    "SESSION_TIMEOUT",
    "STEP_TIMEOUT",
    "DemoResult",
    "Worker",
    "bounded",
]

#: Long enough that a member's death (and a quorum re-election) never expires a session.
SESSION_TIMEOUT = 10.0
#: The demo's nodes, relative to its base path.
LOCK_PATH = "/work-lock"
LEADER_PATH = "/leader"
MEMBERS_PATH = "/members"
LEDGER_PATH = "/ledger"
#: How long the workers work before the failover and after it (and at least so many jobs, for
#: meaningful counts on a slow machine, waiting up to STEP_TIMEOUT for them).
PHASE_SECONDS, PHASE_JOBS = 5.0, 40
#: Bounds on each wait, so that a broken setup ends with a message instead of hanging.
STEP_TIMEOUT = 30.0

T = TypeVar("T")


@dataclass
class DemoResult:
    """What the demo measured and checked (``run`` prints it as the summary)."""

    jobs: int = 0
    ledger: int = -1
    acquisitions: int = 0
    max_holders: int = 0
    tokens_increasing: bool = True
    failover_seconds: float | None = None
    same_session: bool = False
    lock_held: bool = False
    leader_unchanged: bool = False
    cache_in_sync: bool = False
    sessions_kept: bool = False
    checks: dict[str, bool] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return bool(self.checks) and all(self.checks.values())


@dataclass(eq=False)
class Worker:
    """One worker: its own client (session), group membership, latch and lock."""

    name: str
    client: Client
    lock: Lock
    latch: LeaderLatch
    member: GroupMember
    jobs: int = 0
    activity: str = "starting"
    task: asyncio.Task[None] | None = None


async def bounded(aw: Awaitable[T], what: str, timeout: float = STEP_TIMEOUT) -> T:
    """Await one step of the demo, for at most ``timeout`` seconds (then
    :class:`aiocoord.TimeoutError` naming it)."""
    return await within(aw, timeout, f"demo: {what} did not happen")
