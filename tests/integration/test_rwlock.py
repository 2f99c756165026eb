"""ReadWriteLock against a real server: readers share, writers exclude and are fair,
downgrade keeps queued writers out, upgrade is refused, Curator's layout."""

from __future__ import annotations

import asyncio
import re

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client
from aiocoord.errors import LockUpgradeError
from aiocoord.recipes.rwlock import ReadWriteLock
from aiocoord.testing import session_of

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


async def count(client: Client, path: str, n: int) -> bool:
    return len(await client.children(path)) == n


async def stays_pending(task: asyncio.Task[bool], seconds: float = 0.5) -> bool:
    """True if ``task`` is still not done after ``seconds`` (it must not get the lock)."""
    done, _ = await asyncio.wait({task}, timeout=seconds)
    return not done


async def test_readers_share_the_lock(zk_connect: Factory) -> None:
    clients = [await zk_connect() for _ in range(5)]
    inside = 0
    most = 0
    all_in = asyncio.Event()

    async def reader(client: Client) -> None:
        nonlocal inside, most
        async with ReadWriteLock(client, "/rw-share").read:
            inside += 1
            most = max(most, inside)
            if inside == 5:
                all_in.set()
            await asyncio.wait_for(all_in.wait(), 10)  # only possible if all five hold it
            inside -= 1

    await asyncio.wait_for(asyncio.gather(*(reader(c) for c in clients)), 20)
    assert most == 5


async def test_writer_excludes_readers_and_writers(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    mine, theirs = ReadWriteLock(a, "/rw-ex"), ReadWriteLock(b, "/rw-ex")
    async with mine.write:
        assert not await theirs.read.acquire(blocking=False)
        with pytest.raises(aiocoord.TimeoutError):
            await theirs.write.acquire(timeout=0.3)
    async with mine.read:
        assert not await theirs.write.acquire(blocking=False)
        assert await theirs.read.acquire(blocking=False)  # readers share
        await theirs.read.release()
    await b.wait_background()  # b's release, answered
    assert await child_names(a, "/rw-ex") == []


async def test_writers_are_fair_to_readers_queued_after_them(zk_connect: Factory) -> None:
    a, b, c = await zk_connect(), await zk_connect(), await zk_connect()
    first_reader = ReadWriteLock(a, "/rw-fair").read
    await first_reader.acquire()
    writer = ReadWriteLock(b, "/rw-fair").write
    order: list[str] = []

    async def write() -> bool:
        async with writer:
            order.append("writer")
        return True

    write_task = asyncio.create_task(write())
    await eventually(lambda: count(a, "/rw-fair", 2))
    late_reader = ReadWriteLock(c, "/rw-fair").read

    async def read_late() -> bool:
        async with late_reader:
            order.append("late reader")
        return True

    read_task = asyncio.create_task(read_late())
    await eventually(lambda: count(a, "/rw-fair", 3))
    # The late reader queued behind a writer: it waits although only a reader holds the lock.
    assert await stays_pending(read_task)
    await first_reader.release()
    await asyncio.wait_for(asyncio.gather(write_task, read_task), 10)
    assert order == ["writer", "late reader"]


async def test_downgrade_keeps_queued_writers_out_until_the_read_lock_goes(
    zk_connect: Factory,
) -> None:
    a, b, c = await zk_connect(), await zk_connect(), await zk_connect()
    rw = ReadWriteLock(a, "/rw-down")
    await rw.write.acquire()
    write_path = rw.write.node_path
    assert write_path is not None
    write_seq = int(write_path[-10:])
    other_writer = ReadWriteLock(b, "/rw-down").write

    async def write() -> bool:
        async with other_writer:
            return True

    writer_task = asyncio.create_task(write())
    await eventually(lambda: count(a, "/rw-down", 2))
    # Downgrade: read while holding write (granted at once), then let write go.
    assert await rw.read.acquire(blocking=False)
    read_name = rw.read.node_path.rsplit("/", 1)[1]  # type: ignore[union-attr]
    assert re.fullmatch(f"_c_{UUID}-__READ__{write_seq:010d}", read_name), read_name
    _, stat = await a.get(f"/rw-down/{read_name}")
    assert stat.ephemeral_owner == a.session_id
    await rw.write.release()
    assert rw.read.is_held
    assert not rw.write.is_held
    assert await stays_pending(writer_task)  # the read node sorts ahead of the queued writer
    # A new reader queues behind the waiting writer, as fairness wants.
    assert not await ReadWriteLock(c, "/rw-down").read.acquire(blocking=False)
    await rw.read.release()
    assert await asyncio.wait_for(writer_task, 10)


async def test_upgrade_is_refused_before_anything_is_sent(zk_client: Client) -> None:
    rw = ReadWriteLock(zk_client, "/rw-up")
    async with rw.read:
        before = dict(session_of(zk_client).sent)
        with pytest.raises(LockUpgradeError):
            await rw.write.acquire()
        with pytest.raises(LockUpgradeError):
            await rw.write.acquire(blocking=False)
        assert dict(session_of(zk_client).sent) == before
    # Once the read lock is gone, writing is fine, and reentrant.
    async with rw.write, rw.write:
        assert rw.write.is_held


async def test_layout_and_contenders(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    reader = ReadWriteLock(a, "/rw-layout", identifier="r").read
    await reader.acquire()
    writer = ReadWriteLock(b, "/rw-layout", identifier="w").write

    async def write() -> bool:
        async with writer:
            return True

    task = asyncio.create_task(write())
    await eventually(lambda: count(a, "/rw-layout", 2))
    names = await a.children("/rw-layout")
    reads = [n for n in names if re.fullmatch(f"_c_{UUID}-__READ__\\d{{10}}", n)]
    writes = [n for n in names if re.fullmatch(f"_c_{UUID}-__WRIT__\\d{{10}}", n)]
    assert len(reads) == 1
    assert len(writes) == 1
    assert int(reads[0][-10:]) < int(writes[0][-10:])
    # each half lists its own nodes; the writer queued behind the reader does not hold
    assert [(p.identifier, p.holds) for p in await reader.contenders()] == [("r", True)]
    assert [(p.identifier, p.holds) for p in await writer.contenders()] == [("w", False)]
    await reader.release()
    assert await asyncio.wait_for(task, 10)
