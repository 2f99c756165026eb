"""Every row of every failure-semantics table in the docs names the tests that hold it.

A row is a promise: what a recipe does when the connection is lost, the session expires, a
call is cancelled or times out, input is bad or a node holds hostile data. Each recipe's
fault test module (``tests/integration/test_<recipe>_faults.py``, or ``test_<recipe>.py``
while it has none) declares, at its top,

    SEMANTICS = {"recipes/locks.md | Failure semantics | Timeout": ["test_...", ...]}

a key per row (the page under ``docs/``, the heading, the row's first cell without its
``**``: the failure message of a row without a test prints the key to copy)
and the tests that run the promise under the fault the row names: a test function of the
same module, or ``test_other.py::test_name`` (same directory), or
``integration/test_other.py::test_name`` (from ``tests/``). This module, with no server,
fails for a row nobody maps, for a key that is no row (a renamed or deleted row), for a
named test that does not exist, and for a row mapped in two places.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TESTS = ROOT / "tests"
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_SEPARATOR = re.compile(r"^\|\s*:?-+")


def table_rows(page: str, text: str) -> list[str]:
    """The keys (``page | heading | first cell``) of the rows of the tables under a heading
    containing "Failure semantics"; the section ends at the next heading of any level."""
    keys: list[str] = []
    section = ""
    in_section = False
    in_table = False
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        heading = _HEADING.match(line)
        if heading:
            section = heading.group(2).strip()
            in_section = "failure semantics" in section.lower()
            in_table = False
            continue
        if not in_section or not line.startswith("|"):
            in_table = False
            continue
        if not in_table:
            in_table = True  # the header row names the columns, it is no promise
            continue
        if _SEPARATOR.match(line):
            continue
        first = line.strip().strip("|").split("|")[0].strip()
        keys.append(f"{page} | {section} | {first.replace('**', '').strip()}")
    return keys


def documented_rows() -> list[str]:
    """Every failure-semantics row of docs/recipes.md, docs/recipes/*.md and
    docs/typed-state.md."""
    pages = [DOCS / "recipes.md", *sorted((DOCS / "recipes").glob("*.md")), DOCS / "typed-state.md"]
    rows: list[str] = []
    for path in pages:
        rows += table_rows(path.relative_to(DOCS).as_posix(), path.read_text(encoding="utf-8"))
    return rows


@dataclass(frozen=True)
class Mapping:
    """One key of one module's ``SEMANTICS`` and the tests it names."""

    module: Path
    key: str
    tests: tuple[str, ...]


def _semantics_of(path: Path) -> dict[str, list[str]] | None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        if isinstance(target, ast.Name) and target.id == "SEMANTICS":
            assert node.value is not None  # type: ignore[union-attr]
            value = ast.literal_eval(node.value)  # type: ignore[union-attr]
            assert isinstance(value, dict), f"{path}: SEMANTICS must be a dict literal"
            return value
    return None


def mappings() -> list[Mapping]:
    """Every ``SEMANTICS`` entry of every test module under tests/."""
    found: list[Mapping] = []
    for path in sorted(TESTS.rglob("test_*.py")):
        semantics = _semantics_of(path)
        for key, tests in (semantics or {}).items():
            assert isinstance(tests, list), f"{path}: {key!r} must map to a list of tests"
            found.append(Mapping(path, key, tuple(tests)))
    return found


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(f"{node.name}::{item.name}")
    return {n for n in names if n.rsplit("::", 1)[-1].startswith("test_")}


def resolve(module: Path, reference: str) -> tuple[Path, str]:
    """The file and the test name a reference in ``module``'s ``SEMANTICS`` stands for."""
    if ".py::" not in reference:
        return module, reference
    file, name = reference.split(".py::", 1)
    base = TESTS if "/" in file else module.parent
    return base / f"{file}.py", name


def test_the_parser_reads_rows_not_headers_separators_or_other_sections() -> None:
    page = (
        "## Options\n| what | x |\n|---|---|\n| **not a promise** | y |\n"
        "## Failure semantics\n\n| what happens | `A` |\n|---|---|\n"
        "| **Connection lost (SUSPENDED)** | kept |\n| **Timeout** | raises |\n\n"
        "```text\n| **in a fence** | no |\n```\n"
        "### Failure semantics of B\n| what happens | `B` |\n|---|---|\n| `B`, `C` | z |\n"
        "## Next\n| what | x |\n|---|---|\n| **after** | y |\n"
    )
    assert table_rows("p.md", page) == [
        "p.md | Failure semantics | Connection lost (SUSPENDED)",
        "p.md | Failure semantics | Timeout",
        "p.md | Failure semantics of B | `B`, `C`",
    ]


def test_the_docs_have_the_tables_this_check_expects() -> None:
    rows = documented_rows()
    # A parser that silently found nothing would make every other check pass.
    assert "recipes/locks.md | Failure semantics | Loss: session expired (LOST)" in rows
    assert "recipes/nodes.md | Failure semantics of PersistentTtlNode | Timeout" in rows
    assert (
        "recipes/partitioning.md | Failure semantics of leases | A holder node in another format"
        in rows
    )
    assert len(rows) == len(set(rows)), "two rows of one section have the same first cell"
    assert len(rows) > 60


def test_every_failure_semantics_row_names_a_test() -> None:
    mapped = {m.key for m in mappings() if m.tests}
    missing = [row for row in documented_rows() if row not in mapped]
    assert not missing, (
        "rows without a test: add each to SEMANTICS in the recipe's "
        "tests/integration/test_<recipe>_faults.py (test_<recipe>.py while it has none), with "
        "the test that holds it under the "
        "fault the row names:\n" + "\n".join(missing)
    )


def test_every_mapping_is_a_documented_row() -> None:
    rows = set(documented_rows())
    stale = [f"{m.module.relative_to(ROOT)}: {m.key}" for m in mappings() if m.key not in rows]
    assert not stale, "SEMANTICS keys that are no row of the docs (renamed?):\n" + "\n".join(stale)


def test_each_row_is_mapped_in_one_place() -> None:
    where: dict[str, list[str]] = {}
    for m in mappings():
        where.setdefault(m.key, []).append(str(m.module.relative_to(ROOT)))
    twice = {key: modules for key, modules in where.items() if len(modules) > 1}
    assert not twice, f"rows mapped in more than one module: {twice}"


def test_every_named_test_exists() -> None:
    absent: list[str] = []
    cache: dict[Path, set[str]] = {}
    for m in mappings():
        for reference in m.tests:
            path, name = resolve(m.module, reference)
            if path not in cache:
                cache[path] = _test_names(path) if path.exists() else set()
            if name not in cache[path]:
                absent.append(f"{m.module.relative_to(ROOT)}: {m.key!r} -> {reference}")
    assert not absent, "named tests that do not exist:\n" + "\n".join(absent)
