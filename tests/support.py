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
import urllib.parse
import uuid
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
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
    except TimeoutError:
        raise TimeoutError(f"{what} did not hold within {timeout} s") from None


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
    except TimeoutError:
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


#: The Curator versions the Java peers of ``integration/java`` run against, each with the
#: ZooKeeper client, Guava, SLF4J and Jackson jars Debian ships beside it (what a Java service
#: on that release loads): 5.4 is bookworm's 5.4.0 (ZooKeeper 3.8), 5.7 trixie's 5.7.1
#: (ZooKeeper 3.9). ``scripts/install-curator`` (run by ``make test``) fetches them.
CURATOR_VERSIONS = ("5.4", "5.7")
#: Where ``scripts/install-curator`` puts them: ``<version>/usr/share/java/*.jar``.
CURATOR_JARS = Path(os.environ.get("AIOCOORD_CURATOR_JARS", "/var/cache/aiocoord/curator"))
#: The Java the peers are compiled for (``javac --release``): the oldest they run on, so that
#: every later JVM loads them (Java 21 refuses a class javac 25 made for 25).
JAVA_RELEASE = 17
JAVA_SOURCES = Path(__file__).resolve().parent / "integration" / "java"

#: Every jar a peer needs, with a class of each (to check where a peer loads it from), each
#: before the jars whose manifests name it: a jar's Class-Path entries (/usr/share/java's
#: jars, another Curator's or ZooKeeper's there) load right after that jar, ahead of what
#: the classpath lists later.
_PEER_JARS = {
    "slf4j-api": "org.slf4j.LoggerFactory",
    "slf4j-nop": "org.slf4j.impl.StaticLoggerBinder",
    "jackson-annotations": "com.fasterxml.jackson.annotation.JsonProperty",
    "jackson-core": "com.fasterxml.jackson.core.JsonFactory",
    "jackson-databind": "com.fasterxml.jackson.databind.ObjectMapper",
    "guava": "com.google.common.collect.ImmutableList",
    "zookeeper-jute": "org.apache.jute.Record",
    "zookeeper": "org.apache.zookeeper.ZooKeeper",
    "curator-client": "org.apache.curator.CuratorZookeeperClient",
    "curator-framework": "org.apache.curator.framework.CuratorFramework",
    "curator-recipes": "org.apache.curator.framework.recipes.locks.InterProcessMutex",
    "curator-x-discovery": "org.apache.curator.x.discovery.ServiceDiscovery",
}


def wanted_curators() -> tuple[str, ...]:
    """The Curator versions whose peers must run: those ``$AIOCOORD_CURATOR_VERSIONS`` names
    (``none`` for none: a machine with no JDK or no Debian packages), all of
    :data:`CURATOR_VERSIONS` when it is not set. A wanted one that is not installed fails its
    tests; CI installs them all."""
    words = os.environ.get("AIOCOORD_CURATOR_VERSIONS", " ".join(CURATOR_VERSIONS)).split()
    wanted = tuple(w for w in words if w != "none")
    unknown = [w for w in wanted if w not in CURATOR_VERSIONS]
    if unknown:
        pytest.fail(f"AIOCOORD_CURATOR_VERSIONS names {unknown}; known: {CURATOR_VERSIONS}")
    return wanted


@dataclass(frozen=True)
class JavaPeers:
    """The Java peers of ``integration/java``, compiled against one Curator version."""

    #: the Curator version, one of :data:`CURATOR_VERSIONS`
    curator: str
    classpath: str

    def command(self, name: str) -> list[str]:
        """The command that runs the peer ``integration/java/<name>.java`` on the system's
        ``java``."""
        # UTF-8 whatever the locale: Java 17 still takes its default charset from it.
        return ["java", "-Dfile.encoding=UTF-8", "-cp", self.classpath, name]


def build_java_peers(version: str, out: Path) -> JavaPeers:
    """Every peer of ``integration/java`` compiled into ``out`` against Curator ``version``'s
    jars (:data:`CURATOR_JARS`), once it is checked that they load that Curator's classes and
    no other. Skips if ``version`` is not wanted (:func:`wanted_curators`); fails, naming what
    installs them, if the jars or a JDK are missing."""
    if version not in wanted_curators():
        pytest.skip(f"Curator {version} is not in AIOCOORD_CURATOR_VERSIONS")
    libs = CURATOR_JARS / version / "usr" / "share" / "java"
    jars = [libs / f"{name}.jar" for name in _PEER_JARS]
    missing = [jar.name for jar in jars if not jar.exists()]
    if missing or shutil.which("javac") is None or shutil.which("java") is None:
        pytest.fail(
            f"Curator {version}'s peers need a JDK and these jars in {libs}: "
            f"{missing or 'javac'}; run scripts/install-curator (or AIOCOORD_CURATOR_VERSIONS)",
            pytrace=False,
        )
    with zipfile.ZipFile(libs / "curator-framework.jar") as jar:
        pom = jar.read("META-INF/maven/org.apache.curator/curator-framework/pom.properties")
    assert f"version={version}.".encode() in pom, f"{libs} does not hold Curator {version}"
    classpath = os.pathsep.join(str(jar) for jar in jars)
    javac = subprocess.run(
        [
            "javac",
            "--release",
            str(JAVA_RELEASE),
            "-nowarn",
            "-d",
            str(out),
            "-cp",
            classpath,
            *sorted(str(source) for source in JAVA_SOURCES.glob("*.java")),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert javac.returncode == 0, f"javac against Curator {version}:\n{javac.stderr[-3000:]}"
    peers = JavaPeers(version, os.pathsep.join([classpath, str(out)]))
    lines = ask_java_peer([*peers.command("ClassSources"), *_PEER_JARS.values()], [])
    source = dict(line.split(" ", 1) for line in lines)
    loaded = {jar: Path(urllib.parse.urlparse(source[cls]).path) for jar, cls in _PEER_JARS.items()}
    # The JVM names a jar by its real path (Debian's links resolved).
    assert loaded == {name: jar.resolve() for name, jar in zip(_PEER_JARS, jars, strict=True)}
    return peers


async def start_java_peer(command: list[str], *args: str) -> asyncio.subprocess.Process:
    """Start a peer from :meth:`JavaPeers.command` with ``args``, its standard
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


@contextlib.asynccontextmanager
async def running_java_peer(
    command: list[str], *args: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """A peer of :func:`start_java_peer` that printed ``ready``, for requests of
    :func:`ask_running_peer`; told ``quit`` at the end, it must end with status 0 (it is
    killed if it did not end)."""
    peer = await start_java_peer(command, *args)
    try:
        assert await java_line(peer) == "ready"
        yield peer
        await tell_running_peer(peer, "quit")
        assert await asyncio.wait_for(peer.wait(), 60) == 0
    finally:
        if peer.returncode is None:
            peer.kill()
            await peer.wait()


async def tell_running_peer(peer: asyncio.subprocess.Process, request: str) -> None:
    """Send one request line to a peer of :func:`running_java_peer` (its answer is read later,
    with :func:`java_line`)."""
    assert peer.stdin is not None
    peer.stdin.write(request.encode() + b"\n")
    await peer.stdin.drain()


async def ask_running_peer(
    peer: asyncio.subprocess.Process, request: str, timeout: float = 60
) -> str:
    """Send one request line to a peer of :func:`running_java_peer`; its answer line."""
    await tell_running_peer(peer, request)
    return await java_line(peer, timeout)


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
