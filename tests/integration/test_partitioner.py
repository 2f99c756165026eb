"""SetPartitioner against a real server, three clients: the items are split disjointly and
completely (each share's locks held on the server by its member), members that leave (close,
session expiry) or join make the others re-partition, no item is ever claimed by two members,
and failures and bad input are reported."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
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
    NoNodeError,
)
from aiocoord.recipes.partitioner import (
    PartitionChange,
    PartitionFailedError,
    PartitionState,
    SetPartitioner,
)
from aiocoord.testing import expire_session, session_of
from aiocoord.testing.faults import FaultProxy

ITEMS = [f"q{i}" for i in range(10)]
BOUNDARY = 0.3


#: The failure-semantics rows of SetPartitioner (docs/recipes/partitioning.md) and its row of
#: docs/recipes.md, with the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/partitioning.md | Failure semantics of SetPartitioner | Bad input": [
        "test_input_vs_server.py::test_strings_without_a_utf8_form_and_oversized_nodes_are_refused_unsent",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | `SetPartitioner`": [
        "test_a_lost_connection_asks_for_release_and_the_share_comes_back",
        "test_a_member_whose_session_expires_fails_and_is_covered",
    ],
    "recipes/partitioning.md | Failure semantics of SetPartitioner | Connection lost (SUSPENDED)": [
        "test_a_lost_connection_asks_for_release_and_the_share_comes_back",
    ],
    "recipes/partitioning.md | Failure semantics of SetPartitioner | Session expired (LOST)": [
        "test_a_member_whose_session_expires_fails_and_is_covered",
    ],
    "recipes/partitioning.md | Failure semantics of SetPartitioner | "
    "An item lock deleted by someone": [
        "test_an_item_lock_deleted_by_someone_turns_the_member_failure",
    ],
    "recipes/partitioning.md | Failure semantics of SetPartitioner | Cancellation": [
        "test_waits_for_an_item_held_elsewhere_and_leaves_nothing_when_closed",
    ],
    "recipes/partitioning.md | Failure semantics of SetPartitioner | Timeout": [
        "test_waits_for_an_item_held_elsewhere_and_leaves_nothing_when_closed",
    ],
}


class Referee:
    """Runs the users' loop for every partitioner (release on RELEASE) and checks, at every
    change of any of them, that no item is claimed by two members at once."""

    def __init__(self) -> None:
        self.parts: list[SetPartitioner] = []
        self.changes: dict[str, list[PartitionChange]] = {}
        self.acquired_at: dict[str, float] = {}
        self._cond = asyncio.Condition()
        self._tasks: list[asyncio.Task[None]] = []

    def add(self, part: SetPartitioner) -> None:
        self.parts.append(part)
        self.changes[part.identifier] = []
        sub = part.changes()  # before start: sees every change
        self._tasks.append(asyncio.ensure_future(self._drive(part, sub)))

    async def _drive(self, part: SetPartitioner, sub: AsyncIterator[PartitionChange]) -> None:
        async for change in sub:
            self.changes[part.identifier].append(change)
            if change.state is PartitionState.ACQUIRED:
                self.acquired_at[part.identifier] = asyncio.get_running_loop().time()
            self.check_disjoint()
            async with self._cond:
                self._cond.notify_all()
            if change.state is PartitionState.RELEASE:
                with contextlib.suppress(PartitionFailedError):
                    await part.release_set()

    def check_disjoint(self) -> None:
        seen: dict[str, str] = {}
        for part in self.parts:
            for item in part.partition:
                assert item not in seen, f"{item} claimed by {seen[item]} and {part.identifier}"
                seen[item] = part.identifier

    async def until(self, done: Callable[[], bool], timeout: float = 20) -> None:
        """Wait until ``done()`` holds, checked after every change the drivers read."""

        async def wait() -> None:
            async with self._cond:
                await self._cond.wait_for(done)

        await asyncio.wait_for(wait(), timeout)

    async def converged(self, parts: list[SetPartitioner], timeout: float = 20) -> None:
        """Wait until every one of ``parts`` is ACQUIRED with all of them as members."""
        ids = tuple(sorted(p.identifier for p in parts))
        await self.until(lambda: all(p.acquired and p.members == ids for p in parts), timeout)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@pytest.fixture
async def referee() -> AsyncIterator[Referee]:
    ref = Referee()
    yield ref
    await ref.stop()


async def lock_owner(client: Client, base: str, item: str) -> str | None:
    """The identifier in the first node of the item's lock queue, as the server has it."""
    try:
        names = await client.children(f"{base}/locks/{item}")
    except NoNodeError:
        return None
    queued = sorted((int(n[-10:]), n) for n in names if "__lock__" in n)
    if not queued:
        return None
    data, _ = await client.get(f"{base}/locks/{item}/{queued[0][1]}")
    return data.decode()


