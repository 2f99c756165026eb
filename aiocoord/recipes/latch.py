""":class:`LeaderLatch`: join an election and be told while leading (Curator's
``LeaderLatch``, layout ``<path>/_c_<uuid>-latch-<seq>``; Java latches on the same path take part
in the same election).

Each contender is a protected ephemeral sequential node holding its identifier in the queue
every lock uses (:class:`~aiocoord.recipes._contention.kernel.SequentialQueue`); the lowest
sequence number leads, and each contender watches only the node ahead of it.

**Claiming.** A contender leads once the queue grants its node, under the rules every lock
follows (:mod:`aiocoord.recipes._contention.contender`): the node was made by the current session
(one left by an earlier session of this client is never taken for ours), and the session is trusted
at the moment of the grant. From then on the term is a
:class:`~aiocoord.recipes._contention.holding.Holding`: a deletion of the node by anyone else ends
it with the reason ``"deleted"``.

**Terms end** when the session is lost (LOST), when the client is closed, when the node is
deleted, and, under the ``suspended_is_loss`` policy (the default, as Curator's standard
policy), as soon as the connection is lost (SUSPENDED): the session may be expiring unseen, and
another contender may be leader before this one hears of it. After a SUSPENDED loss the node
is deleted once reconnected and the contender joins again at the back of the queue, so a new
leader is chosen. Under the *session* policy (``suspended_is_loss=False``) leadership survives
connection loss and ends only with the session.

**Fencing.** Each term carries :attr:`LeadershipTerm.fencing_token`, its node's creation zxid.
Every later term of the same election has a larger one (a later node has a larger sequence
number, hence a larger zxid), so a store that remembers the largest token it has seen can
refuse writes from a leader that has lost leadership without knowing it yet.

**Task.** A latch owns one task (started by ``start()``, ended by ``close()``). Closing it
leaves no node behind: it is deleted now, or by a guaranteed delete once reconnected
(:meth:`Client.wait_background`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from aiocoord._client import door
from aiocoord._deadline import within
from aiocoord._validation import validate_flag, validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client
from aiocoord.errors import (
    BadArgumentsError,
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    InvalidTypeError,
    SessionExpiredError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._contention.contender import check_entry
from aiocoord.recipes._contention.drivers import LeaseDriver
from aiocoord.recipes._contention.holding import Holding
from aiocoord.recipes._contention.kernel import SequentialQueue
from aiocoord.recipes._contention.participants import Participant, queue_participants
from aiocoord.recipes._leadership import (
    LATCH_NAME,
    LeadershipChange,
    LeadershipTerm,
    check_leader_identifier,
)
from aiocoord.recipes._stream import EventStream, EventSubscription, check_buffer_size

__all__ = ["LATCH_NAME", "LeaderLatch"]

log = logging.getLogger(__name__)


class LeaderLatch:
    """Join an election and be told while this contender leads (Curator's ``LeaderLatch``);
    see the module docstring.

    ``async with LeaderLatch(client, "/app/leader", identifier="me") as latch:`` joins (``start()``)
    and leaves (``close()``). :attr:`is_leader` says whether it leads now;
    ``await latch.wait_until_leader(timeout)`` waits for it; ``latch.changes()`` streams
    every :class:`LeadershipChange`, ``await latch.next_change(timeout)`` waits for one and
    :meth:`add_listener` registers a synchronous callback.
    :attr:`term` (with its fencing token) describes the current term.

    ``suspended_is_loss`` (default True) ends leadership as soon as the connection is lost;
    False keeps it until the session is lost. ``acl`` is the ACL of the nodes it creates,
    parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        identifier: str | None = None,
        suspended_is_loss: bool = True,
        buffer_size: int = 1000,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        #: the client whose session holds this latch's node
        self.client: Client = check_client(client)
        #: the latch's path, the parent of the contenders' nodes (as given)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a LeaderLatch cannot live on the root node")
        #: this contender's identifier, its node's data (``host:pid`` unless given)
        self.identifier: str = check_leader_identifier(identifier)
        #: whether a lost connection (SUSPENDED) already ends leadership (the default), not
        #: only the session's end
        self.suspended_is_loss: bool = validate_flag(suspended_is_loss, "suspended_is_loss")
        self._buffer_size = check_buffer_size(buffer_size)
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        # Refused now: start() joins in a task of its own, which could only log it.
        check_entry(client, self.path, LATCH_NAME, self.identifier.encode(), self.acl)
        self._queue = SequentialQueue(client, path, LATCH_NAME, LeaseDriver(1), acl=self.acl)
        self._term: LeadershipTerm | None = None
        self._holding: Holding | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._stream: EventStream[LeadershipChange] = EventStream(self._resynced)
        self._leading = asyncio.Event()
        self._waiters: set[asyncio.Future[LeadershipChange]] = set()
        self._listeners: list[Callable[[LeadershipChange], None]] = []

    # --- state ---------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True while this contender leads."""
        return self._term is not None

    @property
    def term(self) -> LeadershipTerm | None:
        """The current term, or None when not leading."""
        return self._term

    @property
    def fencing_token(self) -> int | None:
        """The current term's fencing token, or None when not leading."""
        return self._term.fencing_token if self._term is not None else None

    @property
    def started(self) -> bool:
        """True between ``start()`` and ``close()``."""
        return self._task is not None and not self._closed

    def _resynced(self) -> LeadershipChange:
        return LeadershipChange(self._term is not None, self._term, resynced=True)

    def add_listener(self, callback: Callable[[LeadershipChange], None]) -> Callable[[], None]:
        """Call ``callback(change)`` synchronously at every change, in the very step the
        leadership starts or ends (Curator's ``LeaderLatchListener``); returns a remover."""
        if not callable(callback):
            raise InvalidTypeError("callback must be callable")
        self._listeners.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return remove

    def _publish(self, change: LeadershipChange) -> None:
        for callback in list(self._listeners):
            try:
                callback(change)
            except Exception:  # a listener's bug must not stop the latch
                log.exception("leadership listener of %s failed", self.path)
        self._stream.publish(change)
        waiters, self._waiters = self._waiters, set()
        for fut in waiters:
            if not fut.done():
                fut.set_result(change)

    def _begin(self, holding: Holding) -> None:
        node = holding.node
        self._holding = holding
        self._term = LeadershipTerm(
            self.identifier, node.path, node.czxid, node.session_id, time.monotonic()
        )
        self._leading.set()
        log.info("latch %s: %s leads (token %d)", self.path, self.identifier, node.czxid)
        self._publish(LeadershipChange(True, self._term))

    def _end(self, reason: str) -> None:
        term, self._term = self._term, None
        self._holding = None
        if term is None:
            return
        self._leading.clear()
        log.info("latch %s: %s no longer leads (%s)", self.path, self.identifier, reason)
        self._publish(LeadershipChange(False, term, reason))

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Join the election (returns at once; leadership comes later)."""
        if self._task is not None:
            raise CoordinationError(
                f"this LeaderLatch on {self.path} was already started; make a new one"
            )
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"aiocoord-latch:{self.path}"
        )

    async def close(self) -> None:
        """Leave the election: leadership ends (reason ``"left"``), the node is deleted, the
        task is awaited and change streams end. Idempotent."""
        if self._closed:
            return
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._stream.close()
        # Wakes wait_until_leader(), which then finds no term: nobody leads through a
        # closed latch again.
        self._leading.set()
        for fut in self._waiters:
            if not fut.done():
                fut.set_exception(CoordinationError(f"the LeaderLatch on {self.path} closed"))
                fut.exception()
        self._waiters.clear()

    async def __aenter__(self) -> LeaderLatch:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self) -> None:
        client = self.client
        data = self.identifier.encode()
        delay = 0.05
        while True:
            try:
                node = await self._queue.acquire(data, suspended_is_loss=self.suspended_is_loss)
            except ClientClosedError:
                return
            except SessionExpiredError:
                if not door.renews_sessions(client):
                    log.warning("latch %s: the session expired for good; leaving", self.path)
                    return
                continue
            except ConnectionLossError:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            except CoordinationError as exc:
                log.warning("latch %s: could not join (%r); trying again", self.path, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            assert node is not None
            delay = 0.05
            # In the step of the grant: no state change can fall in between.
            holding = Holding(
                client,
                node,
                what=f"latch {self.path}",
                logger=log,
                suspended_is_loss=self.suspended_is_loss,
                exclusive=True,
                on_loss=lambda state, reason: self._end(reason),
            )
            self._begin(holding)
            try:
                await holding.lost.wait()
            finally:
                if holding.is_held:
                    self._end("left")
                # Gone already after a loss or deletion; deleted now (or once reconnected)
                # otherwise. Cancelling this does not stop it.
                await holding.leave(confirm=True)

    # --- waiting -------------------------------------------------------------------------

    async def wait_until_leader(self, timeout: float | None = None) -> bool:
        """Wait until this contender leads: True (False if the latch is closed meanwhile).
        Raises :class:`aiocoord.TimeoutError` after ``timeout`` seconds."""
        timeout = validate_timeout(timeout)
        if self._term is not None:
            return True
        if self._closed or self._task is None:
            raise CoordinationError(f"the LeaderLatch on {self.path} is not started")
        await within(self._leading.wait(), timeout, f"not leader of {self.path}")
        return self._term is not None

    async def next_change(self, timeout: float | None = None) -> LeadershipChange:
        """Wait for the next change of leadership; :class:`aiocoord.TimeoutError` after
        ``timeout`` seconds."""
        timeout = validate_timeout(timeout)
        if self._closed:
            raise CoordinationError(f"the LeaderLatch on {self.path} is closed")
        fut: asyncio.Future[LeadershipChange] = asyncio.get_running_loop().create_future()
        self._waiters.add(fut)
        try:
            return await within(fut, timeout, f"no change of leadership of {self.path}")
        finally:
            self._waiters.discard(fut)

    def changes(self, *, buffer_size: int | None = None) -> EventSubscription[LeadershipChange]:
        """Stream every change from now on: ``async for change in latch.changes():``.

        Holds up to ``buffer_size`` unread changes; a reader that falls further behind gets
        one ``resynced`` change with the state at that moment. Ends when the latch closes.
        """
        limit = self._buffer_size if buffer_size is None else check_buffer_size(buffer_size)
        return self._stream.subscribe(limit)

    # --- inspection ----------------------------------------------------------------------

    async def participants(self) -> list[Participant]:
        """Every contender, in queue order: the leader first (``holds``, also ``is_leader``
        as in Curator's ``getParticipants()``), then those waiting."""
        return await queue_participants(self._queue)

    async def leader(self) -> Participant | None:
        """The contender that leads now, or None if there is none."""
        return next((p for p in await self.participants() if p.holds), None)

    def __repr__(self) -> str:
        state = "leader" if self.is_leader else ("waiting" if self.started else "idle")
        return f"<LeaderLatch {self.path} {self.identifier!r} {state}>"
