"""The wire records: byte for byte against aiozk's Jute classes wherever aiozk has the record
(ours encode -> aiozk decodes, aiozk encodes -> ours decode), round trips and exact layouts
where it has not, garbage handling, and hygiene: importing and using aiocoord neither imports
aiozk nor touches its process-wide response table."""

from __future__ import annotations

import contextlib
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from aiozk import exc as zexc
from aiozk import protocol as z
from aiozk.protocol.acl import ACL as ZACL
from aiozk.protocol.acl import ID as ZID
from aiozk.protocol.stat import Stat as ZStat
from hypothesis import given, settings
from hypothesis import strategies as st
from wire_samples import OPEN, SAMPLES

import aiocoord
from aiocoord._wire.auth import (
    AuthRequest,
    ClientInfo,
    SaslRequest,
    SaslResponse,
    WhoAmIRequest,
    WhoAmIResponse,
)
from aiocoord._wire.data import ACL, Stat
from aiocoord._wire.framing import (
    EMPTY,
    REPLY_HEADER_SIZE,
    Request,
    decode_body,
    decode_reply_header,
)
from aiocoord._wire.handshake import (
    CloseRequest,
    ConnectRequest,
    ConnectResponse,
    PingRequest,
    decode_connect,
)
from aiocoord._wire.multi import (
    MultiReadRequest,
    MultiReadResponse,
    MultiRequest,
    MultiResponse,
    MultiResult,
)
from aiocoord._wire.opcodes import OP_NAMES, Op, Xid
from aiocoord._wire.reads import (
    ExistsRequest,
    ExistsResponse,
    GetACLRequest,
    GetACLResponse,
    GetAllChildrenNumberRequest,
    GetAllChildrenNumberResponse,
    GetChildren2Request,
    GetChildren2Response,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    GetEphemeralsRequest,
    GetEphemeralsResponse,
    SyncRequest,
    SyncResponse,
)
from aiocoord._wire.watches import (
    AddWatchRequest,
    RemoveWatchesRequest,
    SetWatches2Request,
    SetWatchesRequest,
    WatchNotification,
    decode_watch,
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
    SetACLRequest,
    SetACLResponse,
    SetDataRequest,
    SetDataResponse,
)
from aiocoord.acl import OPEN_ACL_UNSAFE, wire_acl
from aiocoord.errors import ProtocolError

LEN = struct.Struct("!i")
HEADER = struct.Struct("!iqi")

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
paths = text.map(lambda t: "/" + t)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
acls = st.lists(st.builds(ACL, st.integers(0, 31), text, text), max_size=3)
stats = st.builds(Stat, int64, int64, int64, int64, int32, int32, int32, int64, int32, int32, int64)
names = st.lists(text, max_size=5)
xids = st.integers(1, 2**31 - 1)


# --- aiozk's side -------------------------------------------------------------------------------


def zstat(s: Stat) -> ZStat:
    return ZStat(
        created_zxid=s.czxid,
        last_modified_zxid=s.mzxid,
        created=s.ctime,
        modified=s.mtime,
        version=s.version,
        child_version=s.cversion,
        acl_version=s.aversion,
        ephemeral_owner=s.ephemeral_owner,
        data_length=s.data_length,
        num_children=s.num_children,
        last_modified_children=s.pzxid,
    )


def zacl(acl: list[ACL]) -> list[ZACL]:
    return [ZACL(perms=a.perms, id=ZID(scheme=a.scheme, id=a.id)) for a in acl]


def rendered(part: Any) -> bytes:
    """aiozk's encoding of a record (its requests add xid and opcode in ``serialize``)."""
    fmt, data = part.render()
    return struct.pack("!" + fmt, *data)


def same_request(ours: Request[Any], theirs: Any, xid: int) -> None:
    raw = theirs.serialize(xid)
    frame = ours.frame(xid)
    assert frame == LEN.pack(len(raw)) + raw  # byte-equal
    assert ours.encode() == raw[8:]
    decoded, end = type(ours).decode(raw, 8)  # type: ignore[attr-defined]
    assert (decoded, end) == (ours, len(raw))  # aiozk's bytes, read by us
    parsed, end = type(theirs).parse(frame, 12)
    assert end == len(frame)
    assert parsed == theirs  # our bytes, read by aiozk


