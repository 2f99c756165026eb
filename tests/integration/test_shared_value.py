"""SharedValue against a real server: Curator's SharedValue layout (the raw bytes on one
node, seeded once), compare-and-set on the version, the change stream, a try_set whose
reply is lost applied exactly once, cancellation, and bad input refused before anything is
sent. SharedCount is the same mechanism (tests/integration/test_counter.py)."""

from __future__ import annotations

import asyncio

import pytest
from support import Factory

from aiocoord import SharedCount, SharedValue, ValueChange, VersionedValue
from aiocoord._wire.opcodes import Op
from aiocoord.errors import BadArgumentsError, InvalidTypeError, NoNodeError
from aiocoord.recipes.shared_value import _SharedNode
from aiocoord.testing import FaultProxy


async def test_seeds_the_raw_bytes_once_and_follows_them(zk_connect: Factory) -> None:
    client = await zk_connect()
    async with SharedValue(client, "/app/config", b"v1") as shared:
        assert shared.value == b"v1"
        assert shared.versioned == VersionedValue(b"v1", 0)
    assert (await client.get("/app/config"))[0] == b"v1"
    async with SharedValue(client, "/app/config", b"other seed") as again:
        assert again.value == b"v1"  # an existing node keeps its value
    async with SharedValue(client, "/app/empty") as empty:
        assert empty.value == b""


async def test_try_set_is_a_compare_and_set_on_the_version(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    async with SharedValue(a, "/cas") as mine, SharedValue(b, "/cas") as theirs:
        seen = mine.versioned
        assert await mine.try_set(b"mine", seen.version)
        assert mine.versioned == VersionedValue(b"mine", 1)  # our own write shows at once
        assert not await theirs.try_set(b"theirs", seen.version)  # read before our write
        await theirs.wait_for(lambda v: v == b"mine", timeout=5)
        assert await theirs.try_set(b"theirs", theirs.versioned.version)
        assert (await mine.wait_for(lambda v: v == b"theirs", timeout=5)).version == 2
        await mine.set(b"forced")
        assert (await theirs.wait_for(lambda v: v == b"forced", timeout=5)).version == 3
        assert (await a.get("/cas"))[0] == b"forced"
    assert await a.children("/cas") == []  # no marker left once closed


async def test_changes_stream_every_value_then_the_deletion(zk_connect: Factory) -> None:
    client, writer = await zk_connect(), await zk_connect()
    shared = SharedValue(client, "/stream", b"0")
    changes = shared.changes()
    await shared.start()
    assert await changes.get(5) == ValueChange(b"0", 0)
    for i in range(1, 4):
        await writer.set("/stream", b"%d" % i)
        assert await changes.get(5) == ValueChange(b"%d" % i, i)
    await writer.delete("/stream")
    assert await changes.get(5) == ValueChange(None, -1)
    with pytest.raises(NoNodeError):
        _ = shared.value
    await shared.close()
    assert [c async for c in changes] == []


async def test_try_set_whose_reply_is_lost_is_applied_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    async with SharedValue(client, "/lossy", b"a") as shared:
        lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
        # A plain retry would get BadVersion from its own write and say False.
        assert await shared.try_set(b"b", 0)
        await lost.wait(5)
        data, stat = await observer.get("/lossy")
        assert (data, stat.version) == (b"b", 1)
    await client.close()


async def test_a_cancelled_wait_leaves_the_value_working(zk_connect: Factory) -> None:
    client = await zk_connect()
    async with SharedValue(client, "/wait", b"x") as shared:
        waiting = asyncio.ensure_future(shared.wait_for(lambda v: v == b"never"))
        await asyncio.sleep(0)  # let it start waiting
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        with pytest.raises(asyncio.TimeoutError):
            await shared.wait_for(lambda v: v == b"never", timeout=0.1)
        await shared.set(b"y")
        assert (await shared.wait_for(lambda v: v == b"y", timeout=5)).value == b"y"


async def test_bad_input_is_refused_before_anything_is_sent(zk_connect: Factory) -> None:
    client = await zk_connect()
    with pytest.raises(InvalidTypeError):
        SharedValue(client, "/bad", "text")  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(BadArgumentsError):
        SharedValue(client, "/")
    with pytest.raises(InvalidTypeError):
        SharedValue("not a client", "/bad")  # type: ignore[arg-type]  # the refusal tested
    shared = SharedValue(client, "/bad")
    with pytest.raises(InvalidTypeError):
        await shared.set("text")  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(InvalidTypeError):
        await shared.try_set(b"x", True)
    with pytest.raises(BadArgumentsError):
        await shared.try_set(b"x", -1)
    with pytest.raises(InvalidTypeError):
        await shared.wait_for("not callable")  # type: ignore[arg-type]  # the refusal tested
    assert await client.exists("/bad") is None


def test_shared_count_is_the_same_mechanism() -> None:
    assert issubclass(SharedValue, _SharedNode) and issubclass(SharedCount, _SharedNode)
