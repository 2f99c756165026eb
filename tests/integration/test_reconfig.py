"""Dynamic reconfiguration against real servers: the configuration a client reads, reconfig
adding and removing members (and what the server refuses), the test ensemble's
``add_member``/``remove_member``, and the ensemble tracker that lets a client started with one
member's address carry on when that member stops.

The ensemble tests share the session's ``zookeeper_ensemble`` and leave it as they found it
(three members, all running)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aiocoord import (
    BadArgumentsError,
    BadVersionError,
    Client,
    EventType,
    NoAuthError,
    State,
    StateChange,
    connect,
)
from aiocoord import TimeoutError as CoordTimeoutError
from aiocoord._wire.opcodes import Op
from aiocoord.ensemble import EnsembleConfig
from aiocoord.errors import InvalidTypeError, NewConfigNoQuorumError, ReconfigDisabledError
from aiocoord.testing import ZooKeeperEnsemble, expire_client, session_of
from aiocoord.testing._client_fixtures import ClientFactory, async_fixture
from aiocoord.testing._process import free_ports
from aiocoord.testing.server import SUPER_AUTH

HOST = "127.0.0.1"


@async_fixture
async def admin(zookeeper_ensemble: ZooKeeperEnsemble) -> AsyncIterator[Client]:
    """A super-user client of the whole ensemble (the one allowed to reconfig)."""
    client = await connect(zookeeper_ensemble.connect_string, auth=[SUPER_AUTH])
    try:
        yield client
    finally:
        await client.close()


def absent_member(member_id: int, role: str = "observer") -> str:
    """A member spec on ports nothing listens on (an observer need not run to be added)."""
    quorum, election, client = free_ports(3, HOST)
    return f"server.{member_id}={HOST}:{quorum}:{election}:{role};{HOST}:{client}"


async def committed(client: Client) -> EnsembleConfig:
    """The leader's latest configuration (a sync first: the connected server may lag)."""
    await client.sync("/")
    return await client.get_config()


# --- reading the configuration ---------------------------------------------------------------


@pytest.mark.ensemble
async def test_get_config_lists_every_member_with_its_client_address(
    zookeeper_ensemble: ZooKeeperEnsemble,
) -> None:
    ensemble = zookeeper_ensemble
    # Chrooted and without any credentials: the config node lies outside every chroot and
    # anyone may read it.
    async with await connect(ensemble.member_connect_string(1) + "/some/chroot") as client:
        config = await committed(client)
    assert config.ids == (1, 2, 3)
    assert config.participants == config.members and config.observers == ()
    assert config.client_addresses == tuple(ensemble.member_connect_string(i) for i in range(3))
    assert config.version > 0
    assert f"version={config.version:x}" in config.raw
    # The ensemble wrote these lines into each member's dynamic config file.
    workdir = ensemble.members[0].workdir
    assert workdir is not None
    assert any(p.name.startswith("zoo.cfg.dynamic") for p in workdir.iterdir())
    for member in config.members:
        assert member.host == HOST
        assert member.quorum_port != member.election_port != member.client_port
        assert member.spec in config.raw


async def test_standalone_server_publishes_no_config_and_refuses_reconfig(
    zk_connect: ClientFactory,
) -> None:
    client = await zk_connect(auth=[SUPER_AUTH])
    assert await client.get_config() == EnsembleConfig((), -1, "")
    with pytest.raises(ReconfigDisabledError) as raised:
        await client.reconfig(leaving=[2])
    assert raised.value.op == "reconfig"


async def test_bad_reconfig_arguments_send_nothing(zk_connect: ClientFactory) -> None:
    client = await zk_connect()
    spec = absent_member(9)
    with pytest.raises(BadArgumentsError, match="cannot be combined"):
        await client.reconfig(joining=[spec], new_members=[spec])
    with pytest.raises(BadArgumentsError, match="needs joining"):
        await client.reconfig()
    assert session_of(client).sent[Op.RECONFIG] == 0


# --- reconfig ----------------------------------------------------------------------------------


