"""The on-call commands, run as a subprocess the way a user runs them, against the real
server: ``stat`` (every member's four-letter words in one table), ``locks`` (a lock-like
recipe's queue with sessions, client addresses and fencing tokens), ``--json`` on every
read-only command, and the exit statuses."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from support import needs_local_jvm, run_cli

import aiocoord
from aiocoord.testing import ServerHandle, ZooKeeperEnsemble, ZooKeeperServer
from aiocoord.testing._process import free_ports

ClientFactory = Callable[..., Awaitable[aiocoord.Client]]


async def cli(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run ``python -m aiocoord ARGS``: exit status, stdout, stderr."""
    return await run_cli(*args, timeout=timeout, env=env)


def dead_address() -> str:
    """A loopback address where nothing listens."""
    return f"127.0.0.1:{free_ports(1, '127.0.0.1')[0]}"


# --- stat -----------------------------------------------------------------------------------


def stat_row(out: str, server: str) -> list[str]:
    """The cells of ``server``'s row of a ``stat`` table."""
    for line in out.splitlines():
        if line.startswith(server + " "):
            return line.split()
    raise AssertionError(f"no row for {server}:\n{out}")


async def test_stat_shows_a_standalone_server_with_numbers_that_parse(
    zookeeper: ServerHandle, zk_client: aiocoord.Client
) -> None:
    await zk_client.exists("/", watch=True)  # one watch at least: the counts are live
    code, out, err = await cli("stat", zookeeper.connect_string)

    assert code == 0, out + err
    assert out.splitlines()[0].split() == [
        "server", "mode", "zxid", "conns", "latency", "ms", "outst", "znodes", "watches"
    ]  # fmt: skip
    _, mode, zxid, conns, latency, outstanding, znodes, watches = stat_row(
        out, zookeeper.connect_string
    )
    assert mode == "standalone"
    assert int(zxid, 16) >= 0
    assert int(conns) >= 2  # the test's client and the command's own connection
    low, avg, high = (float(x) for x in latency.split("/"))
    assert low <= avg <= high
    assert int(outstanding) >= 0
    assert int(znodes) >= 2
    assert int(watches) >= 1
    assert re.search(r"^version: 3\.\d+\.\d+$", out, re.M), out
    assert err == ""  # no progress line: stderr is not a terminal


async def test_stat_shows_an_unreachable_member_as_a_row_and_exits_1(
    zookeeper: ServerHandle,
) -> None:
    dead = dead_address()
    code, out, _ = await cli("stat", f"{zookeeper.connect_string},{dead}", "--timeout", "2")

    assert code == 1
    assert stat_row(out, zookeeper.connect_string)[1] == "standalone"
    assert stat_row(out, dead)[1:] == ["unreachable:", "connection", "refused"]

    code, out, _ = await cli("stat", f"{zookeeper.connect_string},{dead}", "--json")
    assert code == 1
    members = json.loads(out)["members"]
    assert [m["server"] for m in members] == [zookeeper.connect_string, dead]
    assert members[0]["reachable"] and members[0]["error"] is None
    assert members[0]["mode"] == "standalone"
    assert isinstance(members[0]["zxid"], int) and isinstance(members[0]["znode_count"], int)
    assert members[1] == {**{k: None for k in members[1]}, "server": dead, "reachable": False,
                          "error": "unreachable: connection refused"}  # fmt: skip


async def test_stat_watch_refreshes_count_times(zookeeper: ServerHandle) -> None:
    code, out, _ = await cli(
        "stat", zookeeper.connect_string, "--watch", "0.1", "--count", "3", "--json"
    )
    assert code == 0, out
    docs = [json.loads(line) for line in out.splitlines()]
    assert len(docs) == 3
    assert all(d["members"][0]["mode"] == "standalone" for d in docs)
    assert docs[0]["time"] < docs[1]["time"] < docs[2]["time"]

    code, out, _ = await cli("stat", zookeeper.connect_string, "--watch", "0.1", "--count", "2")
    assert code == 0, out
    assert len(re.findall(r"^server\s+mode", out, re.M)) == 2


