"""The named chaos scenarios, each a short focused test on the shared 3-member ensemble.

Every scenario runs against the exclusive recipes it concerns (``lock``, ``rwlock`` write,
``semaphore`` with one lease, ``latch`` leadership) where that makes sense, checks mutual
exclusion and fencing as holders come and go, and ends with the common end checks: no
leftover watches (client tables and ``wchc`` on every member), no orphan ephemeral or lock
nodes once the clients close, no leftover znodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time

import pytest
from chaoslib import (
    CacheChecker,
    Chaos,
    Cluster,
    Contender,
    LeaderReferee,
    MutexReferee,
    Worker,
    contender_nodes,
    server_shape,
    start_worker,
    stop_workers,
    tree_writer,
    watched_paths,
)
from support import GrantLog, child_names, eventually, stale_grant_scenario

from aiocoord import (
    AtomicCounter,
    ChildrenCache,
    Client,
    Election,
    LeaderLatch,
    LeadershipChange,
    Lock,
    NodeCache,
    Queue,
    State,
    StateChange,
    TreeCache,
    connect,
)
from aiocoord.errors import (
    ConnectionLossError,
    LockLostError,
    NotReadOnlyError,
    TransactionFailedError,
)
from aiocoord.recipes.cache import CacheEventType
from aiocoord.testing import FaultProxy, ZooKeeperEnsemble, ZooKeeperServer, session_of

pytestmark = pytest.mark.ensemble

KINDS = Contender.KINDS
OP_CREATE2 = 15
OP_MULTI = 14


def proxy_of(cluster: Cluster, client: Client) -> FaultProxy:
    """The proxy carrying ``client``'s current connection."""
    return cluster.links_of(client).proxies[cluster.member_of(client)]


def states(client: Client) -> list[StateChange]:
    """Every state change of ``client`` from now on, as a live list."""
    seen: list[StateChange] = []
    client.add_state_listener(seen.append)
    return seen


async def single_node_owned_by(
    observer: Client, contender: Contender, client: Client, chaos: Chaos
) -> None:
    """The holder's session owns exactly one node of the queue, the held one, and it is
    first in line (other contenders may have queued behind it)."""
    nodes = await contender_nodes(observer, contender)
    held = contender.node_path
    chaos.check(held is not None, "holding", f"{contender.kind}: held with no node")
    name = str(held).rsplit("/", 1)[1]
    owners = {}
    for n in nodes:
        stat = await observer.exists(f"{contender.node_parent}/{n}")
        if stat is not None:
            owners[n] = stat.ephemeral_owner
    mine = [n for n, owner in owners.items() if owner == client.session_id]
    chaos.check(
        mine == [name],
        "one node per contender, owned by the current session",
        f"{contender.kind}: nodes of session 0x{client.session_id:x}: {mine}, held {name}; "
        f"queue {nodes}",
    )
    in_line = sorted(owners, key=lambda n: n[-10:])
    chaos.check(
        bool(in_line) and in_line[0] == name,
        "holder first in line",
        f"{contender.kind}: held {name}, queue {in_line}",
    )


async def delete_as_third_party(chaos: Chaos, observer: Client, path: str) -> None:
    """Delete ``path`` and its children (recipe nodes, no grandchildren) in one transaction,
    as a third party, after telling the referees which nodes it revokes: every child in a
    listing taken with the parent's pzxid (the zxid of its last child change). A contender
    that joins meanwhile makes the transaction fail as a whole (NotEmpty): nothing is deleted
    then, and it tries again with a fresh listing, so no node is deleted unannounced (as a
    recursive delete, listing and deleting in turn, would)."""
    while True:
        names, stat = await observer.children(path, with_stat=True)
        chaos.revoke_upto(stat.pzxid)
        txn = observer.transaction()
        for name in names:
            txn.delete(f"{path}/{name}")
        txn.delete(path)
        try:
            await txn.commit()
            return
        except TransactionFailedError:
            continue  # a contender joined (or one left) since the listing


async def watching(client: Client) -> bool:
    """True once ``client`` has a server watch armed and no request in flight (a waiter that
    is settled in its wait)."""
    return (
        session_of(client).watches.counts()["server_watches"] > 0
        and not session_of(client).pending_count
    )


# --- reply lost ---------------------------------------------------------------------------


@pytest.mark.parametrize("recipe", [*KINDS, "queue", "counter"])
async def test_reply_lost_after_the_server_created_the_node(
    cluster: Cluster, chaos: Chaos, recipe: str
) -> None:
    """The create (or the marked transaction) reaches the server and is applied; its reply
    is cut. The recipe must find what it made: one node, not two, and none left after."""
    client = await cluster.client(session_timeout=4)
    observer = cluster.observer
    assert observer is not None
    proxy = proxy_of(cluster, client)
    if recipe in ("queue", "counter"):
        await observer.ensure_path("/q")
        drop = proxy.drop_after_request(lambda _xid, op: op == OP_MULTI)
        if recipe == "queue":
            async with Queue(client, "/q") as queue:
                await queue.put(b"only-once")
            items = [n for n in await observer.children("/q") if n.startswith("queue-")]
            chaos.check(len(items) == 1, "put exactly once", f"items {items}")
            async with Queue(observer, "/q") as q:
                chaos.check(await q.get(timeout=5) == b"only-once", "item", "wrong item")
        else:
            async with AtomicCounter(client, "/count") as counter:
                result = await counter.increment()
            chaos.check(result.succeeded, "increment", f"{result}")
            value = await AtomicCounter(observer, "/count").get()
            chaos.check(value == 1, "counted exactly once", f"value {value}")
        chaos.check(drop.done(), "fault", "the reply was never cut")
        await cluster.finish(allowed=["/q", "/count"])
        chaos.assert_clean()
        return
    contender = Contender(recipe, client, f"/{recipe}", "a")
    await observer.ensure_path(contender.node_parent)
    drop = proxy.drop_after_request(lambda _xid, op: op == OP_CREATE2)
    assert await contender.acquire(timeout=20)
    chaos.check(drop.done(), "fault", "the create's reply was never cut")
    await single_node_owned_by(observer, contender, client, chaos)
    rival = Contender(recipe, observer, f"/{recipe}", "rival")
    chaos.check(not await rival.acquire(timeout=0.5), "mutual exclusion", "rival got it too")
    await contender.release()
    chaos.check(await rival.acquire(timeout=10), "liveness", "rival never got it after release")
    await rival.close()
    await cluster.finish(allowed=[f"/{recipe}"], clients=[client])
    chaos.assert_clean()


