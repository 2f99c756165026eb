"""A session's own messages: the connect handshake (the one frame with no xid or opcode),
ping (under xid -2) and closeSession."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aiocoord._wire.framing import LENGTH, EmptyReplyRequest
from aiocoord._wire.jute import parse, read_buffer, write_bool, write_buffer
from aiocoord._wire.opcodes import Op

__all__ = ["CloseRequest", "ConnectRequest", "ConnectResponse", "PingRequest", "decode_connect"]

# protocolVersion, lastZxidSeen, timeOut, sessionId
_CONNECT_HEAD = struct.Struct("!iqiq")
# protocolVersion, timeOut, sessionId
_CONNECTED_HEAD = struct.Struct("!iiq")


@dataclass(frozen=True, slots=True)
class ConnectRequest:
    """The first frame on a connection: a new session (``session_id`` 0) or the session to
    resume, with the newest zxid this client has seen."""

    protocol_version: int
    last_zxid: int
    timeout_ms: int
    session_id: int
    password: bytes
    read_only: bool

    def encode(self) -> bytes:
        """The Jute encoding."""
        return (
            _CONNECT_HEAD.pack(
                self.protocol_version, self.last_zxid, self.timeout_ms, self.session_id
            )
            + write_buffer(self.password)
            + write_bool(self.read_only)
        )

    def frame(self) -> bytes:
        """The whole frame: length prefix and body (a handshake has no xid or opcode)."""
        body = self.encode()
        return LENGTH.pack(len(body)) + body

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[ConnectRequest, int]:
        """Read one at ``offset`` (clients before 3.4 omit ``read_only``)."""
        version, zxid, timeout_ms, session_id = _CONNECT_HEAD.unpack_from(buf, offset)
        password, offset = read_buffer(buf, offset + _CONNECT_HEAD.size)
        read_only = len(buf) > offset and buf[offset] != 0
        end = offset + 1 if len(buf) > offset else offset
        return ConnectRequest(version, zxid, timeout_ms, session_id, password, read_only), end


@dataclass(frozen=True, slots=True)
class ConnectResponse:
    """The server's answer to a ConnectRequest; ``timeout_ms <= 0`` means the session
    asked for has expired. ``read_only``: the server serves reads only (no quorum)."""

    protocol_version: int
    timeout_ms: int
    session_id: int
    password: bytes
    read_only: bool = False

    def encode(self) -> bytes:
        """The Jute encoding."""
        return (
            _CONNECTED_HEAD.pack(self.protocol_version, self.timeout_ms, self.session_id)
            + write_buffer(self.password)
            + write_bool(self.read_only)
        )

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[ConnectResponse, int]:
        """Read one at ``offset``; ``read_only`` is False when the server omits it (before
        3.4)."""
        version, timeout_ms, session_id = _CONNECTED_HEAD.unpack_from(buf, offset)
        password, offset = read_buffer(buf, offset + _CONNECTED_HEAD.size)
        if len(buf) > offset:
            return ConnectResponse(version, timeout_ms, session_id, password, buf[offset] != 0), (
                offset + 1
            )
        return ConnectResponse(version, timeout_ms, session_id, password), offset


def decode_connect(buf: bytes) -> ConnectResponse:
    """The ConnectResponse frame ``buf`` (without its length prefix); ProtocolError on
    garbage."""
    return parse(ConnectResponse.decode, buf, 0, "connect reply")


@dataclass(frozen=True, slots=True)
class PingRequest(EmptyReplyRequest):
    """ping: keeps the session alive (sent under xid -2, answered under it)."""

    opcode = Op.PING

    def encode(self) -> bytes:
        return b""

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[PingRequest, int]:
        """Reads nothing: the request has no body."""
        return PingRequest(), offset


@dataclass(frozen=True, slots=True)
class CloseRequest(EmptyReplyRequest):
    """closeSession: end the session; its ephemeral nodes and watches go."""

    opcode = Op.CLOSE

    def encode(self) -> bytes:
        return b""

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[CloseRequest, int]:
        """Reads nothing: the request has no body."""
        return CloseRequest(), offset
