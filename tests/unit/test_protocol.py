"""The codec: opcodes aiozk lacks, connect replies, multi, and garbage handling."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiocoord import _protocol as wire
from aiocoord.errors import ProtocolError


def test_new_opcodes_do_not_replace_aiozk_ones() -> None:
    from aiozk.protocol.response import response_xref

    for opcode in (19, 21, 103, 104, 105, 106, 107):
        assert response_xref[opcode].__module__ == "aiocoord._protocol"
    assert response_xref[1].__module__.startswith("aiozk")


def test_encode_frames_xid_and_opcode() -> None:
    frame = wire.encode(7, wire.GetAllChildrenNumberRequest(path="/a"))
    size, xid, opcode = struct.unpack_from("!iii", frame)
    assert size == len(frame) - 4
    assert (xid, opcode) == (7, wire.OP_GET_ALL_CHILDREN_NUMBER)


def test_connect_roundtrip_with_read_only_flag() -> None:
    body = struct.pack("!iiqi", 0, 4000, 0x1234, 16) + b"p" * 16 + b"\x01"
    reply = wire.decode_connect(body)
    assert reply == wire.ConnectReply(4000, 0x1234, b"p" * 16, True)
    old_server = wire.decode_connect(body[:-1])
    assert old_server.read_only is False


def test_connect_request_layout() -> None:
    frame = wire.encode_connect(
        last_zxid=5, timeout_ms=3000, session_id=9, password=b"x" * 16, read_only=True
    )
    assert struct.unpack_from("!iiqiq", frame) == (len(frame) - 4, 0, 5, 3000, 9)
    assert frame.endswith(b"\x01")


def test_multi_request_and_reply() -> None:
    from aiozk.protocol import CheckVersionRequest, DeleteRequest

    req = wire.MultiRequest(
        [CheckVersionRequest(path="/a", version=1), DeleteRequest(path="/b", version=-1)]
    )
    raw = req.serialize(3)
    assert struct.unpack_from("!ii", raw) == (3, wire.OP_MULTI)
    assert raw.endswith(struct.pack("!i?i", -1, True, -1))
    reply = (
        struct.pack("!i?i", -1, False, 0)
        + struct.pack("!i", 0)
        + struct.pack("!i?i", -1, False, -101)
        + struct.pack("!i", -101)
        + struct.pack("!i?i", -1, True, -1)
    )
    results = wire.decode_multi(reply, 0)
    assert [r.err for r in results] == [0, -101]


@settings(max_examples=300)
@given(st.sampled_from(sorted(wire.OP_NAMES)), st.binary(max_size=64))
def test_garbage_bodies_raise_protocol_error_or_decode(opcode: int, junk: bytes) -> None:
    frame = struct.pack("!iqi", 1, 1, 0) + junk
    # Either a value or the typed error: never struct.error, IndexError, ...
    with contextlib.suppress(ProtocolError):
        wire.decode_body(opcode, frame, wire.REPLY_HEADER_SIZE)


@given(st.binary(max_size=40))
def test_garbage_watch_and_connect_frames(junk: bytes) -> None:
    for decode in (lambda b: wire.decode_watch(b, 0), wire.decode_connect):
        with contextlib.suppress(ProtocolError):
            decode(junk)


def test_short_reply_header_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        wire.decode_reply_header(b"\x00\x01")


path_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), min_codepoint=0x20), max_size=30
).map(lambda t: "/" + t)


@given(path_text, st.booleans(), st.binary(max_size=50), st.integers(-1, 2**31 - 1))
def test_fast_encoders_match_aiozk_byte_for_byte(
    path: str, watch: bool, data: bytes, version: int
) -> None:
    from aiozk.protocol import (
        Create2Request,
        DeleteRequest,
        ExistsRequest,
        GetChildren2Request,
        GetDataRequest,
        SetDataRequest,
    )
    from aiozk.protocol.acl import ACL, ID

    acl = [
        ACL(perms=31, id=ID(scheme="world", id="anyone")),
        ACL(perms=1, id=ID(scheme="ip", id="::1")),
    ]
    requests = [
        GetDataRequest(path=path, watch=watch),
        ExistsRequest(path=path, watch=watch),
        GetChildren2Request(path=path, watch=watch),
        DeleteRequest(path=path, version=version),
        SetDataRequest(path=path, data=data, version=version),
        Create2Request(path=path, data=data, acl=acl, flags=3),
    ]
    for request in requests:
        body = request.serialize(42)
        assert wire.encode(42, request) == struct.pack("!i", len(body)) + body


@given(st.binary(max_size=60), st.lists(path_text, max_size=5))
def test_fast_decoders_match_aiozk(data: bytes, names: list[str]) -> None:
    from aiozk.protocol.response import response_xref

    stat = struct.pack("!qqqqiiiqiiq", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    header = struct.pack("!iqi", 1, 2, 0)
    children = struct.pack("!i", len(names)) + b"".join(
        struct.pack("!i", len(n.encode())) + n.encode() for n in names
    )
    cases = {
        wire.OP_GET_DATA: struct.pack("!i", len(data)) + data + stat,
        wire.OP_EXISTS: stat,
        wire.OP_GET_CHILDREN2: children + stat,
        wire.OP_CREATE2: struct.pack("!i", 2) + b"/x" + stat,
    }
    for opcode, payload in cases.items():
        fast = wire.decode_body(opcode, header + payload, wire.REPLY_HEADER_SIZE)
        slow, _ = response_xref[opcode].parse(header + payload, wire.REPLY_HEADER_SIZE)
        assert wire.stat_from(fast.stat) == wire.stat_from(slow.stat)
        for field in ("data", "children", "path"):
            if hasattr(slow, field):
                assert getattr(fast, field) == getattr(slow, field)