@pytest.mark.parametrize("recipe", [*KINDS, "queue", "counter"])
async def test_reply_lost_then_the_session_changes_before_the_retry(
    cluster: Cluster, chaos: Chaos, recipe: str
) -> None:
    """As above, but before the client can look for what it made its session is expired
    (its reconnects are held at the proxies meanwhile): the node made by the old session
    vanishes with it, and the recipe must end with one node owned by the new session."""
    client = await cluster.client(session_timeout=3)
    observer = cluster.observer
    assert observer is not None
    links = cluster.links_of(client)
    proxy = proxy_of(cluster, client)
    old_session = client.session_id
    seen = states(client)

    async def expire_after_drop(drop: object) -> None:
        await asyncio.wait_for(drop.wait(), 20)  # type: ignore[attr-defined]
        await cluster.expire(client)
        for p in links.proxies:
            p.hold_new_connections(False)

    for p in links.proxies:
        p.hold_new_connections(True)
    if recipe in ("queue", "counter"):
        await observer.ensure_path("/q")
        drop = proxy.drop_after_request(lambda _xid, op: op == OP_MULTI)
        expiring = asyncio.ensure_future(expire_after_drop(drop))
        if recipe == "queue":
            async with Queue(client, "/q") as queue:
                # The outcome is unknowable to the client (the marker went with the session):
                # ConnectionLossError is the documented answer; never a second item.
                with contextlib.suppress(ConnectionLossError):
                    await queue.put(b"at-most-once")
            await expiring
            items = [n for n in await observer.children("/q") if n.startswith("queue-")]
            chaos.check(len(items) == 1, "no duplicate", f"items {items}")
        else:
            async with AtomicCounter(client, "/count") as counter:
                with contextlib.suppress(ConnectionLossError):
                    await counter.increment()
            await expiring
            value = await AtomicCounter(observer, "/count").get()
            chaos.check(value == 1, "counted exactly once", f"value {value}")
        chaos.check(client.session_id != old_session, "fault", "the session never changed")
        await cluster.finish(allowed=["/q", "/count"])
        chaos.assert_clean()
        return
    contender = Contender(recipe, client, f"/{recipe}", "a")
    await observer.ensure_path(contender.node_parent)
    drop = proxy.drop_after_request(lambda _xid, op: op == OP_CREATE2)
    expiring = asyncio.ensure_future(expire_after_drop(drop))
    assert await contender.acquire(timeout=30)
    await expiring
    chaos.check(client.session_id != old_session, "fault", "the session never changed")
    chaos.check(
        any(c.state is State.LOST for c in seen), "states", f"no LOST in {[c.state for c in seen]}"
    )
    await single_node_owned_by(observer, contender, client, chaos)
    await contender.release()
    await cluster.finish(allowed=[f"/{recipe}"])
    chaos.assert_clean()


# --- waiting and holding across faults -------------------------------------------------------


@pytest.mark.parametrize("recipe", KINDS)
async def test_disconnect_while_waiting_keeps_the_session_and_the_place(
    cluster: Cluster, chaos: Chaos, recipe: str
) -> None:
    """A waiter's link is cut while the holder lets go; the waiter reconnects to the same
    session, its restored watch tells it, and it gets the holding with its one node."""
    holder_client = await cluster.client(proxied=False)
    waiter_client = await cluster.client(session_timeout=6)
    observer = cluster.observer
    assert observer is not None
    referee = MutexReferee(chaos, recipe)
    holder = Contender(recipe, holder_client, f"/{recipe}", "holder")
    waiter = Contender(recipe, waiter_client, f"/{recipe}", "waiter")
    assert await holder.acquire(timeout=10)
    referee.enter("holder", holder.token)
    waiting = asyncio.ensure_future(waiter.acquire(timeout=30))
    await eventually(lambda: _count(observer, holder, 2), what="the waiter queued")
    session = waiter_client.session_id
    seen = states(waiter_client)
    links = cluster.links_of(waiter_client)
    links.blackhole()
    links.drop()
    await waiter_client.wait_for(State.SUSPENDED, 10)
    referee.exit("holder")
    await holder.release()
    await eventually(lambda: _count(observer, holder, 1), what="the holder's node went")
    links.heal()
    chaos.check(await waiting, "liveness", "the waiter never got it")
    referee.enter("waiter", waiter.token)
    chaos.check(waiter_client.session_id == session, "same session", "the session changed")
    chaos.check(
        not any(c.new_session or c.state is State.LOST for c in seen),
        "same session",
        f"{[(c.state, c.new_session) for c in seen]}",
    )
    await single_node_owned_by(observer, waiter, waiter_client, chaos)
    referee.exit("waiter")
    await waiter.release()
    await cluster.finish(allowed=[f"/{recipe}"])
    chaos.assert_clean()


