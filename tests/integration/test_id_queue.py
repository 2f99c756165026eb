"""IdQueue against a real server: Curator's DistributedIdQueue layout
(``queue-|<id>|<seq>`` in Queue's framing), arrival order whatever the ids, removal by id
exactly once against competing consumers, and bad ids refused before anything is sent."""

from __future__ import annotations

import asyncio
import re

import pytest
from support import Factory

from aiocoord import IdQueue
from aiocoord.errors import BadArgumentsError, InvalidPathError, InvalidTypeError
from aiocoord.recipes.queue import unframe


async def test_layout_is_curators_and_items_come_out_in_arrival_order(
    zk_connect: Factory,
) -> None:
    client = await zk_connect()
    async with IdQueue(client, "/ids") as queue:
        await queue.put(b"z-job", "zzz")
        await queue.put(b"a-job", "aaa")
        await queue.put_all([b"m1", b"m2"], "path/like|id")
        names = sorted(n for n in await client.children("/ids") if n.startswith("queue-"))
        assert all(re.fullmatch(r"queue-\|[^|/]+\|\d{10}", n) for n in names)
        assert any(n.startswith("queue-|path_like_id|") for n in names)
        zzz = next(n for n in names if n.startswith("queue-|zzz|"))
        assert unframe((await client.get("/ids/" + zzz))[0]) == [b"z-job"]
        assert await queue.ids() == ["zzz", "aaa", "path_like_id"]
        assert await queue.contains("path/like|id") and not await queue.contains("nope")
        got = [await queue.get(timeout=5) for _ in range(4)]
    assert got == [b"z-job", b"a-job", b"m1", b"m2"]
    assert await client.children("/ids") == []


async def test_remove_deletes_every_item_of_an_id_once(zk_connect: Factory) -> None:
    client = await zk_connect()
    async with IdQueue(client, "/rm") as queue:
        for i in range(3):
            await queue.put(b"cancel-me %d" % i, "order-1")
            await queue.put(b"keep %d" % i, "order-2")
        assert await queue.remove("order-1") == 3
        assert await queue.remove("order-1") == 0
        assert await queue.remove("never") == 0
        assert await queue.ids() == ["order-2"] * 3
        assert [await queue.get(timeout=5) for _ in range(3)] == [b"keep 0", b"keep 1", b"keep 2"]


async def test_remove_and_consumers_racing_hand_out_each_item_once(zk_connect: Factory) -> None:
    producer = IdQueue(await zk_connect(), "/race")
    remover = IdQueue(await zk_connect(), "/race")
    consumers = [IdQueue(await zk_connect(), "/race") for _ in range(2)]
    for i in range(40):
        await producer.put(b"%d" % i, "x")

    async def drain(q: IdQueue) -> list[bytes]:
        got = []
        while True:
            try:
                got.append(await q.get(timeout=0.3))
            except TimeoutError:
                return got

    removing = asyncio.ensure_future(remover.remove("x"))
    taken = await asyncio.gather(*(drain(q) for q in consumers))
    removed = await removing
    handed_out = [x for t in taken for x in t]
    assert len(set(handed_out)) == len(handed_out)
    assert removed + len(handed_out) == 40
    assert await producer.size() == 0
    for q in (producer, remover, *consumers):
        await q.close()


async def test_bad_ids_are_refused_before_anything_is_sent(zk_connect: Factory) -> None:
    client = await zk_connect()
    queue = IdQueue(client, "/bad")
    with pytest.raises(BadArgumentsError):
        await queue.put(b"x", "")
    with pytest.raises(InvalidTypeError):
        await queue.put(b"x", 17)  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(InvalidPathError):
        await queue.put(b"x", "nul\x00")
    with pytest.raises(InvalidTypeError):
        await queue.remove(None)  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(InvalidTypeError):
        await queue.put_all(b"x", "id")  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(BadArgumentsError):
        IdQueue(client, "/")
    assert await client.exists("/bad") is None
