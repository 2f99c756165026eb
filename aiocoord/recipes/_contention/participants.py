"""Who is in a lock-like recipe's queue: one record for every recipe that lists its
contenders (``Lock.contenders()``, ``Election.contenders()``, ``LeaderLatch.participants()``,
``Semaphore.participants()``, the read and write locks')."""

from __future__ import annotations

from dataclasses import dataclass

from aiocoord.recipes._contention.kernel import SequentialQueue

__all__ = ["Participant", "queue_participants"]


@dataclass(frozen=True, slots=True)
class Participant:
    """A contender of a lock, read-write lock, semaphore, leader latch or election, as its
    node says: ``identifier`` (the node's data: the ``identifier=`` its recipe was given),
    ``holds`` (it holds the lock or a lease, or leads; for a listing taken while a grant is
    under way, "nothing in the queue keeps it waiting") and ``node_name``."""

    #: the node's data: the ``identifier=`` its recipe was given (or its default)
    identifier: str
    #: it holds the lock or a lease, or leads (for a listing taken while a grant is under
    #: way: nothing in the queue keeps it waiting)
    holds: bool
    #: the name of its node (no path), as ``_c_<uuid>-lock-0000000042``
    node_name: str

    @property
    def is_leader(self) -> bool:
        """``holds``, by the name Curator's ``Participant`` gives it (latches, elections)."""
        return self.holds


async def queue_participants(queue: SequentialQueue) -> list[Participant]:
    """The contenders of ``queue`` whose nodes carry its ``lock_name``, in queue order.

    Whether one holds is what the queue's driver decides from every node ahead of it (of
    whatever name: a reader is held up by the writers ahead, not by the readers), so
    ``holds`` means the same for every recipe. Nodes that vanish meanwhile are left out.
    """
    driver = queue.driver
    out: list[Participant] = []
    ahead: list[str] = []
    for name, data in await queue.participants():
        if queue.lock_name in name:
            through = driver.blocker(ahead) is None
            out.append(Participant(data.decode("utf-8", "replace"), through, name))
        if driver.relevant(name):
            ahead.append(name)
    return out
