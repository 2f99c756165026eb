"""Leader election under faults on a 3-member ensemble: the server of the current leader is
killed, then the leader's session is expired; leadership terms never overlap (checked in the
very step each term starts and ends, and by their fencing tokens), and a new leader emerges
after each fault."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from dataclasses import dataclass

import pytest

from aiocoord import Client, connect
from aiocoord.recipes.election import LeaderLatch, LeadershipChange
from aiocoord.testing import ZooKeeperEnsemble, expire_session, session_of

pytestmark = pytest.mark.ensemble


#: The failure-semantics rows of docs/recipes/leader.md and its rows of docs/recipes.md, with
#: the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | `LeaderLatch`": [
        "test_election.py::test_a_term_ends_on_a_cut_link_and_goes_on_under_the_session_policy",
        "test_election.py::test_suspension_ends_leadership_under_the_default_policy",
        "test_election.py::test_session_policy_keeps_leadership_through_a_dropped_connection",
        "test_leader_is_unique_and_replaced_when_its_server_dies_and_its_session_expires",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | `Election`": [
        "test_election.py::test_a_term_ends_on_a_cut_link_and_goes_on_under_the_session_policy",
        "test_election.py::test_session_expiry_cancels_the_body_and_raises_leadership_lost",
    ],
    "recipes/leader.md | Failure semantics | Loss: connection lost (SUSPENDED)": [
        "test_election.py::test_a_term_ends_on_a_cut_link_and_goes_on_under_the_session_policy",
        "test_election.py::test_suspension_ends_leadership_under_the_default_policy",
        "test_election.py::test_session_policy_keeps_leadership_through_a_dropped_connection",
    ],
    "recipes/leader.md | Failure semantics | Loss: session expired, or the node deleted": [
        "test_election.py::test_session_expiry_cancels_the_body_and_raises_leadership_lost",
        "test_election.py::test_deleted_node_cancels_the_body",
        "test_election.py::test_latch_rejoins_when_the_whole_path_vanishes",
        "test_leader_is_unique_and_replaced_when_its_server_dies_and_its_session_expires",
    ],
    "recipes/leader.md | Failure semantics | Cancellation": [
        "test_election.py::test_closing_the_leader_hands_over_with_a_larger_fencing_token",
        "test_election.py::test_cancelling_the_body_from_outside_is_not_a_loss",
        "test_lock_partition.py::test_semaphore_lease_and_latch_leave_at_once_on_a_blackholed_link",
    ],
    "recipes/leader.md | Failure semantics | Timeout": [
        "test_election.py::test_wait_until_leader_times_out_with_timeout_error",
    ],
}


@dataclass
class Term:
    identifier: str
    token: int
    start: float
    end: float | None = None


class Referee:
    """Watches every latch synchronously: at most one leads at any moment."""

    def __init__(self, latches: list[LeaderLatch]) -> None:
        self.latches = latches
        self.terms: list[Term] = []
        self.violations: list[str] = []
        self.changed = asyncio.Event()
        loop = asyncio.get_running_loop()
        for latch in latches:
            latch.add_listener(lambda change, latch=latch: self._on_change(latch, change, loop))

    def _on_change(
        self, latch: LeaderLatch, change: LeadershipChange, loop: asyncio.AbstractEventLoop
    ) -> None:
        assert change.term is not None
        if change.is_leader:
            others = [x.identifier for x in self.latches if x is not latch and x.is_leader]
            if others:
                self.violations.append(f"{latch.identifier} leads while {others} lead")
            self.terms.append(Term(latch.identifier, change.term.fencing_token, loop.time()))
        else:
            for term in reversed(self.terms):
                if term.token == change.term.fencing_token and term.end is None:
                    term.end = loop.time()
                    break
            else:
                self.violations.append(f"{latch.identifier} ended a term it never began")
        self.changed.set()

    def current(self) -> LeaderLatch | None:
        leaders = [x for x in self.latches if x.is_leader]
        return leaders[0] if leaders else None

    async def new_leader(self, after_token: int, timeout: float) -> LeaderLatch:
        """Wait for a leader whose term is later than the one with ``after_token``."""

        async def until() -> LeaderLatch:
            while True:
                leader = self.current()
                if leader is not None and (leader.fencing_token or 0) > after_token:
                    return leader
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(until(), timeout)


def member_of(ensemble: ZooKeeperEnsemble, client: Client) -> int:
    assert session_of(client).server is not None
    return ensemble.index_of_port(session_of(client).server.port)


async def test_leader_is_unique_and_replaced_when_its_server_dies_and_its_session_expires(
    zookeeper_ensemble: ZooKeeperEnsemble,
) -> None:
    ensemble = zookeeper_ensemble
    path = f"/election-faults-{uuid.uuid4().hex}/leader"
    clients = [await connect(ensemble.connect_string, session_timeout=6) for _ in range(5)]
    latches = [LeaderLatch(c, path, identifier=f"contender-{i}") for i, c in enumerate(clients)]
    referee = Referee(latches)
    killed: int | None = None
    try:
        for latch in latches:
            await latch.start()
        first = await referee.new_leader(0, timeout=15)
        first_token = first.fencing_token
        assert first_token is not None

        # Fault 1: the leader's server crashes. Its connection drops, so (suspended is loss)
        # it stops leading at once; the node is deleted once it reconnects elsewhere.
        killed = member_of(ensemble, first.client)
        await asyncio.to_thread(ensemble.kill, killed)
        await referee.new_leader(first_token, timeout=30)
        await asyncio.to_thread(ensemble.restart, killed)
        killed = None

        # Fault 2: the leader's session is expired by the server. The expiry attaches to the
        # session on the leader's own server, which closes the leader's connection before the
        # session (and its node) is ended.
        leader = await referee.new_leader(first_token, timeout=30)
        leader_token = leader.fencing_token
        assert leader_token is not None
        await expire_session(
            leader.client.session_id,
            session_of(leader.client).password,
            ensemble.member_connect_string(member_of(ensemble, leader.client)),
        )
        third = await referee.new_leader(leader_token, timeout=30)

        # The expired contender came back on a new session and queues again.
        async def everyone_queued() -> None:
            while len(await third.participants()) != 5:  # noqa: ASYNC110 - server state
                await asyncio.sleep(0.05)

        await asyncio.wait_for(everyone_queued(), 15)
    finally:
        if killed is not None:
            await asyncio.to_thread(ensemble.restart, killed)
        for latch in latches:
            await latch.close()
        for client in clients:
            await client.close()

    assert referee.violations == []
    terms = referee.terms
    assert len(terms) >= 3
    for before, after in itertools.pairwise(terms):
        # One term at a time, and each later term has a larger fencing token.
        assert before.end is not None
        assert before.end <= after.start
        assert before.token < after.token
    assert terms[-1].end is not None  # closing ended the last term