async def check_split(
    admin: Client, base: str, parts: list[SetPartitioner], items: Iterable[str] = ITEMS
) -> None:
    """Every item in exactly one share, and its lock held on the server by that member."""
    shares = [set(p) for p in parts]
    assert set().union(*shares) == set(items)
    assert sum(len(s) for s in shares) == len(set(items))
    for part in parts:
        for item in part:
            assert await lock_owner(admin, base, item) == part.identifier


def make(client: Client, name: str, **options: Any) -> SetPartitioner:
    options.setdefault("time_boundary", BOUNDARY)
    return SetPartitioner(client, "/work", ITEMS, identifier=name, **options)


async def test_three_members_split_the_items_disjointly_and_completely(
    zk_connect: Factory, referee: Referee
) -> None:
    admin = await zk_connect()
    parts = [make(await zk_connect(), f"m{i}") for i in range(3)]
    for part in parts:
        referee.add(part)
    async with contextlib.AsyncExitStack() as stack:
        for part in parts:
            await stack.enter_async_context(part)
        last_join = asyncio.get_running_loop().time()
        await referee.converged(parts)
        await check_split(admin, "/work", parts)
        # kazoo's round robin over the sorted items and members.
        assert [list(p) for p in parts] == [
            ["q0", "q3", "q6", "q9"],
            ["q1", "q4", "q7"],
            ["q2", "q5", "q8"],
        ]
        for part in parts:  # only after a quiet time_boundary
            assert referee.acquired_at[part.identifier] - last_join >= BOUNDARY
            assert await part.wait_for_acquire(timeout=0) is PartitionState.ACQUIRED
    assert all(p.failed for p in parts)
    for part in parts:
        await part.client.wait_background()
    assert await child_names(admin, "/work/party") == []  # a container: maybe gone too
    assert [await lock_owner(admin, "/work", item) for item in ITEMS] == [None] * len(ITEMS)


async def test_a_member_that_closes_is_covered_by_the_others(
    zk_connect: Factory, referee: Referee
) -> None:
    admin = await zk_connect()
    parts = [make(await zk_connect(), f"m{i}") for i in range(3)]
    for part in parts:
        referee.add(part)
        await part.start()
    try:
        await referee.converged(parts)
        leaving, staying = parts[1], [parts[0], parts[2]]
        await leaving.close()
        assert leaving.failed and list(leaving) == []
        await referee.converged(staying)
        await check_split(admin, "/work", staying)
        states = [c.state for c in referee.changes["m0"]]
        assert states[-4:] == [
            PartitionState.ACQUIRED,
            PartitionState.RELEASE,
            PartitionState.ALLOCATING,
            PartitionState.ACQUIRED,
        ]
    finally:
        for part in parts:
            await part.close()


async def test_a_member_whose_session_expires_fails_and_is_covered(
    zk_connect: Factory, zookeeper: Any, referee: Referee
) -> None:
    admin = await zk_connect()
    clients = [await zk_connect(session_timeout=4) for _ in range(3)]
    parts = [make(c, f"m{i}") for i, c in enumerate(clients)]
    for part in parts:
        referee.add(part)
        await part.start()
    try:
        await referee.converged(parts)
        victim = clients[2]
        await expire_session(
            victim.session_id, session_of(victim).password, zookeeper.connect_string
        )
        # (It may go RELEASE first: the expiry takes the connection away before the session.)
        seen = referee.changes["m2"]
        await referee.until(lambda: seen[-1].state is PartitionState.FAILURE)
        with pytest.raises(PartitionFailedError, match="session ended") as failed:
            await parts[2].wait_for_acquire(timeout=0)
        assert parts[2].failure is failed.value is seen[-1].error
        assert parts[2].failed and list(parts[2]) == []
        await referee.converged(parts[:2])
        await check_split(admin, "/work", parts[:2])
        # The failed member stays out, though its client has a new session by now.
        await victim.wait_for(aiocoord.State.CONNECTED, timeout=20)
        await eventually(lambda: party_has(admin, 2), what="two members left in the party")
        with pytest.raises(PartitionFailedError):
            await parts[2].release_set()
    finally:
        for part in parts:
            await part.close()


