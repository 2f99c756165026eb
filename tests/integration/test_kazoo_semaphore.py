"""kazoo's ``Semaphore`` (2.x, in threads) and aiocoord's in kazoo's layout on one path: the
limit is never exceeded by holders of both sides (counted in the process, and on the server
from every lease node's creation and deletion), a waiting contender of ours writes no lease
node (kazoo's rule: a lease is taken while fewer than ``max_leases`` exist), each side lists
the other's holders, a ``max_leases`` that differs from the stored one is refused both ways,
a timeout or a cancellation leaves nothing behind, and an expiry of either side's holder frees
its lease for the other side (our holder is told)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import Client, EventType, NoNodeError, PersistentWatch, Semaphore, State, TimeoutError
from aiocoord.errors import MaxLeasesMismatchError
from aiocoord.testing import expire_client, expire_session

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/semaphore.md | Failure semantics | kazoo and aiocoord holders on one semaphore, "
    "a holder's session expires": [
        "test_holders_of_both_sides_never_exceed_the_limit",
        "test_an_expired_holder_of_ours_is_told_and_kazoo_gets_its_lease",
        "test_an_expired_kazoo_holder_loses_its_lease_to_our_waiter",
    ],
}


class Holders:
    """How many hold at once across threads and tasks, and the most ever seen."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self.now = 0
        self.most = 0

    def enter(self) -> None:
        with self._mutex:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self._mutex:
            self.now -= 1


class LeaseNodes:
    """Every lease node's creation and deletion under a semaphore's path, in the server's
    order (a recursive persistent watch misses none): how many exist now, and the most ever."""

    def __init__(self, watch: PersistentWatch, path: str) -> None:
        self._watch = watch
        self._prefix = path + "/"
        self.now = 0
        self.most = 0
        self._task = asyncio.ensure_future(self._count())

    @classmethod
    async def on(cls, client: Client, path: str) -> LeaseNodes:
        return cls(await client.add_watch(path, recursive=True), path)

    async def _count(self) -> None:
        async for event in self._watch:
            if not event.path.startswith(self._prefix):
                continue  # the semaphore's own node (kazoo writes max_leases on it)
            if event.type is EventType.CREATED:
                self.now += 1
                self.most = max(self.most, self.now)
            elif event.type is EventType.DELETED:
                self.now -= 1

    async def settled(self, count: int) -> None:
        """Wait until ``count`` lease nodes exist, as the events tell, and stop counting
        if none is left to count."""
        await eventually(lambda: _is(self.now, count), what=f"{count} lease nodes")

    async def close(self) -> None:
        await self._watch.aclose()
        await self._task


async def _is(value: int, expected: int) -> bool:
    return value == expected


async def test_holders_of_both_sides_never_exceed_the_limit(
    zk_connect: Factory, kazoo: Any
) -> None:
    limit, rounds = 2, 6
    holders = Holders()
    nodes = await LeaseNodes.on(await zk_connect(), "/sem")

    async def ours(i: int) -> None:
        client = await zk_connect()
        semaphore = Semaphore(client, "/sem", limit, identifier=f"py-{i}", layout="kazoo")
        for _ in range(rounds):
            async with semaphore.lease(timeout=60):
                holders.enter()
                await asyncio.sleep(0.005)
                holders.leave()

    def theirs(i: int) -> None:
        semaphore = kazoo.Semaphore("/sem", f"kazoo-{i}", max_leases=limit)
        for _ in range(rounds):
            assert semaphore.acquire(timeout=60)
            holders.enter()
            threading.Event().wait(0.005)
            holders.leave()
            semaphore.release()

    await asyncio.gather(
        ours(0), ours(1), asyncio.to_thread(theirs, 0), asyncio.to_thread(theirs, 1)
    )
    await nodes.settled(0)
    await nodes.close()
    assert holders.most <= limit
    assert 0 < nodes.most <= limit
    client = await zk_connect()
    assert await client.children("/sem") == []
    data, _ = await client.get("/sem")
    assert data == b"2"  # max_leases as kazoo stores it


async def test_each_side_lists_the_others_holders(zk_connect: Factory, kazoo: Any) -> None:
    client = await zk_connect()
    ours = Semaphore(client, "/sem", 3, identifier="py-holder", layout="kazoo")
    (lease,) = await ours.acquire(1, timeout=10)
    theirs = kazoo.Semaphore("/sem", "kazoo-holder", max_leases=3)
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    assert sorted(await asyncio.to_thread(theirs.lease_holders)) == ["kazoo-holder", "py-holder"]
    assert sorted(p.identifier for p in await ours.participants()) == [
        "kazoo-holder",
        "py-holder",
    ]
    await asyncio.to_thread(theirs.release)
    await lease.release()


