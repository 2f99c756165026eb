"""Holding a granted node: the one place the loss rules live.

A holding ends once, for one reason: the session's end (LOST, or the client CLOSED), the
connection's loss under the stricter policy (SUSPENDED with ``suspended_is_loss``; Curator's
"standard" ``ConnectionStateErrorPolicy``), or the deletion of the node by anyone but its
holder (``"deleted"``). :class:`LossWatch` notices all of them and reports the first, exactly
once; :class:`LossEvent` is what a holder awaits (``await lock.lost``).

The same watch tells a holding that listens (``on_revoke``) of a revocation request:
:data:`REVOKE_MESSAGE` written as its node's data (Curator's ``Revoker``; the node's own data
at version 0, an identifier that reads the same, is none). A data change
consumes the watch, and the getData that arms it again reads the data: listening costs no
request more, and a holding that does not listen reads the same (and ignores it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Generator
from typing import Any

from aiocoord._client import door
from aiocoord._deadline import within
from aiocoord.client import Client, EventType, State, StateChange, Watch
from aiocoord.errors import (
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    LockLostError,
    SessionExpiredError,
)
from aiocoord.recipes._contention.contender import QueueNode, delete_node

__all__ = ["REVOKE_MESSAGE", "Holding", "LossEvent", "LossWatch", "is_loss"]

_log = logging.getLogger("aiocoord.recipes.contention")  # docs/operations.md names it

#: The data that asks a holder to give its lock up (Curator's ``LockInternals.REVOKE_MESSAGE``).
REVOKE_MESSAGE = b"__REVOKE__"


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
        #: why the lock or lease was lost (LOST, SUSPENDED or CLOSED); None until it is
        self.state: State | None = None
        #: the cause as a word (``"lost"``, ``"suspended"``, ``"closed"`` or ``"deleted"``);
        #: None until the loss
        self.reason: str | None = None

    def is_set(self) -> bool:
        """True once the loss happened."""
        return self._event.is_set()

    async def wait(self, timeout: float | None = None) -> State:
        """Wait for the loss (:class:`aiocoord.TimeoutError` after ``timeout`` seconds);
        returns its cause."""
        await within(self._event.wait(), timeout, "no loss")
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


def _closed(state: State, reason: str) -> None:
    """A closed :class:`LossWatch`'s callback: it calls none."""


class LossWatch:
    """Calls ``callback(state, reason)`` once when ``node`` can no longer be trusted to be
    held: the session's end (and SUSPENDED under ``suspended_is_loss``), or the deletion of
    the node by anyone but its holder (``State.LOST``, ``"deleted"``; with ``watch_node``).

    Start it in the same step as the grant (no ``await`` in between), so that no state change
    falls between the two. :meth:`close` stops it (on release).

    The node is watched with a getData watch (``node.own`` when the waiter armed one). Else it
    is written from a callback of the loop's next turn, while still held, and its answer is
    handled by a callback: no task, nothing to outlive the holding. A deletion that comes
    before the watch is armed shows as "no node" in its answer, so none is missed. An answer
    lost with the connection is asked again on the next connection of the same session, if
    still held then: nothing is sent for a holding released meanwhile (its read would find the
    node gone). The watch is left for the holder's own delete to consume (nothing is sent to
    remove it). ``on_data`` is called with the node's data and data version each time a read
    arms the watch.
    """

    __slots__ = (
        "_callback",
        "_client",
        "_node",
        "_on_data",
        "_remove",
        "_suspended_is_loss",
        "_unarmed",
    )

    def __init__(
        self,
        client: Client,
        node: QueueNode,
        suspended_is_loss: bool,
        callback: Callable[[State, str], None],
        *,
        watch_node: bool = True,
        on_data: Callable[[bytes, int], None] | None = None,
    ) -> None:
        self._client = client
        self._on_data = on_data
        self._node = node
        self._suspended_is_loss = suspended_is_loss
        self._callback = callback
        #: the node's watch could not be written, nor answered: it is, on the next connection
        self._unarmed = False
        self._remove: Callable[[], None] | None = client.add_state_listener(self._on_change)
        if not watch_node:
            return
        if node.own is not None and not node.own.done():
            node.own.add_done_callback(self._on_node_event)
        else:
            # Armed from the next turn of the loop: a holding released in this turn (a
            # holder with nothing to await) needs no watch, and costs no request.
            asyncio.get_running_loop().call_soon(self._arm)

    def _on_change(self, change: StateChange) -> None:
        if self._remove is None:
            return
        if is_loss(change, self._suspended_is_loss) or not self._node.alive_in(self._client):
            callback = self._callback
            self.close()
            state = State.LOST if change.new_session else change.state
            callback(state, state.value)
        elif self._unarmed and change.state.is_connected:
            self._arm()

    def _arm(self) -> None:
        """Write the node's watch now, if still held; else on the next connection."""
        if self._remove is not None:
            node = self._node
            written = door.watch_data_then(
                self._client, node.path, node.generation, self._armed, self._on_data
            )
            self._unarmed = not written

    def _armed(self, answer: Watch | BaseException | None) -> None:
        if isinstance(answer, Watch):
            # Kept even if released meanwhile: the holder's delete, written after it,
            # consumes it.
            answer.keep()
            answer.add_done_callback(self._on_node_event)
        elif answer is None:
            self._deleted()  # gone before the watch was set (nothing if released meanwhile)
        elif isinstance(answer, ConnectionLossError):
            self._arm()  # lost with the connection: written again once connected, if held
        elif isinstance(answer, CoordinationError) and not isinstance(
            answer, (SessionExpiredError, ClientClosedError)
        ):
            # Not for the session's end (the state listener reports it): the server refused
            # the read (say, an ACL without READ on the node).
            _log.warning(
                "cannot watch %s for its deletion by others: %s",
                self._node.path,
                answer,
                extra=door.log_extra(self._client),
            )

    def _on_node_event(self, watch: Watch) -> None:
        event = watch.fired()
        if event is None or self._remove is None:
            return  # the session ended (reported by the state listener), or released
        if event.type is EventType.DELETED:
            self._deleted()
        else:  # a data change consumed the watch: arm it again
            self._arm()

    def _deleted(self) -> None:
        if self._remove is None:
            return
        callback = self._callback
        self.close()
        callback(State.LOST, "deleted")

    def close(self) -> None:
        """Stop watching (idempotent)."""
        remove, self._remove = self._remove, None
        if remove is not None:
            remove()
            # The callback is the holder's: let go of it, so that holder and watch are freed
            # when released instead of waiting for the garbage collector to find the cycle.
            self._callback = _closed
            self._on_data = None


