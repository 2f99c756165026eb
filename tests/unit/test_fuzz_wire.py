"""Wire robustness: garbage from the server raises ProtocolError and drops the connection
cleanly; never a hang, a crash, or a future resolved with another request's reply.

Three levels: the decoders alone (mutated valid replies), a real :class:`Connection` on a
socket to a scripted peer (garbage in every place of a reply stream, split at random), and a
real client whose server answers one request with garbage.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from dataclasses import dataclass

import pytest
from fake_zookeeper import (
    HEADER,
    LEN,
    FakeZooKeeper,
    Sink,
    frame,
    get_data_body,
    reply,
    stat_bytes,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_samples import SAMPLES

from aiocoord import State, connect
from aiocoord._session.connection import MAX_FRAME, Connection, Reply
from aiocoord._wire.framing import decode_body, decode_reply_header
from aiocoord._wire.handshake import decode_connect
from aiocoord._wire.opcodes import Op, Xid
from aiocoord._wire.reads import GetDataRequest
from aiocoord._wire.watches import WatchNotification, decode_watch
from aiocoord.errors import ConnectionLossError, ProtocolError
from aiocoord.retry import NoRetry

# --- the decoders ------------------------------------------------------------------------------


def _ustring(s: str) -> bytes:
    raw = s.encode()
    return LEN.pack(len(raw)) + raw


def _vector(items: list[bytes]) -> bytes:
    return LEN.pack(len(items)) + b"".join(items)


def _multi_reply() -> bytes:
    head = struct.Struct(">i?i")
    return (
        head.pack(Op.CREATE2, False, 0)
        + _ustring("/a")
        + stat_bytes()
        + head.pack(Op.SET_DATA, False, 0)
        + stat_bytes(version=1)
        + head.pack(-1, False, -101)
        + LEN.pack(-101)
        + head.pack(-1, True, -1)
    )


#: A valid reply body per opcode, to mutate.
VALID = {
    Op.CREATE: _ustring("/a"),
    Op.CREATE2: _ustring("/a") + stat_bytes(),
    Op.EXISTS: stat_bytes(),
    Op.GET_DATA: get_data_body(b"hello"),
    Op.SET_DATA: stat_bytes(version=3),
    Op.GET_ACL: _vector([LEN.pack(31) + _ustring("world") + _ustring("anyone")]) + stat_bytes(),
    Op.GET_CHILDREN: _vector([_ustring("a"), _ustring("b")]),
    Op.GET_CHILDREN2: _vector([_ustring("a")]) + stat_bytes(),
    Op.MULTI: _multi_reply(),
    Op.CREATE_CONTAINER: _ustring("/c") + stat_bytes(),
    Op.GET_EPHEMERALS: _vector([_ustring("/e")]),
    Op.GET_ALL_CHILDREN_NUMBER: LEN.pack(7),
    Op.WHO_AM_I: _vector([_ustring("digest") + _ustring("u")]),
}

BOUNDARY_INTS = [-1, -(2**31), 2**31 - 1, 0x7FFFFF00, 1 << 24, 0]


def test_valid_bodies_decode() -> None:
    for opcode, body in VALID.items():
        decode_body(SAMPLES[opcode], HEADER.pack(1, 1, 0) + body)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(
    opcode=st.sampled_from(sorted(VALID)),
    mutation=st.sampled_from(["truncate", "flip", "int", "append"]),
    where=st.integers(min_value=0, max_value=200),
    value=st.integers(min_value=0, max_value=255),
    boundary=st.sampled_from(BOUNDARY_INTS),
    junk=st.binary(min_size=1, max_size=16),
)
def test_mutated_replies_decode_or_raise_protocol_error(
    opcode: int, mutation: str, where: int, value: int, boundary: int, junk: bytes
) -> None:
    body = bytearray(VALID[opcode])
    i = where % max(len(body), 1)
    if mutation == "truncate":
        body = body[:i]
    elif mutation == "flip":
        body[i] = value
    elif mutation == "int":
        body[i : i + 4] = struct.pack(">i", boundary)
    else:
        body += junk
    raw = HEADER.pack(1, 1, 0) + bytes(body)
    # ProtocolError is the one typed failure; anything else (struct.error...) fails the test.
    with contextlib.suppress(ProtocolError):
        decode_body(SAMPLES[opcode], raw)


@settings(max_examples=300)
@given(st.binary(max_size=48), st.sampled_from(BOUNDARY_INTS))
def test_garbage_watch_events_and_headers(junk: bytes, boundary: int) -> None:
    for raw in (junk, struct.pack(">ii", 1, 3) + struct.pack(">i", boundary) + junk):
        for decode in (
            lambda b: decode_watch(b, 0),
            decode_connect,
            decode_reply_header,
        ):
            with contextlib.suppress(ProtocolError):
                decode(raw)


# --- a real Connection over a socket -----------------------------------------------------------

FAULTS = [
    "none",
    "unknown_xid",
    "garbage_body",
    "negative_length",
    "huge_length",
    "short_frame",
    "garbage_watch",
    "truncated_then_close",
]


@dataclass(frozen=True)
class Script:
    """What the peer answers: replies in ``order`` (indexes of requests), a valid watch event
    before reply number ``watch_at``, the fault before reply number ``fault_at``, and the
    whole stream cut into pieces of ``chunks`` bytes (cycled)."""

    n: int
    order: list[int]
    fault: str
    fault_at: int
    victim: int
    watch_at: int
    chunks: list[int]


@st.composite
def scripts(draw: st.DrawFn) -> Script:
    n = draw(st.integers(min_value=1, max_value=6))
    order = draw(st.permutations(list(range(n))))
    return Script(
        n=n,
        order=list(order),
        fault=draw(st.sampled_from(FAULTS)),
        fault_at=draw(st.integers(min_value=0, max_value=n)),
        victim=draw(st.integers(min_value=0, max_value=n - 1)),
        watch_at=draw(st.integers(min_value=0, max_value=n)),
        chunks=draw(st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=6)),
    )


def _data_of(xid: int) -> bytes:
    return f"reply-to-{xid}".encode()


async def _exchange(script: Script) -> None:
    watches: list[WatchNotification] = []
    async with FakeZooKeeper(lambda _x, _o, _b: None) as peer_server:
        conn, _ = await Connection.open(
            "127.0.0.1",
            peer_server.port,
            timeout=5,
            session_id=0,
            password=b"\0" * 16,
            session_timeout_ms=10000,
            last_zxid=0,
            read_only=False,
            on_watch=watches.append,
            on_zxid=lambda _z: None,
        )
        try:
            await asyncio.wait_for(peer_server.connected.wait(), 5)
            peer = peer_server.peers[0]
            xids = [100 + i for i in range(script.n)]
            futures = {x: conn.send(x, GetDataRequest(path=f"/n{x}", watch=False)) for x in xids}
            for _ in xids:
                await asyncio.wait_for(peer.requests.get(), 5)
            stream, expect, dying = _stream(script, xids)
            for piece in _pieces(stream, script.chunks):
                peer.writer.write(piece)
                await peer.writer.drain()
            if script.fault == "truncated_then_close":
                peer.writer.transport.close()
            pending = list(futures.values()) if dying else []
            # Never a hang: every future ends (or, without a fault, every one is answered).
            _, not_done = await asyncio.wait(
                [*futures.values(), *pending], timeout=5, return_when=asyncio.ALL_COMPLETED
            )
            assert not not_done, f"futures left hanging: {script}"
            if dying:  # the connection is dropped, without hanging either
                await asyncio.wait_for(asyncio.shield(conn.closed), 5)
            _check(script, xids, futures, expect, conn, dying)
            if script.watch_at < script.fault_at or not dying:
                assert [w.path for w in watches] == ["/watched"]
        finally:
            conn.abort()


def _stream(script: Script, xids: list[int]) -> tuple[bytes, dict[int, str], bool]:
    """The bytes the peer sends, what each xid must end with ("ok", "protocol", "loss"), and
    whether the connection must be dropped."""
    parts: list[bytes] = []
    expect: dict[int, str] = {}
    fault_frame = {
        "unknown_xid": reply(999, body=get_data_body(b"nobody asked")),
        "garbage_body": reply(xids[script.victim], body=b"\x00\x00"),
        "negative_length": LEN.pack(-5) + b"\x00" * 12,
        "huge_length": LEN.pack(MAX_FRAME + 1) + b"\x00" * 12,
        "short_frame": frame(b"\x00\x00\x00\x01"),
        "garbage_watch": reply(Xid.WATCH, body=b"\x00\x00\x00\x03\x00"),
        "truncated_then_close": LEN.pack(40) + b"\x00" * 10,
    }.get(script.fault)
    faulted = False
    for position, index in enumerate([*script.order, None]):
        if position == script.watch_at:
            event = struct.pack(">ii", 3, 3) + _ustring("/watched")
            parts.append(reply(Xid.WATCH, body=event))
        if position == script.fault_at and fault_frame is not None:
            parts.append(fault_frame)
            if script.fault == "garbage_body" and xids[script.victim] not in expect:
                expect[xids[script.victim]] = "protocol"
            # Every fault kills the link, a reply to an xid never sent (or answered already)
            # included: its zxid must not be taken for the newest state the client has seen.
            faulted = True
        if index is None:
            break
        xid = xids[index]
        if xid in expect:
            continue  # its garbage reply already went
        parts.append(reply(xid, body=get_data_body(_data_of(xid))))
        expect[xid] = "loss" if faulted else "ok"
    for xid in xids:
        expect.setdefault(xid, "loss")
    dying = faulted or script.fault == "truncated_then_close"
    return b"".join(parts), expect, dying


def _pieces(data: bytes, sizes: list[int]) -> list[bytes]:
    out, i, k = [], 0, 0
    while i < len(data):
        size = sizes[k % len(sizes)]
        out.append(data[i : i + size])
        i += size
        k += 1
    return out


def _check(
    script: Script,
    xids: list[int],
    futures: dict[int, asyncio.Future[Reply]],
    expect: dict[int, str],
    conn: Connection,
    dying: bool,
) -> None:
    for xid in xids:
        fut = futures[xid]
        if expect[xid] == "ok":
            assert fut.done() and fut.exception() is None, (xid, script, fut)
            # Its own reply, never another request's.
            assert fut.result().body.data == _data_of(xid), (xid, script)
        elif expect[xid] == "protocol":
            assert isinstance(fut.exception(), ProtocolError), (xid, script, fut)
        else:
            exc = fut.exception()
            assert isinstance(exc, ConnectionLossError), (xid, script, exc)
            assert not isinstance(exc, ProtocolError)
    if not dying:
        assert not conn.closed.done()
    elif script.fault != "truncated_then_close":
        assert isinstance(conn.closed.result(), ProtocolError), script


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts())
def test_garbage_anywhere_in_the_reply_stream_fails_only_what_it_must(script: Script) -> None:
    asyncio.run(asyncio.wait_for(_exchange(script), 20))


@pytest.mark.parametrize("fault", FAULTS[2:])
def test_each_fault_kind_drops_the_connection(fault: str) -> None:
    # The same property for every fault at a fixed place: after two good replies.
    script = Script(4, [0, 1, 2, 3], fault, 2, 3, 4, [7, 64])
    asyncio.run(asyncio.wait_for(_exchange(script), 20))


async def _large_replies(sizes: list[int], chunks: list[int]) -> None:
    async with FakeZooKeeper(lambda _x, _o, _b: None) as peer_server:
        conn, _ = await Connection.open(
            "127.0.0.1",
            peer_server.port,
            timeout=5,
            session_id=0,
            password=b"\0" * 16,
            session_timeout_ms=10000,
            last_zxid=0,
            read_only=False,
            on_watch=lambda _w: None,
            on_zxid=lambda _z: None,
        )
        try:
            await asyncio.wait_for(peer_server.connected.wait(), 5)
            peer = peer_server.peers[0]
            datas = {100 + i: bytes([i % 251]) * size for i, size in enumerate(sizes)}
            futures = {x: conn.send(x, GetDataRequest(path=f"/n{x}", watch=False)) for x in datas}
            for _ in datas:
                await asyncio.wait_for(peer.requests.get(), 5)
            stream = b"".join(reply(x, body=get_data_body(d)) for x, d in datas.items())
            for piece in _pieces(stream, chunks):
                peer.writer.write(piece)
                await peer.writer.drain()
            done, _ = await asyncio.wait(futures.values(), timeout=5)
            assert len(done) == len(futures)
            for xid, data in datas.items():
                assert futures[xid].result().body.data == data, xid
            assert not conn.closed.done()
            # The room a large frame needed is given back once it is through.
            assert len(conn._rbuf) <= 256 * 1024
        finally:
            conn.abort()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(
        st.sampled_from([0, 10, 16_000, 20_000, 70_000, 300_000]), min_size=1, max_size=5
    ),
    chunks=st.lists(st.integers(min_value=1, max_value=100_000), min_size=1, max_size=4),
)
def test_replies_larger_than_the_read_buffer_arrive_whole_in_any_split(
    sizes: list[int], chunks: list[int]
) -> None:
    """The connection reads into a buffer of its own: a reply larger than it (or than the
    size it keeps) grows it, however the stream is split, and each request gets its own."""
    asyncio.run(asyncio.wait_for(_large_replies(sizes, chunks), 20))


# --- a real client -----------------------------------------------------------------------------


async def test_client_gets_protocol_error_for_the_garbled_reply_only_and_recovers() -> None:
    """One getData is answered with garbage: that call raises ProtocolError, the calls in
    flight with it on the dropped connection are retried and answered, and the session goes
    on over a new connection (SUSPENDED, then RECONNECTED, same session)."""
    garbled = {"count": 0}

    def handler(xid: int, opcode: int, body: bytes) -> bytes | None:
        if opcode != Op.GET_DATA:
            return reply(xid, -101)
        (size,) = LEN.unpack_from(body, 8)
        path = body[12 : 12 + size].decode()
        if path == "/bad" and garbled["count"] == 0:
            garbled["count"] += 1
            return reply(xid, body=b"\x7f\xff\xff\xff junk")
        return reply(xid, body=get_data_body(path.encode()))

    async with FakeZooKeeper(handler) as server:
        client = await connect(server.connect_string, session_timeout=10)
        try:
            changes: list[tuple[State, bool]] = []
            client.add_state_listener(lambda c: changes.append((c.state, c.new_session)))
            session = client.session_id
            calls = [client.get(p) for p in ("/a", "/bad", "/b", "/c")]
            results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 10)
            assert isinstance(results[1], ProtocolError)
            assert [r[0] for r in results if not isinstance(r, BaseException)] == [
                b"/a",
                b"/b",
                b"/c",
            ]
            await client.wait_for(State.CONNECTED, 10)
            assert (State.SUSPENDED, False) in changes
            assert changes[-1] == (State.RECONNECTED, False)
            assert client.session_id == session
            data, _ = await client.get("/bad")
            assert data == b"/bad"
        finally:
            await client.close()


async def test_protocol_error_is_not_retried_even_with_a_retry_policy() -> None:
    def handler(xid: int, opcode: int, body: bytes) -> bytes | None:
        return reply(xid, body=b"\x00")  # every getData reply is garbage

    async with FakeZooKeeper(handler) as server:
        client = await connect(server.connect_string, session_timeout=10, retry=NoRetry())
        try:
            for _ in range(3):
                with pytest.raises(ProtocolError):
                    await asyncio.wait_for(client.get("/x"), 10)
        finally:
            await client.close()


def _multi_failed(code: int, n_ops: int) -> bytes:
    """A multi reply whose first op failed with ``code`` and the rest were rolled back."""
    head = struct.Struct(">i?i")
    body = head.pack(-1, False, code) + LEN.pack(code)
    for _ in range(n_ops - 1):
        body += head.pack(-1, False, -2) + LEN.pack(-2)
    return body + head.pack(-1, True, -1)


async def test_multi_refused_for_an_expired_session_is_a_session_error() -> None:
    from aiocoord.errors import SessionExpiredError

    def handler(xid: int, opcode: int, body: bytes) -> bytes | None:
        if opcode == Op.MULTI:
            return reply(xid, body=_multi_failed(-112, 2))
        return reply(xid, -101)

    async with FakeZooKeeper(handler) as server:
        client = await connect(server.connect_string, session_timeout=10)
        try:
            with pytest.raises(SessionExpiredError):
                await client.transaction().create("/a").create("/b").commit()
        finally:
            await client.close()


async def test_a_stray_connect_reply_neither_moves_the_zxid_nor_survives() -> None:
    """Seen in the chaos soak: a connect reply read as a reply header has xid 0 and, as its
    zxid, the session timeout (2000 ms) shifted into the epoch. Taken as the newest zxid seen,
    it made every server refuse the client's reconnects for good ("client must try another
    server"). A reply to an xid never sent now kills the link and its zxid is ignored."""
    seen: list[int] = []
    conn = Connection("127.0.0.1", 1, lambda _: None, seen.append)
    conn._handshake.set_result(None)  # type: ignore[arg-type]
    stray = struct.pack(">iiq", 0, 2000, 0x0200004E_00000001) + struct.pack(">i", 16) + b"p" * 16
    conn.data_received(struct.pack(">i", len(stray) + 1) + stray + b"\x00")
    assert seen == []
    assert conn.closed.done()
    assert isinstance(conn.closed.result(), ProtocolError)


