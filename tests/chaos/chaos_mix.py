"""The mix the CI test and the soak run share: :class:`MixConfig`, the fault lanes and
:func:`run_mix`, which runs workers under seeded faults and reports in the summary table."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from chaos_cluster import Cluster
from chaos_hostile import ALLOWED as HOSTILE_ALLOWED
from chaos_hostile import SERVICE, SERVICES, HostileLane
from chaos_log import SEED_ENV, Chaos
from chaos_referees import (
    CacheChecker,
    CounterLedger,
    LeaderReferee,
    MutexReferee,
    QueueLedger,
    RWReferee,
    SemaphoreReferee,
    ServiceCacheChecker,
    server_shape,
)
from chaos_workers import (
    STATE_HISTORY,
    Worker,
    consumer_worker,
    counter_worker,
    drain,
    mutex_worker,
    producer_worker,
    rwlock_worker,
    semaphore_worker,
    start_worker,
    stop_workers,
    track_states,
    tree_writer,
)

from aiocoord import (
    AtomicCounter,
    ChildrenCache,
    Client,
    LeaderLatch,
    NodeCache,
    State,
    StateChange,
    TreeCache,
)
from aiocoord.errors import (
    CoordinationError,
)
from aiocoord.recipes.discovery import ServiceDiscovery, ServiceInstance
from aiocoord.testing import ZooKeeperEnsemble, session_of


@dataclass
class MixConfig:
    """How big the mix is. The defaults fit a 2-core machine with a 3-member ensemble."""

    seconds: float = 120.0
    clients: int = 5
    session_timeout: float = 2.0
    settle_seconds: float = 6.0
    #: minimum faults of each kind per 120 s of run (checked by the CI test)
    min_faults_per_kind_per_120s: int = 20


@dataclass
class Holdings:
    """The mix's exclusive referees, asked which sessions hold something (the forced expiry
    while blackholed aims at holders, and checks they are told)."""

    mutex: MutexReferee
    rw: RWReferee
    sem: SemaphoreReferee
    leaders: LeaderReferee

    def on(self, session: int) -> list[str]:
        """Who holds something on ``session`` now (as the referees and latches have it)."""
        found = [f"lock {w}" for w, s in self.mutex.inside.items() if s == session]
        rw = {**self.rw.readers, **self.rw.writers}
        found += [f"rwlock {w}" for w, s in rw.items() if s == session]
        found += [f"semaphore {w}" for w, s in self.sem.holders.items() if s == session]
        found += [
            f"latch {x.identifier}"
            for x in self.leaders.latches
            if x.is_leader and x.term is not None and x.term.session_id == session
        ]
        return found

    async def wait_clear(self, session: int, timeout: float) -> None:
        """Wait until nobody holds anything on ``session`` (``asyncio.TimeoutError`` after
        ``timeout`` seconds)."""

        async def until() -> None:
            while self.on(session):
                # Taken before any await: a leave between the look and the wait is not missed.
                referees = (self.mutex, self.rw, self.sem, self.leaders)
                events = [r.changed for r in referees]
                waits = [asyncio.ensure_future(e.wait()) for e in events]
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()
                    await asyncio.gather(*waits, return_exceptions=True)

        await asyncio.wait_for(until(), timeout)


async def _fault_lanes(
    cluster: Cluster,
    chaos: Chaos,
    clients: list[Client],
    stop: asyncio.Event,
    rng: random.Random,
    timeout: float,
    holdings: Holdings,
    hostile: HostileLane,
) -> list[asyncio.Task[None]]:
    """Start the fault injectors, one lane or more per kind of
    :data:`chaos_log.FAULT_KINDS`; each is a loop that ends when ``stop`` is set."""
    #: clients whose links a lane has cut and will heal: other lanes leave them alone
    cut: set[int] = set()

    async def pause(low: float, high: float) -> bool:
        """Sleep a random while; True if the run is over."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), rng.uniform(low, high))
        return stop.is_set()

    async def kills() -> None:
        while not await pause(0.1, 0.6):
            if rng.random() < 0.4:
                victim = await cluster.leader()
                chaos.fault("kill")
                chaos.events["kill: leader"] += 1
            else:
                victim = rng.randrange(len(cluster.ensemble.members))
                chaos.fault("kill")
            await cluster.kill(victim)
            await pause(0.2, 1.0)
            await cluster.restart(victim)

    async def partitions(lane: int) -> None:
        while not await pause(0.3, 1.0):
            client = rng.choice(clients)
            if id(client) in cut:
                continue
            links = cluster.links_of(client)
            chaos.fault("partition")
            chaos.note(f"partition {cluster.name_of(client)}")
            cut.add(id(client))
            links.blackhole()
            # Longer than the session timeout (and a server tick): the session expires.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.Event().wait(), timeout + rng.uniform(0.8, 1.4))
            links.heal()
            cut.discard(id(client))
            chaos.note(f"heal {cluster.name_of(client)}")

    async def drops() -> None:
        while not await pause(0.5, 2.0):
            client = rng.choice(clients)
            chaos.fault("drop")
            chaos.note(f"drop {cluster.name_of(client)}")
            cluster.links_of(client).drop()

    async def latencies() -> None:
        while not await pause(0.3, 1.5):
            client = rng.choice(clients)
            links = cluster.links_of(client)
            chaos.fault("latency")
            delay = rng.uniform(0.02, 0.25)
            chaos.note(f"latency {delay:.2f} s {cluster.name_of(client)}")
            links.latency(delay)
            await pause(0.5, 2.0)
            links.latency(0)
            chaos.note(f"latency off {cluster.name_of(client)}")

    async def expiries() -> None:
        while not await pause(1.0, 2.5):
            client = rng.choice(clients)
            if not client.connected:
                continue
            chaos.fault("expire")
            try:
                await cluster.expire(client)
            except (TimeoutError, CoordinationError, OSError) as exc:
                chaos.events[f"expire failed: {type(exc).__name__}"] += 1

    async def blackholed_expiries() -> None:
        """A client that hears nothing (it trusts its session a while yet) has its session
        expired on the server through another connection; after the heal it must report the
        session LOST, and nothing it held may still be held on that session."""
        while not await pause(0.3, 1.2):
            holding = [c for c in clients if holdings.on(c.session_id)]
            client = rng.choice(holding if holding and rng.random() < 0.75 else clients)
            if id(client) in cut or not client.connected:
                continue
            name, session = cluster.name_of(client), client.session_id
            lost = asyncio.Event()

            def on_change(
                change: StateChange, session: int = session, lost: asyncio.Event = lost
            ) -> None:
                if change.state is State.LOST and change.session_id == session:
                    lost.set()

            links = cluster.links_of(client)
            cut.add(id(client))
            unlisten = client.add_state_listener(on_change)
            try:
                chaos.fault("blackhole-expire")
                held = holdings.on(session)
                chaos.events["blackhole-expire: on a holder"] += bool(held)
                chaos.note(f"blackhole {name}, then expire 0x{session:x} (holding {held})")
                links.blackhole()
                try:
                    await cluster.expire(client)
                except (TimeoutError, CoordinationError, OSError) as exc:
                    chaos.events[f"blackhole-expire failed: {type(exc).__name__}"] += 1
                    continue
                # Healed before the client suspects anything, or after it gave up by itself.
                await pause(0.0, 1.5 * timeout)
                links.heal()
                chaos.note(f"heal {name}")
                try:
                    await asyncio.wait_for(lost.wait(), timeout + 10.0)
                except TimeoutError:
                    chaos.violate(
                        "forced expiry: reported lost",
                        f"{name} never reported 0x{session:x} LOST after its forced expiry; "
                        + client_report(name, client),
                    )
                    continue
                # Holders hear of the loss with their client: each leaves within a moment
                # (no hold is longer than that unless it is lost).
                try:
                    await holdings.wait_clear(session, 0.5)
                except TimeoutError:
                    chaos.violate(
                        "forced expiry: holders told",
                        f"{holdings.on(session)} still hold on 0x{session:x} 0.5 s after "
                        f"{name} reported it LOST",
                    )
            finally:
                unlisten()
                links.heal()
                cut.discard(id(client))

    lanes = [
        kills(),
        partitions(0),
        partitions(1),
        drops(),
        latencies(),
        expiries(),
        blackholed_expiries(),
        hostile.run(stop, pause),
    ]
    return [asyncio.ensure_future(lane) for lane in lanes]


