"""The package's shape, as the style guide asks: no import cycle, and no private name reached
across packages (a package may use its own private modules and its parents', never a
sibling's or a child's)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "aiocoord"


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _package_of(module: str) -> str:
    path = MODULES[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str) -> list[tuple[str, list[str]]]:
    """``(imported module, names)`` of every ``aiocoord`` import of ``module``, type-checking
    imports included."""
    tree = ast.parse(MODULES[module].read_text())
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "aiocoord":
                out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names if a.name.startswith("aiocoord"))
    return out


def _private_step(importer_pkg: str, target: str) -> str | None:
    """The first private component of ``target`` that lies outside ``importer_pkg`` and its
    parents, or None."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if not part.startswith("_"):
            continue
        owner = ".".join(parts[:i])  # the package that keeps `part` private
        if importer_pkg == owner or importer_pkg.startswith(owner + "."):
            continue  # its own private module, or a parent's
        return part
    return None


def test_no_private_name_is_reached_across_packages() -> None:
    found: list[str] = []
    for module in MODULES:
        pkg = _package_of(module)
        for target, names in _imports(module):
            step = _private_step(pkg, target)
            if step is not None:
                found.append(f"{module} imports {target} (private {step})")
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and (target not in MODULES or _package_of(target) != pkg):
                found.append(f"{module} imports the private {private} from {target}")
    assert not found, "\n".join(found)