async def _count(observer: Client, contender: Contender, n: int) -> bool:
    return len(await contender_nodes(observer, contender)) == n


@pytest.mark.parametrize("recipe", KINDS)
async def test_holder_session_expires(cluster: Cluster, chaos: Chaos, recipe: str) -> None:
    """The holder's session is expired by the server: it is told (lost), its node is gone,
    and a waiter takes over with a larger fencing token; never two holders."""
    holder_client = await cluster.client(session_timeout=3)
    waiter_client = await cluster.client(session_timeout=3)
    observer = cluster.observer
    assert observer is not None
    referee = MutexReferee(chaos, recipe)
    holder = Contender(recipe, holder_client, f"/{recipe}", "holder")
    waiter = Contender(recipe, waiter_client, f"/{recipe}", "waiter")
    assert await holder.acquire(timeout=10)
    referee.enter("holder", holder.token)
    waiting = asyncio.ensure_future(waiter.acquire(timeout=30))
    await eventually(lambda: _count(observer, holder, 2), what="the waiter queued")

    async def holder_lost() -> None:
        await holder.wait_lost(15)
        referee.exit("holder")

    lost = asyncio.ensure_future(holder_lost())
    await cluster.expire(holder_client)
    await lost
    chaos.check(not holder.held, "loss is told", "the holder still believes it holds")
    chaos.check(await waiting, "liveness", "the waiter never got it")
    referee.enter("waiter", waiter.token)
    await single_node_owned_by(observer, waiter, waiter_client, chaos)
    if recipe != "latch":
        with contextlib.suppress(LockLostError):
            await holder.release()
    referee.exit("waiter")
    await waiter.release()
    await holder.close()
    await cluster.finish(allowed=[f"/{recipe}"])
    chaos.assert_clean()


@pytest.mark.parametrize("recipe", KINDS)
async def test_waiter_session_expires(cluster: Cluster, chaos: Chaos, recipe: str) -> None:
    """A waiter's session expires: its node goes with it, it queues again with one new node
    of its new session, and gets the holding once the holder lets go."""
    holder_client = await cluster.client(proxied=False)
    waiter_client = await cluster.client(session_timeout=3)
    observer = cluster.observer
    assert observer is not None
    holder = Contender(recipe, holder_client, f"/{recipe}", "holder")
    waiter = Contender(recipe, waiter_client, f"/{recipe}", "waiter")
    assert await holder.acquire(timeout=10)
    waiting = asyncio.ensure_future(waiter.acquire(timeout=30))
    await eventually(lambda: _count(observer, holder, 2), what="the waiter queued")
    # Settled in its wait (see the next test for an expiry that falls in the middle).
    await eventually(lambda: watching(waiter_client), what="the waiter watches")
    old = set(await contender_nodes(observer, holder))
    old_session = waiter_client.session_id
    await cluster.expire(waiter_client)

    async def requeued() -> bool:
        now = set(await contender_nodes(observer, holder))
        return len(now) == 2 and len(now - old) == 1 and waiter_client.session_id != old_session

    await eventually(requeued, what="the waiter queued again on its new session")
    chaos.check(not waiting.done(), "waiting", "the waiter stopped waiting")
    await holder.release()
    chaos.check(await waiting, "liveness", "the waiter never got it")
    await single_node_owned_by(observer, waiter, waiter_client, chaos)
    await waiter.release()
    await cluster.finish(allowed=[f"/{recipe}"])
    chaos.assert_clean()


@pytest.mark.parametrize(
    "recipe",
    [
        "lock",
        "rwlock",
        # A semaphore waiter waits on the children of the leases (the third listing).
        "semaphore",
        "latch",
    ],
)
async def test_waiter_session_expires_while_its_watch_request_is_in_flight(
    cluster: Cluster, chaos: Chaos, recipe: str
) -> None:
    """The waiter's session expires while the request that arms its watch on the node ahead
    is unanswered (its reply is cut, reconnects are held until the session is expired). The
    client retries that read on the new session; the waiter must notice that its node went
    with the old session and queue again, not wait for the holder with no place in line."""
    holder_client = await cluster.client(proxied=False)
    waiter_client = await cluster.client(session_timeout=3)
    observer = cluster.observer
    assert observer is not None
    holder = Contender(recipe, holder_client, f"/{recipe}", "holder")
    waiter = Contender(recipe, waiter_client, f"/{recipe}", "waiter")
    assert await holder.acquire(timeout=10)
    links = cluster.links_of(waiter_client)
    for p in links.proxies:
        p.hold_new_connections(True)
    old_session = waiter_client.session_id
    # The request that arms the waiter's watch loses its reply: the getData (4) on the node
    # ahead in a queue; for a semaphore the third children listing (8), the watched one.
    listings = [0]

    def arming(_xid: int, op: int) -> bool:
        if recipe != "semaphore":
            return op == 4
        listings[0] += op == 8
        return op == 8 and listings[0] == 3

    drop = proxy_of(cluster, waiter_client).drop_after_request(arming)
    waiting = asyncio.ensure_future(waiter.acquire(timeout=30))
    await drop.wait(15)
    await cluster.expire(waiter_client)
    for p in links.proxies:
        p.hold_new_connections(False)

    async def requeued() -> bool:
        if waiter_client.session_id == old_session:
            return False
        stats = [
            await observer.exists(f"{holder.node_parent}/{n}")
            for n in await contender_nodes(observer, holder)
        ]
        return any(s is not None and s.ephemeral_owner == waiter_client.session_id for s in stats)

    try:
        await eventually(requeued, timeout=10, what="the waiter queued again on its new session")
    finally:
        await holder.release()
        chaos.check(await waiting, "liveness", "the waiter never got it")
        await waiter.release()
    await cluster.finish(allowed=[f"/{recipe}"])
    chaos.assert_clean()


