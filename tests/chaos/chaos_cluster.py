"""Fault injection: :class:`Links` (one FaultProxy per ensemble member in front of one client,
so its link can be cut, delayed or partitioned) and :class:`Cluster` (the ensemble, a
namespace, clients with their links, and the end checks: no orphan nodes, no leftover
watches)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterable
from typing import Any

from chaos_log import Chaos

from aiocoord import Client, State, connect
from aiocoord.errors import (
    ClientClosedError,
    CoordinationError,
    NoNodeError,
)
from aiocoord.testing import FaultProxy, ZooKeeperEnsemble, expire_session, session_of
from aiocoord.testing.server import SUPER_AUTH


class Links:
    """One FaultProxy per ensemble member, in front of one client."""

    def __init__(self, targets: Iterable[tuple[str, int]]) -> None:
        self.proxies = [FaultProxy(host, port) for host, port in targets]

    async def start(self) -> Links:
        """Start every proxy."""
        for proxy in self.proxies:
            await proxy.start()
        return self

    @property
    def connect_string(self) -> str:
        """The proxies, as a connect string (no chroot)."""
        return ",".join(p.connect_string for p in self.proxies)

    def drop(self) -> int:
        """Cut the client's current connection (whichever member it goes to)."""
        return sum(p.drop() for p in self.proxies)

    def blackhole(self) -> None:
        """Partition the client from every member."""
        for p in self.proxies:
            p.blackhole()

    def heal(self) -> None:
        """End every link fault."""
        for p in self.proxies:
            p.heal()

    def latency(self, seconds: float) -> None:
        """Delay everything the client sends and receives by ``seconds`` per chunk."""
        for p in self.proxies:
            p.latency(seconds)

    async def aclose(self) -> None:
        """Close every proxy."""
        for p in self.proxies:
            await p.aclose()


# --- the cluster ---------------------------------------------------------------------------


def watched_paths(wchc: str) -> dict[str, set[str]]:
    """Parse the ``wchc`` four-letter word: session id -> watched paths."""
    out: dict[str, set[str]] = {}
    session: str | None = None
    for line in wchc.splitlines():
        if not line.strip():
            continue
        if line.startswith(("\t", " ")):
            if session is not None:
                out.setdefault(session, set()).add(line.strip())
        else:
            session = line.strip()
    return out


