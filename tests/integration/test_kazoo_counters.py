"""kazoo's ``Counter`` (2.x, in threads) and aiocoord's counters count on one node: kazoo's
text form with ``AtomicCounter(layout="kazoo")``, and kazoo's ``support_curator=True`` form
with :class:`SharedCount`: kazoo packs that one as ``">i"``, Curator's 4-byte ``SharedCount``,
not the 8-byte ``DistributedAtomicLong`` that ``AtomicCounter`` speaks in Curator's layout (a
test holds the bytes). Both sides add concurrently and the total must come out exact; an
expiry of the aiocoord side with an add in flight counts that add once or reports it as
unknowable, never twice.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from typing import Any

import pytest
from support import Factory

from aiocoord import AtomicCounter, BadArgumentsError, ConnectionLossError, SharedCount, State
from aiocoord._wire.opcodes import Op
from aiocoord.errors import CorruptedValueError
from aiocoord.testing import FaultProxy, expire_client, expire_session, session_of

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/counters.md | Failure semantics | kazoo and aiocoord add on one node, and our "
    "session expires mid-count": [
        "test_kazoos_curator_counter_and_our_shared_count_count_exactly_together",
        "test_kazoos_text_counter_and_ours_count_exactly_together",
        "test_an_expiry_of_our_side_mid_count_loses_and_doubles_nothing",
        "test_an_add_waiting_offline_when_our_session_expires_is_counted_once",
        "test_an_add_whose_reply_is_lost_before_our_session_expires_is_never_repeated",
    ],
}

ROUNDS = 25


def _kazoo_adds(kazoo: Any, path: str, n: int, step: Any = 1, **options: Any) -> None:
    counter = kazoo.Counter(path, **options)
    for _ in range(n):
        counter += step


async def _our_adds(counter: AtomicCounter, n: int) -> None:
    for _ in range(n):
        assert (await counter.increment()).succeeded


async def test_kazoos_text_counter_and_ours_count_exactly_together(
    zk_connect: Factory, kazoo: Any
) -> None:
    a, b = await zk_connect(), await zk_connect()
    ours = [AtomicCounter(c, "/count", layout="kazoo") for c in (a, b)]
    await asyncio.gather(
        *(_our_adds(c, ROUNDS) for c in ours),
        asyncio.to_thread(_kazoo_adds, kazoo, "/count", ROUNDS),
        asyncio.to_thread(_kazoo_adds, kazoo, "/count", ROUNDS),
    )
    assert await ours[0].get() == 4 * ROUNDS
    data, _ = await a.get("/count")
    assert data == str(4 * ROUNDS).encode()  # kazoo's form: the digits
    assert await asyncio.to_thread(lambda: kazoo.Counter("/count").value) == 4 * ROUNDS
    for counter in ours:
        await counter.close()


async def test_an_empty_kazoo_counter_reads_as_its_default_and_big_values_do_not_wrap(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    await asyncio.to_thread(kazoo.ensure_path, "/count")  # what kazoo's Counter makes first
    counter = AtomicCounter(client, "/count", layout="kazoo", default=10)
    assert await counter.get() == 10
    assert (await counter.add(2**62)).post_value == 10 + 2**62
    assert (await counter.add(2**62)).post_value == 10 + 2**63  # a Python int, as kazoo's
    assert await asyncio.to_thread(lambda: kazoo.Counter("/count").value) == 10 + 2**63
    await counter.close()


async def test_a_kazoo_float_counter_is_refused_not_misread(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    await asyncio.to_thread(_kazoo_adds, kazoo, "/float", 1, 1.0, default=0.5)
    counter = AtomicCounter(client, "/float", layout="kazoo")
    with pytest.raises(CorruptedValueError, match="kazoo's text form"):
        await counter.get()
    with pytest.raises(CorruptedValueError):
        await counter.increment()
    data, _ = await client.get("/float")
    assert data == b"1.5"  # nothing written


async def test_default_is_kazoos_option(zk_connect: Factory) -> None:
    client = await zk_connect()
    with pytest.raises(BadArgumentsError):
        AtomicCounter(client, "/count", default=5)  # Curator's layout reads empty data as 0
    with pytest.raises(BadArgumentsError, match="speaks the layouts"):
        AtomicCounter(client, "/count", layout="zookeeper")


async def test_kazoos_curator_counter_and_our_shared_count_count_exactly_together(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    async with SharedCount(client, "/shared", 0) as count:

        async def ours(n: int) -> None:
            for _ in range(n):
                while True:  # read, add, write on the version read: kazoo's way too
                    data, stat = await client.get("/shared")
                    if await count.try_set(struct.unpack(">i", data)[0] + 1, stat.version):
                        break

        await asyncio.gather(
            ours(ROUNDS),
            asyncio.to_thread(_kazoo_adds, kazoo, "/shared", ROUNDS, support_curator=True),
        )
        await count.wait_for(lambda n: n == 2 * ROUNDS, timeout=10)
    value = await asyncio.to_thread(lambda: kazoo.Counter("/shared", support_curator=True).value)
    assert value == 2 * ROUNDS


async def test_an_empty_node_of_kazoos_curator_counter_is_refused_naming_kazoo(
    zk_connect: Factory, kazoo: Any
) -> None:
    """kazoo's ``Counter(support_curator=True)`` makes its node empty and reads that as its
    default; Curator's ``SharedCount`` cannot read it (``ByteBuffer.getInt`` on no bytes), nor
    can ours: refused, typed, with a message that says where the empty node comes from and
    what to do; nothing is written."""
    client = await zk_connect()
    assert await asyncio.to_thread(lambda: kazoo.Counter("/fresh", support_curator=True).value) == 0
    async with SharedCount(client, "/fresh", 5) as count:
        with pytest.raises(CorruptedValueError, match=r"support_curator=True.*set\(\)") as empty:
            count.value  # noqa: B018 - the read is the test
        assert empty.value.data == b""
        assert (await client.get("/fresh"))[0] == b""  # the seed does not overwrite it
        await count.set(0)  # what the message says: a value written once, and both sides read
        assert (await count.wait_for(lambda n: n == 0, timeout=10)).value == 0
    value = await asyncio.to_thread(lambda: kazoo.Counter("/fresh", support_curator=True).value)
    assert value == 0


async def test_an_expiry_of_our_side_mid_count_loses_and_doubles_nothing(
    zookeeper: Any, zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect(session_timeout=6)
    counter = AtomicCounter(client, "/count", layout="kazoo")
    kazoo_side = asyncio.ensure_future(asyncio.to_thread(_kazoo_adds, kazoo, "/count", ROUNDS))
    await _our_adds(counter, ROUNDS // 2)
    await expire_client(client, zookeeper.connect_string)
    await _our_adds(counter, ROUNDS - ROUNDS // 2)
    await kazoo_side
    assert await counter.get() == 2 * ROUNDS
    await counter.close()


async def test_kazoos_curator_form_is_shared_counts_four_bytes_not_atomic_counters_eight(
    zk_connect: Factory, kazoo: Any
) -> None:
    client = await zk_connect()
    await asyncio.to_thread(_kazoo_adds, kazoo, "/theirs", 1, 5, support_curator=True)
    theirs, _ = await client.get("/theirs")
    async with SharedCount(client, "/shared", 5) as count:
        shared, _ = await client.get("/shared")
        assert theirs == shared == b"\x00\x00\x00\x05"  # the same bytes: struct ">i"
        await count.set(-7)
    value = await asyncio.to_thread(lambda: kazoo.Counter("/shared", support_curator=True).value)
    assert value == -7
    async with SharedCount(client, "/theirs", 0) as count:
        assert count.value == 5
    atomic = AtomicCounter(client, "/atomic")
    await atomic.force_set(5)
    eight, _ = await client.get("/atomic")
    assert eight == b"\x00" * 7 + b"\x05" != theirs  # DistributedAtomicLong: 8 bytes
    with pytest.raises(CorruptedValueError, match="8-byte"):
        await AtomicCounter(client, "/theirs").get()  # refused, never read as another value
    with pytest.raises(struct.error):  # and kazoo cannot read Curator's 8-byte long
        await asyncio.to_thread(lambda: kazoo.Counter("/atomic", support_curator=True).value)


async def test_an_add_waiting_offline_when_our_session_expires_is_counted_once(
    zookeeper: Any, zk_connect: Factory, zk_fault_proxy: FaultProxy, kazoo: Any
) -> None:
    """Our session expires while an add's read waits offline: the add goes on in the new
    session, with kazoo adding all along, and the total is exact."""
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=4)
    counter = AtomicCounter(client, "/count", layout="kazoo")
    kazoo_side = asyncio.ensure_future(asyncio.to_thread(_kazoo_adds, kazoo, "/count", ROUNDS))
    await _our_adds(counter, 5)
    session, password = client.session_id, session_of(client).password
    zk_fault_proxy.blackhole()
    zk_fault_proxy.drop()
    await client.wait_for(State.SUSPENDED, timeout=5)
    await expire_session(session, password, zookeeper.connect_string)
    changing = asyncio.ensure_future(counter.increment())  # held: nothing gets through
    zk_fault_proxy.heal()
    result = await asyncio.wait_for(changing, 20)
    assert result.succeeded and client.session_id != session
    await _our_adds(counter, ROUNDS - 6)
    await kazoo_side
    assert await counter.get() == 2 * ROUNDS
    await counter.close()


async def test_an_add_whose_reply_is_lost_before_our_session_expires_is_never_repeated(
    zookeeper: Any, zk_connect: Factory, zk_fault_proxy: FaultProxy, kazoo: Any
) -> None:
    """The worst case: our add reached the server, its reply was lost, and the session
    expired before the add's marker could be asked about. It may or may not have been
    applied, and says so (ConnectionLossError); it is not sent again. kazoo adds before and
    after (paused while the add is lost, so that the test knows it was applied)."""
    client = await zk_connect(zk_fault_proxy.connect_string, session_timeout=2)
    counter = AtomicCounter(client, "/count", layout="kazoo")
    halfway, resume = threading.Event(), threading.Event()

    def kazoo_adds() -> None:
        _kazoo_adds(kazoo, "/count", ROUNDS)
        halfway.set()
        resume.wait(30)
        _kazoo_adds(kazoo, "/count", ROUNDS)

    kazoo_side = asyncio.ensure_future(asyncio.to_thread(kazoo_adds))
    await _our_adds(counter, ROUNDS)
    assert await asyncio.to_thread(halfway.wait, 30)
    session, password = client.session_id, session_of(client).password
    zk_fault_proxy.hold_new_connections()
    lost = zk_fault_proxy.drop_after_request(lambda xid, op: op == Op.MULTI)
    changing = asyncio.ensure_future(counter.increment())
    await lost  # the add reached the server; its reply did not come back
    await expire_session(session, password, zookeeper.connect_string)
    zk_fault_proxy.hold_new_connections(False)
    with pytest.raises(ConnectionLossError, match="may or may not"):
        await asyncio.wait_for(changing, 20)
    resume.set()
    await _our_adds(counter, ROUNDS)
    await kazoo_side
    assert await counter.get() == 4 * ROUNDS + 1  # the lost add applied once, not twice
    await counter.close()
