"""Transactions (``multi``): ops applied all or none, and one result per op in the reply;
and ``multiRead`` (3.6+), the same shape for reads that each succeed or fail on their own.

Each op travels as a multi header (its opcode, done=false, err=-1) and its request body; a
done header closes the list. The reply repeats the shape: per op a header with the type of
its result, then that result's body, where a failed or rolled-back op is an error result
(type -1) holding only its code.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aiocoord._wire.framing import EmptyResponse, Request
from aiocoord._wire.jute import INT
from aiocoord._wire.opcodes import Op
from aiocoord._wire.reads import (
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
)
from aiocoord._wire.writes import (
    CheckVersionRequest,
    Create2Request,
    Create2Response,
    CreateContainerRequest,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    SetDataRequest,
    SetDataResponse,
)
from aiocoord.errors import ProtocolError

__all__ = [
    "MultiReadRequest",
    "MultiReadResponse",
    "MultiRequest",
    "MultiResponse",
    "MultiResult",
    "ReadOp",
    "ReadReply",
    "TxnOp",
    "TxnReply",
]

#: The requests a transaction can hold.
TxnOp = (
    CreateRequest
    | Create2Request
    | CreateContainerRequest
    | CreateTTLRequest
    | DeleteRequest
    | SetDataRequest
    | CheckVersionRequest
)
#: The body of an applied op's result.
TxnReply = CreateResponse | Create2Response | SetDataResponse | EmptyResponse

# type, done, err
_HEADER = struct.Struct("!i?i")
_DONE = _HEADER.pack(-1, True, -1)

T = TypeVar("T")

_OPS: dict[int, Callable[[bytes, int], tuple[TxnOp, int]]] = {
    Op.CREATE: CreateRequest.decode,
    Op.CREATE2: Create2Request.decode,
    Op.CREATE_CONTAINER: CreateContainerRequest.decode,
    Op.CREATE_TTL: CreateTTLRequest.decode,
    Op.DELETE: DeleteRequest.decode,
    Op.SET_DATA: SetDataRequest.decode,
    Op.CHECK: CheckVersionRequest.decode,
}
# A createContainer or createTTL is answered as create2 (with a stat); a create2 as create2
# from 3.9 on, as a plain create (the path alone) before (ZOOKEEPER-4026). The other two are
# accepted as well, in case a server labels the result with the request's own opcode.
_REPLIES: dict[int, Callable[[bytes, int], tuple[TxnReply, int]]] = {
    Op.CREATE: CreateResponse.decode,
    Op.CREATE2: Create2Response.decode,
    Op.CREATE_CONTAINER: Create2Response.decode,
    Op.CREATE_TTL: Create2Response.decode,
    Op.DELETE: EmptyResponse.decode,
    Op.SET_DATA: SetDataResponse.decode,
    Op.CHECK: EmptyResponse.decode,
}


def _decode_parts(
    buf: bytes,
    offset: int,
    decoders: Mapping[int, Callable[[bytes, int], tuple[T, int]]],
    what: str,
    *,
    errors: bool,
) -> tuple[list[tuple[int, int, T | None]], int]:
    """The parts of a multi or multiRead body at ``offset``, up to its done header: one
    ``(opcode, err, body)`` each; with ``errors`` (a reply) an error part is ``(Op.ERROR,
    code, None)``. An opcode ``decoders`` lacks is a ProtocolError naming ``what``."""
    parts: list[tuple[int, int, T | None]] = []
    op, done, _err = _HEADER.unpack_from(buf, offset)
    offset += _HEADER.size
    while not done:
        if errors and op == Op.ERROR:
            (code,) = INT.unpack_from(buf, offset)
            offset += INT.size
            parts.append((op, code, None))
        else:
            decode = decoders.get(op)
            if decode is None:
                raise ProtocolError(f"{what} {op}")
            body, offset = decode(buf, offset)
            parts.append((op, 0, body))
        op, done, _err = _HEADER.unpack_from(buf, offset)
        offset += _HEADER.size
    return parts, offset


def _encode_ops(ops: Sequence[Request[Any]]) -> bytes:
    """The body of a multi or multiRead: a header and the request per op, then done."""
    parts: list[bytes] = []
    for op in ops:
        parts.append(_HEADER.pack(op.opcode, False, -1))
        parts.append(op.encode())
    parts.append(_DONE)
    return b"".join(parts)


@dataclass(frozen=True, slots=True)
class MultiResult:
    """One op's result: the ``opcode`` the server labels it with (``Op.ERROR`` for an op
    that failed or was rolled back), ``err`` (0 when applied; for an error result its code,
    where 0 means "would have succeeded" and -2 "rolled back"), and the ``body`` of an
    applied op (None for an error result)."""

    opcode: int
    err: int
    body: TxnReply | None

    def encode(self) -> bytes:
        """The Jute encoding: the multi header, then the result."""
        if self.body is None:
            return _HEADER.pack(Op.ERROR, False, self.err) + INT.pack(self.err)
        return _HEADER.pack(self.opcode, False, 0) + self.body.encode()


@dataclass(frozen=True, slots=True)
class MultiResponse:
    """The results of a transaction, one per op, in order."""

    results: list[MultiResult]

    def encode(self) -> bytes:
        """The Jute encoding."""
        return b"".join([r.encode() for r in self.results]) + _DONE

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[MultiResponse, int]:
        """Read one at ``offset``."""
        parts, offset = _decode_parts(
            buf, offset, _REPLIES, "transaction reply holds a result of opcode", errors=True
        )
        results = [MultiResult(op, err, body) for op, err, body in parts]
        return MultiResponse(results), offset


@dataclass(frozen=True, slots=True)
class MultiRequest(Request[MultiResponse]):
    """multi: ``ops`` applied atomically."""

    opcode = Op.MULTI
    ops: Sequence[TxnOp]

    def encode(self) -> bytes:
        return _encode_ops(self.ops)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[MultiRequest, int]:
        """Read the request body at ``offset``."""
        parts, offset = _decode_parts(
            buf, offset, _OPS, "transaction holds an op of opcode", errors=False
        )
        ops = [body for _, _, body in parts if body is not None]
        return MultiRequest(ops), offset

    def decode_reply(self, buf: bytes, offset: int) -> MultiResponse:
        return MultiResponse.decode(buf, offset)[0]


#: The requests a multiRead can hold (the server refuses a watch in one).
ReadOp = GetDataRequest | GetChildrenRequest
#: The body of a read's result.
ReadReply = GetDataResponse | GetChildrenResponse


_READ_OPS: dict[int, Callable[[bytes, int], tuple[ReadOp, int]]] = {
    Op.GET_DATA: GetDataRequest.decode,
    Op.GET_CHILDREN: GetChildrenRequest.decode,
}
_READ_REPLIES: dict[int, Callable[[bytes, int], tuple[ReadReply, int]]] = {
    Op.GET_DATA: GetDataResponse.decode,
    Op.GET_CHILDREN: GetChildrenResponse.decode,
}


@dataclass(frozen=True, slots=True)
class MultiReadResponse:
    """The results of a multiRead, one per read, in order: ``(err, body)``, the body None
    when ``err`` is set (each read fails alone: a missing node is NoNode for its read only)."""

    results: list[tuple[int, ReadReply | None]]

    def encode(self) -> bytes:
        """The Jute encoding."""
        parts: list[bytes] = []
        for err, body in self.results:
            if body is None:
                parts.append(_HEADER.pack(Op.ERROR, False, err) + INT.pack(err))
            else:
                opcode = Op.GET_DATA if isinstance(body, GetDataResponse) else Op.GET_CHILDREN
                parts.append(_HEADER.pack(opcode, False, 0) + body.encode())
        parts.append(_DONE)
        return b"".join(parts)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[MultiReadResponse, int]:
        """Read one at ``offset``."""
        parts, offset = _decode_parts(
            buf, offset, _READ_REPLIES, "multiRead reply holds a result of opcode", errors=True
        )
        results = [(err, body) for _, err, body in parts]
        return MultiReadResponse(results), offset


@dataclass(frozen=True, slots=True)
class MultiReadRequest(Request[MultiReadResponse]):
    """multiRead (3.6+): ``ops`` read in one request, answered together."""

    opcode = Op.MULTI_READ
    ops: Sequence[ReadOp]

    def encode(self) -> bytes:
        return _encode_ops(self.ops)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[MultiReadRequest, int]:
        """Read the request body at ``offset``."""
        parts, offset = _decode_parts(
            buf, offset, _READ_OPS, "multiRead holds an op of opcode", errors=False
        )
        ops = [body for _, _, body in parts if body is not None]
        return MultiReadRequest(ops), offset

    def decode_reply(self, buf: bytes, offset: int) -> MultiReadResponse:
        return MultiReadResponse.decode(buf, offset)[0]
