"""Every import path the docs and the README show still resolves: the API reference's
``::: aiocoord.X`` entries and every ``from aiocoord... import ...`` line of README.md and the
docs pages (a layout move must never break a user's import)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _entries() -> list[str]:
    found: set[str] = set()
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        found.update(re.findall(r"^::: (aiocoord[\w.]*)", page.read_text(), re.M))
    return sorted(found)


def _imports() -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for page in PAGES:
        text = page.read_text()
        for module, grouped, names in re.findall(
            r"^\s*from (aiocoord[\w.]*) import (?:\(([^)]*)\)|([\w, ]+)$)", text, re.M
        ):
            listed = (grouped or names).replace("\n", ",").split(",")
            found.update((module, n.split(" as ")[0].strip()) for n in listed if n.strip())
        # Attributes used through the package (``aiocoord.Lock(...)``) in the pages' code.
        found.update(("aiocoord", n) for n in re.findall(r"\baiocoord\.([A-Za-z]\w*)\(", text))
    return sorted(found)


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_the_pages_show_imports_and_entries() -> None:
    assert len(_entries()) > 100
    assert len(_imports()) > 10


@pytest.mark.parametrize("dotted", _entries())
def test_api_reference_entry_resolves(dotted: str) -> None:
    _resolve(dotted)


@pytest.mark.parametrize(("module", "name"), _imports())
def test_documented_import_works(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"from {module} import {name}"
