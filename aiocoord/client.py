"""The client: ZooKeeper path operations over a :class:`~aiocoord._session.session.Session`.

Paths are checked before anything is sent, prefixed with the chroot on the way out and
stripped on the way back. Retry policies apply only where repeating is safe: reads,
version-checked writes and protected creates (see :mod:`aiocoord.retry`).

The class is assembled from parts: the session accessors (``_sessionview``), the ACL, auth
and introspection ops (``_adminops``) and the multi-request path ops (``_pathops``) live
beside this module; the single-request reads and writes and the lifecycle live here.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from aiocoord._client.adminops import AdminOps
from aiocoord._client.background import BackgroundWork
from aiocoord._client.pathops import PathOps
from aiocoord._client.sessionview import SessionView
from aiocoord._observe.otel import telemetry_for
from aiocoord._paths import protected_id
from aiocoord._session.session import Session
from aiocoord._session.watch import Watch, WatchKind
from aiocoord._validation import (
    MAX_TTL_MS,
    validate_duration_ms,
    validate_flag,
    validate_path,
    validate_version,
)
from aiocoord._wire.data import ACL, Stat
from aiocoord._wire.framing import Request
from aiocoord._wire.reads import (
    ExistsRequest,
    GetChildren2Request,
    GetChildrenRequest,
    GetDataRequest,
    SyncRequest,
)
from aiocoord._wire.writes import (
    SetDataRequest,
)
from aiocoord.acl import ACLProvider, wire_acl
from aiocoord.compression import _payload, gzip_decompress
from aiocoord.errors import (
    BadArgumentsError,
    BadVersionError,
    NoNodeError,
)
from aiocoord.retry import ExponentialBackoff, RetryPolicy, call_with_retry
from aiocoord.transaction import Transaction, create_mode

if TYPE_CHECKING:
    from aiocoord._client.tracker import EnsembleTracker
    from aiocoord.recipes.lock import Lock

T = TypeVar("T")
#: What a read that asks for no watch registers.
NO_WATCH: tuple[None, bool] = (None, False)


@dataclass(frozen=True, slots=True)
class ChildData:
    """A node's path, data and stat (what caches hold)."""

    path: str
    data: bytes
    stat: Stat


