"""Fixtures of the chaos tests: a seeded log per test and a cluster in a fresh namespace.

The seed is printed at the start of every test (pytest shows it with the output of a failing
test) and named in every failure message; ``AIOCOORD_CHAOS_SEED=<seed>`` replays it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from chaoslib import SEED_ENV, Chaos, Cluster

from aiocoord.testing import ZooKeeperEnsemble


@pytest.fixture
def chaos(request: pytest.FixtureRequest) -> Chaos:
    """This test's log, seeded from ``$AIOCOORD_CHAOS_SEED`` or at random."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:60]
    log = Chaos(name=name)
    print(f"chaos seed={log.seed} ({SEED_ENV}={log.seed} replays it)")
    return log


@pytest_asyncio.fixture
async def cluster(zookeeper_ensemble: ZooKeeperEnsemble, chaos: Chaos) -> AsyncIterator[Cluster]:
    """The shared ensemble, every member up, and a namespace of this test's own."""
    c = await Cluster(zookeeper_ensemble, chaos).start()
    try:
        yield c
    finally:
        await c.aclose()