@pytest.mark.ensemble
async def test_reconfig_adds_and_removes_an_observer_and_the_config_watch_fires(
    admin: Client,
) -> None:
    before, watch = await admin.get_config(watch=True)
    spec = absent_member(100)
    added = await admin.reconfig(joining=[spec])
    event = await asyncio.wait_for(watch, 10)
    assert event.type is EventType.DATA_CHANGED and event.path == "/zookeeper/config"
    assert added.ids == (1, 2, 3, 100)
    assert added.member(100).role == "observer"
    assert added.member(100).spec == spec
    assert added.version > before.version
    assert await committed(admin) == added
    # Conditional on the version just read, by member object rather than id.
    removed = await admin.reconfig(leaving=added.member(100), from_config=added.version)
    assert removed.ids == (1, 2, 3)
    assert removed.members == before.members
    assert (await committed(admin)).ids == (1, 2, 3)


@pytest.mark.ensemble
async def test_new_members_replaces_the_whole_membership(admin: Client) -> None:
    config = await committed(admin)
    grown = await admin.reconfig(new_members=[*config.members, absent_member(104)])
    assert grown.ids == (1, 2, 3, 104)
    back = await admin.reconfig(new_members=list(config.members), from_config=grown.version)
    assert back.members == config.members
    assert (await committed(admin)).ids == (1, 2, 3)


@pytest.mark.ensemble
async def test_reconfig_from_a_stale_version_is_refused(admin: Client) -> None:
    config = await committed(admin)
    with pytest.raises(BadVersionError):
        await admin.reconfig(joining=absent_member(101), from_config=config.version - 1)
    assert await committed(admin) == config


@pytest.mark.ensemble
async def test_new_members_no_quorum_can_serve_is_refused(admin: Client) -> None:
    config = await committed(admin)
    nobody = [absent_member(i, "participant") for i in (201, 202, 203)]
    with pytest.raises(NewConfigNoQuorumError):
        await admin.reconfig(new_members=nobody)
    assert await committed(admin) == config


@pytest.mark.ensemble
async def test_reconfig_needs_the_super_user(zookeeper_ensemble: ZooKeeperEnsemble) -> None:
    async with await connect(zookeeper_ensemble.connect_string) as client:
        config = await committed(client)
        with pytest.raises(NoAuthError):
            await client.reconfig(joining=absent_member(102))
        assert await committed(client) == config


# --- the test ensemble's add_member / remove_member ---------------------------------------------


@pytest.mark.ensemble
async def test_ensemble_adds_a_member_that_serves_and_removes_it(
    zookeeper_ensemble: ZooKeeperEnsemble, admin: Client
) -> None:
    ensemble = zookeeper_ensemble
    path = f"/reconfig-{uuid.uuid4().hex}"
    await admin.create(path, b"before")
    added_id = await asyncio.to_thread(ensemble.add_member)
    try:
        index = ensemble.index_of_id(added_id)
        assert added_id == 4 and index == 3
        assert ensemble.modes()[index] == "follower"
        config = await committed(admin)
        assert config.ids == (1, 2, 3, 4)
        member = config.member(4)
        assert member.role == "participant"
        assert member.client_address == ensemble.member_connect_string(index)
        # The new member serves the ensemble's data, written before it joined.
        async with await connect(ensemble.member_connect_string(index)) as client:
            assert (await client.get(path))[0] == b"before"
    finally:
        await asyncio.to_thread(ensemble.remove_member, added_id)
    assert len(ensemble.members) == 3
    assert [ensemble.member_id(i) for i in range(3)] == [1, 2, 3]
    assert (await committed(admin)).ids == (1, 2, 3)
    await admin.delete(path)


@pytest.mark.ensemble
async def test_ensemble_adds_an_observer(
    zookeeper_ensemble: ZooKeeperEnsemble, admin: Client
) -> None:
    ensemble = zookeeper_ensemble
    added_id = await asyncio.to_thread(ensemble.add_member, observer=True)
    try:
        assert ensemble.modes()[ensemble.index_of_id(added_id)] == "observer"
        config = await committed(admin)
        assert config.observers == (config.member(added_id),)
        assert len(config.participants) == 3
    finally:
        await asyncio.to_thread(ensemble.remove_member, added_id)
    assert (await committed(admin)).observers == ()


