"""Real ZooKeeper servers for tests: one standalone server, or an ensemble, as local JVMs.

The API is synchronous first, so that session-scoped pytest fixtures need no event loop; the
``async with`` forms run the blocking parts in a thread. Each server lives in a temporary
directory of its own (``zoo.cfg``, data, ``zookeeper.log``) that :meth:`~ZooKeeperServer.close`
removes; :meth:`~ZooKeeperServer.restart` keeps it, so data survives restarts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from aiocoord.errors import PortInUseError, ServerNotReadyError, ServerSetupError
from aiocoord.testing._distribution import Distribution, find_distribution
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
    "TEST_SERVER_PROPERTIES",
    "ZooKeeperEnsemble",
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
_SERVING_QUORUM = frozenset({"leader", "follower"})
_LOG_TAIL_LINES = 40
_T = TypeVar("_T")


class ZooKeeperServer:
    """One ZooKeeper server in a local JVM, listening on loopback.

    ``port=None`` picks a free port (kept across restarts); an explicit port that is already
    taken raises :class:`~aiocoord.errors.PortInUseError` before anything starts. The defaults
    allow short sessions (``tickTime=500``, ``minSessionTimeout=1000``), so tests can use
    2-4 s session timeouts. ``extra_config`` adds or overrides ``zoo.cfg`` lines. With
    ``die_with_parent`` (the default) the kernel kills the JVM if this process dies (Linux).

    Use as ``with ZooKeeperServer() as zk:`` or ``async with ZooKeeperServer() as zk:``, or call
    :meth:`start` and :meth:`close`.
    """

    host = "127.0.0.1"

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
        self.jvm_options = tuple(jvm_options)
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self.die_with_parent = die_with_parent
        self._distribution = distribution
        self._myid: int | None = None  # set on ensemble members: run as a quorum peer
        self._workdir: Path | None = None
        self._process: JvmProcess | None = None
        self._lock = threading.RLock()
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
            config_path.write_text(self._render_config(data_dir))
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
        serving = _SERVING_STANDALONE if self._myid is None else _SERVING_QUORUM
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

    def __enter__(self) -> ZooKeeperServer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> ZooKeeperServer:
        await _in_thread(self.start, undo=self.close)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await _in_thread(self.close, undo=self.close)

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<ZooKeeperServer {self.connect_string} {state}>"

    # --- internals ----------------------------------------------------------------------

    def _ensure_workdir(self) -> Path:
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
        return self._workdir

    def _render_config(self, data_dir: Path) -> str:
        config: dict[str, object] = {
            "dataDir": data_dir,
            "clientPort": self.port,
            "clientPortAddress": self.host,
            **self._config,
        }
        return "".join(f"{key}={value}\n" for key, value in config.items())


class ZooKeeperEnsemble:
    """``n`` ZooKeeper servers forming one quorum on loopback, each with its own client port.

    Members start in parallel; the ensemble is ready when every member serves and exactly one
    is the leader. Member ``i`` (0-based) has ``myid`` ``i + 1``. Members can be stopped,
    killed and started one by one to exercise failover; :meth:`close` ends them all.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        n: int = 3,
        *,
        tick_time: int = 500,
        init_limit: int = 10,
        sync_limit: int = 5,
        min_session_timeout: int = 1000,
        max_session_timeout: int = 60000,
        extra_config: Mapping[str, object] | None = None,
        jvm_options: Sequence[str] = (),
        startup_timeout: float = 60.0,
        stop_grace: float = 10.0,
        die_with_parent: bool = True,
        distribution: Distribution | None = None,
    ) -> None:
        if n < 1:
            raise ServerSetupError(f"an ensemble needs at least one member, not {n}")
        self.startup_timeout = startup_timeout
        ports = free_ports(3 * n, self.host)
        client, peer, election = ports[:n], ports[n : 2 * n], ports[2 * n :]
        servers = {f"server.{i + 1}": f"{self.host}:{peer[i]}:{election[i]}" for i in range(n)}
        self.last_start_seconds: float | None = None
        self._members = [
            ZooKeeperServer(
                port=client[i],
                tick_time=tick_time,
                min_session_timeout=min_session_timeout,
                max_session_timeout=max_session_timeout,
                extra_config={
                    "initLimit": init_limit,
                    "syncLimit": sync_limit,
                    **servers,
                    **dict(extra_config or {}),
                },
                jvm_options=[
                    # A member that is down refuses at once on loopback; do not wait 5 s on it.
                    "-Dzookeeper.cnxTimeout=1000",
                    *jvm_options,
                ],
                startup_timeout=startup_timeout,
                stop_grace=stop_grace,
                die_with_parent=die_with_parent,
                distribution=distribution,
            )
            for i in range(n)
        ]
        for i, member in enumerate(self._members):
            member._myid = i + 1
        self._lock = threading.RLock()

    @property
    def members(self) -> list[ZooKeeperServer]:
        """The member servers, in ``myid`` order."""
        return list(self._members)

    @property
    def connect_string(self) -> str:
        """All members: ``"127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"``."""
        return ",".join(m.connect_string for m in self._members)

    def member_connect_string(self, i: int) -> str:
        """The connect string of member ``i`` alone."""
        return self._members[i].connect_string

    def member_port(self, i: int) -> int:
        """The client port of member ``i``."""
        return self._members[i].port

    def index_of_port(self, port: int) -> int:
        """The index of the member whose client port is ``port``."""
        for i, member in enumerate(self._members):
            if member.port == port:
                return i
        raise ValueError(f"no member of {self.connect_string} listens on port {port}")

    def modes(self) -> list[str | None]:
        """Each member's mode (``leader``, ``follower``), None for one not serving."""
        return [m.mode() if m.is_running else None for m in self._members]

    def leader(self) -> int:
        """The index of the current leader; :class:`ServerNotReadyError` if there is none."""
        modes = self.modes()
        leaders = [i for i, mode in enumerate(modes) if mode == "leader"]
        if len(leaders) != 1:
            raise ServerNotReadyError(f"no single leader in {self.connect_string}: modes {modes}")
        return leaders[0]

    # --- lifecycle ----------------------------------------------------------------------

    def start(self, i: int | None = None) -> None:
        """Start every member (in parallel), or member ``i``; wait until the quorum serves."""
        with self._lock:
            began = time.monotonic()
            deadline = began + self.startup_timeout
            targets = self._members if i is None else [self._members[i]]
            targets = [m for m in targets if not m.is_running]
            try:
                for member in targets:
                    member.spawn()
                for member in targets:
                    member.wait_ready(deadline)
                self.wait_for_quorum(max(0.0, deadline - time.monotonic()))
            except BaseException:
                for member in targets:
                    member.kill()
                raise
            if i is None:
                self.last_start_seconds = time.monotonic() - began

    def stop(self, i: int | None = None) -> None:
        """Stop member ``i`` gracefully (SIGTERM), or every member."""
        with self._lock:
            for member in self._members if i is None else [self._members[i]]:
                member.stop()

    def kill(self, i: int) -> None:
        """SIGKILL member ``i``."""
        with self._lock:
            self._members[i].kill()

    def restart(self, i: int) -> None:
        """Stop member ``i`` (if running) and start it again with its data; wait for the quorum."""
        with self._lock:
            self._members[i].stop()
            self.start(i)

    def wait_for_quorum(self, timeout: float = 30.0) -> int:
        """Wait until every running member serves and exactly one leads; return its index."""
        deadline = time.monotonic() + timeout
        while True:
            running = [i for i, m in enumerate(self._members) if m.is_running]
            modes = self.modes()
            leaders = [i for i in running if modes[i] == "leader"]
            if len(leaders) == 1 and all(modes[i] in _SERVING_QUORUM for i in running):
                return leaders[0]
            if time.monotonic() >= deadline:
                tails = "\n".join(
                    f"--- member {i} ({m.log_path}):\n{m.log_tail(15)}"
                    for i, m in enumerate(self._members)
                )
                raise ServerNotReadyError(
                    f"ensemble {self.connect_string} has no quorum within its deadline "
                    f"(modes {modes}, running {running})\n{tails}"
                )
            time.sleep(0.05)

    def close(self) -> None:
        """Stop every member and remove their directories."""
        with self._lock:
            # The data goes with the directories, so there is nothing to shut down cleanly.
            for member in self._members:
                member.kill()
                member.close()

    def __enter__(self) -> ZooKeeperEnsemble:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> ZooKeeperEnsemble:
        await _in_thread(self.start, undo=self.close)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await _in_thread(self.close, undo=self.close)

    def __repr__(self) -> str:
        return f"<ZooKeeperEnsemble {self.connect_string}>"


async def _in_thread(func: Callable[[], _T], *, undo: Callable[[], object]) -> _T:
    """Run blocking ``func`` in a thread. A thread cannot be interrupted, so on cancellation
    this waits for ``func`` to finish, runs ``undo`` (so nothing is left running), then
    re-raises the cancellation."""
    task = asyncio.ensure_future(asyncio.to_thread(func))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await asyncio.wait({task})
        undoing = asyncio.ensure_future(asyncio.to_thread(undo))
        with contextlib.suppress(BaseException):
            await asyncio.wait({undoing})
        raise
