"""SASL GSSAPI (Kerberos V5, RFC 4752), the client side of ZooKeeper's SASL exchange.

:class:`GSSAPI` is what a user passes as ``connect(..., sasl=GSSAPI())``; :class:`GssapiLogin`
is one login on one connection. The Kerberos work is done by the system's GSS-API library
through the optional ``gssapi`` package (``pip install 'aiocoord[kerberos]'``), imported only
when a GSSAPI login is asked for.

The exchange, as ZooKeeper's Java server (the JDK's GSSAPI ``SaslServer``) runs it: the
client's first token asks for a ticket to ``service@host``; tokens go back and forth until the
security context is established (with mutual authentication: the server proves itself too);
then the server sends a wrapped 4-byte offer of security layers and the largest message it
takes, and the client answers with a wrapped choice — no security layer, size 0 — followed by
the authorization id, its own principal (what the Java client sends too). ZooKeeper needs no
layer: its traffic is left as it is (use TLS for confidentiality).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from aiocoord.errors import (
    AuthFailedError,
    BadArgumentsError,
    InvalidTypeError,
    MissingDependencyError,
)

__all__ = ["GSSAPI", "GssapiLogin", "load_gssapi"]

INSTALL = "pip install 'aiocoord[kerberos]'"
#: RFC 4752's security-layer bit for "no security layer".
_NO_SECURITY_LAYER = 0x01


def load_gssapi() -> ModuleType:
    """The ``gssapi`` package, imported on first use; MissingDependencyError names the install
    command when it is not installed (or its system library is missing)."""
    try:
        return importlib.import_module("gssapi")
    except ImportError as missing:
        raise MissingDependencyError(
            f"Kerberos (SASL GSSAPI) needs the 'gssapi' package: {INSTALL} "
            f"(it builds against the system's Kerberos library: on Debian/Ubuntu "
            f"apt-get install libkrb5-dev first) [{missing}]",
            name="gssapi",
        ) from missing


@dataclass(frozen=True, slots=True)
class GSSAPI:
    """SASL GSSAPI (Kerberos) credentials for :func:`aiocoord.connect`'s ``sasl=``.

    The client logs in with the Kerberos credentials the process already has: a credential
    cache (``kinit``, ``KRB5CCNAME``) or a client keytab (``KRB5_CLIENT_KTNAME``), found by
    the system's Kerberos library as for any other Kerberos client. ``principal`` picks one
    of them (``"alice@EXAMPLE.COM"``; default: the cache's default principal).

    The server is ``service@hostname``, i.e. the principal ``service/hostname@REALM``:
    ``service`` is ZooKeeper's ``zookeeper`` unless the servers were given another, and
    ``hostname`` defaults to the host of the server being connected to, as written in the
    connect string (the Kerberos library may canonicalize it, as ``krb5.conf`` says). Give
    ``hostname`` when the address used does not name the host of the server's principal.

    The session then holds the identity ``sasl:<principal>`` (``sasl:alice@EXAMPLE.COM``,
    or shorter when the server sets ``zookeeper.kerberos.removeRealmFromPrincipal``), which
    ``sasl`` ACLs name. Needs ``pip install 'aiocoord[kerberos]'``.
    """

    #: the first part of the servers' principal (``service/hostname@REALM``)
    service: str = "zookeeper"
    #: the client principal to log in as (``"alice@EXAMPLE.COM"``); None for the
    #: credential cache's default principal
    principal: str | None = None
    #: the host part of the servers' principal; None for the host of the server being
    #: connected to, as written in the connect string
    hostname: str | None = None

    def __post_init__(self) -> None:
        for field in ("service", "principal", "hostname"):
            value = getattr(self, field)
            if value is None and field != "service":
                continue
            if not isinstance(value, str):
                raise InvalidTypeError(
                    f"GSSAPI {field} must be a str{' or None' if field != 'service' else ''}, "
                    f"not {type(value).__name__}"
                )
            if not value or value != value.strip() or "\x00" in value:
                raise BadArgumentsError(f"GSSAPI {field} must be a non-empty name: {value!r}")
        if "@" in self.service or "/" in self.service:
            raise BadArgumentsError(
                f"GSSAPI service is the principal's first part (e.g. 'zookeeper'): {self.service!r}"
            )
        if self.hostname is not None and ("@" in self.hostname or "/" in self.hostname):
            raise BadArgumentsError(f"GSSAPI hostname must be a host name: {self.hostname!r}")

    def target(self, host: str) -> str:
        """The server's host-based service name when connected to ``host``."""
        return f"{self.service}@{self.hostname or host}"


class GssapiLogin:
    """One GSSAPI login on one connection: :meth:`initial` gives the first token, then each
    server token goes to :meth:`respond` until it returns None (:attr:`complete` then).

    Calls into the Kerberos library may block (the first one asks the KDC for a ticket), so
    the caller runs them in a thread (:attr:`blocking`). Every failure, the library's
    included, is an :class:`~aiocoord.errors.AuthFailedError` that says what went wrong.
    """

    name = "GSSAPI"
    blocking = True
    #: a Kerberos refusal says nothing more at its first token than at a later one
    refused_at_once = ""

    def __init__(self, config: GSSAPI, host: str) -> None:
        self._gssapi = load_gssapi()
        self.config = config
        self.target = config.target(host)
        who = config.principal or "the default principal"
        self.subject = f"of {who} to {self.target}"
        self.complete = False
        self._context: Any = None
        self._stage = "context"  # then "layers" (offer expected), then "done"

    def initial(self) -> bytes:
        """The first token: the request for the server's ticket."""
        gssapi = self._gssapi
        with self._failures("could not start"):
            creds = None
            if self.config.principal is not None:
                name = gssapi.Name(self.config.principal, gssapi.NameType.kerberos_principal)
                creds = gssapi.Credentials(name=name, usage="initiate")
            flags = (
                gssapi.RequirementFlag.mutual_authentication
                | gssapi.RequirementFlag.integrity
                | gssapi.RequirementFlag.out_of_sequence_detection
            )
            self._context = gssapi.SecurityContext(
                name=gssapi.Name(self.target, gssapi.NameType.hostbased_service),
                creds=creds,
                usage="initiate",
                flags=flags,
                mech=gssapi.MechType.kerberos,
            )
            token: bytes | None = self._context.step()
        if self._context.complete:
            self._stage = "layers"
            self._check_mutual()
        return token or b""

    def _check_mutual(self) -> None:
        # A context may complete without a flag that was asked for; without mutual
        # authentication nothing proved that the peer is the service named.
        mutual = self._gssapi.RequirementFlag.mutual_authentication
        if mutual not in self._context.actual_flags:
            raise AuthFailedError(
                f"Kerberos login to {self.target} failed: the server did not prove its identity "
                "(no mutual authentication)",
                op="sasl",
            )

    def respond(self, token: bytes) -> bytes | None:
        """The answer to the server's ``token``; None once the server has accepted the login."""
        if self._context is None:
            raise AuthFailedError("GSSAPI login answered before it started", op="sasl")
        if self._stage == "context":
            with self._failures("the server's token was refused"):
                out: bytes | None = self._context.step(token)
            if self._context.complete:
                self._stage = "layers"
                self._check_mutual()
            # Once the context is up the JDK's server waits for an empty response before it
            # sends its offer of security layers.
            return out or b""
        if self._stage == "layers":
            return self._choose_layer(token)
        self.complete = True
        return None

    def _choose_layer(self, token: bytes) -> bytes:
        with self._failures("the server's security-layer offer could not be read"):
            offer: bytes = self._context.unwrap(token).message
        if len(offer) != 4:
            raise AuthFailedError(
                f"GSSAPI security-layer offer of {len(offer)} bytes, not 4", op="sasl"
            )
        if not offer[0] & _NO_SECURITY_LAYER:
            raise AuthFailedError(
                "the server requires a SASL security layer (integrity or confidentiality); "
                "aiocoord speaks none (use TLS for that)",
                op="sasl",
            )
        with self._failures("the security-layer answer could not be made"):
            authzid = str(self._context.initiator_name).encode("utf-8")
            # No layer, so the largest message size is 0 (RFC 4752 section 3.1).
            choice = bytes([_NO_SECURITY_LAYER, 0, 0, 0]) + authzid
            answer: bytes = self._context.wrap(choice, False).message
        self._stage = "done"
        return answer

    @contextlib.contextmanager
    def _failures(self, what: str) -> Iterator[None]:
        """Turns the library's GSSError into AuthFailedError with its explanation."""
        try:
            yield
        except self._gssapi.exceptions.GSSError as failure:
            raise AuthFailedError(
                f"Kerberos login to {self.target} failed: {what}: {failure}", op="sasl"
            ) from failure
