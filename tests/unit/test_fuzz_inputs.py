"""Fuzzing every public input: paths, data sizes, flags, versions, ACL specs, timeouts, retry
parameters, recipe arguments, connect parameters.

The property: a call either goes to the server, or is refused *before anything is sent* with
a typed error that is both a :class:`~aiocoord.CoordinationError` and a ``TypeError`` or
``ValueError`` (InvalidTypeError, BadArgumentsError and its subclasses). Nothing else may
come out: no AttributeError, struct.error, OverflowError... The server here is a scripted
peer that answers every request with NoNode, so accepted calls end in a ZooKeeperError.

The holes fuzzing found, now closed, are kept as the example-based tests at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from fake_zookeeper import FakeZooKeeper
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiocoord import (
    ACL,
    AtomicCounter,
    Barrier,
    ChildrenCache,
    Client,
    DoubleBarrier,
    ExponentialBackoff,
    LeaderLatch,
    Lock,
    LockingQueue,
    Mutex,
    NodeCache,
    PriorityQueue,
    Queue,
    ReadWriteLock,
    RetryNTimes,
    RetryUntilElapsed,
    Semaphore,
    State,
    TreeCache,
    Watch,
)
from aiocoord._connect import open_client  # the awaitable form, under a name of its own
from aiocoord._validation import MAX_DATA_SIZE
from aiocoord.errors import (
    BadArgumentsError,
    CoordinationError,
    InvalidTypeError,
    NoNodeError,
    NoServersError,
    ZooKeeperError,
)
from aiocoord.testing import session_of

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Env:
    """An event loop, a scripted server and a client connected to it, for sync tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = FakeZooKeeper()
        self.run(self.server.start())
        self.client: Client = self.run(open_client(self.server.connect_string, session_timeout=30))

    def run(self, aw: Awaitable[Any], timeout: float = 5.0) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(aw, timeout))

    def close(self) -> None:
        self.run(self.client.close())
        self.run(self.server.aclose())
        self.loop.close()


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    e = Env()
    try:
        yield e
    finally:
        e.close()


def refused(exc: BaseException) -> bool:
    return isinstance(exc, (InvalidTypeError, BadArgumentsError))


def sent(env: Env) -> Counter[int]:
    """Requests written so far, but removeWatches (18): those of watches that earlier examples
    cancelled go out on their own time, and are nobody's input."""
    out = Counter(session_of(env.client).sent)
    del out[18]
    return out


def attempt(env: Env, call: Callable[[], Any], limit: float = 5.0) -> str:
    """Run ``call()`` (sync or async); classify the outcome, enforcing the property."""
    # What an earlier example left running (a create finishing for an acquire it gave up,
    # a guaranteed delete) sends on its own time: let it end before counting.
    env.run(env.client.wait_background())
    before = sent(env)

    async def go() -> Any:
        result = call()
        if asyncio.iscoroutine(result):
            result = await result
        return result

    refusal: BaseException | None = None
    try:
        result = env.run(go(), limit)
    except (InvalidTypeError, BadArgumentsError) as exc:
        refusal = exc
    except ZooKeeperError:
        return "server"
    if refusal is not None:
        assert isinstance(refusal, CoordinationError)
        assert isinstance(refusal, (TypeError, ValueError))
        assert sent(env) == before, f"{refusal!r} refused, but requests went out"
        return "refused"
    for item in result if isinstance(result, tuple) else (result,):
        if isinstance(item, Watch):
            item.cancel()
    return "accepted"


# --- strategies ----------------------------------------------------------------------------

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.binary(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.just(object()),
)
segment = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from("./\x00"),
    max_size=6,
)
paths = st.one_of(
    st.builds(
        lambda segs, tail: "/" + "/".join(segs) + tail,
        st.lists(segment, max_size=4),
        st.sampled_from(["", "/"]),
    ),
    st.text(max_size=20),
    st.sampled_from(["/", "//", "/a/./b", "/a/../b", "/a\ud800", "/zk\ufff5", "/" + "x" * 2000]),
    anything,
)
sizes = st.one_of(
    st.integers(min_value=0, max_value=64),
    st.integers(min_value=MAX_DATA_SIZE - 2, max_value=MAX_DATA_SIZE + 2),
)
datas = st.one_of(sizes.map(lambda n: b"x" * n), st.text(max_size=8), anything)
flags = st.one_of(st.booleans(), anything)
versions = st.one_of(st.integers(min_value=-(2**40), max_value=2**40), anything)
timeouts = st.one_of(
    st.none(),
    st.floats(min_value=-10, max_value=0.05, allow_nan=False),
    st.integers(min_value=-5, max_value=0),
    anything,
)
acl_entries = st.builds(
    ACL,
    perms=st.integers(min_value=-(2**40), max_value=2**40),
    scheme=st.sampled_from(["world", "digest", "auth", "ip", "x509", "", "nosuch"]),
    id=st.text(max_size=12),
)
acls = st.one_of(
    st.none(),
    st.lists(acl_entries, max_size=3),
    st.lists(anything, min_size=1, max_size=2),
    anything,
)


