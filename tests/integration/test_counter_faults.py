"""AtomicCounter under faults: 8 clients x 200 increments through a FaultProxy that cuts
every connection periodically and loses the replies of applied writes; the count is exact
and every increment got its own value."""

from __future__ import annotations

import asyncio
import contextlib

from support import Factory

from aiocoord import ExponentialBackoff
from aiocoord._wire.opcodes import Op
from aiocoord.recipes.counter import AtomicCounter, AtomicValue
from aiocoord.testing import FaultProxy, PendingDrop

CLIENTS = 8
INCREMENTS = 200


async def test_concurrent_increments_are_exact_under_dropped_connections_and_lost_replies(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    proxy = zk_fault_proxy
    clients = [await zk_connect(proxy.connect_string, session_timeout=10) for _ in range(CLIENTS)]
    observer = await zk_connect()
    retry = ExponentialBackoff(0.001, 10_000, 0.05)
    counters = [AtomicCounter(c, "/counters/hits", retry=retry) for c in clients]
    results: list[list[AtomicValue]] = [[] for _ in counters]
    finished = asyncio.Event()
    drops = 0
    lost_replies: list[PendingDrop] = []

    async def worker(i: int) -> None:
        for _ in range(INCREMENTS):
            results[i].append(await counters[i].increment())

    async def chaos() -> None:
        nonlocal drops
        while not finished.is_set():
            # Every few rounds, the reply of an applied write is lost (the worst case: the
            # write happened, the client cannot know); otherwise every connection is cut.
            if drops % 3 == 0:
                lost_replies.append(proxy.drop_after_request(lambda xid, op: op == Op.MULTI))
            else:
                proxy.drop()
            drops += 1
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(finished.wait(), 0.15)

    chaos_task = asyncio.ensure_future(chaos())
    try:
        await asyncio.wait_for(asyncio.gather(*(worker(i) for i in range(CLIENTS))), 50)
    finally:
        finished.set()
        await chaos_task
        proxy.heal()
    for counter in counters:
        await counter.close()
    for client in clients:
        await client.close()  # while the proxy still forwards the close

    total = CLIENTS * INCREMENTS
    assert await AtomicCounter(observer, "/counters/hits").get() == total
    flat = [r for rs in results for r in rs]
    assert all(r.succeeded for r in flat)
    # Each increment moved the counter by exactly one step of its own.
    assert sorted(r.post_value for r in flat) == list(range(1, total + 1))
    assert all(r.post_value == (r.pre_value or 0) + 1 for r in flat)
    # The faults happened: connections were cut and applied writes lost their replies.
    assert drops >= 5
    assert sum(1 for arm in lost_replies if arm.done()) >= 2
    # No marker node is left behind.
    assert await observer.children("/counters/hits") == []
