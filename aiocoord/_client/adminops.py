"""Client operations beyond reading and writing node data: ACLs (``get_acl``, ``set_acl``),
authentication and identity (``add_auth``, ``whoami``), what the server counts for this
session (``get_ephemerals``, ``count_descendants``), persistent watches (``add_watch``) and
the ensemble's dynamic configuration (``get_config``, ``reconfig``; ZooKeeper 3.5+), and the
connected server's four-letter words (``command``, ``server_version``).

:class:`AdminOps` is the part of :class:`~aiocoord.Client` that holds them, built on
:class:`~aiocoord._client.pathops.PathOps` (the multi-request path operations) for its request and
retry plumbing; the API reference shows them on the client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from aiocoord._client.pathops import PathOps
from aiocoord._deadline import timed_out
from aiocoord._server_commands import check_word, four_letter, parse_version
from aiocoord._session.ensemble_config import (
    CONFIG_NODE,
    EnsembleConfig,
    EnsembleMember,
    reconfig_arguments,
)
from aiocoord._session.watch import PersistentWatch, Watch, WatchKind
from aiocoord._validation import (
    validate_auth,
    validate_flag,
    validate_path,
    validate_timeout,
    validate_version,
)
from aiocoord._wire.auth import WhoAmIRequest
from aiocoord._wire.data import ACL, Stat
from aiocoord._wire.reads import (
    GetACLRequest,
    GetAllChildrenNumberRequest,
    GetDataRequest,
    GetEphemeralsRequest,
)
from aiocoord._wire.reconfig import ReconfigRequest
from aiocoord._wire.writes import SetACLRequest
from aiocoord.acl import wire_acl
from aiocoord.errors import (
    BadArgumentsError,
    ConnectionLossError,
    InvalidTypeError,
    ProtocolError,
)

__all__ = ["AdminOps"]

#: The one-shot watch kinds each ``kind`` of remove_watches names.
_WATCH_KINDS: dict[str, tuple[WatchKind, ...]] = {
    "any": (WatchKind.DATA, WatchKind.CHILD),
    "data": (WatchKind.DATA,),
    "child": (WatchKind.CHILD,),
}


class AdminOps(PathOps):
    """The ACL, auth and introspection operations of :class:`~aiocoord.Client` (module
    docstring). A PathOps for its request and retry plumbing (``_request``, ``_retrying``)."""

    if TYPE_CHECKING:  # provided by Client
        chroot: str

    async def get_acl(self, path: str) -> tuple[list[ACL], Stat]:
        """The node's ACL and Stat."""
        validate_path(path)

        async def once() -> tuple[list[ACL], Stat]:
            reply = await self._request(GetACLRequest(path=self._full(path)), path=path)
            return reply.acl, reply.stat

        return await self._retrying(once)

    async def set_acl(self, path: str, acl: Sequence[ACL], version: int = -1) -> Stat:
        """Replace the node's ACL (if its ACL version matches ``version``, unless -1)."""
        validate_path(path)
        acls = wire_acl(acl)
        validate_version(version)
        req = SetACLRequest(path=self._full(path), acl=acls, version=version)
        reply = await self._request(req, path=path)
        return reply.stat

    async def add_auth(self, scheme: str, credential: str | bytes) -> None:
        """Add credentials to the session (e.g. ``("digest", "user:password")``)."""
        await self._session.add_auth(*validate_auth(scheme, credential))

    async def get_ephemerals(self, prefix: str = "/") -> list[str]:
        """Paths of this session's ephemeral nodes starting with ``prefix`` (3.6+)."""
        if not isinstance(prefix, str) or not prefix.startswith("/"):
            raise InvalidTypeError("prefix must be a str starting with '/'")
        full = self._full(prefix) if prefix != "/" else (self.chroot or "/")

        async def once() -> list[str]:
            reply = await self._request(GetEphemeralsRequest(prefix_path=full))
            return sorted(self._short(p) for p in reply.ephemerals)

        return await self._retrying(once)

    async def count_descendants(self, path: str) -> int:
        """The number of nodes below ``path`` (getAllChildrenNumber, 3.6+)."""
        validate_path(path)

        async def once() -> int:
            req = GetAllChildrenNumberRequest(path=self._full(path))
            reply = await self._request(req, path=path)
            return reply.total_number

        return await self._retrying(once)

    async def whoami(self) -> list[tuple[str, str]]:
        """The (scheme, user) identities this session is authenticated as (3.7+)."""

        async def once() -> list[tuple[str, str]]:
            reply = await self._request(WhoAmIRequest())
            return [(c.auth_scheme, c.user) for c in reply.client_info]

        return await self._retrying(once)

    async def add_watch(self, path: str, *, recursive: bool = False) -> PersistentWatch:
        """A persistent watch on ``path`` (and, if ``recursive``, its whole subtree; 3.6+).

        Iterate it with ``async for``; close it with ``aclose()`` (or ``async with``).
        """
        validate_path(path)
        validate_flag(recursive, "recursive")
        full = self._full(path)
        session = self._session

        async def remove(w: PersistentWatch) -> None:
            await session.watches.remove_persistent(w, full)

        watch = PersistentWatch(path, recursive, remove)
        await session.watches.add_persistent(watch, full)
        return watch

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
        validate_path(path)
        validate_flag(local, "local")
        kinds = _WATCH_KINDS.get(kind) if isinstance(kind, str) else None
        if kinds is None:
            raise BadArgumentsError(f"kind must be 'any', 'data' or 'child', not {kind!r}")
        await self._session.watches.remove_one_shot(kinds, self._full(path), path, local)

    # --- the connected server's four-letter words ------------------------------------------

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
        check_word(word)
        limit = validate_timeout(timeout)
        session = self._session
        server, state = session.server, session.state
        if server is None or state is None or not state.is_connected:
            raise ConnectionLossError(
                f"{word} not sent: the client is not connected to a server now "
                f"(state {state.name if state else None}); wait for CONNECTED and try again",
                op="command",
            )
        try:
            return await four_letter(server.host, server.port, word, limit, ssl=session.ssl)
        except asyncio.TimeoutError:  # before OSError: it is one since Python 3.11
            raise timed_out(f"{word} not answered by {server}", limit) from None
        except OSError as exc:
            raise ConnectionLossError(f"{word}: {server} unreachable: {exc}", op="command") from exc

    async def server_version(self, *, timeout: float | None = 5.0) -> tuple[int, int, int]:
        """The connected server's ZooKeeper version, ``(major, minor, patch)`` (kazoo's
        ``server_version``), from its answer to ``srvr`` (whitelisted by default). Raises as
        :meth:`command`; ProtocolError if the answer has no version line."""
        text = await self.command("srvr", timeout=timeout)
        version = parse_version(text)
        if version is None:
            raise ProtocolError(f"no 'Zookeeper version:' line in the srvr answer: {text[:200]!r}")
        return version

    # --- dynamic reconfiguration (3.5+) ---------------------------------------------------

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
        validate_flag(watch, "watch")
        watches = self._session.watches

        async def once() -> Any:
            # The config node lives outside every chroot: the path goes to the server as is,
            # and its watch event comes back unstripped (Chroot.strip leaves outside paths).
            w, wire_watch = (
                watches.waiter(WatchKind.DATA, CONFIG_NODE, CONFIG_NODE) if watch else (None, False)
            )
            reply = await self._request(
                GetDataRequest(path=CONFIG_NODE, watch=wire_watch), path=CONFIG_NODE, watch=w
            )
            config = EnsembleConfig.parse(reply.data)
            return (config, w) if watch else config

        return await self._retrying(once)

    async def reconfig(
        self,
        *,
        joining: Sequence[EnsembleMember | str] | EnsembleMember | str | None = None,
        leaving: Sequence[int | EnsembleMember] | int | EnsembleMember | None = None,
        new_members: Sequence[EnsembleMember | str] | None = None,
        from_config: int = -1,
    ) -> EnsembleConfig:
        """Change the ensemble's membership and return the new configuration (3.5+).

        Either incrementally, ``joining`` members (:class:`~aiocoord.EnsembleMember` or
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
        joining_s, leaving_s, members_s, config_id = reconfig_arguments(
            joining, leaving, new_members, from_config
        )
        request = ReconfigRequest(joining_s, leaving_s, members_s, config_id)
        reply = await self._request(request, path=CONFIG_NODE)
        return EnsembleConfig.parse(reply.data)