class Holding:
    """A granted node, held by its owner until released or lost, once.

    Made in the same step as the grant (no ``await`` in between), so that no state change
    falls between the two. On loss (see the module docstring) it fires :attr:`lost`, logs it
    (INFO for a closed client, an ordinary shutdown; WARNING otherwise), deletes the node in
    the background (after SUSPENDED it still exists, and nobody should wait on a holding its
    owner has given up; after LOST it is gone already), cancels the bodies running under it
    if ``cancel_on_loss``, and calls ``on_loss(state, reason)``.

    ``what`` names the holding in messages (``"lock /a"``); ``exclusive``: granted by an
    exclusive driver, which lets the client's next waiter in faster on release (see
    :func:`~aiocoord.recipes._contention.contender.delete_node`).

    ``on_revoke(holding)`` (settable later) is called while held each time the node's watch
    reads :data:`REVOKE_MESSAGE` as its data, changed since the node was made: a revocation
    request. It only tells; nothing is released for the holder.
    """

    __slots__ = (
        "_cancels",
        "_exclusive",
        "_log",
        "_on_loss",
        "_watch",
        "bodies",
        "cancel_on_loss",
        "client",
        "lost",
        "node",
        "on_revoke",
        "released",
        "what",
    )

    def __init__(
        self,
        client: Client,
        node: QueueNode,
        *,
        what: str,
        logger: logging.Logger,
        suspended_is_loss: bool,
        cancel_on_loss: bool = False,
        exclusive: bool = False,
        on_loss: Callable[[State, str], None] | None = None,
        on_revoke: Callable[[Holding], None] | None = None,
    ) -> None:
        self.client = client
        #: called with this holding when a revocation request is read while held
        self.on_revoke = on_revoke
        self.node = node
        self.what = what
        self.cancel_on_loss = cancel_on_loss
        #: fires once if the holding is lost while held
        self.lost = LossEvent()
        #: True once the holder released it (or left it after a loss)
        self.released = False
        #: the tasks running a body under this holding (a task once per body it runs)
        self.bodies: list[asyncio.Task[Any]] = []
        self._cancels: dict[asyncio.Task[Any], int] = {}
        self._exclusive = exclusive
        self._log = logger
        self._on_loss = on_loss
        self._watch = LossWatch(client, node, suspended_is_loss, self._lose, on_data=self._read)
        if on_revoke is not None and node.touched and node.own is not None:
            # Its data changed while it waited and the waiter's watch, armed again since,
            # read it for nobody: read it once more (only for a holder that listens).
            door.submit_get(client, node.path, data=True).add_done_callback(self._answered)
        waited = None
        if node.waited and node.entered is not None:
            waited = asyncio.get_running_loop().time() - node.entered
        recorder = door.recorder(client)
        recorder.granted(self.kind, waited)
        if recorder.telemetry is not None:
            recorder.telemetry.granted(self.kind, node.path, node.entered, node.waited, node.czxid)

    @property
    def kind(self) -> str:
        """The recipe kind :meth:`Client.stats` counts the holding under: the first word of
        :attr:`what` (``"lock"``, ``"lease"``, ``"leadership"``, ``"latch"``)."""
        return self.what.split(" ", 1)[0]

    @property
    def fencing_token(self) -> int:
        """The node's creation zxid: larger for every later holder of the same queue."""
        return self.node.czxid

    @property
    def is_held(self) -> bool:
        """True until released or lost."""
        return not self.released and not self.lost.is_set()

    def _read(self, data: bytes, version: int) -> None:
        # A request is a change of the node's data (Curator's Revoker sets it): at version 0
        # the data is the holder's own, written with the node (an identifier reading
        # "__REVOKE__"), never a request. Curator's holders meet no such data: they write
        # none on a revocable node.
        if data == REVOKE_MESSAGE and version > 0 and self.on_revoke is not None and self.is_held:
            self.on_revoke(self)

    def _answered(self, done: asyncio.Future[Any]) -> None:
        if done.cancelled() or done.exception() is not None:
            return  # the session's end: the loss watch reports it
        reply = done.result()
        if not reply.err and reply.body is not None:
            self._read(reply.body.data, reply.body.stat.version)

    def _lose(self, state: State, reason: str) -> None:
        if self.released or self.lost.is_set():
            return
        self.lost._fire(state, reason)
        door.recorder(self.client).holding_lost(self.kind)
        level = logging.INFO if state is State.CLOSED else logging.WARNING
        extra = door.log_extra(self.client)
        self._log.log(level, "%s lost (%s)", self.what, reason, extra=extra)
        client = self.client
        if state is not State.CLOSED:
            door.spawn(
                client, delete_node(client, self.node.path), f"aiocoord-loss:{self.node.path}"
            )
        if self.cancel_on_loss:
            for task in dict.fromkeys(self.bodies):
                if not task.done():
                    self._cancels[task] = self._cancels.get(task, 0) + 1
                    task.cancel(f"{self.what} lost ({reason})")
        if self._on_loss is not None:
            self._on_loss(state, reason)

    def _end(self) -> bool:
        """Stop holding; True if it had been lost (its node is being deleted already)."""
        self.released = True
        self._watch.close()
        return self.lost.is_set()

    async def release(self) -> None:
        """End the holding and delete the node (see :func:`delete_node`); idempotent. Raises
        LockLostError if it had been lost (it is ended all the same)."""
        if self.released:
            return
        if self._end():
            raise LockLostError(f"{self.what} was lost ({self.lost.reason})")
        await delete_node(self.client, self.node.path, cleared=self._exclusive)

    async def leave(self, *, confirm: bool = False) -> str | None:
        """End the holding like :meth:`release`, but return the reason of a loss instead of
        raising it (None if it was held to the end). ``confirm``: wait briefly for the
        delete's answer (see :func:`~aiocoord.recipes._contention.contender.delete_node`): a
        recipe's ``close()``, after which other clients should find the node gone."""
        if self.released:
            return self.lost.reason
        if self._end():
            return self.lost.reason
        await delete_node(self.client, self.node.path, cleared=self._exclusive, confirm=confirm)
        return None

    def discard(self) -> None:
        """End the holding without waiting: the node is deleted in the background (for
        clean-up while unwinding)."""
        if not self.released and not self._end():
            client = self.client
            door.spawn(
                client, delete_node(client, self.node.path), f"aiocoord-return:{self.node.path}"
            )

    def enter_body(self, task: asyncio.Task[Any]) -> None:
        """``task`` starts a body (``async with``) under this holding."""
        self.bodies.append(task)

    async def exit_body(
        self,
        task: asyncio.Task[Any],
        exc: BaseException | None,
        error: type[CoordinationError] = LockLostError,
    ) -> None:
        """``task`` leaves a body it entered. If the holding was lost, raise ``error`` in place
        of our own cancellation (or of a normal exit); any other exception of the body, or a
        cancellation by someone else, goes on."""
        self.bodies.remove(task)
        if not self.lost.is_set():
            return
        message = f"{self.what} was lost ({self.lost.reason})"
        ours = self._cancels.get(task, 0)
        if ours:
            if ours == 1:
                del self._cancels[task]
            else:
                self._cancels[task] = ours - 1
            if not isinstance(exc, asyncio.CancelledError) and not _others_cancelling(task):
                # The body ended before our cancellation reached it: take it here, so that it
                # does not hit the caller's next await.
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(0)
            others_pending = not _uncancel(task)
            if isinstance(exc, asyncio.CancelledError):
                if others_pending:
                    return  # someone else cancelled too: their cancellation goes on
                raise error(message + "; the body was cancelled") from None
        if exc is None:
            raise error(message + " while the body ran")

    def __repr__(self) -> str:
        state = "held" if self.is_held else "released" if self.released else "lost"
        return f"<Holding {self.node.path} {state}>"


def _uncancel(task: asyncio.Task[Any]) -> bool:
    """Withdraw one cancellation we requested; True if no other one is pending."""
    withdraw = getattr(task, "uncancel", None)  # Python 3.11+
    if withdraw is None:
        return True
    return int(withdraw()) == 0


def _others_cancelling(task: asyncio.Task[Any]) -> bool:
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    return cancelling is not None and int(cancelling()) > 1
