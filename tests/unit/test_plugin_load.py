"""What loading the pytest plugin costs: pytest imports it in every run of every project where
aiocoord is installed, so it may import no more of aiocoord than its fixture definitions (on
9186a5f it imported 97 modules, +0.37 s a run). The run-time overhead in a scratch project is
measured by ``make plugin-check`` (scripts/check-plugin-isolation), not by a timed test here.

The package roots re-export their names lazily (PEP 562); the tables they do it with are held
to the imports a type checker sees."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import aiocoord

#: The checkout whose aiocoord this run imports (the subprocesses import the same).
ROOT = Path(aiocoord.__file__).resolve().parents[1]

#: Every aiocoord module that loading the plugin may import: the two package roots, the plugin
#: and the module with its client fixtures, each light.
PLUGIN_BUDGET = {
    "aiocoord",
    "aiocoord.testing",
    "aiocoord.testing._client_fixtures",
    "aiocoord.testing.pytest_plugin",
}


def _aiocoord_modules_after(statement: str) -> set[str]:
    """The aiocoord modules in ``sys.modules`` after ``statement``, in a fresh interpreter."""
    code = (
        f"{statement}\nimport sys\n"
        "print('\\n'.join(m for m in sys.modules if m.split('.')[0] == 'aiocoord'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def test_loading_the_plugin_imports_only_the_fixture_definitions() -> None:
    loaded = _aiocoord_modules_after("import aiocoord.testing.pytest_plugin")
    assert loaded <= PLUGIN_BUDGET, sorted(loaded - PLUGIN_BUDGET)


def test_importing_one_module_does_not_import_the_client() -> None:
    loaded = _aiocoord_modules_after("import aiocoord.errors")
    assert loaded == {"aiocoord", "aiocoord.errors"}


def test_the_first_public_name_used_brings_the_whole_surface() -> None:
    loaded = _aiocoord_modules_after("import aiocoord\naiocoord.Lock")
    assert {"aiocoord._public", "aiocoord.client", "aiocoord.recipes.lock"} <= loaded


@pytest.mark.parametrize("package", ["aiocoord", "aiocoord.testing"])
def test_every_exported_name_resolves_and_star_import_gives_them_all(package: str) -> None:
    code = (
        f"import {package} as p\n"
        "missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
        "assert not missing, missing\n"
        f"ns = {{}}\nexec('from {package} import *', ns)\n"
        "assert set(p.__all__) <= set(ns), set(p.__all__) - set(ns)\n"
        "print(len(p.__all__))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 10


def _type_checking_imports(path: Path) -> dict[str, str]:
    """``name -> module`` of the imports under ``if TYPE_CHECKING:`` at the top of ``path``."""
    out: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                out.update((a.asname or a.name, imp.module) for a in imp.names)
    return out


def test_the_testing_packages_table_is_what_a_type_checker_sees() -> None:
    import aiocoord.testing as testing

    seen = _type_checking_imports(ROOT / "aiocoord" / "testing" / "__init__.py")
    table: dict[str, str] = testing._WHERE  # type: ignore[attr-defined]
    assert table == seen
    assert sorted(testing.__all__) == sorted(seen)
