"""PersistentNode and GroupMember against a real server: nodes come back after deletion and
after a forced session expiry, another session's node is waited out, and the membership view
converges."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from support import Factory, child_names, eventually

import aiocoord
from aiocoord import Client, State
from aiocoord.recipes.cache import CacheEventType
from aiocoord.recipes.nodes import CreateMode, GroupMember, PersistentNode
from aiocoord.recipes.ttl_node import PersistentTtlNode
from aiocoord.testing import FaultProxy, expire_session, session_of

PROTECTED_SEQUENTIAL = re.compile(
    r"^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-member-\d{10}$"
)


#: The failure-semantics rows of docs/recipes/nodes.md (PersistentTtlNode's included) and its
#: row of docs/recipes.md, with the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/nodes.md | Failure semantics | Bad input": [
        "test_input_vs_server.py::test_strings_without_a_utf8_form_and_oversized_nodes_are_refused_unsent",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | "
    "`PersistentNode`, `GroupMember`": [
        "test_ephemeral_node_comes_back_after_deletion_and_session_expiry",
        "test_group_membership_converges_after_a_members_session_expires",
        "test_another_sessions_node_is_waited_out",
    ],
    "recipes/nodes.md | Failure semantics | Connection lost (SUSPENDED)": [
        "test_a_cut_link_leaves_the_node_and_its_owner_alone",
    ],
    "recipes/nodes.md | Failure semantics | Session expired (LOST)": [
        "test_ephemeral_node_comes_back_after_deletion_and_session_expiry",
        "test_protected_sequential_node_gets_a_new_name_after_expiry",
        "test_persistent_node_is_recreated_with_its_latest_data",
        "test_another_sessions_node_is_waited_out",
    ],
    "recipes/nodes.md | Failure semantics | Cancellation": [
        "test_a_persistent_node_closed_while_cut_off_is_gone_after_an_expiry",
        "test_close_while_the_first_create_is_in_flight_leaves_no_node",
    ],
    "recipes/nodes.md | Failure semantics | Timeout": [
        "test_another_sessions_node_is_waited_out",
    ],
    "recipes/nodes.md | Failure semantics of PersistentTtlNode | Connection lost (SUSPENDED)": [
        "test_a_ttl_node_cut_off_for_less_than_its_ttl_stays_and_is_touched_again",
    ],
    "recipes/nodes.md | Failure semantics of PersistentTtlNode | Timeout": [
        "test_a_ttl_node_created_while_cut_off_times_out_then_appears",
    ],
    "recipes/nodes.md | Failure semantics of PersistentTtlNode | Session expired (LOST)": [
        "test_ttl_node.py::test_persistent_ttl_node_keeps_touching_on_a_new_session_after_expiry",
    ],
    "recipes/nodes.md | Failure semantics of PersistentTtlNode | Process dies": [
        "test_ttl_node.py::test_an_untouched_ttl_node_is_reaped_after_its_ttl_and_a_touched_one_is_not",
    ],
    "recipes/nodes.md | Failure semantics of PersistentTtlNode | Cancellation / close": [
        "test_ttl_node.py::test_persistent_ttl_node_stays_while_it_runs_and_goes_after_close",
        "test_ttl_node.py::test_persistent_ttl_node_closed_at_once_leaves_nothing",
    ],
    "recipes/nodes.md | Failure semantics of PersistentTtlNode | Server without TTL nodes": [
        "test_ttl_node.py::test_a_server_without_ttl_nodes_is_named_in_the_error",
    ],
}


async def owned_by(client: Client, path: str, session_id: int) -> bool:
    stat = await client.exists(path)
    return stat is not None and stat.ephemeral_owner == session_id


async def test_ephemeral_node_comes_back_after_deletion_and_session_expiry(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, admin = await zk_connect(session_timeout=4), await zk_connect()
    async with PersistentNode(client, "/svc/a", b"10.0.0.1") as node:
        assert await node.wait_for_initial_create(5)
        assert node.actual_path == "/svc/a"
        data, stat = await admin.get("/svc/a")
        assert (data, stat.ephemeral_owner) == (b"10.0.0.1", client.session_id)

        await admin.delete("/svc/a")
        await eventually(lambda: owned_by(admin, "/svc/a", client.session_id))

        old_session = client.session_id
        await expire_session(
            client.session_id, session_of(client).password, zookeeper.connect_string
        )
        await eventually(
            lambda: _true(client.session_id not in (0, old_session) and client.connected)
        )
        await eventually(lambda: owned_by(admin, "/svc/a", client.session_id))
        assert node.creations == 3
        await node.set_data(b"10.0.0.2")
        assert (await admin.get("/svc/a"))[0] == b"10.0.0.2"
    await client.wait_background()
    assert await admin.exists("/svc/a") is None


async def _true(value: bool) -> bool:
    return value


async def test_protected_sequential_node_gets_a_new_name_after_expiry(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, admin = await zk_connect(session_timeout=4), await zk_connect()
    node = PersistentNode(client, "/members/member-", b"x", mode=CreateMode.EPHEMERAL_SEQUENTIAL)
    async with node:
        assert await node.wait_for_initial_create(5)
        first = node.actual_path
        assert first is not None
        assert PROTECTED_SEQUENTIAL.match(first.rsplit("/", 1)[1])
        await expire_session(
            client.session_id, session_of(client).password, zookeeper.connect_string
        )

        async def renamed() -> bool:
            path = node.actual_path
            return (
                path is not None
                and path != first
                and await owned_by(admin, path, client.session_id)
                and await child_names(admin, "/members") == [path.rsplit("/", 1)[1]]
            )

        await eventually(renamed)
    # close() waits only briefly for its delete to be answered: wait for it before looking.
    await client.wait_background()
    assert await child_names(admin, "/members") == []


async def test_persistent_node_is_recreated_with_its_latest_data(zk_connect: Factory) -> None:
    client, admin = await zk_connect(), await zk_connect()
    async with PersistentNode(client, "/config/flag", b"on", mode=CreateMode.PERSISTENT) as node:
        assert await node.wait_for_initial_create(5)
        stat = await admin.exists("/config/flag")
        assert stat is not None
        assert stat.ephemeral_owner == 0
        await node.set_data(b"off")
        await admin.delete("/config/flag")

        async def back_with_new_data() -> bool:
            try:
                return (await admin.get("/config/flag"))[0] == b"off"
            except Exception:
                return False

        await eventually(back_with_new_data)
    await client.wait_background()
    assert await admin.exists("/config/flag") is None  # Curator deletes on close, as here


async def test_another_sessions_node_is_waited_out(zk_connect: Factory) -> None:
    client, squatter = await zk_connect(), await zk_connect()
    await squatter.create("/lead/name", b"theirs", ephemeral=True, make_parents=True)
    async with PersistentNode(client, "/lead/name", b"mine") as node:
        with pytest.raises(aiocoord.TimeoutError):
            await node.wait_for_initial_create(0.3)
        assert (await client.get("/lead/name"))[0] == b"theirs"
        await squatter.close()
        assert await node.wait_for_initial_create(5)
        data, stat = await client.get("/lead/name")
        assert (data, stat.ephemeral_owner) == (b"mine", client.session_id)


async def test_group_membership_converges_after_a_members_session_expires(
    zk_connect: Factory, zookeeper: Any
) -> None:
    clients = [await zk_connect(session_timeout=4) for _ in range(3)]
    members = [GroupMember(c, "/group", f"m{i}", b"d%d" % i) for i, c in enumerate(clients)]
    everyone = {"m0": b"d0", "m1": b"d1", "m2": b"d2"}
    for member in members:
        await member.start()
    for member in members:
        assert await member.wait_for(lambda m: m == everyone, timeout=5) == everyone
        assert member.members() == everyone

    events = members[0].changes()
    expired = clients[1]
    old_session = expired.session_id
    await expire_session(expired.session_id, session_of(expired).password, zookeeper.connect_string)
    # Seen from m0: m1 goes with its session, then comes back on the new one.
    seen = []
    while [e.type for e in seen][-2:] != [CacheEventType.CHILD_REMOVED, CacheEventType.CHILD_ADDED]:
        event = await events.get(10)
        if event.name == "m1":
            seen.append(event)
    added = seen[-1].data
    assert added is not None
    assert added.stat.ephemeral_owner not in (0, old_session)
    for member in members:
        assert await member.wait_for(lambda m: m == everyone, timeout=10) == everyone

    await members[2].set_data(b"new")
    changed = {**everyone, "m2": b"new"}
    assert await members[0].wait_for(lambda m: m == changed, timeout=5) == changed
    await members[2].close()
    gone = {"m0": b"d0", "m1": b"d1"}
    assert await members[1].wait_for(lambda m: m == gone, timeout=5) == gone
    for member in members[:2]:
        await member.close()
    await asyncio.gather(*(c.wait_background() for c in clients))
    assert await child_names(clients[0], "/group") == []


async def test_group_member_has_one_stream_name(zk_client: Client) -> None:
    async with GroupMember(zk_client, "/one-group", "me", b"x") as member:
        assert not hasattr(member, "events")
        changes = member.changes()
        await member.wait_for(lambda m: m == {"me": b"x"}, timeout=5)
        async with GroupMember(zk_client, "/one-group", "you", b"y"):
            while (event := await changes.get(10)).name != "you":
                pass
            assert event.type is CacheEventType.CHILD_ADDED


@pytest.mark.parametrize(
    "mode", [CreateMode.PERSISTENT, CreateMode.EPHEMERAL, CreateMode.PERSISTENT_SEQUENTIAL]
)
async def test_close_while_the_first_create_is_in_flight_leaves_no_node(
    zk_client: Client, mode: CreateMode
) -> None:
    # The create is written, its answer not yet read, when close() cancels the node's task:
    # the node the server makes must not outlive the PersistentNode (a persistent one would
    # stay for good, an ephemeral one as long as the session).
    await zk_client.ensure_path("/inflight")
    sent = session_of(zk_client).sent.total()
    node = PersistentNode(zk_client, "/inflight/n", b"x", mode=mode)
    await node.start()
    # A few loop turns: the node's task starts, then its create's; nothing signals the write.
    while session_of(zk_client).sent.total() == sent:  # noqa: ASYNC110 - no event for a write
        await asyncio.sleep(0)
    assert node.creations == 0  # not answered yet
    await node.close()
    await zk_client.wait_background()
    assert await zk_client.children("/inflight") == []


async def test_a_cut_link_leaves_the_node_and_its_owner_alone(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    admin = await zk_connect()
    async with PersistentNode(client, "/cut/node", b"mine") as node:
        await node.wait_for_initial_create(timeout=10)
        _, before = await admin.get("/cut/node")
        zk_fault_proxy.blackhole()
        zk_fault_proxy.drop()
        await client.wait_for(State.SUSPENDED, timeout=5)
        assert await admin.exists("/cut/node") is not None
        zk_fault_proxy.heal()
        await client.wait_for(State.RECONNECTED, timeout=10)
        data, after = await admin.get("/cut/node")
        # The same node of the same session: nothing was deleted or made again.
        assert (data, after.czxid, after.ephemeral_owner) == (
            b"mine",
            before.czxid,
            client.session_id,
        )


async def test_a_ttl_node_cut_off_for_less_than_its_ttl_stays_and_is_touched_again(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    admin = await zk_connect()
    async with PersistentTtlNode(client, "/cut/ttl", ttl=2, data=b"busy") as node:
        await node.wait_for_initial_create(timeout=10)
        zk_fault_proxy.blackhole()
        zk_fault_proxy.drop()
        await client.wait_for(State.SUSPENDED, timeout=5)
        zk_fault_proxy.heal()
        await client.wait_for(State.RECONNECTED, timeout=10)
        # The next touch after the reconnect writes the child (again, or for the first time).
        stat, touched = await admin.exists("/cut/ttl/touch", watch=True)
        assert (await asyncio.wait_for(touched, 10)).path == "/cut/ttl/touch"
        assert (await admin.get("/cut/ttl"))[0] == b"busy"
        again = await admin.exists("/cut/ttl/touch")
        assert again is not None and (stat is None or again.mzxid > stat.mzxid)


async def test_a_ttl_node_created_while_cut_off_times_out_then_appears(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    admin = await zk_connect()
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    async with PersistentTtlNode(client, "/cut/ttl-late", ttl=2, data=b"late") as node:
        with pytest.raises(aiocoord.TimeoutError):
            await node.wait_for_initial_create(timeout=0.2)
        zk_fault_proxy.heal()
        await node.wait_for_initial_create(timeout=10)  # kept being made meanwhile
        assert (await admin.get("/cut/ttl-late"))[0] == b"late"


async def test_a_persistent_node_closed_while_cut_off_is_gone_after_an_expiry(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    """close() deletes the node, guaranteed: a persistent node outlives the session it was
    closed on, so the delete goes on on the next one (issue 26, item 2)."""
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=2)
    admin = await zk_connect()
    node = PersistentNode(client, "/cut/persistent", b"mine", mode=CreateMode.PERSISTENT)
    await node.start()
    await node.wait_for_initial_create(timeout=10)
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    await node.close()
    session = client.session_id
    await expire_session(session, session_of(client).password, zookeeper.connect_string)
    zk_fault_proxy.heal()
    await client.wait_for(State.CONNECTED, timeout=10)
    assert client.session_id != session
    await eventually(
        lambda: _absent(admin, "/cut/persistent"), timeout=10, what="the closed node deleted"
    )


async def _absent(client: Client, path: str) -> bool:
    return await client.exists(path) is None
