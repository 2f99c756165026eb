"""kazoo (2.11) and aiocoord share leases and a set partition on one server: kazoo's
``NonBlockingLease`` and ours respect each other's holder records and locks, and a kazoo
``SetPartitioner`` and two of ours split one set disjointly and completely.

kazoo is synchronous (threads): its calls run in worker threads via ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import datetime
import threading
from typing import Any

import pytest
from support import Factory, container_sweeps, eventually

from aiocoord import NonBlockingLease, PartitionState, SetPartitioner

kazoo_client = pytest.importorskip("kazoo.client", reason="kazoo is not installed")
kazoo_exceptions = pytest.importorskip("kazoo.exceptions")

T0 = datetime.datetime(2026, 11, 25, 22, 0, 0)
HOUR = datetime.timedelta(hours=1)


async def test_kazoo_and_aiocoord_leases_exclude_each_other(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    now = [T0]

    def clock() -> datetime.datetime:
        return now[0]

    def kazoo_obtains(identifier: str) -> bool:
        return bool(kazoo.NonBlockingLease("/lease", HOUR, identifier=identifier, utcnow=clock))

    assert await asyncio.to_thread(kazoo_obtains, "kazoo-host")
    ours = NonBlockingLease(client, "/lease", HOUR, identifier="py-host", utcnow=clock)
    assert not await ours.obtain()
    now[0] += HOUR  # kazoo's lease ends
    assert await ours.obtain()
    assert not await asyncio.to_thread(kazoo_obtains, "kazoo-host")
    # The same identifier renews across implementations.
    now[0] += HOUR / 2
    assert await asyncio.to_thread(kazoo_obtains, "py-host")
    assert not await NonBlockingLease(client, "/lease", HOUR, identifier="x", utcnow=clock).obtain()


async def test_our_lease_waits_for_kazoos_lock(zk_connect: Factory, kazoo: Any) -> None:
    client = await zk_connect()
    lock = kazoo.Lock("/busy", "kazoo-host")  # the lock kazoo's lease decides under
    assert await asyncio.to_thread(lock.acquire, True, 10)
    lease = NonBlockingLease(client, "/busy", HOUR, identifier="py-host")
    with pytest.raises(TimeoutError):
        await lease.obtain(timeout=0.5)
    await asyncio.to_thread(lock.release)
    assert await lease.obtain(timeout=10)


async def test_kazoo_waits_for_our_item_locks(zk_connect: Factory, kazoo: Any) -> None:
    client = await zk_connect()
    async with SetPartitioner(client, "/part", ["a"], identifier="py", time_boundary=0) as part:
        assert await part.wait_for_acquire(timeout=20) is PartitionState.ACQUIRED
        lock = kazoo.Lock("/part/locks/a")
        with pytest.raises(kazoo_exceptions.LockTimeout):
            await asyncio.to_thread(lock.acquire, True, 0.5)
    await client.wait_background()
    # Both contenders' nodes are gone and the server sweeps its empty containers: the item's
    # lock folder is a persistent node (kazoo's layout, as kazoo makes it), so the same kazoo
    # Lock, which checked the folder once, takes the lock when asked again.
    await container_sweeps(client)
    assert await asyncio.to_thread(lock.acquire, True, 10)
    await asyncio.to_thread(lock.release)


async def test_a_kazoo_partitioner_and_two_of_ours_split_one_set(
    zk_connect: Factory, kazoo: Any
) -> None:
    items = [f"q{i}" for i in range(7)]
    ids = ["k-member", "p-member-1", "p-member-2"]
    stop = threading.Event()
    kazoo_share: list[list[str]] = []

    def run_kazoo() -> None:
        # kazoo's documented loop; it records the share it holds each time it is ACQUIRED.
        qp = kazoo.SetPartitioner("/part", set=items, identifier=ids[0], time_boundary=0.5)
        try:
            while not stop.is_set():
                if qp.failed:
                    raise RuntimeError("kazoo's partitioner failed")
                if qp.release:
                    qp.release_set()
                elif qp.acquired:
                    kazoo_share[:] = [sorted(qp)]
                    stop.wait(0.05)
                else:
                    qp.wait_for_acquire(1)
        finally:
            qp.finish()

    worker = asyncio.ensure_future(asyncio.to_thread(run_kazoo))
    ours = [
        SetPartitioner(await zk_connect(), "/part", items, identifier=name, time_boundary=0.5)
        for name in ids[1:]
    ]
    try:
        for part in ours:
            await part.start()

        async def settle(part: SetPartitioner) -> None:
            changes = part.changes()
            while not (part.acquired and part.members == tuple(ids)):
                if part.release:
                    await part.release_set()
                await changes.get(timeout=30)

        await asyncio.gather(*(settle(part) for part in ours))
        rest = sorted(set(items).difference(*ours))

        async def kazoo_holds_the_rest() -> bool:
            return kazoo_share == [rest]

        await eventually(kazoo_holds_the_rest, what="kazoo's share is the rest")
        shares = [kazoo_share[0], *(sorted(part) for part in ours)]
        # kazoo's round robin on both sides: disjoint, complete, in member order.
        assert shares == [["q0", "q3", "q6"], ["q1", "q4"], ["q2", "q5"]]
    finally:
        stop.set()
        for part in ours:
            await part.close()
        await worker
