"""A kazoo worker keeps its recipe objects for its life on paths aiocoord made in kazoo's layout,
on a server that sweeps its empty containers as production's do: rarely, between the shifts.

Production servers sweep every ``znode.container.checkIntervalMs`` = 60 s: a burst of work sees
no sweep, an idle spell longer than that sees one. The test servers sweep every 0.1 s, a sweep
between almost any two steps (``test_kazoo_sweep.py`` uses that, recipe by recipe). Here the
server sweeps every 2 s, twenty times as seldom, while a shift lasts tens of milliseconds: no
sweep falls inside a shift but by a rare chance (nothing here depends on one falling or not),
and the idle spell between two shifts waits until two sweeps have run
(``container_sweeps``: canaries the server removed), as a service idle for a few minutes in
production meets them. A minute's wait is all the test leaves out. Each side's objects are
those of a service: made once, used in both shifts.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from support import Factory, child_names, container_sweeps, eventually, needs_local_jvm

from aiocoord import Client, Election, GroupMember, Lock, Queue
from aiocoord.testing import ZooKeeperServer

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

pytestmark = needs_local_jvm

#: The sweep interval of this module's server (ms): rare next to a shift, as in production.
SWEEP_MS = 2000
JOBS = 10


@pytest.fixture(scope="module")
def zookeeper() -> Iterator[ZooKeeperServer]:
    """This module's server (``zk_connect`` and ``kazoo`` use it): the test servers' settings
    but for a sweep every :data:`SWEEP_MS` ms."""
    with ZooKeeperServer(jvm_options=(f"-Dznode.container.checkIntervalMs={SWEEP_MS}",)) as zk:
        yield zk


class KazooWorker:
    """A worker of the kazoo fleet: its party, queue, lock and election, made once."""

    def __init__(self, kazoo: Any, name: str, taken: list[bytes], terms: list[str]) -> None:
        self.kazoo = kazoo
        self.name = name
        self.party = kazoo.Party("/fleet/workers", name)
        self.queue = kazoo.Queue("/fleet/jobs")
        self.lock = kazoo.Lock("/fleet/ledger-lock", name)
        self.election = kazoo.Election("/fleet/scheduler", name)
        self.taken = taken
        self.terms = terms
        self.mutex = threading.Lock()

    def shift(self) -> None:
        """Join, take jobs until none is left (each counted in the ledger under the lock),
        run one scheduler term, leave."""
        self.party.join()
        try:
            while (job := self.queue.get()) is not None:
                with self.lock:
                    value, _ = self.kazoo.get("/fleet/ledger")
                    self.kazoo.set("/fleet/ledger", str(int(value) + 1).encode())
                with self.mutex:
                    self.taken.append(job)
            self.election.run(self.terms.append, self.name)
        finally:
            self.party.leave()


async def _contenders(client: Client, path: str, n: int) -> bool:
    return len(await child_names(client, path)) == n


async def test_kazoo_objects_kept_by_a_worker_serve_its_next_shift_after_the_sweep(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    await client.create("/fleet/ledger", b"0", make_parents=True)
    taken: list[bytes] = []
    terms: list[str] = []
    worker = KazooWorker(kazoo, "kazoo-1", taken, terms)
    jobs = Queue(client, "/fleet/jobs", layout="kazoo")
    lock = Lock(client, "/fleet/ledger-lock", identifier="py-1", layout="kazoo")
    election = Election(client, "/fleet/scheduler", identifier="py-1", layout="kazoo")

    # Shift 1: aiocoord makes every path and is on it while the kazoo worker first uses
    # (and checks) it, so each path the worker counts on is one aiocoord made.
    for i in range(JOBS):
        await jobs.put(f"job-{i}".encode())
    async with GroupMember(client, "/fleet/workers", "py-1", layout="kazoo") as member:
        assert await lock.acquire(timeout=10)
        async with election.leadership(timeout=10):
            shift = asyncio.ensure_future(asyncio.to_thread(worker.shift))
            await member.wait_for(lambda m: "kazoo-1" in m, timeout=10)
            await eventually(lambda: _contenders(client, "/fleet/ledger-lock", 2))
            await lock.release()
            await eventually(lambda: _contenders(client, "/fleet/scheduler", 2))
        await shift
    assert len(taken) == JOBS and terms == ["kazoo-1"]

    # The idle spell: nobody on the lock, the election or the party, the queue empty.
    await client.sync()
    await container_sweeps(client)

    # Shift 2: the same objects on both sides, side by side.
    for i in range(JOBS, 2 * JOBS):
        await jobs.put(f"job-{i}".encode())

    async def ours() -> None:
        async with GroupMember(client, "/fleet/workers", "py-1", layout="kazoo"):
            while True:
                try:
                    job = await jobs.get(timeout=0.5)
                except TimeoutError:
                    break  # the kazoo worker took the last ones
                async with lock:
                    value, _ = await client.get("/fleet/ledger")
                    await client.set("/fleet/ledger", str(int(value) + 1).encode())
                taken.append(job)
            async with election.leadership(timeout=30):
                terms.append("py-1")

    await asyncio.gather(asyncio.to_thread(worker.shift), ours())
    assert sorted(taken) == sorted(f"job-{i}".encode() for i in range(2 * JOBS))
    value, _ = await client.get("/fleet/ledger")
    assert int(value) == 2 * JOBS  # no two holders of the ledger lock at once
    assert sorted(terms[1:]) == ["kazoo-1", "py-1"]
