"""``client.stats()``: the requests, watches, connections and recipe grants a client made,
counted against a real server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import Client, Lock, State
from aiocoord.errors import NoNodeError
from aiocoord.stats import ClientStats
from aiocoord.testing import FaultProxy, expire_session, session_of


async def test_requests_are_counted_by_operation_with_errors_and_latency(
    zk_client: Client,
) -> None:
    before = zk_client.stats()
    assert isinstance(before, ClientStats)
    await zk_client.create("/stats-a", b"x")
    await zk_client.create("/stats-a/b", b"y", ephemeral=True)
    for _ in range(3):
        await zk_client.get("/stats-a")
    with pytest.raises(NoNodeError):
        await zk_client.get("/stats-missing")
    after = zk_client.stats()

    def grew(name: str) -> int:
        was = before.requests.get(name)
        return after.requests[name].count - (was.count if was else 0)

    assert grew("create") == 2
    assert grew("get") == 4
    get = after.requests["get"]
    assert get.errors.get("NoNodeError", 0) >= 1
    assert 0 < get.p50_ms <= get.p99_ms <= get.max_ms
    assert get.max_ms < 10_000  # answered on loopback, not counted in the wrong unit
    assert after.bytes_out > before.bytes_out and after.bytes_in > before.bytes_in
    assert after.in_flight == 0
    assert after.session_id == zk_client.session_id
    assert after.server is not None and after.negotiated_timeout > 0
    assert after.reconnects == 0 and after.session_expiries == 0


async def test_bytes_out_counts_what_an_idle_client_writes(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    # bytes_in counts every byte read; bytes_out must count every byte written too: the
    # pings of an idle client, and the handshake of a reconnect.
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=2)
    idle = client.stats().bytes_out

    async def pinged() -> bool:
        return client.stats().bytes_out > idle

    await eventually(pinged, timeout=5, what="a ping counted")
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    before = client.stats().bytes_out
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert client.stats().bytes_out >= before + CONNECT_REQUEST_BYTES


async def test_stats_name_no_server_while_disconnected(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    assert client.stats().server == zk_fault_proxy.connect_string
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    assert client.stats().server is None
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    assert client.stats().server == zk_fault_proxy.connect_string


#: A connect request's frame: its length, then protocol version, last zxid, timeout, session
#: id, password (length and 16 bytes) and the read-only flag.
CONNECT_REQUEST_BYTES = 4 + 4 + 8 + 4 + 8 + 4 + 16 + 1


async def test_watches_are_counted_by_kind(zk_client: Client) -> None:
    await zk_client.create("/stats-w", b"")
    _, _, data = await zk_client.get("/stats-w", watch=True)
    missing, exist = await zk_client.exists("/stats-w-missing", watch=True)
    assert missing is None
    _, child = await zk_client.children("/stats-w", watch=True)
    async with (
        await zk_client.add_watch("/stats-w"),
        await zk_client.add_watch("/stats-w", recursive=True),
    ):
        watches = zk_client.stats().watches
        assert (watches.data, watches.exist, watches.child) == (1, 1, 1)
        assert (watches.persistent, watches.persistent_recursive) == (1, 1)
    await zk_client.delete("/stats-w")  # fires the data and child watches
    await asyncio.wait_for(asyncio.gather(data, child), 10)
    await zk_client.create("/stats-w-missing", b"")  # fires the exist watch
    await asyncio.wait_for(exist, 10)
    watches = zk_client.stats().watches
    assert (watches.data, watches.exist, watches.child) == (0, 0, 0)
    assert (watches.persistent, watches.persistent_recursive) == (0, 0)


async def test_lock_grants_waits_and_losses(zk_connect: Factory, zookeeper: Any) -> None:
    a, b = await zk_connect(), await zk_connect()
    first, second = Lock(a, "/stats-lock"), Lock(b, "/stats-lock")
    await first.acquire()
    waiting = asyncio.ensure_future(second.acquire())
    await eventually(lambda: _queued(a, "/stats-lock", 2))
    await asyncio.sleep(0.05)  # b waits at least this long: its wait time must show it
    await first.release()
    await asyncio.wait_for(waiting, 10)
    held_by_a = a.stats().recipes["lock"]
    assert (held_by_a.holds, held_by_a.waits, held_by_a.losses) == (1, 0, 0)
    held_by_b = b.stats().recipes["lock"]
    assert (held_by_b.holds, held_by_b.waits) == (1, 1)
    assert 0.05 <= held_by_b.wait_seconds == held_by_b.wait_seconds_max < 10
    lost = second.lost
    await expire_session(b.session_id, session_of(b).password, zookeeper.connect_string)
    assert await lost.wait(10) is State.LOST
    stats = b.stats()
    assert stats.recipes["lock"].losses == 1
    await b.wait_for(State.CONNECTED, 10)
    stats = b.stats()
    # Reconnected to the old session first (the expiry takes its connection), then a new one.
    assert stats.session_expiries == 1 and stats.reconnects >= 1


async def test_a_dropped_connection_counts_a_reconnect(zk_client: Client) -> None:
    await zk_client.exists("/")
    changes = zk_client.state_changes()
    session_of(zk_client).drop_connection()
    async for change in changes:
        if change.state is State.RECONNECTED:
            break
    stats = zk_client.stats()
    assert stats.reconnects == 1 and stats.session_expiries == 0


async def _queued(client: Client, path: str, n: int) -> bool:
    return len(await client.children(path)) == n


def test_stats_are_exported() -> None:
    import aiocoord.stats

    for name in ("ClientStats", "OpStats", "WatchStats", "RecipeStats"):
        assert name in aiocoord.stats.__all__
