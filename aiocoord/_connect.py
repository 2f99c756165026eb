"""Opening a client: :func:`connect` (awaitable, or an async context manager) and
:func:`open_client`, with every option checked before anything is sent."""

from __future__ import annotations

import contextlib
import ssl as _ssl
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from aiocoord._auth.gssapi import GSSAPI
from aiocoord._client.tracker import EnsembleTracker
from aiocoord._paths import components, join
from aiocoord._session.servers import parse_connect_string
from aiocoord._session.session import Session
from aiocoord._validation import (
    MAX_SESSION_TIMEOUT_MS,
    validate_auth,
    validate_duration_ms,
    validate_flag,
    validate_sasl,
    validate_ssl,
    validate_timeout,
)
from aiocoord._wire.reads import ExistsRequest
from aiocoord._wire.writes import Create2Request
from aiocoord.acl import ACLProvider, wire_acl
from aiocoord.client import Client
from aiocoord.errors import BadArgumentsError, InvalidTypeError, NodeExistsError, NoNodeError
from aiocoord.retry import RetryPolicy

if TYPE_CHECKING:  # the annotation only: no runtime dependency (typing.Unpack is 3.11+)
    from typing_extensions import Unpack

__all__ = ["ConnectOptions", "Connecting", "connect", "open_client"]


class Connecting:
    """What :func:`connect` returns: ``await`` it for a long-lived :class:`Client` (close it
    with ``await client.close()``), or use it as ``async with connect(...) as client:`` to
    close the session on exit. Nothing is sent until one of the two starts."""

    def __init__(self, hosts: str, options: ConnectOptions) -> None:
        self._hosts = hosts
        self._options = options
        self._client: Client | None = None

    def __await__(self) -> Generator[Any, None, Client]:
        return open_client(self._hosts, **self._options).__await__()

    async def __aenter__(self) -> Client:
        self._client = await open_client(self._hosts, **self._options)
        return self._client

    async def __aexit__(self, *exc: object) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


class ConnectOptions(TypedDict, total=False):
    """The options of :func:`connect` and :func:`open_client`, declared once: pass them as
    keywords (``connect(hosts, session_timeout=5, ssl=True)``). Each is checked before
    anything is sent; an unknown name is a :class:`~aiocoord.BadArgumentsError`."""

    session_timeout: float
    """Seconds the server keeps the session (and its ephemeral nodes and watches) without
    hearing from the client: 10 by default. The server may grant another value, within its
    ``minSessionTimeout``/``maxSessionTimeout``."""
    connect_timeout: float | None
    """Seconds to find a server that answers at start (NoServersError after it); None: the
    session timeout."""
    auth: Sequence[tuple[str, str | bytes]] | None
    """Credentials such as ``("digest", "user:password")``, sent at connect and on every
    reconnect."""
    retry: RetryPolicy | None
    """The policy of the operations that are safe to repeat (see :mod:`aiocoord.retry`);
    None: :class:`~aiocoord.ExponentialBackoff`."""
    read_only: bool
    """Accept a read-only server when no quorum is reachable (state READ_ONLY); the client
    then asks the other servers now and then whether they serve writes and moves to the first
    that does. False by default."""
    reconnect_after_expiry: bool
    """Start a new session after LOST (announced as RECONNECTED with ``new_session=True``).
    True by default."""
    ssl: _ssl.SSLContext | bool | None
    """An ``ssl.SSLContext`` for TLS, True for the default context, None or False for plain
    TCP (the default)."""
    acl_provider: ACLProvider | None
    """``acl_provider(path)`` gives the ACL of every node created without an explicit
    ``acl`` (recipes' nodes and parents included), as Curator's ``ACLProvider`` does;
    returning None means open."""
    sasl: tuple[str, str] | GSSAPI | None
    """``(user, password)`` authenticates every connection with SASL DIGEST-MD5 first (the
    server's JAAS ``Server`` section must know the user; ACLs then name ``sasl:user``);
    :class:`~aiocoord.GSSAPI` does it with Kerberos instead (ACLs name ``sasl:<principal>``;
    needs ``pip install 'aiocoord[kerberos]'``)."""
    track_ensemble: bool
    """Read the ensemble's configuration before returning and keep following it (ZooKeeper
    3.5+; :class:`~aiocoord.ensemble.EnsembleTracker`, as ``client.ensemble_tracker``): the client's
    server list becomes the members' client addresses, so one member's address is enough to
    fail over to the others. Off by default: the addresses the servers publish must then be
    the ones this client can reach (not so behind NAT, port mapping or a proxy, and TLS must
    accept them as host names)."""


#: The option names :class:`ConnectOptions` declares, for the check of unknown ones.
_OPTION_NAMES = frozenset(ConnectOptions.__annotations__)