@pytest.mark.ensemble
async def test_stat_on_an_ensemble_shows_one_leader_and_two_followers(
    zookeeper_ensemble: ZooKeeperEnsemble,
) -> None:
    zookeeper_ensemble.wait_for_quorum()
    code, out, err = await cli("stat", zookeeper_ensemble.connect_string, "--json")
    assert code == 0, out + err
    members = json.loads(out)["members"]
    assert sorted(m["mode"] for m in members) == ["follower", "follower", "leader"]
    leader = zookeeper_ensemble.member_connect_string(zookeeper_ensemble.leader())
    assert next(m for m in members if m["mode"] == "leader")["server"] == leader
    assert all(isinstance(m["zxid"], int) and m["connections"] >= 0 for m in members)


async def test_progress_goes_to_stderr_only_on_a_terminal(zookeeper: ServerHandle) -> None:
    primary, secondary = pty.openpty()
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "aiocoord", "stat", zookeeper.connect_string],
            stdout=subprocess.PIPE,
            stderr=secondary,
            timeout=60,
        )
        os.close(secondary)
        secondary = -1
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
        if secondary != -1:
            os.close(secondary)
    assert done.returncode == 0
    assert b"asking 1 member(s)" in shown
    assert b"asking" not in done.stdout


# --- usage ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("stat", "127.0.0.1:2181", "--bogus"),
        ("stat", "host:notaport"),
        ("stat", "--watch", "0"),
        ("stat", "127.0.0.1:1", "--connect", "127.0.0.1:2"),
        ("nosuchcommand",),
    ],
)
async def test_usage_errors_exit_2_before_contacting_anything(args: tuple[str, ...]) -> None:
    code, out, err = await cli(*args)
    assert code == 2, out + err
    assert out == ""
    assert err.strip()


# --- locks ----------------------------------------------------------------------------------


async def children_reach(client: aiocoord.Client, path: str, count: int) -> None:
    """Wait until ``path`` has ``count`` children (a cache's view: no polling)."""
    async with aiocoord.ChildrenCache(client, path) as cache:
        await cache.wait_for(lambda c: len(c) == count, timeout=10)


async def locks_json(hosts: str, path: str) -> dict[str, Any]:
    code, out, err = await cli("locks", hosts, path, "--json")
    assert code == 0, out + err
    doc: dict[str, Any] = json.loads(out)
    return doc


async def test_locks_shows_the_holder_then_the_waiters_with_their_sessions(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    hosts = zookeeper.connect_string + zk_namespace
    alpha, bravo, charlie = [await zk_connect() for _ in range(3)]
    holder = aiocoord.Lock(alpha, "/locks/job", identifier="alpha")
    await holder.acquire()
    token, node_path = holder.fencing_token, holder.node_path
    waiters: list[asyncio.Task[Any]] = []
    for i, (client, name) in enumerate(((bravo, "bravo"), (charlie, "charlie"))):
        lock = aiocoord.Lock(client, "/locks/job", identifier=name)
        waiters.append(asyncio.ensure_future(lock.acquire()))
        await children_reach(alpha, "/locks/job", i + 2)  # queued in this order
    try:
        doc = await locks_json(hosts, "/locks/job")
        code, out, err = await cli("locks", hosts, "/locks/job")
    finally:
        for task in waiters:
            task.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        await holder.release()

    assert doc["path"] == "/locks/job" and doc["layout"] == "lock"
    entries = doc["entries"]
    assert [(e["position"], e["role"], e["holds"], e["identifier"]) for e in entries] == [
        (0, "holder", True, "alpha"),
        (1, "waiting", False, "bravo"),
        (2, "waiting", False, "charlie"),
    ]
    assert [e["session_id"] for e in entries] == [
        f"0x{c.session_id:x}" for c in (alpha, bravo, charlie)
    ]
    assert entries[0]["fencing_token"] == token
    assert node_path is not None and entries[0]["node"] == node_path.rsplit("/")[-1]
    assert [e["sequence"] for e in entries] == sorted(e["sequence"] for e in entries)
    assert all(e["node"].endswith(f"lock-{e['sequence']:010d}") for e in entries)
    for e in entries:  # `cons` shows each session's connection: a loopback client address
        assert re.fullmatch(r"127\.0\.0\.1:\d+", e["client"]), e
        assert e["server"] == zookeeper.connect_string
        assert 0 <= e["age_seconds"] < 60 and isinstance(e["ctime_ms"], int)

    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0] == "lock /locks/job: held by alpha; 2 waiting"
    assert lines[1].split() == [
        "#", "role", "identifier", "session", "client", "token", "age", "node"
    ]  # fmt: skip
    assert lines[2].split()[:6] == [
        "0", "holder", "alpha", f"0x{alpha.session_id:x}", entries[0]["client"],
        str(token),
    ]  # fmt: skip
    assert [line.split()[2] for line in lines[2:]] == ["alpha", "bravo", "charlie"]


