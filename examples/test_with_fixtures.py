"""How your own pytest suite tests code that uses ZooKeeper: aiocoord's fixtures.

Installing aiocoord registers its pytest plugin (no conftest needed). The fixtures start a
*real* ZooKeeper (a local JVM; or Docker, or your own with ``AIOCOORD_ZK_BACKEND=external``)
once per test session, give each test its own namespace, and put faults between your code
and the server. The ``pytestmark`` line below marks every test of this file for
pytest-asyncio, so the file runs as it is in a project with pytest-asyncio's default (strict)
mode as well as in one with ``asyncio_mode = "auto"`` (docs/testing.md shows both set-ups).

* ``zk_client``: a connected client, chrooted to a namespace unique to the test and removed
  after it;
* ``zk_connect``: ``await zk_connect(connect_string=None, **options)`` makes more clients,
  each with its own session, under the same namespace (pass a proxy's connect string to put
  faults in their way);
* ``zk_fault_proxy``: a TCP proxy in front of the server: ``drop()`` cuts every connection,
  ``blackhole()``/``heal()`` partition and heal, ``latency(s)`` slows, ``drop_after_request()``
  loses the next reply;
* ``zookeeper``: the server (``.connect_string``, ``.four_letter("mntr")``, ``.restart()``);
  ``zookeeper_ensemble``: a 3-member quorum (``.kill(i)``, ``.restart(i)``, ``.leader()``);
* ``aiocoord.testing.expire_session(...)`` expires a session on the server, for real.

Wait for events, never for time: every wait below has a deadline and returns as soon as
what it waits for has happened.

Run with ``pytest examples/test_with_fixtures.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

import aiocoord
from aiocoord.testing import FaultProxy, ServerHandle, expire_session, session_of

# Strict mode (pytest-asyncio's default) runs only the async tests marked for it.
pytestmark = pytest.mark.asyncio

#: The type of the ``zk_connect`` fixture.
ClientFactory = Callable[..., Awaitable[aiocoord.Client]]

# --- the code under test: a tiny service that keeps one job from running twice -------------


class ReportJob:
    """Runs the nightly report, at most one copy at a time across all processes."""

    def __init__(self, client: aiocoord.Client) -> None:
        self.lock = aiocoord.Lock(client, "/jobs/nightly-report")
        self.runs = 0

    async def run_once(self, *, wait: float = 5.0) -> bool:
        """Run the job if no one else is running it within ``wait`` seconds."""
        try:
            async with self.lock.acquired(timeout=wait):
                self.runs += 1
                return True
        except aiocoord.TimeoutError:
            return False


# --- the tests ----------------------------------------------------------------------------


async def test_job_runs_when_nobody_else_holds_the_lock(zk_client: aiocoord.Client) -> None:
    job = ReportJob(zk_client)
    assert await job.run_once()
    assert job.runs == 1


async def test_second_process_waits_for_the_first(zk_connect: ClientFactory) -> None:
    # Two clients, two sessions: as two processes would have.
    first, second = await zk_connect(), await zk_connect()
    holder = aiocoord.Lock(first, "/jobs/nightly-report", identifier="first")
    await holder.acquire()
    job = ReportJob(second)
    assert not await job.run_once(wait=0.2)  # the first process holds it
    await holder.release()
    assert await job.run_once()


async def test_lock_survives_a_dropped_connection(
    zk_connect: ClientFactory,
    zk_fault_proxy: FaultProxy,
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string)
    lock = aiocoord.Lock(client, "/jobs/nightly-report")
    await lock.acquire()
    reconnected = asyncio.ensure_future(client.wait_for(aiocoord.State.RECONNECTED))
    zk_fault_proxy.drop()  # the network blips: the connection is cut, the session lives on
    await asyncio.wait_for(reconnected, 10)
    assert lock.is_held and not lock.lost.is_set()
    await lock.release()


async def test_lock_is_lost_when_the_session_expires(
    zk_connect: ClientFactory,
    zookeeper: ServerHandle,
) -> None:
    client = await zk_connect()
    lock = aiocoord.Lock(client, "/jobs/nightly-report")
    await lock.acquire()
    await expire_session(client.session_id, session_of(client).password, zookeeper.connect_string)
    assert await lock.lost.wait(timeout=10) is aiocoord.State.LOST
    assert not lock.is_held
    # Another process can take the lock now: the expired session's node is gone.
    other = ReportJob(await zk_connect())
    assert await other.run_once()


async def test_a_cut_reply_is_not_a_second_run(
    zk_connect: ClientFactory,
    zk_fault_proxy: FaultProxy,
) -> None:
    # The server applies the create, the reply is lost: the client finds its own protected
    # node after the reconnect instead of creating a second one.
    client = await zk_connect(zk_fault_proxy.connect_string)
    await client.ensure_path("/jobs")
    lost_reply = zk_fault_proxy.drop_after_request()
    path = await client.create("/jobs/claim-", b"", sequential=True, protected=True)
    await lost_reply.wait(timeout=5)  # the fault did happen
    names = await client.children("/jobs")
    assert names == [path.rsplit("/", 1)[1]]


async def test_cache_sees_a_member_join(zk_connect: ClientFactory) -> None:
    watcher, member = await zk_connect(), await zk_connect()
    async with aiocoord.ChildrenCache(watcher, "/members") as cache:
        await member.create("/members/worker-1", b"", ephemeral=True, make_parents=True)
        children = await cache.wait_for(lambda c: "worker-1" in c, timeout=10)
        assert set(children) == {"worker-1"}
