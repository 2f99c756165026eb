"""Drivers: what each lock-like recipe makes of the nodes ahead of its own (Curator's
``LockInternalsDriver``). The queue (:mod:`aiocoord.recipes._contention.kernel`) does the waiting;
a driver only decides, from the relevant nodes ahead, whether a node is through or which node to
wait for.

**Monotone.** Every decision must be monotone: a node fewer ahead never turns "through" into
"blocked". The queue relies on it to decide on a superset of the live nodes (a listing read
earlier, minus the nodes it has seen go), which is what lets a woken waiter decide without a
fresh listing: sequence numbers only grow, so nothing can enter the queue ahead of a node that
already exists, and the first listing a waiter read holds every node that can ever be ahead
of it. The one exception is Curator's read-lock downgrade node, which reuses its write node's
sequence number: :meth:`Driver.needs_listing_after` lets a driver ask for a fresh listing
when a node whose going may let such a node in is gone.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Driver", "LeaseDriver"]


class Driver:
    """Decides from the nodes ahead of ours whether we are through (Curator's
    ``LockInternalsDriver``). Subclass and override :meth:`blocker`.

    Decisions must be *monotone*: removing a node from ``ahead`` never turns "through" into
    "blocked". The queue relies on it to decide on a superset of the live nodes.
    """

    #: How many of the nearest relevant nodes ahead :meth:`blocker` looks at, at most (None:
    #: all of them); a waiter keeps at least that many in view.
    window: int | None = None
    #: Whether a grant means no node at all was ahead (a mutex, a writer): then, once a granted
    #: node goes, nothing ahead of it can block anyone behind it.
    exclusive: bool = False

    def relevant(self, name: str) -> bool:
        """Whether a node ahead of ours can block us at all (others are ignored)."""
        return True

    def blocker(self, ahead: Sequence[str]) -> str | None:
        """The node to wait for, or None if we are through. ``ahead`` holds the relevant
        nodes ahead of ours, oldest first."""
        raise NotImplementedError

    def needs_listing_after(self, gone: str) -> bool:
        """Whether the disappearance of ``gone`` may have let a node in ahead of ours (only
        Curator's read-lock downgrade does that), so that a fresh listing must decide."""
        return False


class LeaseDriver(Driver):
    """Through while fewer than ``max_leases`` nodes are ahead (1: a mutex). Waits for the
    node ``max_leases`` places ahead, as Curator's ``StandardLockInternalsDriver`` does."""

    def __init__(self, max_leases: int = 1) -> None:
        self.max_leases = max_leases
        self.window = max_leases
        self.exclusive = max_leases == 1

    def blocker(self, ahead: Sequence[str]) -> str | None:
        n = len(ahead)
        return None if n < self.max_leases else ahead[n - self.max_leases]
