"""What :mod:`aiocoord.recipes.partitioner` shows besides the partitioner: its states, its
change record, its error, and the small helpers of its task."""

from __future__ import annotations

import asyncio
import enum
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiocoord.errors import PartitionFailedError

__all__ = [
    "PartitionChange",
    "PartitionFailedError",
    "PartitionFunc",
    "PartitionState",
    "default_identifier",
    "differs_from",
    "first_of",
    "identifier_of",
]

#: ``partition_func(identifier, members, items) -> this member's items``
PartitionFunc = Callable[[str, list[str], list[str]], Iterable[str]]


class PartitionState(enum.Enum):
    """Where a :class:`SetPartitioner` is in its cycle (kazoo's ``PartitionState``)."""

    #: waiting for the membership to settle, or taking the locks of its share
    ALLOCATING = "allocating"
    #: holds its share: iterate the partitioner for its items
    ACQUIRED = "acquired"
    #: the membership changed: stop using the items and call ``release_set()``
    RELEASE = "release"
    #: failed or closed for good; make a new partitioner
    FAILURE = "failure"


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """One state change of a :class:`SetPartitioner` (an item of its change stream).

    ``partition`` is its share at that moment (empty unless ACQUIRED or RELEASE), ``error``
    the failure with FAILURE. ``resynced`` marks the one change a slow reader gets in place
    of those it missed: it gives the state now.
    """

    #: the partitioner's state after the change
    state: PartitionState
    #: this member's items at that moment (empty unless ACQUIRED or RELEASE)
    partition: tuple[str, ...]
    #: the error that ended it (with FAILURE, whose ``__cause__`` says why), else None
    error: PartitionFailedError | None = None
    #: True for the one change a slow reader gets in place of those it missed (the state
    #: then); False for an ordinary change
    resynced: bool = False


def default_identifier() -> str:
    # kazoo's host-pid, plus a suffix that keeps two partitioners of one process apart.
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def identifier_of(member_name: str) -> str:
    """The identifier in a party node's name, ``<uuid hex>-<identifier>`` (kazoo's parse)."""
    return member_name[member_name.find("-") + 1 :]


def differs_from(names: frozenset[str]) -> Callable[[Mapping[str, Any]], bool]:
    """A membership predicate: true once the member names are no longer ``names``."""

    def differs(view: Mapping[str, Any]) -> bool:
        return frozenset(view) != names

    return differs


async def first_of(*waits: Awaitable[Any]) -> None:
    """Wait until the first of ``waits`` is done (its error raised); cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
