"""TreeCache(selector=...) (issue 28): Curator's TreeCacheSelector. A node whose children are
not traversed is cached without them, a refused child is cached neither with its subtree,
and both hold for the initial load and for what is created later, in both watch modes."""

from __future__ import annotations

import pytest

from aiocoord import Client, TreeCache
from aiocoord.errors import InvalidTypeError
from aiocoord.recipes.cache import TreeCacheSelector

MODES = ["auto", "one-shot"]


class SkipColdAndTemporary(TreeCacheSelector):
    def __init__(self) -> None:
        self.asked: set[str] = set()

    def traverse_children(self, path: str) -> bool:
        self.asked.add(path)
        return not path.endswith("/archive")

    def accept_child(self, path: str) -> bool:
        self.asked.add(path)
        return not path.rpartition("/")[2].startswith("tmp-")


@pytest.mark.parametrize("mode", MODES)
async def test_selector_narrows_the_tree(zk_client: Client, mode: str) -> None:
    for path in ("/t/a/x", "/t/archive/old", "/t/tmp-1/y"):
        await zk_client.create(path, b"d", make_parents=True)
    selector = SkipColdAndTemporary()
    async with TreeCache(zk_client, "/t", selector=selector, watch_mode=mode) as cache:
        assert set(cache.nodes) == {"/t", "/t/a", "/t/a/x", "/t/archive"}
        # Created before /t/b: had any been followed, it would be there by the time /t/b is.
        await zk_client.create("/t/archive/new")
        await zk_client.create("/t/tmp-2")
        await zk_client.create("/t/a/tmp-3")
        await zk_client.create("/t/b")
        await cache.wait_for(lambda nodes: "/t/b" in nodes, timeout=10)
        await zk_client.create("/t/a/z")
        nodes = await cache.wait_for(lambda nodes: "/t/a/z" in nodes, timeout=10)
        assert set(nodes) == {"/t", "/t/a", "/t/a/x", "/t/a/z", "/t/archive", "/t/b"}
        assert cache.children("/t/archive") == {}
    assert "/t/tmp-1/y" not in selector.asked  # a refused node is not followed further


async def test_max_depth_and_selector_together(zk_client: Client) -> None:
    await zk_client.create("/t/a/b/c", make_parents=True)
    await zk_client.create("/t/tmp-1", make_parents=True)
    async with TreeCache(zk_client, "/t", max_depth=2, selector=SkipColdAndTemporary()) as cache:
        assert set(cache.nodes) == {"/t", "/t/a", "/t/a/b"}


async def test_a_selector_of_another_type_is_refused(zk_client: Client) -> None:
    with pytest.raises(InvalidTypeError):
        TreeCache(zk_client, "/t", selector=lambda path: True)  # type: ignore[arg-type]
