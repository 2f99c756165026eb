"""Bad input to the election, barrier, counter, queue and node recipes (and a bad ``acl`` to
any recipe that creates nodes) raises a typed error before anything is sent, and creates
nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from aiocoord import ACL, Client
from aiocoord.errors import (
    BadArgumentsError,
    CoordinationError,
    DataTooLargeError,
    InvalidPathError,
    InvalidTypeError,
)
from aiocoord.recipes.atomic_value import DistributedAtomicValue, PromotedToLock
from aiocoord.recipes.barrier import Barrier, DoubleBarrier
from aiocoord.recipes.counter import AtomicCounter, SharedCount
from aiocoord.recipes.election import Election, LeaderLatch
from aiocoord.recipes.lock import Lock, Mutex
from aiocoord.recipes.locking_queue import LockingQueue
from aiocoord.recipes.nodes import CreateMode, GroupMember, PersistentNode
from aiocoord.recipes.queue import PriorityQueue, Queue
from aiocoord.recipes.queue_sharder import QueueSharder
from aiocoord.recipes.rwlock import ReadWriteLock
from aiocoord.recipes.semaphore import Semaphore
from aiocoord.testing import session_of

Make = Callable[[Client], Any]

ANYONE = ACL(ACL.ALL, "world", "anyone")
NO_PERMS = [ACL(0, "world", "anyone")]
BAD_PERMS = [ACL(32, "world", "anyone")]

CONSTRUCTORS: list[tuple[str, Make, type[CoordinationError]]] = [
    ("latch relative path", lambda c: LeaderLatch(c, "leader"), InvalidPathError),
    ("latch on root", lambda c: LeaderLatch(c, "/"), BadArgumentsError),
    ("latch not a client", lambda c: LeaderLatch("zk", "/l"), InvalidTypeError),  # type: ignore[arg-type]
    ("latch identifier", lambda c: LeaderLatch(c, "/l", identifier=5), InvalidTypeError),  # type: ignore[arg-type]
    ("latch policy", lambda c: LeaderLatch(c, "/l", suspended_is_loss="y"), InvalidTypeError),  # type: ignore[arg-type]
    ("latch buffer", lambda c: LeaderLatch(c, "/l", buffer_size=0), BadArgumentsError),
    ("election trailing slash", lambda c: Election(c, "/e/"), InvalidPathError),
    ("election identifier", lambda c: Election(c, "/e", identifier=b"id"), InvalidTypeError),  # type: ignore[arg-type]
    ("barrier empty path", lambda c: Barrier(c, ""), InvalidPathError),
    ("double barrier n=0", lambda c: DoubleBarrier(c, "/d", 0), BadArgumentsError),
    ("double barrier n str", lambda c: DoubleBarrier(c, "/d", "3"), InvalidTypeError),  # type: ignore[arg-type]
    ("double barrier n bool", lambda c: DoubleBarrier(c, "/d", True), InvalidTypeError),
    ("barrier layout", lambda c: Barrier(c, "/b", layout="zk"), BadArgumentsError),
    ("double barrier layout", lambda c: DoubleBarrier(c, "/d", 2, layout=2), InvalidTypeError),  # type: ignore[arg-type]
    ("shared count seed range", lambda c: SharedCount(c, "/s", 2**31), BadArgumentsError),
    ("shared count seed type", lambda c: SharedCount(c, "/s", "1"), InvalidTypeError),  # type: ignore[arg-type]
    ("counter retry", lambda c: AtomicCounter(c, "/a", retry=3), InvalidTypeError),  # type: ignore[arg-type]
    ("counter dot segment", lambda c: AtomicCounter(c, "/a/../b"), InvalidPathError),
    ("queue on root", lambda c: Queue(c, "/"), BadArgumentsError),
    ("atomic value on root", lambda c: DistributedAtomicValue(c, "/"), BadArgumentsError),
    (
        "atomic value promoted",
        lambda c: DistributedAtomicValue(c, "/v", promoted_to_lock="/l"),  # type: ignore[arg-type]
        InvalidTypeError,
    ),
    (
        "promoted lock path",
        lambda c: DistributedAtomicValue(c, "/v", promoted_to_lock=PromotedToLock("l")),
        InvalidPathError,
    ),
    (
        "promoted retry",
        lambda c: AtomicCounter(c, "/a", promoted_to_lock=PromotedToLock("/l", retry=1)),  # type: ignore[arg-type]
        InvalidTypeError,
    ),
    ("sharder on root", lambda c: QueueSharder(c, "/", "/leader"), BadArgumentsError),
    ("sharder leader path", lambda c: QueueSharder(c, "/q", "leader"), InvalidPathError),
    ("sharder policies", lambda c: QueueSharder(c, "/q", "/l", policies={}), InvalidTypeError),  # type: ignore[arg-type]
    ("locking queue path type", lambda c: LockingQueue(c, 5), InvalidTypeError),  # type: ignore[arg-type]
    ("node data str", lambda c: PersistentNode(c, "/p", "x"), InvalidTypeError),  # type: ignore[arg-type]
    (
        "node data too large",
        lambda c: PersistentNode(c, "/p", b"x" * (2**20 + 1)),
        DataTooLargeError,
    ),
    ("node mode str", lambda c: PersistentNode(c, "/p", mode="EPHEMERAL"), InvalidTypeError),  # type: ignore[arg-type]
    ("node protected", lambda c: PersistentNode(c, "/p", protected=1), InvalidTypeError),  # type: ignore[arg-type]
    ("node nul", lambda c: PersistentNode(c, "/p\x00"), InvalidPathError),
    ("member id slash", lambda c: GroupMember(c, "/g", "a/b"), BadArgumentsError),
    ("member id empty", lambda c: GroupMember(c, "/g", ""), BadArgumentsError),
    ("member id type", lambda c: GroupMember(c, "/g", 3), InvalidTypeError),  # type: ignore[arg-type]
    ("member path", lambda c: GroupMember(c, "g", "a"), InvalidPathError),
    # The ACL is checked as Client.create checks it.
    ("lock acl empty", lambda c: Lock(c, "/k", acl=[]), BadArgumentsError),
    ("mutex acl str", lambda c: Mutex(c, "/k", acl="world:anyone"), InvalidTypeError),  # type: ignore[arg-type]
    ("rwlock acl entry", lambda c: ReadWriteLock(c, "/k", acl=[("a", "b")]), InvalidTypeError),  # type: ignore[list-item]
    ("semaphore acl perms", lambda c: Semaphore(c, "/s", 2, acl=NO_PERMS), BadArgumentsError),
    ("latch acl", lambda c: LeaderLatch(c, "/l", acl=[]), BadArgumentsError),
    ("election acl", lambda c: Election(c, "/e", acl=ANYONE), InvalidTypeError),  # type: ignore[arg-type]
    ("barrier acl", lambda c: Barrier(c, "/b", acl=[]), BadArgumentsError),
    ("double barrier acl", lambda c: DoubleBarrier(c, "/d", 2, acl=[]), BadArgumentsError),
    ("shared count acl", lambda c: SharedCount(c, "/s", acl=[]), BadArgumentsError),
    ("counter acl", lambda c: AtomicCounter(c, "/a", acl=BAD_PERMS), BadArgumentsError),
    ("queue acl", lambda c: Queue(c, "/q", acl=[]), BadArgumentsError),
    ("priority queue acl", lambda c: PriorityQueue(c, "/q", acl=b"x"), InvalidTypeError),  # type: ignore[arg-type]
    ("locking queue acl", lambda c: LockingQueue(c, "/q", acl=[]), BadArgumentsError),
    ("node acl", lambda c: PersistentNode(c, "/p", acl=[]), BadArgumentsError),
    ("member acl", lambda c: GroupMember(c, "/g", "a", acl=[]), BadArgumentsError),
]


@pytest.mark.parametrize(
    ("make", "error"),
    [(m, e) for _, m, e in CONSTRUCTORS],
    ids=[name for name, _, _ in CONSTRUCTORS],
)
async def test_bad_constructor_arguments_raise_typed_errors_and_send_nothing(
    zk_client: Client, make: Make, error: type[CoordinationError]
) -> None:
    before = dict(session_of(zk_client).sent)
    with pytest.raises(error):
        make(zk_client)
    assert dict(session_of(zk_client).sent) == before


Call = Callable[[Client], Awaitable[Any]]

CALLS: list[tuple[str, Call, type[CoordinationError]]] = [
    ("latch wait timeout", lambda c: LeaderLatch(c, "/l").wait_until_leader(-1), BadArgumentsError),
    (
        "latch next_change timeout",
        lambda c: LeaderLatch(c, "/l").next_change("1"),
        InvalidTypeError,
    ),  # type: ignore[arg-type]
    ("election run func", lambda c: Election(c, "/e").run(42), InvalidTypeError),  # type: ignore[arg-type]
    (
        "election leadership timeout",
        lambda c: _enter(Election(c, "/e").leadership(-1)),
        BadArgumentsError,
    ),
    ("barrier wait timeout", lambda c: Barrier(c, "/b").wait(-1), BadArgumentsError),
    (
        "double barrier enter timeout",
        lambda c: DoubleBarrier(c, "/d", 2).enter(-2),
        BadArgumentsError,
    ),
    ("shared count set range", lambda c: SharedCount(c, "/s").set(2**40), BadArgumentsError),
    (
        "shared count try_set version",
        lambda c: SharedCount(c, "/s").try_set(1, -1),
        BadArgumentsError,
    ),
    ("shared count wait_for", lambda c: SharedCount(c, "/s").wait_for(5), InvalidTypeError),  # type: ignore[arg-type]
    ("counter add float", lambda c: AtomicCounter(c, "/a").add(1.0), InvalidTypeError),  # type: ignore[arg-type]
    ("counter add range", lambda c: AtomicCounter(c, "/a").add(2**63), BadArgumentsError),
    (
        "counter cas type",
        lambda c: AtomicCounter(c, "/a").compare_and_set("0", 1),
        InvalidTypeError,
    ),  # type: ignore[arg-type]
    ("counter force_set bool", lambda c: AtomicCounter(c, "/a").force_set(True), InvalidTypeError),
    ("counter try_set range", lambda c: AtomicCounter(c, "/a").try_set(2**63), BadArgumentsError),
    (
        "atomic value try_set str",
        lambda c: DistributedAtomicValue(c, "/v").try_set("x"),  # type: ignore[arg-type]
        InvalidTypeError,
    ),
    (
        "atomic value force_set too large",
        lambda c: DistributedAtomicValue(c, "/v").force_set(b"x" * (2**20 + 1)),
        DataTooLargeError,
    ),
    ("sharder get before start", lambda c: QueueSharder(c, "/q", "/l").get(), CoordinationError),
    (
        "counter initialize range",
        lambda c: AtomicCounter(c, "/a").initialize(-(2**64)),
        BadArgumentsError,
    ),
    ("queue put str", lambda c: Queue(c, "/q").put("text"), InvalidTypeError),  # type: ignore[arg-type]
    ("queue put_all bytes", lambda c: Queue(c, "/q").put_all(b"abc"), InvalidTypeError),
    ("queue put_all empty", lambda c: Queue(c, "/q").put_all([]), BadArgumentsError),
    ("queue get timeout", lambda c: Queue(c, "/q").get(-1), BadArgumentsError),
    ("priority type", lambda c: PriorityQueue(c, "/q").put(b"x", 1.5), InvalidTypeError),  # type: ignore[arg-type]
    ("priority range", lambda c: PriorityQueue(c, "/q").put(b"x", 2**31), BadArgumentsError),
    ("locking priority range", lambda c: LockingQueue(c, "/lq").put(b"x", 1000), BadArgumentsError),
    ("locking put data", lambda c: LockingQueue(c, "/lq").put(None), InvalidTypeError),  # type: ignore[arg-type]
    ("locking take timeout", lambda c: LockingQueue(c, "/lq").take("1"), InvalidTypeError),  # type: ignore[arg-type]
    ("node set_data str", lambda c: PersistentNode(c, "/p").set_data("s"), InvalidTypeError),  # type: ignore[arg-type]
    ("node wait timeout", lambda c: _started_wait(PersistentNode(c, "/p")), BadArgumentsError),
    ("member wait_for", lambda c: GroupMember(c, "/g", "m").wait_for("x"), InvalidTypeError),  # type: ignore[arg-type]
]


async def _enter(context: Any) -> None:
    async with context:
        pass


async def _started_wait(node: PersistentNode) -> None:
    await node.wait_for_initial_create(-1)


@pytest.mark.parametrize(
    ("call", "error"), [(c, e) for _, c, e in CALLS], ids=[name for name, _, _ in CALLS]
)
async def test_bad_method_arguments_raise_typed_errors_and_create_nothing(
    zk_client: Client, call: Call, error: type[CoordinationError]
) -> None:
    before = dict(session_of(zk_client).sent)
    with pytest.raises(error):
        await call(zk_client)
    assert dict(session_of(zk_client).sent) == before
    assert await zk_client.children("/") == []


def test_create_mode_flags() -> None:
    assert [(m.ephemeral, m.sequential, m.ttl) for m in CreateMode] == [
        (False, False, False),
        (True, False, False),
        (False, True, False),
        (True, True, False),
        (False, False, False),  # CONTAINER
        (False, False, True),
        (False, True, True),
    ]
