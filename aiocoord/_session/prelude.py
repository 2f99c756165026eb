"""What a new connection carries before any waiting request may use it: the SASL exchange
(DIGEST-MD5 or GSSAPI, when the session has SASL credentials), then the replay of every ``add_auth``
credential and the requests that restore the session's watches.

:func:`authenticate` is ``add_auth``'s request, the one auth sent outside the prelude. The
session decides *when* (after each handshake, see :mod:`aiocoord._session.session`) and owns what
is replayed; :func:`prime` only puts it on the wire in the right order and says whether the
server accepted it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

from aiocoord._auth.digest import DigestMD5
from aiocoord._auth.gssapi import GSSAPI, GssapiLogin
from aiocoord._session.connection import Connection, Reply
from aiocoord._wire.auth import AuthRequest, SaslRequest
from aiocoord._wire.framing import EmptyResponse, Request
from aiocoord._wire.opcodes import Op, Xid
from aiocoord.errors import AuthFailedError

__all__ = [
    "SaslCredentials",
    "SaslLogin",
    "authenticate",
    "prime",
    "sasl_exchange",
    "sasl_login",
    "send_auth",
]

#: What ``connect(sasl=...)`` takes: ``(user, password)`` for DIGEST-MD5, or :class:`GSSAPI`.
SaslCredentials = tuple[str, str] | GSSAPI


class SaslLogin(Protocol):
    """One SASL login on one connection (a mechanism's client side)."""

    #: the mechanism's name, for messages
    name: str
    #: who logs in to what, for messages
    subject: str
    #: whether its steps may block (then they run in a thread)
    blocking: bool
    #: set once the server has accepted the login
    complete: bool
    #: what a refusal of the very first token most likely means (the server refused the
    #: mechanism itself, before any challenge), for messages; "" when nothing is known
    refused_at_once: str

    def initial(self) -> bytes:
        """The first token the client sends."""
        ...

    def respond(self, token: bytes) -> bytes | None:
        """The answer to a server token; None once the exchange is over."""
        ...


def sasl_login(sasl: SaslCredentials, host: str) -> SaslLogin:
    """A fresh login with ``sasl`` on a connection to ``host``."""
    if isinstance(sasl, GSSAPI):
        return GssapiLogin(sasl, host)
    return DigestMD5(*sasl)


def send_auth(
    conn: Connection, scheme: str, credential: bytes
) -> asyncio.Future[Reply[EmptyResponse]]:
    """Write an auth request; its reply says whether the server took the credential."""
    return conn.send_special(Xid.AUTH, AuthRequest(type=0, scheme=scheme, auth=credential))


async def authenticate(
    conn: Connection, scheme: str, credential: bytes, sent: Counter[int]
) -> None:
    """Add a credential to the connection's session (``add_auth``); AuthFailedError if the
    server refuses it."""
    fut = send_auth(conn, scheme, credential)
    sent[Op.AUTH] += 1
    reply = await fut
    if reply.err:
        raise AuthFailedError(f"authentication with scheme {scheme!r} failed", op="add_auth")


async def sasl_exchange(
    conn: Connection,
    login: SaslLogin,
    *,
    next_xid: Callable[[], int],
    sent: Counter[int],
) -> None:
    """Authenticate the connection with ``login`` before anything else is sent."""
    # A blocking step (Kerberos asking its KDC) runs in a thread; if cancelled meanwhile, the
    # thread ends on its own and its result goes with the connection.
    if login.blocking:
        token: bytes | None = await asyncio.to_thread(login.initial)
    else:
        token = login.initial()
    first = True
    while token is not None:
        reply = await conn.send(next_xid(), SaslRequest(token=token))
        sent[Op.SASL] += 1
        if reply.err or reply.body is None:
            why = f": {login.refused_at_once}" if first and login.refused_at_once else ""
            raise AuthFailedError(
                f"SASL {login.name} authentication {login.subject} refused by the server{why}",
                op="sasl",
            )
        first = False
        if login.blocking:
            token = await asyncio.to_thread(login.respond, reply.body.token)
        else:
            token = login.respond(reply.body.token)
        if token is None and not login.complete:
            raise AuthFailedError("SASL exchange ended early", op="sasl")


async def prime(
    conn: Connection,
    *,
    sasl: SaslCredentials | None,
    auth: Sequence[tuple[str, bytes]],
    restores: Callable[[], Sequence[Request[EmptyResponse]]],
    attach: Callable[[], None],
    next_xid: Callable[[], int],
    sent: Counter[int],
) -> None:
    """Make ``conn`` ready for the session's requests: SASL first (a fresh login each time,
    naming the server as the connection does), then ``auth`` replayed and
    ``restores()`` (asked for only once SASL is done, so it has every watch set meanwhile)
    written ahead of anything else. ``attach()`` runs once they are written, before their
    replies are awaited (the session takes the connection then).

    Raises ConnectionLossError if the connection dies on the way (the session's loop sees it
    closed), AuthFailedError if the server refuses SASL or a replayed credential.
    """
    if sasl is not None:
        await sasl_exchange(conn, sasl_login(sasl, conn.host), next_xid=next_xid, sent=sent)
    # Auth and watch restore go first on the wire, ahead of any waiting request.
    auth_futs = [send_auth(conn, scheme, credential) for scheme, credential in auth]
    restore_futs = []
    for restore in restores():
        restore_futs.append(conn.send_special(Xid.SET_WATCHES, restore))
        sent[restore.opcode] += 1
    attach()
    # The caller announces RECONNECTED only once this returns, i.e. once the server has the
    # watches back: a change made by someone else right after could otherwise slip past a
    # persistent watch, which the server re-arms without replaying what happened in the gap.
    for fut in [*auth_futs, *restore_futs]:
        r = await fut
        if r.err and fut in auth_futs:
            raise AuthFailedError("authentication failed", op="add_auth")
