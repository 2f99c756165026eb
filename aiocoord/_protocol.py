"""Wire format: framing, opcodes, and the requests aiozk's Jute classes lack.

Everything above this module speaks in aiozk ``Request`` objects and plain Python values;
nothing above it knows the byte layout, so the codec can be replaced without touching the
session manager. aiozk's response classes register themselves by opcode in a process-wide
table, so this module only ever *adds* opcodes aiozk does not define.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiozk.protocol import primitives as _prim
from aiozk.protocol.acl import ACL as _ACL
from aiozk.protocol.acl import ID as _ID
from aiozk.protocol.part import Part
from aiozk.protocol.request import Request
from aiozk.protocol.response import Response, response_xref
from aiozk.protocol.stat import Stat as _JuteStat

from aiocoord.errors import ProtocolError

# Special xids the server uses for replies that answer no numbered request.
WATCH_XID = -1
PING_XID = -2
AUTH_XID = -4
SET_WATCHES_XID = -8

# Opcodes (ZooDefs.OpCode).
OP_CREATE = 1
OP_DELETE = 2
OP_EXISTS = 3
OP_GET_DATA = 4
OP_SET_DATA = 5
OP_GET_ACL = 6
OP_SET_ACL = 7
OP_GET_CHILDREN = 8
OP_SYNC = 9
OP_PING = 11
OP_GET_CHILDREN2 = 12
OP_CHECK = 13
OP_MULTI = 14
OP_CREATE2 = 15
OP_REMOVE_WATCHES = 18
OP_CREATE_CONTAINER = 19
OP_CREATE_TTL = 21
OP_AUTH = 100
OP_SET_WATCHES = 101
OP_SASL = 102
OP_GET_EPHEMERALS = 103
OP_GET_ALL_CHILDREN_NUMBER = 104
OP_SET_WATCHES2 = 105
OP_ADD_WATCH = 106
OP_WHO_AM_I = 107
OP_CLOSE = -11
OP_ERROR = -1

# CreateMode flags as the server reads them.
MODE_PERSISTENT = 0
MODE_EPHEMERAL = 1
MODE_PERSISTENT_SEQUENTIAL = 2
MODE_EPHEMERAL_SEQUENTIAL = 3
MODE_CONTAINER = 4
MODE_PERSISTENT_WITH_TTL = 5
MODE_PERSISTENT_SEQUENTIAL_WITH_TTL = 6

# addWatch modes and removeWatches types.
ADD_WATCH_PERSISTENT = 0
ADD_WATCH_PERSISTENT_RECURSIVE = 1
WATCHER_CHILDREN = 1
WATCHER_DATA = 2
WATCHER_ANY = 3

# Bound one SetWatches packet well under jute.maxbuffer, as the Java client does.
SET_WATCHES_MAX_BYTES = 128 * 1024

OP_NAMES = {
    OP_CREATE: "create",
    OP_DELETE: "delete",
    OP_EXISTS: "exists",
    OP_GET_DATA: "get",
    OP_SET_DATA: "set",
    OP_GET_ACL: "get_acl",
    OP_SET_ACL: "set_acl",
    OP_GET_CHILDREN: "children",
    OP_SYNC: "sync",
    OP_PING: "ping",
    OP_GET_CHILDREN2: "children",
    OP_CHECK: "check",
    OP_MULTI: "transaction",
    OP_CREATE2: "create",
    OP_REMOVE_WATCHES: "remove_watches",
    OP_CREATE_CONTAINER: "create",
    OP_CREATE_TTL: "create",
    OP_AUTH: "add_auth",
    OP_SET_WATCHES: "set_watches",
    OP_SASL: "sasl",
    OP_GET_EPHEMERALS: "get_ephemerals",
    OP_GET_ALL_CHILDREN_NUMBER: "count_descendants",
    OP_SET_WATCHES2: "set_watches",
    OP_ADD_WATCH: "add_watch",
    OP_WHO_AM_I: "whoami",
    OP_CLOSE: "close",
}


@dataclass(frozen=True, slots=True)
class Stat:
    """A znode's metadata, as the server reports it."""

    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int
    pzxid: int

    @property
    def is_ephemeral(self) -> bool:
        """True when the node is ephemeral (owned by a session)."""
        return self.ephemeral_owner != 0


