"""Path operations against a real server: create modes, reads, writes, transactions, opcodes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import aiocoord
import aiocoord._validation
from aiocoord import ACL, Client, EventType
from aiocoord._client import door
from aiocoord._wire.opcodes import OP_NAMES
from aiocoord.errors import (
    BadArgumentsError,
    BadVersionError,
    ClientClosedError,
    DataTooLargeError,
    InvalidPathError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    TransactionFailedError,
)
from aiocoord.testing import ServerHandle, session_of


async def test_create_get_set_delete_roundtrip(zk_client: Client) -> None:
    path = await zk_client.create("/a", b"one")
    assert path == "/a"
    data, stat = await zk_client.get("/a")
    assert (data, stat.version) == (b"one", 0)
    stat2 = await zk_client.set("/a", b"two", version=0)
    assert stat2.version == 1 and stat2.mzxid > stat.mzxid
    with pytest.raises(BadVersionError):
        await zk_client.set("/a", b"three", version=0)
    with pytest.raises(NodeExistsError):
        await zk_client.create("/a")
    await zk_client.delete("/a", version=1)
    assert await zk_client.exists("/a") is None
    with pytest.raises(NoNodeError) as info:
        await zk_client.get("/a")
    assert info.value.path == "/a"


async def test_create_modes(zk_client: Client) -> None:
    seq = await zk_client.create("/q/item-", b"", sequential=True, make_parents=True)
    assert seq.startswith("/q/item-") and len(seq.rsplit("-", 1)[1]) == 10
    _, stat = await zk_client.create("/e", ephemeral=True, with_stat=True)
    assert stat.ephemeral_owner == zk_client.session_id
    # A real container (createContainer, not a flag on create) is swept by the server once
    # its last child is gone; a plain node would stay.
    await zk_client.create("/c", container=True)
    await zk_client.create("/c/child")
    await zk_client.delete("/c/child")
    _, swept = await zk_client.exists("/c", watch=True)
    assert (await asyncio.wait_for(swept, 10)).type is EventType.DELETED
    # Missing parents made as containers are swept the same way.
    await zk_client.create("/deep/er/leaf", make_parents=True, parents_as_containers=True)
    _, parent_gone = await zk_client.exists("/deep/er", watch=True)
    await zk_client.delete("/deep/er/leaf")
    assert (await asyncio.wait_for(parent_gone, 10)).type is EventType.DELETED
    # A TTL node with no children is removed once its TTL passed without a change.
    await zk_client.create("/ttl", ttl=0.2)
    _, expired = await zk_client.exists("/ttl", watch=True)
    assert (await asyncio.wait_for(expired, 10)).type is EventType.DELETED


async def test_children_with_stat_and_recursive_delete(zk_client: Client) -> None:
    for i in range(5):
        await zk_client.create(f"/t/n{i}/x", make_parents=True)
    names, stat = await zk_client.children("/t", with_stat=True)
    assert sorted(names) == [f"n{i}" for i in range(5)] and stat.num_children == 5
    with pytest.raises(NotEmptyError):
        await zk_client.delete("/t")
    assert await zk_client.count_descendants("/t") == 10
    await zk_client.delete("/t", recursive=True)
    assert await zk_client.exists("/t") is None


async def test_transaction_commits_all_or_names_the_failing_op(zk_client: Client) -> None:
    await zk_client.create("/x", b"0")
    results = await (
        zk_client.transaction()
        .create("/y", b"1")
        .set("/x", b"2", version=0)
        .check("/y", 0)
        .commit()
    )
    assert [r.op for r in results] == ["create", "set", "check"]
    assert results[0].path == "/y" and results[1].stat is not None
    with pytest.raises(TransactionFailedError) as info:
        await zk_client.transaction().create("/z").delete("/missing").commit()
    assert info.value.failed_index == 1
    assert isinstance(info.value.cause, NoNodeError)
    assert await zk_client.exists("/z") is None  # rolled back


async def test_transaction_refuses_the_op_that_makes_it_too_large(zk_client: Client) -> None:
    half = b"x" * (aiocoord._validation.MAX_REQUEST // 2)
    txn = zk_client.transaction().create("/a", half)
    with pytest.raises(DataTooLargeError):
        txn.create("/b", half)  # each fits alone, not both in one request
    assert len(txn) == 1  # the refused op is not kept: the rest still commits
    await txn.commit()
    assert await zk_client.exists("/a") is not None and await zk_client.exists("/b") is None


async def test_transaction_create_results_carry_the_servers_stat(
    zk_client: Client, zookeeper: ServerHandle
) -> None:
    results = await (
        zk_client.transaction()
        .create("/plain", b"12")
        .create("/box", b"345", container=True)
        .set("/plain", b"6")
        .commit()
    )
    plain, box, written = results
    assert (plain.path, box.path) == ("/plain", "/box")
    assert box.stat is not None and written.stat is not None
    # one transaction, one zxid: the container's creation and the set share it
    assert box.stat.czxid > 0 and box.stat.czxid == box.stat.mzxid == written.stat.mzxid
    assert (box.stat.version, box.stat.data_length, box.stat.ephemeral_owner) == (0, 3, 0)
    if _server_version(zookeeper) >= (3, 9):
        assert plain.stat is not None and plain.stat.czxid == box.stat.czxid
        assert (plain.stat.version, plain.stat.data_length) == (0, 2)
    else:
        # ZOOKEEPER-4026: a create2 inside a multi is answered with the path alone
        assert plain.stat is None


def _server_version(server: ServerHandle) -> tuple[int, int]:
    """(major, minor) from ``srvr``'s "Zookeeper version: 3.8.4-<hash>, built on ..."."""
    line = server.four_letter("srvr").splitlines()[0]
    major, minor = line.split(":", 1)[1].strip().split(".")[:2]
    return int(major), int(minor)


