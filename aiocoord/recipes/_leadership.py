"""What leader latches and elections share: Curator's node names, the data they report,
and the error of a lost term."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

from aiocoord.errors import LeadershipLostError
from aiocoord.recipes._args import check_identifier

__all__ = [
    "ELECTION_NAME",
    "LATCH_NAME",
    "LeadershipChange",
    "LeadershipLostError",
    "LeadershipTerm",
    "check_leader_identifier",
]

#: Curator's LeaderLatch node name (before the sequence number).
LATCH_NAME = "latch-"
#: Curator's LeaderSelector node name (its InterProcessMutex's).
ELECTION_NAME = "lock-"


@dataclass(frozen=True, slots=True)
class LeadershipTerm:
    """One term of leadership of one contender."""

    #: the contender's identifier
    identifier: str
    #: the contender's node
    node_path: str
    #: the node's creation zxid: larger for every later term of the same election
    fencing_token: int
    #: the session that holds the node
    session_id: int
    #: ``time.monotonic()`` when this process learnt it leads
    started: float


@dataclass(frozen=True, slots=True)
class LeadershipChange:
    """A change of a :class:`LeaderLatch`'s leadership (one item of its change stream).

    ``is_leader`` is the new state, ``term`` the term that began (or ended), ``reason`` why
    a term ended: ``"lost"``, ``"suspended"``, ``"closed"`` (the client), ``"deleted"``
    (the node) or ``"left"`` (the latch was closed). ``resynced`` marks the one change a
    slow reader gets in place of those it missed: it gives the state now.
    """

    #: whether the latch leads after this change
    is_leader: bool
    #: the term that began (or ended); None only in a ``resynced`` change while the latch
    #: does not lead
    term: LeadershipTerm | None
    #: why a term ended (``"lost"``, ``"suspended"``, ``"closed"``, ``"deleted"`` or
    #: ``"left"``); None when one began, and in a ``resynced`` change
    reason: str | None = None
    #: True for the one change a slow reader gets in place of those it missed (the state
    #: now)
    resynced: bool = False


def check_leader_identifier(identifier: Any) -> str:
    """``identifier``, or ``host:pid`` for None; InvalidTypeError if it is not a str,
    BadArgumentsError if it has no UTF-8 form (see check_identifier)."""
    if identifier is None:
        return f"{socket.gethostname()}:{os.getpid()}"
    checked = check_identifier(identifier)
    assert checked is not None
    return checked