@dataclass(frozen=True, slots=True)
class ACL:
    """One ACL entry: permission bits for an identity (``scheme``, ``id``)."""

    perms: int
    scheme: str
    id: str

    READ = 1
    WRITE = 2
    CREATE = 4
    DELETE = 8
    ADMIN = 16
    ALL = 31


def stat_from(part: Any) -> Stat:
    """Convert aiozk's Stat part into our frozen dataclass (ours pass through)."""
    if isinstance(part, Stat):
        return part
    return Stat(
        part.created_zxid,
        part.last_modified_zxid,
        part.created,
        part.modified,
        part.version,
        part.child_version,
        part.acl_version,
        part.ephemeral_owner,
        part.data_length,
        part.num_children,
        part.last_modified_children,
    )


def acl_to_jute(acl: ACL) -> Any:
    """Convert our ACL into aiozk's part."""
    return _ACL(perms=acl.perms, id=_ID(scheme=acl.scheme, id=acl.id))


def acl_from_jute(part: Any) -> ACL:
    """Convert aiozk's ACL part into ours."""
    return ACL(part.perms, part.id.scheme, part.id.id)


# --- opcodes aiozk lacks ---------------------------------------------------------------------


class CreateContainerRequest(Request):  # type: ignore[misc]
    """createContainer: a node the server deletes once its last child is gone."""

    opcode = OP_CREATE_CONTAINER
    parts = (
        ("path", _prim.UString),
        ("data", _prim.Buffer),
        ("acl", _prim.Vector.of(_ACL)),
        ("flags", _prim.Int),
    )


class CreateContainerResponse(Response):  # type: ignore[misc]
    """Reply to createContainer: the created path and its stat."""

    opcode = OP_CREATE_CONTAINER
    parts = (("path", _prim.UString), ("stat", _JuteStat))


class CreateTTLRequest(Request):  # type: ignore[misc]
    """createTTL: a persistent node the server deletes after ``ttl`` ms without children."""

    opcode = OP_CREATE_TTL
    parts = (
        ("path", _prim.UString),
        ("data", _prim.Buffer),
        ("acl", _prim.Vector.of(_ACL)),
        ("flags", _prim.Int),
        ("ttl", _prim.Long),
    )


class CreateTTLResponse(Response):  # type: ignore[misc]
    """Reply to createTTL."""

    opcode = OP_CREATE_TTL
    parts = (("path", _prim.UString), ("stat", _JuteStat))


class AddWatchRequest(Request):  # type: ignore[misc]
    """addWatch (3.6+): a persistent, optionally recursive watch."""

    opcode = OP_ADD_WATCH
    parts = (("path", _prim.UString), ("mode", _prim.Int))


class AddWatchResponse(Response):  # type: ignore[misc]
    """Reply to addWatch (empty)."""

    opcode = OP_ADD_WATCH
    parts = ()


class GetEphemeralsRequest(Request):  # type: ignore[misc]
    """getEphemerals (3.6+): this session's ephemeral nodes under a path prefix."""

    opcode = OP_GET_EPHEMERALS
    parts = (("prefix_path", _prim.UString),)


class GetEphemeralsResponse(Response):  # type: ignore[misc]
    """Reply to getEphemerals."""

    opcode = OP_GET_EPHEMERALS
    parts = (("ephemerals", _prim.Vector.of(_prim.UString)),)


class GetAllChildrenNumberRequest(Request):  # type: ignore[misc]
    """getAllChildrenNumber (3.6+): the number of descendants of a node."""

    opcode = OP_GET_ALL_CHILDREN_NUMBER
    parts = (("path", _prim.UString),)


class GetAllChildrenNumberResponse(Response):  # type: ignore[misc]
    """Reply to getAllChildrenNumber."""

    opcode = OP_GET_ALL_CHILDREN_NUMBER
    parts = (("total_number", _prim.Int),)


class ClientInfo(Part):  # type: ignore[misc]
    """One authenticated identity of this session."""

    parts = (("auth_scheme", _prim.UString), ("user", _prim.UString))


