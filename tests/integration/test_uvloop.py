"""aiocoord on uvloop's event loop: the client, a contended lock with its hand-over, a cache's
change stream, watches and a session cut by the server, end to end on the real server.

uvloop implements the loop in C on libuv; what differs from asyncio's loop (socket and
timer behaviour, when callbacks run) is where a library that relies on asyncio internals
breaks. These tests are synchronous: each runs its own loop with ``uvloop.run``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

import aiocoord
from aiocoord import ChildrenCache, Lock
from aiocoord._connect import open_client
from aiocoord.recipes.cache import CacheEventType
from aiocoord.testing import expire_session, session_of

uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed (pip install uvloop)")


def _connect(zookeeper: Any) -> str:
    return f"{zookeeper.connect_string}/uvloop-{uuid.uuid4().hex[:8]}"


def test_locks_hand_over_in_order_on_uvloop(zookeeper: Any) -> None:
    connect = _connect(zookeeper)

    async def scenario() -> list[int]:
        assert "uvloop" in type(asyncio.get_running_loop()).__module__
        clients = [await open_client(connect) for _ in range(3)]
        order: list[int] = []
        holding = 0

        async def contend(i: int) -> None:
            nonlocal holding
            for _ in range(5):
                async with Lock(clients[i], "/lock"):
                    holding += 1
                    assert holding == 1, "two holders at once"
                    order.append(i)
                    await asyncio.sleep(0)
                    holding -= 1

        try:
            await asyncio.gather(*(contend(i) for i in range(3)))
            tokens = []
            for client in clients:
                lock = Lock(client, "/lock")
                async with lock:
                    tokens.append(lock.fencing_token)
            assert tokens == sorted(tokens) and len(set(tokens)) == 3
        finally:
            for client in clients:
                await client.close()
        return order

    order = uvloop.run(scenario())
    assert sorted(order) == sorted([0, 1, 2] * 5)


def test_cache_stream_and_watches_on_uvloop(zookeeper: Any) -> None:
    connect = _connect(zookeeper)

    async def scenario() -> list[tuple[CacheEventType, str]]:
        async with aiocoord.connect(connect) as reader, aiocoord.connect(connect) as writer:
            await writer.ensure_path("/members")
            seen: list[tuple[CacheEventType, str]] = []
            async with ChildrenCache(reader, "/members") as cache:
                events = cache.changes()

                async def next_change() -> tuple[CacheEventType, str]:
                    event = await anext(events)
                    return event.type, event.name

                _, watch = await reader.exists("/flag", watch=True)
                await writer.create("/members/a", b"1")
                seen.append(await next_change())
                await writer.set("/members/a", b"2")
                seen.append(await next_change())
                await writer.delete("/members/a")
                seen.append(await next_change())
                await writer.create("/flag")
                assert (await watch.wait(10)).path == "/flag"
            return seen

    seen = uvloop.run(scenario())
    assert seen == [
        (CacheEventType.CHILD_ADDED, "a"),
        (CacheEventType.CHILD_UPDATED, "a"),
        (CacheEventType.CHILD_REMOVED, "a"),
    ]


def test_session_expiry_is_reported_and_recovered_on_uvloop(zookeeper: Any) -> None:
    connect = _connect(zookeeper)

    async def scenario() -> bool:
        async with aiocoord.connect(connect, session_timeout=4.0) as client:
            lock = Lock(client, "/held")
            await lock.acquire()
            first = client.session_id
            await expire_session(
                client.session_id, session_of(client).password, zookeeper.connect_string
            )
            assert await lock.lost.wait(10) is aiocoord.State.LOST
            await client.wait_for(aiocoord.State.CONNECTED, 10)
            assert client.session_id != first
            async with Lock(client, "/held"):
                return True

    assert uvloop.run(scenario())
