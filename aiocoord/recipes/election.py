""":class:`Election`: run code only while leading (Curator's ``LeaderSelector``, whose
``InterProcessMutex`` layout it shares: ``<path>/_c_<uuid>-lock-<seq>``; Java selectors on the
same path take part in the same election). :class:`~aiocoord.recipes.latch.LeaderLatch` and the
data both report are re-exported here.

With ``layout="kazoo"`` the election is kazoo's ``Election``: a kazoo ``Lock`` whose nodes
(``<uuid hex>__lock__<seq>``) carry the contenders' identifiers, so kazoo and aiocoord
processes run one election and read the same ``contenders()``; its path is a persistent node
there, as kazoo makes it (see :mod:`aiocoord.recipes.lock`).

Claiming a term, the ways a term ends (``suspended_is_loss`` decides whether a lost connection
ends it; the default ends it, as Curator's standard policy) and the fencing tokens work as for
:mod:`aiocoord.recipes.latch`; a lost term cancels the body of ``async with
election.leadership():``, which then raises :class:`LeadershipLostError`.

**Task.** An election owns the task of :meth:`Election.start`. Cancelling it, or leaving the
body of ``async with election.leadership():``, leaves no node behind: it is deleted now, or
by a guaranteed delete once reconnected (:meth:`Client.wait_background`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any

from aiocoord._deadline import deadline_after, left_or_zero, timed_out
from aiocoord._validation import validate_flag, validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client, State
from aiocoord.errors import (
    BadArgumentsError,
    ConnectionLossError,
    CoordinationError,
    InvalidTypeError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._contention.contender import QueueNode
from aiocoord.recipes._contention.drivers import LeaseDriver
from aiocoord.recipes._contention.holding import Holding
from aiocoord.recipes._contention.kernel import SequentialQueue
from aiocoord.recipes._contention.naming import KAZOO_LOCK
from aiocoord.recipes._contention.participants import Participant, queue_participants
from aiocoord.recipes._leadership import (
    ELECTION_NAME,
    LATCH_NAME,
    LeadershipChange,
    LeadershipLostError,
    LeadershipTerm,
    check_leader_identifier,
)
from aiocoord.recipes.latch import LeaderLatch
from aiocoord.recipes.layout import Layout, check_layout

__all__ = [
    "ELECTION_NAME",
    "LATCH_NAME",
    "Election",
    "LeaderLatch",
    "LeadershipChange",
    "LeadershipLostError",
    "LeadershipTerm",
    "Participant",
]

log = logging.getLogger(__name__)


class _Leadership:
    """``async with election.leadership():`` (see :meth:`Election.leadership`)."""

    def __init__(self, election: Election, timeout: float | None) -> None:
        self._election = election
        self._timeout = timeout
        self._holding: Holding | None = None
        self._task: asyncio.Task[Any] | None = None

    async def __aenter__(self) -> LeadershipTerm:
        election = self._election
        if self._task is not None:
            raise CoordinationError("a leadership() context can be entered once")
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - only outside of a task
            raise RuntimeError("leadership() must be used from an asyncio task")
        self._task = task
        granted = await election._acquire(self._timeout)
        if granted is None:
            raise timed_out(f"not elected leader of {election.path}", self._timeout)
        holding, term = granted
        # No await since the grant: a loss from here on cancels the body.
        self._holding = holding
        holding.enter_body(task)
        return term

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        holding, task = self._holding, self._task
        assert holding is not None
        assert task is not None
        election = self._election
        if not holding.lost.is_set():
            await holding.exit_body(task, exc)
            election._end(holding, "left")
            await holding.release()
            return
        await holding.leave()
        await holding.exit_body(task, exc, LeadershipLostError)


class Election:
    """Run code only while leading (Curator's ``LeaderSelector``); see the module docstring.

    ``async with election.leadership() as term:`` waits until this contender leads, runs
    the body, and leaves the election when the body ends. If leadership is lost meanwhile
    the body is cancelled and the ``async with`` raises :class:`LeadershipLostError`.

    ``await election.run(func, requeue=True)`` calls ``await func(term)`` each time this
    contender leads, joining again after each term (``requeue=False``: one term);
    ``election.start(func)`` does the same in a task the election owns, ``requeue()`` joins
    once more after a single term, and ``close()`` ends it all. ``await election.leader()``
    and ``await election.contenders()`` show who takes part. ``acl`` is the ACL of the nodes
    it creates, parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        identifier: str | None = None,
        suspended_is_loss: bool = True,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
    ) -> None:
        #: the client whose session holds this contender's nodes
        self.client: Client = check_client(client)
        #: the election's path, the parent of the contenders' nodes (as given)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("an Election cannot live on the root node")
        #: this contender's identifier, its nodes' data (``host:pid`` unless given)
        self.identifier: str = check_leader_identifier(identifier)
        #: whether a lost connection (SUSPENDED) already ends a term (the default), not only
        #: the session's end
        self.suspended_is_loss: bool = validate_flag(suspended_is_loss, "suspended_is_loss")
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: whose node layout this election speaks (:class:`~aiocoord.Layout`): kazoo's
        #: ``Election`` is a kazoo ``Lock`` with identifiers
        self.layout: Layout = check_layout(layout, "Election")
        name = KAZOO_LOCK if self.layout is Layout.KAZOO else ELECTION_NAME
        self._queue = SequentialQueue(
            client, path, name, LeaseDriver(1), acl=self.acl, layout=self.layout
        )
        self._terms: dict[Holding, LeadershipTerm] = {}
        self._task: asyncio.Task[None] | None = None
        self._func: Callable[[LeadershipTerm], Awaitable[Any]] | None = None
        self._closed = False

    @property
    def is_leader(self) -> bool:
        """True while a term of this object runs."""
        return bool(self._terms)

    @property
    def term(self) -> LeadershipTerm | None:
        """The running term, or None."""
        return next(iter(self._terms.values()), None)

    def leadership(self, timeout: float | None = None) -> _Leadership:
        """``async with election.leadership(timeout) as term:`` (see the class docstring).

        Raises :class:`aiocoord.TimeoutError` if not leader within ``timeout`` seconds (no
        node is left).
        """
        return _Leadership(self, validate_timeout(timeout))

    async def _acquire(self, timeout: float | None) -> tuple[Holding, LeadershipTerm] | None:
        if self._closed:
            raise CoordinationError(f"the Election on {self.path} is closed")
        data = self.identifier.encode()
        deadline = deadline_after(timeout)
        while True:
            try:
                node = await self._queue.acquire(
                    data, timeout=left_or_zero(deadline), suspended_is_loss=self.suspended_is_loss
                )
            except ConnectionLossError:
                await asyncio.sleep(0.05)
                continue
            if node is None:
                return None
            return self._grant(node)

    def _grant(self, node: QueueNode) -> tuple[Holding, LeadershipTerm]:
        # In the step of the grant: no state change can fall in between.
        holding: Holding

        def lost(state: State, reason: str) -> None:
            self._end(holding, reason)

        holding = Holding(
            self.client,
            node,
            what=f"leadership of {self.path}",
            logger=log,
            suspended_is_loss=self.suspended_is_loss,
            cancel_on_loss=True,
            exclusive=True,
            on_loss=lost,
        )
        term = self._terms[holding] = LeadershipTerm(
            self.identifier, node.path, node.czxid, node.session_id, time.monotonic()
        )
        return holding, term

    def _end(self, holding: Holding | None, reason: str) -> None:
        if holding is not None and self._terms.pop(holding, None) is not None:
            log.info("election %s: %s no longer leads (%s)", self.path, self.identifier, reason)

    async def run(
        self, func: Callable[[LeadershipTerm], Awaitable[Any]], *, requeue: bool = True
    ) -> None:
        """Call ``await func(term)`` each time this contender leads.

        With ``requeue`` it joins again after every term, until cancelled; without, it
        returns after one term. A term lost while ``func`` runs cancels it and is logged;
        any other exception from ``func`` ends the run and propagates.
        """
        if not callable(func):
            raise InvalidTypeError("func must be an async callable taking the term")
        validate_flag(requeue, "requeue")
        while True:
            try:
                async with self.leadership() as term:
                    await func(term)
            except LeadershipLostError as exc:
                log.warning("election %s: %s", self.path, exc)
            if not requeue:
                return

    def start(
        self, func: Callable[[LeadershipTerm], Awaitable[Any]], *, requeue: bool = True
    ) -> None:
        """Run :meth:`run` in a task this election owns (ended by ``close()``)."""
        if not callable(func):
            raise InvalidTypeError("func must be an async callable taking the term")
        validate_flag(requeue, "requeue")
        if self._closed:
            raise CoordinationError(f"the Election on {self.path} is closed")
        if self._task is not None and not self._task.done():
            raise CoordinationError(f"the Election on {self.path} is already running")
        self._func = func
        self._task = asyncio.get_running_loop().create_task(
            self.run(func, requeue=requeue), name=f"aiocoord-election:{self.path}"
        )

    def requeue(self) -> bool:
        """Join once more with the function given to :meth:`start`, if its run has ended
        (after a single term); False if it is still running (already queued or leading)."""
        if self._func is None:
            raise CoordinationError("requeue() needs a function given to start() first")
        if self._task is not None and not self._task.done():
            return False
        self.start(self._func, requeue=False)
        return True

    async def close(self) -> None:
        """End the task of :meth:`start` (its term, if any, ends and its node is deleted)."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, CoordinationError):
                await task

    async def __aenter__(self) -> Election:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def contenders(self) -> list[Participant]:
        """Every contender, in queue order: the leader first (``holds``), then those waiting.

        The same record as every recipe's listing (see :class:`Participant`); kazoo's
        ``Election.contenders()`` gives the identifiers alone: ``[p.identifier for p in ...]``.
        """
        return await queue_participants(self._queue)

    async def leader(self) -> Participant | None:
        """The contender that leads now, or None if there is none."""
        return next((p for p in await self.contenders() if p.holds), None)

    def __repr__(self) -> str:
        return f"<Election {self.path} {self.identifier!r} {'leader' if self.is_leader else ''}>"
