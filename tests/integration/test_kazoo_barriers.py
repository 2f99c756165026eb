"""kazoo's ``Barrier`` and ``DoubleBarrier`` (2.x, in threads) and aiocoord's on one path.

A barrier is one node (up while it exists), and a double barrier is one ephemeral node per
member plus ``ready``, left in the same order (the lowest name waits for the highest, every
other member deletes itself and waits for the lowest). kazoo's layout differs in the member's
name (a UUID's hex digits, Curator's a dashed UUID; both sides sort all names alike) and in
``ready``: kazoo counts it as a member when it leaves, and deletes it first thing; our members
in kazoo's layout do too (a test holds why).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest
from support import Factory, eventually

import aiocoord
from aiocoord import Barrier, DoubleBarrier, NoNodeError
from aiocoord.testing import expire_client, expire_session

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/barriers.md | Failure semantics | kazoo and aiocoord members on one path, a "
    "member's session expires while it waits": [
        "test_a_barrier_set_by_either_side_holds_both_and_its_removal_frees_both",
        "test_a_double_barrier_of_kazoo_and_aiocoord_members_enters_and_leaves_together",
        "test_a_member_whose_session_expires_while_it_waits_enters_on_its_new_session",
        "test_a_kazoo_member_whose_session_expires_while_it_waits_is_not_counted",
        "test_a_ready_node_made_again_after_kazoo_deleted_it_does_not_hold_kazoo_leaving",
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
    # Nobody leaves before every member is in: kazoo's enter makes its node before it
    # watches `ready`, so a kazoo member still entering would miss a `ready` already deleted
    # by a leaver (kazoo's own race, among kazoo members alone too).
    all_in = threading.Barrier(members, timeout=30)

    def note(into: list[str], who: str) -> None:
        with mutex:
            into.append(who)

    def check(seen: list[str], who: str, what: str) -> None:
        with mutex:
            if len(seen) < members:
                early.append(f"{who} {what} with {len(seen)} of {members}")

    async def ours(i: int) -> None:
        client = await zk_connect()
        barrier = DoubleBarrier(client, "/double", members, layout="kazoo")
        assert len(barrier.node_name) == 32  # kazoo's: a UUID's hex digits
        note(arrived, f"py-{i}")
        assert await barrier.enter(timeout=30)
        check(arrived, f"py-{i}", "entered")
        await asyncio.to_thread(all_in.wait)
        note(leaving, f"py-{i}")
        assert await barrier.leave(timeout=30)
        check(leaving, f"py-{i}", "left")

    def theirs(i: int) -> None:
        barrier = kazoo.DoubleBarrier("/double", members, f"kazoo-{i}")
        note(arrived, f"kazoo-{i}")
        barrier.enter()
        check(arrived, f"kazoo-{i}", "entered")
        all_in.wait()
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
    ours = DoubleBarrier(client, "/double", 2, layout="kazoo")
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


async def test_a_ready_node_made_again_after_kazoo_deleted_it_does_not_hold_kazoo_leaving(
    zk_connect: Factory, kazoo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kazoo counts ``ready`` as a member when it leaves (it sorts last, after every UUID):
    its lowest member waits for ``ready`` to go. Our member that counted ``n`` just before
    kazoo's made ``ready``, entered and began to leave (deleting it) makes ``ready`` again;
    our leave deletes it first thing, as kazoo's does, so kazoo's lowest is not held."""
    members = 3
    low = kazoo.DoubleBarrier("/double", members, "kazoo-low")
    low.node_name = "0" * 32  # kazoo's lowest: it waits for the highest name to leave
    low.create_path = "/double/" + low.node_name
    high = kazoo.DoubleBarrier("/double", members, "kazoo-high")
    client = await zk_connect()
    ours = DoubleBarrier(client, "/double", members, layout="kazoo")
    low_entering = asyncio.ensure_future(asyncio.to_thread(low.enter))
    high_entering = asyncio.ensure_future(asyncio.to_thread(high.enter))
    await eventually(lambda: _children(client, "/double", 2), what="kazoo's two members")
    kazoo_leaving: list[asyncio.Future[None]] = []
    count = DoubleBarrier._count

    async def counted_then_overtaken(self: DoubleBarrier) -> int:
        n = await count(self)
        if not kazoo_leaving:
            # The interleaving under test, between our count's reply and our create of
            # `ready`: kazoo makes it, both kazoo members enter and begin to leave.
            await asyncio.to_thread(kazoo.ensure_path, "/double/ready")
            await low_entering
            await high_entering
            kazoo_leaving.append(asyncio.ensure_future(asyncio.to_thread(low.leave)))
            kazoo_leaving.append(asyncio.ensure_future(asyncio.to_thread(high.leave)))
            await eventually(lambda: _gone(client, "/double/ready"), what="ready deleted")
            await eventually(lambda: _gone(client, high.create_path), what="kazoo-high left")
        return n

    monkeypatch.setattr(DoubleBarrier, "_count", counted_then_overtaken)
    try:
        assert await ours.enter(timeout=30)
        assert await client.exists("/double/ready") is not None  # made again, by us
        assert await ours.leave(timeout=10)
        await asyncio.wait_for(asyncio.shield(asyncio.gather(*kazoo_leaving)), 10)
        assert await client.children("/double") == []
    finally:
        # On failure, free kazoo's threads (their waits have no timeout) so the test ends.
        for path in ("/double/ready", ours.node_path):
            with contextlib.suppress(NoNodeError):
                await client.delete(path)
        await asyncio.gather(*kazoo_leaving, return_exceptions=True)


