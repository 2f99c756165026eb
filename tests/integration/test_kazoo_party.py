"""kazoo's ``Party`` and ``ShallowParty`` (2.x, in threads) and aiocoord's ``GroupMember`` in
kazoo's layout on one path: membership seen both ways, through joins, leaves and an expiry."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import BadArgumentsError, GroupMember
from aiocoord.testing import expire_client, expire_session

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/nodes.md | Failure semantics | kazoo and aiocoord members of one party, a "
    "member's session expires": [
        "test_an_expired_kazoo_member_disappears_for_both_sides",
        "test_our_member_whose_session_ends_disappears_for_both_sides",
        "test_our_expired_member_joins_again_for_both_sides",
        "test_kazoos_party_and_ours_see_each_other_join_and_leave",
    ],
}


def _party(kazoo: Any, shallow: bool, path: str, identifier: str) -> Any:
    return (kazoo.ShallowParty if shallow else kazoo.Party)(path, identifier)


@pytest.mark.parametrize("shallow", [False, True], ids=["Party", "ShallowParty"])
async def test_kazoos_party_and_ours_see_each_other_join_and_leave(
    zk_connect: Factory, kazoo: Any, shallow: bool
) -> None:
    client = await zk_connect()
    theirs = _party(kazoo, shallow, "/party", "kazoo-1")
    await asyncio.to_thread(theirs.join)
    async with GroupMember(client, "/party", "py-1", layout="kazoo", shallow=shallow) as ours:
        both = await ours.wait_for(lambda m: set(m) == {"kazoo-1", "py-1"}, timeout=10)
        assert both["py-1"] == b"py-1"  # the identifier is the data in kazoo's parties
        assert sorted(await asyncio.to_thread(list, theirs)) == ["kazoo-1", "py-1"]
        assert await asyncio.to_thread(len, theirs) == 2
        await asyncio.to_thread(theirs.leave)
        await ours.wait_for(lambda m: set(m) == {"py-1"}, timeout=10)
    assert await asyncio.to_thread(list, theirs) == []


async def test_a_party_counts_only_kazoos_party_nodes(zk_connect: Factory, kazoo: Any) -> None:
    client = await zk_connect()
    await client.create("/party/not-a-member", b"x", make_parents=True)
    async with GroupMember(client, "/party", "py-1", layout="kazoo") as ours:
        await ours.wait_for(lambda m: "py-1" in m, timeout=10)
        assert set(ours.members()) == {"py-1"}
        assert await asyncio.to_thread(list, kazoo.Party("/party")) == ["py-1"]


@pytest.mark.parametrize("shallow", [False, True], ids=["Party", "ShallowParty"])
async def test_an_expired_kazoo_member_disappears_for_both_sides(
    zookeeper: Any, zk_connect: Factory, kazoo: Any, shallow: bool
) -> None:
    client = await zk_connect()
    theirs = _party(kazoo, shallow, "/party", "kazoo-1")
    await asyncio.to_thread(theirs.join)
    async with GroupMember(client, "/party", "py-1", layout="kazoo", shallow=shallow) as ours:
        await ours.wait_for(lambda m: set(m) == {"kazoo-1", "py-1"}, timeout=10)
        session_id, password = kazoo.client_id
        await expire_session(session_id, password, zookeeper.connect_string)
        assert set(await ours.wait_for(lambda m: "kazoo-1" not in m, timeout=10)) == {"py-1"}
        # kazoo starts a new session by itself; its party does not join again.
        assert await asyncio.to_thread(list, theirs) == ["py-1"]


@pytest.mark.parametrize("shallow", [False, True], ids=["Party", "ShallowParty"])
async def test_our_member_whose_session_ends_disappears_for_both_sides(
    zookeeper: Any, zk_connect: Factory, kazoo: Any, shallow: bool
) -> None:
    client = await zk_connect(reconnect_after_expiry=False)
    watcher = await zk_connect()
    theirs = _party(kazoo, shallow, "/party", "kazoo-1")
    await asyncio.to_thread(theirs.join)
    ours = GroupMember(client, "/party", "py-1", layout="kazoo", shallow=shallow)
    await ours.start()
    async with GroupMember(watcher, "/party", "py-2", layout="kazoo", shallow=shallow) as other:
        everyone = {"kazoo-1", "py-1", "py-2"}
        await other.wait_for(lambda m: set(m) == everyone, timeout=10)
        assert sorted(await asyncio.to_thread(list, theirs)) == sorted(everyone)
        await expire_client(client, zookeeper.connect_string)
        await other.wait_for(lambda m: set(m) == {"kazoo-1", "py-2"}, timeout=10)
        assert sorted(await asyncio.to_thread(list, theirs)) == ["kazoo-1", "py-2"]
        await ours.close()  # the session is gone for good: nothing to delete, no error
        await asyncio.to_thread(theirs.leave)


async def test_our_expired_member_joins_again_for_both_sides(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    theirs = kazoo.Party("/party", "kazoo-1")
    await asyncio.to_thread(theirs.join)
    async with GroupMember(client, "/party", "py-1", layout="kazoo") as ours:
        await ours.wait_for(lambda m: set(m) == {"kazoo-1", "py-1"}, timeout=10)
        first_session = client.session_id
        await expire_client(client, zookeeper.connect_string)
        assert client.session_id != first_session

        async def rejoined() -> bool:
            path = ours.node.actual_path
            stat = None if path is None else await client.exists(path)
            # Owned by the new session: the old node went with the old one.
            return stat is not None and stat.ephemeral_owner == client.session_id

        await eventually(rejoined, what="our member's node made again by the new session")
        assert sorted(await asyncio.to_thread(list, theirs)) == ["kazoo-1", "py-1"]
        assert set(ours.members()) == {"kazoo-1", "py-1"}


async def test_kazoos_party_options_are_checked_before_anything_is_sent(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    with pytest.raises(BadArgumentsError, match="layout='kazoo'"):
        GroupMember(client, "/party", "py", shallow=True)
    with pytest.raises(BadArgumentsError, match="data empty"):
        GroupMember(client, "/party", "py", b"payload", layout="kazoo")
    with pytest.raises(BadArgumentsError):
        GroupMember(client, "/party", "a/b", layout="kazoo", shallow=True)
    with pytest.raises(BadArgumentsError, match="UTF-8"):
        GroupMember(client, "/party", "\ud800", layout="kazoo")
    assert await client.exists("/party") is None
