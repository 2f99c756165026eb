"""MultiLock against a real server: all or none, under timeouts and cancellation."""

from __future__ import annotations

import asyncio

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client
from aiocoord.errors import BadArgumentsError, InvalidTypeError
from aiocoord.recipes.lock import Lock, Mutex
from aiocoord.recipes.multilock import MultiLock
from aiocoord.recipes.rwlock import ReadWriteLock


async def test_all_locks_are_taken_and_released_together(zk_client: Client) -> None:
    rw = ReadWriteLock(zk_client, "/m/rw")
    multi = MultiLock([Lock(zk_client, "/m/a"), Mutex(zk_client, "/m/b"), rw.read])
    paths = ("/m/a", "/m/b", "/m/rw")
    async with multi:
        assert multi.is_held
        assert [len(await child_names(zk_client, p)) for p in paths] == [1, 1, 1]
    assert not multi.is_held
    assert [len(await child_names(zk_client, p)) for p in paths] == [0, 0, 0]


async def test_cancelled_while_waiting_for_the_last_lock_releases_the_others(
    zk_connect: Factory,
) -> None:
    a, b = await zk_connect(), await zk_connect()
    blocker = Lock(b, "/mc/c")
    await blocker.acquire()
    locks = [Lock(a, "/mc/a"), Lock(a, "/mc/b"), Lock(a, "/mc/c")]
    multi = MultiLock(locks)
    task = asyncio.create_task(multi.acquire())
    # It holds a and b and waits in c's queue.
    await eventually(lambda: _counts(b, [1, 1, 2]))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(lock.is_held for lock in locks)
    await a.wait_background()
    assert await _counts(b, [0, 0, 1])
    await blocker.release()
    assert await multi.acquire(timeout=5)
    await multi.release()


async def _counts(client: Client, expected: list[int]) -> bool:
    return [len(await child_names(client, f"/mc/{x}")) for x in "abc"] == expected


async def test_timeout_or_non_blocking_failure_holds_none(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    blocker = Lock(b, "/mt/b")
    await blocker.acquire()
    multi = MultiLock([Lock(a, "/mt/a"), Lock(a, "/mt/b")])
    with pytest.raises(aiocoord.TimeoutError):
        await multi.acquire(timeout=0.3)
    assert not await multi.acquire(blocking=False)
    assert not multi.locks[0].is_held
    await a.wait_background()  # a give-up waits only briefly for its deletes to be answered
    assert len(await child_names(b, "/mt/a")) == 0
    assert len(await child_names(b, "/mt/b")) == 1
    await blocker.release()


async def test_bad_input(zk_client: Client) -> None:
    with pytest.raises(BadArgumentsError):
        MultiLock([])
    with pytest.raises(InvalidTypeError):
        MultiLock(["/not/a/lock"])  # type: ignore[list-item]
    lock = Lock(zk_client, "/mb")
    with pytest.raises(BadArgumentsError):
        MultiLock([lock, lock])
    with pytest.raises(BadArgumentsError):
        await MultiLock([lock]).acquire(timeout=-1)
