"""aiocoord.zkpaths (issue 28): Curator's ZKPaths in public. The pure functions' edge cases,
and the one property that needs a server: protected sequential nodes, whose random prefixes
sort in any order, come back in the order the server numbered them."""

from __future__ import annotations

import pytest

from aiocoord import Client, zkpaths
from aiocoord.errors import InvalidPathError, InvalidTypeError


def test_make_path_joins_parts_with_one_slash() -> None:
    assert zkpaths.make_path("/a/", "b/c", "/d") == "/a/b/c/d"
    assert zkpaths.make_path("a") == "/a"
    assert zkpaths.make_path("/", "", "x") == "/x"
    assert zkpaths.make_path("") == "/"
    with pytest.raises(InvalidPathError):
        zkpaths.make_path("/a", "b//c")
    with pytest.raises(InvalidPathError):
        zkpaths.make_path("/a", "..")
    with pytest.raises(InvalidTypeError):
        zkpaths.make_path("/a", 3)  # type: ignore[arg-type]


def test_join_split_components() -> None:
    assert zkpaths.join("/", "a") == "/a"
    assert zkpaths.join("/a", "b") == "/a/b"
    assert zkpaths.split("/a/b") == ("/a", "b")
    assert zkpaths.split("/a") == ("/", "a")
    assert zkpaths.split("/") == ("/", "")
    assert zkpaths.components("/a/b/c") == ["a", "b", "c"]
    assert zkpaths.components("/") == []
    for bad_name in ("b/c", "", ".."):
        with pytest.raises(InvalidPathError):
            zkpaths.join("/a", bad_name)
    for bad_path in ("a", "/a/", "//a", ""):
        with pytest.raises(InvalidPathError):
            zkpaths.split(bad_path)
        with pytest.raises(InvalidPathError):
            zkpaths.components(bad_path)
    with pytest.raises(InvalidTypeError):
        zkpaths.join(b"/a", "b")  # type: ignore[arg-type]


def test_sequence_helpers_refuse_what_is_not_a_name() -> None:
    assert zkpaths.sequence_of("lock-0000000042") == 42
    assert zkpaths.sequence_of("/q/item-0000000007") == 7
    assert zkpaths.sequence_of("lock-42") is None
    with pytest.raises(InvalidTypeError):
        zkpaths.sequence_of(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        zkpaths.sort_by_sequence("lock-0000000001")
    with pytest.raises(InvalidTypeError):
        zkpaths.sort_by_sequence(["lock-0000000001", None])  # type: ignore[list-item]
    assert zkpaths.protected_id("plain") is None


async def test_protected_nodes_sort_in_the_servers_order(zk_client: Client) -> None:
    created = [
        await zk_client.create("/locks/lock-", sequential=True, protected=True, make_parents=True)
        for _ in range(12)
    ]
    names = await zk_client.children("/locks")
    ordered = zkpaths.sort_by_sequence([*names, "not-sequential"])
    assert [zkpaths.join("/locks", n) for n in ordered] == created
    # Whole-name sorting would follow the random UUIDs instead: the reason for the helper.
    assert [zkpaths.sequence_of(n) for n in ordered] == sorted(
        zkpaths.sequence_of(n) for n in names
    )
    assert all(zkpaths.protected_id(n) is not None for n in names)