async def test_a_joining_member_gets_a_share(zk_connect: Factory, referee: Referee) -> None:
    admin = await zk_connect()
    parts = [make(await zk_connect(), f"m{i}") for i in range(3)]
    for part in parts:
        referee.add(part)
    try:
        for part in parts[:2]:
            await part.start()
        await referee.converged(parts[:2])
        await check_split(admin, "/work", parts[:2])
        await parts[2].start()
        await referee.converged(parts)
        await check_split(admin, "/work", parts)
    finally:
        for part in parts:
            await part.close()


async def test_waits_for_an_item_held_elsewhere_and_leaves_nothing_when_closed(
    zk_connect: Factory,
) -> None:
    client, kazoo = await zk_connect(), await zk_connect()
    held = await kazoo.create(
        "/work/locks/q4/0123456789abcdef__lock__",
        b"kazoo-member",
        ephemeral=True,
        sequential=True,
        make_parents=True,
    )
    part = SetPartitioner(client, "/work", ["q3", "q4"], identifier="solo", time_boundary=0)
    async with part:
        with pytest.raises(aiocoord.TimeoutError):
            await part.wait_for_acquire(timeout=0.5)
        assert part.allocating and list(part) == []
        await kazoo.delete(held)
        assert await part.wait_for_acquire(timeout=20) is PartitionState.ACQUIRED
        assert sorted(part) == ["q3", "q4"]

    # Closed while waiting for a lock: no member or lock node of its own is left. (The item's
    # lock path is a container, emptied above: the server may have removed it already.)
    await kazoo.create(
        "/work/locks/q3/ffff__lock__", ephemeral=True, sequential=True, make_parents=True
    )
    waiting = SetPartitioner(client, "/work", ["q3"], identifier="w", time_boundary=0)
    async with waiting:
        await eventually(lambda: queued(kazoo, "/work/locks/q3", 2), what="the waiter queued")
    await client.wait_background()
    # The party is a container: the server may have removed it, empty, by now.
    assert await child_names(kazoo, "/work/party") == []
    assert len(await kazoo.children("/work/locks/q3")) == 1


async def party_has(client: Client, count: int) -> bool:
    return len(await client.children("/work/party")) == count


async def queued(client: Client, path: str, count: int) -> bool:
    return len(await client.children(path)) == count


async def test_custom_partition_func_and_a_failing_one(zk_connect: Factory) -> None:
    client = await zk_connect()

    def evens(identifier: str, members: list[str], items: list[str]) -> list[str]:
        assert members == [identifier]
        return [item for item in items if int(item[1:]) % 2 == 0]

    async with make(client, "solo", partition_func=evens, time_boundary=0) as part:
        await part.wait_for_acquire(timeout=20)
        assert list(part) == ["q0", "q2", "q4", "q6", "q8"]

    def stray(identifier: str, members: list[str], items: list[str]) -> list[str]:
        return ["elsewhere"]

    async with make(client, "bad", partition_func=stray, time_boundary=0) as part:
        with pytest.raises(PartitionFailedError, match="not in the set") as failed:
            await part.wait_for_acquire(timeout=20)
        assert isinstance(failed.value.__cause__, BadArgumentsError)
        assert part.failed


