"""The demo's run: starting the servers, the dashboard and the workers, the phases of work,
the failover and the checks, and :func:`run`, which prints the summary."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import socket
import sys
import time
import uuid
from dataclasses import asdict
from typing import TextIO

from aiocoord._connect import open_client
from aiocoord.cli.demo._board import LogToBoard
from aiocoord.cli.demo._cast import (
    LEADER_PATH,
    LEDGER_PATH,
    LOCK_PATH,
    MEMBERS_PATH,
    PHASE_JOBS,
    PHASE_SECONDS,
    SESSION_TIMEOUT,
    STEP_TIMEOUT,
    DemoResult,
    Worker,
    bounded,
)
from aiocoord.cli.demo._failover import failover
from aiocoord.cli.demo._report import frame, summary
from aiocoord.cli.demo._stage import Stage
from aiocoord.cli.demo._wrapup import check_caches, cleanup, leave, stop_workers
from aiocoord.client import Client
from aiocoord.errors import (
    ConnectionLossError,
    CoordinationError,
    NodeExistsError,
    NoServersError,
)
from aiocoord.recipes.cache import ChildrenCache
from aiocoord.recipes.election import LeaderLatch, LeadershipChange
from aiocoord.recipes.lock import Lock
from aiocoord.recipes.nodes import GroupMember
from aiocoord.testing import ZooKeeperEnsemble

__all__ = ["DemoResult", "run"]


# --- the demo -----------------------------------------------------------------------------------


class Demo(Stage):
    """One run of the demo: the servers, the workers, the failover and the checks (the state
    they share is the :class:`~aiocoord.cli.demo._stage.Stage`)."""

    # --- helpers ----------------------------------------------------------------------------

    # --- the view ---------------------------------------------------------------------------

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
                self.board.draw(frame(self))
                await asyncio.sleep(0.2)
                continue
            if self.workers and now - last_status >= 3.0:
                last_status = now
                leader = self.leader()
                per = ", ".join(f"{w.name} {w.jobs}" for w in self.workers)
                self.board.event(
                    f"status: jobs {self.total_jobs()} ({per}); "
                    f"leader {leader.name if leader else '-'}; "
                    f"members {len(self.cache.children) if self.cache else 0}"
                )
            await asyncio.sleep(0.25)

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
            await self.log_modes()
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
        self.spawn(
            self.follow_cache("membership (dashboard cache)", cache.changes(), set()),
            "cache",
        )
        await cache.start()

    async def _start_worker(self, i: int) -> Worker:
        name = f"worker-{i + 1}"
        client = await open_client(self.connect, session_timeout=SESSION_TIMEOUT)
        host = f"{socket.gethostname()}:{os.getpid()}"
        worker = Worker(
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

    def _on_leadership(self, worker: Worker, change: LeadershipChange) -> None:
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

    async def _work(self, w: Worker) -> None:
        rng = random.Random(w.name)
        while not self.stopping:
            w.activity = "waiting"
            async with w.lock:
                self.enter_critical(w.lock.fencing_token)
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
        target = self.total_jobs() + jobs
        await asyncio.sleep(seconds)  # the demo's pace: time to watch the table
        deadline = time.monotonic() + STEP_TIMEOUT
        while self.total_jobs() < target:
            self.jobs_changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.jobs_changed.wait(), left)

    # --- the whole ------------------------------------------------------------------------

    async def run(self) -> DemoResult:
        view = self.spawn(self._view(), "view")
        logger = logging.getLogger("aiocoord")
        handler = LogToBoard(self.board)
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
                w.task = self.spawn(self._work(w), w.name)
            self.board.event(
                f"{self.n_workers} workers started, each with its own session; "
                "they share the ledger under one lock"
            )
            self.phase = "working"
            await self._work_for(PHASE_SECONDS, PHASE_JOBS)
            await failover(self)
            await self._work_for(PHASE_SECONDS, PHASE_JOBS)
            self.phase = "checking the caches"
            await check_caches(self)
            self.phase = "stopping the workers"
            await stop_workers(self)
            assert self.dashboard is not None
            data, _ = await self.dashboard.get(LEDGER_PATH)
            self.result.ledger = int(data or b"0")
            self.result.jobs = self.total_jobs()
            self.jobs_by_worker = {w.name: w.jobs for w in self.workers}
            self.phase = "workers leave the group"
            await leave(self)
            if self.restart_task is not None:
                await bounded(self.restart_task, "restarting the killed member", 60.0)
            self.phase = "done"
        finally:
            try:
                self.stopping = True
                others = [t for t in self._tasks if t is not view]
                for task in others:
                    task.cancel()
                await asyncio.gather(*others, return_exceptions=True)
                await cleanup(self)
            finally:
                if self.board.live:
                    self.board.draw(frame(self))
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


async def run(
    *,
    connect: str | None = None,
    workers: int = 5,
    plain: bool = False,
    out: TextIO | None = None,
    as_json: bool = False,
) -> int:
    """Run the demo (see the module docstring) and print its summary; 0 if every check passed.

    ``connect`` runs it against an existing ZooKeeper instead of an embedded ensemble.
    ``plain`` prints a line-by-line log even when ``out`` (default stdout) is a terminal.
    ``as_json`` writes the log and summary to stderr and the result, one JSON object, to
    stdout.
    """
    if as_json:
        out, plain = sys.stderr, True
    stream = out if out is not None else sys.stdout
    live = not plain and stream.isatty()
    demo = Demo(stream, connect, workers, live)
    began = time.monotonic()
    try:
        result = await demo.run()
    except CoordinationError as exc:
        hint = ""
        if isinstance(exc, NoServersError):
            hint = "\n  (start one with: python -m aiocoord server, or drop --connect)"
        print(f"\naiocoord demo failed: {exc}{hint}", file=sys.stderr)
        return 1
    runtime = time.monotonic() - began
    print("\n".join(summary(demo, runtime)), file=stream, flush=True)
    if as_json:
        doc = {**asdict(result), "ok": result.ok, "runtime_seconds": round(runtime, 3)}
        print(json.dumps(doc), flush=True)
    return 0 if result.ok else 1
