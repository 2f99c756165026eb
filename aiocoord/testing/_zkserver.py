"""One ZooKeeper server in a local JVM (:class:`ZooKeeperServer`): its ``zoo.cfg``, the JVM
command, start, readiness, stop, kill and restart, and the settings every test server gets
(:data:`SUPER_AUTH`, :data:`TEST_SERVER_PROPERTIES`, :data:`DEFAULT_JVM_OPTIONS`). Public
through :mod:`aiocoord.testing.server`; the ensemble builds on it (``_zkensemble``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from aiocoord.errors import PortInUseError, ServerNotReadyError
from aiocoord.testing._distribution import Distribution, find_distribution
from aiocoord.testing._lifecycle import StartClose
from aiocoord.testing._process import (
    WORKDIR_PREFIX,
    JvmProcess,
    four_letter,
    free_ports,
    owner_marker,
    port_in_use,
    server_mode,
    spawn_jvm,
)

__all__ = [
    "DEFAULT_JVM_OPTIONS",
    "SUPER_AUTH",
    "SERVING_QUORUM",
    "TEST_SERVER_PROPERTIES",
    "ZooKeeperServer",
]

#: Small heap, and a JIT and GC tuned for starting in well under a second rather than for speed.
DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-XX:-UsePerfData",
)

#: The superuser every test server knows, so fixtures can clean up nodes whatever their ACL:
#: ``client.add_auth(*SUPER_AUTH)`` or ``connect(..., auth=[SUPER_AUTH])``.
SUPER_AUTH = ("digest", "super:aiocoord-test")
_SUPER_DIGEST = base64.b64encode(hashlib.sha1(SUPER_AUTH[1].encode()).digest()).decode()

#: Server features tests rely on: a superuser, TTL nodes (extended types), and a container
#: sweep fast enough to observe within a test (the default is once a minute).
TEST_SERVER_PROPERTIES: tuple[str, ...] = (
    f"-Dzookeeper.DigestAuthenticationProvider.superDigest=super:{_SUPER_DIGEST}",
    "-Dzookeeper.extendedTypesEnabled=true",
    "-Dznode.container.checkIntervalMs=100",
)

_STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
_QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_SERVING_STANDALONE = frozenset({"standalone"})
#: The modes of an ensemble member that serves (the ensemble waits for them).
SERVING_QUORUM = frozenset({"leader", "follower", "observer"})
_LOG_TAIL_LINES = 40
_T = TypeVar("_T")


class ZooKeeperServer(StartClose):
    """One ZooKeeper server in a local JVM, listening on loopback.

    ``port=None`` picks a free port (kept across restarts); an explicit port that is already
    taken raises :class:`~aiocoord.errors.PortInUseError` before anything starts. The defaults
    allow short sessions (``tickTime=500``, ``minSessionTimeout=1000``), so tests can use
    2-4 s session timeouts. ``extra_config`` adds or overrides ``zoo.cfg`` lines. With
    ``die_with_parent`` (the default) the kernel kills the JVM if this process dies (Linux).

    Use as ``with ZooKeeperServer() as zk:`` or ``async with ZooKeeperServer() as zk:``, or call
    :meth:`start` and :meth:`close`.
    """

    #: the loopback address the server listens on
    host: str = "127.0.0.1"

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        tick_time: int = 500,
        min_session_timeout: int = 1000,
        max_session_timeout: int = 60000,
        extra_config: Mapping[str, object] | None = None,
        jvm_options: Sequence[str] = (),
        startup_timeout: float = 30.0,
        stop_grace: float = 10.0,
        die_with_parent: bool = True,
        distribution: Distribution | None = None,
    ) -> None:
        self._auto_port = port is None
        #: the client port; one picked at random for ``port=None``, kept across restarts
        #: (picked anew only if :meth:`start` found it taken meanwhile)
        self.port: int = free_ports(1, self.host)[0] if port is None else port
        self._own_data_dir = data_dir is None
        self._data_dir = None if data_dir is None else Path(data_dir)
        self._config: dict[str, object] = {
            "tickTime": tick_time,
            "minSessionTimeout": min_session_timeout,
            "maxSessionTimeout": max_session_timeout,
            "4lw.commands.whitelist": "*",
            "admin.enableServer": "false",
            "localSessionsEnabled": "false",
            # Test data need not survive a power cut; skipping fsync makes writes fast.
            "forceSync": "no",
            "preAllocSize": 1024,
            **dict(extra_config or {}),
        }
        #: extra options for the JVM, given after aiocoord's own (``DEFAULT_JVM_OPTIONS``, the
        #: test properties), so that they override them
        self.jvm_options: tuple[str, ...] = tuple(jvm_options)
        #: seconds :meth:`start` waits for the server to serve before it gives up
        self.startup_timeout: float = startup_timeout
        #: seconds :meth:`stop` waits after SIGTERM before it sends SIGKILL
        self.stop_grace: float = stop_grace
        #: True if the kernel kills the JVM when this process dies (Linux only)
        self.die_with_parent: bool = die_with_parent
        self._distribution = distribution
        self._myid: int | None = None  # set on ensemble members: run as a quorum peer
        # Set on members of a reconfigurable ensemble: the first dynamic config file's text.
        self._dynamic_config: str | None = None
        self._workdir: Path | None = None
        self._process: JvmProcess | None = None
        self._lock = threading.RLock()
        #: seconds the last :meth:`start` took until the server served; None before the first
        self.last_start_seconds: float | None = None

    # --- addresses and state ------------------------------------------------------------

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:<port>"``."""
        return f"{self.host}:{self.port}"

    @property
    def is_running(self) -> bool:
        """Whether the JVM is running (it may not be serving yet, or any more)."""
        return self._process is not None and self._process.is_running()

    @property
    def pid(self) -> int | None:
        """The JVM's pid while one runs."""
        return self._process.pid if self.is_running and self._process else None

    @property
    def workdir(self) -> Path | None:
        """The temporary directory of this server (config, data, log); None before start."""
        return self._workdir

    @property
    def data_dir(self) -> Path | None:
        """Where the server keeps its snapshots and transaction log."""
        if self._data_dir is not None:
            return self._data_dir
        return None if self._workdir is None else self._workdir / "data"

    @property
    def log_path(self) -> Path | None:
        """The server's log file (standard output and error of the JVM)."""
        return None if self._workdir is None else self._workdir / "zookeeper.log"

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the server's log."""
        path = self.log_path
        if path is None or not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def four_letter(self, command: str, timeout: float = 5.0) -> str:
        """Send a four-letter word (``srvr``, ``mntr``, ``wchc``, ``wchp``, ``cons``...)."""
        return four_letter(self.host, self.port, command, timeout)

    def mode(self) -> str | None:
        """``standalone``, ``leader`` or ``follower`` while serving, else None."""
        return server_mode(self.host, self.port)

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the JVM and wait until the server serves; no-op if it runs.

        Raises :class:`~aiocoord.errors.PortInUseError` when the port is taken and
        :class:`~aiocoord.errors.ServerNotReadyError` (with the log's tail) when the server
        does not serve within ``startup_timeout`` seconds; then no JVM is left running.
        """
        with self._lock:
            if self.is_running:
                return
            began = time.monotonic()
            for attempt in range(3):
                # A picked port can be taken between picking and binding: then pick another.
                try:
                    self.spawn()
                    self.wait_ready(began + self.startup_timeout)
                    break
                except PortInUseError:
                    if not (self._auto_port and attempt < 2):
                        raise
                except ServerNotReadyError:
                    collided = "Address already in use" in self.log_tail()
                    if not (self._auto_port and collided and attempt < 2):
                        raise
                self.port = free_ports(1, self.host)[0]
            self.last_start_seconds = time.monotonic() - began

    def spawn(self) -> None:
        """Start the JVM without waiting for it to serve (see :meth:`wait_ready`)."""
        with self._lock:
            if self.is_running:
                return
            if port_in_use(self.port, self.host):
                raise PortInUseError(
                    f"port {self.host}:{self.port} is already in use; "
                    "pass port=None to have a free one picked"
                )
            distribution = self._distribution or find_distribution()
            workdir = self._ensure_workdir()
            data_dir = self.data_dir
            assert data_dir is not None
            data_dir.mkdir(parents=True, exist_ok=True)
            if self._myid is not None:
                (data_dir / "myid").write_text(f"{self._myid}\n")
            config_path = workdir / "zoo.cfg"
            if self._dynamic_config is None:
                config_path.write_text(self._render_config(data_dir))
            elif not config_path.exists():
                # Written once: ZooKeeper itself keeps zoo.cfg pointing at the dynamic file of
                # the latest reconfig, which a restart must find as the server left it.
                dynamic = workdir / "zoo.cfg.dynamic"
                dynamic.write_text(self._dynamic_config)
                config_path.write_text(self._render_config(data_dir, dynamic))
            main = _STANDALONE_MAIN if self._myid is None else _QUORUM_MAIN
            command = [
                distribution.java,
                *DEFAULT_JVM_OPTIONS,
                *TEST_SERVER_PROPERTIES,
                owner_marker(os.getpid()),
                "-Dzookeeper.admin.enableServer=false",
                *distribution.logging_options(workdir),
                *self.jvm_options,
                "-cp",
                os.pathsep.join(distribution.classpath),
                main,
                str(config_path),
            ]
            log_path = self.log_path
            assert log_path is not None
            with log_path.open("a") as log:
                log.write(f"=== aiocoord: starting {' '.join(command)}\n")
            self._process = spawn_jvm(
                command, log_path=log_path, cwd=workdir, die_with_parent=self.die_with_parent
            )

    def wait_ready(self, deadline: float | None = None) -> str:
        """Wait until the server serves (``ruok`` says ``imok`` and ``srvr`` shows a mode).

        ``deadline`` is a ``time.monotonic()`` value (default: ``startup_timeout`` from now).
        Returns the mode. On failure the JVM is killed and
        :class:`~aiocoord.errors.ServerNotReadyError` raised with the tail of the log.
        """
        if deadline is None:
            deadline = time.monotonic() + self.startup_timeout
        serving = _SERVING_STANDALONE if self._myid is None else SERVING_QUORUM
        while True:
            process = self._process
            if process is None or not process.is_running():
                code = None if process is None else process.returncode
                self.kill()
                raise ServerNotReadyError(
                    f"ZooKeeper for {self.connect_string} exited (status {code}) before serving; "
                    f"the end of {self.log_path}:\n{self.log_tail()}"
                )
            mode = server_mode(self.host, self.port, timeout=1.0)
            if mode in serving:
                assert mode is not None
                return mode
            if time.monotonic() >= deadline:
                self.kill()
                raise ServerNotReadyError(
                    f"ZooKeeper for {self.connect_string} did not serve within its deadline "
                    f"(last mode: {mode}); the end of {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL after ``stop_grace`` seconds. Data is kept."""
        with self._lock:
            if self._process is not None:
                self._process.terminate(self.stop_grace)
                self._process = None

    def kill(self) -> None:
        """SIGKILL the server, as a crash would. Data is kept."""
        with self._lock:
            if self._process is not None:
                self._process.kill()
                self._process = None

    def restart(self) -> None:
        """Stop (if running) and start again on the same port with the same data."""
        with self._lock:
            self.stop()
            self.start()

    def close(self) -> None:
        """Stop the server and remove its temporary directory (a given ``data_dir`` is kept)."""
        with self._lock:
            self.stop()
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
                self._workdir = None

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<ZooKeeperServer {self.connect_string} {state}>"

    # --- internals ----------------------------------------------------------------------

    def _ensure_workdir(self) -> Path:
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
        return self._workdir

    def _render_config(self, data_dir: Path, dynamic: Path | None = None) -> str:
        # With a dynamic config the client address is in the member's server.N line there.
        config: dict[str, object] = (
            {"dataDir": data_dir, "clientPort": self.port, "clientPortAddress": self.host}
            if dynamic is None
            else {"dataDir": data_dir, "dynamicConfigFile": dynamic}
        )
        config.update(self._config)
        return "".join(f"{key}={value}\n" for key, value in config.items())
