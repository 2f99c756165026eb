"""Writes: create (and create2, createContainer, createTTL), delete, setData, setACL, check,
and the records of their replies. Every one of them can also be an op of a transaction
(:mod:`.multi`), where it is written as its :meth:`~.framing.Request.encode` body."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aiocoord._wire.data import ACL, STAT, Stat, read_acls, write_acls
from aiocoord._wire.framing import PATH_FRAME_HEAD, EmptyReplyRequest, Request
from aiocoord._wire.jute import (
    INT,
    LONG,
    read_buffer,
    read_int,
    read_long,
    read_ustring,
    write_buffer,
    write_ustring,
)
from aiocoord._wire.opcodes import Op

__all__ = [
    "CheckVersionRequest",
    "Create2Request",
    "Create2Response",
    "CreateContainerRequest",
    "CreateRequest",
    "CreateResponse",
    "CreateTTLRequest",
    "DeleteRequest",
    "SetACLRequest",
    "SetACLResponse",
    "SetDataRequest",
    "SetDataResponse",
]

R = TypeVar("R", covariant=True)
C = TypeVar("C", bound="_CreateRequest[Any]")
PV = TypeVar("PV", bound="_PathVersionRequest")


# --- create -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateResponse:
    """The created node's path (with the sequence number, if sequential)."""

    path: str

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_ustring(self.path)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[CreateResponse, int]:
        """Read one at ``offset``."""
        path, offset = read_ustring(buf, offset)
        return CreateResponse(path), offset


@dataclass(frozen=True, slots=True)
class Create2Response:
    """The created node's path and stat."""

    path: str
    stat: Stat

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_ustring(self.path) + self.stat.encode()

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[Create2Response, int]:
        """Read one at ``offset``."""
        path, offset = read_ustring(buf, offset)
        return Create2Response(path, Stat(*STAT.unpack_from(buf, offset))), offset + STAT.size