def same_reply(ours: Any, theirs: Any, request: Request[Any] | None = None) -> None:
    raw = rendered(theirs)
    assert ours.encode() == raw
    assert type(ours).decode(raw, 0) == (ours, len(raw))
    parsed, end = type(theirs).parse(ours.encode(), 0)
    assert end == len(raw)
    assert parsed == theirs
    if request is not None:  # the hot path: the request decodes its reply frame
        assert decode_body(request, HEADER.pack(1, 2, 0) + raw) == ours


# --- requests, against aiozk --------------------------------------------------------------------


@given(paths, st.booleans(), xids)
def test_path_and_watch_requests_match_aiozk(path: str, watch: bool, xid: int) -> None:
    same_request(ExistsRequest(path, watch), z.ExistsRequest(path=path, watch=watch), xid)
    same_request(GetDataRequest(path, watch), z.GetDataRequest(path=path, watch=watch), xid)
    same_request(GetChildrenRequest(path, watch), z.GetChildrenRequest(path=path, watch=watch), xid)
    same_request(
        GetChildren2Request(path, watch), z.GetChildren2Request(path=path, watch=watch), xid
    )


@given(paths, int32, xids)
def test_path_and_version_requests_match_aiozk(path: str, version: int, xid: int) -> None:
    same_request(DeleteRequest(path, version), z.DeleteRequest(path=path, version=version), xid)
    same_request(
        CheckVersionRequest(path, version),
        z.CheckVersionRequest(path=path, version=version),
        xid,
    )
    same_request(GetACLRequest(path), z.GetACLRequest(path=path), xid)
    same_request(SyncRequest(path), z.SyncRequest(path=path), xid)
    same_request(
        RemoveWatchesRequest(path, version), z.RemoveWatchesRequest(path=path, type=version), xid
    )


@given(paths, st.binary(max_size=40), acls, st.integers(0, 6), int32, xids)
def test_writes_match_aiozk(
    path: str, data: bytes, acl: list[ACL], flags: int, version: int, xid: int
) -> None:
    same_request(
        CreateRequest(path, data, acl, flags),
        z.CreateRequest(path=path, data=data, acl=zacl(acl), flags=flags),
        xid,
    )
    same_request(
        Create2Request(path, data, acl, flags),
        z.Create2Request(path=path, data=data, acl=zacl(acl), flags=flags),
        xid,
    )
    same_request(
        SetDataRequest(path, data, version),
        z.SetDataRequest(path=path, data=data, version=version),
        xid,
    )
    same_request(
        SetACLRequest(path, acl, version),
        z.SetACLRequest(path=path, acl=zacl(acl), version=version),
        xid,
    )


@given(paths, st.binary(max_size=40), st.integers(0, 6), xids)
def test_creates_with_no_acl_given_send_open_acl_unsafe_as_aiozk_writes_it(
    path: str, data: bytes, flags: int, xid: int
) -> None:
    # A create given no ACL sends the OPEN_ACL_UNSAFE constant, whose encoding is made once.
    acl = wire_acl(None)
    assert acl is OPEN_ACL_UNSAFE and list(acl) == OPEN
    assert wire_acl(OPEN_ACL_UNSAFE) is OPEN_ACL_UNSAFE
    same_request(
        Create2Request(path, data, OPEN, flags),
        z.Create2Request(path=path, data=data, acl=zacl(OPEN), flags=flags),
        xid,
    )
    assert Create2Request(path, data, acl, flags).frame(xid) == (
        Create2Request(path, data, OPEN, flags).frame(xid)
    )


