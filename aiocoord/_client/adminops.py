"""Client operations beyond reading and writing node data: ACLs (``get_acl``, ``set_acl``),
authentication and identity (``add_auth``, ``whoami``), what the server counts for this
session (``get_ephemerals``, ``count_descendants``), persistent watches (``add_watch``) and
the ensemble's dynamic configuration (``get_config``, ``reconfig``; ZooKeeper 3.5+), and the
connected server's four-letter words (``command``, ``server_version``).

:class:`AdminOps` is the part of :class:`~aiocoord.Client` that holds them; the client's
methods of the same names delegate here, and the API reference shows them there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from aiocoord._client.requests import Requests
from aiocoord._deadline import timed_out
from aiocoord._server_commands import check_word, four_letter, parse_version
from aiocoord._session.ensemble_config import (
    CONFIG_NODE,
    EnsembleConfig,
    EnsembleMember,
    reconfig_arguments,
)
from aiocoord._session.watch import PersistentWatch, WatchKind
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


class AdminOps:
    """The ACL, auth and introspection operations of :class:`~aiocoord.Client` (module
    docstring), a part the client owns; it sends through ``requests``."""

    def __init__(self, requests: Requests) -> None:
        self._requests = requests
        self._session = requests.session

    async def get_acl(self, path: str) -> tuple[list[ACL], Stat]:
        """:meth:`Client.get_acl <aiocoord.Client.get_acl>`."""
        validate_path(path)

        async def once() -> tuple[list[ACL], Stat]:
            reply = await self._requests.send(
                GetACLRequest(path=self._requests.full(path)), path=path
            )
            return reply.acl, reply.stat

        return await self._requests.retrying(once)

    async def set_acl(self, path: str, acl: Sequence[ACL], version: int = -1) -> Stat:
        """:meth:`Client.set_acl <aiocoord.Client.set_acl>`."""
        validate_path(path)
        acls = wire_acl(acl)
        validate_version(version)
        req = SetACLRequest(path=self._requests.full(path), acl=acls, version=version)
        reply = await self._requests.send(req, path=path)
        return reply.stat

    async def add_auth(self, scheme: str, credential: str | bytes) -> None:
        """:meth:`Client.add_auth <aiocoord.Client.add_auth>`."""
        await self._session.add_auth(*validate_auth(scheme, credential))

    async def get_ephemerals(self, prefix: str = "/") -> list[str]:
        """:meth:`Client.get_ephemerals <aiocoord.Client.get_ephemerals>`."""
        if not isinstance(prefix, str) or not prefix.startswith("/"):
            raise InvalidTypeError("prefix must be a str starting with '/'")
        full = self._requests.full(prefix) if prefix != "/" else (self._session.chroot or "/")

        async def once() -> list[str]:
            reply = await self._requests.send(GetEphemeralsRequest(prefix_path=full))
            return sorted(self._requests.short(p) for p in reply.ephemerals)

        return await self._requests.retrying(once)

    async def count_descendants(self, path: str) -> int:
        """:meth:`Client.count_descendants <aiocoord.Client.count_descendants>`."""
        validate_path(path)

        async def once() -> int:
            req = GetAllChildrenNumberRequest(path=self._requests.full(path))
            reply = await self._requests.send(req, path=path)
            return reply.total_number

        return await self._requests.retrying(once)

    async def whoami(self) -> list[tuple[str, str]]:
        """:meth:`Client.whoami <aiocoord.Client.whoami>`."""

        async def once() -> list[tuple[str, str]]:
            reply = await self._requests.send(WhoAmIRequest())
            return [(c.auth_scheme, c.user) for c in reply.client_info]

        return await self._requests.retrying(once)

    async def add_watch(self, path: str, *, recursive: bool = False) -> PersistentWatch:
        """:meth:`Client.add_watch <aiocoord.Client.add_watch>`."""
        validate_path(path)
        validate_flag(recursive, "recursive")
        full = self._requests.full(path)
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
        """:meth:`Client.remove_watches <aiocoord.Client.remove_watches>`."""
        validate_path(path)
        validate_flag(local, "local")
        kinds = _WATCH_KINDS.get(kind) if isinstance(kind, str) else None
        if kinds is None:
            raise BadArgumentsError(f"kind must be 'any', 'data' or 'child', not {kind!r}")
        await self._session.watches.remove_one_shot(kinds, self._requests.full(path), path, local)

    # --- the connected server's four-letter words ------------------------------------------

    async def command(self, word: str = "ruok", *, timeout: float | None = 5.0) -> str:
        """:meth:`Client.command <aiocoord.Client.command>`."""
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
        except TimeoutError:  # before OSError: it is one since Python 3.11
            raise timed_out(f"{word} not answered by {server}", limit) from None
        except OSError as exc:
            raise ConnectionLossError(f"{word}: {server} unreachable: {exc}", op="command") from exc

    async def server_version(self, *, timeout: float | None = 5.0) -> tuple[int, int, int]:
        """:meth:`Client.server_version <aiocoord.Client.server_version>`."""
        text = await self.command("srvr", timeout=timeout)
        version = parse_version(text)
        if version is None:
            raise ProtocolError(f"no 'Zookeeper version:' line in the srvr answer: {text[:200]!r}")
        return version

    # --- dynamic reconfiguration (3.5+) ---------------------------------------------------

    async def get_config(self, *, watch: bool = False) -> Any:
        """:meth:`Client.get_config <aiocoord.Client.get_config>`."""
        validate_flag(watch, "watch")
        watches = self._session.watches

        async def once() -> Any:
            # The config node lives outside every chroot: the path goes to the server as is,
            # and its watch event comes back unstripped (Chroot.strip leaves outside paths).
            w, wire_watch = (
                watches.waiter(WatchKind.DATA, CONFIG_NODE, CONFIG_NODE) if watch else (None, False)
            )
            reply = await self._requests.send(
                GetDataRequest(path=CONFIG_NODE, watch=wire_watch), path=CONFIG_NODE, watch=w
            )
            config = EnsembleConfig.parse(reply.data)
            return (config, w) if watch else config

        return await self._requests.retrying(once)

    async def reconfig(
        self,
        *,
        joining: Sequence[EnsembleMember | str] | EnsembleMember | str | None = None,
        leaving: Sequence[int | EnsembleMember] | int | EnsembleMember | None = None,
        new_members: Sequence[EnsembleMember | str] | None = None,
        from_config: int = -1,
    ) -> EnsembleConfig:
        """:meth:`Client.reconfig <aiocoord.Client.reconfig>`."""
        joining_s, leaving_s, members_s, config_id = reconfig_arguments(
            joining, leaving, new_members, from_config
        )
        request = ReconfigRequest(joining_s, leaving_s, members_s, config_id)
        reply = await self._requests.send(request, path=CONFIG_NODE)
        return EnsembleConfig.parse(reply.data)
