"""Which kind of test server to use: a local JVM, a Docker container, or an external server.

``AIOCOORD_ZK_BACKEND`` picks it: ``local``, ``docker``, ``external`` (with
``AIOCOORD_ZK_CONNECT=host:port[,host:port...]``) or ``auto`` (the default): Docker when a Docker
engine answers a ping within a second, else local.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from types import TracebackType
from typing import Protocol, runtime_checkable
from urllib.parse import urlparse

from aiocoord.errors import ServerSetupError
from aiocoord.testing._process import four_letter

__all__ = [
    "BACKENDS",
    "ExternalServer",
    "ServerHandle",
    "docker_available",
    "select_backend",
    "start_server",
]

BACKENDS = ("auto", "local", "docker", "external")
BACKEND_ENV = "AIOCOORD_ZK_BACKEND"
CONNECT_ENV = "AIOCOORD_ZK_CONNECT"


@runtime_checkable
class ServerHandle(Protocol):
    """What every backend's server offers the tests: an address, four-letter words, and (where
    the backend owns the server) stop/kill/restart."""

    @property
    def connect_string(self) -> str:
        """Where clients connect, ``host:port[,host:port...]``."""
        ...

    @property
    def host(self) -> str:
        """The (first) server's host."""
        ...

    @property
    def port(self) -> int:
        """The (first) server's client port."""
        ...

    def four_letter(self, command: str, timeout: float = 5.0) -> str:
        """Send a four-letter word to the (first) server and return its answer."""
        ...

    def start(self) -> None:
        """Start the server and wait until it serves."""
        ...

    def stop(self) -> None:
        """Stop the server gracefully."""
        ...

    def kill(self) -> None:
        """Kill the server, as a crash would."""
        ...

    def restart(self) -> None:
        """Stop and start the server again, keeping its data."""
        ...

    def close(self) -> None:
        """Release the server and everything it holds."""
        ...


class ExternalServer:
    """A server someone else runs (``AIOCOORD_ZK_BACKEND=external``): tests can use it, not
    stop it."""

    def __init__(self, connect_string: str) -> None:
        hosts = connect_string.split("/", 1)[0]
        first = hosts.split(",")[0].strip()
        host, _, port = first.rpartition(":")
        if not host or not port.isdigit():
            raise ServerSetupError(
                f"{CONNECT_ENV}={connect_string!r} is not host:port[,host:port...]"
            )
        self._connect_string = hosts
        self._host = host.strip("[]")
        self._port = int(port)

    @property
    def connect_string(self) -> str:
        """The servers named by ``AIOCOORD_ZK_CONNECT`` (without any chroot)."""
        return self._connect_string

    @property
    def host(self) -> str:
        """The first server's host."""
        return self._host

    @property
    def port(self) -> int:
        """The first server's port."""
        return self._port

    def four_letter(self, command: str, timeout: float = 5.0) -> str:
        """Send a four-letter word to the first server (it must be whitelisted there)."""
        return four_letter(self._host, self._port, command, timeout)

    def start(self) -> None:
        """Nothing to start: the server is external."""

    def close(self) -> None:
        """Nothing to release: the server is external."""

    def stop(self) -> None:
        """Refused: the server is not ours."""
        raise self._refuse("stop")

    def kill(self) -> None:
        """Refused: the server is not ours."""
        raise self._refuse("kill")

    def restart(self) -> None:
        """Refused: the server is not ours."""
        raise self._refuse("restart")

    def _refuse(self, what: str) -> ServerSetupError:
        return ServerSetupError(
            f"cannot {what} an external server ({self._connect_string}); tests that {what} "
            f"servers need AIOCOORD_ZK_BACKEND=local or docker"
        )

    def __enter__(self) -> ExternalServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ExternalServer {self._connect_string}>"


def docker_available(environ: Mapping[str, str] | None = None, timeout: float = 1.0) -> bool:
    """Whether a Docker engine answers ``GET /_ping`` within ``timeout`` seconds.

    Looks at ``DOCKER_HOST`` (``unix://`` or ``tcp://``), else ``/var/run/docker.sock``. Never
    raises; any failure means no.
    """
    env = os.environ if environ is None else environ
    docker_host = env.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    url = urlparse(docker_host)
    try:
        if url.scheme == "unix":
            if not os.path.exists(url.path):
                return False
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(url.path)
        elif url.scheme in ("tcp", "http", "https") and url.hostname:
            if url.scheme == "https":
                return False  # TLS engines: not pinged here; ask for the backend explicitly
            sock = socket.create_connection((url.hostname, url.port or 2375), timeout=timeout)
        else:
            return False
        with sock:
            sock.settimeout(timeout)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            answer = b""
            while len(answer) < 4096:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
    except OSError:
        return False
    status, _, _ = answer.partition(b"\r\n")
    return status.startswith(b"HTTP/") and b" 200 " in status + b" "


def select_backend(backend: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """Resolve ``backend`` (default: ``$AIOCOORD_ZK_BACKEND``, else ``auto``) to ``local``,
    ``docker`` or ``external``. ``auto`` pings Docker (at most about a second) and otherwise
    says ``local``. ``external`` requires ``AIOCOORD_ZK_CONNECT``."""
    env = os.environ if environ is None else environ
    chosen = (backend or env.get(BACKEND_ENV) or "auto").strip().lower()
    if chosen not in BACKENDS:
        raise ServerSetupError(
            f"unknown ZooKeeper backend {chosen!r} (from {BACKEND_ENV}); "
            f"use one of {', '.join(BACKENDS)}"
        )
    if chosen == "external" and not env.get(CONNECT_ENV):
        raise ServerSetupError(
            f"{BACKEND_ENV}=external needs {CONNECT_ENV}=host:port[,host:port...] "
            "naming the running server"
        )
    if chosen == "auto":
        return "docker" if docker_available(env) else "local"
    return chosen


def start_server(
    backend: str | None = None, environ: Mapping[str, str] | None = None
) -> ServerHandle:
    """Start (or, for ``external``, attach to) a server of the selected backend; it serves on
    return. Close it with ``close()``."""
    env = os.environ if environ is None else environ
    chosen = select_backend(backend, env)
    server: ServerHandle
    if chosen == "external":
        server = ExternalServer(env[CONNECT_ENV])
    elif chosen == "docker":
        from aiocoord.testing._docker import DockerZooKeeperServer

        server = DockerZooKeeperServer()
    else:
        from aiocoord.testing.server import ZooKeeperServer

        server = ZooKeeperServer()
    try:
        server.start()
    except BaseException:
        server.close()
        raise
    return server