def client_report(name: str, client: Client) -> str:
    """What a violation says of the client tracked as ``name``: its state and session, its
    requests in flight and background deletes, and its last transitions."""
    return (
        f"{name}: {client.state.value} 0x{client.session_id:x}, in flight "
        f"{session_of(client).pending_count}, background {client.pending_deletes()}, "
        f"transitions {list(STATE_HISTORY.get(name, ()))}"
    )


async def run_mix(
    ensemble: ZooKeeperEnsemble,
    config: MixConfig,
    *,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> Chaos:
    """Run the mix on ``ensemble`` for ``config.seconds`` and return the log.

    Several clients (each behind its own links) drive a lock, a read-write lock, a semaphore,
    a leader latch, a counter, a queue, caches over a randomly written tree and a service
    discovery cache, while faults of every kind are injected (:data:`chaos_log.FAULT_KINDS`:
    among them a forced expiry of a client that hears nothing, and hostile nodes written
    where the recipes read, see :mod:`chaos_hostile`). Then the faults stop, everything must make
    progress again and settle (caches equal to the server), the recipes and clients close,
    and the end checks run. Violations are in the returned log (``chaos.assert_clean()``).
    """
    chaos = Chaos(seed, name="mix")
    say = progress or (lambda _line: None)
    say(f"chaos mix: seed={chaos.seed} ({SEED_ENV}={chaos.seed} replays it)")
    rng = chaos.rng
    cluster = await Cluster(ensemble, chaos).start()
    workers: list[Worker] = []
    latches: list[LeaderLatch] = []
    caches: list[TreeCache | ChildrenCache | NodeCache] = []
    checkers: list[CacheChecker] = []
    lanes: list[asyncio.Task[None]] = []
    hostile: HostileLane | None = None
    discoveries: list[ServiceDiscovery] = []
    try:
        timeout = config.session_timeout
        clients = [await cluster.client(session_timeout=timeout) for _ in range(config.clients)]
        for i, c in enumerate(clients):
            track_states(chaos, c, f"c{i}")
        mutex = MutexReferee(chaos, "lock")
        rw = RWReferee(chaos, "rwlock")
        sem = SemaphoreReferee(chaos, "semaphore", 2)
        leaders = LeaderReferee(chaos, "latch")
        counter = CounterLedger()
        queue = QueueLedger()
        await cluster.observer.ensure_path("/tree")  # type: ignore[union-attr]

        def spawn(name: str, make: Callable[[Worker], Awaitable[None]]) -> None:
            w = Worker(name)
            workers.append(start_worker(w, make(w)))

        for i, c in enumerate(clients):
            r = random.Random(rng.random())
            spawn(f"mutex-{i}", lambda w, c=c, r=r: mutex_worker(chaos, w, c, "/lock", mutex, r))
            spawn(f"rw-{i}", lambda w, c=c, r=r: rwlock_worker(chaos, w, c, "/rw", rw, r))
            spawn(f"sem-{i}", lambda w, c=c, r=r: semaphore_worker(chaos, w, c, "/sem", sem, r))
            spawn(
                f"count-{i}", lambda w, c=c, r=r: counter_worker(chaos, w, c, "/count", counter, r)
            )
            if i % 2 == 0:
                spawn(f"put-{i}", lambda w, c=c, r=r: producer_worker(chaos, w, c, "/q", queue, r))
            else:
                spawn(f"take-{i}", lambda w, c=c, r=r: consumer_worker(chaos, w, c, "/q", queue, r))
            latch = LeaderLatch(c, "/leader", identifier=f"latch-{i}", suspended_is_loss=True)
            leaders.attach(latch)
            latches.append(latch)
            await latch.start()
        writer_client = clients[0]
        spawn(
            "tree-writer",
            lambda w: tree_writer(chaos, w, writer_client, "/tree", random.Random(rng.random())),
        )
        for i, c in enumerate(clients[1:4]):
            kind = (TreeCache, ChildrenCache, TreeCache)[i]
            cache: TreeCache | ChildrenCache | NodeCache = kind(c, "/tree")
            caches.append(cache)
        caches.append(NodeCache(clients[-1], "/tree/a"))
        for j, cache in enumerate(caches):
            checker = CacheChecker(chaos, f"{type(cache).__name__}-{j}", cache)
            checker.start()
            checkers.append(checker)
            await cache.start()
        # Service discovery: two registered instances, and a cache of the service (a reader
        # of foreign JSON, where the hostile lane writes too).
        for i in (0, 1):
            discovery = ServiceDiscovery(clients[i], SERVICES)
            discoveries.append(discovery)
            instance = ServiceInstance(name=SERVICE, id=f"inst-{i}", address="10.0.0.1", port=i)
            await discovery.register(instance, timeout=30)
        lookup = ServiceDiscovery(clients[2], SERVICES)
        discoveries.append(lookup)
        service_cache = lookup.cache(SERVICE)
        service_checker = ServiceCacheChecker(chaos, "ServiceCache", service_cache)
        service_checker.start()
        await service_cache.start()

        stop_faults = asyncio.Event()
        hostile = await HostileLane(cluster, chaos, random.Random(rng.random()), queue).start()
        holdings = Holdings(mutex, rw, sem, leaders)
        lanes = await _fault_lanes(
            cluster, chaos, clients, stop_faults, rng, timeout, holdings, hostile
        )
        report_every = 30.0
        next_report = report_every
        while chaos.elapsed() < config.seconds:
            await asyncio.sleep(min(1.0, config.seconds - chaos.elapsed() + 0.01))
            if chaos.elapsed() >= next_report:
                next_report += report_every
                say(
                    f"  {chaos.elapsed():6.0f} s: faults {dict(chaos.faults)} "
                    f"ops {sum(chaos.ops.values())} violations {len(chaos.violations)}"
                )
        stop_faults.set()
        await asyncio.gather(*lanes, return_exceptions=True)
        for t in lanes:
            if not t.cancelled() and t.exception() is not None:
                chaos.unexpected("fault lane", t.exception())  # type: ignore[arg-type]
        for links in cluster.links.values():
            links.heal()
        for i in sorted(cluster.killed):
            await cluster.restart(i)
        say(f"  faults stopped at {chaos.elapsed():.0f} s; settling")

        # Progress after the faults: every worker must get work done again.
        before = {w.name: w.ops for w in workers}
        await asyncio.sleep(config.settle_seconds)
        for w in workers:
            if w.name == "tree-writer" or w.name.startswith("take-"):
                continue  # consumers may find the queue empty
            if w.ops > before[w.name]:
                continue
            i = int(w.name.rsplit("-", 1)[1])
            chaos.violate(
                "progress after faults",
                f"{w.name} did nothing in the {config.settle_seconds:.0f} s after the faults; "
                + client_report(f"c{i}", clients[i]),
            )
        await leaders.wait_leader(timeout=30)
        await stop_workers(chaos, workers)

        # Caches equal the server once the writer has stopped.
        assert cluster.observer is not None
        await cluster.observer.sync("/tree")
        server = {p: v for p, v in (await server_shape(cluster.observer, "/tree")).items()}
        for checker in checkers:
            await checker.settle(server)
        await service_checker.settle({"inst-0", "inst-1"})
        for cache in caches:
            await cache.close()
        for checker in checkers:
            await checker.close()
        await service_cache.close()
        await service_checker.close()
        for discovery in discoveries:
            await discovery.close()
        for latch in latches:
            await latch.close()
        counter.check(chaos, await AtomicCounter(cluster.observer, "/count").get())
        await drain(cluster.observer, "/q", queue)
        queue.check(chaos)
        # Reported, not judged: it tells a violation above caused by the server from ours.
        chaos.events["server: digest mismatches"] += cluster.digest_mismatches()
        for c in clients:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(c.wait_background(), 15)
        await hostile.close()
        await cluster.finish(
            allowed=["/tree", "/count", "/q", SERVICES, *HOSTILE_ALLOWED], clients=clients
        )
    finally:
        for t in lanes:
            t.cancel()
        await asyncio.gather(*lanes, return_exceptions=True)
        for w in workers:
            if w.task is not None:
                w.task.cancel()
        await asyncio.gather(*(w.task for w in workers if w.task), return_exceptions=True)
        for cache in caches:
            with contextlib.suppress(Exception):
                await cache.close()
        for latch in latches:
            with contextlib.suppress(Exception):
                await latch.close()
        for discovery in discoveries:
            with contextlib.suppress(Exception):
                await discovery.close()
        if hostile is not None:
            await hostile.close()
        await cluster.aclose()
    return chaos


def min_faults(config: MixConfig) -> int:
    """The least number of faults of each kind a run of ``config.seconds`` must inject."""
    return max(1, int(config.min_faults_per_kind_per_120s * config.seconds / 120))