async def test_locks_shows_a_semaphores_lease_then_the_acquiring_and_the_waiting(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    names = ("alpha", "bravo", "charlie")
    clients = [await zk_connect() for _ in names]
    sems = [
        aiocoord.Semaphore(c, "/sem", 1, identifier=n) for c, n in zip(clients, names, strict=True)
    ]
    lease = await sems[0].acquire()
    assert lease
    # bravo holds the semaphore's lock and waits with its lease node added; charlie queues.
    bravo = asyncio.ensure_future(sems[1].acquire())
    await children_reach(clients[0], "/sem/leases", 2)
    charlie = asyncio.ensure_future(sems[2].acquire())
    await children_reach(clients[0], "/sem/locks", 2)
    try:
        doc = await locks_json(zookeeper.connect_string + zk_namespace, "/sem")
    finally:
        for task in (bravo, charlie):
            task.cancel()
        await asyncio.gather(bravo, charlie, return_exceptions=True)
        await lease[0].release()

    assert doc["layout"] == "semaphore"
    entries = doc["entries"]
    assert [(e["role"], e["identifier"], e["node"].split("/")[0]) for e in entries] == [
        ("lease", "alpha", "leases"),
        ("acquiring", "bravo", "leases"),
        ("waiting", "charlie", "locks"),
    ]
    assert [e["session_id"] for e in entries] == [f"0x{c.session_id:x}" for c in clients]
    assert entries[0]["fencing_token"] == lease[0].fencing_token
    assert all(e["client"] is not None for e in entries)


async def test_locks_reads_read_write_locks_and_leader_latches(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    hosts = zookeeper.connect_string + zk_namespace
    r1, w = await zk_connect(), await zk_connect()
    reader = aiocoord.ReadWriteLock(r1, "/rw", identifier="reader-1").read
    await reader.acquire()
    writer = asyncio.ensure_future(
        aiocoord.ReadWriteLock(w, "/rw", identifier="writer").write.acquire()
    )
    await children_reach(r1, "/rw", 2)
    latches = []
    for i, (client, name) in enumerate(((r1, "alpha"), (w, "bravo"))):
        latch = aiocoord.LeaderLatch(client, "/leader", identifier=name)
        await latch.start()
        latches.append(latch)
        await children_reach(client, "/leader", i + 1)
    try:
        assert await latches[0].wait_until_leader(10)
        term = latches[0].term
        rw = await locks_json(hosts, "/rw")
        latch_doc = await locks_json(hosts, "/leader")
    finally:
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)
        await reader.release()
        for latch in latches:
            await latch.close()

    assert rw["layout"] == "rwlock"
    assert [(e["role"], e["identifier"]) for e in rw["entries"]] == [
        ("reader", "reader-1"),
        ("waiting writer", "writer"),
    ]
    assert latch_doc["layout"] == "latch"
    assert [(e["role"], e["identifier"]) for e in latch_doc["entries"]] == [
        ("leader", "alpha"),
        ("candidate", "bravo"),
    ]
    assert term is not None and latch_doc["entries"][0]["fencing_token"] == term.fencing_token


async def test_locks_marks_a_path_whose_contenders_mix_layouts(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str, kazoo: Any
) -> None:
    """The case no process is told of (docs/from-kazoo.md): aiocoord holds in Curator's layout
    and an unmodified kazoo Lock asks, and takes the lock too. ``locks`` shows both
    contenders, in queue order, and marks the path; a path of one layout is not marked."""
    hosts = zookeeper.connect_string + zk_namespace
    client = await zk_connect()
    ours = aiocoord.Lock(client, "/locks/mixed", identifier="py-holder")
    await ours.acquire()
    theirs = kazoo.Lock("/locks/mixed", "kazoo-holder")
    assert await asyncio.to_thread(theirs.acquire, True, 10)  # kazoo does not see our node
    plain = aiocoord.Lock(client, "/locks/plain", identifier="py-alone")
    await plain.acquire()
    try:
        doc = await locks_json(hosts, "/locks/mixed")
        code, out, err = await cli("locks", hosts, "/locks/mixed")
        alone = await locks_json(hosts, "/locks/plain")
    finally:
        await asyncio.to_thread(theirs.release)
        await ours.release()
        await plain.release()

    assert doc["layout"] == "lock" and doc["mixed_layouts"] is True
    assert [(e["role"], e["identifier"], e["node_layout"]) for e in doc["entries"]] == [
        ("holder", "py-holder", "curator"),
        ("waiting", "kazoo-holder", "kazoo"),  # waiting by our queue; kazoo believes it holds
    ]
    assert "__lock__" in doc["entries"][1]["node"]
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0].startswith("lock /locks/mixed: held by py-holder; 1 waiting; MIXED LAYOUTS")
    assert "extra_lock_patterns" in lines[0]
    assert lines[1].split()[-1] == "layout"
    assert [line.split()[-1] for line in lines[2:]] == ["curator", "kazoo"]
    assert alone["mixed_layouts"] is False
    assert [e["node_layout"] for e in alone["entries"]] == ["curator"]


