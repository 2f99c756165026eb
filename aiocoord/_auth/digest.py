"""SASL DIGEST-MD5 (RFC 2831), the client side of ZooKeeper's SASL exchange.

ZooKeeper's Java client names the service ``zookeeper`` and the server ``zk-sasl-md5``, so the
digest URI is ``zookeeper/zk-sasl-md5``; the server's ``DigestLoginModule`` checks the password
against its JAAS ``Server`` section, and the session then holds the identity ``sasl:<user>``
(what a ``sasl`` ACL names). Only the ``auth`` quality of protection is spoken: ZooKeeper
neither offers nor needs integrity or confidentiality layers (use TLS for those).
"""

from __future__ import annotations

import hashlib
import secrets

from aiocoord.errors import AuthFailedError

__all__ = ["DigestMD5", "parse_directives"]

#: ZooKeeper's service and server names for DIGEST-MD5.
SERVICE = "zookeeper"
SERVER_NAME = "zk-sasl-md5"


def parse_directives(text: str) -> dict[str, str]:
    """``key=value`` pairs separated by commas; values may be quoted (with ``\\`` escapes)."""
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t,":
            i += 1
        if i >= n:
            break
        eq = text.find("=", i)
        if eq < 0:
            raise AuthFailedError(f"malformed SASL challenge near {text[i:]!r}", op="sasl")
        key = text[i:eq].strip().lower()
        i = eq + 1
        if i < n and text[i] == '"':
            i += 1
            value = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                raise AuthFailedError("unterminated quoted value in SASL challenge", op="sasl")
            i += 1
            out[key] = "".join(value)
        else:
            end = text.find(",", i)
            end = n if end < 0 else end
            out[key] = text[i:end].strip()
            i = end
    return out


def _h(data: bytes) -> bytes:
    return hashlib.md5(data, usedforsecurity=False).digest()  # the mechanism is defined on MD5


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class DigestMD5:
    """One DIGEST-MD5 authentication: send :meth:`initial`, then feed each server token to
    :meth:`respond`."""

    name = "DIGEST-MD5"
    #: pure computation: no step waits for anything
    blocking = False
    #: DIGEST-MD5 is server-first: a server that knows the mechanism answers the empty
    #: opening token with a challenge, so a refusal there is of the mechanism, not of the
    #: password (ZooKeeper 3.9.6 logs "SaslServer will not use DIGEST-MD5 as SASL mechanism,
    #: because FIPS mode is enabled"; 3.9.3 did not refuse it yet)
    refused_at_once = (
        "the server refused the DIGEST-MD5 mechanism before any challenge. A ZooKeeper 3.9 "
        "server in FIPS mode (zookeeper.fips-mode=true, the default of recent 3.9 releases) "
        "refuses DIGEST-MD5: start the server with -Dzookeeper.fips-mode=false, or log in with "
        "Kerberos (sasl=aiocoord.GSSAPI())"
    )

    def __init__(
        self,
        username: str,
        password: str,
        *,
        digest_uri: str = f"{SERVICE}/{SERVER_NAME}",
        cnonce: str | None = None,
    ) -> None:
        self.username = username
        self.password = password
        self.digest_uri = digest_uri
        self._cnonce = cnonce
        self.subject = f"as {username!r}"
        self.complete = False
        self._expected_rspauth: str | None = None

    def initial(self) -> bytes:
        """Empty: DIGEST-MD5 has no initial response, the server speaks first."""
        return b""

    def respond(self, token: bytes) -> bytes | None:
        """The answer to the server's ``token`` (None once the exchange is over).

        The first call sends nothing useful (DIGEST-MD5 has no initial response): the client
        opens with an empty token. Raises AuthFailedError on a challenge it cannot answer or a
        server proof that does not match (a server that does not know the password).
        """
        if self._expected_rspauth is None:
            if not token:
                return b""
            return self._answer(parse_directives(token.decode("utf-8", "replace")))
        directives = parse_directives(token.decode("utf-8", "replace"))
        if directives.get("rspauth") != self._expected_rspauth:
            raise AuthFailedError(
                "SASL server proof does not match: not the expected server", op="sasl"
            )
        self.complete = True
        return None

    def _answer(self, challenge: dict[str, str]) -> bytes:
        nonce = challenge.get("nonce")
        if not nonce:
            raise AuthFailedError("SASL DIGEST-MD5 challenge without a nonce", op="sasl")
        qops = [q.strip() for q in challenge.get("qop", "auth").split(",")]
        if "auth" not in qops:
            raise AuthFailedError(f"SASL server offers no plain 'auth' qop: {qops}", op="sasl")
        realm = challenge.get("realm", "")
        utf8 = challenge.get("charset", "").lower() == "utf-8"
        encoding = "utf-8" if utf8 else "latin-1"
        cnonce = self._cnonce or secrets.token_hex(16)
        nc = "00000001"
        uri = self.digest_uri
        secret = _h(f"{self.username}:{realm}:{self.password}".encode(encoding))
        ha1 = _h(secret + f":{nonce}:{cnonce}".encode()).hex()

        def digest(a2: str) -> str:
            ha2 = _h(a2.encode()).hex()
            return _h(f"{ha1}:{nonce}:{nc}:{cnonce}:auth:{ha2}".encode()).hex()

        self._expected_rspauth = digest(f":{uri}")
        fields = [
            ("charset", "utf-8") if utf8 else None,
            ("username", _quote(self.username)),
            ("realm", _quote(realm)),
            ("nonce", _quote(nonce)),
            ("nc", nc),
            ("cnonce", _quote(cnonce)),
            ("digest-uri", _quote(uri)),
            ("maxbuf", "65536"),
            ("response", digest(f"AUTHENTICATE:{uri}")),
            ("qop", "auth"),
        ]
        return ",".join(f"{k}={v}" for k, v in (f for f in fields if f is not None)).encode(
            encoding
        )
