"""Nodes written by someone else, hostile or broken, against every reader of foreign bytes.

Each hostile node is written with a plain ``create`` by another client; the readers that
follow many nodes (discovery's cache, provider, listing and change stream; a shared value's
stream) skip it, log it once per version, count it in ``stats().recipes[kind].undecodable``
and keep serving the rest; a read of that one node raises the recipe's typed error."""

from __future__ import annotations

import asyncio
import logging
import struct
import time

import pytest
from support import Factory

from aiocoord import DelayQueue, NonBlockingLease, SharedCount, ValueChange
from aiocoord.errors import CorruptedValueError, InstanceFormatError, LeaseDataError
from aiocoord.recipes.cache import CacheEventType
from aiocoord.recipes.discovery import ServiceDiscovery, ServiceInstance

#: Bytes another client may write where a JSON record is expected.
HOSTILE: dict[str, bytes] = {
    "deep-array": b"[" * 1000 + b"]" * 1000,
    "deep-object": b'{"a":' * 1000 + b"1" + b"}" * 1000,
    "deep-payload": b'{"name":"api","id":"deep-payload","payload":'
    + b"[" * 990
    + b"]" * 990
    + b"}",
    "not-utf8": b'{"name":"\xff\xfe"}',
    "not-json": b"not json",
    "empty": b"",
    "truncated": b'{"name":"api","id":"trunc',
    "wrong-types": b'{"name":5,"port":"80"}',
    "huge-int": b'{"port":1' + b"0" * 5000 + b"}",
    "huge-double": b'{"payload":1e999}',
    "not-an-object": b"[1,2]",
    "bare-array-payload": b'{"name":"api","id":"bare","payload":[1,2,3]}',
    "lone-surrogate": b'{"name":"api","id":"ls","address":"\\ud800"}',
}


def _undecodable(client: object, kind: str) -> int:
    recipes = client.stats().recipes  # type: ignore[attr-defined]
    return recipes[kind].undecodable if kind in recipes else 0


async def test_hostile_instance_nodes_are_skipped_by_every_discovery_reader(
    zk_connect: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aiocoord.recipes.discovery")
    client, writer = await zk_connect(), await zk_connect()
    registrar = ServiceDiscovery(writer, "/services")
    first = ServiceInstance.build("api", id="good-1", port=1)
    await registrar.register(first, timeout=10)
    async with ServiceDiscovery(client, "/services") as discovery:
        provider = discovery.provider("api")
        cache = discovery.cache("api")
        events = cache.changes()
        async with provider, cache:
            assert (await events.get(10)).id == "good-1"
            assert (await events.get(10)).type is CacheEventType.INITIALIZED
            for name, data in HOSTILE.items():
                await writer.create(f"/services/api/{name}", data)
            second = ServiceInstance.build("api", id="good-2", port=2)
            await registrar.register(second, timeout=10)

            # The stream skipped every hostile node and is still alive for the next instance.
            event = await events.get(10)
            assert (event.type, event.id, event.instance) == (
                CacheEventType.CHILD_ADDED,
                "good-2",
                second,
            )
            both = await cache.wait_for(lambda found: len(found) == 2, timeout=10)
            assert both == [first, second]
            assert cache.instances() == [first, second]
            await provider.cache.wait_for(lambda found: len(found) == 2, timeout=10)
            assert provider.get_instance() in (first, second)
            assert provider.get_all_instances() == [first, second]
            assert await discovery.instances("api") == [first, second]

            # A direct read of one hostile node is a typed error, never RecursionError & co.
            for name in HOSTILE:
                with pytest.raises(InstanceFormatError):
                    await discovery.instance("api", name)

            # Counted and logged once per node version, however often the nodes are read.
            counted = _undecodable(client, "discovery")
            assert counted >= 3 * len(HOSTILE)  # cache, provider's cache, listing
            assert await discovery.instances("api") == [first, second]
            assert cache.instances() == [first, second]
            assert _undecodable(client, "discovery") == counted
            warned = [r for r in caplog.records if "/services/api/deep-array" in r.getMessage()]
            assert len(warned) == 3  # once per reader: cache, provider's cache, listing

            # An update of a hostile node into a good one is seen by the stream.
            fixed = ServiceInstance.build("api", id="not-json", port=3)
            await writer.set("/services/api/not-json", fixed.to_json())
            event = await events.get(10)
            assert (event.type, event.instance) == (CacheEventType.CHILD_ADDED, fixed)
    await registrar.close()


async def test_hostile_lease_record_is_a_typed_error(zk_connect: Factory) -> None:
    client, writer = await zk_connect(), await zk_connect()
    for i, (name, data) in enumerate(HOSTILE.items()):
        path = f"/leases/hostile-{i}"
        lease = NonBlockingLease(client, path, 60, identifier="me")
        await writer.create(lease.holder_path, data, make_parents=True)
        with pytest.raises(LeaseDataError):
            await lease.holder()
        with pytest.raises(LeaseDataError):
            await lease.obtain()
        assert not lease.obtained, name
    assert _undecodable(client, "nonblocking_lease") == 2 * len(HOSTILE)


async def test_hostile_count_data_is_skipped_by_the_stream_and_wait_for(
    zk_connect: Factory,
) -> None:
    client, writer = await zk_connect(), await zk_connect()
    for i, data in enumerate((b"", b"\x01\x02\x03", b"[" * 1000, b"\xff" * 5)):
        path = f"/count-{i}"
        await writer.create(path, data)
        count = SharedCount(client, path, 0)
        changes = count.changes()
        async with count:
            # A direct read is the typed error; the stream and a wait skip the version.
            with pytest.raises(CorruptedValueError):
                _ = count.value
            waiting = asyncio.ensure_future(count.wait_for(lambda n: n == 42, timeout=10))
            await writer.set(path, struct.pack(">i", 42))
            assert (await waiting).value == 42
            assert await changes.get(10) == ValueChange(42, 1)
            await writer.set(path, struct.pack(">i", 43))
            assert await changes.get(10) == ValueChange(43, 2)
    assert _undecodable(client, "shared_count") == 4  # once per bad version


async def test_foreign_delay_item_names_are_read_as_curator_reads_them(
    zk_connect: Factory,
) -> None:
    client, writer = await zk_connect(), await zk_connect()
    # Times Long.parseLong(s, 16) refuses (too long for a long, Python-only syntax) are 0 for
    # Curator: due at once. A thousand hex digits made the consumer's wait overflow.
    await writer.create("/dq/queue-|" + "F" * 1000 + "|0000000000", b"huge", make_parents=True)
    await writer.create("/dq/queue-|1_0|0000000001", b"underscore")
    async with DelayQueue(client, "/dq") as queue:
        await queue.put(b"later", int(time.time() * 1000) + 300)
        got = [await queue.get(10) for _ in range(3)]
    assert got == [b"huge", b"underscore", b"later"]
