"""The JVMs behind the test servers: spawning them, stopping them, never leaving one behind.

Four layers keep a crashed or killed test run from leaking a JVM:

1. every JVM leads its own process group, so stopping it stops everything it started;
2. an ``atexit`` hook stops the JVMs still running when Python exits normally;
3. on Linux, ``PR_SET_PDEATHSIG`` makes the kernel SIGKILL the JVM when its parent dies, even
   by SIGKILL. The kernel ties that signal to the *thread* that forked the child, so every
   spawn happens on one daemon thread that lives as long as the process (a worker thread of
   ``asyncio.to_thread`` would take its JVMs with it when its executor shuts down);
4. a pid file per JVM under ``$TMPDIR/aiocoord-zk-pids`` names its owning Python process;
   :func:`sweep_orphans` (run before every launch and when the pytest plugin loads) kills the
   JVMs whose owner is gone, after checking the pid still is such a JVM: its command line
   carries ``-Daiocoord.owner=<owner pid>``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

__all__ = [
    "OWNER_PROPERTY",
    "JvmProcess",
    "four_letter",
    "free_ports",
    "pid_dir",
    "port_in_use",
    "spawn_jvm",
    "sweep_orphans",
]

#: The system property that marks our JVMs; ``pgrep -f aiocoord.owner`` finds them.
OWNER_PROPERTY = "aiocoord.owner"
#: Servers' temporary directories are named so (in the system temp dir).
WORKDIR_PREFIX = "aiocoord-zk-"


def pid_dir() -> Path:
    """Where the pid files of running JVMs live (``$TMPDIR/aiocoord-zk-pids``)."""
    return Path(tempfile.gettempdir()) / "aiocoord-zk-pids"


def owner_marker(owner: int) -> str:
    """The JVM option naming the Python process that owns the JVM."""
    return f"-D{OWNER_PROPERTY}={owner}"


# --- spawning ---------------------------------------------------------------------------------


def _pdeathsig_preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks the kernel to SIGKILL the child when its parent dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    sigkill = int(signal.SIGKILL)

    def preexec() -> None:
        # Only the pre-resolved C call runs between fork and exec: nothing that may need a lock.
        prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)

    return preexec


_PREEXEC = _pdeathsig_preexec()


class _Spawner:
    """One long-lived daemon thread that forks every JVM (see the module docstring, point 3)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def run(self, job: Callable[[], Any]) -> Any:
        with self._lock:
            # After a fork the thread is gone from the child; start a fresh one there.
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._jobs = queue.SimpleQueue()
                self._thread = threading.Thread(
                    target=self._loop, args=(self._jobs,), name="aiocoord-jvm-spawner", daemon=True
                )
                self._thread.start()
            done: Future[Any] = Future()
            self._jobs.put((job, done))
        return done.result()

    @staticmethod
    def _loop(jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]]) -> None:
        while True:
            job, done = jobs.get()
            try:
                done.set_result(job())
            except BaseException as exc:
                done.set_exception(exc)


_SPAWNER = _Spawner()


