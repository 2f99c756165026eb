"""kazoo 2.x recipe objects kept for a service's life on paths aiocoord made in kazoo's layout,
across the server's sweep of empty containers.

A kazoo ``Lock``, ``Election``, ``Party``, ``ShallowParty``, ``DoubleBarrier``, ``Semaphore``,
``Counter`` or ``Queue`` checks its path once (``ensure_path``, then ``assured_path`` or
``ensured_path`` for the object's life), and kazoo makes that path a persistent node. Each test
here lets aiocoord make the path, lets the kazoo object check it while an aiocoord member is on
it (so the path it counts on is ours), lets everyone leave, waits until the server has swept its
empty containers (``container_sweeps``: canaries it removed; the test servers sweep every 0.1 s)
and then uses the same kazoo object again: it must work as it does on a path kazoo made (and a
kazoo member of a double barrier must wait for the others). Were our parents containers, the
server would have removed the path under it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory, child_names, container_sweeps, eventually

from aiocoord import (
    AtomicCounter,
    Client,
    DoubleBarrier,
    Election,
    GroupMember,
    Lock,
    LockingQueue,
    Queue,
    Semaphore,
    TimeoutError,
)

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/locks.md | Failure semantics | kazoo objects kept across idle spells: "
    "the server sweeps empty containers": [
        "test_a_kazoo_lock_kept_for_its_life_locks_again_after_the_sweep",
        "test_in_curators_layout_the_parents_are_still_containers_the_server_removes",
        "test_kazoo_sweep_between_shifts.py::"
        "test_kazoo_objects_kept_by_a_worker_serve_its_next_shift_after_the_sweep",
    ],
    "recipes/leader.md | Failure semantics | kazoo objects kept across idle spells: "
    "the server sweeps empty containers": [
        "test_a_kazoo_election_kept_for_its_life_runs_again_after_the_sweep",
        "test_kazoo_sweep_between_shifts.py::"
        "test_kazoo_objects_kept_by_a_worker_serve_its_next_shift_after_the_sweep",
    ],
    "recipes/semaphore.md | Failure semantics | kazoo objects kept across idle spells: "
    "the server sweeps empty containers": [
        "test_a_kazoo_semaphore_kept_for_its_life_leases_again_after_the_sweep",
    ],
    "recipes/barriers.md | Failure semantics | kazoo objects kept across idle spells: "
    "the server sweeps empty containers": [
        "test_a_kazoo_double_barrier_kept_for_its_life_waits_for_the_others_after_the_sweep",
    ],
    "recipes/nodes.md | Failure semantics | kazoo objects kept across idle spells: "
    "the server sweeps empty containers": [
        "test_a_kazoo_party_kept_for_its_life_joins_again_after_the_sweep",
        "test_kazoo_sweep_between_shifts.py::"
        "test_kazoo_objects_kept_by_a_worker_serve_its_next_shift_after_the_sweep",
    ],
    "recipes/counters.md | Failure semantics | kazoo objects kept across idle spells: "
    "the server sweeps empty containers": [
        "test_a_kazoo_counter_kept_for_its_life_counts_after_the_sweep",
    ],
    "recipes/queues.md | Failure semantics | kazoo objects kept across idle spells: "
    "the server sweeps empty containers": [
        "test_a_kazoo_queue_kept_for_its_life_delivers_after_the_sweep",
        "test_a_kazoo_locking_queue_kept_for_its_life_delivers_after_the_sweep",
        "test_in_curators_layout_the_parents_are_still_containers_the_server_removes",
        "test_kazoo_sweep_between_shifts.py::"
        "test_kazoo_objects_kept_by_a_worker_serve_its_next_shift_after_the_sweep",
    ],
}


async def _children(client: Client, path: str, n: int) -> bool:
    return len(await child_names(client, path)) == n


async def test_a_kazoo_lock_kept_for_its_life_locks_again_after_the_sweep(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Lock(client, "/res", identifier="py", layout="kazoo")
    theirs = kazoo.Lock("/res", "kazoo")
    assert await ours.acquire(timeout=10)  # ours makes the path
    waiting = asyncio.ensure_future(asyncio.to_thread(theirs.acquire, True, 30))
    await eventually(lambda: _children(client, "/res", 2), what="kazoo's contender behind ours")
    await ours.release()
    assert await waiting
    await asyncio.to_thread(theirs.release)
    await client.sync()  # our nodes' deletes are applied: the path is empty
    await container_sweeps(client)
    # The same kazoo object, which checked the path once: it locks, and excludes ours.
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    assert not await ours.acquire(blocking=False)
    await asyncio.to_thread(theirs.release)
    assert await ours.acquire(timeout=10)
    await ours.release()


async def test_a_kazoo_election_kept_for_its_life_runs_again_after_the_sweep(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Election(client, "/elect", identifier="py", layout="kazoo")
    theirs = kazoo.Election("/elect", "kazoo")
    terms: list[str] = []
    async with ours.leadership(timeout=10):  # ours makes the path
        running = asyncio.ensure_future(asyncio.to_thread(theirs.run, terms.append, "first"))
        await eventually(lambda: _children(client, "/elect", 2), what="kazoo's contender")
    await running
    await client.sync()
    await container_sweeps(client)
    await asyncio.to_thread(theirs.run, terms.append, "after the sweep")
    assert terms == ["first", "after the sweep"]
    async with ours.leadership(timeout=10):
        assert [c.identifier for c in await ours.contenders()] == ["py"]


@pytest.mark.parametrize("shallow", [False, True], ids=["Party", "ShallowParty"])
async def test_a_kazoo_party_kept_for_its_life_joins_again_after_the_sweep(
    zk_connect: Factory, kazoo: Any, shallow: bool
) -> None:
    client = await zk_connect()
    theirs = (kazoo.ShallowParty if shallow else kazoo.Party)("/party", "kazoo-1")
    async with GroupMember(client, "/party", "py-1", layout="kazoo", shallow=shallow) as ours:
        await asyncio.to_thread(theirs.join)
        await ours.wait_for(lambda m: set(m) == {"kazoo-1", "py-1"}, timeout=10)
        await asyncio.to_thread(theirs.leave)
    await client.sync()
    await container_sweeps(client)
    await asyncio.to_thread(theirs.join)
    assert await asyncio.to_thread(list, theirs) == ["kazoo-1"]
    async with GroupMember(client, "/party", "py-2", layout="kazoo", shallow=shallow) as again:
        await again.wait_for(lambda m: set(m) == {"kazoo-1", "py-2"}, timeout=10)
    await asyncio.to_thread(theirs.leave)


async def test_a_kazoo_double_barrier_kept_for_its_life_waits_for_the_others_after_the_sweep(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = DoubleBarrier(client, "/barrier", 2, layout="kazoo")
    theirs = kazoo.DoubleBarrier("/barrier", 2)
    entering = asyncio.ensure_future(ours.enter(timeout=30))  # ours makes the path
    await eventually(lambda: _children(client, "/barrier", 1), what="our member's node")
    await asyncio.to_thread(theirs.enter)
    assert theirs.participating
    await entering
    await asyncio.gather(ours.leave(timeout=30), asyncio.to_thread(theirs.leave))
    await client.sync()
    await container_sweeps(client)
    # The kazoo member comes first this time: it must wait for ours, not pass alone.
    kazoo_entering = asyncio.ensure_future(asyncio.to_thread(theirs.enter))
    kazoo_in = asyncio.ensure_future(
        eventually(lambda: _children(client, "/barrier", 1), what="kazoo's member node")
    )
    try:
        await asyncio.wait((kazoo_entering, kazoo_in), return_when=asyncio.FIRST_COMPLETED)
        assert not kazoo_entering.done(), (
            f"kazoo's member passed the barrier alone (participating={theirs.participating})"
        )
        await kazoo_in
    finally:
        kazoo_in.cancel()
    assert not kazoo_entering.done()
    await ours.enter(timeout=30)
    await kazoo_entering
    assert theirs.participating
    await asyncio.gather(ours.leave(timeout=30), asyncio.to_thread(theirs.leave))


async def test_a_kazoo_semaphore_kept_for_its_life_leases_again_after_the_sweep(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Semaphore(client, "/sem", 1, identifier="py", layout="kazoo")
    theirs = kazoo.Semaphore("/sem", "kazoo", max_leases=1)
    (lease,) = await ours.acquire(1, timeout=10)  # ours makes the path and the lock's path
    waiting = asyncio.ensure_future(asyncio.to_thread(theirs.acquire, True, 30))
    await eventually(lambda: _children(client, "/sem-__lock__", 1), what="kazoo's lock node")
    await lease.release()
    assert await waiting
    await asyncio.to_thread(theirs.release)
    await client.sync()
    await container_sweeps(client)
    # kazoo's semaphore takes a new Lock on ``<path>-__lock__`` each time: it checks that path
    # and then creates its node without making parents, so a path the server can remove in
    # between fails it now and then. The path is kazoo's kind: still there.
    assert await client.exists("/sem-__lock__") is not None
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    with pytest.raises(TimeoutError):
        await ours.acquire(1, timeout=0.2)
    await asyncio.to_thread(theirs.release)
    (lease,) = await ours.acquire(1, timeout=10)
    await lease.release()


async def test_a_kazoo_counter_kept_for_its_life_counts_after_the_sweep(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    async with AtomicCounter(client, "/counters/hits", layout="kazoo") as ours:
        await ours.increment()  # ours makes the node and its parent
        theirs = kazoo.Counter("/counters/hits")
        await asyncio.to_thread(theirs.__add__, 1)
    await client.sync()
    await container_sweeps(client)
    await asyncio.to_thread(theirs.__add__, 1)
    assert await asyncio.to_thread(lambda: theirs.value) == 3
    assert await AtomicCounter(client, "/counters/hits", layout="kazoo").get() == 3


async def test_a_kazoo_queue_kept_for_its_life_delivers_after_the_sweep(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Queue(client, "/fleet/jobs", layout="kazoo")
    await ours.put(b"one")  # ours makes the path and its parent
    theirs = kazoo.Queue("/fleet/jobs")
    assert await asyncio.to_thread(theirs.get) == b"one"  # the queue is empty again
    await client.sync()
    await container_sweeps(client)
    await asyncio.to_thread(theirs.put, b"two")
    assert await ours.get(timeout=10) == b"two"
    await ours.put(b"three")
    assert await asyncio.to_thread(theirs.get) == b"three"


async def test_a_kazoo_locking_queue_kept_for_its_life_delivers_after_the_sweep(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = LockingQueue(client, "/fleet/locking")
    await ours.put(b"one")  # ours makes the path and its parts
    theirs = kazoo.LockingQueue("/fleet/locking")
    assert await asyncio.to_thread(theirs.get, 5) == b"one"
    assert await asyncio.to_thread(theirs.consume)  # the queue is empty again
    await client.sync()
    await container_sweeps(client)
    await asyncio.to_thread(theirs.put, b"two")
    item = await ours.take(5)
    assert item.data == b"two"
    await item.consume()
    await ours.put(b"three")
    assert await asyncio.to_thread(theirs.get, 5) == b"three"
    assert await asyncio.to_thread(theirs.consume)
    await ours.close()


async def test_in_curators_layout_the_parents_are_still_containers_the_server_removes(
    zk_connect: Factory,
) -> None:
    # Curator's recipes make (and make again) their parents as containers, and so do ours
    # in its layout: the sweep removes them once empty, whereas kazoo's layout keeps them.
    client = await zk_connect()
    for layout in ("curator", "kazoo"):
        lock = Lock(client, f"/{layout}/locks/res", layout=layout)
        assert await lock.acquire(timeout=10)
        await lock.release()
        # A queue's own node is persistent in either layout, its parents as the layout's.
        async with Queue(client, f"/{layout}/queues/jobs", layout=layout) as queue:
            await queue.put(b"job")
            assert await queue.get(timeout=10) == b"job"
        await client.delete(f"/{layout}/queues/jobs")  # retired
    await client.sync()
    await container_sweeps(client)
    assert await client.exists("/curator/locks/res") is None
    assert await client.exists("/curator/queues") is None
    assert await client.exists("/kazoo/locks/res") is not None
    assert await client.exists("/kazoo/queues") is not None