# --- the ensemble tracker --------------------------------------------------------------------


@pytest.mark.ensemble
async def test_tracker_learns_the_members_and_the_session_outlives_the_first_one(
    zookeeper_ensemble: ZooKeeperEnsemble,
) -> None:
    ensemble = zookeeper_ensemble
    everyone = {ensemble.member_connect_string(i) for i in range(3)}
    first = ensemble.member_connect_string(0)
    client = await connect(first, track_ensemble=True, session_timeout=10)
    path = f"/tracked-{uuid.uuid4().hex}"
    try:
        tracker = client.ensemble_tracker
        assert tracker is not None and tracker.config is not None
        # Learned before connect returned.
        assert set(tracker.servers) == everyone
        assert {str(s) for s in session_of(client).servers} == everyone
        assert str(session_of(client).server) == first
        await client.create(path, b"kept")
        session_id = client.session_id
        # A listener, not state_changes(): that stream starts listening only when first
        # iterated, which would be after the stop.
        seen: list[StateChange] = []
        reconnected: asyncio.Future[StateChange] = asyncio.get_running_loop().create_future()

        def on_change(change: StateChange) -> None:
            seen.append(change)
            if change.state is State.RECONNECTED and not reconnected.done():
                reconnected.set_result(change)

        client.add_state_listener(on_change)
        await asyncio.to_thread(ensemble.stop, 0)
        change = await asyncio.wait_for(reconnected, 30)
        assert [c.state for c in seen] == [State.SUSPENDED, State.RECONNECTED]
        assert not change.new_session
        assert client.session_id == session_id
        assert str(session_of(client).server) in everyone - {first}
        assert (await client.get(path))[0] == b"kept"
    finally:
        await asyncio.to_thread(ensemble.start, 0)
        try:
            await client.delete(path)
        finally:
            await client.close()


@pytest.mark.ensemble
async def test_tracker_follows_members_added_and_removed(
    zookeeper_ensemble: ZooKeeperEnsemble,
) -> None:
    ensemble = zookeeper_ensemble
    async with await connect(ensemble.member_connect_string(0), track_ensemble=True) as client:
        tracker = client.ensemble_tracker
        assert tracker is not None and tracker.config is not None
        before = tracker.config
        added_id = await asyncio.to_thread(ensemble.add_member)
        try:
            grown = await tracker.wait_newer(before.version, timeout=30)
            assert grown.ids == (1, 2, 3, added_id)
            new_address = ensemble.member_connect_string(ensemble.index_of_id(added_id))
            assert new_address in tracker.servers and len(tracker.servers) == 4
        finally:
            await asyncio.to_thread(ensemble.remove_member, added_id)
        shrunk = await tracker.wait_newer(grown.version, timeout=30)
        assert shrunk.ids == (1, 2, 3)
        assert set(tracker.servers) == {ensemble.member_connect_string(i) for i in range(3)}


@pytest.mark.ensemble
async def test_tracker_moves_off_a_member_removed_by_reconfig(
    zookeeper_ensemble: ZooKeeperEnsemble, admin: Client
) -> None:
    ensemble = zookeeper_ensemble
    added_id = await asyncio.to_thread(ensemble.add_member)
    try:
        added = ensemble.member_connect_string(ensemble.index_of_id(added_id))
        async with await connect(added, track_ensemble=True) as client:
            assert str(session_of(client).server) == added
            session_id = client.session_id
            reconnected: asyncio.Future[StateChange] = asyncio.get_running_loop().create_future()

            def on_change(change: StateChange) -> None:
                if change.state is State.RECONNECTED and not reconnected.done():
                    reconnected.set_result(change)

            client.add_state_listener(on_change)
            # The removed server goes on serving outside the ensemble; the client leaves it.
            await admin.reconfig(leaving=added_id)
            change = await asyncio.wait_for(reconnected, 30)
            assert not change.new_session and client.session_id == session_id
            remaining = {ensemble.member_connect_string(i) for i in range(3)}
            assert str(session_of(client).server) in remaining
            tracker = client.ensemble_tracker
            assert tracker is not None and set(tracker.servers) == remaining
    finally:
        # Out of the configuration already: this only stops the server.
        await asyncio.to_thread(ensemble.remove_member, added_id)
    assert len(ensemble.members) == 3


