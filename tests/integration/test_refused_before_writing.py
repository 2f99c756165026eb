"""No recipe writes anything before it refuses bad input.

Every public recipe is walked through its constructor and first write (acquire, obtain, put,
enter, start, set, create, register, migrate ...) with values the server would refuse or that
have no wire form: an identifier, a payload, a name or a path over ZooKeeper's request limit
(``aiocoord._validation``: data above ``MAX_DATA_SIZE``, or a request above ``MAX_REQUEST``,
the server's default ``jute.maxbuffer``), data of exactly ``MAX_DATA_SIZE`` (accepted as data,
but no request carrying it fits), and a lone surrogate (no UTF-8 form). Each attempt must raise
the typed error its value calls for (DataTooLargeError for the oversize ones, a
BadArgumentsError for the unencodable ones: InvalidPathError in a path, a model's
ModelEncodeError in a value), and the server's whole tree under the test's namespace must be
as it was: no lock path, container, parent or first item of a batch left.

The recipes are found from ``__all__`` of the root and of the public subpackages that hold
the rest (:data:`SURFACE`): a public class of ``aiocoord.recipes`` or
``aiocoord.modeled`` that can talk to the server, a public class taking the client first,
and a public function of ``aiocoord.recipes`` taking the client first. One without a row in
:data:`ATTEMPTS` or a reason in :data:`NOT_WRITERS` fails
:func:`test_every_public_recipe_has_a_row`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import Factory

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
    LeaderLatch,
    Lock,
    LockingQueue,
    MultiLock,
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
    SetPartitioner,
    SharedCount,
    SharedValue,
    SimpleQueue,
    TreeCache,
    attempt_revoke,
)
from aiocoord._validation import MAX_DATA_SIZE, MAX_REQUEST
from aiocoord.errors import DataTooLargeError, InvalidTypeError, ModelEncodeError
from aiocoord.modeled import Model
from aiocoord.recipes.atomic_value import PromotedToLock
from aiocoord.recipes.discovery import (
    ServiceCache,
    ServiceDiscovery,
    ServiceInstance,
    ServiceProvider,
)
from aiocoord.recipes.migrations import Migration, MigrationManager, MigrationOp, MigrationSet
from aiocoord.recipes.nodes import CreateMode

#: Over the data limit, alone.
BIG = b"x" * (MAX_DATA_SIZE + 1)
#: Accepted as node data, but no request carrying it (with a path, an ACL and the frame's
#: header) is under the server's request limit: only the connection would find out, after
#: whatever the recipe wrote before it.
EDGE = b"x" * MAX_DATA_SIZE
BIG_TEXT = "x" * (MAX_DATA_SIZE + 1)
EDGE_TEXT = "x" * MAX_DATA_SIZE
#: No UTF-8 form.
LONE = "\ud800"
#: A node name, and a path, over the request limit on their own.
BIG_NAME = "n" * (MAX_REQUEST + 1)
BIG_PATH = "/" + BIG_NAME
LONE_PATH = "/bad" + LONE

TOO_BIG = DataTooLargeError
#: Unencodable text: BadArgumentsError (InvalidPathError in a path).
NO_UTF8 = BadArgumentsError
WRONG_TYPE = InvalidTypeError

Attempt = Callable[[Client], Awaitable[object]]
Row = tuple[type[Exception], Attempt]

LAYOUTS = ("curator", "kazoo")


@dataclass(frozen=True)
class _Doc:
    text: str


async def _start(recipe: Any) -> None:
    await recipe.start()


async def _enter(recipe: Any) -> None:
    await recipe.__aenter__()


def _identifiers(make: Callable[[str], Attempt]) -> list[Row]:
    """An oversize identifier, one at the data limit (its node's create is over the request
    limit) and an unencodable one."""
    return [
        (TOO_BIG, make(BIG_TEXT)),
        (TOO_BIG, make(EDGE_TEXT)),
        (NO_UTF8, make(LONE)),
        (WRONG_TYPE, make(b"bytes")),  # wrong on purpose
    ]


def _paths(make: Callable[[str], Attempt]) -> list[Row]:
    """An oversize path, an unencodable one, and bytes."""
    return [
        (TOO_BIG, make(BIG_PATH)),
        (NO_UTF8, make(LONE_PATH)),
        (WRONG_TYPE, make(b"/bytes")),  # wrong on purpose
    ]


def _payloads(make: Callable[[bytes], Attempt]) -> list[Row]:
    """Data over the data limit, data at it (its create is over the request limit), and
    text (no bytes: its encoding is the caller's to choose)."""
    return [
        (TOO_BIG, make(BIG)),
        (TOO_BIG, make(EDGE)),
        (WRONG_TYPE, make("text")),  # wrong on purpose
    ]


def _batches(put_all: Callable[[Client, list[bytes]], Awaitable[object]]) -> list[Row]:
    """A good item ahead of a bad one: the good one must not be written either."""
    return [
        (TOO_BIG, lambda c: put_all(c, [b"ok", BIG])),
        (TOO_BIG, lambda c: put_all(c, [b"ok", EDGE])),
        (TOO_BIG, lambda c: put_all(c, [b"ok"] * 2 + [b"y" * (MAX_DATA_SIZE // 2)] * 2)),
    ]


def _lock_rows(cls: type[Lock]) -> list[Row]:
    rows: list[Row] = []
    for layout in LAYOUTS:

        def by_id(v: str, layout: str = layout) -> Attempt:
            return lambda c: cls(c, "/lock", identifier=v, layout=layout).acquire(timeout=5)

        def by_path(p: str, layout: str = layout) -> Attempt:
            return lambda c: cls(c, p, layout=layout).acquire(timeout=5)

        rows += _identifiers(by_id) + _paths(by_path)
    return rows


def _rw_rows(side: str) -> list[Row]:
    rows: list[Row] = []
    for layout in LAYOUTS:

        def by_id(v: str, layout: str = layout) -> Attempt:
            rw = lambda c: ReadWriteLock(c, "/rw", identifier=v, layout=layout)  # noqa: E731
            return lambda c: getattr(rw(c), side).acquire(timeout=5)

        def by_path(p: str, layout: str = layout) -> Attempt:
            return lambda c: getattr(ReadWriteLock(c, p, layout=layout), side).acquire(timeout=5)

        rows += _identifiers(by_id) + _paths(by_path)
    return rows


def _semaphore_rows() -> list[Row]:
    rows: list[Row] = []
    for layout in LAYOUTS:

        def by_id(v: str, layout: str = layout) -> Attempt:
            sem = lambda c: Semaphore(c, "/sem", 2, identifier=v, layout=layout)  # noqa: E731
            return lambda c: sem(c).acquire(1, timeout=5)

        def by_path(p: str, layout: str = layout) -> Attempt:
            return lambda c: Semaphore(c, p, 2, layout=layout).acquire(1, timeout=5)

        rows += _identifiers(by_id) + _paths(by_path)
    return rows


def _election_rows() -> list[Row]:
    async def noop(term: object) -> None:
        return None

    rows: list[Row] = []
    for layout in LAYOUTS:

        def by_id(v: str, layout: str = layout) -> Attempt:
            return lambda c: _enter(Election(c, "/el", identifier=v, layout=layout).leadership(5))

        def run_by_id(v: str, layout: str = layout) -> Attempt:
            return lambda c: Election(c, "/el", identifier=v, layout=layout).run(noop)

        def by_path(p: str, layout: str = layout) -> Attempt:
            return lambda c: _enter(Election(c, p, layout=layout).leadership(5))

        rows += _identifiers(by_id) + _identifiers(run_by_id) + _paths(by_path)
    return rows


def _group_rows() -> list[Row]:
    rows: list[Row] = []
    for layout in LAYOUTS:

        def by_data(d: bytes, layout: str = layout) -> Attempt:
            return lambda c: _start(GroupMember(c, "/group", "m", d, layout=layout))

        def by_id(v: str, layout: str = layout) -> Attempt:
            return lambda c: _start(GroupMember(c, "/group", v, layout=layout))

        def by_path(p: str, layout: str = layout) -> Attempt:
            return lambda c: _start(GroupMember(c, p, "m", layout=layout))

        # kazoo's parties keep the identifier as the data (no data of their own to give).
        rows += _payloads(by_data) if layout == "curator" else []
        rows += _identifiers(by_id) + _paths(by_path)
    return rows


def _persistent_rows() -> list[Row]:
    rows: list[Row] = []
    for mode in (CreateMode.EPHEMERAL, CreateMode.PERSISTENT_SEQUENTIAL):
        for protected in (False, True):

            def by_data(d: bytes, mode: CreateMode = mode, protected: bool = protected) -> Attempt:
                node = lambda c: PersistentNode(c, "/a/node", d, mode=mode, protected=protected)  # noqa: E731
                return lambda c: _start(node(c))

            rows += _payloads(by_data)
    rows += _paths(lambda p: lambda c: _start(PersistentNode(c, p)))
    return rows


def _queue_rows(cls: Any, *, layouts: tuple[str, ...] | None = LAYOUTS, **put: Any) -> list[Row]:
    """``layouts`` None: the queue takes no ``layout=``."""
    rows: list[Row] = []
    for layout in layouts or (None,):
        options = {} if layout is None else {"layout": layout}

        def queue(c: Client, path: str = "/q", options: dict[str, Any] = options) -> Any:
            return cls(c, path, **options)

        rows += _payloads(lambda d, queue=queue: lambda c: queue(c).put(d, **put))
        rows += _batches(lambda c, items, queue=queue: queue(c).put_all(items, **put))
        rows += _paths(lambda p, queue=queue: lambda c: queue(c, p).put(b"ok", **put))
    return rows


def _lease_rows(make: Callable[[Client, str, str | None], Any]) -> list[Row]:
    return _identifiers(lambda v: lambda c: make(c, "/lease", v).obtain(timeout=5)) + _paths(
        lambda p: lambda c: make(c, p, None).obtain(timeout=5)
    )


def _register(
    name: str = "api", id: str = "1", base_path: str = "/services", **fields: Any
) -> Attempt:
    # Built in the attempt: an instance refuses some values itself.
    return lambda c: ServiceDiscovery(c, base_path).register(
        ServiceInstance(name=name, id=id, **fields), timeout=5
    )


def _migrate(c: Client, lock: str, meta: str, op: Any = None) -> Awaitable[object]:
    op = op or MigrationOp.create("/m")
    migrations = MigrationSet("s", [Migration("m", [op])])
    return MigrationManager(c, lock, meta).migrate(migrations)


def _docs(c: Client, name: str = "a") -> Any:
    return Model(_Doc, "/docs/{name}").bind(c, name=name)


#: Per public recipe, the attempts: constructor and first write with bad input, each with the
#: error it must raise.
ATTEMPTS: dict[str, list[Row]] = {
    "Lock": _lock_rows(Lock),
    "Mutex": _lock_rows(Mutex),
    "ReadWriteLock": _rw_rows("write"),
    "ReadLock": _rw_rows("read"),
    "WriteLock": _rw_rows("write"),
    "MultiLock": [
        (exc, lambda c, bad=bad: MultiLock([Lock(c, "/ok"), bad(c)]).acquire(timeout=5))
        for exc, bad in [
            (TOO_BIG, lambda c: Lock(c, "/bad", identifier=BIG_TEXT)),
            (TOO_BIG, lambda c: Lock(c, "/bad", identifier=EDGE_TEXT, layout="kazoo")),
            (TOO_BIG, lambda c: Lock(c, BIG_PATH)),
            (NO_UTF8, lambda c: Lock(c, LONE_PATH)),
            (TOO_BIG, lambda c: ReadWriteLock(c, "/rw", identifier=EDGE_TEXT).read),
            (TOO_BIG, lambda c: MultiLock([Lock(c, "/ok2"), Mutex(c, BIG_PATH)])),
        ]
    ],
    "Semaphore": _semaphore_rows(),
    "Election": _election_rows(),
    "LeaderLatch": _identifiers(lambda v: lambda c: _start(LeaderLatch(c, "/latch", identifier=v)))
    + _paths(lambda p: lambda c: _start(LeaderLatch(c, p))),
    "GroupMember": _group_rows(),
    "PersistentNode": _persistent_rows(),
    "PersistentTtlNode": _payloads(lambda d: lambda c: _start(PersistentTtlNode(c, "/ttl", 60, d)))
    + _identifiers(lambda v: lambda c: _start(PersistentTtlNode(c, "/ttl", 60, child_name=v)))
    + _paths(lambda p: lambda c: _start(PersistentTtlNode(c, p, 60))),
    "Queue": _queue_rows(Queue),
    "PriorityQueue": _queue_rows(PriorityQueue, priority=1),
    "SimpleQueue": _queue_rows(SimpleQueue, layouts=None),
    "DelayQueue": _queue_rows(DelayQueue, layouts=None, delay_until_epoch_ms=0),
    "IdQueue": _queue_rows(IdQueue, layouts=None, item_id="id")
    + _identifiers(lambda v: lambda c: IdQueue(c, "/iq").put(b"item", v)),
    "LockingQueue": _queue_rows(LockingQueue, layouts=None),
    "QueueSharder": _paths(lambda p: lambda c: _start(QueueSharder(c, p, "/sharder-leader")))
    + _paths(lambda p: lambda c: _start(QueueSharder(c, "/sharded", p))),
    "SharedCount": _paths(lambda p: lambda c: _start(SharedCount(c, p, 0))),
    "SharedValue": _payloads(lambda d: lambda c: _start(SharedValue(c, "/value", d)))
    + _paths(lambda p: lambda c: _start(SharedValue(c, p, b""))),
    "AtomicCounter": _paths(lambda p: lambda c: AtomicCounter(c, p).increment())
    + _paths(lambda p: lambda c: AtomicCounter(c, p, layout="kazoo").increment())
    + _paths(
        lambda p: (
            lambda c: AtomicCounter(
                c, "/counter", promoted_to_lock=PromotedToLock(p, timeout=5)
            ).increment()
        )
    ),
    "DistributedAtomicValue": _payloads(
        lambda d: lambda c: DistributedAtomicValue(c, "/dav").try_set(d)
    )
    + _payloads(lambda d: lambda c: DistributedAtomicValue(c, "/dav").force_set(d))
    + _payloads(lambda d: lambda c: DistributedAtomicValue(c, "/dav").initialize(d))
    + _payloads(lambda d: lambda c: DistributedAtomicValue(c, "/dav").compare_and_set(b"", d))
    + _paths(lambda p: lambda c: DistributedAtomicValue(c, p).try_set(b"v")),
    "Barrier": _paths(lambda p: lambda c: Barrier(c, p).set()),
    "DoubleBarrier": _paths(lambda p: lambda c: DoubleBarrier(c, p, 2).enter(timeout=5)),
    "NonBlockingLease": _lease_rows(lambda c, p, v: NonBlockingLease(c, p, 5, identifier=v)),
    "MultiNonBlockingLease": _lease_rows(
        lambda c, p, v: MultiNonBlockingLease(c, p, 2, 5, identifier=v)
    ),
    "SetPartitioner": _identifiers(
        lambda v: lambda c: _start(SetPartitioner(c, "/part", ["a"], identifier=v))
    )
    + _identifiers(lambda v: lambda c: _start(SetPartitioner(c, "/part", ["a", v])))
    + _paths(lambda p: lambda c: _start(SetPartitioner(c, p, ["a"]))),
    "ServiceDiscovery": [
        (TOO_BIG, _register(payload=BIG_TEXT)),
        (TOO_BIG, _register(payload=EDGE_TEXT)),
        (NO_UTF8, _register(payload=LONE)),
        (NO_UTF8, _register(payload={"k": LONE})),
        (TOO_BIG, _register(name=BIG_TEXT)),
        (NO_UTF8, _register(name=LONE)),
        (TOO_BIG, _register(id=BIG_TEXT)),
        (NO_UTF8, _register(id=LONE)),
        (NO_UTF8, _register(address=LONE)),
        (TOO_BIG, _register(address=BIG_TEXT)),
        *_paths(lambda p: _register(base_path=p)),
    ],
    "ServiceCache": _identifiers(
        lambda v: lambda c: _start(ServiceCache(ServiceDiscovery(c, "/services"), v))
    ),
    "ServiceProvider": _identifiers(
        lambda v: lambda c: _start(ServiceProvider(ServiceDiscovery(c, "/services"), v))
    ),
    "NodeCache": _paths(lambda p: lambda c: _start(NodeCache(c, p))),
    "ChildrenCache": _paths(lambda p: lambda c: _start(ChildrenCache(c, p))),
    "TreeCache": _paths(lambda p: lambda c: _start(TreeCache(c, p))),
    "ModeledNode": [
        (TOO_BIG, lambda c: _docs(c).create(_Doc(BIG_TEXT))),
        (TOO_BIG, lambda c: _docs(c).create(_Doc(EDGE_TEXT))),
        (ModelEncodeError, lambda c: _docs(c).create(_Doc(LONE))),
        (ModelEncodeError, lambda c: _docs(c).set(_Doc(LONE))),
        (TOO_BIG, lambda c: _docs(c, BIG_NAME).create(_Doc("v"))),
        (NO_UTF8, lambda c: _docs(c, LONE).create(_Doc("v"))),
        (NO_UTF8, lambda c: Model(_Doc, LONE_PATH).bind(c).create(_Doc("v"))),
        (TOO_BIG, lambda c: Model(_Doc, BIG_PATH).bind(c).create(_Doc("v"))),
    ],
    "MigrationManager": _paths(lambda p: lambda c: _migrate(c, p, "/meta"))
    + _paths(lambda p: lambda c: _migrate(c, "/mlock", p))
    + _paths(lambda p: lambda c: _migrate(c, "/mlock", "/meta", MigrationOp.create(p)))
    + _payloads(lambda d: lambda c: _migrate(c, "/mlock", "/meta", MigrationOp.create("/m", d))),
    "attempt_revoke": _paths(lambda p: lambda c: attempt_revoke(c, p)),
}

#: Public names that can talk to the server but are no first write of a recipe's, and why.
NOT_WRITERS = {
    "EnsembleTracker": "reads the ensemble's configuration",
    "ModelCache": "a typed view over a cache of the rows above; it writes nothing",
    "EventSubscription": "a stream of a recipe's events, read from memory",
    "InstanceSubscription": "a stream of a ServiceCache's events, read from memory",
    "ModelChanges": "a stream of a ModelCache's events, read from memory",
    "LossEvent": "an event of a lock's, fired from memory",
    "RevocationEvent": "an event of a lock's, fired from memory",
    "Lease": "handed out by Semaphore.acquire for a node it wrote; release deletes that node",
    "LockedItem": "handed out by LockingQueue.take for an item it locked; acts on those nodes",
}


def _talks(obj: type) -> bool:
    """True if instances of ``obj`` can wait on the server: a coroutine method or ``async
    with``."""
    return hasattr(obj, "__aenter__") or any(
        inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f)
        for name, f in inspect.getmembers(obj)
        if not name.startswith("_")
    )


def _takes_client(obj: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):  # a builtin's, with no signature: no recipe
        return False
    return bool(params) and params[0] == "client"


#: The root and the public modules whose names left it (docs/api-stability.md).
SURFACE = (
    "aiocoord",
    "aiocoord.ensemble",
    "aiocoord.modeled",
    "aiocoord.recipes.atomic_value",
    "aiocoord.recipes.discovery",
    "aiocoord.recipes.lease",
    "aiocoord.recipes.migrations",
)


def _surface() -> dict[str, object]:
    found: dict[str, object] = {}
    for module_name in SURFACE:
        module = importlib.import_module(module_name)
        found.update((name, getattr(module, name)) for name in module.__all__)
    return found


def _defined_in(obj: type) -> Path:
    """The file that defines ``obj``: its functions' (a class shown at a public path,
    ``aiocoord.LossEvent``, names the root as its module)."""
    for value in vars(obj).values():
        code = getattr(inspect.unwrap(value) if callable(value) else value, "__code__", None)
        if code is not None:
            return Path(code.co_filename)
    return Path(inspect.getfile(obj))


def _recipes() -> set[str]:
    names = set()
    for name, obj in _surface().items():
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            source = _defined_in(obj).parts
            ours = "recipes" in source or "modeled" in source
            if (ours and _talks(obj)) or _takes_client(obj):
                names.add(name)
        elif (
            inspect.isfunction(obj)
            and obj.__module__.startswith("aiocoord.recipes")
            and _takes_client(obj)
        ):
            names.add(name)
    return names


def test_every_public_recipe_has_a_row() -> None:
    missing = _recipes() - set(ATTEMPTS) - set(NOT_WRITERS)
    assert not missing, f"public recipes with no row in ATTEMPTS or NOT_WRITERS: {missing}"
    stale = (set(ATTEMPTS) | set(NOT_WRITERS)) - _recipes()
    assert not stale, f"rows for names that are no public recipe: {stale}"


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
    failures = []
    for i, (expected, attempt) in enumerate(ATTEMPTS[recipe]):
        try:
            await attempt(client)
        except Exception as exc:  # any other type is a failure, reported with the rest
            if not isinstance(exc, expected):
                failures.append(
                    f"attempt {i}: {type(exc).__name__} ({str(exc)[:120]}), not {expected.__name__}"
                )
        else:
            failures.append(f"attempt {i}: nothing raised")
        await client.wait_background()  # anything written in the background is written now
        after = await _tree(client)
        if after != before:
            changed = sorted(set(after) ^ set(before)) or ["data changed"]
            failures.append(f"attempt {i} changed the tree: {changed[:4]}")
            before = after
    assert not failures, "\n".join(failures)
