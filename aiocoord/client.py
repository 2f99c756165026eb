"""The client: ZooKeeper path operations over a :class:`~aiocoord._session.session.Session`.

Paths are checked before anything is sent, prefixed with the chroot on the way out and
stripped on the way back. Retry policies apply only where repeating is safe: reads,
version-checked writes and protected creates (see :mod:`aiocoord.retry`).

:class:`Client` is one facade over parts it owns (:mod:`aiocoord._client`): ``Requests`` (the
session, the chroot, the bound generation, the retry policy), ``PathOps`` (operations made of
several requests, guaranteed deletes), ``AdminOps`` (ACLs, auth, persistent watches,
reconfig, four-letter words) and ``BackgroundWork`` (tasks that outlive their callers). The
single-request reads and writes, the session's state and the lifecycle live here; every
public method is declared here, with its docstring, so the API reference shows one class.
Recipes reach below it only through :mod:`aiocoord._client.door`.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from aiocoord._client.adminops import AdminOps
from aiocoord._client.background import BackgroundWork
from aiocoord._client.pathops import PathOps
from aiocoord._client.requests import Requests
from aiocoord._observe.metrics import ClientStats
from aiocoord._observe.otel import telemetry_for
from aiocoord._paths import protected_id
from aiocoord._session.connection import Reply
from aiocoord._session.ensemble_config import EnsembleConfig, EnsembleMember
from aiocoord._session.session import Session, State, StateChange
from aiocoord._session.watch import EventType, PersistentWatch, Watch, WatchEvent, WatchKind
from aiocoord._shown import show_in
from aiocoord._validation import (
    MAX_TTL_MS,
    validate_duration_ms,
    validate_flag,
    validate_path,
    validate_timeout,
    validate_version,
)
from aiocoord._wire.data import ACL, Stat
from aiocoord._wire.framing import EmptyResponse, Request
from aiocoord._wire.opcodes import create_mode
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
    InvalidTypeError,
    NoNodeError,
    ZooKeeperError,
)
from aiocoord.retry import ExponentialBackoff, RetryPolicy, call_with_retry
from aiocoord.transaction import Transaction

if TYPE_CHECKING:
    from aiocoord._client.tracker import EnsembleTracker

T = TypeVar("T")
#: What a read that asks for no watch registers.
NO_WATCH: tuple[None, bool] = (None, False)


@dataclass(frozen=True, slots=True)
class ChildData:
    """A node's path, data and stat (what caches hold)."""

    #: the node's path, as the client sees it (without the chroot)
    path: str
    #: the node's data as last read (``b""`` for none, or when the cache keeps no data)
    data: bytes
    #: the node's :class:`~aiocoord.Stat` as last read
    stat: Stat


