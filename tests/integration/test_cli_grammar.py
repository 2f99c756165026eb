"""One grammar for the ``aiocoord`` commands (docs/operations.md, "The command line"): every
command that reads an ensemble takes the connect string as ``--connect HOSTS`` or as its first
argument ``HOSTS`` (never confused with a path, which starts with ``/``); bad values are refused
before anything is sent, with one line and exit status 2, never a traceback; ``tree`` shows a
queue in queue order; ``inspect`` is ``locks --kind``."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from support import needs_local_jvm, run_cli

import aiocoord
from aiocoord.testing import ServerHandle

ClientFactory = Callable[..., Awaitable[aiocoord.Client]]


async def cli(*args: str, timeout: float = 60) -> tuple[int, str, str]:
    return await run_cli(*args, timeout=timeout)


# --- HOSTS or --connect, the same for every command ------------------------------------------


@pytest.mark.parametrize(
    "command",
    [("tree",), ("tree", "/"), ("stat",), ("locks", "/l"), ("inspect", "lock", "/l")],
    ids=" ".join,
)
async def test_every_command_takes_hosts_first_or_as_connect(
    zookeeper: ServerHandle, zk_namespace: str, command: tuple[str, ...]
) -> None:
    hosts = zookeeper.connect_string + (zk_namespace if command[0] != "stat" else "")
    name, rest = command[0], command[1:]
    # inspect's kind comes first: inspect KIND [HOSTS] PATH
    positional = (name, rest[0], hosts, *rest[1:]) if name == "inspect" else (name, hosts, *rest)
    by_position = await cli(*positional, "--json")
    by_option = await cli(name, *rest, "--connect", hosts, "--json")
    assert by_position[0] == by_option[0] == 0, (by_position, by_option)
    first, second = json.loads(by_position[1]), json.loads(by_option[1])
    for doc in (first, second):  # what changes from one run to the next
        doc.pop("time", None)
        for member in doc.get("members", []):
            for key in ("connections", "received", "sent", "zxid", "outstanding"):
                member.pop(key, None)
            for key in [k for k in member if k.startswith("latency")]:
                member.pop(key)
    assert first == second


async def test_tree_with_only_hosts_reads_the_root_there(
    zookeeper: ServerHandle, zk_client: aiocoord.Client, zk_namespace: str
) -> None:
    await zk_client.create("/here", b"")
    code, out, err = await cli("tree", zookeeper.connect_string + zk_namespace)
    assert code == 0, err
    assert out.splitlines() == ["/  (0 B)", "  here  (0 B)"]


# --- refused before anything is sent ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("tree", "--connect", ""), "connect string is empty"),
        (("stat", "--connect", ""), "connect string is empty"),
        (("locks", "--connect", "", "/l"), "connect string is empty"),
        (("inspect", "lock", "--connect", "", "/l"), "connect string is empty"),
        (("demo", "--connect", ""), "connect string is empty"),
        (("stat", "--timeout", "-1"), "positive number of seconds"),
        (("tree", "--timeout", "0"), "positive number of seconds"),
        (("tree", "--depth", "-1"), "0 or more"),
        (("locks", "h:1,,x", "/l"), "empty member"),
        (("stat", "127.0.0.1:1,"), "empty member"),
        (("stat", "/not-hosts"), "is a path, not a connect string"),
        (("locks", "/a", "/b"), "is a path, not a connect string"),
        (("server", "--port", "80000"), "1-65535"),
        (("server", "--port", "-5"), "1-65535"),
        (("server", "--port", "x"), "not a port number"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else None,
)
async def test_bad_values_are_refused_with_one_line_and_status_2(
    args: tuple[str, ...], said: str
) -> None:
    code, out, err = await cli(*args)
    assert (code, out) == (2, ""), err
    assert said in err
    assert "Traceback" not in err


async def test_a_name_that_cannot_resolve_fails_at_once() -> None:
    started = time.monotonic()
    code, out, err = await cli("tree", "--connect", "no-such-host.invalid:2181")
    took = time.monotonic() - started
    assert (code, out) == (2, ""), err
    assert "cannot resolve no-such-host.invalid" in err
    # The client would retry the name for the whole --timeout (5 s) before giving up.
    assert took < 4.0, took


# --- server --port 0 -------------------------------------------------------------------------


@needs_local_jvm
async def test_server_on_port_0_picks_a_free_port_and_prints_it() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aiocoord",
        "server",
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    try:
        seen: list[str] = []
        while not any("connect string:" in line for line in seen):
            line = await asyncio.wait_for(proc.stdout.readline(), 90)
            assert line, "".join(seen)
            seen.append(line.decode())
        found = re.search(r"connect string: 127\.0\.0\.1:(\d+)", "".join(seen))
        assert found, seen
        port = int(found.group(1))
        assert port != 0
        assert f"starting ZooKeeper on 127.0.0.1:{port} " in seen[0]
        async with aiocoord.connect(f"127.0.0.1:{port}") as client:
            assert await client.exists("/zookeeper") is not None
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# --- tree shows a queue in queue order -------------------------------------------------------


async def test_tree_lists_sequential_children_by_sequence_not_by_name(
    zookeeper: ServerHandle, zk_client: aiocoord.Client, zk_namespace: str
) -> None:
    # Protected nodes start with a random UUID: here the holder's sorts last by name.
    first = await zk_client.create("/q/_c_ffff-lock-", b"", sequential=True, make_parents=True)
    second = await zk_client.create("/q/_c_0000-lock-", b"", sequential=True)
    await zk_client.create("/q/config", b"")
    code, out, err = await cli("tree", zookeeper.connect_string + zk_namespace, "/q")
    assert code == 0, err
    names = [line.split()[0] for line in out.splitlines()[1:]]
    assert names == ["config", first.rsplit("/", 1)[1], second.rsplit("/", 1)[1]]


# --- inspect is locks --kind ------------------------------------------------------------------


async def test_inspect_prints_what_locks_kind_prints(
    zookeeper: ServerHandle, zk_connect: ClientFactory, zk_namespace: str
) -> None:
    hosts = zookeeper.connect_string + zk_namespace
    alpha, bravo = await zk_connect(), await zk_connect()

    async def candidate() -> None:
        async with aiocoord.Election(bravo, "/vote", identifier="bravo").leadership():
            raise AssertionError("bravo must not lead while alpha does")

    docs: list[dict[str, Any]] = []
    async with aiocoord.Election(alpha, "/vote", identifier="alpha").leadership(10):
        other = asyncio.ensure_future(candidate())
        try:
            async with aiocoord.ChildrenCache(alpha, "/vote") as cache:
                await cache.wait_for(lambda c: len(c) == 2, timeout=10)
            for args in (
                ("inspect", "election", hosts, "/vote"),
                ("locks", hosts, "/vote"),
                ("locks", "--kind", "election", hosts, "/vote"),
            ):
                code, out, err = await cli(*args, "--json")
                assert code == 0, err
                docs.append(json.loads(out))
        finally:
            other.cancel()
            await asyncio.gather(other, return_exceptions=True)
    for doc in docs:
        for entry in doc["entries"]:
            entry.pop("age_seconds")
    by_inspect, as_lock, as_election = docs
    assert by_inspect == as_election
    assert as_election["layout"] == "election"
    assert [(e["role"], e["identifier"]) for e in as_election["entries"]] == [
        ("leader", "alpha"),
        ("candidate", "bravo"),
    ]
    # Found from the node names alone, an Election's queue is a lock's: the same nodes.
    assert [e["node"] for e in as_lock["entries"]] == [e["node"] for e in as_election["entries"]]