async def test_new_opcodes_against_the_real_server(zk_client: Client) -> None:
    await zk_client.create("/eph/a", ephemeral=False, make_parents=True)
    await zk_client.create("/eph/a/b", ephemeral=True)
    assert await zk_client.get_ephemerals("/eph") == ["/eph/a/b"]
    assert await zk_client.count_descendants("/eph") == 2
    who = await zk_client.whoami()
    assert who and who[0][0] == "ip"
    watch = await zk_client.add_watch("/eph", recursive=True)
    await zk_client.set("/eph/a/b", b"v")
    event = await asyncio.wait_for(anext(watch), 5)
    assert (event.type, event.path) == (EventType.DATA_CHANGED, "/eph/a/b")
    await watch.aclose()
    await zk_client.sync("/eph")


async def test_acl_and_digest_auth(zookeeper, zk_connect, zk_namespace) -> None:  # type: ignore[no-untyped-def]
    import base64
    import hashlib

    owner = await zk_connect(auth=[("digest", "alice:secret")])
    digest = base64.b64encode(hashlib.sha1(b"alice:secret").digest()).decode()
    await owner.create("/private", b"s", acl=[ACL(ACL.ALL, "digest", f"alice:{digest}")])
    acl, _ = await owner.get_acl("/private")
    assert acl == [ACL(ACL.ALL, "digest", f"alice:{digest}")]
    assert ("digest", "alice") in await owner.whoami()
    stranger = await zk_connect()
    with pytest.raises(aiocoord.NoAuthError):
        await stranger.get("/private")
    await stranger.add_auth("digest", "alice:secret")
    assert (await stranger.get("/private"))[0] == b"s"


async def test_bad_input_raises_typed_errors_with_nothing_sent(zk_client: Client) -> None:
    sent_before = sum(session_of(zk_client).sent.values())
    calls = [
        (InvalidPathError, zk_client.create("relative")),
        (InvalidPathError, zk_client.get("/a/")),
        (InvalidPathError, zk_client.exists("/a//b")),
        (InvalidPathError, zk_client.children("/a/../b")),
        (InvalidPathError, zk_client.delete("/a\x00")),
        (DataTooLargeError, zk_client.create("/big", b"x" * (1024 * 1024 + 1))),
        (DataTooLargeError, zk_client.set("/big", b"x" * (2 * 1024 * 1024))),
        (InvalidTypeError, zk_client.create("/s", "text")),  # type: ignore[arg-type]
        (InvalidTypeError, zk_client.get(b"/bytes")),  # type: ignore[arg-type]
        (InvalidTypeError, zk_client.set("/a", b"", version="1")),  # type: ignore[arg-type]
        (BadArgumentsError, zk_client.set("/a", b"", version=-5)),
        (BadArgumentsError, zk_client.create("/c", container=True, ephemeral=True)),
        (BadArgumentsError, zk_client.create("/a", acl=[])),
        (InvalidTypeError, zk_client.create("/a", acl=["world:anyone"])),  # type: ignore[list-item]
        (BadArgumentsError, zk_client.delete("/")),
    ]
    for expected, coro in calls:
        with pytest.raises(expected):
            await coro
    assert sum(session_of(zk_client).sent.values()) == sent_before
    assert issubclass(InvalidPathError, aiocoord.CoordinationError)


async def test_largest_request_the_server_reads_is_accepted_and_one_more_refused(
    zk_client: Client,
) -> None:
    from aiocoord._session.connection import MAX_REQUEST

    await zk_client.create("/max")
    # setData carries xid, opcode, the path and data lengths and the version besides the data.
    room = MAX_REQUEST - (4 + 4 + 4 + len((zk_client.chroot + "/max").encode()) + 4 + 4)
    await zk_client.set("/max", b"m" * room)
    data, stat = await zk_client.get("/max")
    assert len(data) == stat.data_length == room
    sent = sum(session_of(zk_client).sent.values())
    with pytest.raises(DataTooLargeError):
        await zk_client.set("/max", b"m" * (room + 1))
    with pytest.raises(DataTooLargeError):
        await zk_client.create("/max2", b"m" * (1024 * 1024))
    assert sum(session_of(zk_client).sent.values()) == sent
    assert (await zk_client.get("/max"))[1].mzxid == stat.mzxid  # still connected, nothing lost