# --- path operations ----------------------------------------------------------------------


def path_ops(client: Client) -> list[Callable[[Any], Any]]:
    return [
        lambda p: client.get(p),
        lambda p: client.get(p, watch=True),
        lambda p: client.exists(p, watch=True),
        lambda p: client.children(p, with_stat=True),
        lambda p: client.set(p, b"v"),
        lambda p: client.delete(p),
        lambda p: client.delete(p, recursive=True),
        lambda p: client.create(p),
        lambda p: client.create(p, sequential=True),
        lambda p: client.ensure_path(p),
        lambda p: client.sync(p),
        lambda p: client.get_acl(p),
        lambda p: client.count_descendants(p),
        lambda p: client.add_watch(p, recursive=True),
        lambda p: client.transaction().create(p).delete(p).set(p, b"").check(p, 1).commit(),
        lambda p: Lock(client, p),
        lambda p: Mutex(client, p),
        lambda p: ReadWriteLock(client, p),
        lambda p: Semaphore(client, p, 2),
        lambda p: LeaderLatch(client, p, identifier="me"),
        lambda p: TreeCache(client, p),
        lambda p: ChildrenCache(client, p),
        lambda p: NodeCache(client, p),
        lambda p: AtomicCounter(client, p),
        lambda p: Queue(client, p),
        lambda p: LockingQueue(client, p),
        lambda p: Barrier(client, p),
    ]


@FUZZ
@given(path=paths, which=st.integers(min_value=0, max_value=27))
def test_every_path_operation_refuses_bad_paths_before_sending(
    env: Env, path: Any, which: int
) -> None:
    ops = path_ops(env.client)
    outcome = attempt(env, lambda: ops[which % len(ops)](path))
    if not isinstance(path, str):
        assert outcome == "refused"


@FUZZ
@given(
    path=st.sampled_from(["/a", "/a/b", "/q/", "/x" * 300]),
    data=datas,
    ephemeral=flags,
    sequential=flags,
    container=flags,
    ttl=st.one_of(st.none(), st.floats(min_value=-5, max_value=1e6, allow_nan=False), anything),
    make_parents=flags,
    protected=flags,
    acl=acls,
)
def test_create_arguments(
    env: Env,
    path: str,
    data: Any,
    ephemeral: Any,
    sequential: Any,
    container: Any,
    ttl: Any,
    make_parents: Any,
    protected: Any,
    acl: Any,
) -> None:
    outcome = attempt(
        env,
        lambda: env.client.create(
            path,
            data,
            ephemeral=ephemeral,
            sequential=sequential,
            container=container,
            ttl=ttl,
            make_parents=make_parents,
            protected=protected,
            acl=acl,
        ),
    )
    if isinstance(data, (bytes, bytearray)) and len(data) > MAX_DATA_SIZE:
        assert outcome == "refused"


@FUZZ
@given(data=datas, version=versions, which=st.integers(min_value=0, max_value=4))
def test_data_and_versions(env: Env, data: Any, version: Any, which: int) -> None:
    client = env.client
    ops: list[Callable[[], Any]] = [
        lambda: client.set("/a", data, version),
        lambda: client.delete("/a", version),
        lambda: client.transaction().set("/a", data, version).commit(),
        lambda: client.transaction().check("/a", version).commit(),
        lambda: client.transaction().create("/a", data).commit(),
    ]
    attempt(env, ops[which])


@FUZZ
@given(acl=acls, which=st.integers(min_value=0, max_value=3), version=versions)
def test_acl_specs(env: Env, acl: Any, which: int, version: Any) -> None:
    client = env.client
    ops: list[Callable[[], Any]] = [
        lambda: client.create("/a", acl=acl),
        lambda: client.set_acl("/a", acl, version),
        lambda: client.ensure_path("/a/b", acl=acl),
        lambda: client.transaction().create("/a", acl=acl).commit(),
    ]
    outcome = attempt(env, ops[which])
    if acl is not None and (isinstance(acl, (str, bytes)) or not isinstance(acl, list)):
        assert outcome == "refused"