async def test_locks_reads_kazoos_locks_and_marks_a_mixed_read_write_lock(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str, kazoo: Any
) -> None:
    hosts = zookeeper.connect_string + zk_namespace
    client = await zk_connect()
    kazoo_lock = kazoo.Lock("/locks/theirs", "kazoo-alone")
    assert await asyncio.to_thread(kazoo_lock.acquire, True, 10)
    reader = aiocoord.ReadWriteLock(client, "/rw-mixed", identifier="py-reader").read
    await reader.acquire()
    kazoo_reader = kazoo.ReadLock("/rw-mixed", "kazoo-reader")
    assert await asyncio.to_thread(kazoo_reader.acquire, True, 10)
    try:
        theirs = await locks_json(hosts, "/locks/theirs")
        rw = await locks_json(hosts, "/rw-mixed")
    finally:
        await asyncio.to_thread(kazoo_lock.release)
        await asyncio.to_thread(kazoo_reader.release)
        await reader.release()

    assert (theirs["layout"], theirs["mixed_layouts"]) == ("lock", False)
    assert [(e["role"], e["identifier"], e["node_layout"]) for e in theirs["entries"]] == [
        ("holder", "kazoo-alone", "kazoo")
    ]
    assert (rw["layout"], rw["mixed_layouts"]) == ("rwlock", True)
    assert [(e["identifier"], e["node_layout"]) for e in rw["entries"]] == [
        ("py-reader", "curator"),
        ("kazoo-reader", "kazoo"),
    ]
    assert rw["entries"][0]["role"] == "reader"


