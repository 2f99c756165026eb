"""FaultProxy's view of the wire: frames, request headers, which requests a drop takes."""

from __future__ import annotations

import itertools
import struct

from hypothesis import given
from hypothesis import strategies as st

from aiocoord.testing import FrameBuffer
from aiocoord.testing.faults import default_drop_predicate, reply_xid, request_header


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=7000), max_size=30),
)
def test_frames_survive_any_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(p) for p in payloads)
    points = sorted({c for c in cuts if c < len(stream)} | {0, len(stream)})
    buffer = FrameBuffer()
    got: list[bytes] = []
    for start, end in itertools.pairwise(points):
        got.extend(buffer.feed(stream[start:end]))
    assert got == [frame(p) for p in payloads]
    assert buffer.buffered == 0
    assert not buffer.raw


def test_partial_frame_is_held_back() -> None:
    buffer = FrameBuffer()
    whole = frame(b"abcdef")
    assert buffer.feed(whole[:5]) == []
    assert buffer.buffered == 5
    assert buffer.feed(whole[5:] + whole[:2]) == [whole]
    assert buffer.buffered == 2


def test_implausible_length_switches_to_raw_bytes() -> None:
    buffer = FrameBuffer()
    assert buffer.feed(b"ruok") == [b"ruok"]  # a four-letter word is no frame
    assert buffer.raw
    assert buffer.feed(b"more") == [b"more"]


def test_headers_are_read_after_the_length() -> None:
    request = frame(struct.pack(">ii", 7, 1) + b"/path")
    assert request_header(request) == (7, 1)
    assert request_header(frame(b"\x00")) is None
    reply = frame(struct.pack(">iqi", 7, 42, 0))
    assert reply_xid(reply) == 7
    assert reply_xid(frame(b"")) is None


def test_default_drop_takes_ordinary_requests_only() -> None:
    assert default_drop_predicate(1, 1)  # create
    assert not default_drop_predicate(-2, 11)  # ping
    assert not default_drop_predicate(-4, 100)  # auth
    assert not default_drop_predicate(-8, 101)  # setWatches
    assert not default_drop_predicate(9, -11)  # closeSession
