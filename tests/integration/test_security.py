"""Security against the real server: digest authentication, ACLs on creates, a lock whose
path is protected by a digest ACL, authentication kept across reconnects and new sessions.

SASL DIGEST-MD5 has its own module, test_sasl.py (it needs a server with JAAS users).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest
from support import Factory, eventually

from aiocoord import (
    ACL,
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    READ_ACL_UNSAFE,
    AtomicCounter,
    Barrier,
    Client,
    DelayQueue,
    DistributedAtomicValue,
    DoubleBarrier,
    Election,
    GroupMember,
    IdQueue,
    LeaderLatch,
    Lock,
    LockingQueue,
    PersistentNode,
    PersistentTtlNode,
    Queue,
    QueueSharder,
    ReadWriteLock,
    Semaphore,
    SharedCount,
    SharedValue,
    SimpleQueue,
    State,
)
from aiocoord.errors import (
    AuthFailedError,
    BadArgumentsError,
    InvalidTypeError,
    NoAuthError,
    NoNodeError,
)
from aiocoord.recipes.atomic_value import PromotedToLock
from aiocoord.testing import FaultProxy, expire_client, session_of

ALICE = ("digest", "alice:secret")
BOB = ("digest", "bob:hunter2")


def digest_id(credential: str) -> str:
    """The ``digest`` ACL id of ``user:password``: ``user:base64(sha1(user:password))``."""
    user = credential.split(":", 1)[0]
    return f"{user}:{base64.b64encode(hashlib.sha1(credential.encode()).digest()).decode()}"


def only(credential: str, perms: int = ACL.ALL) -> list[ACL]:
    return [ACL(perms, "digest", digest_id(credential))]


async def test_digest_auth_gives_the_identity(zk_connect: Factory) -> None:
    alice = await zk_connect(auth=[ALICE])
    assert ("digest", "alice") in await alice.whoami()
    anonymous = await zk_connect()
    assert ("digest", "alice") not in await anonymous.whoami()


async def test_creator_all_acl_admits_the_creator_only(zk_connect: Factory) -> None:
    alice = await zk_connect(auth=[ALICE])
    bob = await zk_connect(auth=[BOB])
    anonymous = await zk_connect()
    await alice.create("/private", b"secret", acl=CREATOR_ALL_ACL)
    acl, _ = await alice.get_acl("/private")
    assert acl == only(ALICE[1])  # "auth" was resolved to alice's digest identity
    assert (await alice.get("/private"))[0] == b"secret"
    for stranger in (bob, anonymous):
        with pytest.raises(NoAuthError):
            await stranger.get("/private")
        with pytest.raises(NoAuthError):
            await stranger.set("/private", b"mine")
        with pytest.raises(NoAuthError):
            await stranger.create("/private/child")
        with pytest.raises(NoAuthError):
            await stranger.set_acl("/private", READ_ACL_UNSAFE)


async def test_world_readable_node_refuses_anonymous_writes(zk_connect: Factory) -> None:
    alice = await zk_connect(auth=[ALICE])
    anonymous = await zk_connect()
    await alice.create("/public", b"news", acl=[*READ_ACL_UNSAFE, *only(ALICE[1])])
    assert (await anonymous.get("/public"))[0] == b"news"
    with pytest.raises(NoAuthError):
        await anonymous.set("/public", b"fake news")
    await alice.set("/public", b"more news")


async def test_ip_acl(zk_connect: Factory) -> None:
    alice = await zk_connect(auth=[ALICE])
    anonymous = await zk_connect()
    await alice.create("/local", b"", acl=[ACL(ACL.ALL, "ip", "127.0.0.1"), *only(ALICE[1])])
    await alice.create("/elsewhere", b"", acl=[ACL(ACL.ALL, "ip", "10.9.8.7"), *only(ALICE[1])])
    await anonymous.get("/local")  # we connect from 127.0.0.1
    with pytest.raises(NoAuthError):
        await anonymous.get("/elsewhere")


async def test_unauthenticated_client_cannot_read_take_or_delete_protected_lock_nodes(
    zk_connect: Factory,
) -> None:
    """A lock path protected by a digest ACL (the lock's parent: ZooKeeper checks CREATE and
    DELETE on the parent): an anonymous client can neither list the contenders, nor delete
    the holder's node, nor queue for the lock; the holder is undisturbed."""
    alice = await zk_connect(auth=[ALICE])
    anonymous = await zk_connect()
    await alice.ensure_path("/locks")
    await alice.create("/locks/job", acl=only(ALICE[1]))
    lock = Lock(alice, "/locks/job")
    assert await lock.acquire(timeout=10)
    node = lock.node_path
    assert node is not None
    with pytest.raises(NoAuthError):
        await anonymous.children("/locks/job")
    with pytest.raises(NoAuthError):
        await anonymous.delete(node)
    with pytest.raises(NoAuthError):
        await anonymous.delete("/locks/job", recursive=True)
    with pytest.raises(NoAuthError):
        await Lock(anonymous, "/locks/job").acquire(timeout=5)
    assert lock.is_held
    assert await alice.exists(node) is not None
    assert await alice.children("/locks/job") == [node.rsplit("/", 1)[1]]
    # Another client with the right credentials queues normally.
    colleague = await zk_connect(auth=[ALICE])
    assert not await Lock(colleague, "/locks/job").acquire(blocking=False)
    await lock.release()
    # A failed non-blocking acquire waits only briefly for its node's delete to be answered.
    await colleague.wait_background()
    assert await alice.children("/locks/job") == []
    assert await Lock(colleague, "/locks/job").acquire(timeout=10)


