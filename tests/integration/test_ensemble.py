"""A 3-member ensemble: one leader, and writes go on after the leader is killed."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiozk
import pytest

from aiocoord.testing import ZooKeeperEnsemble

pytestmark = pytest.mark.ensemble
T = TypeVar("T")


async def retried(op: Callable[[], Awaitable[T]], timeout: float) -> T:
    """Run ``op`` until it succeeds, as any client would across a leader election."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            return await op()
        except (TimeoutError, aiozk.exc.ZKError):
            if asyncio.get_running_loop().time() > deadline:
                raise


def test_ensemble_has_one_leader_and_addresses_per_member(
    zookeeper_ensemble: ZooKeeperEnsemble,
) -> None:
    ensemble = zookeeper_ensemble
    modes = ensemble.modes()
    assert sorted(modes, key=str) == ["follower", "follower", "leader"]
    assert modes[ensemble.leader()] == "leader"
    assert ensemble.connect_string == ",".join(ensemble.member_connect_string(i) for i in range(3))
    for i, member in enumerate(ensemble.members):
        assert ensemble.index_of_port(ensemble.member_port(i)) == i
        assert member.connect_string == f"127.0.0.1:{member.port}"
    assert len({m.port for m in ensemble.members}) == 3


async def test_writes_continue_after_the_leader_is_killed(
    zookeeper_ensemble: ZooKeeperEnsemble,
) -> None:
    ensemble = zookeeper_ensemble
    root = f"/failover-{uuid.uuid4().hex}"
    # aiozk notices a lost connection only after its session timeout: keep that short.
    client = aiozk.ZKClient(ensemble.connect_string, session_timeout=3)
    await client.start()
    old_leader = ensemble.leader()
    try:
        await client.create(root, b"before")
        await asyncio.to_thread(ensemble.kill, old_leader)
        new_leader = await asyncio.to_thread(ensemble.wait_for_quorum, 30)
        assert new_leader != old_leader
        assert ensemble.modes()[old_leader] is None
        await retried(lambda: client.set_data(root, b"after", force=True), 30)
        assert await client.get_data(root) == b"after"
    finally:
        await asyncio.to_thread(ensemble.restart, old_leader)
        try:
            await client.delete(root)
        finally:
            await client.close()
    # The killed member came back as a follower and caught up.
    assert ensemble.modes()[old_leader] == "follower"
    member = aiozk.ZKClient(ensemble.member_connect_string(old_leader), session_timeout=10)
    await member.start()
    try:
        assert await member.exists(root) is False
    finally:
        await member.close()