@pytest.mark.parametrize("recipe", ["lock", "rwlock", "semaphore"])
async def test_cancel_or_timeout_during_acquire_on_a_flapping_link(
    cluster: Cluster, chaos: Chaos, recipe: str
) -> None:
    """Acquires that time out or are cancelled at random moments, while the link flaps
    (cut every few hundred ms, sometimes slowed): none may leave a node or a watch behind,
    and the holder rule stands throughout."""
    rng = chaos.rng
    flappy = await cluster.client(session_timeout=4)
    steady = await cluster.client(proxied=False)
    observer = cluster.observer
    assert observer is not None
    referee = MutexReferee(chaos, recipe)
    links = cluster.links_of(flappy)
    stop = asyncio.Event()

    async def flap() -> None:
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), rng.uniform(0.05, 0.35))
            if rng.random() < 0.2:
                links.latency(rng.uniform(0.01, 0.1))
            else:
                links.latency(0)
            chaos.fault("drop")
            links.drop()

    async def steady_holder() -> None:
        # Holds the lock now and then, so that the flappy acquires have to wait.
        h = Contender(recipe, steady, f"/{recipe}", "steady")
        while not stop.is_set():
            if await h.acquire(timeout=5):
                referee.enter("steady", h.token)
                await asyncio.sleep(rng.uniform(0.05, 0.3))
                referee.exit("steady")
                await h.release()
            await asyncio.sleep(rng.uniform(0.05, 0.3))

    flapper = asyncio.ensure_future(flap())
    holder_task = asyncio.ensure_future(steady_holder())
    f = Contender(recipe, flappy, f"/{recipe}", "flappy")
    deadline = time.monotonic() + 8
    attempts = 0
    while time.monotonic() < deadline:
        attempts += 1
        try:
            if rng.random() < 0.5:
                got = await f.acquire(timeout=rng.uniform(0.01, 0.4))
            else:
                task = asyncio.ensure_future(f.acquire())
                await asyncio.sleep(rng.uniform(0.0, 0.4))
                task.cancel()
                try:
                    got = await task
                except asyncio.CancelledError:
                    got = False
                    chaos.op("acquire cancelled")
        except (ConnectionLossError, LockLostError) as exc:
            chaos.error(exc)
            continue
        if got:
            if f.held:
                referee.enter("flappy", f.token)
                referee.exit("flappy")
            with contextlib.suppress(LockLostError):
                await f.release()
            chaos.op("acquired")
        else:
            chaos.op("gave up")
    stop.set()
    await flapper
    links.heal()
    await holder_task
    await asyncio.wait_for(flappy.wait_background(), 20)
    await flappy.wait_for(State.CONNECTED, 10)
    # Nothing of the flappy client's is left: no node, no watch.
    mine = await flappy.get_ephemerals()
    chaos.check(not mine, "no orphan nodes (before close)", f"{mine}")
    print(chaos.summary())
    chaos.check(attempts > 5, "workload", f"only {attempts} attempts")
    await cluster.finish(allowed=[f"/{recipe}"])
    chaos.assert_clean()


@pytest.mark.parametrize("recipe", KINDS)
async def test_release_during_connection_loss(cluster: Cluster, chaos: Chaos, recipe: str) -> None:
    """Released while disconnected: it is no longer held at once, and the node goes as soon
    as the connection is back, letting the next contender in."""
    holder_client = await cluster.client(session_timeout=6)
    rival_client = await cluster.client(proxied=False)
    observer = cluster.observer
    assert observer is not None
    holder = Contender(recipe, holder_client, f"/{recipe}", "holder", suspended_is_loss=False)
    rival = Contender(recipe, rival_client, f"/{recipe}", "rival")
    assert await holder.acquire(timeout=10)
    rival_waits = asyncio.ensure_future(rival.acquire(timeout=30))
    await eventually(lambda: _count(observer, holder, 2), what="the rival queued")
    links = cluster.links_of(holder_client)
    links.blackhole()
    links.drop()
    await holder_client.wait_for(State.SUSPENDED, 10)
    started = time.monotonic()
    await asyncio.wait_for(holder.release(), 2)
    chaos.check(time.monotonic() - started < 1.5, "release is immediate", "release waited")
    chaos.check(not holder.held, "released", "still held after release")
    chaos.check(not rival_waits.done(), "exclusion", "the rival got it while the node was there")
    links.heal()
    chaos.check(await rival_waits, "liveness", "the rival never got it")
    await asyncio.wait_for(holder_client.wait_background(), 10)
    await rival.release()
    await cluster.finish(allowed=[f"/{recipe}"])
    chaos.assert_clean()


