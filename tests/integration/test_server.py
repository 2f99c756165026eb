"""Standalone test servers: lifecycle, data across restarts, failures, and no JVM left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import aiozk
import pytest

from aiocoord.errors import PortInUseError, ServerNotReadyError
from aiocoord.testing import ServerHandle, ZooKeeperServer, sweep_orphans
from aiocoord.testing._process import is_our_jvm, pid_dir


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)


async def write(connect_string: str, path: str, data: bytes) -> None:
    client = aiozk.ZKClient(connect_string, session_timeout=5)
    await client.start()
    try:
        await client.create(path, data)
    finally:
        await client.close()


async def read(connect_string: str, path: str) -> bytes:
    client = aiozk.ZKClient(connect_string, session_timeout=5)
    await client.start()
    try:
        return bytes(await client.get_data(path))
    finally:
        await client.close()


def test_zookeeper_fixture_serves(zookeeper: ServerHandle) -> None:
    assert "Mode: standalone" in zookeeper.four_letter("srvr")
    assert zookeeper.connect_string.endswith(f":{zookeeper.port}")


def test_server_starts_fast_and_stop_leaves_no_jvm() -> None:
    with ZooKeeperServer() as zk:
        assert zk.mode() == "standalone"
        assert zk.last_start_seconds is not None
        assert zk.last_start_seconds < 10  # typically ~0.5 s; generous for slow CI machines
        pid = zk.pid
        assert pid is not None
        assert is_our_jvm(pid, os.getpid())
        assert (pid_dir() / f"{pid}.json").exists()
        workdir = zk.workdir
        zk.stop()
        assert gone(pid)
        assert not (pid_dir() / f"{pid}.json").exists()
        assert not zk.is_running
    assert workdir is not None
    assert not workdir.exists()


async def test_data_survives_kill_and_restart() -> None:
    async with ZooKeeperServer() as zk:
        await write(zk.connect_string, "/kept", b"v1")
        pid = zk.pid
        assert pid is not None
        zk.kill()
        assert gone(pid)
        assert zk.mode() is None
        zk.start()
        assert await read(zk.connect_string, "/kept") == b"v1"
        port = zk.port
        zk.restart()
        assert zk.port == port
        assert await read(zk.connect_string, "/kept") == b"v1"


def test_server_started_from_a_passing_thread_outlives_it() -> None:
    # PR_SET_PDEATHSIG fires when the *thread* that forked the JVM exits; spawning happens on
    # a thread that lives as long as the process, so worker threads may start servers.
    server = ZooKeeperServer()
    try:
        worker = threading.Thread(target=server.start)
        worker.start()
        worker.join()
        process = server._process
        assert process is not None
        with pytest.raises(subprocess.TimeoutExpired):
            process.popen.wait(timeout=1)  # still running a second after the thread ended
        assert server.mode() == "standalone"
    finally:
        server.close()


def test_four_letter_words_are_all_allowed(zookeeper: ServerHandle) -> None:
    assert zookeeper.four_letter("ruok") == "imok"
    assert "zk_server_state\tstandalone" in zookeeper.four_letter("mntr")
    for word in ("wchc", "wchp", "cons", "dump", "conf"):
        assert "not in the whitelist" not in zookeeper.four_letter(word)


def test_port_of_a_running_server_is_refused(zookeeper: ServerHandle) -> None:
    with pytest.raises(PortInUseError):
        ZooKeeperServer(port=zookeeper.port).start()


def test_server_that_exits_reports_its_log() -> None:
    server = ZooKeeperServer(extra_config={"tickTime": "soon"})
    with pytest.raises(ServerNotReadyError) as caught:
        server.start()
    message = str(caught.value)
    assert "exited" in message
    assert 'For input string: "soon"' in message  # the tail of its log
    assert not server.is_running
    server.close()


def test_server_that_never_serves_is_killed_at_the_deadline() -> None:
    # A debugger agent that waits for a debugger: the JVM runs but ZooKeeper never starts.
    hang = "-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:0"
    server = ZooKeeperServer(jvm_options=[hang], startup_timeout=1.5)
    began = time.monotonic()
    with pytest.raises(ServerNotReadyError) as caught:
        server.start()
    assert time.monotonic() - began < 10
    assert "did not serve" in str(caught.value)
    assert "Listening for transport dt_socket" in str(caught.value)
    assert not server.is_running
    server.close()


CHILD = """
import sys, time
from aiocoord.testing import ZooKeeperServer
server = ZooKeeperServer(die_with_parent={die_with_parent})
server.start()
print(server.pid, server.workdir, flush=True)
time.sleep(600)
"""


def orphan_a_jvm(die_with_parent: bool) -> tuple[int, int, Path]:
    """Start a server from a child Python, SIGKILL that child; return the JVM's pid, the
    child's pid and the server's directory."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(die_with_parent=die_with_parent)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        pid, workdir = child.stdout.readline().split()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    return int(pid), child.pid, Path(workdir)


def test_sweep_kills_the_jvm_of_a_dead_test_run() -> None:
    jvm, owner, workdir = orphan_a_jvm(die_with_parent=False)
    try:
        assert is_our_jvm(jvm, owner)  # orphaned, still running
        assert workdir.is_dir()
        assert jvm in sweep_orphans()
        wait_until(lambda: gone(jvm) or not is_our_jvm(jvm, owner), 10, "orphan killed")
        assert not (pid_dir() / f"{jvm}.json").exists()
        assert not workdir.exists()
    finally:
        if is_our_jvm(jvm, owner):
            os.killpg(jvm, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_jvm_dies_with_the_process_that_started_it() -> None:
    jvm, owner, workdir = orphan_a_jvm(die_with_parent=True)
    try:
        wait_until(lambda: gone(jvm) or not is_our_jvm(jvm, owner), 10, "JVM died with parent")
    finally:
        if is_our_jvm(jvm, owner):
            os.killpg(jvm, signal.SIGKILL)
    sweep_orphans()  # its pid file and directory are left; the sweep removes them
    assert not (pid_dir() / f"{jvm}.json").exists()
    assert not workdir.exists()
