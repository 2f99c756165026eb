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
import subprocess
import sys
from collections.abc import Awaitable, Callable

import pytest

import aiocoord
from aiocoord.testing import ServerHandle, ZooKeeperEnsemble
from aiocoord.testing._process import free_ports

ClientFactory = Callable[..., Awaitable[aiocoord.Client]]


async def cli(*args: str, timeout: float = 60) -> tuple[int, str, str]:
    """Run ``python -m aiocoord ARGS``: exit status, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aiocoord",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.communicate()
        raise AssertionError(f"aiocoord {args} ran over {timeout} s") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


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
