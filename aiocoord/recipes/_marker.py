"""Transactions that take effect exactly once, even when their reply is lost.

A write whose reply is lost to a connection loss may or may not have been applied, and for
some writes nothing on the server tells which: a counter set from 41 to 42 at version 7
looks the same whoever made it, and a claimed queue item is gone whoever deleted it. Sending
it again risks doing it twice (the increment counted twice), not sending it risks doing it
never (the item lost).

:class:`MarkedCommit` makes the outcome observable: every transaction it commits also creates
an ephemeral *marker* node, ``<parent>/_c_<uuid>-op``, unique to that attempt. The
transaction is atomic, so the marker exists if and only if the ops were applied. After a
connection loss, once reconnected to the same session, the client creates the marker itself
(a *fence*, with data ``fence``): if that fails because the marker exists, the transaction was
applied; if it succeeds, the transaction was not, and will not be, even if it is still on its
way to the server (a request may arrive after its connection was given up): its create of the
marker would now fail, and with it the whole transaction. Then it is safe to send it again. A
look (``sync`` and ``exists``) would not do: it cannot see a transaction still on its way.

**How long a fence stays.** As long as the lost transaction could still arrive, and no longer
(one fence per lost reply would otherwise pile up for the life of the session). It was written
before its connection was given up, so it can only arrive on that connection, already in
flight: ZooKeeper applies nothing from a connection it has closed, closes one it has heard
nothing on for a session timeout, and refuses a write that comes through another server than
the one the session now uses (the session moved). So the fence is deleted
:data:`FENCE_LIFETIME` session timeouts after it was made (by a delete of the client's, in the
background, while the session lasts); a transaction delayed in the network for longer than that
could arrive after it, which is the bound, stated. A fence whose own reply was lost is found by
the check's next try (it holds ``fence``) and deleted the same way.

Markers cost no extra round trip: the next transaction through the same object deletes the
markers of earlier ones in the same multi, and :meth:`MarkedCommit.close` deletes the rest. A
fence is the one marker that must stay a while, so ``close()`` waits until the last fence's
lifetime is over (at once unless a reply was lost less than :data:`FENCE_LIFETIME` session
timeouts ago), then deletes it with the rest: no marker outlives ``close()``. Being ephemeral, a
marker never outlives its session, even if the process dies.

The one case left unknowable is a session that expires between the lost reply and the check:
the marker is gone with the session either way. That is reported as ConnectionLossError
(whose meaning is exactly "may or may not have been applied").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from aiocoord._client import door
from aiocoord._paths import join, protected_prefix
from aiocoord._wire.data import ACL
from aiocoord.client import Client, State
from aiocoord.errors import (
    ConnectionLossError,
    CoordinationError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    TransactionFailedError,
)
from aiocoord.transaction import OpResult, Transaction

__all__ = ["MarkedCommit"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: How many earlier markers one transaction deletes on its way.
_PIGGYBACK = 8
#: The name of a marker after its protected prefix.
MARKER_NAME = "op"
#: The data of a marker made by a check, to fence off the transaction it stands for.
FENCE = b"fence"
#: How many (negotiated) session timeouts a fence stays (see the module docstring).
FENCE_LIFETIME = 2


class _Unapplied(Exception):
    """The lost transaction was not applied: it is safe to send it again."""


class MarkedCommit:
    """Commits transactions exactly once under ``parent``; see the module docstring.

    Any number of tasks may share one object. Each commit costs one round trip when nothing goes
    wrong, plus a ``sync`` and an ``exists`` after a connection loss. ``acl`` is the markers' ACL
    (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE); ``marker_name`` ends their names.
    """

    def __init__(
        self,
        client: Client,
        parent: str,
        *,
        acl: Sequence[ACL] | None = None,
        marker_name: str = MARKER_NAME,
    ) -> None:
        self.client = client
        self.parent = parent
        self.acl = acl
        # What follows the protected prefix in a marker's name: a recipe whose readers sort
        # the children of ``parent`` by name (Curator's delay queue) picks one they put last.
        self.marker_name = marker_name
        # Markers of applied transactions, to delete; they belong to `_generation`'s session.
        self._pending: list[str] = []
        self._generation = client.generation
        # Fences made by checks, until deleted: path -> (its session's generation, the timer
        # that deletes it when its lifetime is over; close() waits for the last one).
        self._fences: dict[str, tuple[int, asyncio.TimerHandle]] = {}

    def _take_pending(self) -> list[str]:
        if self._generation != self.client.generation:
            # The session that owned them is gone, and its ephemeral markers with it.
            self._pending.clear()
            self._generation = self.client.generation
        taken, self._pending = self._pending[:_PIGGYBACK], self._pending[_PIGGYBACK:]
        return taken

    def _give_back(self, markers: list[str], generation: int) -> None:
        if generation == self.client.generation:
            self._pending.extend(markers)

    async def commit(self, build: Callable[[Transaction], object]) -> list[OpResult] | None:
        """Apply the ops ``build`` adds to a fresh transaction, exactly once.

        Returns the results of those ops, or None if they were applied but the reply was
        lost (so the results are unknown). Raises TransactionFailedError if one of them
        failed (nothing was applied); ConnectionLossError only in the unknowable case of the
        module docstring; ClientClosedError once the client is closed. Cancelling while the
        request is in flight leaves its outcome unknown, as for any write.
        """
        client = self.client
        while True:
            txn = client.transaction()
            build(txn)
            n_ops = len(txn)
            marker = join(self.parent, protected_prefix() + self.marker_name)
            txn.create(marker, ephemeral=True, acl=self.acl)
            stale = self._take_pending()
            for path in stale:
                txn.delete(path)
            generation = client.generation
            try:
                results = await txn.commit()
            except TransactionFailedError as exc:
                if exc.failed_index > n_ops and isinstance(exc.cause, NoNodeError):
                    # An old marker someone else removed (e.g. a recursive delete): forget it
                    # and send the ops again; nothing was applied.
                    gone = stale[exc.failed_index - n_ops - 1]
                    self._give_back([m for m in stale if m != gone], generation)
                    continue
                self._give_back(stale, generation)
                raise
            except SessionExpiredError:
                # Never sent: the session was lost while the request waited to be written.
                if not door.renews_sessions(client):
                    raise
                continue
            except ConnectionLossError:
                try:
                    await self._check(marker, generation)
                except _Unapplied:
                    self._give_back(stale, generation)
                    continue
                self._give_back([marker], generation)
                return None
            except BaseException:
                # Cancelled or closed: the markers taken are left to their session.
                raise
            self._give_back([marker], generation)
            return results[:n_ops]

    async def _check(self, marker: str, generation: int) -> None:
        """Return if the transaction that created ``marker`` was applied, else raise
        _Unapplied, after which it never will be (see the module docstring)."""
        client = self.client
        while True:
            await client.wait_for(State.CONNECTED)
            if client.generation != generation:
                raise ConnectionLossError(
                    "a transaction's reply was lost and the session expired before it could "
                    "be checked: it may or may not have been applied",
                    path=marker,
                    op="transaction",
                )
            pinned = client.bound(generation)
            try:
                # A fence, not a look: a request can reach the server after its connection
                # was given up (delayed in the network, or in a proxy), so "the marker is not
                # there yet" proves nothing. Made here first, the marker makes that late
                # transaction fail on its own create of it (all or nothing): never applied.
                await pinned.create(marker, FENCE, ephemeral=True, acl=self.acl)
            except NodeExistsError:
                try:
                    data, _ = await pinned.get(marker)
                except (ConnectionLossError, SessionExpiredError):
                    continue
                except NoNodeError:
                    raise _Unapplied() from None  # someone removed it (a recursive delete)
                if data == FENCE:  # ours, from a try whose reply was lost: a fence all the same
                    self._retire_later(marker, generation)
                    raise _Unapplied() from None
                return  # made by the transaction: applied
            except (ConnectionLossError, SessionExpiredError):
                continue  # the next try tells our fence from the transaction's marker
            except NoNodeError:
                raise _Unapplied() from None  # the parent is gone: neither can apply now
            # The transaction may still arrive for a while, and must find the fence then.
            self._retire_later(marker, generation)
            raise _Unapplied()

    def _retire_later(self, fence: str, generation: int) -> None:
        """Delete ``fence`` once the transaction it stands for can no longer arrive."""
        lifetime = FENCE_LIFETIME * door.negotiated_timeout(self.client)
        timer = asyncio.get_running_loop().call_later(lifetime, self._retire, fence)
        if fence in self._fences:
            self._fences[fence][1].cancel()
        self._fences[fence] = (generation, timer)

    def _retire(self, fence: str) -> None:
        generation, _ = self._fences.pop(fence)
        client = self.client
        if client.generation == generation and not client.closed:
            client.delete_for_sure(fence)  # a fence of an ended session went with it

    async def close(self) -> None:
        """Delete the markers still pending and the fences, once their lifetime is over (they
        would vanish with the session anyway). Waits at most :data:`FENCE_LIFETIME` session
        timeouts, only after a lost reply; cancelled, it leaves each fence to be deleted when
        its lifetime ends."""
        client = self.client
        loop = asyncio.get_running_loop()
        while not client.closed:
            ends = [t.when() for g, t in self._fences.values() if g == client.generation]
            if not ends or max(ends) <= loop.time():
                break
            # Not a settling sleep: until then the lost transaction could still arrive, and the
            # fence must be there to make it fail.
            await asyncio.sleep(max(ends) - loop.time())
        fences = [f for f, (g, _) in self._fences.items() if g == client.generation]
        for _, timer in self._fences.values():
            timer.cancel()
        self._fences.clear()
        pending, self._pending = self._pending, []
        if self._generation == client.generation:
            fences += pending
        if client.closed or not fences:
            return
        # Each delete is seen through past a lost reply (the client follows it); the first
        # answers are awaited, so that what answered is gone when close() returns. Shielded:
        # a cancelled close() must not cancel what the client follows.
        answers = [client.delete_for_sure(path) for path in fences]
        results = await asyncio.gather(*map(asyncio.shield, answers), return_exceptions=True)
        for path, result in zip(fences, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                continue  # the client closed meanwhile: the session's end removed it
            if isinstance(result, BaseException) and not isinstance(result, CoordinationError):
                raise result  # a bug
            if isinstance(result, CoordinationError):
                log.debug("marker %s: its delete goes on after %r", path, result)
