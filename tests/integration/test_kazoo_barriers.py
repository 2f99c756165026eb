"""kazoo's ``Barrier`` and ``DoubleBarrier`` (2.x, in threads) and aiocoord's on one path.

The layouts agree without a ``layout=``: a barrier is one node (up while it exists), and a
double barrier is one ephemeral node per member plus ``ready``, left in the same order (the
lowest name waits for the highest, every other member deletes itself and waits for the
lowest). kazoo names its members with a UUID's hex digits, Curator a dashed UUID: both sides
sort all names the same way, so mixed members leave in one order.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import Barrier, DoubleBarrier, NoNodeError
from aiocoord.testing import expire_client

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/barriers.md | Failure semantics | kazoo and aiocoord members on one path, a "
    "member's session expires while it waits": [
        "test_a_barrier_set_by_either_side_holds_both_and_its_removal_frees_both",
        "test_a_double_barrier_of_kazoo_and_aiocoord_members_enters_and_leaves_together",
        "test_a_member_whose_session_expires_while_it_waits_enters_on_its_new_session",
    ],
}


async def test_a_barrier_set_by_either_side_holds_both_and_its_removal_frees_both(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    theirs = kazoo.Barrier("/gate")
    ours = Barrier(client, "/gate")
    await asyncio.to_thread(theirs.create)  # kazoo sets it
    assert await ours.is_set()
    ours_waiting = asyncio.ensure_future(ours.wait(timeout=30))
    kazoo_waiting = asyncio.ensure_future(asyncio.to_thread(theirs.wait, 30))
    assert not await asyncio.to_thread(theirs.wait, 0.1)
    assert not ours_waiting.done()
    await ours.remove()  # we lift it: both sides go through
    assert await ours_waiting
    assert await kazoo_waiting
    await ours.set()  # we set it again: kazoo waits, and its remove frees us
    assert not await asyncio.to_thread(theirs.wait, 0.1)
    ours_waiting = asyncio.ensure_future(ours.wait(timeout=30))
    assert await asyncio.to_thread(theirs.remove)
    assert await ours_waiting


async def test_a_double_barrier_of_kazoo_and_aiocoord_members_enters_and_leaves_together(
    zk_connect: Factory, kazoo: Any
) -> None:
    members = 4
    mutex = threading.Lock()
    arrived: list[str] = []
    leaving: list[str] = []
    early: list[str] = []

    def note(into: list[str], who: str) -> None:
        with mutex:
            into.append(who)

    def check(seen: list[str], who: str, what: str) -> None:
        with mutex:
            if len(seen) < members:
                early.append(f"{who} {what} with {len(seen)} of {members}")

    async def ours(i: int) -> None:
        client = await zk_connect()
        barrier = DoubleBarrier(client, "/double", members)
        note(arrived, f"py-{i}")
        assert await barrier.enter(timeout=30)
        check(arrived, f"py-{i}", "entered")
        note(leaving, f"py-{i}")
        assert await barrier.leave(timeout=30)
        check(leaving, f"py-{i}", "left")

    def theirs(i: int) -> None:
        barrier = kazoo.DoubleBarrier("/double", members, f"kazoo-{i}")
        note(arrived, f"kazoo-{i}")
        barrier.enter()
        check(arrived, f"kazoo-{i}", "entered")
        note(leaving, f"kazoo-{i}")
        barrier.leave()
        check(leaving, f"kazoo-{i}", "left")

    await asyncio.wait_for(
        asyncio.gather(
            ours(0), ours(1), asyncio.to_thread(theirs, 0), asyncio.to_thread(theirs, 1)
        ),
        60,
    )
    assert early == []
    assert len(arrived) == len(leaving) == members
    client = await zk_connect()
    assert await client.children("/double") == []  # nobody's node, and no ready node


async def test_a_member_whose_session_expires_while_it_waits_enters_on_its_new_session(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect(session_timeout=6)
    ours = DoubleBarrier(client, "/double", 2)
    entering = asyncio.ensure_future(ours.enter(timeout=30))
    await eventually(lambda: _children(client, "/double", 1), what="our member node")
    await expire_client(client, zookeeper.connect_string)
    # Its node went with the session and is made again on the new one: the barrier still
    # counts one member until kazoo's arrives, never two.
    await eventually(lambda: _children(client, "/double", 1), what="our node made again")
    assert not entering.done()
    theirs = kazoo.DoubleBarrier("/double", 2, "kazoo")
    await asyncio.to_thread(theirs.enter)
    assert await entering
    leaving = asyncio.ensure_future(asyncio.to_thread(theirs.leave))
    assert await ours.leave(timeout=30)
    await leaving


async def _children(client: Any, path: str, n: int) -> bool:
    try:
        names = await client.children(path)
    except NoNodeError:
        return False
    return len([name for name in names if name != "ready"]) == n
