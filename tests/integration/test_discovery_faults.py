"""Service discovery under faults against a real server: a cut link, a write whose reply is
lost, a forced session expiry, an unregister while cut off."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from support import Factory, child_names, eventually

from aiocoord import State
from aiocoord.errors import ConnectionLossError, CoordinationError
from aiocoord.recipes.cache import CacheEventType
from aiocoord.recipes.discovery import ServiceDiscovery, ServiceInstance, ServiceType
from aiocoord.recipes.discovery._service_cache import InstanceSubscription
from aiocoord.testing import FaultProxy, expire_client, expire_session, session_of

SET_DATA = 5  # ZooKeeper's opcode

#: The failure-semantics rows of docs/recipes/discovery.md and the tests that hold each under
#: the fault it names (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/discovery.md | Failure semantics | Hostile or foreign node data": [
        "test_hostile_data.py::test_hostile_instance_nodes_are_skipped_by_every_discovery_reader",
    ],
    "recipes/discovery.md | Failure semantics | Connection lost (SUSPENDED)": [
        "test_a_cut_link_keeps_the_registration_and_the_cache_view_then_brings_the_gap",
        "test_an_update_whose_reply_is_lost_raises_connection_loss_and_is_idempotent",
    ],
    "recipes/discovery.md | Failure semantics | Session expired (LOST)": [
        "test_an_expired_session_makes_the_registration_again_and_the_cache_sees_it",
        "test_discovery.py::test_registration_comes_back_on_a_new_session",
    ],
    "recipes/discovery.md | Failure semantics | Cancellation": [
        "test_unregister_while_cut_off_deletes_the_node_once_healed",
        "test_a_static_instance_unregistered_while_cut_off_is_gone_after_an_expiry",
        "test_discovery.py::test_cancelled_or_timed_out_registration_leaves_no_node",
    ],
    "recipes/discovery.md | Failure semantics | Timeout": [
        "test_discovery.py::test_cancelled_or_timed_out_registration_leaves_no_node",
    ],
    "recipes/discovery.md | Failure semantics | Bad input": [
        "test_an_instance_that_cannot_be_written_is_refused_typed_before_anything_is_sent",
        "test_discovery.py::test_bad_input_is_refused_before_anything_is_sent",
    ],
}


async def _next(events: InstanceSubscription, kind: CacheEventType, id: str | None = None) -> Any:
    """The next event of ``kind`` (for ``id``, if given), skipping the others."""
    while True:
        event = await events.get(10)
        if event.type is kind and (id is None or event.id == id):
            return event


async def test_a_cut_link_keeps_the_registration_and_the_cache_view_then_brings_the_gap(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    other = await zk_connect()
    first = ServiceInstance.build("api", id="a", port=1)
    async with ServiceDiscovery(client, "/faults/svc") as discovery:
        await discovery.register(first, timeout=10)
        session = client.session_id
        cache = discovery.cache("api")
        events = cache.changes()
        async with cache:
            await _next(events, CacheEventType.INITIALIZED)
            zk_fault_proxy.blackhole()
            zk_fault_proxy.drop()
            await client.wait_for(State.SUSPENDED, timeout=5)
            await _next(events, CacheEventType.SUSPENDED)
            assert cache.instances() == [first]  # the last view is kept
            second = ServiceInstance.build("api", id="b", port=2)
            await ServiceDiscovery(other, "/faults/svc").register(second, timeout=10)
            zk_fault_proxy.heal()
            await client.wait_for(State.RECONNECTED, timeout=10)
            await _next(events, CacheEventType.RECONNECTED)
            added = await _next(events, CacheEventType.CHILD_ADDED)
            assert added.instance == second  # the change made while away arrives
            assert sorted(i.id for i in cache.instances()) == ["a", "b"]
        # Same session: the registration was never touched.
        assert client.session_id == session
        stat = await other.exists("/faults/svc/api/a")
        assert stat is not None and stat.ephemeral_owner == session


async def test_an_update_whose_reply_is_lost_raises_connection_loss_and_is_idempotent(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    admin = await zk_connect()
    instance = ServiceInstance.build("api", id="u", port=1)
    async with ServiceDiscovery(client, "/faults/upd") as discovery:
        await discovery.register(instance, timeout=10)
        moved = dataclasses.replace(instance, port=2)
        lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == SET_DATA)
        with pytest.raises(ConnectionLossError):
            await discovery.update(moved)
        await lost  # the write reached the server; its reply did not reach us
        await client.wait_for(State.RECONNECTED, timeout=10)
        await discovery.update(moved)  # again: the same result, whatever the first did
        assert discovery.registered() == [moved]
        data, _ = await admin.get("/faults/upd/api/u")
        assert ServiceInstance.from_json(data).port == 2


async def test_an_expired_session_makes_the_registration_again_and_the_cache_sees_it(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client = await zk_connect(session_timeout=4)
    admin = await zk_connect()
    instance = ServiceInstance.build("api", id="e", port=1)
    async with ServiceDiscovery(client, "/faults/exp") as discovery:
        await discovery.register(instance, timeout=10)
        cache = discovery.cache("api")
        events = cache.changes()
        async with cache:
            await _next(events, CacheEventType.INITIALIZED)
            old = client.session_id
            await expire_client(client, zookeeper.connect_string)
            await _next(events, CacheEventType.LOST)
            back = await _next(events, CacheEventType.CHILD_ADDED, "e")
            assert back.instance == instance
            assert cache.instances() == [instance]
        stat = await admin.exists("/faults/exp/api/e")
        assert stat is not None and stat.ephemeral_owner not in (0, old)
        assert stat.ephemeral_owner == client.session_id


async def test_unregister_while_cut_off_deletes_the_node_once_healed(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    admin = await zk_connect()
    instance = ServiceInstance.build("api", id="c", port=1)
    async with ServiceDiscovery(client, "/faults/unreg") as discovery:
        await discovery.register(instance, timeout=10)
        zk_fault_proxy.blackhole()
        zk_fault_proxy.drop()
        await client.wait_for(State.SUSPENDED, timeout=5)
        assert await discovery.unregister(instance)
        assert discovery.registered() == []
        zk_fault_proxy.heal()
        await client.wait_for(State.RECONNECTED, timeout=10)
        await client.wait_background()
        assert await child_names(admin, "/faults/unreg/api") == []


async def test_a_static_instance_unregistered_while_cut_off_is_gone_after_an_expiry(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    """The delete is guaranteed: a persistent node outlives the session, so its delete must
    go on on the next one (issue 26, item 2)."""
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=2)
    admin = await zk_connect()
    instance = ServiceInstance.build("api", id="s", port=1, service_type=ServiceType.STATIC)
    async with ServiceDiscovery(client, "/faults/static") as discovery:
        await discovery.register(instance, timeout=10)
        zk_fault_proxy.blackhole()
        zk_fault_proxy.drop()
        await client.wait_for(State.SUSPENDED, timeout=5)
        assert await discovery.unregister(instance)
        # The session ends while the client is cut off, so the delete cannot go out on it.
        session = client.session_id
        await expire_session(session, session_of(client).password, zookeeper.connect_string)
        zk_fault_proxy.heal()
        await client.wait_for(State.CONNECTED, timeout=10)
        assert client.session_id != session
        await eventually(
            lambda: _gone(admin, "/faults/static/api/s"),
            timeout=10,
            what="the STATIC instance deleted",
        )


async def _gone(client: Any, path: str) -> bool:
    return await client.exists(path) is None


@pytest.mark.parametrize(
    "fields",
    [
        {"address": "host-\ud800"},  # a lone surrogate: no UTF-8 for it
        {"payload": {"note": "\udfff"}},
        {"payload": [1, 2]},  # Curator's readers cannot take an array (issue 26, item 7)
    ],
    ids=["surrogate-address", "surrogate-payload", "array-payload"],
)
async def test_an_instance_that_cannot_be_written_is_refused_typed_before_anything_is_sent(
    zk_connect: Factory, fields: dict[str, Any]
) -> None:
    """Bad input gets our typed error, never a bare UnicodeEncodeError (issue 26, item 5)."""
    client = await zk_connect()
    before = dict(session_of(client).sent)
    async with ServiceDiscovery(client, "/faults/bad") as discovery:
        with pytest.raises(CoordinationError):
            await discovery.register(ServiceInstance.build("api", port=1, **fields))
        assert discovery.registered() == []
    assert dict(session_of(client).sent) == before
