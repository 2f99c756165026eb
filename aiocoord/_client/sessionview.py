"""The client's view of its session: the session manager, its state, id and generation,
waiting for a state, and the stream and listeners of state changes.

:class:`SessionView` is the part of :class:`~aiocoord.Client` that holds them; it only reads
the session (every transition is the session's own business, see :mod:`aiocoord._session.session`).
The API reference shows them on the client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from aiocoord._observe.metrics import ClientStats
from aiocoord._session.states import State, StateChange
from aiocoord._validation import validate_timeout
from aiocoord.errors import InvalidTypeError

if TYPE_CHECKING:
    from aiocoord._session.session import Session

__all__ = ["SessionView"]


class SessionView:
    """The session and state accessors of :class:`~aiocoord.Client` (module docstring)."""

    if TYPE_CHECKING:  # provided by Client
        _session: Session

        def pending_deletes(self) -> int: ...

    @property
    def session(self) -> Session:
        """The session manager behind this client."""
        return self._session

    @property
    def state(self) -> State:
        """The current connection state."""
        assert self._session.state is not None
        return self._session.state

    @property
    def session_id(self) -> int:
        """The current session id (changes when a new session starts after LOST)."""
        return self._session.session_id

    @property
    def generation(self) -> int:
        """Which session of this client is current: it grows by one each time a new session
        starts after LOST. Recipes tie what they hold to it (see :meth:`bound`)."""
        return self._session.generation

    @property
    def connected(self) -> bool:
        """True while requests can be sent."""
        return self.state.is_connected

    async def wait_for(self, state: State, timeout: float | None = None) -> None:
        """Wait until the state is ``state``; ``CONNECTED`` also matches ``RECONNECTED``."""
        if not isinstance(state, State):
            raise InvalidTypeError(
                "state must be an aiocoord.State (e.g. State.CONNECTED), "
                f"not {type(state).__name__}"
            )
        await self._session.wait_for(state, validate_timeout(timeout))

    def state_changes(self) -> AsyncIterator[StateChange]:
        """An async iterator of every state transition from now on.

        Named for what it streams, unlike the recipes' ``changes()``: a client sees more
        than one kind of change (its own state, and the nodes it watches with ``get(...,
        watch=True)`` or ``add_watch()``), so ``client.changes()`` would not say which. Nor
        is it a recipe stream: unbounded (a client goes through few transitions), with no
        ``buffer_size`` and no RESYNCED item.
        """
        return self._session.changes()

    def add_state_listener(self, callback: Callable[[StateChange], None]) -> Callable[[], None]:
        """Call ``callback`` on every transition (synchronously); returns a remover."""
        return self._session.add_listener(callback)

    def stats(self) -> ClientStats:
        """A snapshot of what this client did since it opened: requests by operation (count,
        errors by type, latency p50/p99/max), requests in flight, bytes in and out, the
        server watches held by kind, reconnects, session expiries, the server, the session
        and its negotiated timeout, background deletes pending, and per recipe kind
        (``"lock"``, ``"lease"``, ``"leadership"``, ``"latch"``) the grants, waits, wait
        time and losses, and the nodes of others a recipe could not read (``undecodable``).

        Counting is always on and costs a few integer operations per reply (the latency
        histogram is fixed in size, see :mod:`aiocoord._observe.metrics`); a snapshot costs more, so
        take one when it is wanted (a metrics scrape), not per request.
        """
        session = self._session
        recorder = session.recorder
        return ClientStats(
            requests=recorder.requests(),
            in_flight=session.pending_count,
            bytes_in=recorder.bytes_in,
            bytes_out=recorder.bytes_out,
            watches=session.watches.stats(),
            reconnects=max(recorder.connections - 1, 0),
            session_expiries=recorder.expiries,
            server=None if session.server is None else str(session.server),
            session_id=session.session_id,
            negotiated_timeout=session.negotiated_timeout,
            pending_deletes=self.pending_deletes(),
            recipes=recorder.recipes(),
        )