async def test_a_different_max_leases_is_refused_both_ways_before_anything_is_written(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    theirs = kazoo.Semaphore("/sem", "kazoo", max_leases=2)
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    await asyncio.to_thread(theirs.release)
    ours = Semaphore(client, "/sem", 3, layout="kazoo")
    with pytest.raises(MaxLeasesMismatchError) as raised:
        await ours.acquire(1, timeout=10)
    assert isinstance(raised.value, ValueError) and raised.value.stored == 2
    assert await client.children("/sem") == []
    assert (
        await client.exists("/sem-__lock__") is None or await client.children("/sem-__lock__") == []
    )
    # And kazoo refuses a semaphore of ours with another number.
    (lease,) = await Semaphore(client, "/other", 1, layout="kazoo").acquire(1, timeout=10)
    with pytest.raises(ValueError, match="Inconsistent max leases"):
        await asyncio.to_thread(kazoo.Semaphore("/other", "kazoo", max_leases=4).acquire)
    await lease.release()


async def test_an_expired_holder_of_ours_is_told_and_kazoo_gets_its_lease(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    ours = Semaphore(client, "/sem", 1, layout="kazoo")
    (lease,) = await ours.acquire(1, timeout=10)
    theirs = kazoo.Semaphore("/sem", "kazoo", max_leases=1)
    waiting = asyncio.ensure_future(asyncio.to_thread(theirs.acquire, True, 60))
    await eventually(lambda: _exists(client, "/sem-__lock__"), what="kazoo waiting")
    await expire_client(client, zookeeper.connect_string)
    assert await lease.lost.wait(30) is State.LOST
    assert await client.exists(lease.path) is None
    assert await waiting
    assert await asyncio.to_thread(theirs.lease_holders) == ["kazoo"]
    await asyncio.to_thread(theirs.release)


async def _exists(client: Any, path: str) -> bool:
    try:
        return bool(await client.children(path))
    except NoNodeError:
        return False


async def test_a_waiting_contender_of_ours_writes_no_lease_node_and_leaves_nothing(
    zk_connect: Factory, kazoo: Any
) -> None:
    # kazoo's rule: the lock holder takes a lease only while fewer than max_leases nodes
    # exist, so kazoo's lease_holders() never lists a waiter. A timeout and a cancellation
    # (both while ours holds the lock and watches the leases) leave no node of ours.
    client = await zk_connect()
    nodes = await LeaseNodes.on(client, "/sem")
    theirs = kazoo.Semaphore("/sem", "kazoo", max_leases=1)
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    ours = Semaphore(client, "/sem", 1, identifier="py", layout="kazoo")
    with pytest.raises(TimeoutError):
        await ours.acquire(1, timeout=0.5)
    waiting = asyncio.ensure_future(ours.acquire(1, timeout=60))
    await eventually(lambda: _exists(client, "/sem-__lock__"), what="our contender")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await client.wait_background()
    assert await asyncio.to_thread(theirs.lease_holders) == ["kazoo"]
    assert await client.children("/sem-__lock__") == []
    await asyncio.to_thread(theirs.release)
    (lease,) = await ours.acquire(1, timeout=10)
    await lease.release()
    await nodes.settled(0)
    await nodes.close()
    assert nodes.most == 1


async def test_several_leases_at_once_wait_until_they_all_fit(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    nodes = await LeaseNodes.on(client, "/sem")
    first = kazoo.Semaphore("/sem", "kazoo-1", max_leases=3)
    second = kazoo.Semaphore("/sem", "kazoo-2", max_leases=3)
    assert await asyncio.to_thread(first.acquire, True, 10)
    assert await asyncio.to_thread(second.acquire, True, 10)
    ours = Semaphore(client, "/sem", 3, identifier="py", layout="kazoo")
    waiting = asyncio.ensure_future(ours.acquire(2, timeout=60))
    await eventually(lambda: _exists(client, "/sem-__lock__"), what="our contender")
    await asyncio.to_thread(first.release)
    leases = await waiting
    assert sorted(await asyncio.to_thread(second.lease_holders)) == ["kazoo-2", "py", "py"]
    for lease in leases:
        await lease.release()
    await asyncio.to_thread(second.release)
    await nodes.settled(0)
    await nodes.close()
    assert nodes.most == 3


async def test_an_expired_kazoo_holder_loses_its_lease_to_our_waiter(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    theirs = kazoo.Semaphore("/sem", "kazoo", max_leases=1)
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    ours = Semaphore(client, "/sem", 1, identifier="py", layout="kazoo")
    waiting = asyncio.ensure_future(ours.acquire(1, timeout=60))
    await eventually(lambda: _exists(client, "/sem-__lock__"), what="our contender")
    session_id, password = kazoo.client_id
    await expire_session(session_id, password, zookeeper.connect_string)
    (lease,) = await waiting
    assert [p.identifier for p in await ours.participants()] == ["py"]
    await lease.release()


async def test_our_waiter_whose_session_expires_queues_again_and_writes_no_extra_lease(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    nodes = await LeaseNodes.on(await zk_connect(), "/sem")
    theirs = kazoo.Semaphore("/sem", "kazoo", max_leases=1)
    assert await asyncio.to_thread(theirs.acquire, True, 10)
    ours = Semaphore(client, "/sem", 1, identifier="py", layout="kazoo")
    waiting = asyncio.ensure_future(ours.acquire(1, timeout=60))
    await eventually(lambda: _exists(client, "/sem-__lock__"), what="our contender")
    await expire_client(client, zookeeper.connect_string)
    await eventually(lambda: _exists(client, "/sem-__lock__"), what="our contender again")
    await asyncio.to_thread(theirs.release)
    (lease,) = await waiting
    assert [p.identifier for p in await ours.participants()] == ["py"]
    await lease.release()
    await nodes.settled(0)
    await nodes.close()
    assert nodes.most == 1
