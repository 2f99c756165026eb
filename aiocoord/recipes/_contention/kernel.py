"""The one sequential-node queue behind every lock-like recipe (Curator's ``LockInternals``).

A contender creates a protected ``EPHEMERAL_SEQUENTIAL`` child ``_c_<uuid>-<name><seq>`` of
the queue path (parents made as its layout says), lists the children, orders them by the trailing
10-digit sequence number only, and asks a :class:`Driver` whether the nodes ahead of it let it
through (a mutex: none ahead; a semaphore: fewer than ``max_leases``; a reader: no writer
ahead). If not, it watches the one node the driver names with a getData watch (NoNode means
"gone already": decide again at once) and waits for its deletion. Only that waiter wakes when
the node goes: there is no herd.

**Its own node, too.** A blocked waiter that may be let through with no listing after its
wake (nothing else ahead of the node it waits for, that node is this client's own and may be
handed over locally, or a look-ahead will tell it so) also keeps a watch on its own
node (in the same round trip as the first watch; within one client it is the same server
watch as its successor's; a holder keeps it to watch for a loss). A third party may delete
the node (a recursive delete of the lock path, say); events come in zxid order, so if our node
went before the node ahead of it, the waiter knows by the time that node's deletion wakes it,
and queues again instead of taking a grant with no node behind it. Other waiters list after
their wake (a listing that holds the node proves it); one through with neither asks about its
node before the grant. Every request made for the node is pinned to its session
(:meth:`Client.bound`): a read retried on a new session would wait in a queue the node has
left with the old one.

**Waking costs O(1).** Sequence numbers only grow, so nothing can enter the queue ahead of a
node that already exists: the first listing is a superset of every node that can ever be ahead
of ours (see :mod:`aiocoord.recipes._contention.drivers`). A woken waiter drops the deleted node
and any node this client already knows to be gone (its own deletions, and the deletion events and
NoNode answers of its other waiters on the same path), and is through at once, without a round
trip, when nothing ahead is left: this holds for every driver, since each decision is monotone
(a node fewer ahead never blocks), so deciding on a superset of the live nodes is always safe.
Otherwise the nodes left ahead may have gone unseen, and most likely have: the node it waited
for was most likely granted, which needed them gone. One listing checks them all (one request;
a watch on the next node, most likely gone too, would cost one more), and only a waiter still
blocked then arms a watch on the next node the driver names. The one exception to "nothing is
inserted ahead" is Curator's read-lock downgrade node, which reuses its write node's sequence
number; the write-lock driver asks for a fresh listing whenever a writer ahead of it goes.

**The look-ahead: a hand-over costs the delete and its notification.** Waiting for node P, a
waiter in another client than P's also watches the node Q just ahead of P (see
:meth:`Turn._peek <aiocoord.recipes._contention.turn.Turn._peek>`). Q's deletion most likely
means P was just granted; the waiter then lists (if its view held anything else ahead of P)
*while P is held*, keeping its watch on P. That listing most likely shows P first, so P's
deletion lets the waiter through on the event alone, with the decision above: the listing that
used to follow the wake, a round trip on the hand-over's path, now precedes it, off that path.
It is never trusted for more than it shows: Q's going proves nothing about the nodes ahead of
it, so whatever the listing does not show first is waited for as before. No herd: each node is
watched by at most the two waiters behind it. The price is a watch more per contended
acquisition (and its event), paid to take a round trip off every hand-over between clients.
So it is used only where a round trip costs more than those requests: when the connection's
round trip to its server (the least a recent read took) is at least
:data:`LOOK_AHEAD_MIN_RTT`, or not known yet. Next to the server (loopback, one host) the
requests cost the client more CPU than the round trip they save, and the waiter lists after
its wake instead.

**O(1) per waiter, whatever the queue length.** A waiter keeps only the nearest nodes ahead
in view, from a listing sorted once per client (see :mod:`aiocoord.recipes._contention.listing`).

**Round trips.** The create and the first listing are pipelined (ZooKeeper answers one
session's requests in order, so a listing written after the create sees it): an uncontended
acquire costs one round trip and a release none (its delete is written, not waited for: the
same session's next create is answered after it); a contended one behind another client's
node 7 requests across a network (create, listing; the watches on the node ahead, on the one
ahead of that and on its own node, in one round trip; a listing after the look-ahead's wake
unless nothing else was ahead; delete), and 5 next to the server (no look-ahead: create,
listing, watch, a listing after the wake, delete). Curator's costs 5, and across a network a
round trip more on every hand-over.

Listings of one path by one client are shared when sent after the caller's create was (a
burst of contenders shares one); a listing without the caller's node is never trusted. A
release writes its delete and returns; a waiter *of the same client* right behind goes ahead
on the delete's answer, with no notification or listing of its own (the local hand-over, see
:func:`~aiocoord.recipes._contention.contender.delete_node`). Every grant waits for a trusted
session (:func:`~aiocoord.recipes._contention.contender.confirm_alive`).

**Decide, then do.** What a waiter does next is decided by a pure step over what it knows
(:mod:`aiocoord.recipes._contention.turn`); the loop here only carries the answer out.

**Connection and session.** A waiter survives a connection loss (its watch is restored, its
node stays); after an expiry it queues again with a new node in the new session. A granted
node is watched by a :class:`~aiocoord.recipes._contention.holding.LossWatch`
(:mod:`aiocoord.recipes._contention.holding`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import warnings
from collections.abc import Sequence
from typing import Any

from aiocoord._client.door import renews_sessions, round_trip, watch_data_many_now
from aiocoord._deadline import Deadline, Expired, bounded, time_left
from aiocoord._paths import SEQUENCE_DIGITS, join
from aiocoord._wire.data import ACL
from aiocoord.client import Client, EventType, State, Watch, WatchEvent
from aiocoord.errors import MixedLayoutWarning, NoNodeError, SessionExpiredError
from aiocoord.recipes._contention.contender import (
    ProtectedNode,
    QueueNode,
    Restart,
    confirm_alive,
    delete_node,
    watch_own,
)
from aiocoord.recipes._contention.drivers import Driver
from aiocoord.recipes._contention.listing import (
    QueueState,
    enter_state,
    leave_state,
    next_stamp,
    queued_nodes,
)
from aiocoord.recipes._contention.naming import advice, foreign_contender
from aiocoord.recipes._contention.turn import GiveUp, Grant, Turn
from aiocoord.recipes.layout import Layout

__all__ = ["LOOK_AHEAD_MIN_RTT", "SequentialQueue"]

#: The least round trip to the server (seconds) at which a waiter uses the look-ahead (see
#: the module docstring): about the client CPU its two extra requests cost on a loaded
#: 2-core host, where a loopback hand-over was measured faster without it (issue 29).
LOOK_AHEAD_MIN_RTT = 0.0002


class SequentialQueue:
    """A queue of protected sequential nodes under ``path``; see the module docstring.

    ``lock_name`` is the node name before the sequence (``lock-``, ``__READ__``, ``lease-``),
    ``driver`` decides who is through. The object holds no state about its contenders, so any
    number of tasks may use one queue at the same time. ``acl`` goes to every node it creates,
    parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        lock_name: str,
        driver: Driver,
        *,
        acl: Sequence[ACL] | None = None,
        layout: Layout = Layout.CURATOR,
    ) -> None:
        self.client = client
        self.path = path
        self.lock_name = lock_name
        self.driver = driver
        self.acl = acl
        #: whose names our nodes take, and how their parents are made (see ProtectedNode)
        self.layout = layout

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
        caller must start its :class:`~aiocoord.recipes._contention.holding.LossWatch` before its
        next ``await``. Under ``suspended_is_loss`` a node is not granted while the connection is
        SUSPENDED. Cancelling leaves no node (see :meth:`ProtectedNode.discard`).
        """
        client = self.client
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        state = enter_state(client, self.path)
        try:
            while True:
                entry = ProtectedNode(
                    client,
                    self.path,
                    self.lock_name,
                    data,
                    acl=self.acl,
                    layout=self.layout,
                )
                try:
                    node = await self._wait_turn(entry, state, deadline, blocking)
                    if node is not None and suspended_is_loss and not client.connected:
                        node = await self._after_suspension(node, deadline)
                except Restart:
                    await entry.discard()
                    continue
                except Expired:
                    await entry.discard()
                    return None
                except BaseException:
                    await entry.discard()
                    raise
                if node is None:
                    await entry.discard()
                return node
        finally:
            leave_state(client, self.path, state)

    async def _after_suspension(self, node: QueueNode, deadline: Deadline) -> QueueNode:
        # Granted while disconnected: under the strict policy that is not held yet. Once the
        # connection is back the grant stands if the session (and so the node) survived.
        client = self.client
        while not client.connected:
            await bounded(client.wait_for(State.CONNECTED), deadline)
        if not node.alive_in(client):
            raise Restart()
        return node

    async def enter_at(self, data: bytes, sequence: int) -> QueueNode:
        """Create a non-sequential protected ephemeral node that sorts at ``sequence`` and
        is granted at once (Curator 5.4's read-lock downgrade node). Cancelling leaves none."""
        name = f"{self.lock_name}{sequence:0{SEQUENCE_DIGITS}d}"
        while True:
            entry = ProtectedNode(
                self.client,
                self.path,
                name,
                data,
                sequential=False,
                acl=self.acl,
                layout=self.layout,
            )
            try:
                return await entry.result(None)
            except Restart:
                await entry.discard()
            except BaseException:
                await entry.discard()
                raise

    async def release(self, node: QueueNode) -> None:
        """Delete ``node`` for sure (in the background once reconnected, if need be); a
        waiter of this client right behind it goes ahead on the server's answer (see
        :func:`delete_node`)."""
        await delete_node(self.client, node.path, cleared=self.driver.exclusive)

    async def participants(self, name_filter: str | None = None) -> list[tuple[str, bytes]]:
        """``(name, data)`` of every queued node, in queue order; ``name_filter`` keeps
        only names containing it. Nodes that vanish meanwhile are left out."""
        return await queued_nodes(self.client, self.path, name_filter)

    # --- waiting --------------------------------------------------------------------------

    async def _wait_turn(
        self, entry: ProtectedNode, state: QueueState, deadline: Deadline, blocking: bool
    ) -> QueueNode | None:
        client = self.client
        if entry.sent_stamp is None:
            # The create went to a task (not connected): let it write its request first, so
            # that the listing below is ordered after it on the wire and pipelines with it.
            await asyncio.sleep(0)
        after = entry.sent_stamp if entry.sent_stamp is not None else next_stamp()
        try:
            # Alone on the path, the listing goes out at once, behind the create (one round
            # trip for both); with other contenders of this client it waits one loop turn,
            # so that a burst of them shares it.
            names: list[str] | None = await bounded(
                state.children(client, self.path, after, gather=state.users > 1), deadline
            )
        except NoNodeError:
            names = None  # the parents were missing; the create makes them
        if names is None and entry.resent:
            # The create went again behind its parent's (see ProtectedNode._write_parent):
            # a listing written now is ordered after both, one round trip for all three.
            again = entry.sent_stamp
            assert again is not None  # set when the create was written again
            with contextlib.suppress(NoNodeError):  # more than the parent was missing
                names = await bounded(
                    state.children(client, self.path, again, gather=state.users > 1), deadline
                )
        node = await entry.result(deadline)
        if names is None or node.name not in names:
            names = await self._listing(node, state, deadline)
        if state.layout_checked is not names:
            state.layout_checked = names  # once per listing, however many waiters share it
            foreign = foreign_contender(self.layout, names)
            if foreign is not None:
                warnings.warn(
                    MixedLayoutWarning(self.path, foreign, self.layout.value, advice(self.layout)),
                    stacklevel=2,
                )
        rtt = round_trip(client)
        turn = Turn.start(
            self.driver,
            node.name,
            node.sequence,
            names,
            state,
            look_ahead=rtt is None or rtt >= LOOK_AHEAD_MIN_RTT,
        )
        # Requests made for the node run only in its session: a read retried on a new session
        # would keep waiting in a queue that the node, gone with the old session, has left.
        # (Made on first use: a node through on the first listing makes none.)
        pinned: Client | None = None
        state.add_mine(node.name)
        own: Watch | None = None  # the watch on our own node (see "Its own node, too")
        touched = False  # someone changed our node's data (told to the holding: revocation)
        # The watches on nodes ahead: the one we wait for, and the look-ahead (see
        # :meth:`Turn._peek <aiocoord.recipes._contention.turn.Turn._peek>`). One that a
        # probe still wants is kept, not armed again.
        armed: dict[str, Watch] = {}
        try:
            while True:
                if own is not None and own.done():
                    event = own.fired()
                    if event is None or event.type is EventType.DELETED:
                        raise Restart()
                    own, touched = None, True  # consumed by a data change: the probe re-arms
                step = turn.decide(state, blocking=blocking, own_armed=own is not None)
                if isinstance(step, Grant):
                    if step.confirm_own:
                        pinned = pinned or client.bound(node.generation)
                        own = await bounded(watch_own(client, pinned, node), deadline)
                        if own is None:
                            continue  # a connection loss: asked again once reconnected
                    await confirm_alive(client, node, deadline)
                    live = own if own is not None and not own.done() else None
                    if live or turn.waited or touched:
                        return node.granted(live, turn.waited, touched)
                    return node
                if isinstance(step, GiveUp):
                    return None
                _let_go(armed, turn.ahead, (step.watch, step.peek))
                to_arm = [n for n in (step.watch, step.peek) if n is not None and n not in armed]
                pinned = pinned or client.bound(node.generation)
                new, gone, fresh, armed_own = await self._probe(
                    pinned,
                    to_arm,
                    deadline,
                    node if step.relist else None,
                    state,
                    node.generation,
                    node if step.arm_own else None,
                )
                armed.update(new)
                if armed_own is not None:
                    own = armed_own
                if not turn.probed(state, step, fresh, gone):
                    continue
                assert step.watch is not None  # kept: armed on a blocker
                try:
                    woke = await wait_gone(
                        armed[step.watch],
                        step.watch,
                        state,
                        deadline,
                        own,
                        None if step.peek is None else armed.get(step.peek),
                    )
                except SessionExpiredError:
                    if renews_sessions(client):
                        raise Restart() from None
                    raise
                if woke is _Woke.GONE:
                    del armed[step.watch]  # fired, or left for the deletion on its way
                    turn.woke(state, step.watch)
                elif woke is _Woke.CHANGED:
                    del armed[step.watch]  # consumed by a data change: the loop re-arms
                elif woke is _Woke.PEEK_GONE or woke is _Woke.PEEK_CHANGED:
                    assert step.peek is not None
                    del armed[step.peek]
                    turn.peeked(state, step.peek, woke is _Woke.PEEK_GONE)
                # _Woke.OWN: our own node changed or went; the loop looks at it first.
        finally:
            _let_go(armed, (), ())

    async def _listing(self, node: QueueNode, state: QueueState, deadline: Deadline) -> list[str]:
        """A listing sent after now, which must contain our node (else it is gone)."""
        try:
            names = await bounded(
                state.children(self.client, self.path, next_stamp(), containing=node.name),
                deadline,
            )
        except NoNodeError:
            raise Restart() from None
        except SessionExpiredError:
            if renews_sessions(self.client):
                raise Restart() from None
            raise
        if node.name not in names:
            raise Restart()
        return names

    async def _probe(
        self,
        pinned: Client,
        to_arm: list[str],
        deadline: Deadline,
        list_for: QueueNode | None,
        state: QueueState,
        generation: int,
        own_node: QueueNode | None,
    ) -> tuple[dict[str, Watch], set[str], list[str] | None, Watch | None]:
        """In one round trip: arm a getData watch on each node of ``to_arm`` and on our own
        node (``own_node``: kept until its deletion consumes it, see "Its own node, too"),
        and (with ``list_for``, our node) list the children afresh.

        Returns the watches armed (by name), the names found gone, the listing (None unless
        asked for) and the watch on our own node (None unless asked for). Raises Restart if
        our node is gone.
        """
        client = self.client
        gone: set[str] = set()
        if not to_arm and list_for is None and own_node is None:
            return {}, gone, None, None  # everything wanted is armed already
        paths = [join(self.path, name) for name in to_arm]
        if own_node is not None:
            paths.append(own_node.path)
        try:
            if list_for is None:  # the watches alone: written now, no task
                answers = await bounded(
                    watch_data_many_now(client, pinned, generation, paths), deadline
                )
                armed, armed_own = _sorted_out(to_arm, answers, own_node, gone)
                return armed, gone, None, armed_own
            if not paths:  # the listing alone: no task to start
                fresh = await bounded(state.children(client, self.path, next_stamp()), deadline)
                if list_for.name not in fresh:
                    raise Restart()
                return {}, gone, fresh, None
            # Created in this order, the tasks write their requests in this order: the
            # listing, last, shows the state after the watches were armed.
            watch_task = asyncio.ensure_future(
                watch_data_many_now(client, pinned, generation, paths)
            )
            list_task = asyncio.ensure_future(state.children(client, self.path, next_stamp()))
            tasks: list[asyncio.Future[Any]] = [watch_task, list_task]
            finished = False
            try:
                await bounded(asyncio.wait(tasks), deadline)
                finished = True
            finally:
                if not finished:
                    for t in tasks:
                        t.cancel()
                    await asyncio.wait(tasks)
                    if not watch_task.cancelled() and watch_task.exception() is None:
                        for left in watch_task.result():
                            if left is not None:
                                left.cancel()  # nobody will wait on it
        except NoNodeError:  # the listing found the queue gone, our node with it
            raise Restart() from None
        except SessionExpiredError:
            if renews_sessions(client):
                raise Restart() from None
            raise
        first_error: BaseException | None = None
        found: dict[str, Watch] = {}
        own: Watch | None = None
        exc = watch_task.exception()
        if exc is None:
            try:
                found, own = _sorted_out(to_arm, watch_task.result(), own_node, gone)
            except Restart as restart:
                first_error = restart
        else:
            first_error = exc
        names: list[str] | None = None
        exc = list_task.exception()
        if exc is None:
            names = list_task.result()
            if list_for.name not in names:
                first_error = first_error or Restart()
        elif isinstance(exc, NoNodeError):
            first_error = first_error or Restart()
        else:
            first_error = first_error or exc
        if first_error is not None:
            for left in [*found.values(), own]:
                if left is not None:
                    left.cancel()
            if isinstance(first_error, SessionExpiredError) and renews_sessions(client):
                raise Restart() from first_error
            raise first_error
        return found, gone, names, own


def _sorted_out(
    to_arm: list[str],
    answers: list[Watch | None],
    own_node: QueueNode | None,
    gone: set[str],
) -> tuple[dict[str, Watch], Watch | None]:
    """The watches of a probe by name, the names found gone added to ``gone``, and the watch
    on our own node (last in ``answers`` when asked for); Restart if our node is gone."""
    found: dict[str, Watch] = {}
    for name, watch in zip(to_arm, answers, strict=False):
        if watch is None:
            gone.add(name)
        else:
            found[name] = watch
    if own_node is None:
        return found, None
    own = answers[-1]
    if own is None:
        for watch in found.values():
            watch.cancel()
        raise Restart()
    own.keep()  # consumed by the node's deletion, by us or anyone: nothing sent to remove it
    return found, own


def _let_go(armed: dict[str, Watch], in_view: Sequence[str], wanted: Sequence[str | None]) -> None:
    """Forget the watches in ``armed`` the next probe does not want: one that fired is
    dropped; one still armed is removed, unless its node is still ``in_view`` (a listing may
    make it the one to wait for again)."""
    for name in [n for n in armed if n not in wanted]:
        watch = armed[name]
        if watch.done():
            del armed[name]
        elif name not in in_view:
            watch.cancel()
            del armed[name]


class _Woke(enum.Enum):
    """What ended a wait in :func:`wait_gone`."""

    GONE = "the node waited for is gone"
    CHANGED = "the node waited for changed (its watch is consumed)"
    PEEK_GONE = "the look-ahead node is gone"
    PEEK_CHANGED = "the look-ahead node changed (its watch is consumed)"
    OWN = "the watch on our own node fired"


async def wait_gone(
    watch: Watch,
    blocker: str,
    state: QueueState,
    deadline: Deadline,
    own: Watch | None,
    peek: Watch | None = None,
) -> _Woke:
    """Wait until ``blocker`` goes (its deletion event came, or this client released it),
    or until something else the waiter watches fires: ``blocker`` changed (a data change: the
    node is still there, its watch consumed), the look-ahead watch ``peek``, or the watch on
    our own node ``own`` (the caller looks at it).

    A node released by this client wakes its waiter here at once, before the server has
    deleted it: the hand-over inside one client costs no round trip. The watch is then
    left armed (the deletion on its way fires and clears it, sparing a request to remove
    it). A watch that did not fire is left to the caller (it removes the ones it no longer
    wants); on a timeout :class:`Expired` is raised.
    """
    local = state.when_gone(blocker)
    try:
        if local.done():
            return _Woke.GONE
        if own is None and peek is None and deadline is None:
            # The common wait: the task waits on the watch itself, so the deletion event
            # wakes it in the next loop turn (a go-between future costs a turn more). The
            # local hand-over fires the watch (left armed on the server, see above).
            gone = WatchEvent(EventType.DELETED, watch.path)
            local.add_done_callback(lambda _: watch._fire(gone))
            event = await watch
            return _Woke.GONE if local.done() or event.type is EventType.DELETED else _Woke.CHANGED
        # One future that whichever comes first wakes (no task per thing awaited): the
        # watch, the local hand-over, the look-ahead, or the watch on our own node. The
        # watches keep the callback after we return: it marks a late failure seen, and wakes
        # nobody.
        wake = asyncio.get_running_loop().create_future()

        def poke(source: object) -> None:
            if isinstance(source, Watch):
                source.failed()  # retrieves a failure nobody may await any more
            if not wake.done():
                wake.set_result(None)

        watch.add_done_callback(poke)
        local.add_done_callback(poke)
        for other in (own, peek):
            if other is not None:
                other.add_done_callback(poke)
        if deadline is None:
            await wake
        else:
            await asyncio.wait((wake,), timeout=time_left(deadline))
            if not wake.done():
                raise Expired()
        if peek is not None and peek.done() and (watch.done() or local.done()):
            # Both went (their events in one read, say): the look-ahead's deletion is taken
            # first, whichever came first. The blocker's, next, then finds the node ahead of
            # it known gone and needs no listing; the other order would list for it.
            fired = peek.fired()
            if fired is not None and fired.type is EventType.DELETED:
                return _Woke.PEEK_GONE
        if watch.done():
            event = await watch  # done: the event, or the watch's failure raised
            return _Woke.GONE if event.type is EventType.DELETED else _Woke.CHANGED
        if local.done():
            return _Woke.GONE
        if peek is not None and peek.done():
            event = await peek
            return _Woke.PEEK_GONE if event.type is EventType.DELETED else _Woke.PEEK_CHANGED
        return _Woke.OWN  # our own node changed (or went): the caller decides again
    finally:
        state.stop_waiting(blocker, local)
