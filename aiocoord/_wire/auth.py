"""Authentication: addAuth (under xid -4), the SASL token exchange, and whoAmI (3.7+)."""

from __future__ import annotations

from dataclasses import dataclass

from aiocoord._wire.framing import EmptyReplyRequest, Request
from aiocoord._wire.jute import (
    INT,
    read_buffer,
    read_int,
    read_ustring,
    read_vector_size,
    write_buffer,
    write_ustring,
)
from aiocoord._wire.opcodes import Op

__all__ = [
    "AuthRequest",
    "ClientInfo",
    "SaslRequest",
    "SaslResponse",
    "WhoAmIRequest",
    "WhoAmIResponse",
]


@dataclass(frozen=True, slots=True)
class AuthRequest(EmptyReplyRequest):
    """addAuth: add ``auth`` credentials of ``scheme`` to the session (``type`` is unused
    by the server; 0)."""

    opcode = Op.AUTH
    type: int
    scheme: str
    auth: bytes

    def encode(self) -> bytes:
        return INT.pack(self.type) + write_ustring(self.scheme) + write_buffer(self.auth)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[AuthRequest, int]:
        """Read the request body at ``offset``."""
        atype, offset = read_int(buf, offset)
        scheme, offset = read_ustring(buf, offset)
        auth, offset = read_buffer(buf, offset)
        return AuthRequest(atype, scheme, auth), offset


@dataclass(frozen=True, slots=True)
class SaslResponse:
    """One server token of the SASL exchange (null reads as empty)."""

    token: bytes

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_buffer(self.token)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SaslResponse, int]:
        """Read one at ``offset``."""
        token, offset = read_buffer(buf, offset)
        return SaslResponse(token), offset


@dataclass(frozen=True, slots=True)
class SaslRequest(Request[SaslResponse]):
    """One client token of the SASL exchange."""

    opcode = Op.SASL
    token: bytes

    def encode(self) -> bytes:
        return write_buffer(self.token)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SaslRequest, int]:
        """Read the request body at ``offset``."""
        token, offset = read_buffer(buf, offset)
        return SaslRequest(token), offset

    def decode_reply(self, buf: bytes, offset: int) -> SaslResponse:
        return SaslResponse.decode(buf, offset)[0]


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """One identity the session is authenticated as."""

    auth_scheme: str
    user: str

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_ustring(self.auth_scheme) + write_ustring(self.user)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[ClientInfo, int]:
        """Read one at ``offset``."""
        scheme, offset = read_ustring(buf, offset)
        user, offset = read_ustring(buf, offset)
        return ClientInfo(scheme, user), offset


@dataclass(frozen=True, slots=True)
class WhoAmIResponse:
    """The identities the session is authenticated as."""

    client_info: list[ClientInfo]

    def encode(self) -> bytes:
        """The Jute encoding."""
        return INT.pack(len(self.client_info)) + b"".join(c.encode() for c in self.client_info)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[WhoAmIResponse, int]:
        """Read one at ``offset``."""
        count, offset = read_vector_size(buf, offset, 8)
        infos: list[ClientInfo] = []
        for _ in range(count):
            info, offset = ClientInfo.decode(buf, offset)
            infos.append(info)
        return WhoAmIResponse(infos), offset


@dataclass(frozen=True, slots=True)
class WhoAmIRequest(Request[WhoAmIResponse]):
    """whoAmI (3.7+): the identities this session is authenticated as."""

    opcode = Op.WHO_AM_I

    def encode(self) -> bytes:
        return b""

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[WhoAmIRequest, int]:
        """Reads nothing: the request has no body."""
        return WhoAmIRequest(), offset

    def decode_reply(self, buf: bytes, offset: int) -> WhoAmIResponse:
        return WhoAmIResponse.decode(buf, offset)[0]
