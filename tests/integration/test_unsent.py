"""Requests that never left: a connection closing on our side refuses them as NotSentError
(safe to repeat), the session sends them on the next connection, and asyncio never logs a
write to a dead socket (the suite's conftest fails any test during which it does)."""

from __future__ import annotations

import pytest

from aiocoord import Client, State
from aiocoord._wire.reads import GetChildrenRequest
from aiocoord.errors import NotSentError
from aiocoord.testing import session_of


async def test_a_request_on_a_closing_connection_is_not_sent(zk_client: Client) -> None:
    conn = session_of(zk_client)._conn
    assert conn is not None and conn._transport is not None
    conn._transport.close()  # closing now; the loop reports it lost on a later turn
    before = conn.requests_sent
    with pytest.raises(NotSentError):
        conn.send(10**6, GetChildrenRequest(path="/", watch=False))
    assert conn.requests_sent == before


async def test_the_session_sends_it_on_the_next_connection(zk_client: Client) -> None:
    await zk_client.create("/kept", b"")
    conn = session_of(zk_client)._conn
    assert conn is not None and conn._transport is not None
    conn._transport.close()
    assert await zk_client.children("/") == ["kept"]  # written on the next connection
    assert session_of(zk_client)._conn is not conn
    assert zk_client.state in (State.CONNECTED, State.RECONNECTED)
