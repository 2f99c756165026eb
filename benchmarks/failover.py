"""W5 helpers shared by the peers: which ensemble member a client is on, and killing it."""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    """One ensemble member as the parent describes it to a W5 worker."""

    index: int
    port: int
    pid: int
    mode: str


def choose_member(members: list[Member], port: int, case: str) -> Member | None:
    """The member listening on ``port`` if its mode is ``case`` (follower/leader), else None."""
    for member in members:
        if member.port == port:
            return member if member.mode == case else None
    return None


def order_for(members: list[Member], case: str) -> list[Member]:
    """The members with one of mode ``case`` first: a client that tries hosts in order lands
    on it (the others try to, and retry when they land elsewhere)."""
    wanted = [m for m in members if m.mode == case][:1]
    return wanted + [m for m in members if m not in wanted]


def kill_member(member: Member) -> None:
    """SIGKILL the member's JVM, as a crash would. The JVM leads its own process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(member.pid, signal.SIGKILL)
