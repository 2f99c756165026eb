"""Every cross-reference in a docstring (``:class:``, ``:meth:``, ``:mod:``, ``:func:``,
``:attr:``, ``:data:``, ``:exc:``) names something that exists, private names included: a
stale reference (a class since renamed, a module since moved) sends a reader nowhere.

A target resolves as Sphinx would look it up: an absolute dotted name; a name relative to
the module (``.opcodes``); a name the module binds (its imports, type-checking ones too); a
member or instance attribute of the enclosing class, or of a class the module defines; a
method of :class:`~aiocoord.Client` where the module holds one of the client's parts."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ROLE = re.compile(r":(?:class|meth|mod|func|attr|data|exc|obj):`~?([^`<>]+?)`")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _bindings(tree: ast.Module, package: str) -> dict[str, str]:
    """Every name the module binds by import (type-checking imports too) -> its dotted path."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            base = node.module
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            for alias in node.names:
                out[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = alias.name
    return out


def _instance_attributes(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "self":
                names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _lookup(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _members(obj: Any, rest: list[str]) -> bool:
    for i, attr in enumerate(rest):
        if not hasattr(obj, attr):
            # An instance attribute, set in the constructor (the last part of the name only).
            init = getattr(getattr(obj, "__init__", None), "__code__", None)
            return i == len(rest) - 1 and init is not None and attr in init.co_names
        obj = getattr(obj, attr)
    return True


def _public(head: str, rest: list[str]) -> bool:
    import aiocoord
    import aiocoord.testing

    for package in (aiocoord, aiocoord.testing):
        if head in package.__all__ and _members(getattr(package, head), rest):
            return True
    return False


def _unresolved() -> list[str]:
    from aiocoord.client import Client

    bad: list[str] = []
    for path in sorted((ROOT / "aiocoord").rglob("*.py")):
        name = _module_name(path)
        module = importlib.import_module(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        bound = _bindings(tree, package)
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        instance = {c.name: _instance_attributes(c) for c in classes}
        client_part = any(getattr(module, c.name, None) in Client.__mro__ for c in classes)
        for node in ast.walk(tree):
            if not isinstance(
                node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                continue
            doc = ast.get_docstring(node)
            for target in ROLE.findall(doc or ""):
                target = target.strip().removesuffix("()")
                head, *rest = target.split(".")
                if target.startswith("."):
                    found = _lookup(package + target)
                elif _lookup(target) or _public(head, rest):
                    found = True  # absolute, or a public name the docs resolve by its name
                elif hasattr(module, head):
                    found = _members(getattr(module, head), rest)
                elif head in bound:
                    found = _lookup(".".join([bound[head], *rest]))
                else:
                    found = any(
                        _members(getattr(module, c.name, None), [head, *rest])
                        or (not rest and head in instance[c.name])
                        for c in classes
                    ) or (client_part and _members(Client, [head, *rest]))
                if not found:
                    line = getattr(node, "lineno", 1)
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    return bad


def test_every_docstring_reference_resolves() -> None:
    bad = _unresolved()
    assert not bad, "references to nothing:\n" + "\n".join(bad)