@given(int64, names, names, names, text, st.binary(max_size=20))
def test_session_requests_match_aiozk(
    zxid: int, data: list[str], exist: list[str], child: list[str], scheme: str, auth: bytes
) -> None:
    same_request(
        SetWatchesRequest(zxid, data, exist, child),
        z.SetWatchesRequest(
            relative_zxid=zxid, data_watches=data, exist_watches=exist, child_watches=child
        ),
        Xid.SET_WATCHES,
    )
    same_request(
        AuthRequest(0, scheme, auth), z.AuthRequest(type=0, scheme=scheme, auth=auth), Xid.AUTH
    )
    same_request(CloseRequest(), z.CloseRequest(), 9)
    same_request(PingRequest(), z.PingRequest(), Xid.PING)


@given(int64, int32, int64, st.binary(min_size=16, max_size=16), st.booleans())
def test_connect_request_matches_aiozk(
    zxid: int, timeout_ms: int, session_id: int, password: bytes, read_only: bool
) -> None:
    ours = ConnectRequest(0, zxid, timeout_ms, session_id, password, read_only)
    raw = z.ConnectRequest(
        protocol_version=0,
        last_seen_zxid=zxid,
        timeout=timeout_ms,
        session_id=session_id,
        password=password,
        read_only=read_only,
    ).serialize()
    assert ours.frame() == LEN.pack(len(raw)) + raw
    assert ConnectRequest.decode(raw, 0) == (ours, len(raw))


@given(paths, st.binary(max_size=20), acls, int32, xids)
def test_multi_request_matches_aiozk(
    path: str, data: bytes, acl: list[ACL], version: int, xid: int
) -> None:
    ops = [
        Create2Request(path, data, acl, 2),
        SetDataRequest(path, data, version),
        CheckVersionRequest(path, version),
        DeleteRequest(path, version),
    ]
    theirs = z.TransactionRequest()
    theirs.add(z.Create2Request(path=path, data=data, acl=zacl(acl), flags=2))
    theirs.add(z.SetDataRequest(path=path, data=data, version=version))
    theirs.add(z.CheckVersionRequest(path=path, version=version))
    theirs.add(z.DeleteRequest(path=path, version=version))
    raw = theirs.serialize(xid)
    ours = MultiRequest(ops)
    assert ours.frame(xid) == LEN.pack(len(raw)) + raw
    assert MultiRequest.decode(raw, 8) == (ours, len(raw))


# --- replies, against aiozk ---------------------------------------------------------------------


@given(stats, paths, st.binary(max_size=40), names, acls)
def test_replies_match_aiozk(
    stat: Stat, path: str, data: bytes, children: list[str], acl: list[ACL]
) -> None:
    zs = zstat(stat)
    same_reply(ExistsResponse(stat), z.ExistsResponse(stat=zs), ExistsRequest(path))
    same_reply(
        GetDataResponse(data, stat), z.GetDataResponse(data=data, stat=zs), SAMPLES[Op.GET_DATA]
    )
    same_reply(SetDataResponse(stat), z.SetDataResponse(stat=zs), SAMPLES[Op.SET_DATA])
    same_reply(
        GetChildrenResponse(children),
        z.GetChildrenResponse(children=children),
        SAMPLES[Op.GET_CHILDREN],
    )
    same_reply(
        GetChildren2Response(children, stat),
        z.GetChildren2Response(children=children, stat=zs),
        SAMPLES[Op.GET_CHILDREN2],
    )
    same_reply(CreateResponse(path), z.CreateResponse(path=path), SAMPLES[Op.CREATE])
    same_reply(
        Create2Response(path, stat), z.Create2Response(path=path, stat=zs), SAMPLES[Op.CREATE2]
    )
    same_reply(
        GetACLResponse(acl, stat),
        z.GetACLResponse(acl=zacl(acl), stat=zs),
        SAMPLES[Op.GET_ACL],
    )
    same_reply(SetACLResponse(stat), z.SetACLResponse(stat=zs), SAMPLES[Op.SET_ACL])
    same_reply(SyncResponse(path), z.SyncResponse(path=path), SAMPLES[Op.SYNC])


