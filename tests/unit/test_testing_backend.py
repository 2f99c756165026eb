"""Backend selection: explicit choices, the external backend's contract, and a quick auto."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiocoord.errors import PortInUseError, ServerSetupError
from aiocoord.testing import (
    ExternalServer,
    ZooKeeperServer,
    docker_available,
    select_backend,
    start_server,
)


def test_explicit_backends_are_taken_as_given() -> None:
    assert select_backend("local", {}) == "local"
    assert select_backend(None, {"AIOCOORD_ZK_BACKEND": "Local"}) == "local"
    assert select_backend("docker", {}) == "docker"  # asked for: not second-guessed


def test_unknown_backend_names_the_choices() -> None:
    with pytest.raises(ServerSetupError, match="auto, local, docker, external"):
        select_backend(None, {"AIOCOORD_ZK_BACKEND": "podman"})


def test_external_backend_requires_a_connect_string() -> None:
    with pytest.raises(ServerSetupError, match="AIOCOORD_ZK_CONNECT"):
        select_backend("external", {})
    env = {"AIOCOORD_ZK_BACKEND": "external", "AIOCOORD_ZK_CONNECT": "10.0.0.1:2181,10.0.0.2:2181"}
    assert select_backend(None, env) == "external"


def test_external_server_is_used_not_stopped() -> None:
    env = {"AIOCOORD_ZK_BACKEND": "external", "AIOCOORD_ZK_CONNECT": "zk1:2181,zk2:2182/chroot"}
    server = start_server(environ=env)
    assert isinstance(server, ExternalServer)
    assert (server.connect_string, server.host, server.port) == ("zk1:2181,zk2:2182", "zk1", 2181)
    for refused in (server.stop, server.kill, server.restart):
        with pytest.raises(ServerSetupError, match=r"cannot \w+ an external server"):
            refused()
    server.close()  # nothing to do, and no error


def test_auto_is_local_at_once_without_docker(tmp_path: Path) -> None:
    began = time.monotonic()
    assert select_backend("auto", {"DOCKER_HOST": f"unix://{tmp_path}/docker.sock"}) == "local"
    assert time.monotonic() - began < 0.5


def test_auto_gives_up_on_a_silent_engine_within_a_second_or_so(tmp_path: Path) -> None:
    path = str(tmp_path / "d.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.bind(path)
        silent.listen(1)  # connects succeed (backlog), nothing ever answers
        began = time.monotonic()
        assert select_backend("auto", {"DOCKER_HOST": f"unix://{path}"}) == "local"
        assert time.monotonic() - began < 3


@pytest.fixture
def fake_engine(tmp_path: Path) -> Iterator[str]:
    """A unix socket answering Docker's ping the way an engine does."""
    path = str(tmp_path / "engine.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield f"unix://{path}"
    thread.join(5)
    listener.close()


def test_auto_picks_docker_when_an_engine_answers(fake_engine: str) -> None:
    assert select_backend("auto", {"DOCKER_HOST": fake_engine}) == "docker"


def test_docker_ping_never_raises() -> None:
    assert not docker_available({"DOCKER_HOST": "ssh://somewhere"})
    assert not docker_available({"DOCKER_HOST": "tcp://127.0.0.1:1"})


def test_explicit_port_in_use_is_refused_before_starting() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        server = ZooKeeperServer(port=port)
        with pytest.raises(PortInUseError, match=str(port)):
            server.start()
        assert not server.is_running
        assert server.workdir is None  # nothing was set up
