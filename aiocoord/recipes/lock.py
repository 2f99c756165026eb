"""Locks over the shared queue: :class:`Lock` (reentrant per task) and :class:`Mutex` (not
reentrant), on Apache Curator 5's layout so that Python and Java services can share a lock.

**Layout.** Each contender is a protected ephemeral sequential child of the lock path,
``<path>/_c_<uuid>-lock-<10-digit sequence>``, holding its identifier as data (by default
``host:pid:task-name``); the lowest sequence number holds the lock. This is Curator's
``InterProcessMutex``, and a :class:`Lock`, a :class:`Mutex` and a Java ``InterProcessMutex``
on the same path exclude each other. The parents are created as containers, which the server
removes once they are empty.

**kazoo's layout** (``layout="kazoo"``): ``<path>/<uuid hex>__lock__<10-digit sequence>``
with the identifier as data, as kazoo's ``Lock`` names its nodes (and finds one whose create
lost its reply, by its prefix), so that kazoo and aiocoord processes on one path exclude each
other; the lock path and the parents made are persistent nodes there, as kazoo's
``ensure_path`` makes them (a kazoo ``Lock`` checks its path once, and would fail on a
container the server removed once empty). Everything else below holds in both layouts.
Whatever its layout, a lock waits for every contender on its path; one whose listing as it
asks shows a contender of the other layout, which may not wait for it, warns
(:class:`~aiocoord.errors.MixedLayoutWarning`; see :mod:`aiocoord.recipes.layout`). One that comes
after it, holder or waiter, is told to nobody: ``python -m aiocoord locks PATH`` marks such a
path (docs/from-kazoo.md).

**Fair and herd-free.** Contenders get the lock in the order they asked for it. Each waiter
watches only the node just ahead of it, so a release wakes one waiter; see
:mod:`aiocoord.recipes._contention.kernel` for how waking costs no listing.

**Cancellation and timeouts.** A cancelled or timed-out ``acquire`` leaves no node behind
(:meth:`Client.wait_background` waits for a deletion that had to wait for a reconnect).
``release`` says "not held" and returns at once, without waiting for the server, whatever
the link (a dead one included): the delete is written now if connected, else as soon as the
connection is back (a guaranteed delete, settled in the background:
:meth:`Client.wait_background` waits for it), and cancelling ``release`` does not stop it.
The client's next request is answered after the delete (one session's requests are answered
in order): ``await client.sync()`` after a release returns once other clients can see the lock
free.

**Loss is never silent.** When the session is lost while the lock is held, or someone else
deletes the held node (an operator's recursive delete, say: ``lost.reason == "deleted"``),
:attr:`Lock.lost` fires and :attr:`Lock.is_held` turns false. The holder keeps a watch on its
own node for that (the one it watched while waiting, else one armed right after the grant).
Two policies say what "lost" means, as Curator's ``ConnectionStateErrorPolicy`` does:

- *session* (``suspended_is_loss=False``, the default): only the session's end (LOST) loses
  the lock. While SUSPENDED the lock node still exists and is still ours unless the session
  expires; code that must not act without certainty watches ``client.state`` itself.
- *standard* (``suspended_is_loss=True``): a lost connection (SUSPENDED) already counts, since
  the session may be expiring unseen; the node is deleted once reconnected, so no one waits on
  a lock its owner has given up.

With ``cancel_on_loss=True`` the body of ``async with lock:`` is cancelled on loss, and the
``async with`` raises :class:`~aiocoord.LockLostError`. Without it, the body runs on and the
``async with`` raises LockLostError when it ends (unless the body raised something itself);
an explicit ``release()`` of a lost lock raises it too.

**Revocation** (Curator's ``Revoking``). A holder that calls :meth:`Lock.make_revocable`
(before acquiring) is told when anyone asks it to give the lock up:
``await lock.revocation`` (a :class:`~aiocoord.RevocationEvent`) returns the held node's path.
It decides what to do; nothing is released for it. The request is
:func:`~aiocoord.attempt_revoke` (``__REVOKE__`` written as the node's data, Curator's
``Revoker.attemptRevoke``), so a Java ``Revoker`` reaches an aiocoord holder and the other
way round; only a change of the node's data asks (an identifier that reads ``__REVOKE__`` is
the holder's own data, not a request). A holder that did not opt in is not told and holds on
unchanged. It costs no
request: the holder's watch on its own node (above) reads the data when a change re-arms it.
A request made while the lock still waited is told once it is held; one made before
``make_revocable`` was called is not.

**Fencing.** :attr:`Lock.fencing_token` is the lock node's creation zxid: it grows strictly from
one holder to the next, so a storage system that remembers the highest token it has seen can
refuse writes from a holder that has lost the lock without knowing it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

from aiocoord._deadline import timed_out
from aiocoord._validation import validate_flag, validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client, State
from aiocoord.errors import LockLostError, LockNotOwnedError
from aiocoord.recipes._args import check_client, check_identifier, current_task, default_identifier
from aiocoord.recipes._contention.contender import QueueNode, check_entry
from aiocoord.recipes._contention.drivers import Driver, LeaseDriver
from aiocoord.recipes._contention.holding import Holding, LossEvent
from aiocoord.recipes._contention.kernel import SequentialQueue
from aiocoord.recipes._contention.naming import KAZOO_LOCK
from aiocoord.recipes._contention.participants import Participant, queue_participants
from aiocoord.recipes.layout import Layout, check_layout
from aiocoord.recipes.revocation import RevocationEvent

__all__ = ["LOCK_NAME", "Lock", "LossEvent", "Mutex"]

log = logging.getLogger(__name__)

#: Curator's InterProcessMutex node name (before the sequence number).
LOCK_NAME = "lock-"


@dataclass(eq=False)
class _Hold:
    """One task's holding of the lock, counted (a task may take a reentrant lock again)."""

    holding: Holding
    task: asyncio.Task[Any]
    count: int = 1

    @property
    def node(self) -> QueueNode:
        """The granted node."""
        return self.holding.node

    @property
    def lost(self) -> State | None:
        """Why the holding was lost, or None while it holds."""
        return self.holding.lost.state


