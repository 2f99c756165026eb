"""Service discovery against a real server: registration, queries, update and unregistration;
a registration made again on a new session; the cache's stream; the provider's strategies and
down instances; Curator 5.x's JSON read and written; input refused before anything is sent; a
cancelled registration leaving no node."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
from typing import Any

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import CREATOR_ALL_ACL
from aiocoord.errors import (
    BadArgumentsError,
    DiscoveryError,
    InstanceFormatError,
    InvalidPathError,
    InvalidTypeError,
)
from aiocoord.recipes.cache import CacheEventType
from aiocoord.recipes.discovery import (
    DownInstancePolicy,
    Random,
    RoundRobin,
    ServiceDiscovery,
    ServiceInstance,
    ServiceType,
    Sticky,
    UriSpec,
)
from aiocoord.testing import expire_session, session_of

# What Curator 5.4's JsonInstanceSerializer(Details.class, false) writes for
#   ServiceInstance.<Details>builder().name("api").id("7d1b4c2e-...-000000000001")
#       .address("10.0.0.5").port(8080).payload(new Details())
#       .registrationTimeUTC(1764111600000L)
#       .uriSpec(new UriSpec("{scheme}://{address}:{port}/v1")).build()
# with Details a bean {String key = "value"; int weight = 3} (class Probe$Details), and
# where each piece comes from:
# - the key order is ServiceInstance's field declaration order (Jackson lists the fields
#   first, then their getters): name, id, address, port, sslPort, payload,
#   registrationTimeUTC, serviceType, uriSpec, enabled;
# - "sslPort": null: an Integer never set (Jackson writes nulls by default);
# - "payload": getPayload() carries @JsonTypeInfo(use = CLASS, defaultImpl = Object.class),
#   so a bean gets its class name as an "@class" property, first;
# - "serviceType": the enum's name; the builder's default is DYNAMIC;
# - "uriSpec": UriSpec.getParts(), each Part's getValue() and isVariable() ("variable");
# - "enabled": only without compatibleSerializationMode (the second constructor argument
#   false); JsonInstanceSerializer(Details.class) alone writes OldServiceInstance, which
#   has no enabled field (CURATOR_COMPAT below);
# - compact: ObjectMapper's default printer, no spaces.
# Checked byte for byte against Curator 5.4.0's jars (libcurator-discovery-java) on Java 17.
CURATOR_FULL = (
    '{"name":"api","id":"7d1b4c2e-0000-4000-8000-000000000001","address":"10.0.0.5",'
    '"port":8080,"sslPort":null,"payload":{"@class":"Probe$Details","key":"value","weight":3},'
    '"registrationTimeUTC":1764111600000,"serviceType":"DYNAMIC","uriSpec":{"parts":['
    '{"value":"scheme","variable":true},{"value":"://","variable":false},'
    '{"value":"address","variable":true},{"value":":","variable":false},'
    '{"value":"port","variable":true},{"value":"/v1","variable":false}]},"enabled":true}'
)
# The same instance through JsonInstanceSerializer(Details.class): no "enabled".
CURATOR_COMPAT = CURATOR_FULL.removesuffix(',"enabled":true}') + "}"
# ServiceInstance.builder().name("db").id("x").address(null).sslPort(5433)
#     .serviceType(ServiceType.STATIC).enabled(false).registrationTimeUTC(1795647688994L)
# through JsonInstanceSerializer(Object.class, false): absent values are null.
CURATOR_STATIC = (
    '{"name":"db","id":"x","address":null,"port":null,"sslPort":5433,"payload":null,'
    '"registrationTimeUTC":1795647688994,"serviceType":"STATIC","uriSpec":null,"enabled":false}'
)


async def test_register_find_update_unregister(zk_connect: Factory) -> None:
    client, other = await zk_connect(), await zk_connect()
    async with ServiceDiscovery(client, "/services") as discovery:
        reader = ServiceDiscovery(other, "/services")
        api = ServiceInstance.build(
            "api", port=8080, payload={"zone": "eu"}, uri_spec="{scheme}://{address}:{port}"
        )
        db = ServiceInstance.build("db", ssl_port=5433, service_type=ServiceType.STATIC)
        await discovery.register(api, timeout=10)
        await discovery.register(db, timeout=10)

        assert await reader.service_names() == ["api", "db"]
        assert await reader.instances("api") == [api]
        assert await reader.instance("api", api.id) == api
        assert await reader.instance("api", "nobody") is None
        assert await reader.instances("nothing") == []
        _, stat = await other.get(f"/services/api/{api.id}")
        assert stat.ephemeral_owner == client.session_id
        _, stat = await other.get(f"/services/db/{db.id}")
        assert stat.ephemeral_owner == 0  # STATIC: a persistent node
        assert api.build_uri_spec() == f"http://{api.address}:8080"

        moved = dataclasses.replace(api, port=9090, enabled=False)
        await discovery.update(moved)
        assert await reader.instance("api", api.id) == moved
        assert discovery.registered() == [moved, db]

        assert await discovery.unregister(moved)
        assert not await discovery.unregister(moved)  # not registered any more: nothing done
        await client.wait_background()  # the delete may end after unregister() returns
        assert await reader.instances("api") == []
        with pytest.raises(DiscoveryError, match="register"):
            await discovery.update(moved)
    # Closing unregisters the rest, persistent ones included, as Curator's close() does.
    await client.wait_background()
    assert await child_names(other, "/services/db") == []


async def test_registration_comes_back_on_a_new_session(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, admin = await zk_connect(session_timeout=4), await zk_connect()
    async with ServiceDiscovery(client, "/svc", watch_instances=True) as discovery:
        instance = ServiceInstance.build("api", port=1)
        await discovery.register(instance, timeout=10)
        path = f"/svc/api/{instance.id}"
        # Someone else disables the instance: with watch_instances that is kept.
        disabled = dataclasses.replace(instance, enabled=False)
        await admin.set(path, disabled.to_json())
        await eventually(lambda: _true(discovery.registered() == [disabled]))

        old = client.session_id
        await expire_session(
            client.session_id, session_of(client).password, zookeeper.connect_string
        )

        async def back() -> bool:
            stat = await admin.exists(path)
            return stat is not None and stat.ephemeral_owner not in (0, old)

        await eventually(back, what="the registration on the new session")
        data, stat = await admin.get(path)
        assert stat.ephemeral_owner == client.session_id
        assert json.loads(data)["enabled"] is False  # re-created with what was seen last
    await client.wait_background()
    assert await child_names(admin, "/svc/api") == []


async def _true(value: bool) -> bool:
    return value


async def test_cache_stream_sees_add_update_remove(zk_connect: Factory) -> None:
    client, other = await zk_connect(), await zk_connect()
    registrar = ServiceDiscovery(other, "/services")
    first = ServiceInstance.build("api", id="a", port=1)
    await registrar.register(first, timeout=10)
    async with ServiceDiscovery(client, "/services") as discovery:
        cache = discovery.cache("api")
        events = cache.changes()
        async with cache:
            assert cache.instances() == [first]
            added = await events.get(10)
            assert (added.type, added.id, added.instance) == (
                CacheEventType.CHILD_ADDED,
                "a",
                first,
            )
            assert (await events.get(10)).type is CacheEventType.INITIALIZED

            second = ServiceInstance.build("api", id="b", port=2)
            await registrar.register(second, timeout=10)
            event = await events.get(10)
            assert (event.type, event.instance, event.previous) == (
                CacheEventType.CHILD_ADDED,
                second,
                None,
            )
            updated = dataclasses.replace(second, port=3)
            await registrar.update(updated)
            event = await events.get(10)
            assert (event.type, event.instance, event.previous) == (
                CacheEventType.CHILD_UPDATED,
                updated,
                second,
            )
            # A node that is not an instance is left out of the view and of the stream.
            await other.create("/services/api/junk", b"not json")
            await registrar.unregister(first)
            event = await events.get(10)
            assert (event.type, event.id, event.instance, event.previous) == (
                CacheEventType.CHILD_REMOVED,
                "a",
                None,
                first,
            )
            assert await cache.wait_for(lambda found: found == [updated], timeout=10) == [updated]
        assert cache.closed
    await registrar.close()


async def test_provider_strategies_and_down_instances(zk_connect: Factory) -> None:
    client = await zk_connect()
    now = [0.0]
    async with ServiceDiscovery(client, "/services") as discovery:
        instances = [ServiceInstance.build("api", id=f"i{n}", port=n) for n in range(3)]
        for instance in instances:
            await discovery.register(instance, timeout=10)
        off = ServiceInstance.build("api", id="i9", enabled=False)
        await discovery.register(off, timeout=10)

        async with discovery.provider("api") as provider:  # RoundRobin
            assert provider.get_all_instances() == instances  # the disabled one left out
            picks = [provider.get_instance() for _ in range(6)]
            assert picks == instances + instances

        policy = DownInstancePolicy(timeout=30, error_threshold=2)
        async with discovery.provider(
            "api", RoundRobin(), down_policy=policy, clock=lambda: now[0]
        ) as provider:
            provider.note_error(instances[0])
            assert not provider.is_down(instances[0])  # one error: still used
            now[0] = 29.0
            provider.note_error(instances[0])  # two within 30 s of the first: down
            assert provider.is_down(instances[0])
            assert provider.get_all_instances() == instances[1:]
            now[0] = 30.0  # 30 s after the first error: back, with its count cleared
            assert provider.get_all_instances() == instances
            provider.note_error(instances[0])
            assert not provider.is_down(instances[0])

        sticky = Sticky(Random(seed=7))
        async with discovery.provider("api", sticky) as provider:
            chosen = provider.get_instance()
            assert chosen is not None
            assert {provider.get_instance() for _ in range(5)} == {chosen}
            assert sticky.instance_number == 0
            provider.note_error(chosen)
            provider.note_error(chosen)  # down: the inner strategy picks another
            other = provider.get_instance()
            assert other is not None and other.id != chosen.id
            assert sticky.instance_number == 1
            await discovery.unregister(other)
            await provider.cache.wait_for(lambda found: other not in found, timeout=10)
            last = provider.get_instance()
            assert last is not None and last.id not in (chosen.id, other.id)

        async with discovery.provider("api", filters=[lambda i: i.port == 2]) as provider:
            assert provider.get_all_instances() == [instances[2]]
        async with discovery.provider("nothing") as provider:
            assert provider.get_instance() is None


async def test_curator_json_is_read_and_written_as_curator_does(zk_connect: Factory) -> None:
    client, admin = await zk_connect(), await zk_connect()
    await admin.create(
        "/curator/api/7d1b4c2e-0000-4000-8000-000000000001",
        CURATOR_FULL.encode(),
        make_parents=True,
    )
    await admin.create("/curator/db/x", CURATOR_STATIC.encode(), make_parents=True)
    await admin.create("/curator/old/c", CURATOR_COMPAT.encode(), make_parents=True)
    async with ServiceDiscovery(client, "/curator") as discovery:
        assert await discovery.service_names() == ["api", "db", "old"]
        [api] = await discovery.instances("api")
        assert api == ServiceInstance(
            name="api",
            id="7d1b4c2e-0000-4000-8000-000000000001",
            address="10.0.0.5",
            port=8080,
            ssl_port=None,
            payload={"@class": "Probe$Details", "key": "value", "weight": 3},
            registration_time_utc=1764111600000,
            service_type=ServiceType.DYNAMIC,
            uri_spec=UriSpec("{scheme}://{address}:{port}/v1"),
            enabled=True,
        )
        assert api.build_uri_spec() == "http://10.0.0.5:8080/v1"
        db = await discovery.instance("db", "x")
        assert db is not None
        assert (db.address, db.port, db.ssl_port, db.payload) == (None, None, 5433, None)
        assert (db.service_type, db.enabled, db.uri_spec) == (ServiceType.STATIC, False, None)
        assert db.build_uri_spec() == ""
        [old] = await discovery.instances("old")
        assert old == dataclasses.replace(api, id=old.id) and old.enabled  # absent: true

        # Written back, an instance is byte for byte what Curator writes.
        await admin.delete("/curator/api/7d1b4c2e-0000-4000-8000-000000000001")
        await discovery.register(api, timeout=10)
        data, _ = await admin.get("/curator/api/7d1b4c2e-0000-4000-8000-000000000001")
        assert data.decode() == CURATOR_FULL
        await admin.set("/curator/db/x", b"{}")  # a persistent node of that name is adopted
        await discovery.register(db, timeout=10)
        data, _ = await admin.get("/curator/db/x")
        assert data.decode() == CURATOR_STATIC


async def test_unknown_fields_survive_an_update(zk_connect: Factory) -> None:
    client, admin = await zk_connect(), await zk_connect()
    async with ServiceDiscovery(client, "/services") as discovery:
        instance = ServiceInstance.build("api", id="one", port=1)
        await discovery.register(instance, timeout=10)
        # A newer writer adds fields this version does not know.
        doc = json.loads(instance.to_json())
        doc["zone"] = {"region": "eu", "rack": 7}
        doc["weight"] = 5
        await admin.set("/services/api/one", json.dumps(doc).encode())

        read = await discovery.instance("api", "one")
        assert read == instance  # the unknown fields are not part of equality
        await discovery.update(dataclasses.replace(read, port=2))
        written = json.loads((await admin.get("/services/api/one"))[0])
        assert written["port"] == 2
        assert (written["zone"], written["weight"]) == ({"region": "eu", "rack": 7}, 5)
        assert list(written)[-2:] == ["zone", "weight"]  # after Curator's own fields


async def test_bad_input_is_refused_before_anything_is_sent(zk_connect: Factory) -> None:
    client = await zk_connect()
    with pytest.raises(InvalidTypeError):
        ServiceDiscovery("not a client", "/services")  # type: ignore[arg-type]  # on purpose
    with pytest.raises(InvalidPathError):
        ServiceDiscovery(client, "services")
    with pytest.raises(InvalidTypeError):
        ServiceDiscovery(client, "/s", acl="open")  # type: ignore[arg-type]  # on purpose
    with pytest.raises(InvalidTypeError):
        ServiceInstance.build("api", port="80")  # type: ignore[arg-type]  # on purpose
    with pytest.raises(BadArgumentsError):
        ServiceInstance.build("api", port=70000)
    with pytest.raises(BadArgumentsError):
        ServiceInstance.build("api", service_type="EPHEMERAL")  # type: ignore[arg-type]
    with pytest.raises(InstanceFormatError):
        ServiceInstance.build("api", payload={"when": object()})
    with pytest.raises(InstanceFormatError):
        ServiceInstance.build("api", payload=float("nan"))
    discovery = ServiceDiscovery(client, "/services")
    for name, instance_id in (("", "x"), ("a/b", "x"), ("api", ""), ("api", ".."), ("a\x00", "x")):
        with pytest.raises(BadArgumentsError):
            await discovery.register(ServiceInstance(name=name, id=instance_id))
    with pytest.raises(InvalidTypeError):
        await discovery.register({"name": "api"})  # type: ignore[arg-type]  # on purpose
    huge = ServiceInstance.build("api", payload="x" * (1024 * 1024))
    with pytest.raises(aiocoord.errors.DataTooLargeError):
        await discovery.register(huge)
    with pytest.raises(BadArgumentsError):
        DownInstancePolicy(error_threshold=0)
    with pytest.raises(InvalidTypeError):
        discovery.provider("api", strategy="round-robin")  # type: ignore[arg-type]
    assert discovery.registered() == []
    assert await client.exists("/services") is None  # nothing was sent that made a node
    await discovery.close()
    with pytest.raises(DiscoveryError):
        await discovery.register(ServiceInstance.build("api"))


async def test_cancelled_or_timed_out_registration_leaves_no_node(zk_connect: Factory) -> None:
    client, squatter = await zk_connect(), await zk_connect()
    discovery = ServiceDiscovery(client, "/services")
    # Cancelled at every point of the way: before, during and after the create (the parent
    # exists, so that a create is on its way for most of the turns).
    await squatter.create("/services/api", make_parents=True)
    for turns in range(12):
        instance = ServiceInstance.build("api")
        task = asyncio.ensure_future(discovery.register(instance))
        for _ in range(turns):
            await asyncio.sleep(0)  # the loop's turns, to cancel at each step of the create
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if task.cancelled():
            assert discovery.registered() == []
        else:  # it was done before the cancel came
            assert await discovery.unregister(instance)
    for kind in (ServiceType.STATIC, ServiceType.DYNAMIC_SEQUENTIAL):
        for turns in range(6):
            instance = ServiceInstance.build("api", service_type=kind)
            task = asyncio.ensure_future(discovery.register(instance))
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if not task.cancelled():
                assert await discovery.unregister(instance)
    await client.wait_background()
    await squatter.sync("/")
    assert await child_names(squatter, "/services/api") == []

    # A timeout while another session holds the id: the registration is not kept.
    await squatter.create("/services/api/taken", b"theirs", ephemeral=True, make_parents=True)
    with pytest.raises(aiocoord.TimeoutError):
        await discovery.register(ServiceInstance.build("api", id="taken"), timeout=0.2)
    assert discovery.registered() == []
    await squatter.close()
    await client.wait_background()
    assert await child_names(client, "/services/api") == []

    # The ACL is the one given, and one the server refuses reaches the caller.
    await discovery.close()
    no_admin = [aiocoord.ACL(aiocoord.ACL.ALL & ~aiocoord.ACL.ADMIN, "world", "anyone")]
    discovery = ServiceDiscovery(client, "/acl", acl=no_admin)
    instance = ServiceInstance.build("api")
    await discovery.register(instance, timeout=10)
    for path in ("/acl", "/acl/api", f"/acl/api/{instance.id}"):
        acl, _ = await client.get_acl(path)
        assert acl == no_admin
    await discovery.close()
    refused = ServiceDiscovery(client, "/refused", acl=CREATOR_ALL_ACL)  # needs auth
    with pytest.raises(aiocoord.errors.InvalidACLError):
        await refused.register(ServiceInstance.build("api"), timeout=10)
    assert refused.registered() == []
    assert await client.exists("/refused") is None


async def test_sequential_instances_and_registering_an_id_again(zk_connect: Factory) -> None:
    client, admin = await zk_connect(), await zk_connect()
    async with ServiceDiscovery(client, "/services") as discovery:
        worker = ServiceInstance.build(
            "jobs", id="w", service_type=ServiceType.DYNAMIC_SEQUENTIAL, port=1
        )
        await discovery.register(worker, timeout=10)
        [name] = await child_names(admin, "/services/jobs")
        assert re.fullmatch(r"_c_[0-9a-f-]{36}-w\d{10}", name)  # protected, as our sequentials
        _, stat = await admin.get(f"/services/jobs/{name}")
        assert stat.ephemeral_owner == client.session_id
        assert await discovery.instances("jobs") == [worker]
        # Registering the same id again updates it, in place.
        again = dataclasses.replace(worker, port=2)
        await asyncio.gather(discovery.register(again), discovery.register(again))
        assert await child_names(admin, "/services/jobs") == [name]
        assert await discovery.instances("jobs") == [again]
        with pytest.raises(BadArgumentsError, match="unregister"):
            await discovery.update(dataclasses.replace(again, name="other"))
        assert await discovery.unregister(again)
        await client.wait_background()
        assert await child_names(admin, "/services/jobs") == []