class Client:
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
        #: the connect string's chroot ("" for none)
        self.chroot: str = session.chroot
        self._requests = Requests(
            session, retry if retry is not None else ExponentialBackoff(), acl_provider
        )
        # The chroot's add and strip, bound once: every request passes through them.
        self._full = self._requests.full
        self._short = self._requests.short
        self._work = BackgroundWork()
        self._paths = PathOps(self._requests, self._work, self)
        self._admin = AdminOps(self._requests)
        # Per-client state of extensions (see _extension_state); bound views share it.
        self._extensions: dict[object, Any] = {}
        #: the :class:`~aiocoord.ensemble.EnsembleTracker` of ``connect(..., track_ensemble=True)``
        self.ensemble_tracker: EnsembleTracker | None = None
        # The last view bound() made (see there).
        self._bound_view: Client | None = None

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of the operations that are safe to repeat (reads, version-checked
        writes, protected creates) and of :meth:`call_with_retry`."""
        return self._requests.retry

    @retry.setter
    def retry(self, policy: RetryPolicy) -> None:
        self._requests.retry = policy
        self._bound_view = None  # it has the old policy

    @property
    def acl_provider(self) -> ACLProvider | None:
        """The ACL of every node created without an explicit ``acl`` (Curator's
        ACLProvider); None: open."""
        return self._requests.acl_provider

    @acl_provider.setter
    def acl_provider(self, provider: ACLProvider | None) -> None:
        self._requests.acl_provider = provider
        self._bound_view = None  # it has the old provider

    def _extension_state(self, key: object, factory: Callable[[], T]) -> T:
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

        ``generation`` defaults to the current :attr:`generation`. Once that
        session is lost, every call on the view raises SessionExpiredError without sending
        anything, even a call made while SUSPENDED that would otherwise wait for a new
        session. Recipes use it for writes that act for a holder of the old session.
        Views hold no state of their own: a later call for the same session may return the
        same view.
        """
        if generation is None:
            generation = self._session.generation
        cached = self._bound_view
        # A view holds nothing of its own: the last one made serves again (a contended lock
        # asks for one per acquisition) while it is for the same session (the setters of the
        # policies it copies drop it).
        if cached is not None and cached._requests.generation == generation:
            return cached
        view = copy.copy(self)
        view._bound_view = None
        view._requests = self._requests.bound(generation)
        view._paths = self._paths.bound(view._requests, view)
        view._admin = AdminOps(view._requests)
        self._bound_view = view
        return view

    async def _request(
        self,
        request: Request[T],
        *,
        path: str | None = None,
        watch: Watch | None = None,
    ) -> T:
        return await self._requests.send(request, path=path, watch=watch)

    async def _retrying(
        self,
        op: Callable[[], Awaitable[T]],
        ambiguous: tuple[type[ZooKeeperError], ...] = (),
    ) -> T:
        return await self._requests.retrying(op, ambiguous)

    async def close(self) -> None:
        """End the session cleanly: ephemeral nodes vanish, watches end, tasks stop."""
        await self._work.stop()
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

    # --- the session ---------------------------------------------------------------------

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
            # The session keeps the last server (the next connection tries another first).
            server=str(session.server) if session.server is not None and self.connected else None,
            session_id=session.session_id,
            negotiated_timeout=session.negotiated_timeout,
            pending_deletes=self._work.pending(),
            recipes=recorder.recipes(),
        )

    # --- background work -----------------------------------------------------------------

    def _spawn(
        self, coro: Coroutine[Any, Any, Any], name: str, *, daemon: bool = False
    ) -> asyncio.Task[Any]:
        """Run ``coro`` as a task this client owns: ``close()`` cancels and awaits it, and
        :meth:`wait_background` waits for it. For clean-ups that must outlive their caller
        (guaranteed deletes, a recipe's node removal after a cancelled acquire).

        ``daemon=True``: a task that only follows the server (a watch to arm, the ensemble
        tracker): ``close()`` still ends it, but it is no work owed, so
        :meth:`pending_deletes` does not count it and :meth:`wait_background` does not wait
        for it."""
        return self._work.spawn(coro, name, daemon=daemon)

    def _follow(self, future: asyncio.Future[T], then: Callable[[asyncio.Future[T]], None]) -> None:
        """Count ``future`` (the answer to a request written now, say) as this client's
        background work until it is done, then call ``then`` with it: :meth:`wait_background`
        waits for it and ``close()`` cancels it. For answers a recipe settles after its
        caller has moved on (a release's delete) without a task to start."""
        self._work.follow(future, then)

    def pending_deletes(self) -> int:
        """Background work still owed: guaranteed deletes, a recipe's create or delete still
        in flight, and answers still followed (daemons, which only follow the server, are
        not counted)."""
        return self._work.pending()

    async def wait_background(self) -> None:
        """Wait until background work (guaranteed deletes, a release's delete) has finished;
        daemons (tasks that only follow the server) are not waited for."""
        await self._work.wait()

    def delete_for_sure(
        self, path: str, version: int = -1, *, on_deleted: Callable[[], None] | None = None
    ) -> asyncio.Future[Reply[EmptyResponse]]:
        """Delete ``path`` for sure without waiting: the future of the first answer.

        The delete is written now, or held and written first thing on the next connection
        (nothing this client accepts later overtakes it), and seen through in the background
        (:meth:`wait_background` waits for it): written again after a connection loss, and
        carried into the next session if this one expires first. There an ephemeral node has
        gone with the session, so only a persistent node is deleted (Curator's guaranteed
        delete carries on in the next session too). ``on_deleted`` is called once the server
        has answered that the node is gone (the server's word, not a guess). Validation is
        the caller's (:meth:`delete` validates).
        """
        return self._paths.delete_for_sure(path, version, on_deleted=on_deleted)

    # --- ACLs, auth, persistent watches, the ensemble, four-letter words ------------------

    async def get_acl(self, path: str) -> tuple[list[ACL], Stat]:
        """The node's ACL and Stat."""
        return await self._admin.get_acl(path)

    async def set_acl(self, path: str, acl: Sequence[ACL], version: int = -1) -> Stat:
        """Replace the node's ACL (if its ACL version matches ``version``, unless -1)."""
        return await self._admin.set_acl(path, acl, version)

    async def add_auth(self, scheme: str, credential: str | bytes) -> None:
        """Add credentials to the session (e.g. ``("digest", "user:password")``)."""
        return await self._admin.add_auth(scheme, credential)

    async def get_ephemerals(self, prefix: str = "/") -> list[str]:
        """Paths of this session's ephemeral nodes starting with ``prefix`` (3.6+)."""
        return await self._admin.get_ephemerals(prefix)

    async def count_descendants(self, path: str) -> int:
        """The number of nodes below ``path`` (getAllChildrenNumber, 3.6+)."""
        return await self._admin.count_descendants(path)

    async def whoami(self) -> list[tuple[str, str]]:
        """The (scheme, user) identities this session is authenticated as (3.7+)."""
        return await self._admin.whoami()

    async def add_watch(self, path: str, *, recursive: bool = False) -> PersistentWatch:
        """A persistent watch on ``path`` (and, if ``recursive``, its whole subtree; 3.6+).

        Iterate it with ``async for``; close it with ``aclose()`` (or ``async with``).
        """
        return await self._admin.add_watch(path, recursive=recursive)

    async def remove_watches(
        self,
        path: str,
        kind: Literal["any", "data", "child"] = "any",
        *,
        local: bool = False,
    ) -> None:
        """Remove this session's one-shot watches on ``path`` (ZooKeeper's
        ``removeAllWatches``): ``"data"`` the ones :meth:`get` and :meth:`exists` set,
        ``"child"`` the ones :meth:`children` set, ``"any"`` both.

        Every :class:`~aiocoord.Watch` removed fires with a :class:`~aiocoord.WatchEvent` of
        type ``DATA_WATCH_REMOVED`` or ``CHILD_WATCH_REMOVED`` (so whoever awaits it wakes up
        rather than waiting for a change that will not be reported). The server watch goes
        first; with ``local=True`` it is left there (for use while disconnected: its event
        later finds no one). A waiter fired by a real event while the removal was under way
        keeps that event. Persistent watches (:meth:`add_watch`) are not touched: close them.

        :raises NoWatcherError: this session holds no such watch on ``path``; nothing sent.
        :raises ConnectionLossError: the connection was lost before the server answered; the
            watches stay, so call again (or with ``local=True``).
        :raises BadArgumentsError: a bad ``path`` or ``kind`` (InvalidTypeError for a
            non-bool ``local``), before anything is sent.
        """
        return await self._admin.remove_watches(path, kind, local=local)

    async def command(self, word: str = "ruok", *, timeout: float | None = 5.0) -> str:
        """Send the four-letter word ``word`` (``ruok``, ``srvr``, ``mntr``, ``conf``...) to
        the server this client is connected to; its answer, as text (``"imok"`` for
        ``ruok``). kazoo's ``client.command``.

        The word goes on a connection of its own, outside the session (as the server
        requires); the session is neither used nor disturbed. The server runs only the words
        its ``4lw.commands.whitelist`` names (``srvr`` alone by default).

        :raises FourLetterWordError: the server did not run the word (not whitelisted, or not
            serving).
        :raises ConnectionLossError: the client is not connected to a server now, or that
            server could not be reached (retryable: :meth:`call_with_retry`).
        :raises aiocoord.TimeoutError: no answer within ``timeout`` seconds.
        :raises BadArgumentsError: ``word`` is not four lowercase letters (InvalidTypeError if
            not a str), or ``timeout`` is negative; nothing is sent.
        """
        return await self._admin.command(word, timeout=timeout)

    async def server_version(self, *, timeout: float | None = 5.0) -> tuple[int, int, int]:
        """The connected server's ZooKeeper version, ``(major, minor, patch)`` (kazoo's
        ``server_version``), from its answer to ``srvr`` (whitelisted by default). Raises as
        :meth:`command`; ProtocolError if the answer has no version line."""
        return await self._admin.server_version(timeout=timeout)

    @overload
    async def get_config(self, *, watch: Literal[False] = False) -> EnsembleConfig: ...
    @overload
    async def get_config(self, *, watch: Literal[True]) -> tuple[EnsembleConfig, Watch]: ...
    async def get_config(self, *, watch: bool = False) -> Any:
        """The ensemble's configuration as the connected server knows it (``/zookeeper/config``,
        read whatever the client's chroot). ``watch=True`` adds a Watch that fires when a
        reconfig changes it. A standalone server publishes an empty configuration (no members,
        version -1); a server older than 3.5 has no such node (NoNodeError). Retried on
        connection loss; call :meth:`sync` with ``"/"`` first to read the leader's latest
        rather than the connected server's."""
        return await self._admin.get_config(watch=watch)

    async def reconfig(
        self,
        *,
        joining: Sequence[EnsembleMember | str] | EnsembleMember | str | None = None,
        leaving: Sequence[int | EnsembleMember] | int | EnsembleMember | None = None,
        new_members: Sequence[EnsembleMember | str] | None = None,
        from_config: int = -1,
    ) -> EnsembleConfig:
        """Change the ensemble's membership and return the new configuration (3.5+).

        Either incrementally, ``joining`` members (:class:`~aiocoord.ensemble.EnsembleMember` or
        ``"server.4=host:quorum:election[:observer];client_host:client_port"`` lines) and
        ``leaving`` server ids, or wholesale with ``new_members`` (every member of the new
        configuration; not together with the other two). ``from_config`` makes the change
        conditional on the current configuration still having that version
        (:attr:`EnsembleConfig.version`; BadVersionError otherwise); -1 applies it to
        whatever is current.

        The server needs ``reconfigEnabled=true`` (else ReconfigDisabledError) and the
        session must be allowed to write ``/zookeeper/config``: the super user, or a server
        with ``zookeeper.skipACL`` (else NoAuthError). It refuses a change while another is in
        progress (ReconfigInProgressError) and one whose new voters are not connected and
        synced in a quorum (NewConfigNoQuorumError). Bad arguments raise BadArgumentsError or
        InvalidTypeError before anything is sent. Never retried: after a connection loss,
        read :meth:`get_config` to see whether it was applied.
        """
        return await self._admin.reconfig(
            joining=joining, leaving=leaving, new_members=new_members, from_config=from_config
        )

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
        acls = self._requests.acls_for(path, acl)
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
            created = await self._paths.create_protected(
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
            created = await self._paths.create(
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

    async def ensure_path(
        self, path: str, *, container: bool = False, acl: Sequence[ACL] | None = None
    ) -> None:
        """Create ``path`` and any missing ancestors (existing ones are left alone). Without
        ``acl`` each gets the client's :attr:`acl_provider` ACL for its path (else open)."""
        validate_path(path)
        await self._paths.ensure_path(path, container, None if acl is None else wire_acl(acl))

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
            await self._paths.delete_guaranteed(path, version, recursive)
            return
        if recursive:
            await self._paths.delete_tree(path)
            return
        if version >= 0:
            await self._retrying(
                lambda: self._paths.delete_once(path, version),
                ambiguous=(BadVersionError, NoNodeError),
            )
        else:
            await self._paths.delete_once(path, version)

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
        return Transaction(self._requests)


__all__ = [
    "ChildData",
    "Client",
    "EventType",
    "PersistentWatch",
    "State",
    "StateChange",
    "Watch",
    "WatchEvent",
    "protected_id",
]

# Shown as defined here (its own module is private); the session's types are shown in the root.
show_in(__name__, globals(), ["protected_id"])
