"""The one door through which recipes reach below the client's public methods.

A lock's hot path cannot afford the public methods' chain of calls down to the socket (a task
step per layer) and needs a request written *now*, from the caller's step, so that the next
request it writes is ordered after it on the wire. :func:`send_now` does that; the reads
(:func:`children_now`, :func:`watch_data_many_now`) add what a read needs, in one place
(:func:`_write` and :func:`_answer`: the chroot, the watch's registration and settling, the
mapping of an error code to its exception), and fall back to the public, retrying method
when not connected or when the answer was lost with the connection. Recipes also ask here
what only the session knows: whether it may be trusted, whether it renews itself after an
expiry, its negotiated timeout, its metrics recorder and the fields of its log records.

Nothing else in :mod:`aiocoord.recipes` touches ``client._session`` or the watch table (the
layout test holds that rule).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aiocoord._client.requests import acl_for_create
from aiocoord._futures import retrieve
from aiocoord._observe.logs import session_extra
from aiocoord._observe.metrics import Recorder
from aiocoord._session.connection import Reply
from aiocoord._session.watch import Watch, WatchKind
from aiocoord._session.watch_table import WatchTable
from aiocoord._wire.data import ACL
from aiocoord._wire.framing import Request
from aiocoord._wire.multi import MultiReadRequest, MultiReadResponse
from aiocoord._wire.opcodes import OP_NAMES, CreateFlag, Op
from aiocoord._wire.reads import (
    ExistsRequest,
    ExistsResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
)
from aiocoord._wire.writes import CreateContainerRequest, CreateRequest
from aiocoord.errors import ConnectionLossError, CoordinationError, NoNodeError, error_for_code

if TYPE_CHECKING:
    from aiocoord.client import Client

__all__ = [
    "Reply",
    "children_now",
    "corked",
    "create_acl",
    "extension_state",
    "follow",
    "log_extra",
    "make_parent_now",
    "negotiated_timeout",
    "note_parent",
    "parent_known",
    "recorder",
    "renews_sessions",
    "round_trip",
    "send_now",
    "server_path",
    "short_path",
    "spawn",
    "submit_children",
    "submit_get",
    "submit_get_many",
    "trusted",
    "watch_data_many_now",
    "watch_data_then",
]

R = TypeVar("R")
T = TypeVar("T")


def spawn(
    client: Client, coro: Coroutine[Any, Any, Any], name: str, *, daemon: bool = False
) -> asyncio.Task[Any]:
    """Run ``coro`` as a task ``client`` owns: ``close()`` cancels and awaits it, and
    ``wait_background()`` waits for it. For clean-ups that must outlive their caller
    (guaranteed deletes, a recipe's node removal after a cancelled acquire).

    ``daemon=True``: a task that only follows the server (a watch to arm, the ensemble
    tracker): ``close()`` still ends it, but it is no work owed, so ``pending_deletes()``
    does not count it and ``wait_background()`` does not wait for it."""
    return client._spawn(coro, name, daemon=daemon)


def follow(
    client: Client, future: asyncio.Future[T], then: Callable[[asyncio.Future[T]], None]
) -> None:
    """Count ``future`` (the answer to a request written now, say) as ``client``'s
    background work until it is done, then call ``then`` with it: ``wait_background()``
    waits for it and ``close()`` cancels it. For answers a recipe settles after its caller
    has moved on (a release's delete) without a task to start."""
    client._follow(future, then)


def extension_state(client: Client, key: object, factory: Callable[[], T]) -> T:
    """State kept per client: the object ``factory()`` made on the first call with ``key``,
    the same one on every later call (from views made by ``client.bound()`` too), for as
    long as the client lives. The recipes keep what one client knows of a queue here (its
    shared listings), so that it ends with the client instead of living in a module global."""
    return client._extension_state(key, factory)


def server_path(client: Client, path: str) -> str:
    """``path`` as the server knows it (the chroot prefixed)."""
    return client._session.paths.add(path)


def short_path(client: Client, path: str) -> str:
    """A path from the server as the caller knows it (the chroot stripped)."""
    return client._session.paths.strip(path)


def send_now(client: Client, request: Request[R]) -> asyncio.Future[Reply[R]] | None:
    """Write ``request`` (paths already as the server knows them) now, from the caller's step;
    None if not connected. The future resolves to the raw reply (its error code unmapped)."""
    return client._session.send_now(request)


#: What :func:`_now` answers when the public, retrying method must ask instead.
_ASK_AGAIN = object()


async def _now(
    client: Client,
    path: str,
    make: Callable[[str, bool], Request[R]],
    op: Op,
    watch: WatchKind | None,
    generation: int | None,
) -> tuple[R, Watch | None] | object | None:
    """The one place a read is written now: the chroot, the watch's registration and settling,
    the mapping of an error code. Its body and armed watch; None if the node does not exist;
    :data:`_ASK_AGAIN` when not connected, in another session than ``generation``, or with
    the answer lost with the connection. Any other error code raises its exception."""
    written = _write(client, path, make, watch, generation)
    if written is None:
        return _ASK_AGAIN
    return await _answer(client, path, op, *written)


def _write(
    client: Client,
    path: str,
    make: Callable[[str, bool], Request[R]],
    watch: WatchKind | None,
    generation: int | None,
) -> tuple[asyncio.Future[Reply[R]], Watch | None] | None:
    """The first half of :func:`_now`: the request written, its watch registered first (an
    event that races the reply finds its waiter); None if it cannot be written now."""
    session = client._session
    if generation is not None and session.generation != generation:
        return None
    full = session.paths.add(path)
    armed: Watch | None = None
    wire = False
    if watch is not None:
        armed, wire = session.watches.waiter(watch, full, path)
    sent = session.send_now(make(full, wire))
    if sent is None:
        if armed is not None:
            session.watches.unregister(armed)
        return None
    if armed is not None:
        session.watches.written(armed, sent)
    return sent, armed


async def _answer(
    client: Client, path: str, op: Op, sent: asyncio.Future[Reply[R]], armed: Watch | None
) -> tuple[R, Watch | None] | object | None:
    """The second half of :func:`_now`: the answer to a request :func:`_write` wrote."""
    watches = client._session.watches
    try:
        reply = await sent
    except ConnectionLossError:
        if armed is not None:
            watches.unregister(armed)  # asked again by the caller, once reconnected
        return _ASK_AGAIN
    except BaseException:
        if armed is not None:
            watches.abandon(armed)  # the request went out: its server watch must not linger
        raise
    return _answered(watches, path, op, reply, armed)


def _answered(
    watches: WatchTable, path: str, op: Op, reply: Reply[R], armed: Watch | None
) -> tuple[R, Watch | None] | None:
    """A read's answer: its watch settled, its body and watch; None if the node does not
    exist. Any other error code raises its exception."""
    if armed is not None:
        watches.settle(armed, op, reply.err)
    if reply.err == NoNodeError.code:
        return None
    if reply.err:
        raise error_for_code(reply.err, path=path, op=OP_NAMES[op])
    assert reply.body is not None  # the connection decodes every successful reply
    return reply.body, armed


def _listing(full: str, _: bool) -> GetChildrenRequest:
    return GetChildrenRequest(path=full, watch=False)


def _data_watch(full: str, wire: bool) -> GetDataRequest:
    return GetDataRequest(path=full, watch=wire)


async def children_now(client: Client, path: str) -> list[str]:
    """The children of ``path`` from a request written now (by :func:`client.children
    <aiocoord.Client.children>`, with its retries, when that cannot be); NoNodeError if
    ``path`` does not exist."""
    out = await _now(client, path, _listing, Op.GET_CHILDREN, None, None)
    if out is _ASK_AGAIN:
        return await client.children(path)
    if out is None:
        raise NoNodeError(path=path, op=OP_NAMES[Op.GET_CHILDREN])
    body, _ = cast("tuple[GetChildrenResponse, None]", out)
    return body.children


async def watch_data_many_now(
    client: Client, pinned: Client, generation: int, paths: Sequence[str]
) -> list[Watch | None]:
    """A getData watch on every path of ``paths`` for a waiter of session ``generation``
    (``pinned`` is the client bound to it), their requests written now, in that order, in one
    go: one round trip for all, and no task. One that cannot be written now is asked by
    ``pinned.get(path, watch=True)``, with its retries. Each None if its node is gone."""
    written = [_write(client, path, _data_watch, WatchKind.DATA, generation) for path in paths]
    out: list[Watch | None] = []
    try:
        for path, sent in zip(paths, written, strict=True):
            answer = _ASK_AGAIN if sent is None else await _answer(client, path, Op.GET_DATA, *sent)
            if answer is _ASK_AGAIN:
                try:
                    _, _, watch = await pinned.get(path, watch=True)
                except NoNodeError:
                    watch = None
                out.append(watch)
            elif answer is None:
                out.append(None)
            else:
                out.append(cast("tuple[Any, Watch]", answer)[1])
    except BaseException:
        for armed in out:
            if armed is not None:
                armed.cancel()
        for left in written[len(out) + 1 :]:
            if left is not None:
                left[0].add_done_callback(retrieve)  # its answer (or failure) is read by nobody
                if left[1] is not None:
                    # Written, never to be answered here: no lingering watch.
                    client._session.watches.abandon(left[1])
        raise
    return out


def watch_data_then(
    client: Client,
    path: str,
    generation: int,
    then: Callable[[Watch | BaseException | None], None],
    data_then: Callable[[bytes, int], None] | None = None,
) -> bool:
    """Write a getData watch on ``path`` now, in session ``generation``, and call ``then``
    with its answer, from a callback (no task): the armed :class:`Watch`, None if the node is
    gone (no watch is set then), or the error. A :class:`ConnectionLossError` means the answer
    was lost with the connection and nothing is left armed: ask again once connected. False,
    with nothing written, when it cannot be written now (not connected, or ``generation`` is
    no longer the session's). ``data_then``, if given, is called with the node's data and its
    data version just before ``then`` is called with the armed watch (the read carries them:
    no request more)."""
    written = _write(client, path, _data_watch, WatchKind.DATA, generation)
    if written is None:
        return False
    sent, armed = written
    assert armed is not None  # a watch was asked for
    watches = client._session.watches

    def answered(done: asyncio.Future[Reply[GetDataResponse]]) -> None:
        if done.cancelled():  # the client closed
            watches.abandon(armed)
            then(asyncio.CancelledError())
            return
        exc = done.exception()
        if exc is not None:
            if isinstance(exc, ConnectionLossError):
                watches.unregister(armed)  # the server dropped it with the connection
            else:
                watches.abandon(armed)  # the session or the client ended: it failed with them
            then(exc)
            return
        try:
            found = _answered(watches, path, Op.GET_DATA, done.result(), armed)
        except CoordinationError as error:
            then(error)
        else:
            if found is not None and data_then is not None:
                data_then(found[0].data, found[0].stat.version)
            then(None if found is None else armed)

    sent.add_done_callback(answered)
    return True


def submit_get(
    client: Client, path: str, *, data: bool
) -> asyncio.Future[Reply[GetDataResponse]] | asyncio.Future[Reply[ExistsResponse]]:
    """A plain read of ``path`` (no watch) written now, or held for the next connection and
    written then, in order (``Session.submit``): getData if ``data``, else exists. The future
    of its raw reply (the error code unmapped); ConnectionLossError if the connection is lost
    after it was written, ClientClosedError if the client closes first. For callers that
    follow many reads with callbacks rather than a task each (a cache's pipelined load)."""
    session = client._session
    full = session.paths.add(path)
    if data:
        return session.submit(GetDataRequest(path=full, watch=False))
    return session.submit(ExistsRequest(path=full, watch=False))


def submit_get_many(
    client: Client, paths: Sequence[str]
) -> asyncio.Future[Reply[MultiReadResponse]]:
    """:func:`submit_get` of every path of ``paths`` (their data) in one multiRead (3.6+):
    one request and one answer for all, each read failing alone (``results[i]`` is the
    ``(err, body)`` of ``paths[i]``)."""
    session = client._session
    add = session.paths.add
    ops = [GetDataRequest(path=add(path), watch=False) for path in paths]
    return session.submit(MultiReadRequest(ops))


def create_acl(client: Client, path: str, acl: Sequence[ACL] | None) -> Sequence[ACL]:
    """The ACL a create of ``path`` sends: ``acl``, else the client's provider's
    (:attr:`Client.acl_provider <aiocoord.Client.acl_provider>`), else open."""
    return acl_for_create(client.acl_provider, path, acl)


class _KnownParents:
    """The key of :func:`parent_known`'s per-client state: paths this client made a node
    under, oldest first."""


#: How many such paths a client remembers (the oldest is forgotten first, which only costs
#: the next first node under it a refused create).
_KNOWN_PARENTS = 4096


def parent_known(client: Client, path: str) -> bool:
    """Whether this client made a node under ``path`` lately (:func:`note_parent`): then it
    most likely exists still (but for a container the server removed once it was empty),
    and a child's create needs no :func:`make_parent_now` first."""
    known: dict[str, None] = extension_state(client, _KnownParents, dict)
    return path in known


def note_parent(client: Client, path: str) -> None:
    """Remember that this client made a node under ``path`` (see :func:`parent_known`)."""
    known: dict[str, None] = extension_state(client, _KnownParents, dict)
    if path not in known:
        known[path] = None
        if len(known) > _KNOWN_PARENTS:
            del known[next(iter(known))]


class _ParentsInFlight:
    """The key of :func:`make_parent_now`'s per-client state: the creates in flight, by the
    parent's path as the server knows it."""


def make_parent_now(
    client: Client, path: str, acl: Sequence[ACL] | None, *, container: bool
) -> bool:
    """Write now the create of ``path``, a container if ``container`` (Curator's layout) else
    a persistent node (kazoo's: see :attr:`Layout.parents_as_containers
    <aiocoord.recipes.layout.Layout.parents_as_containers>`), its ACL ``acl``, else the
    client's provider's, else open; unless this client's create of it is in flight already (a
    burst of contenders on a missing lock path makes it once). A request written after it on the
    same connection is ordered after it: a child's create written next finds the parent made
    (by this create, or by someone else's, which is as good), with no round trip in between.
    The answer is followed, not reported: the child's create tells whether the parent is
    there (NoNode if a level above it was missing too). False if not connected (nothing was
    written)."""
    session = client._session
    full = session.paths.add(path)
    in_flight: dict[str, asyncio.Future[Any]] = extension_state(client, _ParentsInFlight, dict)
    if full in in_flight:
        return True
    node_acl = create_acl(client, path, acl)
    sent: asyncio.Future[Any] | None
    if container:
        sent = session.send_now(
            CreateContainerRequest(path=full, data=b"", acl=node_acl, flags=CreateFlag.CONTAINER)
        )
    else:
        sent = session.send_now(
            CreateRequest(path=full, data=b"", acl=node_acl, flags=CreateFlag.PERSISTENT)
        )
    if sent is None:
        return False
    in_flight[full] = sent

    def settled(done: asyncio.Future[Any]) -> None:
        if in_flight.get(full) is done:
            del in_flight[full]
        retrieve(done)  # a lost connection: the child's create fails with it too

    follow(client, sent, settled)
    return True


def corked(client: Client) -> contextlib.AbstractContextManager[None]:
    """A block whose requests leave together at its end, in one write (one system call, full
    packets) rather than one each: for a caller writing many requests in one step."""
    return client._session.corked()


def submit_children(client: Client, path: str) -> asyncio.Future[Reply[GetChildrenResponse]]:
    """:func:`submit_get`'s listing: getChildren of ``path``, no watch."""
    session = client._session
    return session.submit(GetChildrenRequest(path=session.paths.add(path), watch=False))


def trusted(client: Client) -> bool:
    """Whether the client's session may be trusted now (the rule:
    :mod:`aiocoord._session.liveness`)."""
    return client._session.trusted()


def renews_sessions(client: Client) -> bool:
    """Whether the client starts a new session after an expiry (``reconnect_after_expiry``)."""
    return client._session.reconnect_after_expiry


def round_trip(client: Client) -> float | None:
    """The round trip to the server the client is connected to, in seconds (the least a
    recent read took); None when not known."""
    return client._session.round_trip


def negotiated_timeout(client: Client) -> float:
    """The session timeout the server granted, in seconds."""
    return client._session.negotiated_timeout


def recorder(client: Client) -> Recorder:
    """What :meth:`Client.stats <aiocoord.Client.stats>` reports from (recipes count into it)."""
    return client._session.recorder


def log_extra(client: Client) -> dict[str, Any]:
    """The fields that tie a log record to the client's session."""
    return session_extra(client._session)
