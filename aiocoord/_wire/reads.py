"""Reads: exists, getData, getChildren(2), getACL, sync, getEphemerals, getAllChildrenNumber,
and the records of their replies.

exists, getData and getChildren2 are the hot requests of every recipe: their frames are
built with one precompiled struct and their replies decoded inline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from aiocoord._wire.data import ACL, STAT, Stat, read_acls, write_acls
from aiocoord._wire.framing import PATH_FRAME_HEAD, Request
from aiocoord._wire.jute import (
    INT,
    read_buffer,
    read_int,
    read_ustring,
    read_ustrings,
    write_bool,
    write_buffer,
    write_ustring,
    write_ustrings,
)
from aiocoord._wire.opcodes import Op

__all__ = [
    "ExistsRequest",
    "ExistsResponse",
    "GetACLRequest",
    "GetACLResponse",
    "GetAllChildrenNumberRequest",
    "GetAllChildrenNumberResponse",
    "GetChildren2Request",
    "GetChildren2Response",
    "GetChildrenRequest",
    "GetChildrenResponse",
    "GetDataRequest",
    "GetDataResponse",
    "GetEphemeralsRequest",
    "GetEphemeralsResponse",
    "SyncRequest",
    "SyncResponse",
]

R = TypeVar("R", covariant=True)
PW = TypeVar("PW", bound="_PathWatchRequest[Any]")
P = TypeVar("P", bound="_PathRequest[Any]")

_WATCH = (b"\x00", b"\x01")


@dataclass(frozen=True, slots=True)
class _PathWatchRequest(Request[R]):
    """A read of ``path`` that may set a watch (exists, getData, getChildren, getChildren2)."""

    path: str
    watch: bool = False

    def encode(self) -> bytes:
        return write_ustring(self.path) + write_bool(self.watch)

    def frame(self, xid: int) -> bytes:
        raw = self.path.encode()
        size = len(raw)
        return PATH_FRAME_HEAD.pack(size + 13, xid, self.opcode, size) + raw + _WATCH[self.watch]

    @classmethod
    def decode(cls: type[PW], buf: bytes, offset: int) -> tuple[PW, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        return cls(path, buf[offset] != 0), offset + 1


@dataclass(frozen=True, slots=True)
class _PathRequest(Request[R]):
    """A request of one path and nothing else."""

    path: str

    def encode(self) -> bytes:
        return write_ustring(self.path)

    @classmethod
    def decode(cls: type[P], buf: bytes, offset: int) -> tuple[P, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        return cls(path), offset


# --- exists -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExistsResponse:
    """The node's stat (a missing node is the error NoNode, with no body)."""

    stat: Stat

    def encode(self) -> bytes:
        """The Jute encoding."""
        return self.stat.encode()

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[ExistsResponse, int]:
        """Read one at ``offset``."""
        return ExistsResponse(Stat(*STAT.unpack_from(buf, offset))), offset + STAT.size


@dataclass(frozen=True, slots=True)
class ExistsRequest(_PathWatchRequest[ExistsResponse]):
    """exists: the node's stat; ``watch`` sets a data watch, or an exist watch if missing."""

    opcode = Op.EXISTS

    def decode_reply(self, buf: bytes, offset: int) -> ExistsResponse:
        return ExistsResponse(Stat(*STAT.unpack_from(buf, offset)))


# --- getData ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GetDataResponse:
    """The node's data (null data reads as empty) and stat."""

    data: bytes
    stat: Stat

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_buffer(self.data) + self.stat.encode()

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[GetDataResponse, int]:
        """Read one at ``offset``."""
        data, offset = read_buffer(buf, offset)
        return GetDataResponse(data, Stat(*STAT.unpack_from(buf, offset))), offset + STAT.size


@dataclass(frozen=True, slots=True)
class GetDataRequest(_PathWatchRequest[GetDataResponse]):
    """getData: the node's data and stat; ``watch`` sets a data watch."""

    opcode = Op.GET_DATA

    def decode_reply(self, buf: bytes, offset: int) -> GetDataResponse:
        data, offset = read_buffer(buf, offset)
        return GetDataResponse(data, Stat(*STAT.unpack_from(buf, offset)))


# --- getChildren, getChildren2 ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GetChildrenResponse:
    """The names of the node's children (the list is the receiver's to keep)."""

    children: list[str]

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_ustrings(self.children)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[GetChildrenResponse, int]:
        """Read one at ``offset``."""
        names, offset = read_ustrings(buf, offset)
        return GetChildrenResponse(names), offset