@given(st.integers(-1, 4), st.integers(-112, 6), paths)
def test_watch_event_matches_aiozk(etype: int, state: int, path: str) -> None:
    same_reply(
        WatchNotification(etype, state, path), z.WatchEvent(type=etype, state=state, path=path)
    )
    frame = HEADER.pack(Xid.WATCH, 5, 0) + WatchNotification(etype, state, path).encode()
    assert decode_watch(frame, REPLY_HEADER_SIZE) == WatchNotification(etype, state, path)


@given(int32, int64, st.binary(max_size=16))
def test_connect_reply_matches_aiozk_which_lacks_read_only(
    timeout_ms: int, session_id: int, password: bytes
) -> None:
    theirs = z.ConnectResponse(
        protocol_version=0, timeout=timeout_ms, session_id=session_id, password=password
    )
    raw = rendered(theirs)
    assert decode_connect(raw) == ConnectResponse(0, timeout_ms, session_id, password, False)
    ours = ConnectResponse(0, timeout_ms, session_id, password, True)
    assert ours.encode() == raw + b"\x01"
    assert decode_connect(ours.encode()) == ours
    assert z.ConnectResponse.parse(ours.encode(), 0)[0] == theirs


def test_empty_replies_match_aiozk() -> None:
    for theirs in (
        z.DeleteResponse(),
        z.CheckVersionResponse(),
        z.CloseResponse(),
        z.SetWatchesResponse(),
        z.RemoveWatchesResponse(),
        z.AuthResponse(),
    ):
        assert EMPTY.encode() == rendered(theirs) == b""
    for op in (Op.DELETE, Op.CHECK, Op.CLOSE, Op.REMOVE_WATCHES, Op.ADD_WATCH, Op.SET_WATCHES):
        assert decode_body(SAMPLES[op], HEADER.pack(1, 2, 0)) is EMPTY


@given(paths, stats)
def test_multi_reply_decodes_as_aiozk_decodes_it(path: str, stat: Stat) -> None:
    ours = MultiResponse(
        [
            MultiResult(Op.CREATE2, 0, Create2Response(path, stat)),
            MultiResult(Op.CREATE, 0, CreateResponse(path)),
            MultiResult(Op.SET_DATA, 0, SetDataResponse(stat)),
            MultiResult(Op.CHECK, 0, EMPTY),
            MultiResult(Op.DELETE, 0, EMPTY),
        ]
    )
    raw = ours.encode()
    assert decode_body(SAMPLES[Op.MULTI], HEADER.pack(1, 2, 0) + raw) == ours
    theirs = z.TransactionResponse.deserialize(raw).responses
    assert theirs == [
        z.Create2Response(path=path, stat=zstat(stat)),
        z.CreateResponse(path=path),
        z.SetDataResponse(stat=zstat(stat)),
        z.CheckVersionResponse(),
        z.DeleteResponse(),
    ]
    failed = MultiResponse([MultiResult(Op.ERROR, 0, None), MultiResult(Op.ERROR, -101, None)])
    assert [type(e) for e in z.TransactionResponse.deserialize(failed.encode()).responses] == [
        type(zexc.get_response_error(0)),
        zexc.NoNode,
    ]


# --- records aiozk lacks (or cannot encode): round trips and exact layouts ----------------------


def ustring(s: str) -> bytes:
    return LEN.pack(len(s.encode())) + s.encode()


@pytest.mark.parametrize("op", sorted(SAMPLES))
def test_every_request_frames_its_xid_and_opcode_and_reads_back(op: int) -> None:
    request = SAMPLES[op]
    frame = request.frame(77)
    size, xid, opcode = struct.unpack_from("!iii", frame)
    assert (size, xid, opcode) == (len(frame) - 4, 77, op)
    assert frame[12:] == request.encode()
    assert type(request).decode(frame, 12) == (request, len(frame))  # type: ignore[attr-defined]


