"""A session's state, and the stream of its transitions that listeners, waiters and
``async for`` loops hear."""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from aiocoord._deadline import within
from aiocoord._observe.logs import session_extra
from aiocoord.errors import ClientClosedError

__all__ = ["CONNECTED_STATES", "State", "StateBroadcast", "StateChange"]

log = logging.getLogger("aiocoord.session")


class State(enum.Enum):
    """The connection state a client reports (Curator's ConnectionState, plus CLOSED)."""

    CONNECTED = "connected"  #: first connection of a session
    SUSPENDED = "suspended"  #: connection lost; the session may still be alive
    RECONNECTED = "reconnected"  #: connected again (``StateChange.new_session`` says if same)
    LOST = "lost"  #: the session expired (ephemerals and watches are gone)
    READ_ONLY = "read_only"  #: connected to a server in read-only mode
    CLOSED = "closed"  #: the client was closed

    # Members are singletons: the identity hash (in C) serves, where Enum's own hashes the
    # name in Python, and the session looks its state up in CONNECTED_STATES on every request.
    __hash__ = object.__hash__

    @property
    def is_connected(self) -> bool:
        """True for the states in which requests are sent."""
        return self in CONNECTED_STATES


#: The states in which requests are sent (:attr:`State.is_connected`).
CONNECTED_STATES = frozenset({State.CONNECTED, State.RECONNECTED, State.READ_ONLY})


@dataclass(frozen=True, slots=True)
class StateChange:
    """One transition of the session state."""

    #: the state entered
    state: State
    #: the state left; None on the first transition of a client
    previous: State | None
    #: the session's id (on LOST, the id of the session that expired); 0 before the first
    #: session was established
    session_id: int
    #: True on the first connection of a session started after the previous one was LOST
    new_session: bool = False
    #: ``host:port`` of the server connected to last (on SUSPENDED, the one lost); None
    #: before the first connection
    server: str | None = None


class StateBroadcast:
    """Hands every :class:`StateChange` to the listeners, in order, as it happens."""

    def __init__(self) -> None:
        # By a key of their own, in the order added: every held lock has a listener, and a
        # holder releasing one of 10,000 in any order removes it in O(1), not O(listeners).
        self._listeners: dict[object, Callable[[StateChange], None]] = {}
        self._changed = asyncio.Event()

    def add_listener(self, callback: Callable[[StateChange], None]) -> Callable[[], None]:
        """Call ``callback`` synchronously on every transition; returns an unsubscribe function."""
        key = object()
        self._listeners[key] = callback
        listeners = self._listeners

        def remove() -> None:
            listeners.pop(key, None)

        return remove

    def publish(self, change: StateChange) -> None:
        """Tell every listener, then wake those awaiting :meth:`next_change`."""
        for callback in list(self._listeners.values()):
            try:
                callback(change)
            except Exception:  # a listener's bug must not break the session
                log.exception("state listener failed", extra=session_extra(change))
        self._changed.set()
        self._changed = asyncio.Event()

    async def next_change(self) -> None:
        """Return after the next transition."""
        await self._changed.wait()

    async def wait_for(self, current: State | None, state: State, timeout: float | None) -> None:
        """Wait until the state is ``state`` (CONNECTED also matches RECONNECTED); at once if
        ``current`` is. The first transition into ``state`` counts, even if the state has
        moved on again by the time the caller runs."""
        wanted = {state, State.RECONNECTED} if state is State.CONNECTED else {state}
        if current in wanted:
            return
        if current is State.CLOSED:
            raise ClientClosedError(f"client closed while waiting for {state.value}")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_change(change: StateChange) -> None:
            if fut.done():
                return
            if change.state in wanted:
                fut.set_result(None)
            elif change.state is State.CLOSED:
                fut.set_exception(
                    ClientClosedError(f"client closed while waiting for {state.value}")
                )

        remove = self.add_listener(on_change)
        try:
            await within(fut, timeout, f"the client not {' or '.join(s.value for s in wanted)}")
        finally:
            remove()

    async def changes(self) -> AsyncIterator[StateChange]:
        """Yield every transition from now on, until the client closes."""
        queue: asyncio.Queue[StateChange] = asyncio.Queue()
        remove = self.add_listener(queue.put_nowait)
        try:
            while True:
                change = await queue.get()
                yield change
                if change.state is State.CLOSED:
                    return
        finally:
            remove()