class WhoAmIRequest(Request):  # type: ignore[misc]
    """whoAmI (3.7+): the identities this session is authenticated as."""

    opcode = OP_WHO_AM_I
    parts = ()


class WhoAmIResponse(Response):  # type: ignore[misc]
    """Reply to whoAmI."""

    opcode = OP_WHO_AM_I
    parts = (("client_info", _prim.Vector.of(ClientInfo)),)


class SaslRequest(Request):  # type: ignore[misc]
    """One client token of the SASL exchange. (aiozk's SASLRequest declares its parts as
    a flat pair, not a tuple of pairs, so it cannot encode.)"""

    opcode = OP_SASL
    parts = (("token", _prim.Buffer),)


class SaslResponse(Response):  # type: ignore[misc]
    """One server token of the SASL exchange (replaces aiozk's malformed SASLResponse as
    the decoder of opcode 102)."""

    opcode = OP_SASL
    parts = (("token", _prim.Buffer),)


class SetWatches2Request(Request):  # type: ignore[misc]
    """SetWatches2 (3.6+): restore one-shot and persistent watches after a reconnect."""

    opcode = OP_SET_WATCHES2
    parts = (
        ("relative_zxid", _prim.Long),
        ("data_watches", _prim.Vector.of(_prim.UString)),
        ("exist_watches", _prim.Vector.of(_prim.UString)),
        ("child_watches", _prim.Vector.of(_prim.UString)),
        ("persistent_watches", _prim.Vector.of(_prim.UString)),
        ("persistent_recursive_watches", _prim.Vector.of(_prim.UString)),
    )


class SetWatches2Response(Response):  # type: ignore[misc]
    """Reply to SetWatches2 (empty)."""

    opcode = OP_SET_WATCHES2
    parts = ()


# --- framing ------------------------------------------------------------------------------------

_LEN = struct.Struct("!i")
_REPLY_HEADER = struct.Struct("!iqi")
_CONNECT_REQ = struct.Struct("!iqiq")
_INT = struct.Struct("!i")
_MULTI_HEADER = struct.Struct("!i?i")


def encode(xid: int, request: Any) -> bytes:
    """Frame one request: length prefix, xid, opcode, body."""
    fast = _FAST_ENCODERS.get(type(request))
    body: bytes = fast(xid, request) if fast is not None else request.serialize(xid)
    return _LEN.pack(len(body)) + body


# --- fast paths for the hot requests and replies ---------------------------------------------
# aiozk builds a struct format per message and a Struct per field; these produce the same bytes
# (checked against aiozk in tests/unit/test_protocol.py) with precompiled structs.

_HEAD = struct.Struct("!ii")
_STAT = struct.Struct("!qqqqiiiqiiq")


def _ustr(value: str) -> bytes:
    raw = value.encode()
    return _INT.pack(len(raw)) + raw


def _buf(value: bytes | None) -> bytes:
    if value is None:
        return _INT.pack(-1)
    return _INT.pack(len(value)) + value


def _enc_path_watch(xid: int, req: Any) -> bytes:
    return _HEAD.pack(xid, req.opcode) + _ustr(req.path) + (b"\x01" if req.watch else b"\x00")


def _enc_path_version(xid: int, req: Any) -> bytes:
    return _HEAD.pack(xid, req.opcode) + _ustr(req.path) + _INT.pack(req.version)


def _enc_set_data(xid: int, req: Any) -> bytes:
    return _HEAD.pack(xid, req.opcode) + _ustr(req.path) + _buf(req.data) + _INT.pack(req.version)


def _enc_create(xid: int, req: Any) -> bytes:
    acls = req.acl or []
    parts = [_HEAD.pack(xid, req.opcode), _ustr(req.path), _buf(req.data), _INT.pack(len(acls))]
    for acl in acls:
        parts.append(_INT.pack(acl.perms))
        parts.append(_ustr(acl.id.scheme))
        parts.append(_ustr(acl.id.id))
    parts.append(_INT.pack(req.flags))
    return b"".join(parts)


