"""NonBlockingLease and MultiNonBlockingLease against a real server: racing clients, expiry
and renewal on an injected clock, kazoo's record format and lock, and bad input."""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Callable
from typing import Any

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client
from aiocoord.errors import (
    BadArgumentsError,
    CoordinationError,
    InvalidPathError,
    InvalidTypeError,
)
from aiocoord.recipes.lease import LeaseDataError, MultiNonBlockingLease, NonBlockingLease
from aiocoord.testing import session_of
from aiocoord.testing.faults import FaultProxy

T0 = datetime.datetime(2026, 11, 25, 22, 0, 0)
MINUTE = datetime.timedelta(minutes=1)
SET_DATA = 5  # ZooKeeper's opcode


class Clock:
    """A wall clock the test moves by hand (naive UTC, as kazoo's ``utcnow``)."""

    def __init__(self, now: datetime.datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime.datetime:
        return self.now

    def advance(self, delta: datetime.timedelta) -> None:
        self.now += delta


async def record(client: Client, path: str) -> dict[str, Any]:
    data, _ = await client.get(path + "/lease_holder")
    parsed: dict[str, Any] = json.loads(data)
    return parsed


async def lock_nodes(client: Client, path: str) -> list[str]:
    return [n for n in await child_names(client, path) if "__lock__" in n]


async def has_lock_nodes(client: Client, path: str, count: int) -> bool:
    return len(await lock_nodes(client, path)) == count


async def test_two_clients_racing_exactly_one_wins(zk_connect: Factory) -> None:
    a, b, admin = await zk_connect(), await zk_connect(), await zk_connect()
    clock = Clock()
    for round_ in range(5):
        path = f"/leases/race{round_}"
        first = NonBlockingLease(a, path, MINUTE, identifier="a", utcnow=clock)
        second = NonBlockingLease(b, path, MINUTE, identifier="b", utcnow=clock)
        won = await asyncio.gather(first.obtain(), second.obtain())
        assert sorted(won) == [False, True]
        winner = "a" if won[0] else "b"
        assert (await record(admin, path))["holder"] == winner
        assert bool(first) is won[0] and bool(second) is won[1]
        await asyncio.gather(a.wait_background(), b.wait_background())  # the locks' deletes
        assert await lock_nodes(admin, path) == []


async def test_holder_keeps_it_until_the_end_then_another_takes_it(zk_connect: Factory) -> None:
    a, b, admin = await zk_connect(), await zk_connect(), await zk_connect()
    clock = Clock()
    mine = NonBlockingLease(a, "/leases/job", 10 * MINUTE, identifier="a", utcnow=clock)
    theirs = NonBlockingLease(b, "/leases/job", 10 * MINUTE, identifier="b", utcnow=clock)
    assert await mine.obtain()
    assert mine.end == T0 + 10 * MINUTE
    assert await record(admin, "/leases/job") == {
        "version": 1,
        "holder": "a",
        "end": "2026-11-25T22:10:00",
    }
    clock.advance(9 * MINUTE)
    assert not await theirs.obtain()
    assert theirs.end is None
    clock.advance(MINUTE)  # now == end: expired
    assert await theirs.obtain()
    assert (await record(admin, "/leases/job"))["holder"] == "b"
    assert not await mine.obtain()
    holder = await mine.holder()
    assert holder is not None and holder.identifier == "b"
    assert holder.end == T0 + 20 * MINUTE


async def test_same_identifier_renews_from_another_client(zk_connect: Factory) -> None:
    a, b, admin = await zk_connect(), await zk_connect(), await zk_connect()
    clock = Clock()
    assert await NonBlockingLease(
        a, "/leases/r", MINUTE, identifier="host-1", utcnow=clock
    ).obtain()
    clock.advance(datetime.timedelta(seconds=30))
    again = NonBlockingLease(b, "/leases/r", MINUTE, identifier="host-1", utcnow=clock)
    assert await again.obtain()
    assert again.end == T0 + datetime.timedelta(seconds=90)
    assert (await record(admin, "/leases/r"))["end"] == "2026-11-25T22:01:30"
    _, stat = await admin.get("/leases/r/lease_holder")
    assert stat.version == 1  # renewed in place, by a versioned set


async def test_aware_clock_and_seconds_duration(zk_connect: Factory) -> None:
    client, admin = await zk_connect(), await zk_connect()
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    aware = T0.replace(tzinfo=datetime.UTC).astimezone(plus_two)
    lease = NonBlockingLease(client, "/leases/tz", 90, identifier="x", utcnow=lambda: aware)
    assert await lease.obtain()
    assert (await record(admin, "/leases/tz"))["end"] == "2026-11-25T22:01:30"


async def test_kazoo_records_are_honoured(zk_connect: Factory) -> None:
    client, admin = await zk_connect(), await zk_connect()
    clock = Clock()
    kazoo_record = {"version": 1, "holder": "kazoo-host", "end": "2026-11-25T22:05:00"}
    await admin.create(
        "/leases/k/lease_holder", json.dumps(kazoo_record).encode(), make_parents=True
    )
    lease = NonBlockingLease(client, "/leases/k", MINUTE, identifier="py", utcnow=clock)
    assert not await lease.obtain()
    clock.advance(5 * MINUTE)
    assert await lease.obtain()
    # A record of another format version is left to its own kind, as kazoo does.
    await admin.set("/leases/k/lease_holder", b'{"version": 2, "holder": "new"}')
    clock.advance(60 * MINUTE)
    assert not await lease.obtain()
    await admin.set("/leases/k/lease_holder", b"not json")
    with pytest.raises(LeaseDataError, match="not a lease record"):
        await lease.obtain()
    await client.wait_background()  # the lock's delete, answered
    assert await lock_nodes(admin, "/leases/k") == []


async def test_waits_for_a_kazoo_lock_holder_and_leaves_nothing_on_timeout(
    zk_connect: Factory,
) -> None:
    client, kazoo = await zk_connect(), await zk_connect()
    # A kazoo process inside its read-decide-write: its lock node, as kazoo's Lock names it.
    held = await kazoo.create(
        "/leases/w/0123456789abcdef0123456789abcdef__lock__",
        b"kazoo",
        ephemeral=True,
        sequential=True,
        make_parents=True,
    )
    lease = NonBlockingLease(client, "/leases/w", MINUTE, identifier="py", utcnow=Clock())
    with pytest.raises(aiocoord.TimeoutError):
        await lease.obtain(timeout=0.3)
    await client.wait_background()
    assert await lock_nodes(kazoo, "/leases/w") == [held.rsplit("/", 1)[1]]
    assert await kazoo.exists("/leases/w/lease_holder") is None

    waiting = asyncio.ensure_future(lease.obtain(timeout=10))
    await eventually(lambda: has_lock_nodes(kazoo, "/leases/w", 2), what="the waiter queued")
    assert not waiting.done()
    await kazoo.delete(held)
    assert await waiting


async def test_cancelled_obtain_leaves_no_lock_node(zk_connect: Factory) -> None:
    client, other = await zk_connect(), await zk_connect()
    blocker = await other.create(
        "/leases/c/ffff__lock__", ephemeral=True, sequential=True, make_parents=True
    )
    lease = NonBlockingLease(client, "/leases/c", MINUTE, identifier="py")
    task = asyncio.ensure_future(lease.obtain())
    await eventually(lambda: has_lock_nodes(other, "/leases/c", 2), what="the waiter queued")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await client.wait_background()
    assert await lock_nodes(other, "/leases/c") == [blocker.rsplit("/", 1)[1]]


async def test_multi_lease_hands_out_count_slots(zk_connect: Factory) -> None:
    clients = [await zk_connect() for _ in range(3)]
    clock = Clock()
    leases = [
        MultiNonBlockingLease(c, "/leases/multi", 2, MINUTE, identifier=f"h{i}", utcnow=clock)
        for i, c in enumerate(clients)
    ]
    won = await asyncio.gather(*(lease.obtain() for lease in leases))
    assert sorted(won) == [False, True, True]
    slots = sorted(lease.index for lease in leases if lease.index is not None)
    assert slots == [0, 1]

    # Both slots expire; a holder of slot 1 renews slot 1 rather than take slot 0 too.
    holder_of_1 = next(lease for lease in leases if lease.index == 1)
    clock.advance(2 * MINUTE)
    assert await holder_of_1.obtain()
    assert holder_of_1.index == 1
    loser = next(lease for lease in leases if not lease.obtained)
    assert await loser.obtain()
    assert loser.index == 0


LEASE_INPUTS: list[tuple[str, Callable[[Client], Any], type[CoordinationError]]] = [
    ("path", lambda c: NonBlockingLease(c, "lease", 60), InvalidPathError),
    ("root", lambda c: NonBlockingLease(c, "/", 60), BadArgumentsError),
    ("duration str", lambda c: NonBlockingLease(c, "/l", "60"), InvalidTypeError),  # type: ignore[arg-type]
    ("duration short", lambda c: NonBlockingLease(c, "/l", 0.5), BadArgumentsError),
    ("duration nan", lambda c: NonBlockingLease(c, "/l", float("nan")), BadArgumentsError),
    ("duration bool", lambda c: NonBlockingLease(c, "/l", True), InvalidTypeError),
    ("identifier", lambda c: NonBlockingLease(c, "/l", 60, identifier=5), InvalidTypeError),  # type: ignore[arg-type]
    ("clock", lambda c: NonBlockingLease(c, "/l", 60, utcnow=5), InvalidTypeError),  # type: ignore[arg-type]
    ("acl", lambda c: NonBlockingLease(c, "/l", 60, acl=[]), BadArgumentsError),
    ("client", lambda c: NonBlockingLease("zk", "/l", 60), InvalidTypeError),  # type: ignore[arg-type]
    ("count zero", lambda c: MultiNonBlockingLease(c, "/m", 0, 60), BadArgumentsError),
    ("count str", lambda c: MultiNonBlockingLease(c, "/m", "2", 60), InvalidTypeError),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(
    ("make", "error"), [(m, e) for _, m, e in LEASE_INPUTS], ids=[n for n, _, _ in LEASE_INPUTS]
)
async def test_bad_arguments_raise_typed_errors_and_send_nothing(
    zk_client: Client, make: Callable[[Client], Any], error: type[CoordinationError]
) -> None:
    before = dict(session_of(zk_client).sent)
    with pytest.raises(error):
        make(zk_client)
    assert dict(session_of(zk_client).sent) == before


async def test_bad_timeout_and_clock_answer(zk_client: Client) -> None:
    lease = NonBlockingLease(zk_client, "/l", 60, utcnow=lambda: "now")  # type: ignore[arg-type, return-value]
    with pytest.raises(BadArgumentsError):
        await lease.obtain(timeout=-1)
    with pytest.raises(InvalidTypeError, match="must return a datetime"):
        await lease.obtain()
    await zk_client.wait_background()


async def test_renewal_whose_reply_is_lost_is_found_applied(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    admin = await zk_connect()
    clock = Clock()
    lease = NonBlockingLease(client, "/leases/lost", MINUTE, identifier="a", utcnow=clock)
    assert await lease.obtain()
    clock.advance(datetime.timedelta(seconds=30))
    # The versioned set reaches the server; its reply does not reach the client.
    zk_fault_proxy.drop_after_request(lambda xid, opcode: opcode == SET_DATA)
    assert await lease.obtain(timeout=20)
    assert (await record(admin, "/leases/lost"))["end"] == "2026-11-25T22:01:30"
    _, stat = await admin.get("/leases/lost/lease_holder")
    assert stat.version == 1  # applied once
    await client.wait_background()
    assert await lock_nodes(admin, "/leases/lost") == []
