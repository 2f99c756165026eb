"""Helpers shared by the test layers (``pythonpath = ["tests"]`` makes this ``import support``).

Only what more than one test module needs lives here: waiting for server-side conditions that
have no local event, the grant log that referees exclusive holdings, and running the command
line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from aiocoord import Client, EventType, Lock, LockLostError, NoNodeError
from aiocoord.errors import ServerSetupError
from aiocoord.testing import find_distribution, session_of

#: The ``zk_connect`` fixture's type: ``await zk_connect()`` opens a client (arguments as
#: :func:`aiocoord.connect`'s), closed when the test ends.
Factory = Callable[..., Awaitable[Client]]


async def eventually(
    check: Callable[[], Awaitable[bool]], timeout: float = 20.0, what: str = "the condition"
) -> None:
    """Wait until ``check()`` is true (re-checked every 10 ms); TimeoutError naming ``what``
    after ``timeout`` seconds (generous: it only matters when a test fails).

    For conditions on the server that no watch of the test reports (another session's nodes,
    the server's watch table); anything the client itself announces is awaited directly.
    """

    async def poll() -> None:
        while not await check():  # noqa: ASYNC110 - server state has no local event
            await asyncio.sleep(0.01)

    try:
        await asyncio.wait_for(poll(), timeout)
    except asyncio.TimeoutError:
        raise asyncio.TimeoutError(f"{what} did not hold within {timeout} s") from None


@dataclass
class Grant:
    """One holding of an exclusive resource: who, with which fencing token, from when to when
    (``end`` None while it lasts; it ends at release or when the holder is told of a loss)."""

    holder: str
    token: int
    start: float
    end: float | None = None


class GrantLog:
    """Records every grant of one exclusive lock, from every client, and referees them: no two
    holdings overlap in time, and fencing tokens increase strictly in grant order."""

    def __init__(self) -> None:
        self.grants: list[Grant] = []
        self._waiters: list[asyncio.Future[None]] = []

    def enter(self, holder: str, token: int | None) -> Grant:
        """``holder`` was granted the lock with fencing ``token``."""
        assert token is not None, f"{holder} holds with no fencing token"
        grant = Grant(holder, token, time.monotonic())
        self.grants.append(grant)
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)
        return grant

    def granted(self, holder: str, after: str | None = None) -> bool:
        """Whether ``holder`` was granted the lock (after ``after``'s first grant, if given)."""
        names = [g.holder for g in self.grants]
        if after is not None:
            names = names[names.index(after) :] if after in names else []
        return holder in names

    async def wait_granted(self, holder: str, after: str | None = None) -> None:
        """Wait until :meth:`granted` is true."""
        while not self.granted(holder, after):
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            await fut

    def exit(self, grant: Grant) -> None:
        """The holding ended (released, or its holder was told it was lost)."""
        if grant.end is None:
            grant.end = time.monotonic()

    def violations(self) -> list[str]:
        """Every overlap between two holdings and every fencing token that did not grow."""
        found: list[str] = []
        now = time.monotonic()
        for i, a in enumerate(self.grants):
            for b in self.grants[i + 1 :]:
                a_end = a.end if a.end is not None else now
                b_end = b.end if b.end is not None else now
                overlap = min(a_end, b_end) - max(a.start, b.start)
                if overlap > 0:
                    found.append(
                        f"{a.holder} (token {a.token}) and {b.holder} (token {b.token}) "
                        f"held together for {overlap:.3f} s"
                    )
        for prev, cur in zip(self.grants, self.grants[1:], strict=False):
            if cur.token <= prev.token:
                found.append(
                    f"{cur.holder} was granted token {cur.token} after {prev.holder}'s {prev.token}"
                )
        return found


async def hold(
    lock: Lock,
    name: str,
    log: GrantLog,
    until: asyncio.Event,
    timeout: float = 30.0,
    again_after_loss: bool = False,
) -> None:
    """Take ``lock``, log the grant, hold it until ``until`` is set or the loss is reported,
    log the end, release; with ``again_after_loss``, take it again after a loss."""
    while True:
        assert await lock.acquire(timeout=timeout), f"{name} timed out"
        grant = log.enter(name, lock.fencing_token)
        lost = lock.lost
        stop = asyncio.ensure_future(until.wait())
        loss = asyncio.ensure_future(lost.wait())
        try:
            await asyncio.wait((stop, loss), return_when=asyncio.FIRST_COMPLETED)
        finally:
            log.exit(grant)
            stop.cancel()
            loss.cancel()
        with contextlib.suppress(LockLostError):
            await lock.release()
        if until.is_set() or not again_after_loss:
            return


async def child_names(client: Client, path: str) -> list[str]:
    """The children of ``path``, sorted; none if it is missing (a lock's parent is a container
    node, which the server may remove whenever it is empty: between an ``exists`` and a
    ``children``, too)."""
    try:
        return sorted(await client.children(path))
    except NoNodeError:
        return []


async def _children_are(client: Client, path: str, n: int) -> bool:
    try:
        return len(await client.children(path)) == n
    except NoNodeError:
        return False


async def container_sweeps(client: Client, passes: int = 2, timeout: float = 30.0) -> None:
    """Return once the server's container sweep (every ``znode.container.checkIntervalMs``) has
    run ``passes`` times since the call, each proven by a canary it removed: a container that
    had a child and lost it, which the next sweep deletes (a watch sees it go).

    A sweep deletes every container that is empty (and has had a child) when it starts. The
    sweep that removed the first canary started after the call, so it took every container
    empty since before the call too, though maybe after the canary; the second canary is made
    after that sweep began, so a later sweep removes it, after the first one's deletions. With
    ``passes`` >= 2, then, every such container is gone when this returns, and a persistent
    node is still there whatever its children did: no sleep, whatever the interval."""
    for _ in range(passes):
        canary = f"/container-sweep-canary-{uuid.uuid4().hex}"
        await client.create(canary, container=True)
        await client.create(canary + "/child")
        await client.delete(canary + "/child")
        stat, watch = await client.exists(canary, watch=True)
        if stat is None:
            watch.cancel()  # removed already: a sweep ran
            continue
        event = await asyncio.wait_for(watch, timeout)
        assert event.type is EventType.DELETED, event


async def stale_grant_scenario(
    a: Client,
    b: Client,
    *,
    cut: Callable[[], None],
    heal: Callable[[], None],
    release: Callable[[GrantLog], Awaitable[None]],
    b_holds: float,
    path: str = "/p",
) -> GrantLog:
    """Client ``a`` holds the lock on ``path`` and one of its own tasks waits behind; ``cut()``
    partitions ``a`` and ``b`` asks for the lock (it gets it once ``a``'s session expires).
    ``a``'s holder releases when ``release(log)`` returns; ``b`` holds ``b_holds`` seconds (the
    window a stale grant would show in); then ``heal()``, and ``a``'s waiter, after the loss it
    is told of, takes the lock for real. Returns the grant log of every client."""
    log = GrantLog()
    release_a, end_waiter, end_b = asyncio.Event(), asyncio.Event(), asyncio.Event()
    a_holder = asyncio.ensure_future(hold(Lock(a, path), "a-holder", log, release_a))
    await eventually(lambda: _children_are(b, path, 1))
    a_waiter = asyncio.ensure_future(
        hold(Lock(a, path), "a-waiter", log, end_waiter, timeout=60, again_after_loss=True)
    )
    await eventually(lambda: _children_are(b, path, 2))
    # The waiter has armed its watches (no request of ``a`` in flight): it is waiting.
    await eventually(lambda: _idle(a))
    cut()
    b_task = asyncio.ensure_future(hold(Lock(b, path), "b", log, end_b))
    await release(log)
    release_a.set()
    await a_holder
    await asyncio.wait_for(log.wait_granted("b"), 20)
    await asyncio.sleep(b_holds)  # b's critical section
    end_b.set()
    await b_task
    heal()
    await asyncio.wait_for(log.wait_granted("a-waiter", after="b"), 30)
    end_waiter.set()
    await a_waiter
    return log


async def _idle(client: Client) -> bool:
    return session_of(client).pending_count == 0


# --- the command line -----------------------------------------------------------------------


async def run_cli(
    *args: str,
    timeout: float,
    env: dict[str, str] | None = None,
    merge_stderr: bool = False,
) -> tuple[int, str, str]:
    """Run ``python -m aiocoord ARGS``: exit status, stdout, stderr (with ``merge_stderr``,
    stderr goes into stdout, interleaved as written, and the third item is empty)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aiocoord",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        raise AssertionError(f"aiocoord {args} ran over {timeout} s:\n{out.decode()}") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(), (err or b"").decode()


def local_jvm_available() -> bool:
    """Whether a local ZooKeeper distribution and Java are there to start servers with."""
    try:
        find_distribution()
    except ServerSetupError:
        return False
    return True


needs_local_jvm = pytest.mark.skipif(
    not local_jvm_available(), reason="needs a local ZooKeeper distribution and Java"
)


#: Where the ZooKeeper and Curator jars are (Debian's packages put them here).
JAVA_LIBS = Path(os.environ.get("AIOCOORD_JAVA_LIBS", "/usr/share/java"))
JAVA_SOURCES = Path(__file__).resolve().parent / "integration" / "java"


def compile_java_peer(out: Path, name: str, jars: Sequence[str]) -> list[str]:
    """The command that runs ``integration/java/<name>.java``, compiled into ``out`` against
    ``jars`` (file names in :data:`JAVA_LIBS`); skips the test without a JDK or the jars."""
    missing = [jar for jar in jars if not (JAVA_LIBS / jar).exists()]
    if shutil.which("javac") is None or shutil.which("java") is None or missing:
        pytest.skip(f"needs a JDK and these jars in {JAVA_LIBS}: {missing or 'javac'}")
    classpath = os.pathsep.join(str(JAVA_LIBS / jar) for jar in jars)
    subprocess.run(
        ["javac", "-nowarn", "-d", str(out), "-cp", classpath, str(JAVA_SOURCES / f"{name}.java")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    # UTF-8 whatever the locale: Java 17 still takes its default charset from it.
    return ["java", "-Dfile.encoding=UTF-8", "-cp", os.pathsep.join([classpath, str(out)]), name]


async def start_java_peer(command: list[str], *args: str) -> asyncio.subprocess.Process:
    """Start a peer from :func:`compile_java_peer`'s ``command`` with ``args``, its standard
    streams piped (a small heap and the serial collector: the machine is shared)."""
    java, *rest = command
    return await asyncio.create_subprocess_exec(
        java,
        "-Xmx256m",
        "-XX:+UseSerialGC",
        *rest,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def java_line(java: asyncio.subprocess.Process, timeout: float = 60) -> str:
    """The peer's next line on stdout; fails with its stderr if it ended first."""
    assert java.stdout is not None
    line = await asyncio.wait_for(java.stdout.readline(), timeout)
    if not line:
        assert java.stderr is not None
        err = await java.stderr.read()
        raise AssertionError(f"the Java peer ended early: {err.decode()[-3000:]}")
    return line.decode().rstrip("\n")


#: What CuratorToolsPeer.java needs: ZooKeeper's digest provider, Curator's gzip provider
#: and a Curator client.
CURATOR_TOOLS_JARS = (
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "curator-client.jar",
    "curator-framework.jar",
    "guava.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
)

#: What a peer using Curator's recipes needs (the Curator interop tests).
CURATOR_RECIPES_JARS = (*CURATOR_TOOLS_JARS, "curator-recipes.jar")


def ask_java_peer(command: list[str], requests: Sequence[str]) -> list[str]:
    """Run a line-per-request Java peer over ``requests``; its answer lines."""
    done = subprocess.run(
        command,
        input="".join(r + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()