@pytest.mark.parametrize("recipe", KINDS)
async def test_connected_member_killed(cluster: Cluster, chaos: Chaos, recipe: str) -> None:
    """The member the holder is connected to crashes. Strict policy: the holding ends at once
    (SUSPENDED) and the next contender takes over after the holder's node is deleted; the
    session policy keeps the holding, since the session survives on another member."""
    strict_client = await cluster.client(session_timeout=4)
    lenient_client = await cluster.client(session_timeout=4)
    rival_client = await cluster.client(session_timeout=4)
    observer = cluster.observer
    assert observer is not None
    referee = MutexReferee(chaos, recipe)
    strict = Contender(recipe, strict_client, f"/{recipe}", "strict")
    rival = Contender(recipe, rival_client, f"/{recipe}", "rival")
    lenient = Contender(recipe, lenient_client, f"/{recipe}-2", "lenient", suspended_is_loss=False)
    assert await strict.acquire(timeout=10)
    assert await lenient.acquire(timeout=10)
    referee.enter("strict", strict.token)
    session = strict_client.session_id
    lenient_session = lenient_client.session_id
    rival_waits = asyncio.ensure_future(rival.acquire(timeout=30))
    await eventually(lambda: _count(observer, strict, 2), what="the rival queued")

    async def strict_lost() -> None:
        await strict.wait_lost(10)
        referee.exit("strict")

    lost = asyncio.ensure_future(strict_lost())
    victim = cluster.member_of(strict_client)
    chaos.fault("kill")
    await cluster.kill(victim)
    await lost
    chaos.check(await rival_waits, "liveness", "the rival never got it")
    referee.enter("rival", rival.token)
    await strict_client.wait_for(State.CONNECTED, 15)
    chaos.check(strict_client.session_id == session, "session survives", "new session")
    # The lenient holder keeps its holding if its session survived the crash.
    if cluster.member_of(lenient_client) != victim or lenient_client.connected:
        await lenient_client.wait_for(State.CONNECTED, 15)
    if lenient_client.session_id == lenient_session:
        chaos.check(lenient.held, "session policy", "lost the holding with the session alive")
    await cluster.restart(victim)
    referee.exit("rival")
    await rival.release()
    with contextlib.suppress(LockLostError):
        await strict.release()
    await lenient.close()
    await cluster.finish(allowed=[f"/{recipe}", f"/{recipe}-2"])
    chaos.assert_clean()


# --- quorum and partitions -------------------------------------------------------------------


async def test_quorum_lost_suspends_then_loses_the_session_at_its_timeout(
    cluster: Cluster, chaos: Chaos
) -> None:
    """Two of three members die. The client is SUSPENDED, then LOST when the session timeout
    has passed since it last heard from a server (no server can answer for the session).
    A strict lock holder loses the lock at SUSPENDED; all recovers once the quorum is back."""
    timeout = 3.0
    client = await cluster.client(session_timeout=timeout)
    seen = states(client)
    lock = Lock(client, "/lock", suspended_is_loss=True)
    assert await lock.acquire(timeout=10)
    me = cluster.member_of(client)
    others = [i for i in range(3) if i != me]
    heard = session_of(client)._conn.last_recv if session_of(client)._conn else time.monotonic()
    for i in others:
        chaos.fault("kill")
        await cluster.kill(i)
    await client.wait_for(State.SUSPENDED, 10)
    chaos.check(await lock.lost.wait(5) is State.SUSPENDED, "strict loss", "lock kept")
    await client.wait_for(State.LOST, timeout + 5)
    lost_at = time.monotonic()
    # The client gives up when the session timeout has passed since it last heard a server.
    elapsed = lost_at - heard
    chaos.check(
        timeout - 0.5 <= elapsed <= timeout + 1.5,
        "LOST at the session timeout",
        f"LOST {elapsed:.2f} s after the last reply (timeout {timeout} s)",
    )
    order = [c.state for c in seen]
    chaos.check(order[:2] == [State.SUSPENDED, State.LOST], "states", f"{[s.value for s in order]}")
    for i in others:
        await cluster.restart(i)
    await client.wait_for(State.CONNECTED, 30)
    chaos.check(seen[-1].new_session, "new session after LOST", f"{seen[-1]}")
    with pytest.raises(LockLostError):
        await lock.release()
    assert await lock.acquire(timeout=10)
    await lock.release()
    await cluster.finish(allowed=["/lock"])
    chaos.assert_clean()


async def test_quorum_lost_read_only_mode_when_allowed(chaos: Chaos) -> None:
    """With read-only mode enabled on the servers (``-Dreadonlymode.enabled=true``; the
    servers also need local sessions, which is how a read-only server makes sessions), a
    ``read_only=True`` client on the surviving member goes SUSPENDED -> LOST -> READ_ONLY:
    reads work, writes raise NotReadOnlyError. When the quorum is back it gets a read-write
    session (the read-only session cannot move: LOST, then RECONNECTED)."""
    ensemble = ZooKeeperEnsemble(
        3,
        jvm_options=["-Dreadonlymode.enabled=true"],
        extra_config={"localSessionsEnabled": "true"},
    )
    async with ensemble:
        cluster = await Cluster(ensemble, chaos, root="/ro").start()
        try:
            writer = await cluster.client(proxied=False)
            await writer.create("/data", b"v1")
            client = await cluster.client(proxied=False, session_timeout=3, read_only=True)
            seen = states(client)
            me = cluster.member_of(client)
            others = [i for i in range(3) if i != me]
            for i in others:
                chaos.fault("kill")
                await cluster.kill(i)
            await client.wait_for(State.READ_ONLY, 30)
            chaos.check(client.state is State.READ_ONLY, "read-only", f"{client.state}")
            data, _ = await client.get("/data")
            chaos.check(data == b"v1", "reads", f"{data!r}")
            with pytest.raises(NotReadOnlyError):
                await client.set("/data", b"v2")
            order = [c.state for c in seen]
            chaos.check(
                order[:3] == [State.SUSPENDED, State.LOST, State.READ_ONLY],
                "states",
                f"{[s.value for s in order]}",
            )
            for i in others:
                await cluster.restart(i)
            await client.wait_for(State.RECONNECTED, 30)
            await client.set("/data", b"v2")
            await cluster.finish(allowed=["/data"])
        finally:
            await cluster.aclose()
    chaos.assert_clean()