@FUZZ
@given(scheme=st.one_of(st.text(max_size=8), anything), credential=anything)
def test_add_auth_arguments(env: Env, scheme: Any, credential: Any) -> None:
    attempt(env, lambda: env.client.add_auth(scheme, credential))


@FUZZ
@given(
    timeout=timeouts,
    blocking=flags,
    which=st.integers(min_value=0, max_value=5),
    n=anything,
)
def test_waiting_calls_refuse_bad_timeouts(
    env: Env, timeout: Any, blocking: Any, which: int, n: Any
) -> None:
    client = env.client
    ops: list[Callable[[], Any]] = [
        lambda: Lock(client, "/l").acquire(timeout=timeout, blocking=blocking),
        lambda: Mutex(client, "/l").acquire(timeout=timeout, blocking=blocking),
        lambda: Semaphore(client, "/s", 3).acquire(n, timeout=timeout),
        lambda: Queue(client, "/q").get(timeout=timeout),
        lambda: client.wait_for(State.CONNECTED, timeout),
        lambda: Barrier(client, "/b").wait(timeout=timeout),
    ]
    # TimeoutError: an accepted (long) timeout still running, or one that ran out.
    with contextlib.suppress(asyncio.TimeoutError):
        attempt(env, ops[which], limit=0.3)


# --- recipe arguments ---------------------------------------------------------------------


@FUZZ
@given(a=anything, b=anything, c=anything, which=st.integers(min_value=0, max_value=11))
def test_recipe_constructors_refuse_bad_arguments_without_sending(
    env: Env, a: Any, b: Any, c: Any, which: int
) -> None:
    client = env.client
    makers: list[Callable[[], Any]] = [
        lambda: Lock(client, "/l", identifier=a, cancel_on_loss=b, suspended_is_loss=c),
        lambda: ReadWriteLock(client, "/l", identifier=a, cancel_on_loss=b),
        lambda: Semaphore(client, "/s", a, identifier=b, cancel_on_loss=c),
        lambda: LeaderLatch(client, "/e", identifier=a, suspended_is_loss=b, buffer_size=c),
        lambda: TreeCache(client, "/t", max_depth=a, buffer_size=b, watch_mode=c),
        lambda: ChildrenCache(client, "/t", cache_data=a, buffer_size=b),
        lambda: NodeCache(client, "/t", buffer_size=a, watch_mode=b),
        lambda: AtomicCounter(client, "/c", retry=a),
        lambda: DoubleBarrier(client, "/d", a),
        lambda: Lock(a, "/l"),
        lambda: TreeCache(client, "/t").changes(buffer_size=a),
        lambda: Semaphore(client, "/s", 2).lease(timeout=a),
    ]
    attempt(env, makers[which])


@FUZZ
@given(data=datas, priority=anything, which=st.integers(min_value=0, max_value=3))
def test_queue_items_and_priorities(env: Env, data: Any, priority: Any, which: int) -> None:
    client = env.client
    ops: list[Callable[[], Any]] = [
        lambda: Queue(client, "/q").put(data),
        lambda: PriorityQueue(client, "/q").put(data, priority),
        lambda: LockingQueue(client, "/q").put(data, priority),
        lambda: Queue(client, "/q").put_all([data, data]),
    ]
    attempt(env, ops[which])


# --- retry policies -----------------------------------------------------------------------

numbers = st.one_of(
    st.floats(min_value=-1e6, max_value=1e308, allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(2**64), max_value=2**64),
    anything,
)


@settings(max_examples=300, deadline=None)
@given(a=numbers, b=numbers, c=numbers, which=st.integers(min_value=0, max_value=2))
def test_retry_parameters(a: Any, b: Any, c: Any, which: int) -> None:
    makers: list[Callable[[], Any]] = [
        lambda: ExponentialBackoff(a, b, c),
        lambda: RetryNTimes(a, b),
        lambda: RetryUntilElapsed(a, b),
    ]
    try:
        policy = makers[which]()
    except (InvalidTypeError, BadArgumentsError):
        return  # both are ValueError/TypeError subclasses by definition
    # A policy that was accepted yields finite, non-negative sleeps.
    for i, delay in enumerate(policy.delays()):
        assert isinstance(delay, float) and math.isfinite(delay) and delay >= 0, (policy, delay)
        if i >= 5:
            break


# --- connect parameters --------------------------------------------------------------------


