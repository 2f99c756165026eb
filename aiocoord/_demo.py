"""``python -m aiocoord demo``: locks, an election and a membership cache surviving the loss of
a ZooKeeper server, in about fifteen seconds.

What happens, in order:

1. an embedded 3-member ensemble starts (:class:`~aiocoord.testing.ZooKeeperEnsemble`), or,
   with ``--connect``, an existing ZooKeeper is used under a fresh path;
2. five workers start, each with its own client and session. Each joins the group
   (:class:`~aiocoord.GroupMember`: an ephemeral node plus a ChildrenCache), stands in one
   election (:class:`~aiocoord.LeaderLatch`) and loops over jobs done under one lock
   (``async with lock:``): read the ledger node, write it back plus one. A dashboard client
   follows the membership with a :class:`~aiocoord.ChildrenCache` change stream;
3. the leader takes the lock for "maintenance" and, while it holds it, the ensemble member its
   session is connected to is killed (with ``--connect``: its connection is dropped). A
   newcomer joins the group through a surviving member during the outage;
4. the demo shows the leader's session failing over (same session id), and checks against
   the server that the lock is still held by it, that it still leads, and that every cache
   shows the membership the server has;
5. the workers stop, leave the group one by one, and a summary says what was checked.

Why the recipes survive: a failover that resumes the session within its timeout (10 s here)
keeps every ephemeral node. The lock's default policy counts only the session's end as a loss,
and the latch is made with ``suspended_is_loss=False`` so that leadership does too (the latch's
default gives leadership up on SUSPENDED, the cautious choice when a leader must never overlap
with the next one). Caches re-read what they follow after every reconnect.

The terminal view is a status table redrawn in place when stdout is a terminal, and a plain
log of events otherwise (``--plain`` forces it). Every task the demo starts is awaited before
it returns; every client is closed and the embedded ensemble stopped, even on failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import shutil
import socket
import sys
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO, TypeVar

from aiocoord._connect import open_client
from aiocoord.client import Client
from aiocoord.errors import (
    ConnectionLossError,
    CoordinationError,
    NodeExistsError,
    NoServersError,
    NotEmptyError,
)
from aiocoord.recipes.cache import CacheEventType, ChildrenCache, EventSubscription, NodeEvent
from aiocoord.recipes.election import LeaderLatch, LeadershipChange
from aiocoord.recipes.lock import Lock
from aiocoord.recipes.nodes import GroupMember
from aiocoord.session import State, StateChange
from aiocoord.testing import ZooKeeperEnsemble

__all__ = ["DemoResult", "run"]

#: Long enough that a member's death (and a quorum re-election) never expires a session.
SESSION_TIMEOUT = 10.0
#: The demo's nodes, relative to its base path.
LOCK_PATH = "/work-lock"
LEADER_PATH = "/leader"
MEMBERS_PATH = "/members"
LEDGER_PATH = "/ledger"
#: How long the workers work before the failover and after it (and at least so many jobs, for
#: meaningful counts on a slow machine, waiting up to STEP_TIMEOUT for them).
PHASE_SECONDS, PHASE_JOBS = 5.0, 40
#: Bounds on each wait, so that a broken setup ends with a message instead of hanging.
STEP_TIMEOUT = 30.0

T = TypeVar("T")


@dataclass
class DemoResult:
    """What the demo measured and checked (``run`` prints it as the summary)."""

    jobs: int = 0
    ledger: int = -1
    acquisitions: int = 0
    max_holders: int = 0
    tokens_increasing: bool = True
    failover_seconds: float | None = None
    same_session: bool = False
    lock_held: bool = False
    leader_unchanged: bool = False
    cache_in_sync: bool = False
    sessions_kept: bool = False
    checks: dict[str, bool] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return bool(self.checks) and all(self.checks.values())


@dataclass(eq=False)
class _Worker:
    """One worker: its own client (session), group membership, latch and lock."""

    name: str
    client: Client
    lock: Lock
    latch: LeaderLatch
    member: GroupMember
    jobs: int = 0
    activity: str = "starting"
    task: asyncio.Task[None] | None = None


def _without(name: str) -> Callable[[Mapping[str, Any]], bool]:
    """A cache predicate: ``name`` is not a member."""
    return lambda view: name not in view


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


async def _bounded(aw: Awaitable[T], what: str, timeout: float = STEP_TIMEOUT) -> T:
    try:
        return await asyncio.wait_for(aw, timeout)
    except asyncio.TimeoutError:
        raise CoordinationError(f"demo: {what} did not happen within {timeout:.0f} s") from None


# --- the terminal view ------------------------------------------------------------------------


class _Board:
    """Events and the status table: redrawn in place on a terminal, a plain log elsewhere."""

    def __init__(self, out: TextIO, live: bool) -> None:
        self.out = out
        self.live = live
        self.t0 = time.monotonic()
        self.recent: deque[str] = deque(maxlen=12)
        self._drawn = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def event(self, text: str) -> None:
        line = f"[{self.elapsed():5.1f}s] {text}"
        self.recent.append(line)
        if not self.live:
            print(line, file=self.out, flush=True)

    def draw(self, lines: list[str]) -> None:
        width = max(40, shutil.get_terminal_size((120, 40)).columns - 1)
        # Lines cut to the width: a wrapped line would throw off the count moved up next time.
        frame = [line[:width] for line in lines]
        if self._drawn:
            self.out.write(f"\x1b[{self._drawn}A\r\x1b[J")
        self.out.write("\n".join(frame) + "\n")
        self.out.flush()
        self._drawn = len(frame)


class _LogToBoard(logging.Handler):
    """Library warnings become events (on a terminal, stray lines would break the table)."""

    def __init__(self, board: _Board) -> None:
        super().__init__(logging.WARNING)
        self.board = board

    def emit(self, record: logging.LogRecord) -> None:
        self.board.event(f"log {record.levelname.lower()}: {record.getMessage()}")


# --- the demo -----------------------------------------------------------------------------------


class _Demo:
    def __init__(self, out: TextIO, connect: str | None, workers: int, live: bool) -> None:
        self.board = _Board(out, live)
        self.user_connect = connect
        self.n_workers = workers
        self.result = DemoResult()
        self.ensemble: ZooKeeperEnsemble | None = None
        self.member_modes: list[str] = []
        self.base = "/aiocoord-demo"
        self.connect = ""
        self.admin: Client | None = None
        self.dashboard: Client | None = None
        self.cache: ChildrenCache | None = None
        self.workers: list[_Worker] = []
        self.newcomer: tuple[Client, GroupMember] | None = None
        self.phase = "starting"
        self.stopping = False
        self.holders = 0
        self.last_token = 0
        self.maintenance: _Worker | None = None
        self.leadership_changes = 0
        self.failover_started: float | None = None
        self.notes: list[str] = []
        self.jobs_by_worker: dict[str, int] = {}
        self.elected = asyncio.Event()
        self.leader_events: EventSubscription[NodeEvent] | None = None
        self.restart_task: asyncio.Task[Any] | None = None
        self.jobs_changed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- helpers ----------------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        task.set_name(f"aiocoord-demo:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _where(self, client: Client) -> str:
        server = client.session.server
        if server is None or client.closed:
            return "-"
        if self.ensemble is not None:
            with contextlib.suppress(ValueError):
                return f"member {self.ensemble.index_of_port(server.port) + 1}"
        return str(server)

    def _modes(self) -> list[str]:
        """Each member's role: leader, follower, electing (running, not serving) or down."""
        assert self.ensemble is not None
        return [(m.mode() or "electing") if m.is_running else "down" for m in self.ensemble.members]

    def _leader(self) -> _Worker | None:
        return next((w for w in self.workers if w.latch.is_leader), None)

    def _total_jobs(self) -> int:
        return sum(w.jobs for w in self.workers)

    # --- the view ---------------------------------------------------------------------------

    def _frame(self) -> list[str]:
        b = self.board
        where = "embedded 3-member ensemble" if self.ensemble else f"ZooKeeper {self.connect}"
        lines = [f"aiocoord demo · {where} · {b.elapsed():5.1f} s · {self.phase}"]
        if self.member_modes:
            modes = "   ".join(
                f"member {i + 1}: {m.upper() if m in ('leader', 'down') else m}"
                for i, m in enumerate(self.member_modes)
            )
            lines.append(f" ZooKeeper   {modes}")
        lines.append(
            f" {'worker':<10} {'server':<16} {'session':<19} {'state':<12} "
            f"{'role':<7} {'lock':<12} {'jobs':>5}"
        )
        for w in self.workers:
            activity = "maintenance" if self.maintenance is w else w.activity
            role = "LEADER" if w.latch.is_leader else "-"
            lines.append(
                f" {w.name:<10} {self._where(w.client):<16} "
                f"{f'0x{w.client.session_id:x}':<19} {w.client.state.value:<12} "
                f"{role:<7} {activity:<12} {w.jobs:>5}"
            )
        members = sorted(self.cache.children) if self.cache is not None else []
        lines.append(
            f" jobs {self._total_jobs()} · lock acquisitions {self.result.acquisitions} · "
            f"holders at once: max {self.result.max_holders} · "
            f"members in the dashboard cache: {len(members)}"
        )
        lines.append(f" {'─' * 30} events {'─' * 30}")
        lines.extend(b.recent)
        return lines

    async def _view(self) -> None:
        """Redraw the table (terminal), or log a status line every few seconds (plain)."""
        last_status = 0.0
        last_modes = 0.0
        while True:
            now = time.monotonic()
            if self.ensemble is not None and self.board.live and now - last_modes > 1.0:
                last_modes = now
                self.member_modes = await asyncio.to_thread(self._modes)
            if self.board.live:
                self.board.draw(self._frame())
                await asyncio.sleep(0.2)
                continue
            if self.workers and now - last_status >= 3.0:
                last_status = now
                leader = self._leader()
                per = ", ".join(f"{w.name} {w.jobs}" for w in self.workers)
                self.board.event(
                    f"status: jobs {self._total_jobs()} ({per}); "
                    f"leader {leader.name if leader else '-'}; "
                    f"members {len(self.cache.children) if self.cache else 0}"
                )
            await asyncio.sleep(0.25)

    async def _log_modes(self) -> None:
        if self.ensemble is None:
            return
        self.member_modes = await asyncio.to_thread(self._modes)
        modes = ", ".join(f"member {i + 1} {m}" for i, m in enumerate(self.member_modes))
        self.board.event(f"ensemble: {modes}")

    # --- set-up -------------------------------------------------------------------------

    async def _start_servers(self) -> None:
        if self.user_connect is None:
            self.phase = "starting a 3-member ZooKeeper ensemble"
            self.board.event("starting an embedded 3-member ZooKeeper ensemble ...")
            ensemble = ZooKeeperEnsemble(3)
            await ensemble.__aenter__()
            self.ensemble = ensemble
            self.board.event(
                f"ensemble ready in {ensemble.last_start_seconds or 0:.1f} s: "
                f"{ensemble.connect_string}"
            )
            await self._log_modes()
            hosts = ensemble.connect_string
        else:
            hosts = self.user_connect
            # A path of its own, so that the demo never meets the nodes of another run.
            self.base = f"/aiocoord-demo/run-{uuid.uuid4().hex[:8]}"
            self.board.event(f"using ZooKeeper at {hosts}, under {self.base}")
        self.admin = await open_client(hosts, session_timeout=SESSION_TIMEOUT)
        await self.admin.ensure_path(self.base)
        self.connect = hosts + self.base

    async def _start_dashboard(self) -> None:
        self.dashboard = await open_client(self.connect, session_timeout=SESSION_TIMEOUT)
        self._watch_state("dashboard", self.dashboard)
        with contextlib.suppress(NodeExistsError):
            await self.dashboard.create(LEDGER_PATH, b"0")
        self.cache = ChildrenCache(self.dashboard, MEMBERS_PATH)
        cache = self.cache
        self._spawn(
            self._follow_cache("membership (dashboard cache)", cache.events(), set()),
            "cache",
        )
        await cache.start()

    async def _follow_cache(
        self, label: str, events: EventSubscription[NodeEvent], members: set[str]
    ) -> None:
        """Log a cache's change stream; ``members`` is the membership when it was subscribed,
        which the events are applied to (the count shown is as of each event, not as of when
        it is read)."""
        try:
            async for event in events:
                if event.type is CacheEventType.CHILD_ADDED:
                    members.add(event.name)
                elif event.type is CacheEventType.CHILD_REMOVED:
                    members.discard(event.name)
                self._report_cache_event(label, event, len(members))
        except CoordinationError as exc:
            self.board.event(f"{label} stopped: {exc!r}")

    def _report_cache_event(self, label: str, event: NodeEvent, count: int) -> None:
        kind = event.type
        if kind is CacheEventType.CHILD_ADDED:
            self.board.event(f"{label}: + {event.name}  (now {count})")
        elif kind is CacheEventType.CHILD_REMOVED:
            self.board.event(f"{label}: - {event.name}  (now {count})")
        elif kind is CacheEventType.INITIALIZED:
            self.board.event(f"{label}: loaded")
        elif kind in (CacheEventType.SUSPENDED, CacheEventType.RECONNECTED, CacheEventType.LOST):
            self.board.event(f"{label}: {kind.value}")
        elif kind is CacheEventType.RESYNCED:
            self.board.event(f"{label}: resynced")

    def _watch_state(self, name: str, client: Client) -> None:
        def on_change(change: StateChange) -> None:
            if change.state is State.SUSPENDED:
                self.board.event(f"{name}: connection lost (SUSPENDED); the session lives on")
            elif change.state is State.RECONNECTED:
                same = "a NEW session" if change.new_session else "same session"
                self.board.event(
                    f"{name}: RECONNECTED to {self._where(client)}, {same} 0x{change.session_id:x}"
                )
            elif change.state is State.LOST:
                self.board.event(f"{name}: session LOST")

        client.add_state_listener(on_change)

    async def _start_worker(self, i: int) -> _Worker:
        name = f"worker-{i + 1}"
        client = await open_client(self.connect, session_timeout=SESSION_TIMEOUT)
        host = f"{socket.gethostname()}:{os.getpid()}"
        worker = _Worker(
            name,
            client,
            Lock(client, LOCK_PATH, identifier=name),
            # Leadership ends only with the session, so that it survives a failover.
            LeaderLatch(client, LEADER_PATH, identifier=name, suspended_is_loss=False),
            GroupMember(client, MEMBERS_PATH, name, host.encode()),
        )
        self._watch_state(name, client)
        worker.latch.add_listener(lambda change: self._on_leadership(worker, change))
        await worker.member.start()
        await worker.latch.start()
        return worker

    def _on_leadership(self, worker: _Worker, change: LeadershipChange) -> None:
        if self.failover_started is not None:
            self.leadership_changes += 1
        if change.is_leader and change.term is not None:
            self.elected.set()
            self.board.event(
                f"{worker.name} is the leader (fencing token {change.term.fencing_token})"
            )
        else:
            self.board.event(f"{worker.name} is no longer the leader ({change.reason})")

    # --- the work -----------------------------------------------------------------------------

    def _enter_critical(self, token: int | None) -> None:
        self.holders += 1
        self.result.acquisitions += 1
        self.result.max_holders = max(self.result.max_holders, self.holders)
        # What a fenced store does: refuse a token not larger than the last one it saw.
        if token is None or token <= self.last_token:
            self.result.tokens_increasing = False
        else:
            self.last_token = token

    async def _work(self, w: _Worker) -> None:
        rng = random.Random(w.name)
        while not self.stopping:
            w.activity = "waiting"
            async with w.lock:
                self._enter_critical(w.lock.fencing_token)
                try:
                    w.activity = "working"
                    await self._job(w.client)
                    w.jobs += 1
                    self.jobs_changed.set()
                    await asyncio.sleep(rng.uniform(0.02, 0.06))  # the job's own work
                finally:
                    self.holders -= 1
            w.activity = "idle"
            await asyncio.sleep(rng.uniform(0.0, 0.02))

    async def _job(self, client: Client) -> None:
        """Add one to the ledger; only the lock makes read-then-write safe."""
        data, stat = await client.get(LEDGER_PATH)
        value = int(data or b"0") + 1
        while True:
            try:
                await client.set(LEDGER_PATH, str(value).encode(), version=stat.version)
                return
            except ConnectionLossError:
                # The reply was lost. We hold the lock, so nobody else writes: the ledger says
                # whether our write was applied.
                data, stat = await client.get(LEDGER_PATH)
                if int(data or b"0") == value:
                    return

    async def _work_for(self, seconds: float, jobs: int) -> None:
        """Let the workers work for ``seconds``, and until ``jobs`` more are done."""
        target = self._total_jobs() + jobs
        await asyncio.sleep(seconds)  # the demo's pace: time to watch the table
        deadline = time.monotonic() + STEP_TIMEOUT
        while self._total_jobs() < target:
            self.jobs_changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.jobs_changed.wait(), left)

    # --- the failover ---------------------------------------------------------------------

    async def _failover(self) -> None:
        assert self.dashboard is not None
        await _bounded(self.elected.wait(), "electing a leader")
        leader = self._leader()
        if leader is None:
            raise CoordinationError("demo: the leader stepped down before the failover")
        self.phase = f"failover: {leader.name} (leader) takes the lock for maintenance"
        term = leader.latch.term
        assert term is not None
        self.leader_events = leader.member.events()
        self._spawn(
            self._follow_cache(
                f"{leader.name}'s cache", self.leader_events, set(leader.member.members())
            ),
            "leader-cache",
        )
        if not await leader.lock.acquire(timeout=STEP_TIMEOUT):
            raise CoordinationError("demo: the leader could not take the lock")
        try:
            self.maintenance = leader
            token = leader.lock.fencing_token
            node = leader.lock.node_path
            self._enter_critical(token)
            self.board.event(
                f"{leader.name} (leader) holds the lock for maintenance, fencing token {token}"
            )
            session = leader.client.session_id
            sessions = {w.name: w.client.session_id for w in self.workers}
            reconnected: asyncio.Future[StateChange] = asyncio.get_running_loop().create_future()

            def on_change(change: StateChange) -> None:
                if change.state in (State.RECONNECTED, State.LOST) and not reconnected.done():
                    reconnected.set_result(change)

            remove = leader.client.add_state_listener(on_change)
            try:
                t0 = await self._break_connection(leader)
                self._spawn(self._join_newcomer(), "newcomer")
                change = await _bounded(reconnected, f"{leader.name}'s reconnect")
            finally:
                remove()
            self.result.failover_seconds = time.monotonic() - t0
            self.result.same_session = (
                change.state is State.RECONNECTED
                and not change.new_session
                and leader.client.session_id == session
            )
            self.phase = "failover: checking the lock, the leadership and the caches"
            self.board.event(
                f"{leader.name} failed over in {self.result.failover_seconds:.2f} s to "
                f"{self._where(leader.client)}: same session "
                f"{_yes(self.result.same_session)} (0x{leader.client.session_id:x})"
            )
            # The lock, as the server sees it: our node is there, owned by our session, first.
            assert node is not None
            await self.dashboard.sync(LOCK_PATH)
            stat = await self.dashboard.exists(node)
            queue = await Lock(self.dashboard, LOCK_PATH).contenders()
            self.result.lock_held = (
                leader.lock.held_by_current_task
                and not leader.lock.lost.is_set()
                and leader.lock.fencing_token == token
                and stat is not None
                and stat.ephemeral_owner == leader.client.session_id
                and bool(queue)
                and queue[0] == leader.name
            )
            self.board.event(
                f"lock after the failover: held by {queue[0] if queue else 'nobody'} "
                f"(server), {leader.name} still holds it: {_yes(self.result.lock_held)}; "
                f"{len(queue) - 1} waiting"
            )
        finally:
            self.maintenance = None
            self.holders -= 1
            await leader.lock.release()
        self.board.event(f"{leader.name} released the lock; the workers go on")
        self.phase = "after the failover: work goes on"
        now = await leader.latch.leader()
        self.result.leader_unchanged = (
            leader.latch.is_leader
            and leader.latch.term is not None
            and leader.latch.term.fencing_token == term.fencing_token
            and self.leadership_changes == 0
            and now is not None
            and now.identifier == leader.name
        )
        self.board.event(
            f"leader after the failover: {now.identifier if now else 'nobody'}; "
            f"unchanged: {_yes(self.result.leader_unchanged)}"
        )
        self.result.sessions_kept = all(
            w.client.session_id == sessions[w.name] for w in self.workers
        )

    async def _break_connection(self, leader: _Worker) -> float:
        """Kill the member the leader is connected to (or drop its connection); the time."""
        server = leader.client.session.server
        assert server is not None
        if self.ensemble is None:
            self.notes.append(
                "--connect: no ensemble member to kill, so the leader's connection was dropped"
            )
            self.board.event(
                f"dropping {leader.name}'s connection to {server} "
                "(with --connect there is no ensemble member to kill)"
            )
            self.failover_started = time.monotonic()
            leader.client.session.drop_connection()
            return self.failover_started
        index = self.ensemble.index_of_port(server.port)
        on_it = [w.name for w in self.workers if w.client.session.server == server]
        self.phase = f"failover: member {index + 1} killed"
        self.board.event(
            f"killing ZooKeeper member {index + 1} ({server}, {self.member_modes[index]}), "
            f"which {leader.name} is connected to; sessions on it: {', '.join(on_it)}"
        )
        self.failover_started = time.monotonic()
        await asyncio.to_thread(self.ensemble.kill, index)
        self.restart_task = self._spawn(self._restart_member(index), "restart")
        return self.failover_started

    async def _restart_member(self, index: int) -> None:
        assert self.ensemble is not None
        await self._log_modes()
        await asyncio.to_thread(self.ensemble.restart, index)
        self.board.event(f"member {index + 1} restarted and back in the quorum")
        await self._log_modes()

    async def _join_newcomer(self) -> None:
        """A member joins through a surviving server while the failover goes on."""
        hosts = self.connect
        if self.ensemble is not None:
            down = {i for i, m in enumerate(self.ensemble.members) if not m.is_running}
            alive = [i for i in range(3) if i not in down]
            hosts = self.ensemble.member_connect_string(alive[0]) + self.base
        client = await open_client(hosts, session_timeout=SESSION_TIMEOUT)
        member = GroupMember(client, MEMBERS_PATH, "newcomer", b"joined during the failover")
        self.newcomer = (client, member)
        await member.start()
        await _bounded(member.node.wait_for_initial_create(), "the newcomer's join")
        self.board.event(f"newcomer joined the group through {self._where(client)}")

    # --- checks and shutdown ------------------------------------------------------------------

    async def _check_caches(self) -> None:
        """Every cache must come to show what the server has (after a sync)."""
        assert self.dashboard is not None
        assert self.cache is not None
        await self.dashboard.sync(MEMBERS_PATH)
        truth = set(await self.dashboard.children(MEMBERS_PATH))
        waits: list[Awaitable[Any]] = [self.cache.wait_for(lambda view: set(view) == truth, 10.0)]
        members = [w.member for w in self.workers]
        if self.newcomer is not None:
            members.append(self.newcomer[1])
        waits += [m.wait_for(lambda view: set(view) == truth, 10.0) for m in members]
        outcome = await asyncio.gather(*waits, return_exceptions=True)
        if self.leader_events is not None:
            await self.leader_events.aclose()
        agree = sum(not isinstance(o, BaseException) for o in outcome)
        self.result.cache_in_sync = agree == len(waits) and len(truth) == len(members)
        self.board.event(
            f"caches: {agree} of {len(waits)} agree with the server "
            f"({len(truth)} members); in sync: {_yes(self.result.cache_in_sync)}"
        )

    async def _stop_workers(self) -> None:
        self.stopping = True
        tasks = [w.task for w in self.workers if w.task is not None]
        if tasks:
            # Each finishes the job it is on, so that the ledger can be compared.
            done, pending = await asyncio.wait(tasks, timeout=STEP_TIMEOUT)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    self.board.event(f"a worker failed: {task.exception()!r}")

    async def _leave(self) -> None:
        """Workers leave one by one: the dashboard's change stream shows each."""
        assert self.cache is not None
        leaving: list[tuple[str, Client, GroupMember, LeaderLatch | None]] = [
            (w.name, w.client, w.member, w.latch) for w in self.workers
        ]
        if self.newcomer is not None:
            leaving.append(("newcomer", *self.newcomer, None))
        for name, client, member, latch in leaving:
            if latch is not None:
                await latch.close()
            await member.close()
            await client.close()
            with contextlib.suppress(asyncio.TimeoutError, CoordinationError):
                await self.cache.wait_for(_without(name), 5.0)

    async def _cleanup(self) -> None:
        if self.newcomer is not None:
            client, member = self.newcomer
            with contextlib.suppress(Exception):
                await member.close()
            await client.close()
        # Each close is idempotent: what _leave closed already is skipped.
        for w in self.workers:
            with contextlib.suppress(Exception):
                await w.latch.close()
            with contextlib.suppress(Exception):
                await w.member.close()
            await w.client.close()
        if self.cache is not None:
            await self.cache.close()
        if self.dashboard is not None:
            await self.dashboard.close()
        if self.admin is not None:
            if self.ensemble is None and self.admin.connected:
                # Leave the user's ZooKeeper as we found it.
                with contextlib.suppress(CoordinationError):
                    await self.admin.delete(self.base, recursive=True)
                with contextlib.suppress(CoordinationError, NotEmptyError):
                    await self.admin.delete("/aiocoord-demo")
            await self.admin.close()
        if self.ensemble is not None:
            await self.ensemble.__aexit__(None, None, None)

    # --- the whole ------------------------------------------------------------------------

    async def run(self) -> DemoResult:
        view = self._spawn(self._view(), "view")
        logger = logging.getLogger("aiocoord")
        handler = _LogToBoard(self.board)
        logger.addHandler(handler)
        propagate, logger.propagate = logger.propagate, False
        try:
            await self._start_servers()
            await self._start_dashboard()
            self.phase = f"starting {self.n_workers} workers"
            self.workers = list(
                await asyncio.gather(*(self._start_worker(i) for i in range(self.n_workers)))
            )
            for w in self.workers:
                w.task = self._spawn(self._work(w), w.name)
            self.board.event(
                f"{self.n_workers} workers started, each with its own session; "
                "they share the ledger under one lock"
            )
            self.phase = "working"
            await self._work_for(PHASE_SECONDS, PHASE_JOBS)
            await self._failover()
            await self._work_for(PHASE_SECONDS, PHASE_JOBS)
            self.phase = "checking the caches"
            await self._check_caches()
            self.phase = "stopping the workers"
            await self._stop_workers()
            assert self.dashboard is not None
            data, _ = await self.dashboard.get(LEDGER_PATH)
            self.result.ledger = int(data or b"0")
            self.result.jobs = self._total_jobs()
            self.jobs_by_worker = {w.name: w.jobs for w in self.workers}
            self.phase = "workers leave the group"
            await self._leave()
            if self.restart_task is not None:
                await _bounded(self.restart_task, "restarting the killed member", 60.0)
            self.phase = "done"
        finally:
            try:
                self.stopping = True
                others = [t for t in self._tasks if t is not view]
                for task in others:
                    task.cancel()
                await asyncio.gather(*others, return_exceptions=True)
                await self._cleanup()
            finally:
                if self.board.live:
                    self.board.draw(self._frame())
                view.cancel()
                await asyncio.gather(view, return_exceptions=True)
                logger.removeHandler(handler)
                logger.propagate = propagate
        r = self.result
        r.checks = {
            "no lost update": r.ledger == r.jobs and r.jobs > 0,
            "one holder at a time": r.max_holders == 1,
            "fencing tokens increasing": r.tokens_increasing,
            "same session": r.same_session,
            "lock held across failover": r.lock_held,
            "leader unchanged": r.leader_unchanged,
            "cache in sync": r.cache_in_sync,
            "all sessions kept": r.sessions_kept,
        }
        return r

    def summary(self, runtime: float) -> list[str]:
        r = self.result
        where = (
            f"embedded 3-member ensemble (started in {self.ensemble.last_start_seconds or 0:.1f} s)"
            if self.ensemble is not None
            else f"{self.user_connect} (under {self.base}, removed afterwards)"
        )
        per = ", ".join(f"{n} {j}" for n, j in self.jobs_by_worker.items())
        failover = f"{r.failover_seconds:.2f} s" if r.failover_seconds is not None else "-"
        lines = [
            "",
            "aiocoord demo: summary",
            f"  ZooKeeper: {where}",
            f"  workers: {self.n_workers}, each with its own session; a newcomer joined "
            "during the failover",
            f"  jobs done: {r.jobs} ({per})",
            f"  ledger: {r.ledger}; no lost update: {_yes(r.ledger == r.jobs and r.jobs > 0)}",
            f"  lock acquisitions: {r.acquisitions}; holders at once: max {r.max_holders}; "
            f"fencing tokens increasing: {_yes(r.tokens_increasing)}",
            f"  failover time: {failover}",
            f"  same session: {_yes(r.same_session)}",
            f"  lock held across failover: {_yes(r.lock_held)}",
            f"  leader unchanged: {_yes(r.leader_unchanged)}",
            f"  cache in sync: {_yes(r.cache_in_sync)}",
            f"  all sessions kept: {_yes(r.sessions_kept)}",
        ]
        lines += [f"  note: {note}" for note in self.notes]
        failed = [name for name, ok in r.checks.items() if not ok]
        lines.append(f"  runtime: {runtime:.1f} s")
        lines.append(
            "  result: all checks passed"
            if not failed
            else f"  result: FAILED: {', '.join(failed)}"
        )
        return lines


async def run(
    *, connect: str | None = None, workers: int = 5, plain: bool = False, out: TextIO | None = None
) -> int:
    """Run the demo (see the module docstring) and print its summary; 0 if every check passed.

    ``connect`` runs it against an existing ZooKeeper instead of an embedded ensemble.
    ``plain`` prints a line-by-line log even when ``out`` (default stdout) is a terminal.
    """
    stream = out if out is not None else sys.stdout
    live = not plain and stream.isatty()
    demo = _Demo(stream, connect, workers, live)
    began = time.monotonic()
    try:
        result = await demo.run()
    except CoordinationError as exc:
        hint = ""
        if isinstance(exc, NoServersError):
            hint = "\n  (start one with: python -m aiocoord server, or drop --connect)"
        print(f"\naiocoord demo failed: {exc}{hint}", file=sys.stderr)
        return 1
    print("\n".join(demo.summary(time.monotonic() - began)), file=stream, flush=True)
    return 0 if result.ok else 1