def test_layouts_of_records_aiozk_lacks() -> None:
    acl = LEN.pack(1) + LEN.pack(31) + ustring("world") + ustring("anyone")
    base = ustring("/c") + LEN.pack(0) + acl + LEN.pack(4)
    assert CreateContainerRequest("/c", b"", OPEN, 4).encode() == base
    ttl = CreateTTLRequest("/c", b"", OPEN, 5, 5000).encode()
    assert ttl == ustring("/c") + LEN.pack(0) + acl + LEN.pack(5) + struct.pack("!q", 5000)
    assert AddWatchRequest("/a", 1).encode() == ustring("/a") + LEN.pack(1)
    assert GetEphemeralsRequest("/p").encode() == ustring("/p")
    assert GetAllChildrenNumberRequest("/a").encode() == ustring("/a")
    assert WhoAmIRequest().encode() == b""
    assert SaslRequest(b"tok").encode() == LEN.pack(3) + b"tok"
    vectors = [["/d"], [], ["/c"], ["/p"], ["/r"]]
    assert SetWatches2Request(9, *vectors).encode() == struct.pack("!q", 9) + b"".join(
        LEN.pack(len(v)) + b"".join(ustring(p) for p in v) for v in vectors
    )


def test_replies_aiozk_lacks_round_trip() -> None:
    stat = Stat(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    cases: list[tuple[Request[Any], Any]] = [
        (SAMPLES[Op.CREATE_CONTAINER], Create2Response("/c", stat)),
        (SAMPLES[Op.CREATE_TTL], Create2Response("/t", stat)),
        (SAMPLES[Op.GET_EPHEMERALS], GetEphemeralsResponse(["/e", "/f"])),
        (SAMPLES[Op.GET_ALL_CHILDREN_NUMBER], GetAllChildrenNumberResponse(7)),
        (SAMPLES[Op.WHO_AM_I], WhoAmIResponse([ClientInfo("digest", "u"), ClientInfo("ip", "")])),
        (SAMPLES[Op.SASL], SaslResponse(b"challenge")),
    ]
    for request, reply in cases:
        raw = reply.encode()
        assert decode_body(request, HEADER.pack(1, 2, 0) + raw) == reply
        assert type(reply).decode(raw, 0) == (reply, len(raw))
    assert GetAllChildrenNumberResponse(7).encode() == LEN.pack(7)
    assert SaslResponse.decode(LEN.pack(-1), 0) == (SaslResponse(b""), 4)  # null token


def test_null_data_reads_as_empty() -> None:
    stat = Stat(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    frame = HEADER.pack(1, 2, 0) + LEN.pack(-1) + stat.encode()
    assert decode_body(GetDataRequest("/a"), frame) == GetDataResponse(b"", stat)


def test_connect_reply_with_and_without_read_only() -> None:
    body = struct.pack("!iiqi", 0, 4000, 0x1234, 16) + b"p" * 16 + b"\x01"
    assert decode_connect(body) == ConnectResponse(0, 4000, 0x1234, b"p" * 16, True)
    assert decode_connect(body[:-1]).read_only is False


def test_multi_request_and_failed_reply_layout() -> None:
    raw = MultiRequest([CheckVersionRequest("/a", 1), DeleteRequest("/b", -1)]).frame(3)
    assert struct.unpack_from("!iii", raw)[1:] == (3, Op.MULTI)
    assert raw.endswith(struct.pack("!i?i", -1, True, -1))
    reply = (
        struct.pack("!i?i", -1, False, 0)
        + struct.pack("!i", 0)
        + struct.pack("!i?i", -1, False, -101)
        + struct.pack("!i", -101)
        + struct.pack("!i?i", -1, True, -1)
    )
    results = MultiResponse.decode(reply, 0)[0].results
    assert [(r.opcode, r.err, r.body) for r in results] == [(-1, 0, None), (-1, -101, None)]


@given(st.binary(max_size=50), stats)
def test_multi_read_round_trips_each_result_failing_alone(data: bytes, stat: Stat) -> None:
    request = MultiReadRequest([GetDataRequest("/a", False), GetChildrenRequest("/b", False)])
    raw = request.encode()
    # Each read: a multi header (its opcode, not done, -1), then its own body; a done header.
    assert struct.unpack_from("!i?i", raw) == (Op.GET_DATA, False, -1)
    assert raw.endswith(struct.pack("!i?i", -1, True, -1))
    ours = MultiReadResponse(
        [(0, GetDataResponse(data, stat)), (-101, None), (0, GetChildrenResponse(["x", "y"]))]
    )
    decoded = decode_body(request, HEADER.pack(1, 2, 0) + ours.encode())
    assert decoded == ours


# --- garbage ------------------------------------------------------------------------------------


@settings(max_examples=300)
@given(st.sampled_from(sorted(OP_NAMES)), st.binary(max_size=64))
def test_garbage_bodies_raise_protocol_error_or_decode(opcode: int, junk: bytes) -> None:
    frame = HEADER.pack(1, 1, 0) + junk
    # Either a value or the typed error: never struct.error, IndexError, UnicodeDecodeError...
    with contextlib.suppress(ProtocolError):
        decode_body(SAMPLES[opcode], frame)


@given(st.binary(max_size=40))
def test_garbage_watch_and_connect_frames(junk: bytes) -> None:
    for decode in (lambda b: decode_watch(b, 0), decode_connect):
        with contextlib.suppress(ProtocolError):
            decode(junk)


def test_impossible_lengths_are_protocol_errors() -> None:
    header = HEADER.pack(1, 1, 0)
    with pytest.raises(ProtocolError):
        decode_reply_header(b"\x00\x01")
    with pytest.raises(ProtocolError):  # a child count the frame cannot hold
        decode_body(GetChildrenRequest("/"), header + LEN.pack(10**6))
    with pytest.raises(ProtocolError):  # a string longer than the frame
        decode_body(SyncRequest("/"), header + LEN.pack(50) + b"/x")
    with pytest.raises(ProtocolError):  # a transaction result no transaction op has
        decode_body(SAMPLES[Op.MULTI], header + struct.pack("!i?i", Op.GET_DATA, False, 0))


# --- the public names ---------------------------------------------------------------------------


def test_public_stat_and_acl_keep_their_fields() -> None:
    assert aiocoord.Stat is Stat and aiocoord.ACL is ACL
    stat = aiocoord.Stat(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    assert (stat.czxid, stat.ephemeral_owner, stat.pzxid, stat.is_ephemeral) == (1, 8, 11, True)
    acl = aiocoord.ACL(aiocoord.ACL.READ | aiocoord.ACL.WRITE, "world", "anyone")
    assert (acl.perms, acl.scheme, acl.id, aiocoord.ACL.ALL) == (3, "world", "anyone", 31)
    with pytest.raises(AttributeError):
        acl.perms = 1  # type: ignore[misc]


# --- hygiene: aiozk is neither imported nor touched ---------------------------------------------


def test_no_aiocoord_class_is_in_aiozks_response_table() -> None:
    from aiozk.protocol.response import response_xref

    assert all(cls.__module__.startswith("aiozk.") for cls in response_xref.values())


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent,  # for wire_samples
    )


def test_importing_every_aiocoord_module_imports_no_aiozk() -> None:
    done = _python(
        """
        import importlib, pkgutil, sys
        import aiocoord
        for module in pkgutil.walk_packages(aiocoord.__path__, "aiocoord."):
            importlib.import_module(module.name)
        print(sorted(m for m in sys.modules if m.split(".")[0] == "aiozk"))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_aiocoord_leaves_aiozks_response_table_as_it_found_it() -> None:
    done = _python(
        """
        import aiozk
        from aiozk.protocol.response import response_xref
        before = dict(response_xref)

        import aiocoord
        from aiocoord._wire.framing import decode_body
        from aiocoord._wire.multi import MultiResponse, MultiResult
        from aiocoord._wire.writes import Create2Response
        from wire_samples import SAMPLES

        stat = aiocoord.Stat(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
        for request in SAMPLES.values():
            request.frame(1)
        multi = MultiResponse([MultiResult(15, 0, Create2Response("/a", stat))])
        decode_body(SAMPLES[14], bytes(16) + multi.encode())

        assert response_xref.keys() == before.keys(), set(response_xref) ^ set(before)
        assert all(response_xref[k] is before[k] for k in before)
        print("untouched")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "untouched"
