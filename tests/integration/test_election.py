"""LeaderLatch and Election against a real server: one leader, Curator's layout, hand-over on
close, change streams, deleted nodes and paths, the ephemeral-owner check, loss cancelling the
body, requeueing."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client, State
from aiocoord.recipes.election import (
    Election,
    LeaderLatch,
    LeadershipChange,
    LeadershipLostError,
    LeadershipTerm,
)
from aiocoord.testing import FaultProxy, expire_session, session_of

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
LATCH_NODE = re.compile(rf"^_c_{UUID}-latch-\d{{10}}$")
ELECTION_NODE = re.compile(rf"^_c_{UUID}-lock-\d{{10}}$")


async def one_leader(latches: list[LeaderLatch], timeout: float = 10.0) -> LeaderLatch:
    async def check() -> bool:
        return sum(latch.is_leader for latch in latches) == 1

    await eventually(check, timeout)
    leaders = [latch for latch in latches if latch.is_leader]
    assert len(leaders) == 1
    return leaders[0]


# --- LeaderLatch ------------------------------------------------------------------------


async def test_latch_elects_one_leader_on_curators_layout(zk_connect: Factory) -> None:
    clients = [await zk_connect() for _ in range(3)]
    latches = [LeaderLatch(c, "/latch", identifier=f"node-{i}") for i, c in enumerate(clients)]
    for latch in latches:
        await latch.start()
    leader = await one_leader(latches)
    names = await child_names(clients[0], "/latch")
    assert len(names) == 3
    assert all(LATCH_NODE.match(n) for n in names), names
    participants = await latches[0].participants()
    assert [p.holds for p in participants] == [True, False, False]
    assert [p.is_leader for p in participants] == [True, False, False]  # Curator's name
    assert participants[0].identifier == leader.identifier
    assert sorted(p.identifier for p in participants) == ["node-0", "node-1", "node-2"]
    leader_node = await latches[1].leader()
    assert leader_node is not None
    assert leader_node.identifier == leader.identifier
    # The node holds the identifier, and the term's token is the node's czxid.
    assert leader.term is not None
    data, stat = await clients[0].get(leader.term.node_path)
    assert data == leader.identifier.encode()
    assert leader.fencing_token == stat.czxid
    for latch in latches:
        await latch.close()
    # close() waits only briefly for its delete to be answered: wait for them before looking.
    await asyncio.gather(*(c.wait_background() for c in clients))
    assert await child_names(clients[0], "/latch") == []


async def test_closing_the_leader_hands_over_with_a_larger_fencing_token(
    zk_connect: Factory,
) -> None:
    clients = [await zk_connect() for _ in range(3)]
    latches = [LeaderLatch(c, "/handover", identifier=f"n{i}") for i, c in enumerate(clients)]
    for latch in latches:
        await latch.start()
    tokens = []
    remaining = list(latches)
    while remaining:
        leader = await one_leader(remaining)
        assert leader.fencing_token is not None
        tokens.append(leader.fencing_token)
        remaining.remove(leader)
        await leader.close()
        assert not leader.is_leader
    assert tokens == sorted(tokens)
    assert len(set(tokens)) == 3


async def test_wait_until_leader_times_out_with_timeout_error(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    async with LeaderLatch(a, "/wait", identifier="a") as first:
        assert await first.wait_until_leader(5)
        async with LeaderLatch(b, "/wait", identifier="b") as second:
            with pytest.raises(aiocoord.TimeoutError):
                await second.wait_until_leader(0.2)
            assert not second.is_leader
            await first.close()
            assert await second.wait_until_leader(5)


async def test_changes_stream_next_change_and_listener_report_each_term(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    admin = await zk_connect()
    latch = LeaderLatch(client, "/stream", identifier="me")
    seen: list[LeadershipChange] = []
    latch.add_listener(seen.append)
    stream = latch.changes()
    next_change = asyncio.ensure_future(latch.next_change(5))
    await latch.start()
    first = await stream.get(5)
    assert first.is_leader
    assert first.term is not None
    assert (await next_change) == first
    # Deleting the leader's node ends the term; the latch joins again and leads anew.
    await admin.delete(first.term.node_path)
    ended = await stream.get(5)
    assert (ended.is_leader, ended.reason) == (False, "deleted")
    again = await stream.get(5)
    assert again.is_leader
    assert again.term is not None
    assert again.term.fencing_token > first.term.fencing_token
    await latch.close()
    left = await stream.get(5)
    assert (left.is_leader, left.reason) == (False, "left")
    assert [c async for c in stream] == []  # the stream ended with the latch
    assert seen == [first, ended, again, left]


async def test_latch_rejoins_when_the_whole_path_vanishes(zk_connect: Factory) -> None:
    a, b, admin = await zk_connect(), await zk_connect(), await zk_connect()
    latches = [
        LeaderLatch(a, "/gone/latch", identifier="a"),
        LeaderLatch(b, "/gone/latch", identifier="b"),
    ]
    for latch in latches:
        await latch.start()
    leader = await one_leader(latches)
    token = leader.fencing_token
    assert token is not None
    await admin.delete("/gone", recursive=True)

    async def rejoined() -> bool:
        names = await child_names(admin, "/gone/latch")
        new_leader = [x for x in latches if x.is_leader]
        return (
            len(names) == 2
            and len(new_leader) == 1
            and ((new_leader[0].fencing_token or 0) > token)
        )

    await eventually(rejoined)
    for latch in latches:
        await latch.close()


async def test_session_policy_keeps_leadership_through_a_dropped_connection(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    async with LeaderLatch(client, "/policy", identifier="me", suspended_is_loss=False) as latch:
        assert await latch.wait_until_leader(5)
        token = latch.fencing_token
        changes = latch.changes()
        session_of(client).drop_connection()
        await client.wait_for(State.RECONNECTED, timeout=10)
        assert latch.is_leader
        assert latch.fencing_token == token
        assert changes.pending == 0


async def test_suspension_ends_leadership_under_the_default_policy(zk_connect: Factory) -> None:
    client, other = await zk_connect(), await zk_connect()
    async with LeaderLatch(client, "/suspend", identifier="a") as a:
        assert await a.wait_until_leader(5)
        b = LeaderLatch(other, "/suspend", identifier="b")
        await b.start()
        await eventually(lambda: _count(other, "/suspend", 2))
        changes = a.changes()
        session_of(client).drop_connection()
        ended = await changes.get(5)
        assert (ended.is_leader, ended.reason) == (False, "suspended")
        # The node is deleted once reconnected and `a` queues again behind `b`.
        assert await b.wait_until_leader(10)
        assert not a.is_leader
        await b.close()


# --- Election ---------------------------------------------------------------------------


async def test_election_runs_the_body_only_while_leader(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    first, second = (
        Election(a, "/elect", identifier="first"),
        Election(b, "/elect", identifier="second"),
    )
    async with first.leadership() as term:
        assert isinstance(term, LeadershipTerm)
        assert first.is_leader
        names = await child_names(a, "/elect")
        assert len(names) == 1
        assert ELECTION_NODE.match(names[0])
        with pytest.raises(asyncio.TimeoutError):
            async with second.leadership(timeout=0.2):
                pytest.fail("two leaders")
        await b.wait_background()  # its node's delete, written before the timeout was raised
        assert len(await child_names(a, "/elect")) == 1  # the timed-out contender left no node
        leader = await second.leader()
        assert leader is not None
        assert leader.identifier == "first"
        waiting = asyncio.ensure_future(second.leadership().__aenter__())
        await eventually(lambda: _count(a, "/elect", 2))
        contenders = await first.contenders()
        assert [(c.identifier, c.holds) for c in contenders] == [
            ("first", True),
            ("second", False),
        ]
        assert not waiting.done()
    assert not first.is_leader
    second_term = await asyncio.wait_for(waiting, 5)
    assert second_term.fencing_token > term.fencing_token
    assert second.is_leader


async def _count(client: Client, path: str, n: int) -> bool:
    return len(await child_names(client, path)) == n


async def test_session_expiry_cancels_the_body_and_raises_leadership_lost(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, other = await zk_connect(session_timeout=4), await zk_connect()
    election = Election(client, "/expiry", identifier="a")
    successor = Election(other, "/expiry", identifier="b")
    reached_end = False

    async def lead_until_expired() -> None:
        nonlocal follower, reached_end
        async with election.leadership():
            follower = asyncio.ensure_future(successor.leadership().__aenter__())
            await eventually(lambda: _count(other, "/expiry", 2))
            nonlocal expiry
            # Expired from another task: the body waits in a plain sleep, where the
            # cancellation lands (asyncio.wait_for in 3.11 may swallow one that races it).
            expiry = asyncio.ensure_future(
                expire_session(
                    client.session_id, session_of(client).password, zookeeper.connect_string
                )
            )
            await asyncio.sleep(30)  # cancelled when the leadership ends
            reached_end = True

    follower: asyncio.Future[LeadershipTerm] | None = None
    expiry: asyncio.Future[None] | None = None
    with pytest.raises(LeadershipLostError):
        await lead_until_expired()
    assert expiry is not None
    await expiry
    assert follower is not None
    assert not reached_end
    assert not election.is_leader
    await asyncio.wait_for(follower, 10)
    assert successor.is_leader
    assert [c.identifier for c in await successor.contenders()] == ["b"]


async def test_deleted_node_cancels_the_body(zk_connect: Factory) -> None:
    client, admin = await zk_connect(), await zk_connect()
    election = Election(client, "/deleted", identifier="a")

    async def lead_until_deleted() -> None:
        async with election.leadership() as term:
            await admin.delete(term.node_path)
            await asyncio.sleep(30)  # cancelled when the leadership ends

    with pytest.raises(LeadershipLostError, match="deleted"):
        await lead_until_deleted()
    assert await child_names(admin, "/deleted") == []


async def test_cancelling_the_body_from_outside_is_not_a_loss(zk_connect: Factory) -> None:
    client = await zk_connect()
    election = Election(client, "/outside", identifier="a")
    entered = asyncio.Event()

    async def body() -> None:
        async with election.leadership():
            entered.set()
            await asyncio.sleep(30)

    task = asyncio.ensure_future(body())
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await client.wait_background()
    assert await child_names(client, "/outside") == []


async def test_run_with_requeue_takes_turns_in_queue_order(zk_connect: Factory) -> None:
    a, b = await zk_connect(), await zk_connect()
    terms: list[LeadershipTerm] = []
    done = asyncio.Event()

    async def lead(term: LeadershipTerm) -> None:
        terms.append(term)
        # Each term lasts until the other contender is queued behind it (its requeue after
        # its own term races with this term's end otherwise): then the turns are strict.
        await eventually(lambda: _count(a, "/turns", 2))
        if len(terms) >= 6:
            done.set()
            await asyncio.sleep(30)  # cancelled by close()

    first, second = Election(a, "/turns", identifier="a"), Election(b, "/turns", identifier="b")
    first.start(lead)
    await eventually(lambda: _done(terms, 1))
    second.start(lead)
    await asyncio.wait_for(done.wait(), 10)
    await first.close()
    await second.close()
    who = [t.identifier for t in terms[:6]]
    assert who == ["a", "b", "a", "b", "a", "b"]
    tokens = [t.fencing_token for t in terms]
    assert tokens == sorted(tokens)
    await a.wait_background()
    await b.wait_background()
    assert await child_names(a, "/turns") == []


async def test_without_requeue_one_term_then_requeue_joins_again(zk_connect: Factory) -> None:
    client = await zk_connect()
    terms: list[LeadershipTerm] = []

    async def lead(term: LeadershipTerm) -> None:
        terms.append(term)

    election = Election(client, "/once", identifier="a")
    election.start(lead, requeue=False)
    await eventually(lambda: _done(terms, 1))
    await eventually(lambda: _true(election.requeue))
    await eventually(lambda: _done(terms, 2))
    await election.close()
    assert terms[1].fencing_token > terms[0].fencing_token


async def _done(terms: list[LeadershipTerm], n: int) -> bool:
    return len(terms) >= n


async def _true(func: Callable[[], bool]) -> bool:
    return func()


@pytest.mark.parametrize("suspended_is_loss", [True, False])
async def test_a_term_ends_on_a_cut_link_and_goes_on_under_the_session_policy(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, suspended_is_loss: bool
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    other = await zk_connect()
    election = Election(client, "/cut-term", identifier="a", suspended_is_loss=suspended_is_loss)
    latch = LeaderLatch(client, "/cut-latch", identifier="a", suspended_is_loss=suspended_is_loss)
    await latch.start()
    assert await latch.wait_until_leader(10)
    latch_changes = latch.changes()
    entered, cut, healed = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def lead() -> None:
        async with election.leadership(timeout=10):
            entered.set()
            await cut.wait()
            await healed.wait()  # cancelled here under the standard policy

    term = asyncio.ensure_future(lead())
    await asyncio.wait_for(entered.wait(), 10)
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    cut.set()
    if suspended_is_loss:
        with pytest.raises(LeadershipLostError):
            await asyncio.wait_for(term, 5)
        ended = await latch_changes.get(5)
        assert (ended.is_leader, ended.reason) == (False, "suspended")
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    if not suspended_is_loss:
        healed.set()
        await asyncio.wait_for(term, 5)  # the term went on through the cut
        assert latch.is_leader and latch_changes.pending == 0
    await latch.close()
    await election.close()
    await client.wait_background()
    # Nothing of either is left on the server.
    assert await child_names(other, "/cut-term") == []
    assert await child_names(other, "/cut-latch") == []