async def test_read_only_client_moves_to_a_server_that_serves_writes(chaos: Chaos) -> None:
    """A ``read_only=True`` client on a read-only member asks the other servers of its list
    whether they serve writes (``isro``, as the Java client and kazoo do) and leaves for the
    first that does, on its own: READ_ONLY -> SUSPENDED -> a read-write session there (the
    read-only session is unknown to it: LOST first). Writes then work. The other server is a
    standalone one that starts only once the client is read-only; without the probe the
    client would stay read-only for as long as the member stays cut off."""
    ensemble = ZooKeeperEnsemble(
        3,
        jvm_options=["-Dreadonlymode.enabled=true"],
        extra_config={"localSessionsEnabled": "true"},
    )
    writable = ZooKeeperServer()  # its port is chosen now; it starts later
    async with ensemble:
        member = ensemble.members[0]
        for i in (1, 2):
            chaos.fault("kill")
            await asyncio.to_thread(ensemble.kill, i)
        client = await connect(
            f"{member.connect_string},{writable.connect_string}",
            read_only=True,
            session_timeout=3,
            connect_timeout=30,
        )
        try:
            await client.wait_for(State.READ_ONLY, 30)
            seen = states(client)
            await asyncio.to_thread(writable.start)
            await client.wait_for(State.CONNECTED, 30)
            server = session_of(client).server
            chaos.check(
                server is not None and server.port == writable.port,
                "moved to the read-write server",
                f"connected to {server}",
            )
            order = [c.state for c in seen]
            chaos.check(
                order[0] is State.SUSPENDED and order[-1] is State.RECONNECTED,
                "states",
                f"{[s.value for s in order]}",
            )
            await client.create("/moved", b"1")
            await client.delete("/moved")
            chaos.check(
                await client.children("/") == ["zookeeper"], "no leftover znodes", "on the server"
            )
            wchc = watched_paths(await asyncio.to_thread(writable.four_letter, "wchc"))
            chaos.check(not wchc, "no leftover watches (wchc)", f"{wchc}")
        finally:
            await client.close()
            await asyncio.to_thread(writable.stop)
    chaos.assert_clean()


async def test_partition_longer_than_twice_the_session_timeout(
    cluster: Cluster, chaos: Chaos
) -> None:
    """One client is cut off from every member for more than twice its session timeout
    while it holds a lock, leads, and caches a tree. It must learn it lost them all; the
    others take over (one holder, one leader, tokens increasing); after the partition it
    comes back on a new session, joins again, and its cache equals the server."""
    timeout = 2.0
    cut = await cluster.client(session_timeout=timeout)
    other = await cluster.client(session_timeout=timeout)
    observer = cluster.observer
    assert observer is not None
    await observer.create("/tree/a", b"0", make_parents=True)
    mutex = MutexReferee(chaos, "lock")
    leaders = LeaderReferee(chaos, "latch")
    lock = Lock(cut, "/lock", suspended_is_loss=True)
    assert await lock.acquire(timeout=10)
    mutex.enter("cut", lock.fencing_token)
    latches = [
        LeaderLatch(cut, "/leader", identifier="cut"),
        LeaderLatch(other, "/leader", identifier="other"),
    ]
    for latch in latches:
        leaders.attach(latch)
    await latches[0].start()
    await leaders.wait_leader(timeout=10)
    await latches[1].start()
    cache = TreeCache(cut, "/tree")
    checker = CacheChecker(chaos, "cut-tree", cache)
    checker.start()
    await cache.start()
    seen = states(cut)

    async def cut_lost() -> None:
        await lock.lost.wait(10)
        mutex.exit("cut")

    lost = asyncio.ensure_future(cut_lost())
    links = cluster.links_of(cut)
    chaos.fault("partition")
    links.blackhole()
    began = time.monotonic()
    await lost
    rival = Lock(other, "/lock")
    assert await rival.acquire(timeout=15)
    mutex.enter("other", rival.fencing_token)
    chaos.check(time.monotonic() - began < 2 * timeout + 3, "takeover", "the rival waited too long")
    await leaders.wait_leader(timeout=15)
    chaos.check(latches[1].is_leader, "leadership moves", "the other latch does not lead")
    await observer.set("/tree/a", b"1")
    await observer.create("/tree/b", b"new")
    await cut.wait_for(State.LOST, 2 * timeout + 5)
    remaining = 2 * timeout + 0.5 - (time.monotonic() - began)
    if remaining > 0:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), remaining)
    links.heal()
    await cut.wait_for(State.RECONNECTED, 15)
    chaos.check(seen[-1].new_session, "new session", f"{seen[-1]}")
    await observer.sync("/tree")
    await checker.settle(await server_shape(observer, "/tree"))

    async def both_queued() -> bool:
        return len(await latches[0].participants()) == 2

    await eventually(both_queued, what="the cut latch joined again")
    mutex.exit("other")
    await rival.release()
    with pytest.raises(LockLostError):
        await lock.release()
    await cache.close()
    await checker.close()
    for latch in latches:
        await latch.close()
    await cluster.finish(allowed=["/tree", "/lock", "/leader"])
    chaos.assert_clean()