async def test_locks_on_a_missing_path_and_bad_input(
    zookeeper: ServerHandle, zk_namespace: str
) -> None:
    hosts = zookeeper.connect_string + zk_namespace
    code, out, _ = await cli("locks", "/nowhere", env={"AIOCOORD_CONNECT": hosts})
    assert (code, out.strip()) == (0, "/nowhere: nobody holds or waits")
    assert (await locks_json(hosts, "/nowhere")) == {
        "path": "/nowhere",
        "layout": None,
        "mixed_layouts": False,
        "entries": [],
    }
    code, out, err = await cli("locks", hosts, "no-slash")
    assert (code, out) == (2, "")
    assert "no-slash" in err
    code, out, err = await cli("locks", dead_address(), "/x", "--timeout", "0.5")
    assert (code, out) == (1, "")
    assert "cannot reach ZooKeeper" in err


@needs_local_jvm
async def test_a_server_that_allows_srvr_alone_still_gets_its_row_and_its_queue() -> None:
    """ZooKeeper's default whitelist: ``srvr`` (and here ``ruok``, which the launcher needs),
    no ``mntr`` and no ``cons``: the counts they give are unknown, nothing fails."""
    async with ZooKeeperServer(extra_config={"4lw.commands.whitelist": "srvr, ruok"}) as zk:
        code, out, err = await cli("stat", zk.connect_string)
        assert code == 0, out + err
        assert stat_row(out, zk.connect_string)[1] == "standalone"
        assert stat_row(out, zk.connect_string)[-1] == "-"  # watches: mntr is refused

        async with aiocoord.connect(zk.connect_string) as client:
            lock = aiocoord.Lock(client, "/l", identifier="only")
            async with lock:
                doc = await locks_json(zk.connect_string, "/l")
        [entry] = doc["entries"]
        assert entry["session_id"] == f"0x{client.session_id:x}"
        assert (entry["role"], entry["client"], entry["server"]) == ("holder", None, None)


# --- --json on tree and inspect -------------------------------------------------------------


async def test_tree_json_has_every_node_with_its_stat_and_data(
    zookeeper: ServerHandle, zk_client: aiocoord.Client, zk_namespace: str
) -> None:
    await zk_client.create("/app/config", b"v1", make_parents=True)
    await zk_client.create("/app/blob", b"\xff\x00", make_parents=True)
    await zk_client.create("/app/session", b"", ephemeral=True)
    await zk_client.create("/app/config/deep/er", make_parents=True)
    hosts = zookeeper.connect_string + zk_namespace

    code, out, err = await cli("tree", "/app", "--data", "--json", "--connect", hosts)
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["path"] == "/app"
    nodes = {n["path"]: n for n in doc["nodes"]}
    assert list(nodes) == [
        "/app", "/app/blob", "/app/config", "/app/config/deep", "/app/config/deep/er",
        "/app/session",
    ]  # fmt: skip
    config, stat = nodes["/app/config"], (await zk_client.get("/app/config"))[1]
    assert (config["data"], config["data_base64"], config["depth"]) == ("v1", "djE=", 1)
    assert (config["czxid"], config["version"], config["num_children"]) == (
        stat.czxid, stat.version, 1
    )  # fmt: skip
    assert (nodes["/app/blob"]["data"], nodes["/app/blob"]["data_base64"]) == (None, "/wA=")
    assert nodes["/app/session"]["ephemeral_owner"] == f"0x{zk_client.session_id:x}"
    assert nodes["/app"]["ephemeral_owner"] is None

    code, out, _ = await cli("tree", "/app", "--depth", "1", "--json", "--connect", hosts)
    assert code == 0
    shallow = {n["path"]: n for n in json.loads(out)["nodes"]}
    assert shallow["/app/config"]["hidden_children"] == 1
    assert shallow["/app/config"]["data"] is None  # not asked for
    assert "/app/config/deep" not in shallow


