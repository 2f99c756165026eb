"""kazoo's ``Semaphore`` (2.x, in threads) and aiocoord's in kazoo's layout on one path: the
limit is never exceeded by holders of both sides, each side lists the other's holders, a
``max_leases`` that differs from the stored one is refused both ways, and an expiry of our
holder frees its lease for kazoo (the holder is told)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import MaxLeasesMismatchError, NoNodeError, Semaphore, State
from aiocoord.testing import expire_client

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/semaphore.md | Failure semantics | kazoo and aiocoord holders on one semaphore, "
    "a holder's session expires": [
        "test_holders_of_both_sides_never_exceed_the_limit",
        "test_an_expired_holder_of_ours_is_told_and_kazoo_gets_its_lease",
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


async def test_holders_of_both_sides_never_exceed_the_limit(
    zk_connect: Factory, kazoo: Any
) -> None:
    limit, rounds = 2, 6
    holders = Holders()

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
    assert holders.most <= limit
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
    assert await waiting
    await asyncio.to_thread(theirs.release)


async def _exists(client: Any, path: str) -> bool:
    try:
        return bool(await client.children(path))
    except NoNodeError:
        return False