class Client(SessionView, AdminOps, PathOps, BackgroundWork):
    """A connected ZooKeeper client. Get one with :func:`aiocoord.connect`.

    All methods are coroutine-safe: any number of tasks may share one client, and their
    requests are pipelined on one connection.
    """

    def __init__(
        self,
        session: Session,
        *,
        retry: RetryPolicy | None = None,
        acl_provider: ACLProvider | None = None,
    ) -> None:
        self._session = session
        session.recorder.telemetry = telemetry_for(self.stats)  # None: OpenTelemetry not set up
        #: the ACL of every node created without an explicit ``acl`` (Curator's ACLProvider)
        self.acl_provider = acl_provider
        self.chroot = session.chroot
        paths = session.paths
        # The chroot's add and strip, bound once: every request passes through them.
        self._full = paths.add
        self._short = paths.strip
        self.retry: RetryPolicy = retry if retry is not None else ExponentialBackoff()
        BackgroundWork.__init__(self)
        # ensure_path walks in flight, by path: (container, acl, task)
        self._ensuring: dict[str, list[tuple[bool, list[ACL] | None, asyncio.Task[None]]]] = {}
        #: When set, every request belongs to that session generation (see :meth:`bound`).
        self._generation: int | None = None
        # Per-client state of extensions (see extension_state); bound views share it.
        self._extensions: dict[object, Any] = {}
        #: the :class:`~aiocoord.EnsembleTracker` of ``connect(..., track_ensemble=True)``
        self.ensemble_tracker: EnsembleTracker | None = None

    def extension_state(self, key: object, factory: Callable[[], T]) -> T:
        """State an extension keeps per client: the object ``factory()`` made on the first
        call with ``key``, the same one on every later call (from views made by
        :meth:`bound` too), for as long as the client lives.

        The recipes keep what one client knows of a queue here (its shared listings), so that
        it ends with the client instead of living in a module global.
        """
        try:
            state: T = self._extensions[key]
        except KeyError:
            state = self._extensions[key] = factory()
        return state

    def bound(self, generation: int | None = None) -> Client:
        """A view of this client whose requests run only in one session.

        ``generation`` defaults to the current ``client.session.generation``. Once that
        session is lost, every call on the view raises SessionExpiredError without sending
        anything, even a call made while SUSPENDED that would otherwise wait for a new
        session. Recipes use it for writes that act for a holder of the old session.
        """
        view = copy.copy(self)
        view._generation = self._session.generation if generation is None else generation
        return view

    async def _request(
        self,
        request: Request[T],
        *,
        path: str | None = None,
        watch: Watch | None = None,
        generation: int | None = None,
    ) -> T:
        return await self._session.request(
            request,
            path=path,
            watch=watch,
            generation=generation if generation is not None else self._generation,
        )

    async def close(self) -> None:
        """End the session cleanly: ephemeral nodes vanish, watches end, tasks stop."""
        await self._stop_background()
        await self._session.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._session.closed

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- helpers ------------------------------------------------------------------------

    # --- reads --------------------------------------------------------------------------

    @overload
    async def exists(self, path: str, *, watch: Literal[False] = False) -> Stat | None: ...
    @overload
    async def exists(self, path: str, *, watch: Literal[True]) -> tuple[Stat | None, Watch]: ...

    async def exists(self, path: str, *, watch: bool = False) -> Any:
        """The node's Stat, or None if it does not exist. With ``watch=True`` also a Watch
        that fires on its creation, change or deletion. Retried on connection loss."""
        validate_path(path)
        validate_flag(watch, "watch")
        full = self._full(path)
        watches = self._session.watches

        async def once() -> Any:
            w, wire_watch = watches.waiter(WatchKind.DATA, full, path) if watch else NO_WATCH
            try:
                reply = await self._request(
                    ExistsRequest(path=full, watch=wire_watch), path=path, watch=w
                )
            except NoNodeError:
                if w is not None:
                    watches.set_exists(WatchKind.DATA, full, False)
                return (None, w) if watch else None
            return (reply.stat, w) if watch else reply.stat

        return await self._retrying(once)

    @overload
    async def get(
        self, path: str, *, watch: Literal[False] = False, compressed: bool = False
    ) -> tuple[bytes, Stat]: ...
    @overload
    async def get(
        self, path: str, *, watch: Literal[True], compressed: bool = False
    ) -> tuple[bytes, Stat, Watch]: ...

    async def get(self, path: str, *, watch: bool = False, compressed: bool = False) -> Any:
        """The node's data and Stat; raises NoNodeError. ``watch=True`` adds a Watch that
        fires on its next change or deletion. Retried on connection loss.

        ``compressed=True`` decompresses data written compressed (``create``/``set`` with
        ``compressed=True``, or Curator's ``.compressed()``); CompressedDataError if the node
        holds anything else (the Stat describes the stored, compressed bytes)."""
        validate_path(path)
        validate_flag(watch, "watch")
        validate_flag(compressed, "compressed")
        full = self._full(path)
        watches = self._session.watches

        async def once() -> Any:
            w, wire_watch = watches.waiter(WatchKind.DATA, full, path) if watch else NO_WATCH
            reply = await self._request(
                GetDataRequest(path=full, watch=wire_watch), path=path, watch=w
            )
            data = gzip_decompress(reply.data, path) if compressed else reply.data
            return (data, reply.stat, w) if watch else (data, reply.stat)

        return await self._retrying(once)

    @overload
    async def children(
        self, path: str, *, watch: Literal[False] = False, with_stat: Literal[False] = False
    ) -> list[str]: ...
    @overload
    async def children(
        self, path: str, *, watch: Literal[True], with_stat: Literal[False] = False
    ) -> tuple[list[str], Watch]: ...
    @overload
    async def children(
        self, path: str, *, watch: Literal[False] = False, with_stat: Literal[True]
    ) -> tuple[list[str], Stat]: ...
    @overload
    async def children(
        self, path: str, *, watch: Literal[True], with_stat: Literal[True]
    ) -> tuple[list[str], Stat, Watch]: ...

    async def children(self, path: str, *, watch: bool = False, with_stat: bool = False) -> Any:
        """The names of the node's children (unordered); raises NoNodeError. ``with_stat``
        adds the parent's Stat, ``watch`` a Watch on the child list. Retried on loss."""
        validate_path(path)
        validate_flag(watch, "watch")
        validate_flag(with_stat, "with_stat")
        full = self._full(path)
        watches = self._session.watches

        async def once() -> Any:
            w, wire_watch = watches.waiter(WatchKind.CHILD, full, path) if watch else NO_WATCH
            out: list[Any]
            if with_stat:
                listing = await self._request(
                    GetChildren2Request(path=full, watch=wire_watch), path=path, watch=w
                )
                out = [listing.children, listing.stat]
            else:
                names = await self._request(
                    GetChildrenRequest(path=full, watch=wire_watch), path=path, watch=w
                )
                out = [names.children]
            if watch:
                out.append(w)
            return out[0] if len(out) == 1 else tuple(out)

        return await self._retrying(once)

    async def sync(self, path: str = "/") -> None:
        """Make the connected server catch up with the leader for ``path`` before later reads."""
        validate_path(path)
        await self._retrying(lambda: self._request(SyncRequest(path=self._full(path)), path=path))

    # --- writes -------------------------------------------------------------------------

    @overload
    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        container: bool = False,
        ttl: float | None = None,
        make_parents: bool = False,
        parents_as_containers: bool = False,
        protected: bool = False,
        acl: Sequence[ACL] | None = None,
        compressed: bool = False,
        with_stat: Literal[False] = False,
    ) -> str: ...
    @overload
    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        container: bool = False,
        ttl: float | None = None,
        make_parents: bool = False,
        parents_as_containers: bool = False,
        protected: bool = False,
        acl: Sequence[ACL] | None = None,
        compressed: bool = False,
        with_stat: Literal[True],
    ) -> tuple[str, Stat]: ...

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        container: bool = False,
        ttl: float | None = None,
        make_parents: bool = False,
        parents_as_containers: bool = False,
        protected: bool = False,
        acl: Sequence[ACL] | None = None,
        compressed: bool = False,
        with_stat: bool = False,
    ) -> Any:
        """Create a node and return its path (with its Stat if ``with_stat``).

        ``sequential`` appends a 10-digit counter; ``ephemeral`` ties the node to this
        session; ``container`` makes a node the server removes once its last child is gone;
        ``ttl`` (seconds; server option ``extendedTypesEnabled``) removes an untouched
        persistent node. ``make_parents`` creates missing ancestors (as containers if
        ``parents_as_containers``). ``protected`` names the node ``_c_<uuid>-<name>`` so that,
        if the reply is lost, the node is found again instead of created twice; only a
        protected create is retried after a connection loss. ``compressed`` stores ``data``
        gzip-compressed as Curator's ``.compressed()`` does (:mod:`aiocoord.compression`);
        read it back with ``get(path, compressed=True)``.
        """
        validate_path(path, sequential=sequential)
        validate_flag(compressed, "compressed")
        payload = _payload(data, path, compressed)
        for flag, name in (
            (ephemeral, "ephemeral"),
            (sequential, "sequential"),
            (container, "container"),
            (make_parents, "make_parents"),
            (parents_as_containers, "parents_as_containers"),
            (protected, "protected"),
            (with_stat, "with_stat"),
        ):
            validate_flag(flag, name)
        acls = self._acls_for(path, acl)
        # Parents get the node's explicit ACL, else each the provider's for its own path.
        parent_acls = acls if acl is not None or self.acl_provider is None else None
        if container and (ephemeral or sequential or ttl is not None or protected):
            raise BadArgumentsError(
                "a container node cannot be ephemeral, sequential, protected or have a TTL"
            )
        ttl_ms: int | None = None
        if ttl is not None:
            ttl_ms = validate_duration_ms(ttl, "ttl", MAX_TTL_MS)
            if ephemeral:
                raise BadArgumentsError("ttl needs a persistent node, not an ephemeral one")
        if path == "/":
            raise BadArgumentsError("cannot create the root node")
        if protected:
            created = await self._create_protected(
                path,
                payload,
                ephemeral,
                sequential,
                acls,
                make_parents,
                parents_as_containers,
                parent_acls,
                ttl_ms,
            )
        else:
            created = await self._create_parents_if_needed(
                path,
                payload,
                create_mode(ephemeral, sequential, container, ttl_ms),
                acls,
                ttl_ms,
                make_parents,
                parents_as_containers,
                parent_acl=parent_acls,
            )
        return created if with_stat else created[0]

    def _acls_for(self, path: str, acl: Sequence[ACL] | None) -> list[ACL]:
        """The ACL a create of ``path`` sends: ``acl``, else the provider's, else open."""
        if acl is None and self.acl_provider is not None:
            acl = self.acl_provider(path)
        return wire_acl(acl)

    async def ensure_path(
        self, path: str, *, container: bool = False, acl: Sequence[ACL] | None = None
    ) -> None:
        """Create ``path`` and any missing ancestors (existing ones are left alone). Without
        ``acl`` each gets the client's :attr:`acl_provider` ACL for its path (else open)."""
        validate_path(path)
        await self._ensure_path(path, container, None if acl is None else wire_acl(acl))

    async def set(
        self, path: str, data: bytes, version: int = -1, *, compressed: bool = False
    ) -> Stat:
        """Replace the node's data; with ``version`` >= 0 only if it still has that version
        (BadVersionError otherwise). Version-checked sets are retried on connection loss.
        ``compressed`` stores ``data`` gzip-compressed, as :meth:`create` does."""
        validate_path(path)
        validate_flag(compressed, "compressed")
        payload = _payload(data, path, compressed)
        validate_version(version)
        req = SetDataRequest(path=self._full(path), data=payload, version=version)

        async def once() -> Stat:
            reply = await self._request(req, path=path)
            return reply.stat

        if version >= 0:
            return await self._retrying(once, ambiguous=(BadVersionError,))
        return await once()

    async def delete(
        self, path: str, version: int = -1, *, recursive: bool = False, guaranteed: bool = False
    ) -> None:
        """Delete the node (if it has ``version``, unless -1).

        ``recursive`` removes its descendants first. ``guaranteed`` makes sure the delete
        happens: if the connection is lost, it is retried in the background until the node
        is gone or the session ends, and this call returns at once.
        """
        validate_path(path)
        validate_version(version)
        validate_flag(recursive, "recursive")
        validate_flag(guaranteed, "guaranteed")
        if path == "/":
            raise BadArgumentsError("cannot delete the root node")
        if guaranteed:
            await self._delete_guaranteed(path, version, recursive)
            return
        if recursive:
            await self._delete_tree(path)
            return
        if version >= 0:
            await self._retrying(
                lambda: self._delete_once(path, version), ambiguous=(BadVersionError, NoNodeError)
            )
        else:
            await self._delete_once(path, version)

    async def call_with_retry(
        self, op: Callable[[], Awaitable[T]], *, timeout: float | None = None
    ) -> T:
        """``await op()`` under this client's :attr:`retry` policy: again after each
        connection loss or operation timeout, never after another error (kazoo's
        ``client.retry(fn)``, Curator's ``RetryLoop``). ``timeout`` bounds all attempts
        together (:class:`aiocoord.TimeoutError`). See :func:`aiocoord.call_with_retry` for
        what is retried, what a lost attempt may have done, and cancellation."""
        return await call_with_retry(op, policy=self.retry, timeout=timeout)

    # --- transactions ----------------------------------------------------------------------

    def transaction(self) -> Transaction:
        """A builder of ops applied all-or-nothing by ``await txn.commit()``."""
        return Transaction(self)

    # --- recipes ----------------------------------------------------------------------

    def lock(
        self,
        path: str,
        *,
        identifier: str | None = None,
        cancel_on_loss: bool = False,
        suspended_is_loss: bool = False,
        acl: Sequence[ACL] | None = None,
    ) -> Lock:
        """A reentrant :class:`~aiocoord.Lock` on ``path``: ``async with client.lock(p):``
        (the options are the Lock's)."""
        # Imported here: the recipes import this module.
        from aiocoord.recipes.lock import Lock

        return Lock(
            self,
            path,
            identifier=identifier,
            cancel_on_loss=cancel_on_loss,
            suspended_is_loss=suspended_is_loss,
            acl=acl,
        )


__all__ = ["ChildData", "Client", "protected_id"]
