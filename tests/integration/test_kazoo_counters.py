"""kazoo's ``Counter`` (2.x, in threads) and aiocoord's counters count on one node: kazoo's
text form with ``AtomicCounter(layout="kazoo")``, and kazoo's ``support_curator=True`` form
(Curator's 4-byte ``SharedCount``) with :class:`SharedCount`. Both sides add concurrently and
the total must come out exact; an expiry of the aiocoord side mid-count loses nothing.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from support import Factory

from aiocoord import AtomicCounter, BadArgumentsError, CorruptedValueError, SharedCount
from aiocoord.testing import expire_client

pytest.importorskip("kazoo.client", reason="kazoo is not installed")

SEMANTICS = {
    "recipes/counters.md | Failure semantics | kazoo and aiocoord add on one node, and our "
    "session expires mid-count": [
        "test_kazoos_curator_counter_and_our_shared_count_count_exactly_together",
        "test_kazoos_text_counter_and_ours_count_exactly_together",
        "test_an_expiry_of_our_side_mid_count_loses_and_doubles_nothing",
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
