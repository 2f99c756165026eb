"""Log records about a session: each carries the session's id and server in ``extra``.

Handlers that write JSON (or any structured sink) index records by these attributes:

- ``zk_session_id``: the session id as ZooKeeper's tools print it (``"0x1000a2b3c4d0000"``),
  ``"0x0"`` before the first session;
- ``zk_server``: ``"host:port"`` of the server the client talks to, or None.

A :class:`SessionLogger` wraps a module's logger (named ``__name__``, so every logger of
aiocoord sits under ``aiocoord``); the values are read when a record is made, so they are
the session's at that moment.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Protocol

__all__ = ["HasSession", "SessionLogger", "session_extra"]


class HasSession(Protocol):
    """What a record's ``extra`` is taken from: a Session, or a StateChange."""

    @property
    def session_id(self) -> int: ...
    @property
    def server(self) -> object | None: ...


def session_extra(session: HasSession) -> dict[str, Any]:
    """The ``extra`` of a record about ``session``."""
    server = session.server
    return {
        "zk_session_id": f"0x{session.session_id:x}",
        "zk_server": None if server is None else str(server),
    }


if TYPE_CHECKING:
    _Adapter = logging.LoggerAdapter[logging.Logger]
else:  # not subscriptable at run time before Python 3.11
    _Adapter = logging.LoggerAdapter


class SessionLogger(_Adapter):
    """``logger``, with :func:`session_extra` of ``session`` added to every record."""

    def __init__(self, logger: logging.Logger, session: HasSession) -> None:
        super().__init__(logger, {})
        self._session = session

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(kwargs.get("extra") or {}), **session_extra(self._session)}
        return msg, kwargs