PARTITIONER_INPUTS: list[tuple[str, Callable[[Client], Any], type[CoordinationError]]] = [
    ("path", lambda c: SetPartitioner(c, "work", ITEMS), InvalidPathError),
    ("root", lambda c: SetPartitioner(c, "/", ITEMS), BadArgumentsError),
    ("items str", lambda c: SetPartitioner(c, "/w", "abc"), InvalidTypeError),
    ("item int", lambda c: SetPartitioner(c, "/w", [1, 2]), InvalidTypeError),  # type: ignore[list-item]
    ("item slash", lambda c: SetPartitioner(c, "/w", ["a/b"]), BadArgumentsError),
    ("item dots", lambda c: SetPartitioner(c, "/w", [".."]), InvalidPathError),
    ("identifier", lambda c: SetPartitioner(c, "/w", ITEMS, identifier=3), InvalidTypeError),  # type: ignore[arg-type]
    (
        "identifier slash",
        lambda c: SetPartitioner(c, "/w", ITEMS, identifier="a/b"),
        BadArgumentsError,
    ),
    ("func", lambda c: SetPartitioner(c, "/w", ITEMS, partition_func=3), InvalidTypeError),  # type: ignore[arg-type]
    ("boundary", lambda c: SetPartitioner(c, "/w", ITEMS, time_boundary=-1), BadArgumentsError),
    (
        "boundary inf",
        lambda c: SetPartitioner(c, "/w", ITEMS, time_boundary=float("inf")),
        BadArgumentsError,
    ),
    ("acl", lambda c: SetPartitioner(c, "/w", ITEMS, acl=[]), BadArgumentsError),
]


@pytest.mark.parametrize(
    ("build", "error"),
    [(b, e) for _, b, e in PARTITIONER_INPUTS],
    ids=[n for n, _, _ in PARTITIONER_INPUTS],
)
async def test_bad_arguments_raise_typed_errors_and_send_nothing(
    zk_client: Client, build: Callable[[Client], Any], error: type[CoordinationError]
) -> None:
    before = dict(session_of(zk_client).sent)
    with pytest.raises(error):
        build(zk_client)
    assert dict(session_of(zk_client).sent) == before


async def test_misuse_is_reported(zk_client: Client) -> None:
    part = SetPartitioner(zk_client, "/w", ITEMS)
    with pytest.raises(CoordinationError, match="not started"):
        await part.wait_for_acquire()
    with pytest.raises(BadArgumentsError):
        part.changes(buffer_size=0)
    with pytest.raises(BadArgumentsError):
        await part.wait_for_acquire(timeout=-1)


async def test_a_lost_connection_asks_for_release_and_the_share_comes_back(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    admin = await zk_connect()
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    async with make(client, "solo", time_boundary=0) as part:
        assert await part.wait_for_acquire(timeout=20) is PartitionState.ACQUIRED
        changes = part.changes()
        session = client.session_id
        zk_fault_proxy.drop()  # SUSPENDED: the session may be expiring unseen
        change = await changes.get(timeout=10)
        assert change.state is PartitionState.RELEASE
        assert change.partition == tuple(ITEMS)  # still held until released
        await part.release_set()
        assert part.allocating and list(part) == []
        assert await part.wait_for_acquire(timeout=20) is PartitionState.ACQUIRED
        assert client.session_id == session
        await check_split(admin, "/work", [part])


async def test_an_item_lock_deleted_by_someone_turns_the_member_failure(
    zk_connect: Factory,
) -> None:
    admin, client = await zk_connect(), await zk_connect()
    async with make(client, "solo", time_boundary=0) as part:
        assert await part.wait_for_acquire(timeout=20) is PartitionState.ACQUIRED
        changes = part.changes()
        (node,) = await child_names(admin, "/work/locks/q3")
        await admin.delete(f"/work/locks/q3/{node}")  # an operator's clean-up, say

        async def failure() -> None:
            async for change in changes:
                if change.state is PartitionState.FAILURE:
                    return

        await asyncio.wait_for(failure(), 10)
        assert part.failed and list(part) == []
        with pytest.raises(PartitionFailedError):
            await part.wait_for_acquire(timeout=0)
    await client.wait_background()
    # It let go of everything: no lock node of its own and no member node is left.
    for item in ITEMS:
        assert await child_names(admin, f"/work/locks/{item}") == []
    assert await child_names(admin, "/work/party") == []
