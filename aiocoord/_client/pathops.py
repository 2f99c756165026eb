"""Path operations made of several requests: creating with parents, ``ensure_path`` (one
shared walk per path), the protected create (Curator's ``_c_<uuid>-`` names, found again by
prefix after a lost reply), recursive and guaranteed deletes, and the retry loop they share.

:class:`PathOps` is the part of :class:`~aiocoord.Client` that holds them; the public
methods that validate their arguments and call in here stay on the client, where the API
reference shows them. :func:`find_protected` and :func:`protected_matches` are the one way
a protected node is looked for, by the client and by the recipes' queue nodes alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol, TypeVar

from aiocoord._client.background import BackgroundWork
from aiocoord._client.requests import Requests
from aiocoord._observe.logs import session_extra
from aiocoord._paths import join, protected_prefix, split
from aiocoord._session.connection import Reply
from aiocoord._wire.data import ACL, Stat
from aiocoord._wire.framing import EmptyResponse, Request
from aiocoord._wire.opcodes import CreateFlag, create_mode
from aiocoord._wire.reads import ExistsRequest
from aiocoord._wire.writes import (
    Create2Request,
    Create2Response,
    CreateContainerRequest,
    CreateTTLRequest,
    DeleteRequest,
)
from aiocoord.errors import (
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
    UnimplementedError,
    error_for_code,
)

__all__ = ["PathOps", "find_protected", "protected_matches"]

log = logging.getLogger("aiocoord.client")
T = TypeVar("T")


class Reader(Protocol):
    """The reads a protected node is looked for with (a Client has them)."""

    async def sync(self, path: str = ...) -> None: ...
    async def children(self, path: str) -> list[str]: ...
    async def exists(self, path: str) -> Stat | None: ...


async def protected_matches(client: Reader, parent: str, prefix: str) -> list[str]:
    """The paths of ``parent``'s children named with ``prefix`` (a protected node's
    ``_c_<uuid>-``). A ``sync`` goes first: a create whose reply was lost may still be on
    its way through another server, and the listing must be ordered after it."""
    try:
        await client.sync(parent)
        names = await client.children(parent)
    except NoNodeError:
        return []
    return [join(parent, name) for name in names if name.startswith(prefix)]


async def find_protected(client: Reader, parent: str, prefix: str) -> tuple[str, Stat] | None:
    """The protected node of ``prefix`` under ``parent`` with its stat, or None if there is
    none (see :func:`protected_matches`)."""
    for path in await protected_matches(client, parent, prefix):
        stat = await client.exists(path)
        if stat is not None:
            return path, stat
    return None


class PathOps:
    """The multi-request path operations of :class:`~aiocoord.Client` (module docstring), a part
    the client owns: it sends through ``requests``, keeps its background work in ``work``,
    and looks for protected nodes with ``reader`` (the client's public reads)."""

    def __init__(
        self,
        requests: Requests,
        work: BackgroundWork,
        reader: Reader,
        ensuring: dict[str, list[tuple[bool, tuple[ACL, ...] | None, asyncio.Task[None]]]]
        | None = None,
    ) -> None:
        self._requests = requests
        self._work = work
        self._reader = reader
        # ensure_path walks in flight, by path: (container, acl, task); shared by bound views
        self._ensuring = ensuring if ensuring is not None else {}

    def bound(self, requests: Requests, reader: Reader) -> PathOps:
        """The same operations for a bound view (its ``requests`` and reads), sharing the
        background work and the walks in flight."""
        return PathOps(requests, self._work, reader, self._ensuring)

    async def create_raw(
        self,
        path: str,
        data: bytes,
        mode: int,
        acl: Sequence[ACL],
        ttl_ms: int | None,
        generation: int | None = None,
    ) -> tuple[str, Stat]:
        full = self._requests.full(path)
        req: Request[Create2Response]
        if mode == CreateFlag.CONTAINER:
            req = CreateContainerRequest(path=full, data=data, acl=acl, flags=mode)
        elif ttl_ms is not None:
            req = CreateTTLRequest(path=full, data=data, acl=acl, flags=mode, ttl=ttl_ms)
        else:
            req = Create2Request(path=full, data=data, acl=acl, flags=mode)
        try:
            reply = await self._requests.send(req, path=path, generation=generation)
        except UnimplementedError as exc:
            if ttl_ms is None:
                raise
            raise UnimplementedError(
                "TTL nodes need ZooKeeper 3.5.3+ started with "
                "-Dzookeeper.extendedTypesEnabled=true (a JVM system property)",
                path=path,
                op="create",
            ) from exc
        return self._requests.short(reply.path), reply.stat

    async def create(
        self,
        path: str,
        data: bytes,
        mode: int,
        acl: Sequence[ACL],
        ttl_ms: int | None,
        make_parents: bool,
        as_containers: bool,
        generation: int | None = None,
        *,
        parent_acl: Sequence[ACL] | None,
    ) -> tuple[str, Stat]:
        try:
            return await self.create_raw(path, data, mode, acl, ttl_ms, generation)
        except NoNodeError:
            if not make_parents:
                raise
        await self.ensure_path(split(path)[0], as_containers, parent_acl)
        return await self.create_raw(path, data, mode, acl, ttl_ms, generation)

    async def ensure_path(self, path: str, container: bool, acl: Sequence[ACL] | None) -> None:
        """``acl`` None: each node gets the ACL of its own path
        (:meth:`Requests.acls_for <aiocoord._client.requests.Requests.acls_for>`).

        Callers asking for the same path at the same time share one walk: a burst of
        contenders on a missing lock path makes its parents once, not once each.
        """
        wanted = None if acl is None else tuple(acl)  # a list and a tuple of the same ACL
        for key, shared_acl, task in self._ensuring.get(path, ()):
            if key == container and shared_acl == wanted:
                await asyncio.shield(task)
                return
        task = asyncio.ensure_future(self._walk(path, container, acl))
        entry = (container, wanted, task)
        self._ensuring.setdefault(path, []).append(entry)

        def done(finished: asyncio.Future[None]) -> None:
            if not finished.cancelled():
                finished.exception()  # each caller got it (or left before it came)
            entries = self._ensuring.get(path)
            if entries is not None:
                entries.remove(entry)
                if not entries:
                    del self._ensuring[path]

        task.add_done_callback(done)
        await asyncio.shield(task)

    async def _walk(self, path: str, container: bool, acl: Sequence[ACL] | None) -> None:
        mode = CreateFlag.CONTAINER if container else CreateFlag.PERSISTENT

        async def make(node: str) -> None:
            node_acl = acl if acl is not None else self._requests.acls_for(node, None)
            await self._requests.retrying(lambda: self.create_raw(node, b"", mode, node_acl, None))

        # Walk up from the deepest ancestor: in the common case only the last levels are
        # missing, so most calls cost one or two round trips.
        missing: list[str] = []
        current = path
        while current != "/":
            try:
                await make(current)
                break
            except NodeExistsError:
                break
            except NoNodeError:
                missing.append(current)
                current = split(current)[0]
        for node in reversed(missing):
            with contextlib.suppress(NodeExistsError):
                await make(node)

    async def create_protected(
        self,
        path: str,
        data: bytes,
        ephemeral: bool,
        sequential: bool,
        acl: Sequence[ACL],
        make_parents: bool,
        as_containers: bool,
        parent_acl: Sequence[ACL] | None,
        ttl_ms: int | None = None,
    ) -> tuple[str, Stat]:
        parent, name = split(path)
        mode = create_mode(ephemeral, sequential, False, ttl_ms)
        delays = self._requests.retry.delays()
        while True:
            prefix = protected_prefix()
            node_path = join(parent, prefix + name)
            generation = self._requests.session.generation
            while True:
                try:
                    return await self.create(
                        node_path,
                        data,
                        mode,
                        acl,
                        ttl_ms,
                        make_parents,
                        as_containers,
                        parent_acl=parent_acl,
                    )
                except ConnectionLossError:
                    pass
                # The reply was lost: the node may exist. Look for it by its unique prefix.
                delay = next(delays, None)
                if delay is None:
                    raise ConnectionLossError(
                        "gave up creating a protected node after repeated connection loss",
                        path=path,
                        op="create",
                    )
                await asyncio.sleep(delay)
                match = await find_protected(self._reader, parent, prefix)
                if match is None:
                    if ephemeral and generation != self._requests.session.generation:
                        break  # new session: start over with a fresh UUID
                    continue  # never created: the same UUID is safe to try again
                found, stat = match
                if ephemeral and stat.ephemeral_owner != self._requests.session.session_id:
                    # Made by a session that is gone: it will vanish on its own, but a lock
                    # queue must not wait on it meanwhile.
                    with contextlib.suppress(NoNodeError):
                        await self._requests.retrying(partial(self.delete_once, found, -1))
                    break  # the UUID is retired; a fresh one is used
                return found, stat

    async def delete_once(self, path: str, version: int) -> None:
        await self._requests.send(
            DeleteRequest(path=self._requests.full(path), version=version), path=path
        )

    async def delete_tree(self, path: str) -> None:
        while True:
            try:
                names = await self._reader.children(path)
            except NoNodeError:
                return
            await asyncio.gather(*(self.delete_tree(join(path, n)) for n in names))
            try:
                await self._requests.retrying(lambda: self.delete_once(path, -1))
                return
            except NoNodeError:
                return
            except NotEmptyError:
                continue  # a child appeared meanwhile

    def delete_for_sure(
        self, path: str, version: int = -1, *, on_deleted: Callable[[], None] | None = None
    ) -> asyncio.Future[Reply[EmptyResponse]]:
        """See :meth:`Client.delete_for_sure <aiocoord.Client.delete_for_sure>`."""
        reply = self._submit_delete(path, version)
        self._see_through(path, version, on_deleted, reply)
        return reply

    def _submit_delete(self, path: str, version: int) -> asyncio.Future[Reply[EmptyResponse]]:
        """The delete, written now or held for the next connection, in the current session."""
        return self._requests.session.submit(
            DeleteRequest(path=self._requests.full(path), version=version),
            generation=self._requests.session.generation,
        )

    def _see_through(
        self,
        path: str,
        version: int,
        on_deleted: Callable[[], None] | None,
        reply: asyncio.Future[Reply[EmptyResponse]],
    ) -> None:
        def settle(done: asyncio.Future[Reply[EmptyResponse]]) -> None:
            if done.cancelled():  # only close() cancels what the client follows
                return
            exc = done.exception()
            if exc is None:
                err = done.result().err
                if not err or err == NoNodeError.code:
                    if on_deleted is not None:
                        on_deleted()
                else:
                    self._delete_failed(path, error_for_code(err, path=path, op="delete"))
            elif isinstance(exc, ConnectionLossError) and not self._requests.session.closed:
                # It may or may not have been applied: once more, held for the reconnect.
                try:
                    again = self._submit_delete(path, version)
                except CoordinationError:
                    return  # closed meanwhile: the session's end removes what was ephemeral
                self._see_through(path, version, on_deleted, again)
            elif isinstance(exc, SessionExpiredError):
                if (
                    self._requests.session.reconnect_after_expiry
                    and not self._requests.session.closed
                ):
                    self._work.spawn(
                        self._delete_after_expiry(path, version, on_deleted),
                        f"aiocoord-delete:{path}",
                    )
            elif isinstance(exc, ClientClosedError | ConnectionLossError):
                pass  # the session ended with the client: its ephemeral nodes with it
            else:
                self._delete_failed(path, exc)

        self._work.follow(reply, settle)

    def _delete_failed(self, path: str, exc: BaseException) -> None:
        log.warning(
            "could not delete %s: %r", path, exc, extra=session_extra(self._requests.session)
        )

    async def _delete_after_expiry(
        self, path: str, version: int, on_deleted: Callable[[], None] | None
    ) -> None:
        """A guaranteed delete whose session expired before it was answered: the node, if
        still there and persistent, is deleted in the new session. An ephemeral node there now
        is not the one asked for (that one went with the old session): it is left alone."""
        while True:
            requests = self._requests.bound(self._requests.session.generation)
            try:
                stat = await requests.retrying(partial(_exists, requests, path))
                if stat is not None and stat.ephemeral_owner == 0:
                    await requests.send(
                        DeleteRequest(path=requests.full(path), version=version), path=path
                    )
            except NoNodeError:
                pass
            except (ConnectionLossError, SessionExpiredError):
                if (
                    self._requests.session.closed
                    or not self._requests.session.reconnect_after_expiry
                ):
                    return
                continue  # held until the next connection or session
            except ClientClosedError:
                return
            except CoordinationError as exc:
                self._delete_failed(path, exc)
                return
            if on_deleted is not None:
                on_deleted()
            return

    async def delete_guaranteed(self, path: str, version: int, recursive: bool) -> None:
        if not recursive:
            connected = self._requests.connected
            reply = self.delete_for_sure(path, version)
            if not connected:
                return  # held for the next connection, and seen through in the background
            # Not awaited directly: cancelling the caller must not cancel the answer the
            # background follows.
            await asyncio.wait((reply,))
            if reply.cancelled() or reply.exception() is not None:
                return  # seen through in the background
            err = reply.result().err
            if err and err != NoNodeError.code:
                raise error_for_code(err, path=path, op="delete")
            return

        async def background() -> None:
            while True:
                try:
                    await self.delete_tree(path)
                    return
                except NoNodeError:
                    return
                except ConnectionLossError:
                    await asyncio.sleep(0.05)
                except (SessionExpiredError, CoordinationError) as exc:
                    extra = session_extra(self._requests.session)
                    log.info("guaranteed delete of %s ended: %r", path, exc, extra=extra)
                    return

        if not self._requests.connected:
            self._work.spawn(background(), f"aiocoord-delete:{path}")
            return
        try:
            await self.delete_tree(path)
        except NoNodeError:
            return
        except ConnectionLossError:
            self._work.spawn(background(), f"aiocoord-delete:{path}")
        except asyncio.CancelledError:
            # The delete may or may not have been applied: make sure of it in the background.
            self._work.spawn(background(), f"aiocoord-delete:{path}")
            raise


async def _exists(requests: Requests, path: str) -> Stat | None:
    """The node's Stat, or None (one request, in ``requests``' session)."""
    try:
        reply = await requests.send(ExistsRequest(path=requests.full(path), watch=False), path=path)
    except NoNodeError:
        return None
    return reply.stat
