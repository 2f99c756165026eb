"""Holding a granted node: the one place the loss rules live.

A holding ends once, for one reason: the session's end (LOST, or the client CLOSED), the
connection's loss under the stricter policy (SUSPENDED with ``suspended_is_loss``; Curator's
"standard" ``ConnectionStateErrorPolicy``), or the deletion of the node by anyone but its
holder (``"deleted"``). :class:`LossWatch` notices all of them and reports the first, exactly
once; :class:`LossEvent` is what a holder awaits (``await lock.lost``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any

from aiocoord._watches import EventType, Watch
from aiocoord.client import Client
from aiocoord.errors import ClientClosedError, ConnectionLossError, SessionExpiredError
from aiocoord.recipes._nodes import QueueNode
from aiocoord.session import State, StateChange

__all__ = ["LossEvent", "LossWatch", "is_loss"]


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