def _register_fast_encoders() -> dict[type, Callable[[int, Any], bytes]]:
    from aiozk.protocol import (
        CheckVersionRequest,
        Create2Request,
        CreateRequest,
        DeleteRequest,
        ExistsRequest,
        GetChildren2Request,
        GetChildrenRequest,
        GetDataRequest,
        SetDataRequest,
    )

    return {
        GetDataRequest: _enc_path_watch,
        ExistsRequest: _enc_path_watch,
        GetChildrenRequest: _enc_path_watch,
        GetChildren2Request: _enc_path_watch,
        DeleteRequest: _enc_path_version,
        CheckVersionRequest: _enc_path_version,
        SetDataRequest: _enc_set_data,
        CreateRequest: _enc_create,
        Create2Request: _enc_create,
    }


_FAST_ENCODERS = _register_fast_encoders()


@dataclass(slots=True)
class Body:
    """A decoded reply body of the hot ops (fields a reply lacks stay None)."""

    data: bytes | None = None
    stat: Stat | None = None
    children: list[str] | None = None
    path: str | None = None


def _read_str(body: bytes, offset: int) -> tuple[str, int]:
    (size,) = _INT.unpack_from(body, offset)
    offset += 4
    if size < 0 or offset + size > len(body):
        raise ProtocolError(f"string of {size} bytes overruns its frame")
    return body[offset : offset + size].decode(), offset + size


def _read_stat(body: bytes, offset: int) -> tuple[Stat, int]:
    return Stat(*_STAT.unpack_from(body, offset)), offset + _STAT.size


def _dec_stat(body: bytes, offset: int) -> Body:
    return Body(stat=_read_stat(body, offset)[0])


def _dec_data(body: bytes, offset: int) -> Body:
    (size,) = _INT.unpack_from(body, offset)
    offset += 4
    if size < 0:
        data = b""
    else:
        if offset + size > len(body):
            raise ProtocolError(f"data of {size} bytes overruns its frame")
        data = body[offset : offset + size]
        offset += size
    return Body(data=data, stat=_read_stat(body, offset)[0])


def _read_children(body: bytes, offset: int) -> tuple[list[str], int]:
    (count,) = _INT.unpack_from(body, offset)
    offset += 4
    if count < 0 or count > len(body):
        raise ProtocolError(f"child count {count} is impossible in a {len(body)}-byte frame")
    names = []
    for _ in range(count):
        name, offset = _read_str(body, offset)
        names.append(name)
    return names, offset


def _dec_children(body: bytes, offset: int) -> Body:
    return Body(children=_read_children(body, offset)[0])


def _dec_children2(body: bytes, offset: int) -> Body:
    names, offset = _read_children(body, offset)
    return Body(children=names, stat=_read_stat(body, offset)[0])


def _dec_path_stat(body: bytes, offset: int) -> Body:
    path, offset = _read_str(body, offset)
    return Body(path=path, stat=_read_stat(body, offset)[0])


_FAST_DECODERS = {
    OP_EXISTS: _dec_stat,
    OP_SET_DATA: _dec_stat,
    OP_GET_DATA: _dec_data,
    OP_GET_CHILDREN: _dec_children,
    OP_GET_CHILDREN2: _dec_children2,
    OP_CREATE2: _dec_path_stat,
    OP_CREATE_CONTAINER: _dec_path_stat,
    OP_CREATE_TTL: _dec_path_stat,
}


def encode_connect(
    *, last_zxid: int, timeout_ms: int, session_id: int, password: bytes, read_only: bool
) -> bytes:
    """Frame a ConnectRequest (it carries no xid or opcode)."""
    body = (
        _CONNECT_REQ.pack(0, last_zxid, timeout_ms, session_id)
        + _INT.pack(len(password))
        + password
        + (b"\x01" if read_only else b"\x00")
    )
    return _LEN.pack(len(body)) + body


@dataclass(frozen=True, slots=True)
class ConnectReply:
    """The server's answer to a ConnectRequest; ``timeout_ms <= 0`` means the session expired."""

    timeout_ms: int
    session_id: int
    password: bytes
    read_only: bool