class JvmProcess:
    """A running JVM of ours: its ``Popen``, its pid file and its log."""

    def __init__(self, popen: subprocess.Popen[bytes], pid_file: Path, log_path: Path) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.pid_file = pid_file
        self.log_path = log_path

    def is_running(self) -> bool:
        """Whether the JVM has not exited yet."""
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit status, or None while it runs."""
        return self.popen.poll()

    def terminate(self, grace: float = 10.0) -> None:
        """SIGTERM the process group; SIGKILL it if it has not exited after ``grace`` seconds."""
        if self.is_running():
            self._signal_group(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
        self._reap()

    def kill(self) -> None:
        """SIGKILL the process group, as a crash would."""
        self._signal_group(signal.SIGKILL)
        self._reap()

    def _signal_group(self, sig: signal.Signals) -> None:
        # The JVM leads its group (start_new_session), so its pid is the group id.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _reap(self) -> None:
        try:
            self.popen.wait(30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a JVM that ignores SIGKILL
            self._signal_group(signal.SIGKILL)
            self.popen.wait()
        with _LIVE_LOCK:
            _LIVE.discard(self)
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()


_LIVE: set[JvmProcess] = set()
_LIVE_LOCK = threading.Lock()


def spawn_jvm(
    command: Sequence[str],
    *,
    log_path: Path,
    cwd: Path,
    die_with_parent: bool = True,
    env: Mapping[str, str] | None = None,
) -> JvmProcess:
    """Start ``command`` (a java command line carrying :func:`owner_marker`) in its own session.

    Its standard output and error are appended to ``log_path``; ``env`` replaces the
    environment (default: this process's). Orphans of dead test runs are swept first.
    """
    sweep_orphans()
    directory = pid_dir()
    directory.mkdir(parents=True, exist_ok=True)
    preexec = _PREEXEC if die_with_parent else None

    def launch() -> subprocess.Popen[bytes]:
        log: IO[bytes]
        with open(log_path, "ab") as log:
            return subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=None if env is None else dict(env),
                start_new_session=True,
                preexec_fn=preexec,
            )

    popen: subprocess.Popen[bytes] = _SPAWNER.run(launch) if preexec else launch()
    pid_file = directory / f"{popen.pid}.json"
    record = {"pid": popen.pid, "owner": os.getpid(), "started": time.time(), "cwd": str(cwd)}
    pid_file.write_text(json.dumps(record))
    process = JvmProcess(popen, pid_file, log_path)
    with _LIVE_LOCK:
        _LIVE.add(process)
    return process


@atexit.register
def _stop_all_at_exit() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        process._signal_group(signal.SIGTERM)
    deadline = time.monotonic() + 3.0
    for process in live:
        try:
            process.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process._signal_group(signal.SIGKILL)
        process._reap()


# --- sweeping orphans -------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purpose: its parent just has not reaped it yet.
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError, IndexError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _command_line(pid: int) -> list[str] | None:
    proc = Path(f"/proc/{pid}/cmdline")
    if proc.parent.exists():
        try:
            return proc.read_bytes().decode(errors="replace").rstrip("\0").split("\0")
        except OSError:
            return None
    try:  # no /proc (macOS): ask ps
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.split() if out else None


def is_our_jvm(pid: int, owner: int) -> bool:
    """Whether ``pid`` is a java process started by the Python process ``owner``."""
    argv = _command_line(pid)
    if not argv:
        return False
    return "java" in Path(argv[0]).name and owner_marker(owner) in argv


def sweep_orphans() -> list[int]:
    """Kill the JVMs whose owning Python process is dead; return their pids.

    A pid is only signalled after its command line shows it still is our JVM (pids get reused).
    Pid files of JVMs that are gone anyway are removed.
    """
    killed: list[int] = []
    directory = pid_dir()
    if not directory.is_dir():
        return killed
    for pid_file in directory.glob("*.json"):
        try:
            record = json.loads(pid_file.read_text())
            pid, owner = int(record["pid"]), int(record["owner"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written, or not ours: leave it
        if _alive(owner):
            continue
        if _alive(pid) and is_our_jvm(pid, owner):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
                killed.append(pid)
        _remove_workdir(record.get("cwd"))
        with contextlib.suppress(FileNotFoundError):
            pid_file.unlink()
    return killed


def _remove_workdir(path: object) -> None:
    """Remove a dead server's temporary directory, if it is one the launcher made."""
    if not isinstance(path, str):
        return
    workdir = Path(path)
    if workdir.name.startswith(WORKDIR_PREFIX) and workdir.parent == Path(tempfile.gettempdir()):
        shutil.rmtree(workdir, ignore_errors=True)


# --- ports and four-letter words --------------------------------------------------------------

_HANDED_OUT: set[int] = set()
_PORTS_LOCK = threading.Lock()


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free on ``host`` now, none handed out before by this process.

    All are bound at the same time, so they differ; they are free again when this returns, so
    a race with another process is possible (the launcher retries on a collision).
    """
    with _PORTS_LOCK:
        held: list[socket.socket] = []
        ports: list[int] = []
        try:
            while len(ports) < count:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                held.append(sock)
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
                if port not in _HANDED_OUT:
                    ports.append(port)
                    _HANDED_OUT.add(port)
        finally:
            for sock in held:
                sock.close()
        return ports


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could not listen on ``host:port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Like the JVM's server socket, so that TIME_WAIT leftovers do not count as "in use".
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def four_letter(host: str, port: int, command: str, timeout: float = 5.0) -> str:
    """Send a four-letter-word command (``ruok``, ``srvr``, ``mntr``, ``wchp``...); return the text.

    Raises ``OSError`` when the server cannot be reached.
    """
    if len(command) != 4:
        raise ValueError(f"four-letter commands have four letters, not {command!r}")
    chunks: list[bytes] = []
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(command.encode("ascii"))
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def server_mode(host: str, port: int, timeout: float = 2.0) -> str | None:
    """The ``Mode:`` line of ``srvr`` (standalone, leader, follower...), None if not serving."""
    try:
        if four_letter(host, port, "ruok", timeout) != "imok":
            return None
        text = four_letter(host, port, "srvr", timeout)
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None
