"""Histories recorded against a real ZooKeeper through the fault proxy, checked for
linearizability (aiocoord.testing.history): compare-and-set on a znode and AtomicCounter
with lost replies (UNKNOWN operations) pass; a counter that skips its version check is caught,
with its picture. And docs/testing.md's "Checking your own service's history" block runs as
a pytest module, as a reader would run it."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from support import Factory

import aiocoord
from aiocoord import AtomicCounter, BadVersionError, Client, ConnectionLossError, ExponentialBackoff
from aiocoord._wire.opcodes import Op
from aiocoord.testing import FaultProxy, PendingDrop, ServerHandle
from aiocoord.testing.history import (
    CounterModel,
    History,
    Outcome,
    Verdict,
    VersionedRegisterModel,
    check,
)

#: The checkout whose aiocoord this run imports (the subprocess imports the same).
CHECKOUT = Path(aiocoord.__file__).resolve().parents[1]
CLIENTS = 8


class LostReplies:
    """Loses replies to ``opcode`` requests through ``proxy`` (the request applied, its
    client never told) while work goes on: one every :data:`EVERY` operations the work
    reports with :meth:`tick`, and cuts every connection after every third."""

    EVERY = 10

    def __init__(self, proxy: FaultProxy, opcode: Op) -> None:
        self.proxy = proxy
        self.opcode = opcode
        self.ops = 0
        #: replies lost (connections cut after an applied request)
        self.lost = 0
        self._armed: PendingDrop | None = None

    def tick(self) -> None:
        """One more operation done; maybe arm the next loss."""
        self.ops += 1
        if self._armed is not None and self._armed.done():
            self.lost += 1
            self._armed = None
            if self.lost % 3 == 0:
                self.proxy.drop()
        if self._armed is None and self.ops % self.EVERY == 0:
            self._armed = self.proxy.drop_after_request(lambda _xid, op: op == self.opcode)

    async def run(self, work: Awaitable[object]) -> int:
        """Await ``work`` (90 s at most), heal the proxy; the replies lost."""
        try:
            await asyncio.wait_for(work, 90)
        finally:
            self.proxy.heal()
        return self.lost + (self._armed is not None and self._armed.done())


async def _proxied(zk_connect: Factory, proxy: FaultProxy) -> list[Client]:
    return [await zk_connect(proxy.connect_string, session_timeout=10) for _ in range(CLIENTS)]


async def test_compare_and_set_under_lost_replies_is_linearizable(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, tmp_path: Path
) -> None:
    await (await zk_connect()).create("/register", b"start")
    clients = await _proxied(zk_connect, zk_fault_proxy)
    history = History()
    faults = LostReplies(zk_fault_proxy, Op.SET_DATA)

    async def worker(i: int, client: Client) -> None:
        for k in range(40):
            name = f"client-{i}"
            read = history.call(name, "read")
            try:
                data, stat = await client.get("/register")
            except ConnectionLossError as exc:
                read.raised(exc)
                faults.tick()
                continue
            read.ok((data, stat.version))
            new = f"{i}-{k}".encode()
            cas = history.call(name, "cas", (stat.version, new))
            try:
                await client.set("/register", new, version=stat.version)
            except BadVersionError:
                cas.ok(False)
            except ConnectionLossError as exc:
                cas.raised(exc)  # the retry met BadVersion: applied or not, no one knows
            else:
                cas.ok(True)
            faults.tick()

    work = asyncio.gather(*(worker(i, c) for i, c in enumerate(clients)))
    assert await faults.run(work) >= 5
    outcomes = [op.outcome for op in history if op.kind == "cas"]
    assert outcomes.count(Outcome.UNKNOWN) >= 2
    assert outcomes.count(Outcome.OK) >= 100
    model = VersionedRegisterModel(value=b"start", version=0)
    result = check(history, model, timeout=30, picture=tmp_path / "register.html")
    assert result.verdict is Verdict.LINEARIZABLE, result


async def test_an_atomic_counter_under_lost_replies_is_linearizable(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    clients = await _proxied(zk_connect, zk_fault_proxy)
    # Retries that give up now and then: some adds end as a connection loss (UNKNOWN), some
    # as succeeded=False (nothing written: FAIL).
    retry = ExponentialBackoff(0.001, 3, 0.01)
    counters = [AtomicCounter(c, "/counters/hits", retry=retry) for c in clients]
    history = History()
    faults = LostReplies(zk_fault_proxy, Op.MULTI)

    async def worker(i: int, counter: AtomicCounter) -> None:
        for _ in range(40):
            op = history.call(f"client-{i}", "add", 1)
            try:
                outcome = await counter.add(1)
            except aiocoord.CoordinationError as exc:
                op.raised(exc)
                faults.tick()
                continue
            if outcome.succeeded:
                op.ok(outcome.post_value)
            else:
                op.fail()
            faults.tick()

    work = asyncio.gather(*(worker(i, c) for i, c in enumerate(counters)))
    # the replies of applied writes are lost, and resolved (or not) by the recipe
    assert await faults.run(work) >= 5
    for counter in counters:
        await counter.close()
    known = [op for op in history if op.outcome is Outcome.OK]
    assert len(known) >= 100
    final = history.call("observer", "read")
    final.ok(await AtomicCounter(await zk_connect(), "/counters/hits").get())
    result = check(history, CounterModel(), timeout=30)
    assert result.verdict is Verdict.LINEARIZABLE, result


async def _blind_increment(client: Client, turn: Callable[[], Awaitable[None]]) -> int:
    """A broken counter: it reads, then writes the value plus one without the version it
    read (between the two, ``turn`` lets the other workers read)."""
    data, _ = await client.get("/counters/blind")
    value = int(data) + 1
    await turn()
    await client.set("/counters/blind", b"%d" % value)  # no version=: a lost update
    return value


async def test_a_counter_that_skips_its_version_check_is_caught(
    zk_connect: Factory, tmp_path: Path
) -> None:
    setup = await zk_connect()
    await setup.create("/counters/blind", b"0", make_parents=True)
    clients = [await zk_connect() for _ in range(4)]
    history = History()
    arrived = 0
    all_read = asyncio.Event()

    async def turn() -> None:
        # Every worker has read before any writes: the interleaving that loses updates.
        nonlocal arrived
        arrived += 1
        if arrived == len(clients):
            all_read.set()
        await all_read.wait()

    async def worker(i: int, client: Client) -> None:
        op = history.call(f"client-{i}", "add", 1)
        op.ok(await _blind_increment(client, turn))

    await asyncio.gather(*(worker(i, c) for i, c in enumerate(clients)))
    assert [op.result for op in history] == [1, 1, 1, 1]
    picture = tmp_path / "blind.html"
    result = check(history, CounterModel(), timeout=30, picture=picture)
    assert result.verdict is Verdict.NOT_LINEARIZABLE
    assert result.violation is not None
    stuck = result.violation.stuck
    assert stuck.describe() == "add(1) -> 1"
    assert len(result.violation.linearized) == 1  # one of the four, then no other fits
    page = picture.read_text()
    assert f"Operation {stuck.id} of {stuck.client} cannot be placed" in page


def _testing_page_block() -> str:
    page = (CHECKOUT / "docs" / "testing.md").read_text()
    found = re.search(r"## Checking your own service's history.*?```python\n(.*?)```\n", page, re.S)
    assert found, "docs/testing.md: the history block"
    return found.group(1)


def _run_as_pytest(module: str, zookeeper: ServerHandle, where: Path) -> str:
    """Run ``module`` as a test module of a scratch project outside the checkout (none of
    its conftest or settings), the plugin attached to this session's server; its output."""
    (where / "test_tickets.py").write_text(module)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_tickets.py"],
        cwd=where,
        env={
            **os.environ,
            "PYTHONPATH": str(CHECKOUT),
            "AIOCOORD_ZK_BACKEND": "external",
            "AIOCOORD_ZK_CONNECT": zookeeper.connect_string,
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout + done.stderr


def test_the_history_block_of_the_testing_page_passes_under_pytest(
    zookeeper: ServerHandle, tmp_path: Path
) -> None:
    out = _run_as_pytest(_testing_page_block(), zookeeper, tmp_path)
    assert "1 passed" in out, out


def test_the_history_block_without_its_version_check_fails_as_the_page_says(
    zookeeper: ServerHandle, tmp_path: Path
) -> None:
    # "Take the version= out of next_ticket and the check fails": the four workers' first
    # reads all see 0 (each is sent before any write), so two tickets are the same.
    block = _testing_page_block()
    blind = block.replace(", version=stat.version", "")
    assert blind != block
    out = _run_as_pytest(blind, zookeeper, tmp_path)
    assert "1 failed" in out, out
    assert re.search(r"cannot place operation \d+ of worker-\d: add\(1\) -> \d+", out), out
    assert "tickets.html" in out
