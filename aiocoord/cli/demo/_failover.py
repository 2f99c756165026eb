"""The demo's failover: the leader holds the lock for "maintenance" while the ensemble member
its session is connected to is killed (with ``--connect``: its connection is dropped), a
newcomer joins through a surviving member, and the demo checks, against the server, that the
session, the lock and the leadership came through (see :mod:`aiocoord.cli.demo`)."""

from __future__ import annotations

import asyncio
import time

from aiocoord._connect import open_client
from aiocoord.cli.demo._board import yes
from aiocoord.cli.demo._cast import (
    LOCK_PATH,
    MEMBERS_PATH,
    SESSION_TIMEOUT,
    STEP_TIMEOUT,
    Worker,
    bounded,
)
from aiocoord.cli.demo._stage import Stage
from aiocoord.client import State, StateChange
from aiocoord.errors import CoordinationError
from aiocoord.recipes.lock import Lock
from aiocoord.recipes.nodes import GroupMember
from aiocoord.testing.plumbing import session_of

__all__ = ["failover"]


async def failover(demo: Stage) -> None:
    """The leader takes the lock and loses its server; then check what survived."""
    assert demo.dashboard is not None
    await bounded(demo.elected.wait(), "electing a leader")
    leader = demo.leader()
    if leader is None:
        raise CoordinationError("demo: the leader stepped down before the failover")
    demo.phase = f"failover: {leader.name} (leader) takes the lock for maintenance"
    term = leader.latch.term
    assert term is not None
    demo.leader_events = leader.member.changes()
    demo.spawn(
        demo.follow_cache(
            f"{leader.name}'s cache", demo.leader_events, set(leader.member.members())
        ),
        "leader-cache",
    )
    if not await leader.lock.acquire(timeout=STEP_TIMEOUT):
        raise CoordinationError("demo: the leader could not take the lock")
    try:
        demo.maintenance = leader
        token = leader.lock.fencing_token
        node = leader.lock.node_path
        demo.enter_critical(token)
        demo.board.event(
            f"{leader.name} (leader) holds the lock for maintenance, fencing token {token}"
        )
        session = leader.client.session_id
        sessions = {w.name: w.client.session_id for w in demo.workers}
        reconnected: asyncio.Future[StateChange] = asyncio.get_running_loop().create_future()

        def on_change(change: StateChange) -> None:
            if change.state in (State.RECONNECTED, State.LOST) and not reconnected.done():
                reconnected.set_result(change)

        remove = leader.client.add_state_listener(on_change)
        try:
            t0 = await break_connection(demo, leader)
            demo.spawn(join_newcomer(demo), "newcomer")
            change = await bounded(reconnected, f"{leader.name}'s reconnect")
        finally:
            remove()
        demo.result.failover_seconds = time.monotonic() - t0
        demo.result.same_session = (
            change.state is State.RECONNECTED
            and not change.new_session
            and leader.client.session_id == session
        )
        demo.phase = "failover: checking the lock, the leadership and the caches"
        demo.board.event(
            f"{leader.name} failed over in {demo.result.failover_seconds:.2f} s to "
            f"{demo.where(leader.client)}: same session "
            f"{yes(demo.result.same_session)} (0x{leader.client.session_id:x})"
        )
        # The lock, as the server sees it: our node is there, owned by our session, first.
        assert node is not None
        await demo.dashboard.sync(LOCK_PATH)
        stat = await demo.dashboard.exists(node)
        queue = await Lock(demo.dashboard, LOCK_PATH).contenders()
        demo.result.lock_held = (
            leader.lock.held_by_current_task
            and not leader.lock.lost.is_set()
            and leader.lock.fencing_token == token
            and stat is not None
            and stat.ephemeral_owner == leader.client.session_id
            and bool(queue)
            and queue[0].holds
            and queue[0].identifier == leader.name
        )
        demo.board.event(
            f"lock after the failover: held by {queue[0].identifier if queue else 'nobody'} "
            f"(server), {leader.name} still holds it: {yes(demo.result.lock_held)}; "
            f"{len(queue) - 1} waiting"
        )
    finally:
        demo.maintenance = None
        demo.holders -= 1
        await leader.lock.release()
    demo.board.event(f"{leader.name} released the lock; the workers go on")
    demo.phase = "after the failover: work goes on"
    now = await leader.latch.leader()
    demo.result.leader_unchanged = (
        leader.latch.is_leader
        and leader.latch.term is not None
        and leader.latch.term.fencing_token == term.fencing_token
        and demo.leadership_changes == 0
        and now is not None
        and now.identifier == leader.name
    )
    demo.board.event(
        f"leader after the failover: {now.identifier if now else 'nobody'}; "
        f"unchanged: {yes(demo.result.leader_unchanged)}"
    )
    demo.result.sessions_kept = all(w.client.session_id == sessions[w.name] for w in demo.workers)


async def break_connection(demo: Stage, leader: Worker) -> float:
    """Kill the member the leader is connected to (or drop its connection); the time."""
    server = session_of(leader.client).server
    assert server is not None
    if demo.ensemble is None:
        demo.notes.append(
            "--connect: no ensemble member to kill, so the leader's connection was dropped"
        )
        demo.board.event(
            f"dropping {leader.name}'s connection to {server} "
            "(with --connect there is no ensemble member to kill)"
        )
        demo.failover_started = time.monotonic()
        session_of(leader.client).drop_connection()
        return demo.failover_started
    index = demo.ensemble.index_of_port(server.port)
    on_it = [w.name for w in demo.workers if session_of(w.client).server == server]
    demo.phase = f"failover: member {index + 1} killed"
    demo.board.event(
        f"killing ZooKeeper member {index + 1} ({server}, {demo.member_modes[index]}), "
        f"which {leader.name} is connected to; sessions on it: {', '.join(on_it)}"
    )
    demo.failover_started = time.monotonic()
    await asyncio.to_thread(demo.ensemble.kill, index)
    demo.restart_task = demo.spawn(restart_member(demo, index), "restart")
    return demo.failover_started


async def restart_member(demo: Stage, index: int) -> None:
    """Bring a killed member back."""
    assert demo.ensemble is not None
    await demo.log_modes()
    await asyncio.to_thread(demo.ensemble.restart, index)
    demo.board.event(f"member {index + 1} restarted and back in the quorum")
    await demo.log_modes()


async def join_newcomer(demo: Stage) -> None:
    """A member joins through a surviving server while the failover goes on."""
    hosts = demo.connect
    if demo.ensemble is not None:
        down = {i for i, m in enumerate(demo.ensemble.members) if not m.is_running}
        alive = [i for i in range(3) if i not in down]
        hosts = demo.ensemble.member_connect_string(alive[0]) + demo.base
    client = await open_client(hosts, session_timeout=SESSION_TIMEOUT)
    member = GroupMember(client, MEMBERS_PATH, "newcomer", b"joined during the failover")
    demo.newcomer = (client, member)
    await member.start()
    await bounded(member.node.wait_for_initial_create(), "the newcomer's join")
    demo.board.event(f"newcomer joined the group through {demo.where(client)}")
