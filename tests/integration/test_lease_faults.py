"""NonBlockingLease under faults against a real server: a cut link during an obtain, a lease
across a forced expiry, a holder node written by someone hostile."""

from __future__ import annotations

import asyncio
import datetime
import json
from typing import Any

import pytest
from support import Factory, child_names

from aiocoord import State
from aiocoord.recipes.lease import LeaseDataError, NonBlockingLease
from aiocoord.testing import FaultProxy, expire_client

T0 = datetime.datetime(2026, 11, 25, 22, 0, 0)
MINUTE = datetime.timedelta(minutes=1)

#: The failure-semantics rows of the lease table (docs/recipes/partitioning.md) and of the
#: overview (docs/recipes.md), with the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/partitioning.md | Failure semantics of leases | Connection lost (SUSPENDED)": [
        "test_a_lease_is_held_through_a_cut_link_and_an_obtain_under_way_finishes_after_it",
        "test_lease.py::test_renewal_whose_reply_is_lost_is_found_applied",
    ],
    "recipes/partitioning.md | Failure semantics of leases | Session expired (LOST)": [
        "test_a_lease_stays_held_across_an_expiry_of_its_holders_session",
    ],
    "recipes/partitioning.md | Failure semantics of leases | Cancellation": [
        "test_lease.py::test_cancelled_obtain_leaves_no_lock_node",
    ],
    "recipes/partitioning.md | Failure semantics of leases | Timeout": [
        "test_lease.py::test_waits_for_a_kazoo_lock_holder_and_leaves_nothing_on_timeout",
    ],
    "recipes/partitioning.md | Failure semantics of leases | A holder node in another format": [
        "test_lease.py::test_kazoo_records_are_honoured",
        "test_a_hostile_holder_record_is_a_lease_data_error",
    ],
    "recipes.md | Failure semantics: what SUSPENDED and LOST do | "
    "`NonBlockingLease`, `MultiNonBlockingLease`": [
        "test_a_lease_is_held_through_a_cut_link_and_an_obtain_under_way_finishes_after_it",
        "test_a_lease_stays_held_across_an_expiry_of_its_holders_session",
    ],
}


def _clock(now: datetime.datetime = T0) -> Any:
    return lambda: now


async def test_a_lease_is_held_through_a_cut_link_and_an_obtain_under_way_finishes_after_it(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    other = await zk_connect()
    mine = NonBlockingLease(client, "/faults/lease", MINUTE, identifier="a", utcnow=_clock())
    assert await mine.obtain(timeout=10)
    # The obtain's short-lived lock is deleted in the background: let that land first, or the
    # other client would wait for the lock node of a session nobody hears from.
    await client.wait_background()
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    # Cut off, the lease is still ours: another identifier cannot take it.
    theirs = NonBlockingLease(other, "/faults/lease", MINUTE, identifier="b", utcnow=_clock())
    assert not await theirs.obtain(timeout=10)
    # A renewal started while cut off goes on once the link is back.
    later = _clock(T0 + datetime.timedelta(seconds=30))
    renewing = NonBlockingLease(client, "/faults/lease", MINUTE, identifier="a", utcnow=later)
    task = asyncio.ensure_future(renewing.obtain(timeout=20))
    zk_fault_proxy.heal()
    assert await task
    holder = await theirs.holder()
    assert holder is not None and holder.identifier == "a"
    data, stat = await other.get("/faults/lease/lease_holder")
    assert json.loads(data)["end"] == "2026-11-25T22:01:30"
    assert stat.version == 1  # one renewal, applied once
    await client.wait_background()
    assert [n for n in await child_names(other, "/faults/lease") if "__lock__" in n] == []


async def test_a_lease_stays_held_across_an_expiry_of_its_holders_session(
    zk_connect: Factory, zookeeper: Any
) -> None:
    client, other = await zk_connect(session_timeout=4), await zk_connect()
    mine = NonBlockingLease(client, "/faults/lease-exp", MINUTE, identifier="a", utcnow=_clock())
    assert await mine.obtain(timeout=10)
    await expire_client(client, zookeeper.connect_string)
    theirs = NonBlockingLease(other, "/faults/lease-exp", MINUTE, identifier="b", utcnow=_clock())
    assert not await theirs.obtain(timeout=10)
    # The holder renews on its new session.
    assert await mine.obtain(timeout=10)
    holder = await theirs.holder()
    assert holder is not None and holder.identifier == "a"


async def test_a_hostile_holder_record_is_a_lease_data_error(zk_connect: Factory) -> None:
    """Valid JSON nested 1,000 deep, written by someone else: a typed error, not a crash of
    the decoder (issue 26, item 3)."""
    client, admin = await zk_connect(), await zk_connect()
    await admin.create(
        "/faults/lease-bad/lease_holder", b"[" * 1000 + b"]" * 1000, make_parents=True
    )
    lease = NonBlockingLease(client, "/faults/lease-bad", MINUTE, identifier="a", utcnow=_clock())
    with pytest.raises(LeaseDataError):
        await lease.obtain(timeout=10)
    with pytest.raises(LeaseDataError):
        await lease.holder()
    await client.wait_background()
    assert [n for n in await child_names(admin, "/faults/lease-bad") if "__lock__" in n] == []
