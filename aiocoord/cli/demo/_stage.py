"""The state one run of the demo shares between its parts (servers, clients, workers, what
was checked), with the small steps they all use: spawning a task, naming a member, logging
the ensemble's roles and a cache's changes, entering the critical section."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TextIO

from aiocoord.cli.demo._board import Board
from aiocoord.cli.demo._cast import DemoResult, Worker
from aiocoord.client import Client, State, StateChange
from aiocoord.errors import CoordinationError
from aiocoord.recipes.cache import CacheEventType, ChildrenCache, EventSubscription, NodeEvent
from aiocoord.recipes.nodes import GroupMember
from aiocoord.testing import ZooKeeperEnsemble
from aiocoord.testing.plumbing import session_of

__all__ = ["Stage"]


class Stage:
    """What the parts of one demo run share (:class:`~aiocoord.cli.demo._show.Demo` is one)."""

    def __init__(self, out: TextIO, connect: str | None, workers: int, live: bool) -> None:
        self.board = Board(out, live)
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
        self.workers: list[Worker] = []
        self.newcomer: tuple[Client, GroupMember] | None = None
        self.phase = "starting"
        self.stopping = False
        self.holders = 0
        self.last_token = 0
        self.maintenance: Worker | None = None
        self.leadership_changes = 0
        self.failover_started: float | None = None
        self.notes: list[str] = []
        self.jobs_by_worker: dict[str, int] = {}
        self.elected = asyncio.Event()
        self.leader_events: EventSubscription[NodeEvent] | None = None
        self.restart_task: asyncio.Task[Any] | None = None
        self.jobs_changed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        task.set_name(f"aiocoord-demo:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def where(self, client: Client) -> str:
        server = session_of(client).server
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

    def leader(self) -> Worker | None:
        return next((w for w in self.workers if w.latch.is_leader), None)

    def total_jobs(self) -> int:
        return sum(w.jobs for w in self.workers)

    async def log_modes(self) -> None:
        if self.ensemble is None:
            return
        self.member_modes = await asyncio.to_thread(self._modes)
        modes = ", ".join(f"member {i + 1} {m}" for i, m in enumerate(self.member_modes))
        self.board.event(f"ensemble: {modes}")

    async def follow_cache(
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
                    f"{name}: RECONNECTED to {self.where(client)}, {same} 0x{change.session_id:x}"
                )
            elif change.state is State.LOST:
                self.board.event(f"{name}: session LOST")

        client.add_state_listener(on_change)

    def enter_critical(self, token: int | None) -> None:
        self.holders += 1
        self.result.acquisitions += 1
        self.result.max_holders = max(self.result.max_holders, self.holders)
        # What a fenced store does: refuse a token not larger than the last one it saw.
        if token is None or token <= self.last_token:
            self.result.tokens_increasing = False
        else:
            self.last_token = token