@pytest.mark.ensemble
async def test_tracker_follows_on_in_a_new_session_after_expiry(
    zookeeper_ensemble: ZooKeeperEnsemble, admin: Client
) -> None:
    ensemble = zookeeper_ensemble
    async with await connect(ensemble.member_connect_string(2), track_ensemble=True) as client:
        tracker = client.ensemble_tracker
        assert tracker is not None and tracker.config is not None
        before = tracker.config
        # The session's watches die with it; the tracker must set its watch again.
        await expire_client(client, ensemble.connect_string)
        spec = absent_member(103)
        added = await admin.reconfig(joining=spec)
        assert (await tracker.wait_newer(before.version, timeout=30)).ids == added.ids
        assert added.member(103).client_address in tracker.servers
        removed = await admin.reconfig(leaving=103)
        assert (await tracker.wait_newer(added.version, timeout=30)).ids == removed.ids
        assert set(tracker.servers) == {ensemble.member_connect_string(i) for i in range(3)}


async def test_tracker_keeps_the_connect_string_of_a_standalone_server(
    zk_connect: ClientFactory,
) -> None:
    with pytest.raises(InvalidTypeError, match="track_ensemble"):
        await zk_connect(track_ensemble="yes")
    client = await zk_connect(track_ensemble=True)
    tracker = client.ensemble_tracker
    assert tracker is not None and tracker.config == EnsembleConfig((), -1, "")
    assert tracker.servers == [str(s) for s in session_of(client).servers]
    assert len(tracker.servers) == 1
    assert await tracker.wait_newer(-2) is tracker.config
    with pytest.raises(CoordTimeoutError):
        await tracker.wait_newer(-1, timeout=0.05)


# --- the reconfiguration guide's blocks that need an ensemble ----------------------------------

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "reconfig.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
ADDRESS = "127.0.0.1:2181"


def ensemble_blocks() -> list[tuple[str, str, str]]:
    """(where, code, expected output) of every Python block of the guide that the doc-block
    test leaves to this module (its ``not run`` note names this file)."""
    text = GUIDE.read_text()
    blocks = list(FENCE.finditer(text))
    out: list[tuple[str, str, str]] = []
    for i, match in enumerate(blocks):
        before = text[: match.start()].rstrip().splitlines()
        if match.group(1) != "python" or "test_reconfig.py runs it" not in before[-1]:
            continue
        following = blocks[i + 1]
        assert following.group(1) == "text", "each block shows what it prints"
        line = text[: match.start()].count("\n") + 1
        out.append((f"docs/reconfig.md:{line}", match.group(2), following.group(2)))
    return out


def _shape(line: str) -> str:
    return re.sub(r"\d+", "N", line.strip())


@pytest.mark.ensemble
@pytest.mark.parametrize(
    ("where", "code", "expected"), [pytest.param(*b, id=b[0]) for b in ensemble_blocks()]
)
def test_guide_block_runs_against_an_ensemble(
    zookeeper_ensemble: ZooKeeperEnsemble, where: str, code: str, expected: str, tmp_path: Path
) -> None:
    script = tmp_path / "block.py"
    # Pointed at one member: the tracker's block shows it learning the other two.
    script.write_text(code.replace(ADDRESS, zookeeper_ensemble.member_connect_string(0)))
    # Run twice where it uses the shared ensemble (a re-run must work too); a block that
    # starts an ensemble of its own runs once.
    for _ in range(2 if ADDRESS in code else 1):
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{where} failed:\n{done.stdout}\n{done.stderr}"
        assert [_shape(x) for x in done.stdout.splitlines()] == [
            _shape(x) for x in expected.splitlines()
        ], f"{where} printed:\n{done.stdout}"