async def test_authentication_survives_reconnects_and_new_sessions(
    zk_connect: Factory, zk_fault_proxy: FaultProxy, zookeeper: Any
) -> None:
    alice = await zk_connect(zk_fault_proxy.connect_string, auth=[ALICE], session_timeout=4)
    await alice.create("/kept", b"x", acl=CREATOR_ALL_ACL)
    session = alice.session_id
    # Same session, new connection: the credentials are sent again first.
    zk_fault_proxy.drop()
    await alice.wait_for(State.RECONNECTED, 10)
    assert alice.session_id == session
    assert (await alice.get("/kept"))[0] == b"x"
    # New session after expiry: the credentials go with it too.
    await expire_client(alice, zookeeper.connect_string)
    await alice.wait_for(State.CONNECTED, 10)
    assert alice.session_id != session
    assert (await alice.get("/kept"))[0] == b"x"
    assert ("digest", "alice") in await alice.whoami()


async def test_add_auth_at_runtime_grants_access(zk_connect: Factory) -> None:
    alice = await zk_connect(auth=[ALICE])
    late = await zk_connect()
    await alice.create("/late", b"y", acl=only(ALICE[1], ACL.READ | ACL.ADMIN))
    with pytest.raises(NoAuthError):
        await late.get("/late")
    await late.add_auth(*ALICE)
    assert (await late.get("/late"))[0] == b"y"
    with pytest.raises(NoAuthError):
        await late.set("/late", b"z")  # the ACL grants READ and ADMIN only


async def test_unknown_auth_scheme_is_refused(zk_connect: Factory) -> None:
    with pytest.raises(AuthFailedError):
        await zk_connect(auth=[("no-such-scheme", "x")], connect_timeout=5)
    client = await zk_connect()
    with pytest.raises(AuthFailedError):
        await client.add_auth("no-such-scheme", "x")
    # The refused credential is not kept: the session goes on without it.
    await client.wait_for(State.CONNECTED, 10)
    await client.ensure_path("/after")


# --- ACLs on the nodes recipes create ----------------------------------------------------

RECIPES: dict[str, Callable[[Client, list[ACL]], Any]] = {
    "Lock": lambda c, acl: Lock(c, "/r", acl=acl),
    "ReadWriteLock": lambda c, acl: ReadWriteLock(c, "/r", acl=acl),
    "Semaphore": lambda c, acl: Semaphore(c, "/r", 2, acl=acl),
    "LeaderLatch": lambda c, acl: LeaderLatch(c, "/r", identifier="me", acl=acl),
    "Election": lambda c, acl: Election(c, "/r", identifier="me", acl=acl),
    "Queue": lambda c, acl: Queue(c, "/r", acl=acl),
    "LockingQueue": lambda c, acl: LockingQueue(c, "/r", acl=acl),
    "AtomicCounter": lambda c, acl: AtomicCounter(c, "/r", acl=acl),
    "SharedCount": lambda c, acl: SharedCount(c, "/r", 0, acl=acl),
    "Barrier": lambda c, acl: Barrier(c, "/r", acl=acl),
    "DoubleBarrier": lambda c, acl: DoubleBarrier(c, "/r", 2, acl=acl),
    "PersistentNode": lambda c, acl: PersistentNode(c, "/r", acl=acl),
    "GroupMember": lambda c, acl: GroupMember(c, "/r", "me", acl=acl),
    "SimpleQueue": lambda c, acl: SimpleQueue(c, "/r", acl=acl),
    "DelayQueue": lambda c, acl: DelayQueue(c, "/r", acl=acl),
    "IdQueue": lambda c, acl: IdQueue(c, "/r", acl=acl),
    "SharedValue": lambda c, acl: SharedValue(c, "/r", acl=acl),
    "PersistentTtlNode": lambda c, acl: PersistentTtlNode(c, "/r", 30, acl=acl),
    "DistributedAtomicValue": lambda c, acl: DistributedAtomicValue(
        c, "/r/value", promoted_to_lock=PromotedToLock("/r/lock"), acl=acl
    ),
    "QueueSharder": lambda c, acl: QueueSharder(c, "/r/q", "/r/leader", acl=acl),
}


