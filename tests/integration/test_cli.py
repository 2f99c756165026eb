"""The ``python -m aiocoord`` commands, each run as a subprocess the way a user runs it:
``server``, ``tree``, ``inspect lock|rwlock|election|semaphore`` (``locks --kind``) and
``demo`` (against a server with ``--connect``, and on its embedded ensemble)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from support import child_names, needs_local_jvm, run_cli

import aiocoord
from aiocoord.testing import ServerHandle
from aiocoord.testing._process import free_ports, owner_marker

ClientFactory = Callable[..., Awaitable[aiocoord.Client]]


def jvms_owned_by(owner: int) -> list[int]:
    """Pids of the running JVMs that the Python process ``owner`` started (Linux)."""
    marker = owner_marker(owner).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in argv:
            found.append(int(entry.name))
    return found


async def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 30
) -> tuple[int, str]:
    """Run ``python -m aiocoord ARGS``; its exit status and output (stdout and stderr)."""
    code, out, _ = await run_cli(*args, timeout=timeout, env=env, merge_stderr=True)
    return code, out


# --- server ---------------------------------------------------------------------------------


class ServerProcess:
    """``python -m aiocoord server`` running in the foreground of a subprocess."""

    def __init__(self, proc: asyncio.subprocess.Process, banner: str) -> None:
        self.proc = proc
        self.banner = banner
        found = re.search(r"connect string: (\S+)", banner)
        assert found, banner
        self.connect_string = found.group(1)
        jvm = re.search(r"\(pid (\d+)\)", banner)
        assert jvm, banner
        self.jvm_pid = int(jvm.group(1))

    @classmethod
    async def start(cls, *args: str) -> ServerProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "aiocoord",
            "server",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert proc.stdout is not None
        lines: list[str] = []
        try:
            while not lines or "Ctrl-C to stop" not in lines[-1]:
                line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
                if not line:
                    raise AssertionError("server exited before serving:\n" + "".join(lines))
                lines.append(line)
        except BaseException:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
            raise
        return cls(proc, "".join(lines))

    async def interrupt(self) -> tuple[int, str]:
        """Ctrl-C: SIGINT to the Python process alone, as a terminal sends it to the
        foreground job (the JVM runs in a session of its own)."""
        self.proc.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(self.proc.communicate(), 30)
        assert self.proc.returncode is not None
        return self.proc.returncode, out.decode()


@pytest.fixture
async def server_cli() -> AsyncIterator[list[ServerProcess]]:
    """Server processes a test starts; killed afterwards if the test left one running."""
    started: list[ServerProcess] = []
    yield started
    for server in started:
        if server.proc.returncode is None:
            server.proc.kill()
            await server.proc.wait()


def free_port() -> int:
    return free_ports(1, "127.0.0.1")[0]


@needs_local_jvm
async def test_server_prints_its_connect_string_and_ctrl_c_stops_it_cleanly(
    server_cli: list[ServerProcess],
) -> None:
    port = free_port()
    server = await ServerProcess.start("--port", str(port))
    server_cli.append(server)
    assert server.connect_string == f"127.0.0.1:{port}"
    assert "ZooKeeper 3." in server.banner
    data_dir = re.search(r"data dir:\s+(\S+)", server.banner)
    assert data_dir, server.banner
    workdir = Path(data_dir.group(1)).parent
    assert workdir.exists()
    if sys.platform.startswith("linux"):
        assert jvms_owned_by(server.proc.pid) == [server.jvm_pid]
    async with aiocoord.connect(server.connect_string, session_timeout=5) as client:
        await client.create("/hello", b"world")
        assert (await client.get("/hello"))[0] == b"world"

    code, out = await server.interrupt()

    assert code == 0, out
    assert "stopping" in out and "stopped" in out
    with pytest.raises(ProcessLookupError):
        os.kill(server.jvm_pid, 0)
    if sys.platform.startswith("linux"):
        assert jvms_owned_by(server.proc.pid) == []
    assert not workdir.exists()  # the temporary data went with it


@needs_local_jvm
async def test_server_keeps_its_data_dir_across_runs(
    server_cli: list[ServerProcess], tmp_path: Path
) -> None:
    data_dir = tmp_path / "zk-data"
    port = free_port()
    first = await ServerProcess.start("--port", str(port), "--data-dir", str(data_dir))
    server_cli.append(first)
    assert f"data dir:       {data_dir}" in first.banner
    async with aiocoord.connect(first.connect_string, session_timeout=5) as client:
        await client.create("/kept", b"across restarts")
    assert (await first.interrupt())[0] == 0
    assert data_dir.exists()

    second = await ServerProcess.start("--port", str(port), "--data-dir", str(data_dir))
    server_cli.append(second)
    async with aiocoord.connect(second.connect_string, session_timeout=5) as client:
        assert (await client.get("/kept"))[0] == b"across restarts"
    assert (await second.interrupt())[0] == 0


@needs_local_jvm
async def test_server_on_a_port_in_use_says_so(zookeeper: ServerHandle) -> None:
    code, out = await cli("server", "--port", str(zookeeper.port))
    assert code == 2, out
    assert f"port {zookeeper.port} is already in use" in out
    assert "server --port" in out  # and what to do about it
    assert "stopped" not in out  # nothing was started


def test_version_and_program_name() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aiocoord", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == f"python -m aiocoord {aiocoord.__version__}"
    script = Path(sys.executable).with_name("aiocoord")
    if script.exists():
        done = subprocess.run([str(script), "--version"], capture_output=True, text=True)
        assert done.stdout.strip() == f"aiocoord {aiocoord.__version__}"


# --- tree -----------------------------------------------------------------------------------


async def test_tree_shows_the_nodes_under_a_path(
    zookeeper: ServerHandle, zk_client: aiocoord.Client, zk_namespace: str
) -> None:
    await zk_client.create("/app/config", b"v1", make_parents=True)
    await zk_client.create("/app/services/api-1", b"10.0.0.1:80", make_parents=True)
    await zk_client.create("/app/services/api-2", b"", ephemeral=True)

    code, out = await cli(
        "tree", "/app", "--data", "--connect", zookeeper.connect_string + zk_namespace
    )

    assert code == 0, out
    assert out.splitlines() == [
        "/app  (0 B)",
        "  config  (2 B)  'v1'",
        "  services  (0 B)",
        "    api-1  (11 B)  '10.0.0.1:80'",
        f"    api-2  (0 B)  [ephemeral 0x{zk_client.session_id:x}]",
    ]


async def test_tree_depth_and_a_missing_path(
    zookeeper: ServerHandle, zk_client: aiocoord.Client, zk_namespace: str
) -> None:
    await zk_client.create("/a/b/c", make_parents=True)
    hosts = zookeeper.connect_string + zk_namespace
    code, out = await cli("tree", "/a", "--depth", "1", env={"AIOCOORD_CONNECT": hosts})
    assert code == 0, out
    assert out.splitlines() == ["/a  (0 B)", "  b  (0 B)", "    ... 1 children not shown"]

    code, out = await cli("tree", "/nowhere", "--connect", hosts)
    assert code == 1
    assert "/nowhere does not exist" in out


async def test_tree_without_a_server_says_where_it_looked() -> None:
    hosts = f"127.0.0.1:{free_port()}"
    code, out = await cli("tree", "--connect", hosts, "--timeout", "0.5")
    assert code == 1
    assert f"cannot reach ZooKeeper at {hosts}" in out
    assert "python -m aiocoord server" in out


# --- inspect --------------------------------------------------------------------------------


def table(out: str) -> list[tuple[int, str, str]]:
    """``(position, role, identifier)`` rows of an ``inspect`` table."""
    rows = []
    for line in out.splitlines()[2:]:
        found = re.match(r"\s*(\d+)  (.+?)\s{2,}(\S+)\s+(0x[0-9a-f]+|-)\s", line)
        assert found, line
        rows.append((int(found.group(1)), found.group(2).strip(), found.group(3)))
    return rows


async def children_reach(client: aiocoord.Client, path: str, count: int) -> None:
    """Wait until ``path`` has ``count`` children (a cache's view: no polling)."""
    async with aiocoord.ChildrenCache(client, path) as cache:
        await cache.wait_for(lambda c: len(c) == count, timeout=10)


async def test_inspect_lock_shows_holder_and_waiters_in_queue_order(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    hosts = zookeeper.connect_string + zk_namespace
    code, out = await cli("inspect", "lock", "/locks/job", "--connect", hosts)
    assert code == 0, out
    assert "nobody holds or waits" in out

    alpha, bravo, charlie = [await zk_connect() for _ in range(3)]
    holder = aiocoord.Lock(alpha, "/locks/job", identifier="alpha")
    await holder.acquire()
    waiters: list[asyncio.Task[Any]] = []
    for i, (client, name) in enumerate(((charlie, "charlie"), (bravo, "bravo"))):
        waiters.append(
            asyncio.ensure_future(aiocoord.Lock(client, "/locks/job", identifier=name).acquire())
        )
        await children_reach(alpha, "/locks/job", i + 2)  # queued in this order
    try:
        code, out = await cli("inspect", "lock", "/locks/job", "--connect", hosts)
        assert code == 0, out
        assert out.splitlines()[0] == "lock /locks/job: held by alpha; 2 waiting"
        assert table(out) == [
            (0, "holder", "alpha"),
            (1, "waiting", "charlie"),
            (2, "waiting", "bravo"),
        ]
        assert f"0x{alpha.session_id:x}" in out.splitlines()[2]
        assert holder.node_path is not None
        assert holder.node_path.rsplit("/", 1)[1] in out.splitlines()[2]
    finally:
        for task in waiters:
            task.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)


async def test_inspect_rwlock_shows_readers_sharing_and_a_writer_waiting(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    r1, r2, w = [await zk_connect() for _ in range(3)]
    await aiocoord.ReadWriteLock(r1, "/rw", identifier="reader-1").read.acquire()
    writer = asyncio.ensure_future(
        aiocoord.ReadWriteLock(w, "/rw", identifier="writer").write.acquire()
    )
    await children_reach(r1, "/rw", 2)
    late = asyncio.ensure_future(
        aiocoord.ReadWriteLock(r2, "/rw", identifier="reader-2").read.acquire()
    )
    await children_reach(r1, "/rw", 3)
    try:
        code, out = await cli(
            "inspect", "rwlock", "/rw", "--connect", zookeeper.connect_string + zk_namespace
        )
        assert code == 0, out
        assert table(out) == [
            (0, "reader", "reader-1"),
            (1, "waiting writer", "writer"),
            (2, "waiting reader", "reader-2"),
        ]
    finally:
        for task in (writer, late):
            task.cancel()
        await asyncio.gather(writer, late, return_exceptions=True)


async def test_inspect_election_shows_the_leader_then_the_candidates(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    latches = []
    for i, name in enumerate(("alpha", "bravo", "charlie")):
        latch = aiocoord.LeaderLatch(await zk_connect(), "/election", identifier=name)
        await latch.start()
        latches.append(latch)
        await children_reach(latch.client, "/election", i + 1)
    try:
        assert await latches[0].wait_until_leader(10)
        code, out = await cli(
            "inspect", "election", "/election", "--connect", zookeeper.connect_string + zk_namespace
        )
        assert code == 0, out
        # inspect is `locks --kind`: its table, its summary
        assert out.splitlines()[0] == "election /election: leader alpha; 2 candidate(s)"
        assert table(out) == [
            (0, "leader", "alpha"),
            (1, "candidate", "bravo"),
            (2, "candidate", "charlie"),
        ]
    finally:
        for latch in latches:
            await latch.close()


async def test_inspect_semaphore_shows_leases_then_the_queue(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    names = ("alpha", "bravo", "charlie", "delta")
    clients = [await zk_connect() for _ in names]
    sems = [
        aiocoord.Semaphore(c, "/sem", 2, identifier=n) for c, n in zip(clients, names, strict=True)
    ]
    assert await sems[0].acquire() and await sems[1].acquire()
    # charlie holds the semaphore's lock and waits with its lease node added; delta queues.
    charlie = asyncio.ensure_future(sems[2].acquire())
    await children_reach(clients[0], "/sem/leases", 3)
    delta = asyncio.ensure_future(sems[3].acquire())
    await children_reach(clients[0], "/sem/locks", 2)
    try:
        code, out = await cli(
            "inspect", "semaphore", "/sem", "--connect", zookeeper.connect_string + zk_namespace
        )
        assert code == 0, out
        assert out.splitlines()[0] == "semaphore /sem: 2 lease(s) held; 2 waiting or acquiring"
        assert table(out) == [
            (0, "lease", "alpha"),
            (1, "lease", "bravo"),
            (2, "acquiring", "charlie"),
            (3, "waiting", "delta"),
        ]
    finally:
        for task in (charlie, delta):
            task.cancel()
        await asyncio.gather(charlie, delta, return_exceptions=True)


async def test_inspect_refuses_a_bad_path_before_connecting() -> None:
    code, out = await cli("inspect", "lock", "no-slash", "--connect", f"127.0.0.1:{free_port()}")
    assert code == 2
    assert "no-slash" in out


# --- demo -----------------------------------------------------------------------------------

SUMMARY_CHECKS = (
    "no lost update: yes",
    "fencing tokens increasing: yes",
    "same session: yes",
    "lock held across failover: yes",
    "leader unchanged: yes",
    "cache in sync: yes",
    "all sessions kept: yes",
    "result: all checks passed",
)


def runtime_of(out: str) -> float:
    found = re.search(r"runtime: ([\d.]+) s", out)
    assert found, out
    return float(found.group(1))


async def test_demo_against_a_server_shows_the_failover_and_cleans_up(
    zookeeper: ServerHandle,
) -> None:
    code, out = await cli("demo", "--connect", zookeeper.connect_string, timeout=120)
    assert code == 0, out
    for check in SUMMARY_CHECKS:
        assert check in out, out
    assert re.search(r"dropping worker-\d's connection", out), out
    assert re.search(r"worker-\d failed over in [\d.]+ s", out), out
    assert "newcomer joined the group" in out
    assert runtime_of(out) < 120
    async with aiocoord.connect(zookeeper.connect_string, session_timeout=5) as client:
        assert await child_names(client, "/aiocoord-demo") == []  # [] if it is gone too


@needs_local_jvm
async def test_demo_on_its_embedded_ensemble_kills_the_leaders_server_and_survives() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aiocoord",
        "demo",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        raw, _ = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    out = raw.decode()
    assert proc.returncode == 0, out
    for check in SUMMARY_CHECKS:
        assert check in out, out
    killed = re.search(r"killing ZooKeeper member (\d) \(\S+, \w+\), which (worker-\d)", out)
    assert killed, out
    leader = killed.group(2)
    assert re.search(rf"{leader}: connection lost \(SUSPENDED\)", out), out
    assert re.search(rf"{leader}: RECONNECTED to member [^{killed.group(1)}], same session", out), (
        out
    )
    assert f"member {killed.group(1)} restarted and back in the quorum" in out
    assert runtime_of(out) < 120
    if sys.platform.startswith("linux"):
        assert jvms_owned_by(proc.pid) == []  # the ensemble went with the demo