async def test_a_reply_for_a_forgotten_xid_still_counts() -> None:
    """A caller that gave up forgets its xid; the reply still comes, in order, and its zxid
    is real (the server applied the request)."""
    seen: list[int] = []
    conn = Connection("127.0.0.1", 1, lambda _: None, seen.append)
    conn._handshake.set_result(None)  # type: ignore[arg-type]
    conn._transport = Sink()  # type: ignore[assignment]
    fut = conn.send(7, GetDataRequest(path="/a", watch=False))
    conn.forget(7)
    conn.data_received(reply(7, zxid=42, body=get_data_body(b"late")))
    assert seen == [42]
    assert not conn.closed.done()
    assert not fut.done()


async def test_an_answer_proves_the_session_alive_from_before_its_request_left() -> None:
    """An answer proves the server heard the session at or after the moment its request was
    timed (``Connection.proof``, from which the session's expiry is reckoned): that moment
    must not be later than the bytes leaving, or the proof claims more than the server can
    have seen. On loopback the server may read the request before ``write`` returns."""
    conn = Connection("127.0.0.1", 1, lambda _: None, lambda _: None)
    conn._handshake.set_result(None)  # type: ignore[arg-type]
    written: list[float] = []

    class _Clock(Sink):
        def write(self, data: bytes) -> None:
            written.append(time.monotonic())

    conn._transport = _Clock()  # type: ignore[assignment]
    fut = conn.send(7, GetDataRequest(path="/a", watch=False))
    conn.data_received(reply(7, zxid=42, body=get_data_body(b"x")))
    assert fut.done() and fut.result().err == 0
    assert conn.proof <= written[0]