@pytest.mark.parametrize("recipe", sorted(RECIPES))
async def test_recipes_take_an_acl_and_refuse_a_bad_one_before_sending(
    zk_connect: Factory, recipe: str
) -> None:
    client = await zk_connect(auth=[ALICE])
    sent = dict(session_of(client).sent)
    made = RECIPES[recipe](client, only(ALICE[1]))
    assert tuple(made.acl) == tuple(only(ALICE[1]))
    with pytest.raises(InvalidTypeError):
        RECIPES[recipe](client, ["not an ACL"])
    with pytest.raises(BadArgumentsError):
        RECIPES[recipe](client, [])  # ZooKeeper refuses an empty ACL
    assert dict(session_of(client).sent) == sent  # constructing sends nothing


async def _lock(r: Lock, done: AsyncExitStack) -> None:
    assert await r.acquire(timeout=10)
    done.push_async_callback(r.release)


async def _rwlock(r: ReadWriteLock, done: AsyncExitStack) -> None:
    assert await r.write.acquire(timeout=10)
    done.push_async_callback(r.write.release)
    assert await r.read.acquire(timeout=10)  # a downgrade: the non-sequential node
    done.push_async_callback(r.read.release)


async def _semaphore(r: Semaphore, done: AsyncExitStack) -> None:
    (lease,) = await r.acquire(1, timeout=10)
    done.push_async_callback(lease.release)


async def _latch(r: LeaderLatch, done: AsyncExitStack) -> None:
    await done.enter_async_context(r)
    assert await r.wait_until_leader(10)


async def _election(r: Election, done: AsyncExitStack) -> None:
    await done.enter_async_context(r.leadership(10))


async def _queue(r: Queue, done: AsyncExitStack) -> None:
    done.push_async_callback(r.close)
    await r.put(b"job")


async def _locking_queue(r: LockingQueue, done: AsyncExitStack) -> None:
    done.push_async_callback(r.close)
    await r.put(b"job")
    item = await r.take(10)
    done.push_async_callback(item.release)


async def _counter(r: AtomicCounter, done: AsyncExitStack) -> None:
    done.push_async_callback(r.close)
    assert (await r.increment()).succeeded


async def _shared_count(r: SharedCount, done: AsyncExitStack) -> None:
    await done.enter_async_context(r)
    await r.try_set(1, r.versioned.version)  # leaves a marker node


async def _barrier(r: Barrier, done: AsyncExitStack) -> None:
    await r.set()


async def _double_barrier(r: DoubleBarrier, done: AsyncExitStack) -> None:
    other = DoubleBarrier(r.client, r.path, r.n, acl=r.acl)
    assert all(await asyncio.gather(r.enter(10), other.enter(10)))
    done.push_async_callback(lambda: asyncio.gather(r.leave(10), other.leave(10)))


async def _persistent_node(r: PersistentNode, done: AsyncExitStack) -> None:
    await done.enter_async_context(r)
    assert await r.wait_for_initial_create(10)


async def _group_member(r: GroupMember, done: AsyncExitStack) -> None:
    await done.enter_async_context(r)
    await r.wait_for(lambda members: "me" in members, 10)


async def _id_queue(r: IdQueue, done: AsyncExitStack) -> None:
    done.push_async_callback(r.close)
    await r.put(b"job", "id")


async def _shared_value(r: SharedValue, done: AsyncExitStack) -> None:
    await done.enter_async_context(r)
    await r.try_set(b"v", r.versioned.version)  # leaves a marker node


async def _ttl_node(r: PersistentTtlNode, done: AsyncExitStack) -> None:
    await done.enter_async_context(r)
    child = r.child_path

    async def touched() -> bool:
        return await r.client.exists(child) is not None

    await eventually(touched, what="the TTL child")


async def _atomic_value(r: DistributedAtomicValue, done: AsyncExitStack) -> None:
    done.push_async_callback(r.close)
    assert (await r.try_set(b"v")).succeeded  # parents made, a marker node left


async def _sharder(r: QueueSharder, done: AsyncExitStack) -> None:
    await done.enter_async_context(r)
    assert await r.latch.wait_until_leader(10)
    await r.put(b"job")


