"""Layouts chosen by ``layout=``: the argument's checks, our node names in each layout, how
parents are made in each, and which contenders of another layout a queue reports (no
server)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import aiocoord
from aiocoord import BadArgumentsError, Layout
from aiocoord.errors import InvalidTypeError
from aiocoord.recipes._contention.naming import foreign_contender, fresh_prefix
from aiocoord.recipes.layout import check_layout, contender_layout


def test_a_layout_is_named_by_its_enum_or_its_name() -> None:
    assert check_layout("kazoo", "Lock") is Layout.KAZOO
    assert check_layout("Curator", "Lock") is Layout.CURATOR
    assert check_layout(Layout.KAZOO, "Lock") is Layout.KAZOO
    assert Layout.KAZOO == "kazoo" and str(Layout.CURATOR) == "curator"


def test_a_bad_layout_is_refused_with_a_typed_error_naming_what_the_recipe_speaks() -> None:
    with pytest.raises(InvalidTypeError):
        check_layout(1, "Lock")
    with pytest.raises(BadArgumentsError, match="'curator'") as raised:
        check_layout("zookeeper", "Lock")
    assert "Lock" in str(raised.value)
    with pytest.raises(BadArgumentsError, match="speaks the layouts 'curator', not"):
        check_layout("kazoo", "Queue", (Layout.CURATOR,))


RECIPES = Path(aiocoord.__file__).resolve().parent / "recipes"


def test_parents_are_containers_in_curators_layout_and_persistent_in_kazoos() -> None:
    assert Layout.CURATOR.parents_as_containers is True
    assert Layout.KAZOO.parents_as_containers is False


def test_a_recipe_that_speaks_a_layout_takes_its_parent_mode_from_it() -> None:
    # A kazoo object checks its path once for its life: a parent made as a container under
    # it, which the server removes once empty, breaks it. So no module of a recipe with a
    # ``layout=`` (nor the contention queue, nor the atomic value an AtomicCounter writes
    # through) may say ``container=True`` or ``parents_as_containers=True`` itself.
    found: list[str] = []
    for path in sorted(RECIPES.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        speaks = "aiocoord.recipes.layout import" in source
        if not (speaks or "_contention" in path.parts or path.name == "atomic_value.py"):
            continue
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.keyword)
                and node.arg in ("container", "parents_as_containers")
                and isinstance(node.value, ast.Constant)
                and node.value.value is True
            ):
                found.append(f"{path.relative_to(RECIPES)}:{node.value.lineno}")
    assert not found, f"parents made as containers whatever the layout: {found}"


def test_our_prefix_is_curators_protected_one_or_kazoos_uuid_hex() -> None:
    assert re.fullmatch(
        r"_c_[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}-", fresh_prefix(Layout.CURATOR)
    )
    kazoo = fresh_prefix(Layout.KAZOO)
    assert re.fullmatch(r"[0-9a-f]{32}", kazoo)
    assert kazoo != fresh_prefix(Layout.KAZOO)


@pytest.mark.parametrize(
    ("layout", "names", "foreign"),
    [
        (Layout.CURATOR, ["_c_x-lock-0000000001"], None),
        (Layout.CURATOR, ["_c_x-lock-0000000001", "ab__lock__0000000002"], "ab__lock__0000000002"),
        (Layout.CURATOR, ["ab__rlock__0000000002"], "ab__rlock__0000000002"),
        (Layout.CURATOR, ["_c_x-__WRIT__0000000001", "_c_y-__READ__0000000002"], None),
        (Layout.KAZOO, ["ab__lock__0000000001", "cd__rlock__0000000002"], None),
        (Layout.KAZOO, ["ab__lock__0000000001", "_c_x-lock-0000000002"], "_c_x-lock-0000000002"),
        # Names with no sequence number are no contenders (a lease's holder node, say).
        (Layout.KAZOO, ["lease_holder", "ab__lock__0000000001"], None),
    ],
)
def test_a_queue_reports_contenders_of_the_other_layout(
    layout: Layout, names: list[str], foreign: str | None
) -> None:
    assert foreign_contender(layout, names) == foreign


@pytest.mark.parametrize(
    ("name", "layout"),
    [
        ("_c_0b1d-lock-0000000001", Layout.CURATOR),
        ("_c_0b1d-__WRIT__0000000001", Layout.CURATOR),
        ("latch-0000000003", Layout.CURATOR),
        ("0b1d__lock__0000000002", Layout.KAZOO),
        ("0b1d__rlock__0000000002", Layout.KAZOO),
        ("leases", None),
        ("lease_holder", None),
    ],
)
def test_a_contenders_layout_is_told_by_its_name(name: str, layout: Layout | None) -> None:
    assert contender_layout(name) is layout
