"""The aiocoord pytest plugin (a ``pytest11`` entry point, so it loads by itself).

Fixtures:

* ``zookeeper`` (session): a serving ZooKeeper of the selected backend
  (``AIOCOORD_ZK_BACKEND=auto|local|docker|external``), with ``.connect_string``;
* ``zookeeper_ensemble`` (session): a 3-member :class:`~aiocoord.testing.ZooKeeperEnsemble`,
  local backend only (skipped otherwise);
* ``zk_fault_proxy`` (function, async): a started :class:`~aiocoord.testing.FaultProxy` in
  front of ``zookeeper``.

Session-scoped fixtures are synchronous on purpose: they need no event loop, so they work
with any pytest-asyncio loop scope. pytest loads this plugin in every run of every project
where aiocoord is installed, so loading it costs next to nothing: it imports no more of
aiocoord than the fixture definitions (each fixture imports what it uses when first used;
tests/unit/test_plugin_load.py holds the budget) and does no I/O: JVMs left by killed runs
are swept when a server is first started.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest

from aiocoord.testing._client_fixtures import async_fixture, zk_client, zk_connect, zk_namespace

if TYPE_CHECKING:
    from aiocoord.testing._backend import ServerHandle
    from aiocoord.testing.faults import FaultProxy
    from aiocoord.testing.server import ZooKeeperEnsemble


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers the fixtures' users put on their tests."""
    config.addinivalue_line("markers", "docker: needs a Docker engine (skipped where none answers)")
    config.addinivalue_line("markers", "ensemble: needs a 3-member ZooKeeper ensemble")


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ServerHandle]:
    """A serving ZooKeeper shared by the whole test session; closed at its end."""
    from aiocoord.testing._backend import start_server

    server = start_server()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def zookeeper_ensemble() -> Iterator[ZooKeeperEnsemble]:
    """A 3-member ensemble shared by the session, reconfigurable (``add_member()``,
    ``remove_member(id)``). Tests that kill or stop members must start them again
    (``restart(i)``), and remove the members they add, before they end."""
    from aiocoord.errors import ServerSetupError
    from aiocoord.testing._backend import select_backend
    from aiocoord.testing.server import ZooKeeperEnsemble

    try:
        backend = select_backend()
    except ServerSetupError as exc:
        pytest.skip(f"zookeeper_ensemble: {exc}")
    if backend != "local":
        pytest.skip(f"zookeeper_ensemble needs the local backend, not {backend!r}")
    with ZooKeeperEnsemble(3) as ensemble:
        yield ensemble


@async_fixture
async def zk_fault_proxy(zookeeper: ServerHandle) -> AsyncIterator[FaultProxy]:
    """A started :class:`FaultProxy` in front of ``zookeeper``; closed after the test."""
    from aiocoord.testing.faults import FaultProxy

    async with FaultProxy(zookeeper.host, zookeeper.port) as proxy:
        yield proxy


__all__ = [
    "zk_client",
    "zk_connect",
    "zk_fault_proxy",
    "zk_namespace",
    "zookeeper",
    "zookeeper_ensemble",
]

# Shown as the plugin's (where users' conftest files name them), not the private module's; the
# plugin's import budget (tests/unit/test_plugin_load.py) leaves no room for aiocoord._shown.
for _fixture in (zk_client, zk_connect, zk_namespace):
    _fixture.__module__ = __name__