class _QueueLock:
    """What every lock on a :class:`SequentialQueue` shares: holds, loss, contenders, and the
    one constructor of them all (a subclass names its node per layout and its driver, never the
    options: :attr:`_LOCK_NAMES`, :meth:`_new_driver`)."""

    #: the node name before the sequence number, per layout (Curator's ``lock-``, kazoo's
    #: ``__lock__``)
    _LOCK_NAMES: ClassVar[dict[Layout, str]] = {Layout.CURATOR: LOCK_NAME, Layout.KAZOO: KAZOO_LOCK}

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        identifier: str | None = None,
        cancel_on_loss: bool = False,
        suspended_is_loss: bool = False,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
    ) -> None:
        #: the client whose session holds this lock's nodes
        self.client: Client = check_client(client)
        #: the lock's path, the parent of the contenders' nodes (as given, under the
        #: client's chroot)
        self.path: str = validate_path(path)
        #: the data of this object's nodes; None: each node gets ``host:pid:task-name`` of
        #: the task that acquires it
        self.identifier: str | None = check_identifier(identifier)
        #: whether a loss cancels the body of ``async with lock:`` (which then raises
        #: :class:`~aiocoord.LockLostError`); see the module docstring
        self.cancel_on_loss: bool = validate_flag(cancel_on_loss, "cancel_on_loss")
        #: whether a lost connection (SUSPENDED) already loses the lock, not only the
        #: session's end (the *standard* policy; see the module docstring)
        self.suspended_is_loss: bool = validate_flag(suspended_is_loss, "suspended_is_loss")
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: whose node layout this lock speaks (:class:`~aiocoord.Layout`)
        self.layout: Layout = check_layout(layout, type(self).__name__)
        # Refused here rather than at the first acquire: a lock that cannot make its node
        # must not even be built, so that a MultiLock never takes the locks ahead of it (and
        # writes their paths) before this one fails.
        data = b"" if self.identifier is None else self.identifier.encode()
        check_entry(client, self.path, self._LOCK_NAMES[self.layout], data, self.acl)
        self._queue = SequentialQueue(
            client,
            path,
            self._LOCK_NAMES[self.layout],
            self._new_driver(),
            acl=self.acl,
            layout=self.layout,
        )
        self._holds: list[_Hold] = []
        # The holds whose bodies (``async with``) each task runs, innermost last.
        self._bodies: dict[asyncio.Task[Any], list[_Hold]] = {}
        self._lost = LossEvent()
        self._revocation = RevocationEvent()
        #: True once :meth:`make_revocable` was called
        self.revocable: bool = False

    def _new_driver(self) -> Driver:
        """The driver deciding who is through (a mutex: nothing ahead)."""
        return LeaseDriver(1)

    # --- state --------------------------------------------------------------------------

    @property
    def is_held(self) -> bool:
        """True while some task holds the lock through this object (and it was not lost)."""
        return any(h.lost is None for h in self._holds)

    @property
    def held_by_current_task(self) -> bool:
        """True while the calling task holds the lock through this object."""
        task = asyncio.current_task()
        return any(h.task is task and h.lost is None for h in self._holds)

    def _current_hold(self) -> _Hold | None:
        task = asyncio.current_task()
        live = [h for h in self._holds if h.lost is None]
        for h in live:
            if h.task is task:
                return h
        return live[0] if live else None

    @property
    def fencing_token(self) -> int | None:
        """The held node's creation zxid (the calling task's hold first), else None. It
        grows strictly from one holder of the lock path to the next."""
        hold = self._current_hold()
        return hold.node.czxid if hold is not None else None

    @property
    def node_path(self) -> str | None:
        """The path of the held node (the calling task's hold first), else None."""
        hold = self._current_hold()
        return hold.node.path if hold is not None else None

    @property
    def lost(self) -> LossEvent:
        """Fires when a holding of this object is lost: ``await lock.lost``. A fresh event
        replaces a fired one when the lock is next acquired by an object holding nothing."""
        return self._lost

    @property
    def revocation(self) -> RevocationEvent:
        """Fires when a revocation of a holding of this object is requested, once it is
        :meth:`revocable <make_revocable>`: ``await lock.revocation`` returns the held node's
        path. A fresh event replaces a fired one when the lock is next acquired by an object
        holding nothing. Never fires for a lock that did not opt in."""
        return self._revocation

    def make_revocable(self) -> None:
        """Listen for revocation requests (Curator's ``makeRevocable``): from now on a
        request to a holding of this object (:func:`~aiocoord.attempt_revoke`, or a Java
        ``Revoker.attemptRevoke``) fires :attr:`revocation`. Call it before acquiring:
        called while held, it hears the requests made from then on. Idempotent; nothing is
        sent, and nothing is ever released for the holder: release when told."""
        self.revocable = True
        for hold in self._holds:
            hold.holding.on_revoke = self._on_revoke

    async def contenders(self) -> list[Participant]:
        """Every contender, in queue order: the holder first (``holds``), then those waiting.

        The same record as every recipe's listing (see :class:`Participant`); kazoo's
        ``Lock.contenders()`` gives the identifiers alone: ``[p.identifier for p in ...]``.
        A read or write lock lists the nodes of its own half; a reader ``holds`` when no
        writer is ahead of it.
        """
        return await queue_participants(self._queue)

    # --- acquiring and releasing ------------------------------------------------------------

    def _data(self, task: asyncio.Task[Any]) -> bytes:
        ident = self.identifier if self.identifier is not None else default_identifier(task)
        return ident.encode()

    async def _enter(
        self, task: asyncio.Task[Any], timeout: float | None, blocking: bool
    ) -> QueueNode | None:
        return await self._queue.acquire(
            self._data(task),
            timeout=timeout,
            blocking=blocking,
            suspended_is_loss=self.suspended_is_loss,
        )

    async def _grant(
        self, task: asyncio.Task[Any], timeout: float | None, blocking: bool
    ) -> _Hold | None:
        # `blocking=False` answers False, the peers' way; a `timeout=` that passes raises
        # (`timeout=0`: one look, then TimeoutError if it is taken).
        raising = blocking and timeout is not None
        waited = timeout
        if timeout == 0:
            blocking, timeout = False, None
        node = await self._enter(task, timeout, blocking)
        if node is None:
            if raising:
                raise timed_out(f"lock {self.path} not acquired", waited)
            return None
        return self._hold(node, task)

    def _hold(self, node: QueueNode, task: asyncio.Task[Any]) -> _Hold:
        # No await between the grant and the Holding: no state change can fall between.
        # (The events first: a grant whose events never fired asks nothing of the holds.)
        if (self._lost.is_set() or self._revocation.is_set()) and not self.is_held:
            if self._lost.is_set():
                self._lost = LossEvent()
            if self._revocation.is_set():
                self._revocation = RevocationEvent()
        holding = Holding(
            self.client,
            node,
            what=f"lock {self.path}",
            logger=log,
            suspended_is_loss=self.suspended_is_loss,
            cancel_on_loss=self.cancel_on_loss,
            exclusive=self._queue.driver.exclusive,
            on_loss=self._on_loss,
            on_revoke=self._on_revoke if self.revocable else None,
        )
        hold = _Hold(holding, task)
        self._holds.append(hold)
        return hold

    def _on_loss(self, state: State, reason: str) -> None:
        self._lost._fire(state, reason)

    def _on_revoke(self, holding: Holding) -> None:
        if not self._revocation.is_set():
            log.info("lock %s: revocation requested of %s", self.path, holding.node.path)
        self._revocation._fire(holding.node.path)

    async def _release_hold(self, hold: _Hold) -> None:
        hold.count -= 1
        if hold.count > 0:
            if hold.lost is not None:
                raise LockLostError(f"lock {self.path} was lost ({hold.holding.lost.reason})")
            return
        # Not held from here on, even while the delete waits for the connection.
        self._holds.remove(hold)
        await hold.holding.release()

    async def _acquire_hold(self, timeout: float | None, blocking: bool) -> _Hold | None:
        raise NotImplementedError

    def _hold_of(self, task: asyncio.Task[Any] | None) -> _Hold | None:
        for h in self._holds:
            if h.task is task:
                return h
        return None

    async def _acquire_reentrant(self, timeout: float | None, blocking: bool) -> _Hold | None:
        timeout = validate_timeout(timeout)
        validate_flag(blocking, "blocking")
        task = current_task()
        hold = self._hold_of(task)
        if hold is not None:
            if hold.lost is not None:
                raise LockLostError(
                    f"lock {self.path} was lost ({hold.holding.lost.reason}); release it "
                    "before acquiring it again"
                )
            hold.count += 1
            return hold
        return await self._grant(task, timeout, blocking)

    async def _release_own(self) -> None:
        hold = self._hold_of(current_task())
        if hold is None:
            raise LockNotOwnedError(
                f"task {current_task().get_name()!r} does not hold the lock on {self.path}"
            )
        await self._release_hold(hold)

    # --- async with -----------------------------------------------------------------------

    async def __aenter__(self) -> _QueueLock:
        await self._enter_body(None)
        return self

    async def _enter_body(self, timeout: float | None) -> None:
        hold = await self._acquire_hold(timeout, True)
        assert hold is not None
        hold.holding.enter_body(hold.task)
        self._bodies.setdefault(hold.task, []).append(hold)

    def acquired(self, timeout: float | None = None) -> _Acquired:
        """``async with lock.acquired(timeout=5):`` — ``async with lock:`` with a bound on the
        wait: :class:`aiocoord.TimeoutError` after ``timeout`` seconds (nothing is left)."""
        return _Acquired(self, validate_timeout(timeout))

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        task = asyncio.current_task()
        stack = self._bodies.get(task) if task is not None else None
        if not stack:
            raise LockNotOwnedError(
                f"leaving 'async with' on {self.path}, which this task never entered"
            )
        hold = stack.pop()
        if not stack:
            del self._bodies[hold.task]
        holding = hold.holding
        if hold.lost is None:
            await holding.exit_body(hold.task, exc)
            if holding.released:
                raise LockNotOwnedError(f"lock {self.path} was released inside its 'async with'")
            await self._release_hold(hold)
            return
        if not holding.released:
            hold.count -= 1
            if hold.count <= 0:
                self._holds.remove(hold)
                await holding.leave()
        await holding.exit_body(hold.task, exc)

    def __repr__(self) -> str:
        state = "held" if self.is_held else "not held"
        return f"<{type(self).__name__} {self.path} {state}>"


