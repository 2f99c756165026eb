"""Lock revocation (Curator's ``Revoking``): a holder that opted in is told of a request, and
decides; one that did not is unchanged. Both directions against Curator too, on each version
of support.CURATOR_VERSIONS: a Java program (tests/integration/java/CuratorRecipesPeer.java)
holds an ``InterProcessMutex`` made revocable, or runs ``Revoker.attemptRevoke`` on our
holder's node."""

from __future__ import annotations

import asyncio

import pytest
from support import (
    Factory,
    ask_running_peer,
    eventually,
    java_line,
)

from aiocoord import Lock, Mutex, ReadWriteLock, State, attempt_revoke
from aiocoord.errors import InvalidPathError
from aiocoord.testing import FaultProxy

#: The rows of the failure-semantics tables (docs/recipes/locks.md) that this module holds,
#: with the tests that hold each under the fault it names
#: (checked by tests/unit/test_semantics_rows.py).
SEMANTICS = {
    "recipes/locks.md | Failure semantics | Revocation requested while the holder is cut off": [
        "test_a_request_made_while_the_holder_is_cut_off_is_told_once_reconnected",
    ],
}


async def test_a_revocable_holder_is_told_and_keeps_the_lock_until_it_releases(
    zk_connect: Factory,
) -> None:
    holder, other = await zk_connect(), await zk_connect()
    lock = Lock(holder, "/r")
    lock.make_revocable()
    await lock.acquire()
    node = lock.node_path
    assert node is not None
    waiter = Mutex(other, "/r")  # released by this task, not the one that took it
    wait = asyncio.create_task(waiter.acquire())

    assert await attempt_revoke(other, node) is True
    assert await lock.revocation.wait(timeout=20) == node
    # Told, not released: the holder decides (and the waiter still waits).
    assert lock.is_held and not lock.lost.is_set() and not wait.done()
    assert (await holder.get(node))[0] == b"__REVOKE__"
    await lock.release()
    await asyncio.wait_for(wait, 20)
    await waiter.release()
    assert await attempt_revoke(other, node) is False  # gone: nothing to revoke
    with pytest.raises(InvalidPathError):
        await attempt_revoke(other, "no-slash")


async def test_a_holder_that_did_not_opt_in_is_unchanged(zk_connect: Factory) -> None:
    holder, other = await zk_connect(), await zk_connect()
    plain, listening = Lock(holder, "/plain"), Lock(holder, "/listening")
    listening.make_revocable()
    await plain.acquire()
    await listening.acquire()
    node = plain.node_path
    assert node is not None and listening.node_path is not None

    assert await attempt_revoke(other, node)
    assert await attempt_revoke(other, listening.node_path)
    # One session hears the two changes in their order, and reads each node in that order:
    # once the second holder is told, the first has read its request and let it be.
    await listening.revocation.wait(timeout=20)
    assert not plain.revocation.is_set()
    assert plain.is_held and not plain.lost.is_set()
    await plain.release()  # no error: it held on, unchanged
    await listening.release()
    assert await holder.exists(node) is None


@pytest.mark.parametrize("layout", ["curator", "kazoo"])
async def test_a_holder_never_takes_its_own_identifier_for_a_request(
    zk_connect: Factory, layout: str
) -> None:
    """An identifier that reads ``__REVOKE__`` is the holder's own data, written with its node,
    not a request: only a change of the node's data asks (Curator's holders write no data on a
    revocable node, so theirs never meet this)."""
    holder, other = await zk_connect(), await zk_connect()
    lock = Lock(holder, "/self", identifier="__REVOKE__", layout=layout)
    lock.make_revocable()

    def gets() -> int:
        stat = holder.stats().requests.get("get")
        return stat.count if stat is not None else 0

    before = gets()
    await lock.acquire()
    node = lock.node_path
    assert node is not None
    assert (await other.get(node))[0] == b"__REVOKE__"  # its identifier, as given

    async def read() -> bool:  # the holding's watch on its node, armed by a read of its data
        return gets() > before

    await eventually(read, what="the holder's read of its node")
    await holder.sync()  # answered after that read
    assert not lock.revocation.is_set()
    assert await attempt_revoke(other, node)  # a request still is one
    assert await lock.revocation.wait(timeout=20) == node
    await lock.release()
    # Made revocable while held, too; and a request that writes the very bytes the node was
    # made with is still one.
    late = Lock(holder, "/self-late", identifier="__REVOKE__", layout=layout)
    await late.acquire()
    late.make_revocable()
    assert late.node_path is not None
    assert await attempt_revoke(other, late.node_path)
    assert await late.revocation.wait(timeout=20) == late.node_path
    await late.release()


