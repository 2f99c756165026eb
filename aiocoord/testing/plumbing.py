"""The client's plumbing, for tests that look below the public API: :func:`session_of` gives
the session manager behind a :class:`~aiocoord.Client` (its socket, watch table, counters),
which no program needs and 1.0 does not promise (``docs/api-stability.md``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiocoord._session.session import Session
    from aiocoord.client import Client

__all__ = ["session_of"]


def session_of(client: Client) -> Session:
    """The session manager behind ``client`` (and behind every view :meth:`Client.bound`
    made of it): its connection, watch table, password and counters, as tests inspect them
    (``session_of(client).password`` for :func:`~aiocoord.testing.expire_session`)."""
    return client._session
