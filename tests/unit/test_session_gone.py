"""An answer that says the server no longer has the session ("session expired", "unknown
session") while the connection still stands. Seen when a session is closed from another
connection that attached to it (``aiocoord.testing.expire_session`` racing the client taking
its session back): the server kept the client's connection open, answered its requests with
"unknown session" and its pings not at all, so the client heard of the expiry only at the
ping timeout (6.7 s) and a lock waiter raised the raw ``UnknownSessionError``. The connection
is dropped at the first such answer instead: the reconnect's handshake says the session
expired."""

from __future__ import annotations

import pytest
from fake_zookeeper import HEADER, Sink, frame, get_data_body, reply

from aiocoord._session.connection import Connection
from aiocoord._wire.opcodes import Xid
from aiocoord._wire.reads import GetDataRequest
from aiocoord.errors import ConnectionLossError, SessionExpiredError, UnknownSessionError


def _connection(lost: list[Connection]) -> Connection:
    conn = Connection("127.0.0.1", 1, lambda _: None, lambda _: None, lost.append)
    conn._handshake.set_result(None)  # type: ignore[arg-type]  # past the handshake
    conn._transport = Sink()  # type: ignore[assignment]
    return conn


@pytest.mark.parametrize("err", [UnknownSessionError.code, SessionExpiredError.code])
async def test_an_answer_that_the_session_is_gone_drops_the_connection(err: int) -> None:
    lost: list[Connection] = []
    conn = _connection(lost)
    first = conn.send(7, GetDataRequest(path="/a", watch=True))
    second = conn.send(8, GetDataRequest(path="/b", watch=False))
    conn.data_received(reply(7, err=err) + reply(8, body=get_data_body(b"late")))
    assert lost == [conn]
    assert conn.closed.done()
    # Both fail as a connection loss: the session learns the truth from the next handshake
    # (and a retried read is then refused as expired), not from a raw error per request.
    for fut in (first, second):
        assert isinstance(fut.exception(), ConnectionLossError)


async def test_a_ping_answered_with_an_unknown_session_drops_the_connection() -> None:
    lost: list[Connection] = []
    conn = _connection(lost)
    conn.data_received(frame(HEADER.pack(Xid.PING, -1, UnknownSessionError.code)))
    assert lost == [conn]


async def test_other_errors_leave_the_connection_alone() -> None:
    lost: list[Connection] = []
    conn = _connection(lost)
    fut = conn.send(7, GetDataRequest(path="/a", watch=False))
    conn.data_received(reply(7, err=-101))  # NoNode
    assert lost == []
    assert fut.result().err == -101