async def _gone(client: Any, path: str) -> bool:
    return await client.exists(path) is None


async def test_a_kazoo_member_whose_session_expires_while_it_waits_is_not_counted(
    zookeeper: Any, zk_connect: Factory, zk_namespace: str, kazoo: Any
) -> None:
    """kazoo's member's node goes with its session, so the barrier counts it no more: nobody
    enters until an n-th member arrives, then the others enter together and leave together.
    kazoo leaves the expired member waiting (its watch went with the session, and kazoo
    does not make its node again: kazoo's docs say to listen for the session's loss)."""
    from kazoo.client import KazooClient

    members = 3
    expiring = KazooClient(hosts=zookeeper.connect_string + zk_namespace)
    await asyncio.to_thread(expiring.start, 10)
    waits: list[threading.Event] = []
    make_event = expiring.handler.event_object

    def recorded() -> threading.Event:
        event: threading.Event = make_event()
        waits.append(event)  # to let kazoo's stuck member out when the test ends
        return event

    expiring.handler.event_object = recorded
    theirs = expiring.DoubleBarrier("/double", members, "kazoo-expiring")
    stuck = asyncio.ensure_future(asyncio.to_thread(theirs.enter))
    try:
        a, b = await zk_connect(), await zk_connect()
        first = DoubleBarrier(a, "/double", members, layout="kazoo")
        first_in = asyncio.ensure_future(first.enter(timeout=30))
        await eventually(lambda: _children(a, "/double", 2), what="two members")
        await expire_session(*expiring.client_id, zookeeper.connect_string)
        await eventually(lambda: _children(a, "/double", 1), what="kazoo's node gone")
        second = DoubleBarrier(b, "/double", members, layout="kazoo")
        second_in = asyncio.ensure_future(second.enter(timeout=30))
        await eventually(lambda: _children(a, "/double", 2), what="our second member")
        # Two live members of three: nobody is let in.
        assert await a.exists("/double/ready") is None
        assert not (first_in.done() or second_in.done() or stuck.done())
        again = kazoo.DoubleBarrier("/double", members, "kazoo-again")
        await asyncio.wait_for(asyncio.to_thread(again.enter), 30)
        assert await first_in and await second_in
        assert not stuck.done()  # kazoo's expired member still waits, and is no member
        assert theirs.node_name not in await a.children("/double")
        await asyncio.wait_for(
            asyncio.gather(
                first.leave(timeout=30), second.leave(timeout=30), asyncio.to_thread(again.leave)
            ),
            30,
        )
        assert await a.children("/double") == []
    finally:
        for event in waits:
            event.set()
        await stuck
        await asyncio.to_thread(expiring.stop)
        await asyncio.to_thread(expiring.close)


async def test_our_enter_that_times_out_beside_a_kazoo_member_leaves_nothing(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    theirs = kazoo.DoubleBarrier("/double", 2, "kazoo")
    kazoo_in = asyncio.ensure_future(asyncio.to_thread(theirs.enter))
    await eventually(lambda: _children(client, "/double", 1), what="kazoo's member")
    late = DoubleBarrier(client, "/double", 3, layout="kazoo")  # waits for a third: times out
    with pytest.raises(aiocoord.TimeoutError):
        await late.enter(timeout=0.3)
    assert await client.children("/double") == [theirs.node_name]  # ours is gone
    assert not kazoo_in.done()  # and kazoo's member was not let in by it
    ours = DoubleBarrier(client, "/double", 2, layout="kazoo")
    assert await ours.enter(timeout=30)
    await kazoo_in
    leaving = asyncio.ensure_future(asyncio.to_thread(theirs.leave))
    assert await ours.leave(timeout=30)
    await leaving