def test_no_import_cycle_at_import_time() -> None:
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        tree = ast.parse(MODULES[module].read_text())
        deps: set[str] = set()
        for node in tree.body:  # module level only: imports inside functions are deferred
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    deps.add(full if full in MODULES else node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[module] = {d for d in deps if d in MODULES and d != module}
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def _cycles(graph: dict[str, set[str]], roots: frozenset[str] = frozenset()) -> list[list[str]]:
    """The import cycles of ``graph`` (module -> the modules it imports). A package's
    ``__init__`` importing its own modules is how re-exports work, and ``roots`` (modules that
    import everything and that nothing imports) are not followed: neither makes a cycle."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if m == _package_of(d) and MODULES[m].name == "__init__.py":
                continue
            if m in roots:
                continue
            if state.get(d) == 1:
                cycles.append([*stack[stack.index(d) :], d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


#: A module past this many lines is reported for review: a size limit is a smell detector,
#: not a design rule (split a module when it has two concerns, never to get under a number).
SOFT_LIMIT = 600
#: Modules reviewed past the soft limit, each with the reason it stays whole.
REVIEWED: dict[str, str] = {
    "aiocoord.errors": "one concern, the one exception hierarchy: every error aiocoord raises, "
    "each class a few lines (users find every error in one module, docs/api-stability.md)",
    "aiocoord.client": "the facade: every public method of Client declared once, with the "
    "docstring the API reference shows (overloads included); the work is in its parts "
    "(aiocoord._client), most methods here validate and delegate",
    "aiocoord.recipes.cache._feeds": "one concern, how a cache learns of changes: the Feed "
    "both kinds share (tasks, recover(), failing) and the two kinds, one persistent watch with "
    "its windowed queue of reads, or one-shot watches per node",
}


def test_every_module_says_its_concern() -> None:
    """Each module opens with a docstring whose first sentence names what it is for."""
    silent = []
    for module, path in MODULES.items():
        doc = ast.get_docstring(ast.parse(path.read_text()))
        if not doc or len(doc.split(".")[0].split()) < 2:
            silent.append(module)
    assert not silent, f"modules without a docstring naming their concern: {silent}"


def test_large_modules_are_reviewed() -> None:
    big = {
        module: n
        for module, path in MODULES.items()
        if (n := len(path.read_text().splitlines())) > SOFT_LIMIT and module not in REVIEWED
    }
    assert not big, (
        f"modules over {SOFT_LIMIT} lines: {big}. If each still has one concern, add it to "
        "REVIEWED with the reason; if it has two, split it by concern."
    )


def test_no_two_modules_share_a_name() -> None:
    """A newcomer finds a concern's file in one guess: no two modules (files) are named alike
    but for a leading underscore (``_queue``/``queue`` once meant two unrelated things). A
    private package may share the name of the public module whose parts it holds
    (``_client/`` and ``client.py``, ``_session/session.py``)."""
    names: dict[str, list[str]] = {}
    for module, path in MODULES.items():
        if path.name in ("__init__.py", "__main__.py"):
            continue
        names.setdefault(path.stem.lstrip("_"), []).append(module)
    clashes = {name: mods for name, mods in names.items() if len(mods) > 1}
    assert not clashes, f"modules named alike: {clashes}"


def test_no_import_cycle_at_all() -> None:
    """Arrows point down (recipes -> client -> session -> connection -> wire), whenever an
    import runs: deferred imports (inside functions) and type-checking ones count too, so no
    module reaches back up, even lazily (``Client.lock`` once imported the lock recipe:
    recipes take the client, and the client knows no recipe)."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        deps: set[str] = set()
        for target, names in _imports(module):
            for name in names:
                if f"{target}.{name}" in MODULES:
                    deps.add(f"{target}.{name}")
            deps.add(target)
        graph[module] = {d for d in deps if d in MODULES and d != module}
    # The public surface imports everything, and nothing imports it.
    cycles = _cycles(graph, roots=frozenset({"aiocoord", "aiocoord._public"}))
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def _run_time_imports(module: str) -> list[str]:
    """The ``aiocoord`` modules ``module`` imports when it runs: those of ``if TYPE_CHECKING:``
    blocks left out (a type names what it does not call)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "aiocoord":
                found.append(node.module)
                found.extend(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.startswith("aiocoord"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(MODULES[module].read_text()))
    return found


def test_the_client_parts_never_build_the_client() -> None:
    """Arrows point down: the floors below the facade (``_client/``, ``_session/``, ``_wire/``)
    never import ``aiocoord.client`` to call it, only to name its type. What builds a
    :class:`~aiocoord.Client` (``connect()``, ``open_client()``) lives beside it, in
    ``aiocoord/_connect.py``, not in the parts it is built from."""
    floors = ("aiocoord._client", "aiocoord._session", "aiocoord._wire")
    found = [
        module
        for module in MODULES
        if module.startswith(floors) and "aiocoord.client" in _run_time_imports(module)
    ]
    assert not found, f"modules below the client that import it at run time: {found}"


#: Path syntax written by hand: a join, a parent, a name, the components of a path.
_PATH_SYNTAX = re.compile(
    r'rstrip\("/"\)\s*\+|rpartition\("/"\)|rsplit\("/"|\[1:\]\.split\("/"\)|strip\("/"\)\.split'
)


def test_path_syntax_lives_in_one_module() -> None:
    """One concept, one module: joining, splitting and walking paths is ``aiocoord._paths``'s
    (``join``, ``split``, ``components``); ``zkpaths`` checks the caller's input and calls it,
    ``_validation`` reads a path to refuse it. Anywhere else it was written by hand, a dozen
    times, each slightly differently at the root."""
    allowed = {"aiocoord._paths", "aiocoord._validation"}
    found = [
        f"{module}:{n}: {line.strip()}"
        for module, path in MODULES.items()
        if module not in allowed
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _PATH_SYNTAX.search(line)
    ]
    assert not found, "\n".join(found)


def test_no_recipe_reaches_below_the_client() -> None:
    """Recipes enter the client through one door (:mod:`aiocoord._client.door`): none imports
    the session manager or touches ``client._session``."""
    found: list[str] = []
    for module, path in MODULES.items():
        if not module.startswith("aiocoord.recipes"):
            continue
        for target, _ in _imports(module):
            if target.startswith("aiocoord._session"):
                found.append(f"{module} imports {target}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("session", "_session"):
                found.append(f"{module}:{node.lineno} reads .{node.attr}")
    assert not found, "\n".join(found)


def test_no_two_test_modules_share_a_name() -> None:
    """pytest imports test modules by their base name (the test folders are not packages):
    two alike in tests/unit and tests/integration stop the whole run at collection."""
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"test modules named alike: {clashes}"