def decode_connect(body: bytes) -> ConnectReply:
    """Decode a ConnectResponse, including the readOnly flag aiozk's class omits."""
    try:
        _proto, timeout_ms, session_id = struct.unpack_from("!iiq", body, 0)
        (plen,) = _INT.unpack_from(body, 16)
        if plen < 0 or 20 + plen > len(body):
            raise ProtocolError(f"bad password length {plen} in connect reply")
        password = bytes(body[20 : 20 + plen])
        read_only = len(body) > 20 + plen and body[20 + plen] != 0
    except struct.error as exc:
        raise ProtocolError(f"truncated connect reply ({len(body)} bytes)") from exc
    return ConnectReply(timeout_ms, session_id, password, read_only)


def decode_reply_header(body: bytes) -> tuple[int, int, int]:
    """Return (xid, zxid, err) of a reply frame."""
    try:
        xid, zxid, err = _REPLY_HEADER.unpack_from(body, 0)
    except struct.error as exc:
        raise ProtocolError(f"reply frame of {len(body)} bytes is shorter than its header") from exc
    return xid, zxid, err


REPLY_HEADER_SIZE = _REPLY_HEADER.size


def decode_body(opcode: int, body: bytes, offset: int) -> Any:
    """Decode the body of a reply to ``opcode``; raises ProtocolError on garbage."""
    try:
        fast = _FAST_DECODERS.get(opcode)
        if fast is not None:
            return fast(body, offset)
        if opcode == OP_MULTI:
            return decode_multi(body, offset)
        cls = response_xref.get(opcode)
        if cls is None:
            raise ProtocolError(f"no decoder for opcode {opcode}")
        part, end = cls.parse(body, offset)
    except ProtocolError:
        raise
    except Exception as exc:  # aiozk raises struct.error, UnicodeDecodeError, ...
        raise ProtocolError(f"cannot decode reply to opcode {opcode}: {exc!r}") from exc
    if end > len(body):
        raise ProtocolError(f"reply to opcode {opcode} overruns its frame")
    return part


@dataclass(frozen=True, slots=True)
class WatchNotification:
    """A raw watch event as the server sends it (path still absolute, not chroot-relative)."""

    type: int
    state: int
    path: str


def decode_watch(body: bytes, offset: int) -> WatchNotification:
    """Decode a watch event frame."""
    try:
        etype, state = struct.unpack_from("!ii", body, offset)
        path, end = _prim.UString.parse(body, offset + 8)
    except Exception as exc:
        raise ProtocolError(f"cannot decode watch event: {exc!r}") from exc
    if end > len(body) or path is None:
        raise ProtocolError("watch event overruns its frame")
    return WatchNotification(etype, state, path)


# --- multi ----------------------------------------------------------------------------------------


class MultiRequest(Request):  # type: ignore[misc]
    """A transaction: each op framed by a multi header, closed by a done header."""

    opcode = OP_MULTI
    parts = ()

    def __init__(self, ops: list[Any]) -> None:
        super().__init__()
        self.ops = ops

    def serialize(self, xid: int | None = None) -> bytes:
        out = [struct.pack("!ii", xid, OP_MULTI)]
        for op in self.ops:
            out.append(_MULTI_HEADER.pack(op.opcode, False, -1))
            out.append(op.serialize(None)[4:] if op.opcode else op.serialize(None))
        out.append(_MULTI_HEADER.pack(-1, True, -1))
        return b"".join(out)


@dataclass(frozen=True, slots=True)
class MultiResult:
    """One op's raw result inside a transaction reply: its opcode and decoded part or error."""

    opcode: int
    err: int
    part: Any


def decode_multi(body: bytes, offset: int) -> list[MultiResult]:
    """Decode a multi reply into one result per op (errors as their code)."""
    results: list[MultiResult] = []
    op, done, _err = _MULTI_HEADER.unpack_from(body, offset)
    offset += _MULTI_HEADER.size
    while not done:
        if op == OP_ERROR:
            (code,) = _INT.unpack_from(body, offset)
            offset += _INT.size
            results.append(MultiResult(op, code, None))
        else:
            cls = response_xref[op]
            part, offset = cls.parse(body, offset)
            results.append(MultiResult(op, 0, part))
        op, done, _err = _MULTI_HEADER.unpack_from(body, offset)
        offset += _MULTI_HEADER.size
    return results
