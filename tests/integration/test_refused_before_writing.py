"""No recipe writes anything before it refuses bad input.

Every public recipe (each public class whose constructor takes the client first) is walked
through its constructor and first call with values the server would refuse or that have no
wire form: an identifier, a payload or a name over ZooKeeper's 1 MiB packet limit, and a lone
surrogate (no UTF-8 form). Each attempt must raise a typed error (BadArgumentsError, of which
DataTooLargeError and InvalidPathError are kinds, InvalidTypeError, or a model's
ModelEncodeError), and the server's
tree under the test's namespace must be as it was: no lock path, container or parent left.
A recipe added to the public API without a row here fails the test.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest
from support import Factory

import aiocoord
from aiocoord import (
    AtomicCounter,
    BadArgumentsError,
    Barrier,
    ChildrenCache,
    Client,
    DelayQueue,
    DistributedAtomicValue,
    DoubleBarrier,
    Election,
    GroupMember,
    IdQueue,
    InvalidTypeError,
    LeaderLatch,
    Lock,
    LockingQueue,
    MigrationManager,
    Model,
    ModelEncodeError,
    MultiNonBlockingLease,
    Mutex,
    NodeCache,
    NonBlockingLease,
    PersistentNode,
    PersistentTtlNode,
    PriorityQueue,
    Queue,
    QueueSharder,
    ReadWriteLock,
    Semaphore,
    ServiceDiscovery,
    ServiceInstance,
    SetPartitioner,
    SharedCount,
    SharedValue,
    SimpleQueue,
    TreeCache,
)

#: Over the server's 1 MiB packet limit once written, alone.
BIG = b"x" * ((1 << 20) + 1)
BIG_TEXT = "x" * ((1 << 20) + 1)
#: No UTF-8 form.
LONE = "\ud800"
#: A path no server takes.
BIG_PATH = "/" + "n" * ((1 << 20) + 1)
LONE_PATH = "/bad" + LONE

Attempt = Callable[[Client], Awaitable[object]]


@dataclass(frozen=True)
class _Doc:
    text: str


async def _lock(client: Client, **options: object) -> None:
    await Lock(client, "/lock", **options).acquire(timeout=5)  # type: ignore[arg-type]  # bad on purpose


async def _start(recipe: object) -> None:
    await recipe.start()  # type: ignore[attr-defined]  # every row's recipe has start()


#: Per public recipe, the attempts: constructor and first call with bad input.
ATTEMPTS: dict[str, list[Attempt]] = {
    "Lock": [
        lambda c: _lock(c, identifier=BIG_TEXT),
        lambda c: _lock(c, identifier=BIG_TEXT, layout="kazoo"),
        lambda c: _lock(c, identifier=LONE),
        lambda c: Lock(c, BIG_PATH).acquire(timeout=5),
        lambda c: Lock(c, LONE_PATH).acquire(timeout=5),
    ],
    "Mutex": [lambda c: Mutex(c, "/mutex", identifier=BIG_TEXT).acquire(timeout=5)],
    "ReadWriteLock": [
        lambda c: ReadWriteLock(c, "/rw", identifier=BIG_TEXT).write.acquire(timeout=5),
        lambda c: ReadWriteLock(c, "/rw", identifier=BIG_TEXT).read.acquire(timeout=5),
    ],
    "Semaphore": [
        lambda c: Semaphore(c, "/sem", 2, identifier=BIG_TEXT).acquire(1, timeout=5),
        lambda c: Semaphore(c, "/sem", 2, identifier=BIG_TEXT, layout="kazoo").acquire(
            1, timeout=5
        ),
    ],
    "Election": [
        lambda c: Election(c, "/election", identifier=BIG_TEXT).leadership(5).__aenter__(),
    ],
    "LeaderLatch": [lambda c: _start(LeaderLatch(c, "/latch", identifier=BIG_TEXT))],
    "GroupMember": [
        lambda c: _start(GroupMember(c, "/group", "m", BIG)),
        lambda c: _start(GroupMember(c, "/group", BIG_TEXT)),
        lambda c: _start(GroupMember(c, "/group", BIG_TEXT, layout="kazoo")),
        lambda c: _start(GroupMember(c, "/group", LONE, layout="kazoo")),
    ],
    "PersistentNode": [lambda c: _start(PersistentNode(c, "/node", BIG))],
    "PersistentTtlNode": [lambda c: _start(PersistentTtlNode(c, "/ttl", 60, data=BIG))],
    "Queue": [
        lambda c: Queue(c, "/queue").put(BIG),
        lambda c: Queue(c, "/queue").put_all([b"ok", BIG]),
        lambda c: Queue(c, "/queue", layout="kazoo").put(BIG),
    ],
    "PriorityQueue": [lambda c: PriorityQueue(c, "/pq").put(BIG, 1)],
    "SimpleQueue": [lambda c: SimpleQueue(c, "/sq").offer(BIG)],
    "DelayQueue": [lambda c: DelayQueue(c, "/dq").put(BIG, 0)],
    "IdQueue": [
        lambda c: IdQueue(c, "/iq").put(BIG, "id"),
        lambda c: IdQueue(c, "/iq").put(b"item", BIG_TEXT),
        lambda c: IdQueue(c, "/iq").put(b"item", LONE),
    ],
    "LockingQueue": [lambda c: LockingQueue(c, "/lq").put(BIG)],
    "QueueSharder": [lambda c: _start(QueueSharder(c, BIG_PATH, "/sharder-leader"))],
    "SharedCount": [lambda c: _start(SharedCount(c, BIG_PATH, 0))],
    "SharedValue": [lambda c: _start(SharedValue(c, "/value", BIG))],
    "AtomicCounter": [lambda c: AtomicCounter(c, BIG_PATH).increment()],
    "DistributedAtomicValue": [
        lambda c: DistributedAtomicValue(c, "/atomic").try_set(BIG),
        lambda c: DistributedAtomicValue(c, "/atomic").force_set(BIG),
    ],
    "Barrier": [lambda c: Barrier(c, BIG_PATH).set()],
    "DoubleBarrier": [lambda c: DoubleBarrier(c, BIG_PATH, 2).enter(timeout=5)],
    "NonBlockingLease": [
        lambda c: NonBlockingLease(c, "/lease", 5, identifier=BIG_TEXT).obtain(timeout=5),
    ],
    "MultiNonBlockingLease": [
        lambda c: MultiNonBlockingLease(c, "/leases", 2, 5, identifier=BIG_TEXT).obtain(timeout=5),
    ],
    "SetPartitioner": [
        lambda c: _start(SetPartitioner(c, "/part", ["a"], identifier=BIG_TEXT)),
        lambda c: _start(SetPartitioner(c, "/part", [BIG_TEXT])),
    ],
    "ServiceDiscovery": [
        lambda c: ServiceDiscovery(c, "/services").register(
            ServiceInstance(name="api", id="1", payload=BIG_TEXT), timeout=5
        ),
        lambda c: ServiceDiscovery(c, "/services").register(
            ServiceInstance(name=BIG_TEXT, id="1"), timeout=5
        ),
    ],
    "NodeCache": [lambda c: _start(NodeCache(c, BIG_PATH))],
    "ChildrenCache": [lambda c: _start(ChildrenCache(c, BIG_PATH))],
    "TreeCache": [lambda c: _start(TreeCache(c, BIG_PATH))],
    "ModeledNode": [
        lambda c: Model(_Doc, "/docs/{name}").bind(c, name="a").create(_Doc(BIG_TEXT)),
        lambda c: Model(_Doc, "/docs/{name}").bind(c, name="a").set(_Doc(LONE)),
    ],
    "MigrationManager": [
        lambda c: MigrationManager(c, BIG_PATH, "/meta").migrate(
            aiocoord.MigrationSet(
                "s", [aiocoord.Migration("m", [aiocoord.MigrationOp.create("/m")])]
            )
        ),
    ],
}

#: Public classes that take the client first but write nothing of their own.
WRITE_NOTHING = {
    "EnsembleTracker": "reads the ensemble's configuration",
    "ModelCache": "a typed view over a cache of the caches above",
}


def _recipes() -> set[str]:
    names = set()
    for name in aiocoord.__all__:
        obj = getattr(aiocoord, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            params = list(inspect.signature(obj.__init__).parameters)
            if len(params) > 1 and params[1] == "client":
                names.add(name)
    return names


def test_every_public_recipe_has_a_row() -> None:
    assert _recipes() == set(ATTEMPTS) | set(WRITE_NOTHING)


async def _tree(client: Client, path: str = "/") -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name in sorted(await client.children(path)):
        child = ("" if path == "/" else path) + "/" + name
        data, _ = await client.get(child)
        out[child] = data
        out.update(await _tree(client, child))
    return out


@pytest.mark.parametrize("recipe", sorted(ATTEMPTS))
async def test_bad_input_is_refused_with_a_typed_error_and_nothing_written(
    zk_connect: Factory, recipe: str
) -> None:
    client = await zk_connect()
    before = await _tree(client)
    for i, attempt in enumerate(ATTEMPTS[recipe]):
        with pytest.raises((BadArgumentsError, InvalidTypeError, ModelEncodeError)):
            await attempt(client)
        await client.wait_background()  # anything written in the background is written now
        assert await _tree(client) == before, f"{recipe} attempt {i} left nodes behind"