class _Acquired:
    """The context manager of :meth:`Lock.acquired` (and of every lock's)."""

    __slots__ = ("_lock", "_timeout")

    def __init__(self, lock: _QueueLock, timeout: float | None) -> None:
        self._lock = lock
        self._timeout = timeout

    async def __aenter__(self) -> None:
        await self._lock._enter_body(self._timeout)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._lock.__aexit__(exc_type, exc, tb)


class Lock(_QueueLock):
    """A distributed lock, reentrant per asyncio task (Curator's ``InterProcessMutex``).

    ``async with Lock(client, "/locks/job"):``. The task holding it
    may acquire it again and must release it as often; any other task, in this process or
    another, waits its turn. :attr:`is_held` is true while some task holds it through this
    object; :attr:`held_by_current_task` asks for the calling task. See the module docstring
    for the layout, loss policies (``suspended_is_loss``, ``cancel_on_loss``) and fencing.

    Ownership follows the task, so bound waits with ``acquire(timeout=...)`` rather than
    ``asyncio.wait_for(lock.acquire(), t)``: before Python 3.12, ``wait_for`` runs the
    coroutine in a task of its own, which would then own the lock.

    ``acl`` is the ACL of the nodes it creates, parents included (None: the client's
    ``acl_provider``, else OPEN_ACL_UNSAFE).

    Bad arguments raise InvalidPathError/BadArgumentsError/InvalidTypeError before anything
    is sent.
    """

    async def acquire(self, timeout: float | None = None, blocking: bool = True) -> bool:
        """Take the lock; True once held. With ``blocking=False``, False if it is taken now.
        Raises :class:`aiocoord.TimeoutError` if ``timeout`` seconds pass first
        (``timeout=0``: at once if it is taken); then, as after cancellation, no node is left.
        A task that holds it just counts up. Raises LockLostError if this task's hold was lost
        and not yet released."""
        return await self._acquire_hold(timeout, blocking) is not None

    async def _acquire_hold(self, timeout: float | None, blocking: bool) -> _Hold | None:
        return await self._acquire_reentrant(timeout, blocking)

    async def release(self) -> None:
        """Release one level of the calling task's hold; the last one deletes the node.

        Raises LockNotOwnedError if this task does not hold the lock, LockLostError if its
        hold was lost (the hold is released all the same).
        """
        await self._release_own()

    async def __aenter__(self) -> Lock:
        await super().__aenter__()
        return self