# What makes each recipe create its nodes (undone by the stack once they have been checked).
USES: dict[str, Callable[[Any, AsyncExitStack], Awaitable[None]]] = {
    "Lock": _lock,
    "ReadWriteLock": _rwlock,
    "Semaphore": _semaphore,
    "LeaderLatch": _latch,
    "Election": _election,
    "Queue": _queue,
    "LockingQueue": _locking_queue,
    "AtomicCounter": _counter,
    "SharedCount": _shared_count,
    "Barrier": _barrier,
    "DoubleBarrier": _double_barrier,
    "PersistentNode": _persistent_node,
    "GroupMember": _group_member,
    "SimpleQueue": _queue,
    "DelayQueue": _queue,
    "IdQueue": _id_queue,
    "SharedValue": _shared_value,
    "PersistentTtlNode": _ttl_node,
    "DistributedAtomicValue": _atomic_value,
    "QueueSharder": _sharder,
}


async def _acls_under(client: Client, path: str) -> dict[str, list[ACL]]:
    """The ACL of ``path`` and of every node below it (nodes that vanish meanwhile, such as
    emptied containers, are left out)."""
    out: dict[str, list[ACL]] = {}
    try:
        out[path], _ = await client.get_acl(path)
        names = await client.children(path)
    except NoNodeError:
        return out
    for name in names:
        out.update(await _acls_under(client, f"{path}/{name}"))
    return out


@pytest.mark.parametrize("recipe", sorted(RECIPES))
async def test_recipe_nodes_and_their_parents_carry_the_acl(
    zk_connect: Factory, recipe: str
) -> None:
    """Every node a recipe creates, the container parents it makes included, has its ACL:
    an anonymous client cannot even list them."""
    alice = await zk_connect(auth=[ALICE])
    anonymous = await zk_connect()
    async with AsyncExitStack() as done:
        await USES[recipe](RECIPES[recipe](alice, only(ALICE[1])), done)
        acls = await _acls_under(alice, "/r")
        assert "/r" in acls
        assert acls == dict.fromkeys(acls, only(ALICE[1]))
        with pytest.raises(NoAuthError):
            await anonymous.children("/r")


async def test_lock_nodes_with_an_acl_refuse_anonymous_writes(zk_connect: Factory) -> None:
    """Without ``acl=`` a lock node is world-writable (OPEN_ACL_UNSAFE, as ZooKeeper's own
    default): an anonymous client that knows its name could rewrite the holder's identifier."""
    alice = await zk_connect(auth=[ALICE])
    anonymous = await zk_connect()
    await alice.ensure_path("/locks")
    await alice.create("/locks/job", acl=only(ALICE[1]))
    lock = Lock(alice, "/locks/job", identifier="alice", acl=only(ALICE[1]))
    assert await lock.acquire(timeout=10)
    assert lock.node_path is not None
    try:
        with pytest.raises(NoAuthError):
            await anonymous.set(lock.node_path, b"mallory")
    finally:
        await lock.release()


async def test_acl_provider_covers_every_create_without_an_acl(zk_connect: Factory) -> None:
    """Curator's ACLProvider: the client's ``acl_provider(path)`` gives the ACL of each node
    created without ``acl=``, recipe nodes and the parents made for them included; an
    explicit ``acl=`` still wins, and None from the provider means open."""

    def provider(path: str) -> list[ACL] | None:
        return only(ALICE[1]) if path.startswith("/guarded") else None

    alice = await zk_connect(auth=[ALICE], acl_provider=provider)
    anonymous = await zk_connect()
    await alice.create("/open/node", make_parents=True)
    assert (await alice.get_acl("/open"))[0] == list(OPEN_ACL_UNSAFE)
    assert (await alice.get_acl("/open/node"))[0] == list(OPEN_ACL_UNSAFE)
    lock = Lock(alice, "/guarded/locks/job", identifier="alice")
    async with lock:
        acls = await _acls_under(alice, "/guarded")
        assert lock.node_path in acls
        assert sorted(acls) == sorted(
            ["/guarded", "/guarded/locks", "/guarded/locks/job", lock.node_path]
        )
        assert all(acl == only(ALICE[1]) for acl in acls.values())
        with pytest.raises(NoAuthError):
            await anonymous.children("/guarded")
        with pytest.raises(NoAuthError):
            await anonymous.delete(lock.node_path)
    txn = alice.transaction().create("/guarded/by-txn").create("/guarded/read", acl=READ_ACL_UNSAFE)
    await txn.commit()
    assert (await alice.get_acl("/guarded/by-txn"))[0] == only(ALICE[1])
    assert (await alice.get_acl("/guarded/read"))[0] == list(READ_ACL_UNSAFE)


async def test_acl_provider_must_be_callable(zk_connect: Factory) -> None:
    from aiocoord.errors import InvalidTypeError

    with pytest.raises(InvalidTypeError):
        await zk_connect(acl_provider=only(ALICE[1]))
