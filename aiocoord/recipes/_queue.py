"""The one sequential-node queue behind every lock-like recipe (Curator's ``LockInternals``).

A contender creates a protected ``EPHEMERAL_SEQUENTIAL`` child ``_c_<uuid>-<name><seq>`` of
the queue path (parents made as containers), lists the children, orders them by the trailing
10-digit sequence number only, and asks a :class:`Driver` whether the nodes ahead of it let it
through (a mutex: none ahead; a semaphore: fewer than ``max_leases``; a reader: no writer
ahead). If not, it watches the one node the driver names with a getData watch (NoNode means
"gone already": decide again at once) and waits for its deletion. Only that waiter wakes when
the node goes: there is no herd.

**Its own node, too.** A blocked waiter also keeps an exists watch on its own node (one more
request in the same round trip as the first watch; within one client it is the same server
watch as its successor's). A third party may delete the node (a recursive delete of the lock
path, say); events come in zxid order, so if our node went before the node ahead of it, the
waiter knows by the time that node's deletion wakes it, and queues again instead of taking a
grant with no node behind it. Every request made for the node is pinned to its session
(:meth:`Client.bound`): a read retried on a new session would wait in a queue the node has
left with the old one.

**Waking costs O(1).** Sequence numbers only grow, so nothing can enter the queue ahead of a
node that already exists: the first listing is a superset of every node that can ever be ahead
of ours. A woken waiter drops the deleted node and any node this client already knows to be
gone (its own deletions, and the deletion events and NoNode answers of its other waiters on the
same path), and is through at once, without a round trip, when nothing ahead is left.
Otherwise it re-arms its watch on the next node the driver names and, in the same round trip,
checks the few other nodes it knows of that may have gone unseen (pipelined ``exists``); only
when more than a couple are unverified is one listing the cheaper way to learn the same, and it
is sent along with the watch. Every driver decision is monotone (a node fewer ahead never
blocks), so deciding on a superset of the live nodes is always safe. The one exception to
"nothing is inserted ahead" is Curator's read-lock downgrade node, which reuses its write
node's sequence number; the write-lock driver asks for a fresh listing whenever a writer ahead
of it goes.

**O(1) per waiter, whatever the queue length.** A waiter keeps the nearest nodes ahead in
view (a window of 32, more if its driver needs more), from a listing sorted once per client and
shared; it looks further ahead only once those are gone. A node granted by an exclusive driver
(a mutex, a writer) and then released by this client clears everything ahead of it: when it
was granted, nothing was left ahead, and nothing can enter ahead later. So N waiters in one
client cost O(N) work, not the O(N^2) of each one sorting the whole listing.

**Round trips.** The create and the first listing are pipelined (ZooKeeper answers one
session's requests in order, so a listing written after the create sees it): an uncontended
acquire costs one round trip and a release one more. Listings of the same path by the same
client are shared when they were sent after the caller's create had been sent (contenders
entering in one burst share one); a listing that does not contain the caller's node is never
trusted. A release lets the next waiter *of the same client* in at once, without waiting for
the server: the node is ours and no longer held, and everyone else still sees it until the
delete lands, so nobody else can get ahead meanwhile. That hand-over happens only while the
session is *trusted* (connected, and answered within the liveness window; see
:mod:`aiocoord.session`): then the server cannot expire the session before the client itself
declares it LOST, so the new holder hears of any loss before another client can be let in.
While SUSPENDED, or silent for too long, the waiter waits for the server's word instead.

**No grant on an untrusted session.** Whatever woke it, a waiter returns its node only while
the session is trusted; otherwise it first asks the server, in the node's session, whether the
node still exists (:meth:`SequentialQueue._confirm_alive`).

**Cancellation and timeouts leave no node.** The create runs in a task owned by the client. A
contender that gives up deletes its node (a guaranteed delete, which finishes in the background
if the connection is down); if it gives up while the create is still in flight, the create task
deletes the node when its reply comes; and if the reply was lost to a connection loss, the node
is found by its protected prefix after a ``sync`` and deleted. :meth:`Client.wait_background`
waits for those background deletions.

**Connection and session.** A waiter survives a connection loss: its watch is restored by the
session and its node stays. If the session expires while waiting, the node is gone, so the
waiter enters the queue again with a new node once the client has a new session. A granted
node is watched by a :class:`LossWatch`, which reports the session's loss (and, under the
stricter policy, SUSPENDED) exactly once.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from aiocoord._protocol import ACL, Stat
from aiocoord._watches import EventType, Watch
from aiocoord.client import PROTECTED_PREFIX, Client
from aiocoord.errors import (
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    NoNodeError,
    SessionExpiredError,
)
from aiocoord.session import State, StateChange

log = logging.getLogger("aiocoord.recipes")
T = TypeVar("T")

__all__ = [
    "Driver",
    "LeaseDriver",
    "LossEvent",
    "LossWatch",
    "ProtectedNode",
    "QueueNode",
    "SequentialQueue",
    "delete_node",
    "join",
    "sequence_of",
    "sort_by_sequence",
]

#: Width of the counter ZooKeeper appends to sequential nodes.
SEQUENCE_DIGITS = 10
#: Above this many unverified nodes ahead (besides the one to watch), one listing is cheaper
#: than checking each of them: one request instead of several, each costing the client and
#: the server more than a name in a listing does.
_PROBE_LIMIT = 2
#: How many gone node names each (client, path) remembers; forgetting one only costs a probe.
_GONE_LIMIT = 65536
#: How long a release waits for the server to confirm its delete before it returns and lets
#: the delete finish in the background: a reply on a live link comes well within it.
RELEASE_WAIT = 0.025
#: How many of the nearest nodes ahead a waiter keeps in view (more only when its driver needs
#: more): deciding costs O(window), not O(queue length), so N waiters cost O(N), not O(N^2).
_WINDOW = 32

# Orders events in this process: a shared listing may serve a caller only if it was sent after
# the caller's create was.
_STAMPS = itertools.count(1)


def sequence_of(name: str) -> int | None:
    """The trailing 10-digit sequence number of a node name, or None if it has none."""
    tail = name[-SEQUENCE_DIGITS:]
    if len(tail) == SEQUENCE_DIGITS and tail.isascii() and tail.isdigit():
        return int(tail)
    return None


def sort_by_sequence(names: Sequence[str]) -> list[str]:
    """The names that carry a sequence number, ordered by it alone (as Curator orders them).

    The protected prefix (a random UUID) must not decide the order, so names are never
    compared whole; ties (a read-lock downgrade node shares its write node's number) keep
    a stable order by name.
    """
    keyed = [(seq, n) for n in names if (seq := sequence_of(n)) is not None]
    keyed.sort()
    return [n for _, n in keyed]


def join(parent: str, name: str) -> str:
    """``parent`` + ``/`` + ``name`` (``parent`` may be ``/``)."""
    return parent.rstrip("/") + "/" + name


async def delete_node(client: Client, path: str, *, cleared: bool = False) -> None:
    """Delete a node of ours for sure, waiting at most :data:`RELEASE_WAIT` for the server: the
    delete finishes in the background if the reply takes longer (a dead link, SUSPENDED), and
    cancelling the caller does not stop it (a guaranteed delete).

    While the session is trusted (:meth:`Session.trusted`), the node counts as gone for this
    client's waiters at once: it is ours and no longer held (released, given up or lost), so a
    waiter of ours right behind it may go ahead while the delete is on its way (the local
    hand-over); waiters elsewhere see the node until the server has deleted it. Otherwise
    (SUSPENDED, or no answer for the liveness window) the session may be expiring unseen and
    the server may hand the lock to another client, so the waiters hear of the deletion only
    from the server (their watch on the node), or lose their own node with the session.
    ``cleared``: the node was granted by an exclusive driver, so no node ahead of it was left
    (see :meth:`_PathState.mark_gone`).
    """
    if client.session.trusted():
        _forget_node(client, path, cleared)
    # Else the waiters' own watches on the node tell them once the server has deleted it.
    task = client.spawn(_delete_for_sure(client, path), f"aiocoord-release:{path}")
    # The caller's holding is over: it waits for the server only briefly, so that a release
    # on a dead link (not yet detected) returns at once, and the delete goes on in the
    # background (Client.wait_background waits for it; the session's end removes the node).
    await asyncio.wait((task,), timeout=RELEASE_WAIT)


async def _delete_for_sure(client: Client, path: str) -> None:
    try:
        await client.delete(path, guaranteed=True)
    except NoNodeError:
        pass
    except (ClientClosedError, SessionExpiredError):
        pass  # the session, and with it every ephemeral node of ours, is gone
    except CoordinationError as exc:
        log.warning("could not delete %s: %r", path, exc)


# --- nodes ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueNode:
    """A node of ours in a queue: where it is, its place, and the session that owns it."""

    path: str
    name: str
    sequence: int
    #: the zxid of its creation: grows with every node created later (a fencing token)
    czxid: int
    session_id: int
    #: the client's session generation the node belongs to (``client.session.generation``)
    generation: int
    #: a watch on the node itself that a waiter armed while it waited, handed to the holding
    #: (:class:`LossWatch`) so that a contended grant costs no request to watch the node
    own: Watch | None = field(default=None, compare=False)

    def alive_in(self, client: Client) -> bool:
        """False once the session that owns the node has ended."""
        return client.session.generation == self.generation and client.session_id == (
            self.session_id
        )


class _Restart(Exception):
    """Our node is gone (session expired, or deleted by someone): enter the queue again."""


class _TimedOut(Exception):
    """The caller's deadline passed."""


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    left = deadline - asyncio.get_running_loop().time()
    if left <= 0:
        raise _TimedOut()
    return left


async def _bounded(aw: Awaitable[T], deadline: float | None) -> T:
    """Await ``aw`` before ``deadline`` (raise _TimedOut after it)."""
    if deadline is None:
        return await aw
    try:
        left = _remaining(deadline)
    except _TimedOut:
        if asyncio.iscoroutine(aw):
            aw.close()
        raise
    try:
        return await asyncio.wait_for(aw, left)
    except asyncio.TimeoutError:
        raise _TimedOut() from None


async def _await_future(fut: asyncio.Future[T], deadline: float | None) -> T:
    """The future's result, waiting at most until ``deadline``; never cancels ``fut``."""
    if not fut.done():
        await asyncio.wait((fut,), timeout=_remaining(deadline))
        if not fut.done():
            raise _TimedOut()
    return fut.result()


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


class ProtectedNode:
    """One protected ephemeral node being created: ``<parent>/_c_<uuid>-<name>[<seq>]``.

    The create runs in a task owned by the client, so it is written at once and pipelines with
    whatever the caller sends next. :meth:`result` waits for it; after a connection loss it
    finds the node by its prefix (after a ``sync``, so a create still on its way is ordered
    first) or creates it again. :meth:`discard` makes sure the node does not outlive its
    caller, whatever state the create is in.
    ``acl`` is the node's, and its parents' if they are made (None: OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        parent: str,
        name: str,
        data: bytes,
        *,
        sequential: bool = True,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        self.client = client
        self.parent = parent
        self.acl = acl
        self.prefix = f"{PROTECTED_PREFIX}{uuid.uuid4()}-"
        self._path = join(parent, self.prefix + name)
        self._data = data
        self._sequential = sequential
        self.node: QueueNode | None = None
        #: when the create was handed to the session (None until it was)
        self.sent_stamp: int | None = None
        self._abandoned = False
        self._maybe_exists = True
        self._reply: asyncio.Future[tuple[str, Stat]]
        self._start()

    def _start(self) -> None:
        self._reply = asyncio.get_running_loop().create_future()
        self._reply.add_done_callback(_retrieve)
        self.client.spawn(self._create(self._reply), f"aiocoord-create:{self._path}")

    async def _create(self, reply: asyncio.Future[tuple[str, Stat]]) -> None:
        self.sent_stamp = next(_STAMPS)
        try:
            result = await self._create_once()
        except asyncio.CancelledError:
            # Only the client cancels the tasks it owns, and only when it is closed.
            if not reply.done():
                reply.set_exception(ClientClosedError("client closed while creating a node"))
            raise
        except BaseException as exc:
            if self._abandoned:
                if isinstance(exc, ConnectionLossError):
                    await self._sweep()
            elif not reply.done():
                reply.set_exception(exc)
            return
        if self._abandoned:
            # The caller left while the reply was on its way: the node is ours to remove.
            await delete_node(self.client, result[0])
        elif not reply.done():
            reply.set_result(result)

    async def _create_once(self) -> tuple[str, Stat]:
        attempts = 3
        while True:
            try:
                return await self.client.create(
                    self._path,
                    self._data,
                    ephemeral=True,
                    sequential=self._sequential,
                    make_parents=True,
                    parents_as_containers=True,
                    acl=self.acl,
                    with_stat=True,
                )
            except NoNodeError:
                # The server removes an empty container parent on its own schedule; it may
                # have done so between making the parents and this create.
                attempts -= 1
                if attempts == 0:
                    raise

    async def result(self, deadline: float | None) -> QueueNode:
        """The created node; raises _Restart if it belongs to a session that has ended."""
        client = self.client
        while self.node is None:
            try:
                path, stat = await _await_future(self._reply, deadline)
            except ConnectionLossError:
                found = await self._find(deadline)
                if found is None:
                    # Not created (a sync ran first, so a create still in flight would show):
                    # the same name is safe to try again.
                    self._maybe_exists = True
                    self._start()
                    continue
                path, stat = found
            if stat.ephemeral_owner != client.session_id:
                raise _Restart()  # made by a session that has ended: it vanishes with it
            name = path.rsplit("/", 1)[1]
            seq = sequence_of(name)
            assert seq is not None, name
            self.node = QueueNode(
                path, name, seq, stat.czxid, stat.ephemeral_owner, client.session.generation
            )
        return self.node

    async def _find(self, deadline: float | None) -> tuple[str, Stat] | None:
        client = self.client
        try:
            await _bounded(client.sync(self.parent), deadline)
            names = await _bounded(client.children(self.parent), deadline)
        except NoNodeError:
            names = []
        for name in names:
            if name.startswith(self.prefix):
                path = join(self.parent, name)
                stat = await _bounded(client.exists(path), deadline)
                if stat is not None:
                    return path, stat
        self._maybe_exists = False
        return None

    async def _sweep(self) -> None:
        """Find the node by its prefix and delete it (the create's reply was lost)."""
        client = self.client
        try:
            await client.sync(self.parent)
            names = await client.children(self.parent)
        except NoNodeError:
            return
        except CoordinationError as exc:
            log.info("could not look for %s* in %s: %r", self.prefix, self.parent, exc)
            return
        for name in names:
            if name.startswith(self.prefix):
                await delete_node(client, join(self.parent, name))

    async def discard(self) -> None:
        """Make sure this node does not outlive its caller.

        A known node is deleted now (or in the background if the connection is down). A
        create still in flight deletes its node when the reply comes. A node whose create
        reply was lost is looked for by its prefix in the background.
        """
        self._abandoned = True
        if self.node is not None:
            await delete_node(self.client, self.node.path)
            return
        reply = self._reply
        if not reply.done() or reply.cancelled():
            return  # the create task sees _abandoned when it finishes
        exc = reply.exception()
        if exc is None:
            await delete_node(self.client, reply.result()[0])
        elif isinstance(exc, ConnectionLossError) and self._maybe_exists:
            self.client.spawn(self._sweep(), f"aiocoord-sweep:{self.parent}")


async def _abandon_watch(task: asyncio.Future[Watch | None]) -> None:
    """Stop arming a watch on our own node (the node is about to be discarded, which consumes
    the watch if it was armed)."""
    if not task.done():
        task.cancel()
    await asyncio.wait((task,))
    _retrieve(task)


# --- per-client knowledge of a queue ------------------------------------------------------


class _Listing:
    """A listing of one queue path that several waiters of one client may share."""

    __slots__ = ("_names", "future", "sent")

    def __init__(self) -> None:
        self.future: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self.future.add_done_callback(_retrieve)
        #: when the request was handed to the session; None while it waits to be sent
        self.sent: int | None = None
        self._names: frozenset[str] | None = None

    def contains(self, name: str) -> bool:
        """Whether the (completed) listing holds ``name``."""
        if self._names is None:
            self._names = frozenset(self.future.result())
        return name in self._names


class _PathState:
    """What one client knows about one queue path: names seen gone, and a shared listing."""

    __slots__ = ("_last", "_listing", "_sorted", "_waiting", "cleared", "gone", "users")

    def __init__(self) -> None:
        self.gone: dict[str, None] = {}  # an ordered set: the oldest is forgotten first
        #: gone names that had been granted by an exclusive driver: when such a node was
        #: granted, no node ahead of it was left, and none can enter ahead later
        self.cleared: dict[str, None] = {}
        self.users = 0
        self._listing: _Listing | None = None
        self._last: _Listing | None = None  # the latest completed listing
        self._sorted: tuple[list[str], list[tuple[int, str]]] | None = None
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}

    def sorted_keys(self, names: list[str]) -> list[tuple[int, str]]:
        """``(sequence, name)`` of the listing ``names``, sorted; computed once per listing
        (waiters sharing a listing share the very list object)."""
        cached = self._sorted
        if cached is not None and cached[0] is names:
            return cached[1]
        keyed = sorted((seq, n) for n in names if (seq := sequence_of(n)) is not None)
        self._sorted = (names, keyed)
        return keyed

    def mark_gone(self, name: str, cleared: bool = False) -> None:
        if cleared:
            _remember(self.cleared, name)
        _remember(self.gone, name)
        for fut in self._waiting.pop(name, ()):
            if not fut.done():
                fut.set_result(None)

    def when_gone(self, name: str) -> asyncio.Future[None]:
        """A future resolved when this client learns ``name`` is gone (see mark_gone)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if name in self.gone:
            fut.set_result(None)
        else:
            self._waiting.setdefault(name, []).append(fut)
        return fut

    def stop_waiting(self, name: str, fut: asyncio.Future[None]) -> None:
        """Withdraw a future of :meth:`when_gone` that is no longer awaited."""
        futures = self._waiting.get(name)
        if futures is not None and fut in futures:
            futures.remove(fut)
            if not futures:
                del self._waiting[name]

    async def children(
        self,
        client: Client,
        path: str,
        after: int,
        *,
        gather: bool = False,
        containing: str | None = None,
    ) -> list[str]:
        """The children of ``path`` from a listing sent after stamp ``after``.

        A listing in flight serves if it was sent after ``after``, or is still to be sent.
        With ``gather``, a new listing waits one loop iteration before it is sent, so that
        contenders entering in the same burst (their creates written meanwhile) share it.

        With ``containing`` (the caller's node), any listing that holds that node serves,
        whenever it was sent, the latest completed one included: it was read after the node
        was made, so every node that can be ahead of it is there unless gone since (and a
        superset of the live nodes is always safe to decide on). A burst of contenders that
        found no parent thus shares one listing instead of sending one each.
        """
        if containing is not None:
            last = self._last
            if last is not None and last.contains(containing):
                return last.future.result()
        current = self._listing
        if (
            current is not None
            and not current.future.done()
            and (containing is not None or current.sent is None or current.sent > after)
        ):
            with contextlib.suppress(_LeaderGone):
                names = await asyncio.shield(current.future)
                if containing is None or current.contains(containing):
                    return names
        listing = self._listing = _Listing()
        fut = listing.future
        try:
            if gather:
                await asyncio.sleep(0)
            listing.sent = next(_STAMPS)
            names = await client.children(path)
        except asyncio.CancelledError:
            fut.set_exception(_LeaderGone())  # the joiners list for themselves
            raise
        except BaseException as exc:
            fut.set_exception(exc)
            raise
        finally:
            if self._listing is listing:
                self._listing = None
        fut.set_result(names)
        self._last = listing
        return names


def _remember(names: dict[str, None], name: str) -> None:
    """Add ``name`` to an ordered set of at most _GONE_LIMIT names (the oldest goes first)."""
    names[name] = None
    if len(names) > _GONE_LIMIT:
        del names[next(iter(names))]


class _LeaderGone(Exception):
    """The task whose listing others joined was cancelled."""


_STATES: weakref.WeakKeyDictionary[Client, dict[str, _PathState]] = weakref.WeakKeyDictionary()


def _enter_state(client: Client, path: str) -> _PathState:
    per_client = _STATES.get(client)
    if per_client is None:
        per_client = _STATES[client] = {}
    state = per_client.get(path)
    if state is None:
        state = per_client[path] = _PathState()
    state.users += 1
    return state


def _leave_state(client: Client, path: str, state: _PathState) -> None:
    state.users -= 1
    if state.users <= 0:
        per_client = _STATES.get(client)
        if per_client is not None and per_client.get(path) is state:
            del per_client[path]


def _forget_node(client: Client, path: str, cleared: bool = False) -> None:
    """Tell this client's waiters on the node's queue that the node is gone."""
    per_client = _STATES.get(client)
    if not per_client:
        return
    parent, _, name = path.rpartition("/")
    state = per_client.get(parent or "/")
    if state is not None:
        state.mark_gone(name, cleared)


# --- drivers ----------------------------------------------------------------------------


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


# --- loss -------------------------------------------------------------------------------


class LossEvent:
    """Fires once when a held lock (or lease) is lost: ``await lock.lost``.

    ``state`` says why: :attr:`State.LOST` (the node is gone: the session expired, or someone
    else deleted the node), :attr:`State.SUSPENDED` (connection lost, under the
    ``suspended_is_loss`` policy) or :attr:`State.CLOSED` (the client was closed).
    ``reason`` is the same as a word: ``"lost"``, ``"suspended"``, ``"closed"``, or
    ``"deleted"`` when the node was deleted by someone other than its holder.
    """

    __slots__ = ("_event", "reason", "state")

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.state: State | None = None
        self.reason: str | None = None

    def is_set(self) -> bool:
        """True once the loss happened."""
        return self._event.is_set()

    async def wait(self, timeout: float | None = None) -> State:
        """Wait for the loss (TimeoutError after ``timeout`` seconds); returns its cause."""
        await asyncio.wait_for(self._event.wait(), timeout)
        assert self.state is not None
        return self.state

    def __await__(self) -> Generator[Any, None, State]:
        return self.wait().__await__()

    def _fire(self, state: State, reason: str | None = None) -> None:
        if not self._event.is_set():
            self.state = state
            self.reason = reason if reason is not None else state.value
            self._event.set()

    def __repr__(self) -> str:
        return f"<LossEvent {self.state.value if self.state else 'not set'}>"


def is_loss(change: StateChange, suspended_is_loss: bool) -> bool:
    """Whether a state change ends a holding: the session's end always; SUSPENDED only
    under the stricter policy (Curator's "standard" ConnectionStateErrorPolicy)."""
    if change.state in (State.LOST, State.CLOSED):
        return True
    if change.new_session:
        return True
    return suspended_is_loss and change.state is State.SUSPENDED


class LossWatch:
    """Calls ``callback(state, reason)`` once when ``node`` can no longer be trusted to be
    held: the session's end (and SUSPENDED under ``suspended_is_loss``), or the deletion of
    the node by anyone but its holder (``State.LOST``, ``"deleted"``; with ``watch_node``).

    Start it in the same step as the grant (no ``await`` in between), so that no state change
    falls between the two. :meth:`close` stops it (on release).

    The node is watched with an exists watch armed in the background: the grant does not
    wait for it, and a deletion that comes before the watch is armed shows as "no node" in
    its answer, so none is missed. The watch is left for the holder's own delete to consume
    (nothing is sent to remove it).
    """

    __slots__ = ("_callback", "_client", "_node", "_remove", "_suspended_is_loss")

    def __init__(
        self,
        client: Client,
        node: QueueNode,
        suspended_is_loss: bool,
        callback: Callable[[State, str], None],
        *,
        watch_node: bool = True,
    ) -> None:
        self._client = client
        self._node = node
        self._suspended_is_loss = suspended_is_loss
        self._callback = callback
        self._remove: Callable[[], None] | None = client.add_state_listener(self._on_change)
        if not watch_node:
            return
        if node.own is not None and not node.own.done():
            node.own.add_done_callback(self._on_node_event)
        else:
            client.spawn(self._arm(), f"aiocoord-hold:{node.path}")

    def _on_change(self, change: StateChange) -> None:
        if self._remove is None:
            return
        if is_loss(change, self._suspended_is_loss) or not self._node.alive_in(self._client):
            self.close()
            state = State.LOST if change.new_session else change.state
            self._callback(state, state.value)

    async def _arm(self) -> None:
        node = self._node
        pinned = self._client.bound(node.generation)
        while self._remove is not None:
            try:
                stat, watch = await pinned.exists(node.path, watch=True)
            except ConnectionLossError:
                continue  # lost in flight; the next try waits for the reconnect
            except (SessionExpiredError, ClientClosedError):
                return  # the state listener reports the session's end
            if stat is None:
                watch.cancel()  # an exists watch on a missing node waits for its creation
                self._deleted()
            else:
                watch.keep()
                watch.add_done_callback(self._on_node_event)
            return

    def _on_node_event(self, watch: Watch) -> None:
        event = watch.fired()
        if event is None or self._remove is None:
            return  # the session ended (reported by the state listener), or released
        if event.type is EventType.DELETED:
            self._deleted()
        else:  # a data change consumed the watch: arm it again
            self._client.spawn(self._arm(), f"aiocoord-hold:{self._node.path}")

    def _deleted(self) -> None:
        if self._remove is None:
            return
        self.close()
        self._callback(State.LOST, "deleted")

    def close(self) -> None:
        """Stop watching (idempotent)."""
        remove, self._remove = self._remove, None
        if remove is not None:
            remove()


# --- the queue --------------------------------------------------------------------------


class SequentialQueue:
    """A queue of protected sequential nodes under ``path``; see the module docstring.

    ``lock_name`` is the node name before the sequence (``lock-``, ``__READ__``, ``lease-``),
    ``driver`` decides who is through. The object holds no state about its contenders, so any
    number of tasks may use one queue at the same time. ``acl`` goes to every node it creates,
    parents included (None: OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        lock_name: str,
        driver: Driver,
        *,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.lock_name = lock_name
        self.driver = driver
        self.acl = acl

    async def acquire(
        self,
        data: bytes,
        *,
        timeout: float | None = None,
        blocking: bool = True,
        suspended_is_loss: bool = False,
    ) -> QueueNode | None:
        """Enter the queue and wait until the driver lets our node through.

        Returns the node, or None if ``blocking`` is false and the node was not through at
        once, or if ``timeout`` seconds passed first; either way no node is left behind. The
        caller must start its :class:`LossWatch` before its next ``await``. Under
        ``suspended_is_loss`` a node is not granted while the connection is SUSPENDED.
        Cancelling leaves no node (see :meth:`ProtectedNode.discard`).
        """
        client = self.client
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        state = _enter_state(client, self.path)
        try:
            while True:
                entry = ProtectedNode(client, self.path, self.lock_name, data, acl=self.acl)
                try:
                    node = await self._wait_turn(entry, state, deadline, blocking)
                    if node is not None and suspended_is_loss and not client.connected:
                        node = await self._after_suspension(node, deadline)
                except _Restart:
                    await entry.discard()
                    continue
                except _TimedOut:
                    await entry.discard()
                    return None
                except BaseException:
                    await entry.discard()
                    raise
                if node is None:
                    await entry.discard()
                return node
        finally:
            _leave_state(client, self.path, state)

    async def _after_suspension(self, node: QueueNode, deadline: float | None) -> QueueNode:
        # Granted while disconnected: under the strict policy that is not held yet. Once the
        # connection is back the grant stands if the session (and so the node) survived.
        client = self.client
        while not client.connected:
            await _bounded(client.wait_for(State.CONNECTED), deadline)
        if not node.alive_in(client):
            raise _Restart()
        return node

    async def enter_at(self, data: bytes, sequence: int) -> QueueNode:
        """Create a non-sequential protected ephemeral node that sorts at ``sequence`` and
        is granted at once (Curator 5.4's read-lock downgrade node). Cancelling leaves none."""
        name = f"{self.lock_name}{sequence:0{SEQUENCE_DIGITS}d}"
        entry = ProtectedNode(self.client, self.path, name, data, sequential=False, acl=self.acl)
        while True:
            try:
                return await entry.result(None)
            except _Restart:
                await entry.discard()
                entry = ProtectedNode(
                    self.client, self.path, name, data, sequential=False, acl=self.acl
                )
            except BaseException:
                await entry.discard()
                raise

    async def release(self, node: QueueNode) -> None:
        """Delete ``node`` for sure (in the background once reconnected, if need be); a
        waiter of this client right behind it goes ahead at once (see :func:`delete_node`)."""
        await delete_node(self.client, node.path, cleared=self.driver.exclusive)

    async def participants(self, name_filter: str | None = None) -> list[tuple[str, bytes]]:
        """``(name, data)`` of every queued node, in queue order; ``name_filter`` keeps
        only names containing it. Nodes that vanish meanwhile are left out."""
        client = self.client
        try:
            names = await client.children(self.path)
        except NoNodeError:
            return []
        if name_filter is not None:
            names = [n for n in names if name_filter in n]
        ordered = sort_by_sequence(names)
        replies = await asyncio.gather(
            *(client.get(join(self.path, n)) for n in ordered), return_exceptions=True
        )
        out: list[tuple[str, bytes]] = []
        for name, reply in zip(ordered, replies, strict=True):
            if isinstance(reply, NoNodeError):
                continue
            if isinstance(reply, BaseException):
                raise reply
            out.append((name, reply[0]))
        return out

    # --- waiting --------------------------------------------------------------------------

    async def _wait_turn(
        self, entry: ProtectedNode, state: _PathState, deadline: float | None, blocking: bool
    ) -> QueueNode | None:
        client = self.client
        driver = self.driver
        # Let the create task write its request first, so that the listing below is ordered
        # after it on the wire and pipelines with it (one round trip for both).
        await asyncio.sleep(0)
        after = entry.sent_stamp if entry.sent_stamp is not None else next(_STAMPS)
        try:
            names: list[str] | None = await _bounded(
                state.children(client, self.path, after, gather=True), deadline
            )
        except NoNodeError:
            names = None  # the parents were missing; the create makes them
        node = await entry.result(deadline)
        if names is None or node.name not in names:
            names = await self._listing(node, state, deadline)
        # `ahead`: the nearest relevant nodes ahead of ours, taken from the listing `source`;
        # `truncated`: more are further ahead in it (looked at once the nearest are gone).
        source = names
        ahead, truncated = self._ahead(source, node, state)
        # Requests made for the node run only in its session: a read retried on a new session
        # would keep waiting in a queue that the node, gone with the old session, has left.
        pinned = client.bound(node.generation)
        # Once blocked, we watch our own node too: a third party may delete it (the whole lock
        # path, say). Events arrive in zxid order, so if our node went before the node ahead
        # of it, we know by the time the latter's deletion wakes us.
        own: Watch | None = None
        stale = False  # whether nodes in `ahead` may have gone unseen
        need_listing = False
        while True:
            if own is not None and own.done():
                event = own.fired()
                if event is None or event.type is EventType.DELETED:
                    raise _Restart()
                own = None  # a data change consumed it: armed again with the next probe
            # Names this client saw go since (its own deletions, its other waiters' events).
            if any(n in state.gone for n in ahead):
                for n in ahead:
                    if n in state.gone and driver.needs_listing_after(n):
                        need_listing = True
                cut = 0
                for i, n in enumerate(ahead):
                    if n in state.cleared:
                        cut = i + 1  # granted exclusively, then gone: nothing before it is left
                if cut:
                    ahead = ahead[cut:]
                    truncated = False
                ahead = [n for n in ahead if n not in state.gone]
            blocker = driver.blocker(ahead)
            if blocker is None and truncated:
                # The nodes in view are gone; look further ahead in the listing (those may
                # have gone unseen, so they are checked before they are trusted).
                ahead, truncated = self._ahead(source, node, state)
                stale = bool(ahead)
                continue
            if blocker is None and not need_listing:
                await self._confirm_alive(pinned, node, deadline)
                if own is not None and not own.done():
                    return replace(node, own=own)
                return node
            if not blocking:  # decided on the first, fresh listing
                return None
            others = [n for n in ahead if n != blocker] if stale else []
            # A few unverified nodes are checked one by one; past that, one listing (sent
            # with the watch, in the same round trip) is the cheaper way to learn the same.
            relist = need_listing or len(others) > _PROBE_LIMIT
            arming = (
                None if own is not None else asyncio.ensure_future(self._watch_own(pinned, node))
            )
            try:
                watch, gone, fresh = await self._probe(
                    pinned,
                    blocker,
                    [] if relist else others,
                    deadline,
                    node if relist else None,
                    state,
                )
            except BaseException:
                if arming is not None:
                    await _abandon_watch(arming)
                raise
            if arming is not None:
                try:
                    own = await _bounded(arming, deadline)
                except BaseException:
                    if watch is not None:
                        watch.cancel()
                    await _abandon_watch(arming)
                    raise
            stale = False
            if fresh is not None:
                gone.update(set(ahead) - set(fresh))
                source = fresh
                ahead, truncated = self._ahead(source, node, state)
                need_listing = False
                if watch is not None and driver.blocker(ahead) != blocker:
                    watch.cancel()
                    watch = None
            for n in gone:
                state.mark_gone(n)
                if fresh is None and driver.needs_listing_after(n):
                    need_listing = True
            if gone and fresh is None:
                ahead = [n for n in ahead if n not in gone]
            if watch is None:
                # The node to watch was gone already: the others we know of may be too (our
                # listing may be an older one), so the next probe checks them as well.
                stale = fresh is None and bool(ahead)
                continue
            assert blocker is not None  # a watch is only armed on a blocker
            try:
                deleted = await self._wait_gone(watch, blocker, state, deadline, own)
            except SessionExpiredError:
                if client.session.reconnect_after_expiry:
                    raise _Restart() from None
                raise
            if deleted:
                state.mark_gone(blocker)
                need_listing = need_listing or driver.needs_listing_after(blocker)
                ahead = [n for n in ahead if n != blocker]
                stale = bool(ahead)
            # Any other event (a data change) leaves the node in place: the loop re-arms.

    async def _confirm_alive(self, pinned: Client, node: QueueNode, deadline: float | None) -> None:
        """Return once ``node``'s session may be trusted (:meth:`Session.trusted`); raise
        _Restart if the node or its session is gone.

        A grant is only as good as the session behind it. A client that is connected and heard
        from the server within the liveness window knows the server cannot have expired the
        session (see :mod:`aiocoord.session`); any other client (SUSPENDED, or silent for
        too long) asks the server first, in the node's session: an answer that finds the node
        proves the session alive at a moment from which its loss would be reported in time.
        """
        client = self.client
        while True:
            if not node.alive_in(client):
                raise _Restart()
            if client.session.trusted():
                return
            try:
                stat = await _bounded(pinned.exists(node.path), deadline)
            except ConnectionLossError:
                continue  # the request waits for the reconnect the next time round
            except SessionExpiredError:
                if client.session.reconnect_after_expiry:
                    raise _Restart() from None
                raise
            if stat is None:
                raise _Restart()

    async def _watch_own(self, pinned: Client, node: QueueNode) -> Watch | None:
        """Arm a watch on our own node, left in place until the node's deletion (by us or
        anyone) consumes it. None if it could not be armed now (a connection loss: the next
        probe tries again); raises _Restart if the node or its session is gone."""
        try:
            stat, watch = await pinned.exists(node.path, watch=True)
        except ConnectionLossError:
            return None
        except SessionExpiredError:
            if self.client.session.reconnect_after_expiry:
                raise _Restart() from None
            raise
        if stat is None:
            watch.cancel()
            raise _Restart()
        watch.keep()
        return watch

    def _ahead(
        self, names: list[str], node: QueueNode, state: _PathState
    ) -> tuple[list[str], bool]:
        """The nearest relevant nodes of ``names`` ahead of ``node`` not known to be gone,
        oldest first, at most a window of them; and whether more are further ahead."""
        keyed = state.sorted_keys(names)
        i = bisect.bisect_left(keyed, (node.sequence, ""))
        relevant = self.driver.relevant
        gone = state.gone
        cleared = state.cleared
        window = self.driver.window
        limit = len(keyed) if window is None else max(_WINDOW, window)
        out: list[str] = []
        truncated = False
        while i > 0:
            i -= 1
            name = keyed[i][1]
            if name in cleared:
                break  # granted exclusively, then gone: nothing before it is left
            if name == node.name or name in gone or not relevant(name):
                continue
            out.append(name)
            if len(out) >= limit:
                truncated = i > 0
                break
        out.reverse()
        return out, truncated

    async def _listing(
        self, node: QueueNode, state: _PathState, deadline: float | None
    ) -> list[str]:
        """A listing sent after now, which must contain our node (else it is gone)."""
        try:
            names = await _bounded(
                state.children(self.client, self.path, next(_STAMPS), containing=node.name),
                deadline,
            )
        except NoNodeError:
            raise _Restart() from None
        except SessionExpiredError:
            if self.client.session.reconnect_after_expiry:
                raise _Restart() from None
            raise
        if node.name not in names:
            raise _Restart()
        return names

    async def _probe(
        self,
        pinned: Client,
        blocker: str | None,
        others: Sequence[str],
        deadline: float | None,
        list_for: QueueNode | None,
        state: _PathState,
    ) -> tuple[Watch | None, set[str], list[str] | None]:
        """In one round trip: arm a getData watch on ``blocker``, check that ``others``
        exist, and (with ``list_for``, our node) list the children afresh.

        Returns the watch (None if ``blocker`` is gone), the names found gone, and the
        listing (None unless asked for). Raises _Restart if our node is gone.
        """
        client = self.client
        gone: set[str] = set()
        try:
            if blocker is not None and not others and list_for is None:
                try:
                    _, _, watch = await _bounded(
                        pinned.get(join(self.path, blocker), watch=True), deadline
                    )
                except NoNodeError:
                    gone.add(blocker)
                    return None, gone, None
                return watch, gone, None
            # Created in this order, the tasks write their requests in this order: the
            # listing, last, shows the state after the watch was armed.
            get_task = (
                asyncio.ensure_future(pinned.get(join(self.path, blocker), watch=True))
                if blocker is not None
                else None
            )
            exist_tasks = [asyncio.ensure_future(pinned.exists(join(self.path, n))) for n in others]
            list_task = (
                asyncio.ensure_future(state.children(client, self.path, next(_STAMPS)))
                if list_for is not None
                else None
            )
            tasks: list[asyncio.Future[Any]] = [
                t for t in (get_task, *exist_tasks, list_task) if t is not None
            ]
            finished = False
            try:
                await _bounded(asyncio.wait(tasks), deadline)
                finished = True
            finally:
                if not finished:
                    for t in tasks:
                        t.cancel()
                    await asyncio.wait(tasks)
                    if (
                        get_task is not None
                        and not get_task.cancelled()
                        and get_task.exception() is None
                    ):
                        get_task.result()[2].cancel()  # nobody will wait on it
        except SessionExpiredError:
            if client.session.reconnect_after_expiry:
                raise _Restart() from None
            raise
        first_error: BaseException | None = None
        armed: Watch | None = None
        for name, t in zip(others, exist_tasks, strict=True):
            exc = t.exception()
            if exc is not None:
                first_error = first_error or exc
            elif t.result() is None:
                gone.add(name)
        if get_task is not None:
            assert blocker is not None
            exc = get_task.exception()
            if exc is None:
                armed = get_task.result()[2]
            elif isinstance(exc, NoNodeError):
                gone.add(blocker)
            else:
                first_error = first_error or exc
        names: list[str] | None = None
        if list_task is not None:
            assert list_for is not None
            exc = list_task.exception()
            if exc is None:
                names = list_task.result()
                if list_for.name not in names:
                    first_error = first_error or _Restart()
            elif isinstance(exc, NoNodeError):
                first_error = first_error or _Restart()
            else:
                first_error = first_error or exc
        if first_error is not None:
            if armed is not None:
                armed.cancel()
            if (
                isinstance(first_error, SessionExpiredError)
                and client.session.reconnect_after_expiry
            ):
                raise _Restart() from first_error
            raise first_error
        return armed, gone, names

    async def _wait_gone(
        self,
        watch: Watch,
        blocker: str,
        state: _PathState,
        deadline: float | None,
        own: Watch | None,
    ) -> bool:
        """Wait until ``blocker`` goes: True once it has (its deletion event came, or this
        client released it), False on another event (a data change: the node is still there,
        or the watch on our own node ``own`` fired: the caller looks at it).

        A node released by this client wakes its waiter here at once, before the server has
        deleted it: the hand-over inside one client costs no round trip. The watch is then
        left armed (the deletion on its way fires and clears it, sparing a request to remove
        it); in every other case it is fired or removed before returning.
        """
        local = state.when_gone(blocker)
        fired: asyncio.Future[Any] | None = None
        mine: asyncio.Future[Any] | None = None
        try:
            if local.done():
                return True
            # watch.wait() shields the watch: cancelling `fired` leaves the watch armed.
            fired = asyncio.ensure_future(watch.wait())
            waiting: tuple[asyncio.Future[Any], ...] = (fired, local)
            if own is not None:
                mine = asyncio.ensure_future(own.wait())
                waiting = (*waiting, mine)
            done, _ = await asyncio.wait(
                waiting, timeout=_remaining(deadline), return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                watch.cancel()
                raise _TimedOut()
            if fired in done:
                event = fired.result()
                return bool(event.type is EventType.DELETED)
            if local in done:
                return True
            watch.cancel()  # our own node changed (or went): the caller decides again
            return False
        except BaseException:
            watch.cancel()  # cancelled, timed out or failed: remove the server watch
            raise
        finally:
            state.stop_waiting(blocker, local)
            for f in (fired, mine):
                if f is not None and not f.done():
                    f.cancel()
                elif f is not None:
                    _retrieve(f)
