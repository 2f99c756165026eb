"""Client fixtures of the pytest plugin: connected clients isolated under a unique namespace.

Like the plugin, this module imports no more of aiocoord at load than its type names (for the
type checker only): a fixture imports the client when it is first used."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

if TYPE_CHECKING:
    from aiocoord.client import Client

_F = TypeVar("_F", bound=Callable[..., Any])


def _async_fixture_decorator() -> Callable[[Any], Any]:
    try:
        import pytest_asyncio
    except ImportError:
        return pytest.fixture
    return pytest_asyncio.fixture


_DECORATE = _async_fixture_decorator()


def async_fixture(func: _F) -> _F:
    """Declare an async fixture: with pytest-asyncio's decorator where it is installed (it
    runs async fixtures in strict mode too), else with pytest's own (anyio's pytest plugin
    runs async fixtures of ``@pytest.mark.anyio`` tests). Importing the plugin thus never
    needs pytest-asyncio, and is harmless in a project that does not use it."""
    return cast(_F, _DECORATE(func))


#: Every test namespace lives under this node, so a crashed run's leftovers are easy to find.
NAMESPACE_ROOT = "/aiocoord-test"

ClientFactory = Callable[..., Awaitable["Client"]]


@pytest.fixture
def zk_namespace(request: pytest.FixtureRequest) -> str:
    """A chroot unique to this test, e.g. ``/aiocoord-test/test_lock_1a2b3c4d``."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:80]
    return f"{NAMESPACE_ROOT}/{name}-{uuid.uuid4().hex[:8]}"


@async_fixture
async def zk_connect(zookeeper: Any, zk_namespace: str) -> AsyncIterator[ClientFactory]:
    """A factory of clients, each with its own session, chrooted to :func:`zk_namespace`.

    ``await zk_connect(connect_string=None, **options)``: ``connect_string`` defaults to the
    ``zookeeper`` server; pass a FaultProxy's to put faults between the client and the server.
    The namespace is created first and removed, with everything under it, afterwards.
    """
    from aiocoord._connect import open_client
    from aiocoord.testing.server import SUPER_AUTH

    clients: list[Client] = []
    # The superuser can remove whatever a test left, whatever ACL it set.
    admin = await open_client(zookeeper.connect_string, session_timeout=10, auth=[SUPER_AUTH])
    await admin.ensure_path(zk_namespace)

    async def factory(connect_string: str | None = None, **options: Any) -> Client:
        options.setdefault("session_timeout", 10.0)
        client = await open_client(
            (connect_string or zookeeper.connect_string) + zk_namespace, **options
        )
        clients.append(client)
        return client

    try:
        yield factory
    finally:
        for client in clients:
            await client.close()
        await admin.delete(zk_namespace, recursive=True)
        await admin.close()


@async_fixture
async def zk_client(zk_connect: ClientFactory) -> Client:
    """A connected :class:`aiocoord.Client` chrooted to this test's namespace."""
    return await zk_connect()