async def test_leader_session_expires(cluster: Cluster, chaos: Chaos) -> None:
    """The leader's session is expired: its term ends, exactly one other contender leads
    next with a larger token, and the old leader joins again on its new session. The body
    of an Election term on the expired session is cancelled."""
    clients = [await cluster.client(session_timeout=3) for _ in range(3)]
    leaders = LeaderReferee(chaos, "latch")
    latches = [LeaderLatch(c, "/leader", identifier=f"c{i}") for i, c in enumerate(clients)]
    for latch in latches:
        leaders.attach(latch)
        await latch.start()
    first = await leaders.wait_leader(timeout=10)
    first_token = first.fencing_token or 0

    # An Election whose body runs while its session expires.
    election = Election(first.client, "/election", identifier="body")
    body_cancelled = asyncio.Event()
    entered = asyncio.Event()

    async def body() -> None:
        async with election.leadership(timeout=10):
            entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                body_cancelled.set()
                raise

    running = asyncio.ensure_future(body())
    await asyncio.wait_for(entered.wait(), 10)

    async def every_one_queued() -> bool:
        return len(await first.participants()) == 3

    # The others queue before the expiry, so one of them, ahead of the node the expired
    # leader makes on its new session, leads next. start() returns before the node is made:
    # seen in CI, the others had none yet when the leader's session expired, and the expired
    # leader, alone in the queue again, rightly led at once.
    await eventually(every_one_queued, what="every contender queued")
    await cluster.expire(first.client)
    second = await leaders.wait_leader(after_token=first_token, timeout=15)
    chaos.check(second is not first, "new leader", "the expired leader leads again at once")
    await asyncio.wait_for(body_cancelled.wait(), 10)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(running, 10)

    async def all_queued() -> bool:
        return len(await second.participants()) == 3

    await eventually(all_queued, what="the old leader queued again")
    for latch in latches:
        await latch.close()
    await election.close()
    await cluster.finish(allowed=["/leader", "/election"])
    chaos.assert_clean()


# --- caches --------------------------------------------------------------------------------


async def test_delete_and_recreate_during_a_disconnect(cluster: Cluster, chaos: Chaos) -> None:
    """While a client is disconnected, nodes it caches are deleted and created again (new
    czxid, new data). After the reconnect its caches report them removed then added, and
    equal the server."""
    client = await cluster.client(session_timeout=6)
    observer = cluster.observer
    assert observer is not None
    await observer.create("/tree/n", b"old", make_parents=True)
    await observer.create("/tree/n/x", b"old-x")
    await observer.create("/tree/keep", b"k")
    caches: list[TreeCache | ChildrenCache | NodeCache] = [
        TreeCache(client, "/tree"),
        ChildrenCache(client, "/tree"),
        NodeCache(client, "/tree/n"),
    ]
    checkers = [CacheChecker(chaos, f"{type(c).__name__}", c) for c in caches]
    node_events = caches[2].changes()
    for checker, cache in zip(checkers, caches, strict=True):
        checker.start()
        await cache.start()
    links = cluster.links_of(client)
    links.blackhole()
    links.drop()
    await client.wait_for(State.SUSPENDED, 10)
    old_czxid = (await observer.exists("/tree/n")).czxid  # type: ignore[union-attr]
    await observer.delete("/tree/n", recursive=True)
    await observer.create("/tree/n", b"new")
    await observer.create("/tree/n/y", b"new-y")
    links.heal()
    await client.wait_for(State.RECONNECTED, 15)
    await observer.sync("/tree")
    server = await server_shape(observer, "/tree")
    for checker in checkers:
        await checker.settle(server)
    # The NodeCache saw the node go and come back: DELETED, then CREATED with a new czxid.
    kinds: list[CacheEventType] = []
    while True:
        try:
            event = await asyncio.wait_for(node_events.__anext__(), 0.5)
        except (TimeoutError, StopAsyncIteration):
            break
        kinds.append(event.type)
        created = event.type is CacheEventType.CREATED and event.data is not None
        if created and event.data.stat.czxid != old_czxid:  # type: ignore[union-attr]
            break
    tail = [k for k in kinds if k in (CacheEventType.DELETED, CacheEventType.CREATED)]
    chaos.check(
        tail[-2:] == [CacheEventType.DELETED, CacheEventType.CREATED],
        "re-creation reported as removed then added",
        f"{[k.value for k in kinds]}",
    )
    await node_events.aclose()
    for cache in caches:
        await cache.close()
    for checker in checkers:
        await checker.close()
    await cluster.finish(allowed=["/tree"])
    chaos.assert_clean()


async def test_random_operations_with_member_kills_while_several_caches_watch(
    cluster: Cluster, chaos: Chaos
) -> None:
    """Random creates, sets and deletes in a tree while members crash (the leader among
    them) and come back; three clients cache the tree. Every cache's events stay consistent
    and every cache ends equal to the server."""
    rng = chaos.rng
    writer_client = await cluster.client(session_timeout=4)
    watchers = [await cluster.client(session_timeout=4) for _ in range(3)]
    observer = cluster.observer
    assert observer is not None
    await observer.ensure_path("/tree")
    caches: list[TreeCache | ChildrenCache | NodeCache] = [
        TreeCache(watchers[0], "/tree"),
        ChildrenCache(watchers[1], "/tree"),
        TreeCache(watchers[2], "/tree"),
        NodeCache(watchers[2], "/tree/a"),
    ]
    checkers = [CacheChecker(chaos, f"{type(c).__name__}-{i}", c) for i, c in enumerate(caches)]
    for checker, cache in zip(checkers, caches, strict=True):
        checker.start()
        await cache.start()
    writer_w = Worker("writer")
    start_worker(writer_w, tree_writer(chaos, writer_w, writer_client, "/tree", rng))
    for n in range(4):
        victim = await cluster.leader() if n % 2 == 0 else rng.randrange(3)
        chaos.fault("kill")
        await cluster.kill(victim)
        await asyncio.sleep(rng.uniform(0.3, 1.0))
        await cluster.restart(victim)
    await stop_workers(chaos, [writer_w])
    chaos.check(writer_w.ops > 10, "workload", f"only {writer_w.ops} writes")
    await observer.sync("/tree")
    server = await server_shape(observer, "/tree")
    for checker in checkers:
        await checker.settle(server)
    for cache in caches:
        await cache.close()
    for checker in checkers:
        await checker.close()
    print(chaos.summary())
    await cluster.finish(allowed=["/tree"])
    chaos.assert_clean()