class Mutex(_QueueLock):
    """A distributed lock that is *not* reentrant (Curator's ``InterProcessSemaphoreMutex``
    semantics): a second ``acquire`` waits until the lock is released, even in the task that
    holds it. Like :class:`asyncio.Lock`, any task may release it.

    The nodes are laid out as a :class:`Lock`'s (``<path>/_c_<uuid>-lock-<seq>``), so Mutex,
    Lock and Java ``InterProcessMutex`` on one path exclude each other. (Curator's own
    ``InterProcessSemaphoreMutex`` uses the semaphore layout; share with it through
    ``Semaphore(client, path, 1)``.) ``acl`` is the ACL of the nodes it creates, parents
    included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    async def acquire(self, timeout: float | None = None, blocking: bool = True) -> bool:
        """Take the lock; True once held. With ``blocking=False``, False if it is taken now.
        Raises :class:`aiocoord.TimeoutError` if ``timeout`` seconds pass first
        (``timeout=0``: at once if it is taken). No node is left after a False, a timeout or
        a cancellation."""
        return await self._acquire_hold(timeout, blocking) is not None

    async def _acquire_hold(self, timeout: float | None, blocking: bool) -> _Hold | None:
        timeout = validate_timeout(timeout)
        validate_flag(blocking, "blocking")
        return await self._grant(current_task(), timeout, blocking)

    async def release(self) -> None:
        """Release the lock (the calling task's hold if it has one, else the oldest hold).

        Raises LockNotOwnedError if the lock is not held through this object, LockLostError
        if the hold was lost (it is released all the same).
        """
        if not self._holds:
            raise LockNotOwnedError(f"the mutex on {self.path} is not held")
        task = asyncio.current_task()
        hold = next((h for h in self._holds if h.task is task), self._holds[0])
        await self._release_hold(hold)

    async def __aenter__(self) -> Mutex:
        await super().__aenter__()
        return self
