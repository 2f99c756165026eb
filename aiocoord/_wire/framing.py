"""Frames: the length prefix, the request header (xid, opcode), the reply header (xid, zxid,
err), and :class:`Request`, what the connection needs of a request record.

A request record knows its opcode, encodes its body, frames itself under an xid, and decodes
the body of its reply into the record of its type (``Request[R]`` replies with an ``R``), so
the connection's futures are typed from the request that was sent.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from aiocoord._wire.jute import INT
from aiocoord._wire.opcodes import Op
from aiocoord.errors import ProtocolError

__all__ = [
    "EMPTY",
    "FRAME_HEAD",
    "LENGTH",
    "PATH_FRAME_HEAD",
    "REPLY_HEADER",
    "REPLY_HEADER_SIZE",
    "EmptyReplyRequest",
    "EmptyResponse",
    "Request",
    "decode_body",
    "decode_reply_header",
    "request_frame",
]

R = TypeVar("R", covariant=True)

#: The length prefix of every frame, both ways.
LENGTH = INT
#: A request frame's first twelve bytes: length, xid, opcode.
FRAME_HEAD = struct.Struct("!iii")
#: The head of a request frame whose body starts with a path: length, xid, opcode, the
#: path's length (the hot requests build their frames on it with one pack).
PATH_FRAME_HEAD = struct.Struct("!iiii")
#: A reply frame's header (after the length): xid, zxid, err.
REPLY_HEADER = struct.Struct("!iqi")
REPLY_HEADER_SIZE = REPLY_HEADER.size


def request_frame(xid: int, opcode: int, body: bytes) -> bytes:
    """A whole request frame: length, xid, opcode, body."""
    return FRAME_HEAD.pack(len(body) + 8, xid, opcode) + body


class Request(Generic[R]):
    """A request whose reply body decodes to an ``R``.

    Subclasses are frozen dataclasses that set :attr:`opcode` and implement :meth:`encode`
    and :meth:`decode_reply`; the hot ones also override :meth:`frame` to build the frame
    with one struct call.
    """

    __slots__ = ()
    opcode: ClassVar[Op]

    def encode(self) -> bytes:
        """The body: every field after the opcode, as the server reads it (also the form
        an op takes inside a transaction)."""
        raise NotImplementedError

    def frame(self, xid: int) -> bytes:
        """The whole frame under ``xid``: length prefix, xid, opcode, body."""
        return request_frame(xid, self.opcode, self.encode())

    def decode_reply(self, buf: bytes, offset: int) -> R:
        """The reply's body at ``offset`` (after the reply header) as its record. May raise
        ``struct.error`` or ``ValueError`` on garbage: :func:`decode_body` turns those into
        ProtocolError."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class EmptyResponse:
    """The reply of an op whose answer is its error code alone (delete, check, close, ...)."""

    def encode(self) -> bytes:
        """Nothing."""
        return b""

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[EmptyResponse, int]:
        """Reads nothing."""
        return EMPTY, offset


EMPTY = EmptyResponse()


class EmptyReplyRequest(Request[EmptyResponse]):
    """A request whose reply has no body."""

    __slots__ = ()

    def decode_reply(self, buf: bytes, offset: int) -> EmptyResponse:
        return EMPTY


def decode_reply_header(buf: bytes) -> tuple[int, int, int]:
    """``(xid, zxid, err)`` of a reply frame (without its length prefix)."""
    try:
        xid, zxid, err = REPLY_HEADER.unpack_from(buf, 0)
    except struct.error as exc:
        raise ProtocolError(f"reply frame of {len(buf)} bytes is shorter than its header") from exc
    return xid, zxid, err


def decode_body(request: Request[R], buf: bytes) -> R:
    """The body of ``request``'s reply frame ``buf``; ProtocolError on garbage."""
    try:
        return request.decode_reply(buf, REPLY_HEADER_SIZE)
    except ProtocolError:
        raise
    except (struct.error, ValueError, IndexError) as exc:  # ValueError: UnicodeDecodeError
        raise ProtocolError(
            f"cannot decode reply to opcode {int(request.opcode)}: {exc!r}"
        ) from exc
