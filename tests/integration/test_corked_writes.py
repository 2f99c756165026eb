"""Requests written in a corked block (``Session.corked``, used by a cache's pipelined load)
leave together at the block's end, in one write, and are answered as if written one by one;
on a connection closing meanwhile they are lost like any request written to it."""

from __future__ import annotations

import asyncio

import pytest

from aiocoord import Client, ConnectionLossError
from aiocoord._wire.reads import GetDataRequest
from aiocoord.testing import session_of


async def test_corked_requests_leave_at_the_end_and_are_answered_in_order(
    zk_client: Client,
) -> None:
    await asyncio.gather(*(zk_client.create(f"/c{i:03d}", b"%d" % i) for i in range(200)))
    session = session_of(zk_client)
    conn = session._conn
    assert conn is not None
    written = conn.requests_sent
    with session.corked():
        futures = [
            session.submit(GetDataRequest(path=session.paths.add(f"/c{i:03d}"), watch=False))
            for i in range(100)
        ]
        with session.corked():  # nested: the outer block writes
            futures += [
                session.submit(GetDataRequest(path=session.paths.add(f"/c{i:03d}"), watch=False))
                for i in range(100, 200)
            ]
        assert conn._corked is not None and len(conn._corked) == 200  # none left yet
    assert conn._corked is None
    assert conn.requests_sent == written + 200
    order: list[int] = []
    for i, fut in enumerate(futures):
        fut.add_done_callback(lambda _, i=i: order.append(i))
    replies = await asyncio.gather(*futures)
    assert [r.body.data for r in replies if r.body is not None] == [b"%d" % i for i in range(200)]
    assert order == list(range(200))  # answered in the order written


async def test_corked_requests_on_a_closing_connection_are_lost(zk_client: Client) -> None:
    session = session_of(zk_client)
    conn = session._conn
    assert conn is not None and conn._transport is not None
    with session.corked():
        fut = session.submit(GetDataRequest(path=session.paths.add("/"), watch=False))
        conn._transport.close()  # closing before the block writes: nothing is written
    with pytest.raises(ConnectionLossError):
        await fut
    assert await zk_client.exists("/") is not None  # the session carries on