class Cluster:
    """The ensemble, one namespace for the test, and the clients acting in it.

    Clients made by :meth:`client` are chrooted to :attr:`root` and, unless ``proxied=False``,
    reach the members through :class:`Links` of their own. :meth:`finish` runs the end checks;
    :meth:`aclose` tears everything down (idempotent), restarting killed members.
    """

    def __init__(self, ensemble: ZooKeeperEnsemble, chaos: Chaos, root: str | None = None) -> None:
        self.ensemble = ensemble
        self.chaos = chaos
        self.root = root or f"/aiocoord-chaos/{chaos.name}-{uuid.uuid4().hex[:8]}"
        self.clients: list[Client] = []
        self.links: dict[int, Links] = {}
        self.admin: Client | None = None
        self.observer: Client | None = None
        self.killed: set[int] = set()
        self._closed = False

    async def start(self) -> Cluster:
        """Bring every member up, make the namespace and the admin and observer clients."""
        for i, member in enumerate(self.ensemble.members):
            if not member.is_running:
                await asyncio.to_thread(self.ensemble.restart, i)
        await asyncio.to_thread(self.ensemble.wait_for_quorum, 30)
        self.admin = await connect(
            self.ensemble.connect_string, session_timeout=10, auth=[SUPER_AUTH]
        )
        await self.admin.ensure_path(self.root)
        self.observer = await connect(self.ensemble.connect_string + self.root, session_timeout=10)
        return self

    def member_targets(self) -> list[tuple[str, int]]:
        """(host, port) of every member."""
        return [(m.host, m.port) for m in self.ensemble.members]

    async def client(
        self, *, proxied: bool = True, session_timeout: float = 2.0, **options: Any
    ) -> Client:
        """A new client (own session) chrooted to the namespace, through its own links."""
        if proxied:
            links = await Links(self.member_targets()).start()
            hosts = links.connect_string
        else:
            hosts = self.ensemble.connect_string
        options.setdefault("connect_timeout", 15.0)
        try:
            client = await connect(hosts + self.root, session_timeout=session_timeout, **options)
        except BaseException:
            if proxied:
                await links.aclose()
            raise
        if proxied:
            self.links[id(client)] = links
        # The referees tolerate an overlap with a force-expired holder only until its client
        # tells it (Chaos.untold): every client's reports are recorded from the start.
        client.add_state_listener(self.chaos.on_state)
        self.clients.append(client)
        return client

    def name_of(self, client: Client) -> str:
        """``c<n>``: the client's place in :attr:`clients`."""
        for i, c in enumerate(self.clients):
            if c is client:
                return f"c{i}"
        return "?"

    def links_of(self, client: Client) -> Links:
        """The links of a proxied client."""
        return self.links[id(client)]

    def member_of(self, client: Client) -> int:
        """The index of the member ``client`` is connected to (through its links or not)."""
        server = session_of(client).server
        assert server is not None
        links = self.links.get(id(client))
        if links is not None:
            for i, proxy in enumerate(links.proxies):
                if proxy.port == server.port:
                    return i
        return self.ensemble.index_of_port(server.port)

    async def kill(self, i: int) -> None:
        """SIGKILL member ``i``."""
        self.chaos.note(f"kill member {i}")
        self.killed.add(i)
        await asyncio.to_thread(self.ensemble.kill, i)

    async def restart(self, i: int) -> None:
        """Start member ``i`` again and wait for the quorum."""
        await asyncio.to_thread(self.ensemble.restart, i)
        self.killed.discard(i)
        self.chaos.note(f"member {i} back")

    def digest_mismatches(self) -> int:
        """How often a member said its data tree diverged from the leader's (ZooKeeper checks
        a digest of the tree with every transaction and logs a mismatch, rate-limited): a
        lost or undone transaction on the server side, which no client can make up for."""
        n = 0
        for member in self.ensemble.members:
            path = member.log_path
            if path is not None and path.exists():
                with open(path, errors="replace") as log:
                    n += sum(1 for line in log if "Digests are not matching" in line)
        return n

    async def leader(self) -> int:
        """The index of the current leader (waiting for the quorum first)."""
        return await asyncio.to_thread(self.ensemble.wait_for_quorum, 30)

    async def expire(self, client: Client) -> None:
        """Expire ``client``'s session on the server (bypassing its links)."""
        self.chaos.expiring(client.session_id)
        self.chaos.note(f"expire {self.name_of(client)} 0x{client.session_id:x}")
        await expire_session(
            client.session_id, session_of(client).password, self.ensemble.connect_string, timeout=15
        )

    async def wait_state(self, client: Client, state: State, timeout: float = 15.0) -> None:
        """Wait until ``client`` is in (or passes through) ``state``."""
        await client.wait_for(state, timeout)

    # --- the end checks ------------------------------------------------------------------

    async def wchc(self) -> dict[str, set[str]]:
        """Watched paths under the namespace, by session, over every running member."""
        found: dict[str, set[str]] = {}
        prefix = self.root + "/"
        for i, member in enumerate(self.ensemble.members):
            if i in self.killed or not member.is_running:
                continue
            text = await asyncio.to_thread(member.four_letter, "wchc")
            for session, paths in watched_paths(text).items():
                mine = {p for p in paths if p == self.root or p.startswith(prefix)}
                if mine:
                    found.setdefault(session, set()).update(mine)
        return found

    async def assert_no_server_watches(self, timeout: float = 10.0) -> None:
        """No member holds a watch under the namespace (waits for removals in flight)."""
        deadline = time.monotonic() + timeout
        while True:
            found = await self.wchc()
            if not found:
                return
            if time.monotonic() > deadline:
                detail = {k: sorted(v) for k, v in found.items()}
                self.chaos.violate("no leftover watches (wchc)", f"{detail}")
                return
            await asyncio.sleep(0.1)

    def assert_no_client_watches(self, clients: Iterable[Client]) -> None:
        """Every client's watch table is empty (recipes stopped)."""
        for client in clients:
            if client.closed:
                continue
            counts = session_of(client).watches.counts()
            self.chaos.check(
                not any(counts.values()),
                "no leftover watches (client)",
                f"session 0x{client.session_id:x}: {counts} {session_of(client).watches.listing()}",
            )

    async def tree(self) -> dict[str, Any]:
        """Every node under the namespace: path -> Stat (read by the admin)."""
        assert self.admin is not None
        admin = self.admin
        out: dict[str, Any] = {}

        async def walk(path: str) -> None:
            try:
                stat = await admin.exists(path)
                names = await admin.children(path)
            except NoNodeError:
                return
            if stat is None:
                return
            if path != self.root:
                out[path[len(self.root) :]] = stat
            await asyncio.gather(*(walk(path + "/" + n) for n in names))

        await walk(self.root)
        return out

    async def finish(
        self,
        *,
        allowed: Iterable[str] = (),
        clients: Iterable[Client] | None = None,
        orphan_timeout: float | None = None,
    ) -> None:
        """The end of every chaos test: (recipes already stopped)

        1. heal every link, restart killed members;
        2. every client's watch table is empty, and no member holds a watch under the
           namespace for them;
        3. close every client: then no ephemeral node, no lock or marker node (``_c_``) and
           no node outside ``allowed`` (paths relative to the namespace; a path allows its
           ancestors and descendants) is left, once the sessions that own them are gone and
           empty containers swept;
        4. the namespace is removed; no member holds a watch under it.

        Violations are recorded in the Chaos log; call ``chaos.assert_clean()`` after.
        """
        for links in self.links.values():
            links.heal()
        for i in sorted(self.killed):
            await self.restart(i)
        mine = list(self.clients if clients is None else clients)
        # Live clients whose recipes are stopped hold no watch.
        for client in mine:
            if not client.closed and not client.connected:
                with contextlib.suppress(asyncio.TimeoutError, ClientClosedError):
                    await client.wait_for(State.CONNECTED, 20)
        # A release returns before its delete is confirmed; the delete (which consumes the
        # watches on the node) finishes in the background.
        for client in mine:
            if not client.closed:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(client.wait_background(), 20)
        self.assert_no_client_watches(mine)
        await self.assert_no_server_watches()
        for client in self.clients:
            await client.close()
        allowed_paths = list(allowed)

        def permitted(path: str) -> bool:
            for a in allowed_paths:
                if path == a or path.startswith(a + "/") or a.startswith(path + "/"):
                    return True
            return False

        timeouts = [session_of(c).negotiated_timeout for c in self.clients] or [2.0]
        limit = orphan_timeout if orphan_timeout is not None else max(timeouts) + 5.0
        deadline = time.monotonic() + limit
        while True:
            tree = await self.tree()
            bad = {
                p: s
                for p, s in tree.items()
                if s.ephemeral_owner or "/_c_" in p or not permitted(p)
            }
            if not bad:
                break
            if time.monotonic() > deadline:
                detail = {p: f"owner=0x{s.ephemeral_owner:x}" for p, s in sorted(bad.items())}
                self.chaos.violate("no orphan nodes after close", f"{detail}")
                break
            await asyncio.sleep(0.1)
        assert self.admin is not None
        await self.admin.delete(self.root, recursive=True)
        self.chaos.check(
            await self.admin.exists(self.root) is None,
            "no leftover znodes",
            f"{self.root} still exists",
        )
        await self.assert_no_server_watches()

    async def aclose(self) -> None:
        """Close every client and proxy, restart killed members, remove the namespace."""
        if self._closed:
            return
        self._closed = True
        for client in self.clients:
            with contextlib.suppress(Exception):
                await client.close()
        for links in self.links.values():
            await links.aclose()
        for i in sorted(self.killed):
            with contextlib.suppress(Exception):
                await self.restart(i)
        if self.observer is not None:
            await self.observer.close()
        if self.admin is not None:
            with contextlib.suppress(CoordinationError):
                await self.admin.delete(self.root, recursive=True)
            await self.admin.close()