def connect(hosts: str, **options: Unpack[ConnectOptions]) -> Connecting:
    """Connect to ZooKeeper: ``async with connect(hosts) as client:`` (the session is closed
    on exit), or ``client = await connect(hosts)`` for a long-lived client (then
    ``await client.close()``).

    ``hosts`` is ``"h1:2181,h2:2181/optional/chroot"``; the options are
    :class:`ConnectOptions`. Raises NoServersError if no server answers in
    ``connect_timeout``, AuthFailedError if the server refuses the credentials (or Kerberos
    has none to offer), MissingDependencyError for ``GSSAPI`` without
    ``pip install 'aiocoord[kerberos]'``; a bad option raises before anything is sent.
    """
    _check_names(options)
    return Connecting(hosts, options)


def _check_names(options: Mapping[str, object]) -> None:
    unknown = sorted(set(options) - _OPTION_NAMES)
    if unknown:
        raise BadArgumentsError(
            f"unknown connect option(s) {', '.join(unknown)}; the options are "
            f"{', '.join(sorted(_OPTION_NAMES))}"
        )


async def open_client(hosts: str, **options: Unpack[ConnectOptions]) -> Client:
    """A connected :class:`Client` (the same as ``await connect(...)``); call
    ``await client.close()`` when done. The options are :class:`ConnectOptions`."""
    _check_names(options)
    session_timeout = options.get("session_timeout", 10.0)
    connect_timeout = options.get("connect_timeout")
    auth = options.get("auth")
    retry = options.get("retry")
    read_only = options.get("read_only", False)
    reconnect_after_expiry = options.get("reconnect_after_expiry", True)
    ssl = options.get("ssl")
    acl_provider = options.get("acl_provider")
    sasl = options.get("sasl")
    track_ensemble = options.get("track_ensemble", False)
    servers, chroot = parse_connect_string(hosts)  # the chroot is validated there
    timeout_ms = validate_duration_ms(session_timeout, "session_timeout", MAX_SESSION_TIMEOUT_MS)
    validate_flag(read_only, "read_only")
    validate_flag(reconnect_after_expiry, "reconnect_after_expiry")
    validate_flag(track_ensemble, "track_ensemble")
    sasl = validate_sasl(sasl)
    if acl_provider is not None and not callable(acl_provider):
        raise InvalidTypeError(
            f"acl_provider must be a callable(path) -> ACL list, not {type(acl_provider).__name__}"
        )
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise InvalidTypeError(
            f"retry must be an aiocoord.RetryPolicy or None, not {type(retry).__name__}"
        )
    if auth is not None and (isinstance(auth, (str, bytes)) or not isinstance(auth, Sequence)):
        raise InvalidTypeError(
            f"auth must be a list of (scheme, credential), not {type(auth).__name__}"
        )
    auth_list: list[tuple[str, bytes]] = []
    for item in auth or ():
        if not (isinstance(item, tuple) and len(item) == 2):
            raise InvalidTypeError(
                'auth entries must be (scheme, credential), e.g. ("digest", "u:p")'
            )
        auth_list.append(validate_auth(*item))
    session = Session(
        servers,
        session_timeout=timeout_ms / 1000,
        connect_timeout=validate_timeout(connect_timeout, "connect_timeout"),
        auth=auth_list,
        read_only=read_only,
        reconnect_after_expiry=reconnect_after_expiry,
        ssl=validate_ssl(ssl),
        chroot=chroot,
        sasl=sasl,
    )
    await session.start()
    client = Client(session, retry=retry, acl_provider=acl_provider)
    try:
        if chroot:
            await _ensure_chroot(client, chroot)
        if track_ensemble:
            tracker = EnsembleTracker(client)
            await tracker.start()
            client.ensemble_tracker = tracker
    except BaseException:
        await client.close()
        raise
    return client


async def _ensure_chroot(client: Client, chroot: str) -> None:
    """Create the chroot (and its parents) if it does not exist, as Curator's namespace does,
    so that the first call under a new chroot does not fail with NoNodeError. Persistent
    nodes, with the ACL the client gives the chroot's root ("/" to its ``acl_provider``)."""
    session = client._session
    try:
        await session.request(ExistsRequest(path=chroot, watch=False), path=chroot)
        return
    except NoNodeError:
        pass
    acl = wire_acl(client.acl_provider("/") if client.acl_provider is not None else None)
    prefix = "/"
    for part in components(chroot):
        prefix = join(prefix, part)
        with contextlib.suppress(NodeExistsError):
            await session.request(
                Create2Request(path=prefix, data=b"", acl=acl, flags=0), path=prefix
            )
