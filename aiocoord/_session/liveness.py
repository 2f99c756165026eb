"""When a ZooKeeper session can be trusted, and when a client with no connection must give it
up.

**When the session can be trusted.** The server expires a session only after a whole session
timeout in which it heard nothing from the client (unless someone expires it by force). Every
answered request was received by the server at or after the moment it was written, so the
session is alive at least until *proof* + timeout, where *proof* is the write time of the
newest request (or ping) that got an answer (:func:`alive_until`; the session's is
:attr:`aiocoord._session.session.Session.alive_until`). Two rules follow:

- a client that has no connection declares the session LOST by itself a little before that
  moment (:data:`EXPIRY_MARGIN`, :func:`expiry_deadline`), never after it, so a holder under
  the *session* policy is told of its loss before the server can give what it held to someone else;
- the client acts on its session without asking the server (a recipe grants a node whose
  turn came, say) only while :meth:`aiocoord._session.session.Session.trusted`: connected, with a
  proof younger than the liveness window (:func:`trusted`), the two thirds of the timeout
  after which a silent connection is declared dead anyway. Otherwise it waits for the
  server to confirm.

The session (:mod:`aiocoord._session.session`) keeps the proof; this module holds the rules only.
"""

from __future__ import annotations

import time

__all__ = [
    "EXPIRY_MARGIN",
    "EXPIRY_MARGIN_MAX",
    "LIVENESS_WINDOW",
    "alive_until",
    "connect_deadline",
    "expiry_deadline",
    "trusted",
]

#: How much earlier than the server could (see above) a client with no
#: connection declares its session LOST: a share of the timeout, to absorb timer and
#: scheduling delays on both sides, capped so that long timeouts do not give up much.
EXPIRY_MARGIN = 0.05
EXPIRY_MARGIN_MAX = 0.25
#: The share of the session timeout within which an answered request keeps the session
#: trusted (the connection's own read timeout).
LIVENESS_WINDOW = 2 / 3


def alive_until(proof: float, timeout: float) -> float:
    """The ``time.monotonic()`` moment before which the server cannot have expired the
    session on its own, given ``proof``, the write time of the newest answered request."""
    return proof + timeout


def trusted(proof: float, timeout: float) -> bool:
    """Whether a connected session whose newest answered request was written at ``proof``
    is still within the liveness window."""
    return time.monotonic() - proof < timeout * LIVENESS_WINDOW


def expiry_deadline(alive_until: float, timeout: float) -> float:
    """When a client with no connection declares the session LOST: a margin before
    ``alive_until``, never after it."""
    return alive_until - min(timeout * EXPIRY_MARGIN, EXPIRY_MARGIN_MAX)


def connect_deadline(
    first: bool, resuming: bool, connect_timeout: float, alive_until: float, timeout: float
) -> float | None:
    """Until when a connect may keep trying servers: the first connect, ``connect_timeout``;
    one resuming a session, until :func:`expiry_deadline` (then the session is LOST); a
    fresh session after LOST, until the client is closed (None)."""
    if first:
        return time.monotonic() + connect_timeout
    if resuming:
        return expiry_deadline(alive_until, timeout)
    return None