@FUZZ
@given(
    session_timeout=st.one_of(st.floats(min_value=-5, max_value=1e5), st.floats(), anything),
    connect_timeout=st.one_of(st.none(), st.floats(min_value=-5, max_value=2), anything),
    chroot=st.one_of(st.just(""), paths.filter(lambda p: isinstance(p, str))),
    auth=st.one_of(
        st.none(),
        st.lists(st.tuples(st.sampled_from(["digest", "ip"]), st.text(max_size=8)), max_size=2),
        st.lists(anything, max_size=2),
    ),
    read_only=flags,
)
def test_connect_parameters(
    env: Env,
    session_timeout: Any,
    connect_timeout: Any,
    chroot: str,
    auth: Any,
    read_only: Any,
) -> None:
    hosts = env.server.connect_string + (chroot if chroot.startswith("/") else "")

    async def connect() -> None:
        client = await open_client(
            hosts,
            session_timeout=session_timeout,
            connect_timeout=connect_timeout,
            auth=auth,
            read_only=read_only,
        )
        await client.close()

    # Refused (typed), or a tiny connect timeout in which nothing answered; with a chroot, the
    # scripted server (NoNode to every request) refuses to create it.
    with contextlib.suppress(InvalidTypeError, BadArgumentsError, NoServersError, NoNodeError):
        env.run(connect(), timeout=10)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    hosts=st.lists(
        st.tuples(
            st.sampled_from(["127.0.0.1", "localhost", "[::1]"]),
            st.integers(min_value=1, max_value=65535),
        ),
        min_size=0,
        max_size=3,
    ),
    separator=st.sampled_from([",", ", ", ",,"]),
)
def test_connect_strings(env: Env, hosts: list[tuple[str, int]], separator: str) -> None:
    text = separator.join(f"{h}:{p}" for h, p in hosts)
    try:
        env.run(open_client(text, connect_timeout=0.02), timeout=10)
    except (InvalidTypeError, BadArgumentsError, NoServersError):
        pass
    else:  # pragma: no cover - nothing listens on a random port... unless something does
        pass


# --- the holes fuzzing found ---------------------------------------------------------------


@pytest.mark.parametrize("value", [math.nan, math.inf, 1e300])
def test_session_timeout_is_range_checked(env: Env, value: float) -> None:
    with pytest.raises(BadArgumentsError):
        env.run(open_client(env.server.connect_string, session_timeout=value), timeout=10)


@pytest.mark.parametrize("hosts", ["127.0.0.1:abc", "127.0.0.1:99999", "127.0.0.1:-1"])
def test_connect_string_ports_are_checked(env: Env, hosts: str) -> None:
    with pytest.raises(BadArgumentsError):
        env.run(open_client(hosts, connect_timeout=0.5), timeout=10)


def test_auth_credentials_are_type_checked(env: Env) -> None:
    with pytest.raises(InvalidTypeError):
        env.run(open_client(env.server.connect_string, auth=[("digest", 5)]), timeout=10)


@pytest.mark.parametrize(
    "entry",
    [
        ACL(31, 5, "x"),
        ACL(31, "world", None),
        ACL(31, b"world", "anyone"),
        ACL(None, "world", "anyone"),  # type: ignore[arg-type]
        ACL("31", "world", "anyone"),  # type: ignore[arg-type]
    ],
)
def test_acl_scheme_and_id_are_type_checked(env: Env, entry: ACL) -> None:
    before = Counter(session_of(env.client).sent)
    with pytest.raises(InvalidTypeError):
        env.run(env.client.set_acl("/a", [entry]))
    assert session_of(env.client).sent == before


@pytest.mark.parametrize("which", ["wait_for", "queue_get", "ttl_nan", "ttl_inf"])
def test_nan_timeouts_are_refused(env: Env, which: str) -> None:
    client = env.client
    calls = {
        "wait_for": lambda: client.wait_for(State.SUSPENDED, math.nan),  # ends at once
        "queue_get": lambda: Queue(client, "/q").get(timeout=math.nan),
        "ttl_nan": lambda: client.create("/t", ttl=math.nan),
        "ttl_inf": lambda: client.create("/t", ttl=math.inf),
    }
    with pytest.raises(BadArgumentsError):
        env.run(calls[which](), 1.0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ExponentialBackoff(math.nan),
        lambda: ExponentialBackoff(1e308, 3, math.inf),
        lambda: RetryNTimes(3, math.nan),
        lambda: RetryNTimes(math.inf),
        lambda: RetryUntilElapsed(math.nan),
    ],
)
def test_retry_parameters_must_be_finite(make: Callable[[], Any]) -> None:
    with pytest.raises(BadArgumentsError):
        make()


def test_wait_for_checks_the_state_type(env: Env) -> None:
    with pytest.raises(InvalidTypeError):
        env.run(env.client.wait_for("connected", 0.2))  # type: ignore[arg-type]