# --- parents vanish -------------------------------------------------------------------------


async def test_latch_parent_vanishes(cluster: Cluster, chaos: Chaos) -> None:
    """The whole election path is deleted under three latches: the leader's term ends
    ("deleted"), everyone joins again (the path is re-created), and one leads."""
    clients = [await cluster.client(session_timeout=4) for _ in range(3)]
    observer = cluster.observer
    assert observer is not None
    leaders = LeaderReferee(chaos, "latch")
    latches = [LeaderLatch(c, "/leader", identifier=f"c{i}") for i, c in enumerate(clients)]
    for latch in latches:
        leaders.attach(latch)
        await latch.start()
    first = await leaders.wait_leader(timeout=10)
    ended: list[str | None] = []
    told = asyncio.Event()

    def on_change(change: LeadershipChange) -> None:
        ended.append(change.reason)
        if change.reason == "deleted":
            told.set()

    first.add_listener(on_change)

    async def all_queued() -> bool:
        return len(await first.participants()) == 3

    await eventually(all_queued, what="all latches queued")
    # Read before the deletion: the old leader may be told, join again and lead again (with
    # a new token) before the deletion's answer reaches this task.
    first_token = first.fencing_token or 0
    await delete_as_third_party(chaos, observer, "/leader")
    await leaders.wait_leader(after_token=first_token, timeout=15)
    # The old leader hears of the deletion through the watch on its own node. A contender
    # whose node was next may be told first (its watch fired at the same zxid), so the new
    # term may begin before the old leader knows: the referee counts that overlap as a
    # third-party deletion, fenced by the tokens. What must hold is that the old leader is told.
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(told.wait(), 10)
    chaos.check("deleted" in ended, "term ends on deletion", f"{ended}")
    await eventually(all_queued, what="all latches queued again")
    for latch in latches:
        await latch.close()
    await cluster.finish(allowed=["/leader"])
    chaos.assert_clean()


async def test_lock_parent_vanishes(cluster: Cluster, chaos: Chaos) -> None:
    """The lock path is deleted, with every node in it, under a holder and two waiters. The
    waiters must not hang: they queue again (the path is re-created) and take the lock one
    after the other. The holder is told (unlike Curator's InterProcessMutex): its loss fires
    with reason "deleted", and its release raises LockLostError."""
    holder_client = await cluster.client(session_timeout=4)
    waiter_clients = [await cluster.client(session_timeout=4) for _ in range(2)]
    observer = cluster.observer
    assert observer is not None
    referee = MutexReferee(chaos, "waiters")
    holder = Lock(holder_client, "/lock")
    assert await holder.acquire(timeout=10)
    waiters = [Lock(c, "/lock") for c in waiter_clients]

    async def take(i: int, lock: Lock) -> None:
        assert await lock.acquire(timeout=20)
        referee.enter(f"w{i}", lock.fencing_token)
        await asyncio.sleep(0.05)
        referee.exit(f"w{i}")
        await lock.release()

    tasks = [asyncio.ensure_future(take(i, w)) for i, w in enumerate(waiters)]

    async def queued() -> bool:
        # The observer may read from a member that has not applied the path's create yet.
        return len(await child_names(observer, "/lock")) == 3

    await eventually(queued, what="the waiters queued")
    await delete_as_third_party(chaos, observer, "/lock")
    assert await holder.lost.wait(10) is State.LOST
    assert holder.lost.reason == "deleted"
    assert not holder.is_held
    await asyncio.wait_for(asyncio.gather(*tasks), 30)
    with pytest.raises(LockLostError):
        await holder.release()  # its node is gone already: nothing to delete
    await cluster.finish(allowed=["/lock"])
    chaos.assert_clean()


@pytest.mark.parametrize("draw", range(4))
async def test_same_client_waiter_is_not_granted_while_its_session_expires_unseen(
    cluster: Cluster, chaos: Chaos, draw: int
) -> None:
    """Client A holds a lock with one of its own tasks waiting behind; A is partitioned past
    its session timeout and B takes the lock. A's holder releases at a moment drawn from the
    seed (while A still trusts its session, while SUSPENDED, or after B's grant). A grant log
    of every client must show no overlap and strictly increasing tokens."""
    rng = random.Random(f"{chaos.seed}-{draw}")
    timeout = 2.0
    a = await cluster.client(session_timeout=timeout)
    b = await cluster.client(session_timeout=timeout)
    links = cluster.links_of(a)
    delay = rng.uniform(0.0, 1.6 * timeout)

    def cut() -> None:
        chaos.fault("partition")
        chaos.note(f"A's holder releases {delay:.2f} s into the partition")
        links.blackhole()

    async def release(log: GrantLog) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(log.wait_granted("b"), delay)

    log = await stale_grant_scenario(a, b, cut=cut, heal=links.heal, release=release, b_holds=0.5)
    for problem in log.violations():
        chaos.violate("lock: mutual exclusion and fencing", problem)
    await cluster.finish(allowed=["/p"])
    chaos.assert_clean()
