"""Typed models on a real ZooKeeper: typed operations, update(fn) under contention, hostile
bytes on a model node (a typed error on read, an entry in the stream and caches, which go on),
schema refusals that send nothing, and the faults of docs/typed-state.md's table."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from support import Factory

from aiocoord import ExponentialBackoff, NoRetry, RetryNTimes, State
from aiocoord._wire.opcodes import Op
from aiocoord.errors import (
    BadArgumentsError,
    BadVersionError,
    ClientClosedError,
    ConnectionLossError,
    ModelDecodeError,
    ModelEncodeError,
    NodeExistsError,
    NoNodeError,
    SchemaViolationError,
    TimeoutError,
)
from aiocoord.modeled import Model, ModelChange, PathTemplate, Schema, SchemaSet
from aiocoord.recipes.cache import CacheEventType
from aiocoord.testing import FaultProxy

SEMANTICS = {
    "typed-state.md | Failure semantics | A node that does not decode, read": [
        "test_hostile_bytes_are_a_typed_error_on_read_and_update_writes_nothing"
    ],
    "typed-state.md | Failure semantics | A node that does not decode, in a stream or cache": [
        "test_a_stream_reports_hostile_bytes_and_goes_on",
        "test_children_and_tree_views_keep_going_past_a_hostile_node",
    ],
    "typed-state.md | Failure semantics | A value the serializer or a schema refuses": [
        "test_refused_writes_send_nothing"
    ],
    "typed-state.md | Failure semantics | Another writer first (update)": [
        "test_update_under_contention_of_8_sessions_x_200_loses_no_update",
        "test_update_gives_up_with_bad_version_when_the_policy_does",
    ],
    "typed-state.md | Failure semantics | The reply of a write lost": [
        "test_an_update_whose_reply_is_lost_reports_connection_loss_and_wrote_once"
    ],
    "typed-state.md | Failure semantics | Connection lost (SUSPENDED)": [
        "test_a_stream_goes_on_across_a_connection_loss"
    ],
    "typed-state.md | Failure semantics | Timeout": ["test_a_read_times_out_leaving_nothing"],
    "typed-state.md | Failure semantics | Client closed": [
        "test_a_stream_ends_when_its_client_closes"
    ],
}


@dataclass(frozen=True)
class Config:
    name: str
    replicas: int
    hosts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Count:
    value: int


CONFIG = Model(Config, "/apps/{app}/config")
JOBS = Model(Config, "/jobs/{job}")


async def test_typed_operations_create_read_set_and_delete(zk_connect: Factory) -> None:
    client = await zk_connect()
    app = CONFIG.bind(client, app="billing")
    assert app.path == "/apps/billing/config"
    assert await app.exists() is None
    assert await app.create(Config("billing", 2)) == "/apps/billing/config"  # parents made
    with pytest.raises(NodeExistsError):
        await app.create(Config("billing", 2))
    value, stat = await app.read_with_stat()
    assert value == Config("billing", 2) and stat.version == 0
    assert (await client.get(app.path))[0] == b'{"name":"billing","replicas":2,"hosts":[]}'
    await app.set(Config("billing", 3, ["a"]), version=0)
    with pytest.raises(BadVersionError):
        await app.set(Config("billing", 4), version=0)
    assert await app.read() == Config("billing", 3, ["a"])
    await app.delete()
    with pytest.raises(NoNodeError):
        await app.read()
    with pytest.raises(BadArgumentsError, match="needs a value"):
        await CONFIG.bind(client).read()


async def test_children_resolve_the_child_template(zk_connect: Factory) -> None:
    client = await zk_connect()
    jobs = JOBS.bind(client)
    for name in ("b", "a", "c"):
        await jobs.at(job=name).create(Config(name, 1))
    children = await jobs.children()
    assert [c.params for c in children] == [{"job": "a"}, {"job": "b"}, {"job": "c"}]
    assert [(await c.read()).name for c in children] == ["a", "b", "c"]
    with pytest.raises(BadArgumentsError, match="open parameter"):
        await CONFIG.bind(client, app="x").children()


async def test_update_under_contention_of_8_sessions_x_200_loses_no_update(
    zk_connect: Factory,
) -> None:
    counter = Model(Count, "/contended/counter")
    # The client's policy is the one update() follows on a conflict: short sleeps, many tries.
    clients = [await zk_connect(retry=ExponentialBackoff(0.001, 200, 0.02)) for _ in range(8)]
    await counter.bind(clients[0]).create(Count(0))

    async def worker(client: Any) -> list[int]:
        node = counter.bind(client)
        return [(await node.update(lambda c: Count(c.value + 1))).value for _ in range(200)]

    started = time.perf_counter()
    written = await asyncio.gather(*(worker(c) for c in clients))
    elapsed = time.perf_counter() - started
    final, stat = await counter.bind(clients[0]).read_with_stat()
    assert final == Count(1600)
    assert stat.version == 1600  # one write per update, none lost and none doubled
    # Each update wrote a value no other wrote: the 1,600 results are exactly 1..1600.
    assert sorted(v for values in written for v in values) == list(range(1, 1601))
    print(f"8 sessions x 200 updates: {elapsed:.2f} s")


async def test_update_gives_up_with_bad_version_when_the_policy_does(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    # Our client's requests take 0.3 s through the proxy; the other's go straight: the other
    # writer always gets in between our read and our write.
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    other = Model(Count, "/gives-up").bind(await zk_connect())
    node = Model(Count, "/gives-up").bind(client)
    await node.create(Count(0))
    zk_fault_proxy.latency(0.3)
    others: list[asyncio.Task[Any]] = []

    def racing(c: Count) -> Count:
        others.append(asyncio.get_running_loop().create_task(other.set(Count(100 + len(others)))))
        return Count(c.value + 1)

    with pytest.raises(BadVersionError):
        await node.update(racing, retry=NoRetry())
    assert len(others) == 1  # no retry
    with pytest.raises(BadVersionError):
        await node.update(racing, retry=RetryNTimes(2, 0.01))
    assert len(others) == 4  # two retries, each reading again and calling fn again
    await asyncio.gather(*others)
    assert (await other.read_with_stat())[1].version == 4  # only the other's writes landed
    zk_fault_proxy.latency(0)
    with pytest.raises(NoNodeError):
        await Model(Count, "/absent").bind(client).update(lambda c: c)


async def test_hostile_bytes_are_a_typed_error_on_read_and_update_writes_nothing(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    app = CONFIG.bind(client, app="evil")
    for hostile in (b"\xff\xfe\x00", b"[" * 50_000, b'{"name": 1}', b"", b'{"name":"x"}'):
        await client.create(app.path, hostile, make_parents=True)
        with pytest.raises(ModelDecodeError) as caught:
            await app.read()
        assert caught.value.data == hostile and caught.value.path == app.path
        entry = await app.read_entry()
        assert not entry.ok and entry.data == hostile
        with pytest.raises(ModelDecodeError):
            await app.update(lambda c: c)
        data, stat = await client.get(app.path)
        assert (data, stat.version) == (hostile, 0)  # left as it was
        await client.delete(app.path)
    # Each undecodable read is counted, as the recipes count theirs.
    assert client.stats().recipes["modeled"].undecodable == 15


def _kinds(changes: list[ModelChange[Any]]) -> list[CacheEventType]:
    return [c.type for c in changes]


async def test_a_stream_reports_hostile_bytes_and_goes_on(zk_connect: Factory) -> None:
    client = await zk_connect()
    writer = await zk_connect()
    app = CONFIG.bind(client, app="streamed")
    await app.create(Config("streamed", 1))
    async with app.changes() as changes:
        first = await changes.get(timeout=5)
        assert first.type is CacheEventType.CREATED and first.value == Config("streamed", 1)
        assert (await changes.get(timeout=5)).type is CacheEventType.INITIALIZED
        await writer.set(app.path, b"\x00not json")
        bad = await changes.get(timeout=5)
        assert bad.type is CacheEventType.UPDATED and bad.entry is not None
        assert not bad.entry.ok and bad.entry.data == b"\x00not json"
        assert bad.previous is not None and bad.previous.value == Config("streamed", 1)
        with pytest.raises(ModelDecodeError):
            _ = bad.value
        await CONFIG.bind(writer, app="streamed").set(Config("streamed", 2))
        good = await changes.get(timeout=5)
        assert good.value == Config("streamed", 2)  # the stream went on
        await writer.delete(app.path)
        gone = await changes.get(timeout=5)
        assert gone.type is CacheEventType.DELETED and gone.entry is None


async def test_children_and_tree_views_keep_going_past_a_hostile_node(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    jobs = JOBS.bind(client)
    await jobs.at(job="ok").create(Config("ok", 1))
    await client.create("/jobs/bad", b"\xde\xad")
    async with jobs.children_cache() as view:
        entries = view.entries
        assert set(entries) == {"/jobs/ok", "/jobs/bad"}
        assert not entries["/jobs/bad"].ok and entries["/jobs/bad"].params == {"job": "bad"}
        assert view.values == {"/jobs/ok": Config("ok", 1)}
        assert client.stats().recipes["modeled"].undecodable == 1  # once, however often read
        changes = view.changes()
        await jobs.at(job="new").create(Config("new", 3))
        added = await changes.get(timeout=5)
        assert added.type is CacheEventType.CHILD_ADDED and added.value == Config("new", 3)
        assert set(view.values) == {"/jobs/ok", "/jobs/new"}
        await client.set("/jobs/bad", b'{"name":"bad","replicas":0}')
        fixed = await view.wait_for(lambda e: e["/jobs/bad"].ok, timeout=5)
        assert fixed["/jobs/bad"].value == Config("bad", 0)
    # A tree view keeps the model's nodes only: /apps/<app>/config, not /apps/<app>.
    await CONFIG.bind(client, app="a").create(Config("a", 1))
    await client.create("/apps/b/config", b"not json", make_parents=True)
    await client.create("/apps/c", b"")
    tree = CONFIG.bind(client).tree_cache()
    async with tree:
        assert set(tree.entries) == {"/apps/a/config", "/apps/b/config"}
        assert tree.values == {"/apps/a/config": Config("a", 1)}
        changes = tree.changes()
        await client.set("/apps/b/config", b'{"name":"b","replicas":2}')
        fixed = await changes.get(timeout=5)
        assert fixed.entry is not None and fixed.entry.params == {"app": "b"}
        assert fixed.value == Config("b", 2)


async def test_refused_writes_send_nothing(zk_connect: Factory) -> None:
    client = await zk_connect()
    schemas = SchemaSet(
        [Schema(PathTemplate("/guarded/{name}"), validator=lambda c: c.replicas > 0)]
    )
    guarded = Model(Config, "/guarded/{name}", schemas=schemas).bind(client, name="g")
    with pytest.raises(SchemaViolationError):
        await guarded.create(Config("g", 0))
    with pytest.raises(ModelEncodeError):
        await guarded.create(Config("g", "many"))  # type: ignore[arg-type]
    assert await client.exists("/guarded") is None  # not even the parent was made
    await guarded.create(Config("g", 1))
    with pytest.raises(SchemaViolationError):
        await guarded.set(Config("g", -1))
    with pytest.raises(SchemaViolationError):
        await guarded.update(lambda c: Config("g", 0))
    assert (await guarded.read_with_stat())[1].version == 0
    ephemeral_only = SchemaSet([Schema("/guarded/{name}", ephemeral=True)])
    with pytest.raises(SchemaViolationError, match="must be ephemeral"):
        await (
            Model(Config, "/guarded/{name}", schemas=ephemeral_only)
            .bind(client, name="p")
            .create(Config("p", 1))
        )
    assert await client.exists("/guarded/p") is None


async def test_an_update_whose_reply_is_lost_reports_connection_loss_and_wrote_once(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    observer = await zk_connect()
    node = Model(Count, "/lossy").bind(client)
    await node.create(Count(0))
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.SET_DATA)
    with pytest.raises(ConnectionLossError, match="may have been applied"):
        await node.update(lambda c: Count(c.value + 1))
    await lost.wait(5)
    value, stat = await Model(Count, "/lossy").bind(observer).read_with_stat()
    assert (value, stat.version) == (Count(1), 1)  # applied once, never twice


async def test_a_stream_goes_on_across_a_connection_loss(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    writer = CONFIG.bind(await zk_connect(), app="cut")
    await writer.create(Config("cut", 1))
    async with CONFIG.bind(client, app="cut").changes() as changes:
        assert _kinds([await changes.get(timeout=5) for _ in range(2)]) == [
            CacheEventType.CREATED,
            CacheEventType.INITIALIZED,
        ]
        zk_fault_proxy.blackhole()
        zk_fault_proxy.drop()
        await client.wait_for(State.SUSPENDED, timeout=5)
        await writer.set(Config("cut", 2))  # made while the client is away
        reading = asyncio.create_task(CONFIG.bind(client, app="cut").read(timeout=10))
        zk_fault_proxy.heal()
        assert await reading == Config("cut", 2)  # a read made while away, answered after
        seen = [await changes.get(timeout=10) for _ in range(3)]
        assert _kinds(seen) == [
            CacheEventType.SUSPENDED,
            CacheEventType.RECONNECTED,
            CacheEventType.UPDATED,
        ]
        assert seen[-1].value == Config("cut", 2)


async def test_a_read_times_out_leaving_nothing(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=10)
    node = CONFIG.bind(client, app="slow")
    await node.create(Config("slow", 1))
    zk_fault_proxy.blackhole()
    with pytest.raises(TimeoutError):
        await node.read(timeout=0.3)
    with pytest.raises(TimeoutError):
        await node.update(lambda c: c, timeout=0.3)
    zk_fault_proxy.heal()
    assert await node.read(timeout=10) == Config("slow", 1)
    assert (await node.read_with_stat())[1].version == 0
    async with node.changes() as changes:
        assert (await changes.get(timeout=5)).type is CacheEventType.CREATED
        assert (await changes.get(timeout=5)).type is CacheEventType.INITIALIZED
        with pytest.raises(TimeoutError):
            await changes.get(timeout=0.2)  # nothing changed; nothing consumed
        await node.set(Config("slow", 2))
        assert (await changes.get(timeout=5)).value == Config("slow", 2)


async def test_a_stream_ends_when_its_client_closes(zk_connect: Factory) -> None:
    client = await zk_connect()
    node = CONFIG.bind(client, app="closing")
    await node.create(Config("closing", 1))
    changes = node.changes()
    assert (await changes.get(timeout=5)).type is CacheEventType.CREATED
    assert (await changes.get(timeout=5)).type is CacheEventType.INITIALIZED
    await client.close()
    with pytest.raises(ClientClosedError):
        await changes.get(timeout=5)
    await changes.aclose()
    with pytest.raises(ClientClosedError):
        await node.read()
    with pytest.raises(ClientClosedError):
        await node.update(lambda c: c)


async def test_pydantic_and_msgspec_models_round_trip_through_the_server(
    zk_connect: Factory,
) -> None:
    pydantic = pytest.importorskip("pydantic")
    msgspec = pytest.importorskip("msgspec")

    class Settings(pydantic.BaseModel):  # type: ignore[misc,name-defined]
        region: str
        limit: int = 10

    class Shard(msgspec.Struct):  # type: ignore[misc,name-defined]
        owner: str
        keys: list[int]

    client = await zk_connect()
    settings = Model(Settings, "/pyd/{id}").bind(client, id="a")
    await settings.create(Settings(region="eu"))
    assert await settings.update(lambda s: s.model_copy(update={"limit": s.limit + 1})) == Settings(
        region="eu", limit=11
    )
    assert await settings.read() == Settings(region="eu", limit=11)
    shard = Model(Shard, "/shards/{n}").bind(client, n=0)
    await shard.create(Shard("x", [1, 2]))
    assert await shard.read() == Shard("x", [1, 2])
    await client.set(shard.path, b'{"owner": 5}')
    with pytest.raises(ModelDecodeError):
        await shard.read()
