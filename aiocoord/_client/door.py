"""The one door through which recipes reach below the client's public methods.

A lock's hot path cannot afford the public methods' chain of calls down to the socket (a task
step per layer) and needs a request written *now*, from the caller's step, so that the next
request it writes is ordered after it on the wire. :func:`send_now` does that; :func:`read_now`
adds what a read needs (the chroot, the watch's registration and settling, the mapping of an
error code to its exception) and falls back to the public, retrying method when not connected
or when the answer was lost with the connection. Recipes also ask here what only the session
knows: whether it may be trusted, whether it renews itself after an expiry, its negotiated
timeout, its metrics recorder and the fields of its log records.

Nothing else in :mod:`aiocoord.recipes` touches ``client.session`` or the watch table (the
layout test holds that rule).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from aiocoord._observe.logs import session_extra
from aiocoord._observe.metrics import Recorder
from aiocoord._session.connection import Reply
from aiocoord._session.watch import Watch, WatchKind
from aiocoord._wire.framing import Request
from aiocoord._wire.opcodes import OP_NAMES, Op
from aiocoord._wire.reads import GetChildrenRequest, GetChildrenResponse, GetDataRequest
from aiocoord.errors import ConnectionLossError, NoNodeError, error_for_code

if TYPE_CHECKING:
    from aiocoord.client import Client

__all__ = [
    "Reply",
    "children_now",
    "log_extra",
    "negotiated_timeout",
    "read_now",
    "recorder",
    "renews_sessions",
    "send_now",
    "server_path",
    "short_path",
    "trusted",
    "watch_data_now",
]

R = TypeVar("R")
T = TypeVar("T")


def server_path(client: Client, path: str) -> str:
    """``path`` as the server knows it (the chroot prefixed)."""
    return client.session.paths.add(path)


def short_path(client: Client, path: str) -> str:
    """A path from the server as the caller knows it (the chroot stripped)."""
    return client.session.paths.strip(path)


def send_now(client: Client, request: Request[R]) -> asyncio.Future[Reply[R]] | None:
    """Write ``request`` (paths already as the server knows them) now, from the caller's step;
    None if not connected. The future resolves to the raw reply (its error code unmapped)."""
    return client.session.send_now(request)


async def read_now(
    client: Client,
    path: str,
    make: Callable[[str, bool], Request[R]],
    *,
    op: Op,
    fallback: Callable[[], Awaitable[T]],
    answer: Callable[[R, Watch | None], T],
    watch: WatchKind | None = None,
    generation: int | None = None,
) -> T | None:
    """A read of ``path`` written now; its answer, or None if the node does not exist.

    ``make(server_path, watch)`` builds the request; ``answer(body, watch)`` turns the reply's
    body and the armed watch (None without ``watch``) into the result. Not connected, in
    another session than ``generation``, or with the answer lost with the connection: the
    result of ``fallback()`` (the public, retrying method; it raises NoNodeError for a missing
    node, which is the caller's to map). Any other error code raises its exception.
    """
    session = client.session
    if generation is None or session.generation == generation:
        full = session.paths.add(path)
        watches = session.watches
        armed: Watch | None = None
        wire = False
        if watch is not None:
            armed, wire = watches.waiter(watch, full, path)
        sent = session.send_now(make(full, wire))
        if sent is None:
            if armed is not None:
                watches.unregister(armed)
        else:
            try:
                reply = await sent
            except ConnectionLossError:
                if armed is not None:
                    watches.unregister(armed)  # asked again below, once reconnected
            except BaseException:
                if armed is not None:
                    armed.cancel()  # the request went out: its server watch must not linger
                raise
            else:
                if armed is not None:
                    watches.settle(armed, op, reply.err)
                if reply.err == NoNodeError.code:
                    return None
                if reply.err:
                    raise error_for_code(reply.err, path=path, op=OP_NAMES[op])
                assert reply.body is not None  # the connection decodes every successful reply
                return answer(reply.body, armed)
    return await fallback()


async def children_now(client: Client, path: str) -> list[str]:
    """The children of ``path`` from a request written now (:func:`read_now`); NoNodeError if
    ``path`` does not exist."""

    async def fallback() -> list[str]:
        return await client.children(path)

    def names_of(body: GetChildrenResponse, _: Watch | None) -> list[str]:
        return body.children

    names = await read_now(
        client,
        path,
        lambda full, _: GetChildrenRequest(path=full, watch=False),
        op=Op.GET_CHILDREN,
        fallback=fallback,
        answer=names_of,
    )
    if names is None:
        raise NoNodeError(path=path, op=OP_NAMES[Op.GET_CHILDREN])
    return names


async def watch_data_now(
    client: Client, pinned: Client, generation: int, path: str
) -> Watch | None:
    """A getData watch on ``path`` for a waiter of session ``generation`` (``pinned`` is the
    client bound to it), from a request written now (:func:`read_now`); None if the node is
    gone."""

    async def fallback() -> Watch | None:
        try:
            _, _, watch = await pinned.get(path, watch=True)
        except NoNodeError:
            return None
        return watch

    def armed(_: Any, watch: Watch | None) -> Watch | None:
        return watch

    return await read_now(
        client,
        path,
        lambda full, wire: GetDataRequest(path=full, watch=wire),
        op=Op.GET_DATA,
        fallback=fallback,
        answer=armed,
        watch=WatchKind.DATA,
        generation=generation,
    )


def trusted(client: Client) -> bool:
    """Whether the client's session may be trusted now (the rule:
    :mod:`aiocoord._session.liveness`)."""
    return client.session.trusted()


def renews_sessions(client: Client) -> bool:
    """Whether the client starts a new session after an expiry (``reconnect_after_expiry``)."""
    return client.session.reconnect_after_expiry


def negotiated_timeout(client: Client) -> float:
    """The session timeout the server granted, in seconds."""
    return client.session.negotiated_timeout


def recorder(client: Client) -> Recorder:
    """What :meth:`Client.stats <aiocoord.Client.stats>` reports from (recipes count into it)."""
    return client.session.recorder


def log_extra(client: Client) -> dict[str, Any]:
    """The fields that tie a log record to the client's session."""
    return session_extra(client.session)
