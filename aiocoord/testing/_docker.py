"""The Docker backend: the official ``zookeeper`` image, run through testcontainers.

testcontainers is imported only when a container is started, so the rest of
``aiocoord.testing`` works without it.
"""

from __future__ import annotations

import time
from typing import Any

from aiocoord.errors import ServerNotReadyError, ServerSetupError
from aiocoord.testing._lifecycle import StartClose
from aiocoord.testing._process import server_mode
from aiocoord.testing._zkserver import TEST_SERVER_PROPERTIES

__all__ = ["DEFAULT_IMAGE", "DockerZooKeeperServer"]

DEFAULT_IMAGE = "zookeeper:3.8"
_CLIENT_PORT = 2181


class DockerZooKeeperServer(StartClose):
    """A standalone ZooKeeper in a container, with the same short-session settings as the
    local :class:`~aiocoord.testing.ZooKeeperServer` and every four-letter word allowed.

    :meth:`restart` keeps the container (and its data) but the mapped port may change:
    read :attr:`connect_string` again afterwards.
    """

    def __init__(self, *, image: str = DEFAULT_IMAGE, startup_timeout: float = 120.0) -> None:
        self.image = image
        self.startup_timeout = startup_timeout
        self._container: Any = None
        self._host = "127.0.0.1"
        self._port = 0

    @property
    def connect_string(self) -> str:
        """``host:port`` of the container's mapped client port."""
        return f"{self._host}:{self._port}"

    @property
    def host(self) -> str:
        """The host the mapped port is on."""
        return self._host

    @property
    def port(self) -> int:
        """The mapped client port (0 before start)."""
        return self._port

    @property
    def is_running(self) -> bool:
        """Whether the container runs."""
        if self._container is None:
            return False
        wrapped = self._container.get_wrapped_container()
        wrapped.reload()
        return bool(wrapped.status == "running")

    def four_letter(self, command: str, timeout: float = 5.0) -> str:
        """Send a four-letter word to the server."""
        from aiocoord.testing._process import four_letter

        return four_letter(self._host, self._port, command, timeout)

    def start(self) -> None:
        """Create and start the container (or start it again) and wait until it serves."""
        if self._container is None:
            try:
                from testcontainers.core.container import DockerContainer
            except ImportError as exc:
                raise ServerSetupError(
                    "the docker backend needs testcontainers: pip install 'aiocoord[test]'"
                ) from exc
            container = (
                DockerContainer(self.image)
                .with_exposed_ports(_CLIENT_PORT)
                .with_env("ZOO_4LW_COMMANDS_WHITELIST", "*")
                .with_env("ZOO_ADMINSERVER_ENABLED", "false")
                .with_env("ZOO_TICK_TIME", "500")
                # The local servers' system properties (TTL nodes, a fast container sweep).
                .with_env("SERVER_JVMFLAGS", " ".join(TEST_SERVER_PROPERTIES))
                .with_env(
                    "ZOO_CFG_EXTRA",
                    "minSessionTimeout=1000 maxSessionTimeout=60000 localSessionsEnabled=false",
                )
            )
            self._container = container.start()
        elif not self.is_running:
            self._container.get_wrapped_container().start()
        self._host = str(self._container.get_container_host_ip())
        self._port = int(self._container.get_exposed_port(_CLIENT_PORT))
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while server_mode(self._host, self._port) != "standalone":
            if time.monotonic() >= deadline:
                logs = b"".join(self._container.get_logs()).decode(errors="replace")
                tail = "\n".join(logs.splitlines()[-40:])
                raise ServerNotReadyError(
                    f"ZooKeeper container {self.image} at {self.connect_string} did not serve "
                    f"within {self.startup_timeout} s; its log ends:\n{tail}"
                )
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the container (kept, with its data)."""
        if self._container is not None:
            self._container.get_wrapped_container().stop(timeout=10)

    def kill(self) -> None:
        """SIGKILL the server in the container (kept, with its data)."""
        if self._container is not None and self.is_running:
            self._container.get_wrapped_container().kill()

    def restart(self) -> None:
        """Stop and start the container again; the port may change."""
        self.stop()
        self.start()

    def close(self) -> None:
        """Remove the container."""
        if self._container is not None:
            container, self._container = self._container, None
            container.stop()

    def __repr__(self) -> str:
        return f"<DockerZooKeeperServer {self.image} {self.connect_string}>"
