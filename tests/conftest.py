"""Shared test set-up. Server fixtures come from the aiocoord pytest plugin (pytest11).

Every test fails if asyncio logged a write to a dead socket while it ran ("socket.send()
raised exception."): a request was handed to a transport that could no longer send it, and
it must have been refused as NotSentError instead.

The Java peers (``tests/integration/java``) come compiled from ``curator_peers``, once for
each Curator version of ``support.CURATOR_VERSIONS`` (a test that takes it runs for each),
or from ``java_peers`` where Curator's version changes nothing; ``curator_process`` is
one of them running, CuratorRecipesPeer, for the tests it answers requests of.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from types import TracebackType
from typing import Any

import pytest
from support import (
    CURATOR_VERSIONS,
    JavaPeers,
    build_java_peers,
    running_java_peer,
    wanted_curators,
)

DEAD_SOCKET_WRITE = "socket.send() raised exception"


class _DeadWrites(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if DEAD_SOCKET_WRITE in message:
            self.seen.append(message)


_DEAD_WRITES = _DeadWrites()
logging.getLogger("asyncio").addHandler(_DEAD_WRITES)


@pytest.fixture(autouse=True)
def _no_write_to_a_dead_socket() -> Iterator[None]:
    start = len(_DEAD_WRITES.seen)
    yield
    seen = _DEAD_WRITES.seen[start:]
    if seen:
        pytest.fail(f"asyncio wrote to a dead socket during this test: {seen[0]!r}")


@pytest.fixture(scope="session")
def _java_peer_builds(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], JavaPeers]:
    """The peers compiled for a Curator version, once a session (a failure too)."""
    builds: dict[str, JavaPeers] = {}
    failures: dict[str, tuple[BaseException, TracebackType | None]] = {}

    def build(version: str) -> JavaPeers:
        if version not in builds and version not in failures:
            try:
                builds[version] = build_java_peers(version, tmp_path_factory.mktemp("java-peers"))
            except BaseException as exc:  # pytest's skip and fail are BaseExceptions
                failures[version] = (exc, exc.__traceback__)
        if version in failures:
            exc, first = failures[version]
            raise exc.with_traceback(first)  # the first raise's traceback, not grown each time
        return builds[version]

    return build


@pytest.fixture(params=CURATOR_VERSIONS, ids=lambda version: f"curator-{version}")
def curator_peers(
    request: pytest.FixtureRequest, _java_peer_builds: Callable[[str], JavaPeers]
) -> JavaPeers:
    """The Java peers on each Curator version: a test that takes this runs once for each."""
    return _java_peer_builds(request.param)


@pytest.fixture(scope="session")
def java_peers(_java_peer_builds: Callable[[str], JavaPeers]) -> JavaPeers:
    """The Java peers on one Curator version (the first wanted), for what Curator's version
    does not change: ZooKeeper's digest, Jackson's bytes."""
    wanted = wanted_curators()
    if not wanted:
        pytest.skip("AIOCOORD_CURATOR_VERSIONS=none: no Java peers")
    return _java_peer_builds(wanted[0])


@pytest.fixture
async def curator_process(
    curator_peers: JavaPeers, zookeeper: Any, zk_namespace: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """CuratorRecipesPeer running on each Curator version, connected under the test's
    namespace (its requests: ``support.ask_running_peer``)."""
    command = curator_peers.command("CuratorRecipesPeer")
    async with running_java_peer(command, zookeeper.connect_string + zk_namespace) as peer:
        yield peer
