"""Fixtures of the integration layer that more than one module uses (servers come from the
aiocoord pytest plugin; helpers that are not fixtures live in ``support``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support import Factory


@pytest.fixture
async def kazoo(zookeeper: Any, zk_connect: Factory, zk_namespace: str) -> AsyncIterator[Any]:
    """A started KazooClient (kazoo 2.x, a test dependency) chrooted to the test's namespace
    (made by zk_connect). kazoo is synchronous: call it through ``asyncio.to_thread``."""
    kazoo_client = pytest.importorskip("kazoo.client", reason="kazoo is not installed")
    await zk_connect()
    client = kazoo_client.KazooClient(hosts=zookeeper.connect_string + zk_namespace)
    await asyncio.to_thread(client.start, 10)
    yield client
    await asyncio.to_thread(client.stop)
    await asyncio.to_thread(client.close)