@dataclass(frozen=True, slots=True)
class GetChildrenRequest(_PathWatchRequest[GetChildrenResponse]):
    """getChildren: the child names; ``watch`` sets a child watch."""

    opcode = Op.GET_CHILDREN

    def decode_reply(self, buf: bytes, offset: int) -> GetChildrenResponse:
        return GetChildrenResponse(read_ustrings(buf, offset)[0])


@dataclass(frozen=True, slots=True)
class GetChildren2Response:
    """The names of the node's children and the node's own stat."""

    children: list[str]
    stat: Stat

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_ustrings(self.children) + self.stat.encode()

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[GetChildren2Response, int]:
        """Read one at ``offset``."""
        names, offset = read_ustrings(buf, offset)
        return GetChildren2Response(names, Stat(*STAT.unpack_from(buf, offset))), offset + STAT.size


@dataclass(frozen=True, slots=True)
class GetChildren2Request(_PathWatchRequest[GetChildren2Response]):
    """getChildren2: the child names and the parent's stat; ``watch`` sets a child watch."""

    opcode = Op.GET_CHILDREN2

    def decode_reply(self, buf: bytes, offset: int) -> GetChildren2Response:
        names, offset = read_ustrings(buf, offset)
        return GetChildren2Response(names, Stat(*STAT.unpack_from(buf, offset)))


# --- getACL -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GetACLResponse:
    """The node's ACL and stat."""

    acl: list[ACL]
    stat: Stat

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_acls(self.acl) + self.stat.encode()

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[GetACLResponse, int]:
        """Read one at ``offset``."""
        acl, offset = read_acls(buf, offset)
        stat, offset = Stat.decode(buf, offset)
        return GetACLResponse(acl, stat), offset


@dataclass(frozen=True, slots=True)
class GetACLRequest(_PathRequest[GetACLResponse]):
    """getACL: the node's ACL and stat."""

    opcode = Op.GET_ACL

    def decode_reply(self, buf: bytes, offset: int) -> GetACLResponse:
        return GetACLResponse.decode(buf, offset)[0]


# --- sync ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SyncResponse:
    """The path synced."""

    path: str

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_ustring(self.path)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SyncResponse, int]:
        """Read one at ``offset``."""
        path, offset = read_ustring(buf, offset)
        return SyncResponse(path), offset


@dataclass(frozen=True, slots=True)
class SyncRequest(_PathRequest[SyncResponse]):
    """sync: the server catches up with the leader before answering."""

    opcode = Op.SYNC

    def decode_reply(self, buf: bytes, offset: int) -> SyncResponse:
        return SyncResponse.decode(buf, offset)[0]


# --- getEphemerals (3.6+) -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GetEphemeralsResponse:
    """The session's ephemeral nodes under the prefix (full server paths)."""

    ephemerals: list[str]

    def encode(self) -> bytes:
        """The Jute encoding."""
        return write_ustrings(self.ephemerals)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[GetEphemeralsResponse, int]:
        """Read one at ``offset``."""
        paths, offset = read_ustrings(buf, offset)
        return GetEphemeralsResponse(paths), offset


@dataclass(frozen=True, slots=True)
class GetEphemeralsRequest(Request[GetEphemeralsResponse]):
    """getEphemerals: this session's ephemeral nodes whose path starts with ``prefix_path``."""

    opcode = Op.GET_EPHEMERALS
    prefix_path: str

    def encode(self) -> bytes:
        return write_ustring(self.prefix_path)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[GetEphemeralsRequest, int]:
        """Read the request body at ``offset``."""
        prefix, offset = read_ustring(buf, offset)
        return GetEphemeralsRequest(prefix), offset

    def decode_reply(self, buf: bytes, offset: int) -> GetEphemeralsResponse:
        return GetEphemeralsResponse.decode(buf, offset)[0]


# --- getAllChildrenNumber (3.6+) ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GetAllChildrenNumberResponse:
    """The number of the node's descendants."""

    total_number: int

    def encode(self) -> bytes:
        """The Jute encoding."""
        return INT.pack(self.total_number)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[GetAllChildrenNumberResponse, int]:
        """Read one at ``offset``."""
        total, offset = read_int(buf, offset)
        return GetAllChildrenNumberResponse(total), offset


@dataclass(frozen=True, slots=True)
class GetAllChildrenNumberRequest(_PathRequest[GetAllChildrenNumberResponse]):
    """getAllChildrenNumber: how many nodes lie below ``path``."""

    opcode = Op.GET_ALL_CHILDREN_NUMBER

    def decode_reply(self, buf: bytes, offset: int) -> GetAllChildrenNumberResponse:
        return GetAllChildrenNumberResponse(INT.unpack_from(buf, offset)[0])
