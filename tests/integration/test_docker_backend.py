"""The Docker backend: the official image, a round trip, and its removal."""

from __future__ import annotations

import pytest

from aiocoord.testing import docker_available, raw_session
from aiocoord.testing._docker import DockerZooKeeperServer

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not docker_available(), reason="no Docker engine answers"),
]


async def test_docker_server_serves_a_round_trip() -> None:
    with DockerZooKeeperServer() as server:
        assert "Mode: standalone" in server.four_letter("srvr")
        session = await raw_session(server.connect_string)
        assert session.session_id != 0
        session.writer.close()
        await session.writer.wait_closed()