@dataclass(frozen=True, slots=True)
class _CreateRequest(Request[R]):
    """The fields every create has: path, data, ACL, and the CreateFlag as ``flags``."""

    path: str
    data: bytes
    acl: Sequence[ACL]
    flags: int

    def encode(self) -> bytes:
        path = self.path.encode()
        data = self.data
        return b"".join(
            (
                INT.pack(len(path)),
                path,
                INT.pack(len(data)),
                data,
                write_acls(self.acl),
                INT.pack(self.flags),
            )
        )

    @classmethod
    def decode(cls: type[C], buf: bytes, offset: int) -> tuple[C, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        data, offset = read_buffer(buf, offset)
        acl, offset = read_acls(buf, offset)
        flags, offset = read_int(buf, offset)
        return cls(path, data, acl, flags), offset


@dataclass(frozen=True, slots=True)
class CreateRequest(_CreateRequest[CreateResponse]):
    """create: the reply has the path only."""

    opcode = Op.CREATE

    def decode_reply(self, buf: bytes, offset: int) -> CreateResponse:
        return CreateResponse(read_ustring(buf, offset)[0])


@dataclass(frozen=True, slots=True)
class Create2Request(_CreateRequest[Create2Response]):
    """create2: the reply has the path and the new node's stat."""

    opcode = Op.CREATE2

    def decode_reply(self, buf: bytes, offset: int) -> Create2Response:
        path, offset = read_ustring(buf, offset)
        return Create2Response(path, Stat(*STAT.unpack_from(buf, offset)))


@dataclass(frozen=True, slots=True)
class CreateContainerRequest(_CreateRequest[Create2Response]):
    """createContainer: a node the server deletes once its last child is gone (``flags``
    must be CreateFlag.CONTAINER). A create with that flag alone makes a plain node."""

    opcode = Op.CREATE_CONTAINER

    def decode_reply(self, buf: bytes, offset: int) -> Create2Response:
        path, offset = read_ustring(buf, offset)
        return Create2Response(path, Stat(*STAT.unpack_from(buf, offset)))


@dataclass(frozen=True, slots=True)
class CreateTTLRequest(Request[Create2Response]):
    """createTTL: a persistent node the server deletes once it has gone ``ttl`` ms without
    a change or a child (server option ``extendedTypesEnabled``)."""

    opcode = Op.CREATE_TTL
    path: str
    data: bytes
    acl: Sequence[ACL]
    flags: int
    ttl: int

    def encode(self) -> bytes:
        path = self.path.encode()
        return b"".join(
            (
                INT.pack(len(path)),
                path,
                INT.pack(len(self.data)),
                self.data,
                write_acls(self.acl),
                INT.pack(self.flags),
                LONG.pack(self.ttl),
            )
        )

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[CreateTTLRequest, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        data, offset = read_buffer(buf, offset)
        acl, offset = read_acls(buf, offset)
        flags, offset = read_int(buf, offset)
        ttl, offset = read_long(buf, offset)
        return CreateTTLRequest(path, data, acl, flags, ttl), offset

    def decode_reply(self, buf: bytes, offset: int) -> Create2Response:
        path, offset = read_ustring(buf, offset)
        return Create2Response(path, Stat(*STAT.unpack_from(buf, offset)))


# --- delete, check ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _PathVersionRequest(EmptyReplyRequest):
    """A request of a path and an expected version (-1: any), answered by its error alone."""

    path: str
    version: int = -1

    def encode(self) -> bytes:
        return write_ustring(self.path) + INT.pack(self.version)

    def frame(self, xid: int) -> bytes:
        raw = self.path.encode()
        size = len(raw)
        return (
            PATH_FRAME_HEAD.pack(size + 16, xid, self.opcode, size) + raw + INT.pack(self.version)
        )

    @classmethod
    def decode(cls: type[PV], buf: bytes, offset: int) -> tuple[PV, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        version, offset = read_int(buf, offset)
        return cls(path, version), offset


@dataclass(frozen=True, slots=True)
class DeleteRequest(_PathVersionRequest):
    """delete: remove the node if it has ``version`` (-1: any) and no children."""

    opcode = Op.DELETE


@dataclass(frozen=True, slots=True)
class CheckVersionRequest(_PathVersionRequest):
    """check (transactions only): fail the transaction unless the node has ``version``."""

    opcode = Op.CHECK


# --- setData ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SetDataResponse:
    """The node's stat after the write."""

    stat: Stat

    def encode(self) -> bytes:
        """The Jute encoding."""
        return self.stat.encode()

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SetDataResponse, int]:
        """Read one at ``offset``."""
        return SetDataResponse(Stat(*STAT.unpack_from(buf, offset))), offset + STAT.size


@dataclass(frozen=True, slots=True)
class SetDataRequest(Request[SetDataResponse]):
    """setData: replace the node's data if it has ``version`` (-1: any)."""

    opcode = Op.SET_DATA
    path: str
    data: bytes
    version: int = -1

    def encode(self) -> bytes:
        return write_ustring(self.path) + write_buffer(self.data) + INT.pack(self.version)

    def frame(self, xid: int) -> bytes:
        raw = self.path.encode()
        size = len(raw)
        data = self.data
        return (
            PATH_FRAME_HEAD.pack(size + 20 + len(data), xid, self.opcode, size)
            + raw
            + INT.pack(len(data))
            + data
            + INT.pack(self.version)
        )

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SetDataRequest, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        data, offset = read_buffer(buf, offset)
        version, offset = read_int(buf, offset)
        return SetDataRequest(path, data, version), offset

    def decode_reply(self, buf: bytes, offset: int) -> SetDataResponse:
        return SetDataResponse(Stat(*STAT.unpack_from(buf, offset)))


# --- setACL -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SetACLResponse:
    """The node's stat after the write."""

    stat: Stat

    def encode(self) -> bytes:
        """The Jute encoding."""
        return self.stat.encode()

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SetACLResponse, int]:
        """Read one at ``offset``."""
        return SetACLResponse(Stat(*STAT.unpack_from(buf, offset))), offset + STAT.size


@dataclass(frozen=True, slots=True)
class SetACLRequest(Request[SetACLResponse]):
    """setACL: replace the node's ACL if its ACL version is ``version`` (-1: any)."""

    opcode = Op.SET_ACL
    path: str
    acl: Sequence[ACL]
    version: int = -1

    def encode(self) -> bytes:
        return write_ustring(self.path) + write_acls(self.acl) + INT.pack(self.version)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SetACLRequest, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        acl, offset = read_acls(buf, offset)
        version, offset = read_int(buf, offset)
        return SetACLRequest(path, acl, version), offset

    def decode_reply(self, buf: bytes, offset: int) -> SetACLResponse:
        return SetACLResponse(Stat(*STAT.unpack_from(buf, offset)))