async def test_a_request_made_while_waiting_is_told_once_held(zk_connect: Factory) -> None:
    first, second, revoker = await zk_connect(), await zk_connect(), await zk_connect()
    holder, waiter = Lock(first, "/w"), Mutex(second, "/w")  # any task may release a Mutex
    waiter.make_revocable()
    await holder.acquire()
    wait = asyncio.create_task(waiter.acquire())

    async def queued() -> bool:
        return len(await holder.contenders()) == 2

    await eventually(queued, what="the waiter's node")  # another session's: no event tells
    node = f"/w/{(await holder.contenders())[1].node_name}"
    assert await attempt_revoke(revoker, node)
    await holder.release()
    await asyncio.wait_for(wait, 20)
    assert await waiter.revocation.wait(timeout=20) == node == waiter.node_path
    await waiter.release()


async def test_a_request_made_while_the_holder_is_cut_off_is_told_once_reconnected(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=6)
    other = await zk_connect()
    lock = Lock(client, "/cut")
    lock.make_revocable()
    await lock.acquire()
    await client.sync()  # the holding's watch on its node is armed
    node = lock.node_path
    assert node is not None
    session_id = client.session_id

    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    assert await attempt_revoke(other, node)
    assert not lock.revocation.is_set()  # it cannot have heard: nothing reaches it
    zk_fault_proxy.heal()
    await client.wait_for(State.RECONNECTED, timeout=10)
    # The watch restored from the last zxid seen fires for the change made meanwhile.
    assert await lock.revocation.wait(timeout=10) == node
    assert lock.is_held and client.session_id == session_id
    await lock.release()


async def test_opting_in_costs_no_request(zk_connect: Factory) -> None:
    async def cycle(revocable: bool) -> dict[str, int]:
        client = await zk_connect()
        lock = Lock(client, f"/cost-{revocable}")
        if revocable:
            lock.make_revocable()
        for _ in range(3):
            await lock.acquire()
            await client.sync()  # the holding's watch on its node is armed (a getData)
            await lock.release()
        await client.sync()
        return {op: s.count for op, s in client.stats().requests.items() if op != "sync"}

    plain = await cycle(False)
    assert plain.get("get", 0) > 0  # the holder's watch on its own node: the same read
    assert await cycle(True) == plain


async def test_the_write_half_of_a_read_write_lock_is_revocable(zk_connect: Factory) -> None:
    holder, other = await zk_connect(), await zk_connect()
    rw = ReadWriteLock(holder, "/rw")
    rw.write.make_revocable()
    await rw.write.acquire()
    node = rw.write.node_path
    assert node is not None and "__WRIT__" in node
    assert await attempt_revoke(other, node)
    assert await rw.write.revocation.wait(timeout=20) == node
    assert rw.write.is_held and not rw.read.revocation.is_set()
    await rw.write.release()
    # A fresh event for the next holding.
    await rw.write.acquire()
    assert not rw.write.revocation.is_set()
    await rw.write.release()


async def test_curators_revoker_reaches_our_holder(
    zk_connect: Factory, curator_process: asyncio.subprocess.Process
) -> None:
    client = await zk_connect()
    lock = Lock(client, "/from-java")
    lock.make_revocable()
    await lock.acquire()
    assert lock.node_path is not None
    assert await ask_running_peer(curator_process, f"revoke {lock.node_path}") == "revoke-sent"
    assert await lock.revocation.wait(timeout=20) == lock.node_path
    assert lock.is_held
    await lock.release()


async def test_our_revoker_reaches_a_revocable_curator_holder(
    zk_connect: Factory, curator_process: asyncio.subprocess.Process
) -> None:
    client = await zk_connect()
    held = await ask_running_peer(curator_process, "hold /to-java 1")
    assert held.startswith("held /to-java/_c_")
    node = held.split(" ", 1)[1]
    assert await attempt_revoke(client, node)
    assert await java_line(curator_process, 20) == "revoked"
    assert await ask_running_peer(curator_process, "status") == "holding true"  # told, not released
    assert await ask_running_peer(curator_process, "release") == "released"
    assert await client.exists(node) is None


async def test_a_curator_holder_that_did_not_opt_in_is_unchanged(
    zk_connect: Factory, curator_process: asyncio.subprocess.Process
) -> None:
    client = await zk_connect()
    held = await ask_running_peer(curator_process, "hold /plain-java 0")
    node = held.split(" ", 1)[1]
    assert await attempt_revoke(client, node)
    # The peer answers in order: a "revoked" line would come before these answers.
    assert await ask_running_peer(curator_process, "status") == "holding true"
    assert await ask_running_peer(curator_process, "release") == "released"
