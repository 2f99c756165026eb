"""Leader election: :class:`LeaderLatch` (join, and be told when leading) and
:class:`Election` (run code only while leading), on Apache Curator's layouts.

Both stand in the queue every lock uses (:class:`~aiocoord.recipes._queue.SequentialQueue`):
each contender is a protected ephemeral sequential node holding its identifier, and the
lowest sequence number leads. Each contender watches only the node ahead of it.

**Layouts.** :class:`LeaderLatch` is Curator's ``LeaderLatch``: ``<path>/_c_<uuid>-latch-<seq>``.
:class:`Election` is Curator's ``LeaderSelector`` (an ``InterProcessMutex``):
``<path>/_c_<uuid>-lock-<seq>``. Java contenders using those recipes on the same path take
part in the same election.

**Claiming.** Before a contender at the head of the queue calls itself leader it reads its node
and checks that the node exists and that its ephemeral owner is the current session: a node
left by an earlier session of this client (which the server has not removed yet) must not make
it leader, and a node someone deleted must not either. That read also sets the watch that
ends the term if the node is deleted. If the node, or the whole election path, is gone, the
contender joins again (the path is re-created, as containers).

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

**Tasks.** A latch owns one task (started by ``start()``, ended by ``close()``); an election
owns the task of :meth:`Election.start`. Cancelling either leaves no node behind: it is deleted
now, or by a guaranteed delete once reconnected (:meth:`Client.wait_background`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiocoord._protocol import ACL
from aiocoord._validation import validate_flag, validate_path, validate_timeout
from aiocoord._watches import EventType, Watch
from aiocoord.client import Client, check_acl
from aiocoord.errors import (
    BadArgumentsError,
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    InvalidTypeError,
    SessionExpiredError,
)
from aiocoord.recipes._drivers import LeaseDriver
from aiocoord.recipes._holding import LossWatch
from aiocoord.recipes._nodes import QueueNode, delete_node
from aiocoord.recipes._queue import SequentialQueue
from aiocoord.recipes._stream import EventStream, EventSubscription
from aiocoord.session import State

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

log = logging.getLogger("aiocoord.recipes.election")

#: Curator's LeaderLatch node name (before the sequence number).
LATCH_NAME = "latch-"
#: Curator's LeaderSelector node name (its InterProcessMutex's).
ELECTION_NAME = "lock-"


class LeadershipLostError(CoordinationError):
    """Leadership ended while the body of ``async with election.leadership():`` ran; the
    body was cancelled (or had finished, if it ended before the cancellation reached it)."""


# --- data -------------------------------------------------------------------------------


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

    is_leader: bool
    term: LeadershipTerm | None
    reason: str | None = None
    resynced: bool = False


@dataclass(frozen=True, slots=True)
class Participant:
    """A contender of an election, as its node says."""

    identifier: str
    is_leader: bool
    node_name: str


# --- shared machinery ------------------------------------------------------------------------


def _check_client(client: Any) -> Client:
    if not isinstance(client, Client):
        raise InvalidTypeError(f"client must be an aiocoord.Client, not {type(client).__name__}")
    return client


def _check_identifier(identifier: Any) -> str:
    if identifier is None:
        return f"{socket.gethostname()}:{os.getpid()}"
    if not isinstance(identifier, str):
        raise InvalidTypeError(f"identifier must be str, not {type(identifier).__name__}")
    return identifier


class _Holding:
    """A granted node, watched until its term ends (once): session loss or, by policy,
    suspension (a :class:`LossWatch`), deletion of the node (a watch), or :meth:`close`.

    ``on_end(reason)`` is called synchronously when it ends.
    """

    def __init__(
        self,
        client: Client,
        node: QueueNode,
        watch: Watch,
        suspended_is_loss: bool,
        on_end: Callable[[str], None],
    ) -> None:
        self.client = client
        self.node = node
        self.reason: str | None = None
        self._on_end = on_end
        self._ended = asyncio.Event()
        # The node's deletion is followed below (it ends the term with its own reason).
        self._loss = LossWatch(client, node, suspended_is_loss, self._lost, watch_node=False)
        self._task = asyncio.ensure_future(self._follow(watch))

    def _lost(self, state: State, reason: str) -> None:
        self.end(reason)

    def end(self, reason: str) -> None:
        """End the term (idempotent; the first reason stands)."""
        if self.reason is not None:
            return
        self.reason = reason
        self._loss.close()
        self._ended.set()
        self._on_end(reason)

    @property
    def ended(self) -> bool:
        """True once the term ended."""
        return self.reason is not None

    async def wait(self) -> str:
        """Wait until the term ends; return why."""
        await self._ended.wait()
        assert self.reason is not None
        return self.reason

    async def _follow(self, watch: Watch) -> None:
        """End the term when the node is deleted (re-arming after data changes)."""
        client = self.client
        path = self.node.path
        delay = 0.05
        try:
            while True:
                try:
                    event = await watch
                except (SessionExpiredError, ClientClosedError):
                    return  # the LossWatch reports the session's end
                if event.type is EventType.DELETED:
                    self.end("deleted")
                    return
                while True:
                    try:
                        stat, watch = await client.exists(path, watch=True)
                        break
                    except ConnectionLossError:
                        await asyncio.sleep(delay)
                        delay = min(delay * 2, 1.0)
                    except (SessionExpiredError, ClientClosedError):
                        return
                if stat is None:
                    watch.cancel()
                    self.end("deleted")
                    return
        finally:
            watch.cancel()

    def close(self) -> None:
        """Stop watching, synchronously (the watching task ends on its own soon)."""
        self._loss.close()
        self._task.cancel()


async def _hold(
    client: Client,
    node: QueueNode,
    suspended_is_loss: bool,
    on_start: Callable[[_Holding], None],
    on_end: Callable[[str], None],
) -> _Holding | None:
    """Check that ``node`` (granted by the queue) is there and ours, and if so start
    holding it: ``on_start`` runs in the same step as the check, so that no state change can
    fall between them. None if it is not ours to claim (the caller releases it)."""
    try:
        stat, watch = await client.exists(node.path, watch=True)
    except (ConnectionLossError, SessionExpiredError):
        return None
    if (
        stat is None
        or stat.ephemeral_owner != client.session_id
        or not node.alive_in(client)
        or (suspended_is_loss and not client.connected)
    ):
        watch.cancel()
        return None
    holding = _Holding(client, node, watch, suspended_is_loss, on_end)
    on_start(holding)
    return holding


def _uncancel(task: asyncio.Task[Any]) -> bool:
    """Withdraw one cancellation we requested; True if no other one is pending."""
    withdraw = getattr(task, "uncancel", None)  # Python 3.11+
    if withdraw is None:
        return True
    return int(withdraw()) == 0


def _others_cancelling(task: asyncio.Task[Any]) -> bool:
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    return cancelling is not None and int(cancelling()) > 1


async def _participants(queue: SequentialQueue) -> list[Participant]:
    nodes = await queue.participants(queue.lock_name)
    return [
        Participant(data.decode("utf-8", "replace"), i == 0, name)
        for i, (name, data) in enumerate(nodes)
    ]


# --- LeaderLatch ------------------------------------------------------------------------


class LeaderLatch:
    """Join an election and be told while this contender leads (Curator's ``LeaderLatch``);
    see the module docstring.

    ``async with LeaderLatch(client, "/app/leader", "me") as latch:`` joins (``start()``)
    and leaves (``close()``). :attr:`is_leader` says whether it leads now;
    ``await latch.wait_until_leader(timeout)`` waits for it; ``latch.changes()`` streams
    every :class:`LeadershipChange`, ``await latch.next_change(timeout)`` waits for one and
    :meth:`add_listener` registers a synchronous callback.
    :attr:`term` (with its fencing token) describes the current term.

    ``suspended_is_loss`` (default True) ends leadership as soon as the connection is lost;
    False keeps it until the session is lost. ``acl`` is the ACL of the nodes it creates,
    parents included (None: OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        identifier: str | None = None,
        *,
        suspended_is_loss: bool = True,
        buffer_size: int = 1000,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        self.client = _check_client(client)
        self.path = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a LeaderLatch cannot live on the root node")
        self.identifier = _check_identifier(identifier)
        self.suspended_is_loss = validate_flag(suspended_is_loss, "suspended_is_loss")
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
            raise InvalidTypeError(f"buffer_size must be int, not {type(buffer_size).__name__}")
        if buffer_size < 1:
            raise BadArgumentsError(f"buffer_size must be >= 1, got {buffer_size}")
        self._buffer_size = buffer_size
        self.acl = check_acl(acl)
        self._queue = SequentialQueue(client, path, LATCH_NAME, LeaseDriver(1), acl=self.acl)
        self._term: LeadershipTerm | None = None
        self._holding: _Holding | None = None
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

    def _begin(self, holding: _Holding) -> None:
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
                if not client.session.reconnect_after_expiry:
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
            holding: _Holding | None = None
            try:
                holding = await _hold(client, node, self.suspended_is_loss, self._begin, self._end)
                if holding is not None:
                    await holding.wait()
            except ClientClosedError:
                return
            finally:
                if holding is not None:
                    holding.end("left")
                    holding.close()
                # Gone already after a loss or deletion; deleted now (or once reconnected)
                # otherwise. Cancelling this does not stop it.
                await self._queue.release(node)

    # --- waiting -------------------------------------------------------------------------

    async def wait_until_leader(self, timeout: float | None = None) -> bool:
        """Wait until this contender leads: True, or False after ``timeout`` seconds (or
        once the latch is closed)."""
        timeout = validate_timeout(timeout)
        if self._term is not None:
            return True
        if self._closed or self._task is None:
            raise CoordinationError(f"the LeaderLatch on {self.path} is not started")
        try:
            await asyncio.wait_for(self._leading.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return self._term is not None

    async def next_change(self, timeout: float | None = None) -> LeadershipChange:
        """Wait for the next change of leadership; TimeoutError after ``timeout`` seconds."""
        timeout = validate_timeout(timeout)
        if self._closed:
            raise CoordinationError(f"the LeaderLatch on {self.path} is closed")
        fut: asyncio.Future[LeadershipChange] = asyncio.get_running_loop().create_future()
        self._waiters.add(fut)
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._waiters.discard(fut)

    def changes(self, *, buffer_size: int | None = None) -> EventSubscription[LeadershipChange]:
        """Stream every change from now on: ``async for change in latch.changes():``.

        Holds up to ``buffer_size`` unread changes; a reader that falls further behind gets
        one ``resynced`` change with the state at that moment. Ends when the latch closes.
        """
        limit = self._buffer_size
        if buffer_size is not None:
            if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
                raise InvalidTypeError(f"buffer_size must be int, not {type(buffer_size).__name__}")
            if buffer_size < 1:
                raise BadArgumentsError(f"buffer_size must be >= 1, got {buffer_size}")
            limit = buffer_size
        return self._stream.subscribe(limit)

    # --- inspection ----------------------------------------------------------------------

    async def participants(self) -> list[Participant]:
        """Every contender, in queue order (the leader first)."""
        return await _participants(self._queue)

    async def leader(self) -> Participant | None:
        """The contender that leads now, or None if there is none."""
        everyone = await self.participants()
        return everyone[0] if everyone else None

    def __repr__(self) -> str:
        state = "leader" if self.is_leader else ("waiting" if self.started else "idle")
        return f"<LeaderLatch {self.path} {self.identifier!r} {state}>"


# --- Election ---------------------------------------------------------------------------


class _Leadership:
    """``async with election.leadership():`` (see :meth:`Election.leadership`)."""

    def __init__(self, election: Election, timeout: float | None) -> None:
        self._election = election
        self._timeout = timeout
        self._holding: _Holding | None = None
        self._node: QueueNode | None = None
        self._task: asyncio.Task[Any] | None = None
        self._in_body = False
        self._cancelled_by_us = False

    async def __aenter__(self) -> LeadershipTerm:
        election = self._election
        if self._task is not None:
            raise CoordinationError("a leadership() context can be entered once")
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - only outside of a task
            raise RuntimeError("leadership() must be used from an asyncio task")
        self._task = task
        term = await election._acquire(self._timeout, self._on_start, self._on_end)
        if term is None:
            raise asyncio.TimeoutError(
                f"not elected leader of {election.path} within {self._timeout} s"
            )
        self._in_body = True
        return term

    def _on_start(self, holding: _Holding) -> None:
        self._holding = holding
        self._node = holding.node

    def _on_end(self, reason: str) -> None:
        election = self._election
        election._end(self._holding, reason)
        task = self._task
        if reason != "left" and self._in_body and task is not None and not task.done():
            self._cancelled_by_us = True
            task.cancel(f"leadership of {election.path} lost ({reason})")

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._in_body = False
        holding, node = self._holding, self._node
        assert holding is not None
        assert node is not None
        assert self._task is not None
        lost = holding.reason
        holding.end("left")
        holding.close()
        election = self._election
        if lost is None:
            await election._queue.release(node)
            return
        # Lost: the node is gone (LOST, deleted) or deleted once reconnected (SUSPENDED);
        # that runs in the client's background, so nothing here awaits.
        election.client.spawn(delete_node(election.client, node.path), "aiocoord-election")
        message = f"leadership of {election.path} was lost ({lost})"
        if self._cancelled_by_us:
            if not isinstance(exc, asyncio.CancelledError) and not _others_cancelling(self._task):
                # The body ended before our cancellation reached it: take it here, so that
                # it does not hit the caller's next await.
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(0)
            others_pending = not _uncancel(self._task)
            if isinstance(exc, asyncio.CancelledError):
                if others_pending:
                    return  # someone else cancelled too: their cancellation goes on
                raise LeadershipLostError(message + "; the body was cancelled") from None
        if exc is None:
            raise LeadershipLostError(message)
        # Any other exception of the body (or someone else's cancellation) goes on.


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
    it creates, parents included (None: OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        identifier: str | None = None,
        *,
        suspended_is_loss: bool = True,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        self.client = _check_client(client)
        self.path = validate_path(path)
        if path == "/":
            raise BadArgumentsError("an Election cannot live on the root node")
        self.identifier = _check_identifier(identifier)
        self.suspended_is_loss = validate_flag(suspended_is_loss, "suspended_is_loss")
        self.acl = check_acl(acl)
        self._queue = SequentialQueue(client, path, ELECTION_NAME, LeaseDriver(1), acl=self.acl)
        self._terms: dict[_Holding, LeadershipTerm] = {}
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

        Raises TimeoutError if not leader within ``timeout`` seconds (no node is left).
        """
        return _Leadership(self, validate_timeout(timeout))

    async def _acquire(
        self,
        timeout: float | None,
        on_start: Callable[[_Holding], None],
        on_end: Callable[[str], None],
    ) -> LeadershipTerm | None:
        if self._closed:
            raise CoordinationError(f"the Election on {self.path} is closed")
        client = self.client
        data = self.identifier.encode()
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            left = None if deadline is None else max(deadline - loop.time(), 0.0)
            try:
                node = await self._queue.acquire(
                    data, timeout=left, suspended_is_loss=self.suspended_is_loss
                )
            except ConnectionLossError:
                await asyncio.sleep(0.05)
                continue
            if node is None:
                return None
            holder: list[_Holding] = []

            def started(holding: _Holding, holder: list[_Holding] = holder) -> None:
                holder.append(holding)
                self._terms[holding] = LeadershipTerm(
                    self.identifier,
                    holding.node.path,
                    holding.node.czxid,
                    holding.node.session_id,
                    time.monotonic(),
                )
                on_start(holding)

            try:
                holding = await _hold(client, node, self.suspended_is_loss, started, on_end)
            except BaseException:
                if holder:
                    holder[0].end("left")
                    holder[0].close()
                await self._queue.release(node)
                raise
            if holding is None:
                await self._queue.release(node)
                continue
            return self._terms[holding]

    def _end(self, holding: _Holding | None, reason: str) -> None:
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
        """Every contender, in queue order (the leader first)."""
        return await _participants(self._queue)

    async def leader(self) -> Participant | None:
        """The contender that leads now, or None if there is none."""
        everyone = await self.contenders()
        return everyone[0] if everyone else None

    def __repr__(self) -> str:
        return f"<Election {self.path} {self.identifier!r} {'leader' if self.is_leader else ''}>"