async def test_inspect_json_lists_the_contenders(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    alpha, bravo = await zk_connect(), await zk_connect()
    holder = aiocoord.Lock(alpha, "/locks/j", identifier="alpha")
    await holder.acquire()
    waiter = asyncio.ensure_future(aiocoord.Lock(bravo, "/locks/j", identifier="bravo").acquire())
    await children_reach(alpha, "/locks/j", 2)
    try:
        code, out, err = await cli(
            "inspect",
            "lock",
            "/locks/j",
            "--json",
            "--connect",
            zookeeper.connect_string + zk_namespace,
        )
        token = holder.fencing_token
    finally:
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        await holder.release()
    assert code == 0, out + err
    doc = json.loads(out)
    # inspect is `locks --kind`: the keys of locks --json
    assert (doc["layout"], doc["path"]) == ("lock", "/locks/j")
    assert [
        (c["position"], c["role"], c["identifier"], c["session_id"]) for c in doc["entries"]
    ] == [
        (0, "holder", "alpha", f"0x{alpha.session_id:x}"),
        (1, "waiting", "bravo", f"0x{bravo.session_id:x}"),
    ]
    assert doc["entries"][0]["fencing_token"] == token


async def test_exit_statuses_of_tree_and_inspect() -> None:
    dead = dead_address()
    assert (await cli("tree", "--connect", dead, "--timeout", "0.5"))[0] == 1
    assert (await cli("tree", "--connect", "host:notaport"))[0] == 2
    assert (await cli("tree", "--depth", "x"))[0] == 2
    assert (await cli("inspect", "nokind", "/x"))[0] == 2


# --- --json on server and demo --------------------------------------------------------------


@needs_local_jvm
async def test_server_json_banner_is_one_line_then_ctrl_c_stops_it() -> None:
    port = free_ports(1, "127.0.0.1")[0]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aiocoord",
        "server",
        "--port",
        str(port),
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        banner = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
        assert banner["connect_string"] == f"127.0.0.1:{port}"
        assert banner["temporary"] is True and re.fullmatch(r"3\.\d+\.\d+", banner["version"])
        code, out, _ = await cli("stat", banner["connect_string"], "--json")
        assert code == 0 and json.loads(out)["members"][0]["mode"] == "standalone"
        proc.send_signal(signal.SIGINT)
        rest, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0
    assert rest == b""  # stdout holds the banner alone
    assert b"stopped" in err
    with pytest.raises(ProcessLookupError):
        os.kill(banner["pid"], 0)


async def test_demo_json_prints_its_checks_as_one_object(zookeeper: ServerHandle) -> None:
    code, out, err = await cli(
        "demo", "--connect", zookeeper.connect_string, "--workers", "2", "--json", timeout=120
    )
    assert code == 0, out + err
    result = json.loads(out)
    assert result["ok"] is True and all(result["checks"].values())
    assert result["ledger"] == result["jobs"] > 0
    assert "result: all checks passed" in err  # the log and summary went to stderr


async def test_a_hostile_identifier_is_shown_escaped_and_cut(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    # Any client may write any bytes as a contender's identifier: escape sequences that
    # would rewrite the operator's terminal, bad UTF-8, a megabyte of text.
    hostile = b"\x1b[2J\x1b]0;owned\x07\n\xff" + b"A" * 100_000
    writer = await zk_connect()
    await writer.create("/locks/h/_c_x-lock-0000000000", hostile, make_parents=True)
    hosts = zookeeper.connect_string + zk_namespace
    outputs = [
        await cli("locks", hosts, "/locks/h"),
        await cli("inspect", "lock", "/locks/h", "--connect", hosts),
    ]
    for code, out, err in outputs:
        assert code == 0, out + err
        assert "\x1b" not in out and "\x07" not in out, out[:200]
        assert "\\x1b[2J" in out
        assert max(len(line) for line in out.splitlines()) < 300
    code, out, _ = await cli("locks", hosts, "/locks/h", "--json")
    assert json.loads(out)["entries"][0]["identifier"].startswith("\x1b[2J")  # JSON: whole