async def test_closed_client_refuses_calls(zk_connect) -> None:  # type: ignore[no-untyped-def]
    client = await zk_connect()
    await client.close()
    with pytest.raises(ClientClosedError):
        await client.get("/")
    assert client.state is aiocoord.State.CLOSED


async def test_ten_thousand_gets_from_a_thousand_tasks_are_pipelined(zk_client: Client) -> None:
    for i in range(10):
        await zk_client.create(f"/p{i}", str(i).encode())
    peak = 0

    async def worker(n: int) -> list[bytes]:
        nonlocal peak
        out = []
        for j in range(10):
            coro = zk_client.get(f"/p{(n + j) % 10}")
            task = asyncio.ensure_future(coro)
            await asyncio.sleep(0)
            peak = max(peak, session_of(zk_client).pending_count)
            out.append((await task)[0])
        return out

    gets_before = session_of(zk_client).sent[4]
    results = await asyncio.gather(*(worker(n) for n in range(1000)))
    assert session_of(zk_client).sent[4] - gets_before == 10_000
    for n, values in enumerate(results):
        assert values == [str((n + j) % 10).encode() for j in range(10)]
    # Many requests were on the wire at once: one connection, pipelined, not one at a time.
    assert peak >= 100, peak


async def test_cancelled_calls_leave_no_pending_entry(zk_client: Client) -> None:
    await zk_client.create("/c", b"x")
    tasks = [asyncio.ensure_future(zk_client.get("/c")) for _ in range(200)]
    await asyncio.sleep(0)  # let them write their requests
    assert session_of(zk_client).pending_count > 0
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert all(t.cancelled() for t in tasks)
    assert session_of(zk_client).pending_count == 0
    assert (await zk_client.get("/c"))[0] == b"x"
    # A cancelled watch read leaves no waiter behind either.
    task = asyncio.ensure_future(zk_client.get("/c", watch=True))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert session_of(zk_client).watches.counts()["waiters"] == 0
    assert OP_NAMES[4] == "get"


async def test_versioned_set_whose_reply_was_lost_is_not_reported_as_a_conflict(
    zk_connect,
    zk_fault_proxy,  # type: ignore[no-untyped-def]
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string)
    await client.create("/cas", b"0")
    dropped = zk_fault_proxy.drop_after_request()
    # The set is applied, its reply lost; the retry then meets version 1, not 0. That is our
    # own write, so the caller hears "may have been applied", not BadVersionError.
    with pytest.raises(aiocoord.ConnectionLossError, match="may have been applied"):
        await client.set("/cas", b"1", version=0)
    await dropped
    assert (await client.get("/cas"))[0] == b"1"
    with pytest.raises(BadVersionError):  # a real conflict is still a conflict
        await client.set("/cas", b"2", version=0)


async def test_connect_is_awaitable_and_an_async_context_manager(
    zookeeper: Any,
) -> None:
    hosts = zookeeper.connect_string
    client = await aiocoord.connect(hosts, session_timeout=10)
    try:
        assert client.connected
        assert await client.exists("/") is not None
    finally:
        await client.close()
    assert client.closed
    async with aiocoord.connect(hosts, session_timeout=10) as scoped:
        assert scoped.connected
    assert scoped.closed


async def test_a_chroot_that_does_not_exist_is_created_on_connect(
    zookeeper: Any, zk_client: Client, zk_namespace: str
) -> None:
    # zk_client is chrooted to the test's namespace; a client under a deeper, missing chroot
    # finds it made for it (as Curator's namespace is), and a second connect finds it there.
    for _ in range(2):
        async with aiocoord.connect(
            f"{zookeeper.connect_string}{zk_namespace}/new/app", session_timeout=10
        ) as client:
            await client.create("/config", b"v1")
            assert (await client.get("/config"))[0] == b"v1"
            await client.delete("/config")
    assert await zk_client.exists("/new/app") is not None


async def test_wait_background_returns_when_a_task_finished_in_this_turn(
    zk_client: Client,
) -> None:
    # A task of the client's that ends just before wait_background() is called is done, but
    # its done-callback (which drops it from the client's set) has not run yet. Python 3.12's
    # gather() completes at once on done tasks without yielding to the loop, so a loop of
    # gathers never let that callback run: wait_background spun forever (seen as a hang of
    # an election test on 3.12).
    client = zk_client

    async def quick() -> None:
        return None

    task = door.spawn(client, quick(), "quick")
    await asyncio.sleep(0)  # the task runs and ends in this turn; its callback comes next
    assert task.done()
    assert client.pending_deletes() == 0  # a finished task owes nothing, callback or not
    await asyncio.wait_for(client.wait_background(), 5)
    assert client.pending_deletes() == 0
