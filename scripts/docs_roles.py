"""A griffe extension for the docs site: the docstrings' Sphinx roles become cross-references.

The docstrings across ``aiocoord/`` are written with Sphinx roles (``:class:`Lock```,
``:meth:`~aiocoord.Client.get```, ...), which Markdown would print as raw text. Rather than
rewrite the docstrings, each role is resolved when the site is built: its target is looked up
(relative to the documented object's class and module first, then in ``aiocoord`` and
``aiocoord.testing``, as Sphinx does) against the imported package, mapped to the public name
the API pages document (``aiocoord.recipes.lock.Lock`` is shown as ``aiocoord.Lock``), and
written as an mkdocs-autorefs reference to that page anchor. A target with no public page (a
private helper) is shown as code. "See the module docstring" links to the module's docstring,
which the API pages show.

Loaded by mkdocstrings' python handler (``extensions:`` in mkdocs.yml).
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
from functools import cache
from typing import Any

import griffe

ROLE = re.compile(r":(?P<role>class|meth|attr|func|mod|data|exc|obj):`(?P<body>[^`]+)`")
TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^>]+)>$")
MODULE_DOCSTRING = re.compile(r"\b(the module docstring|the module's docstring)\b")
PUBLIC_MODULES = ("aiocoord", "aiocoord.testing")


@cache
def _public_names() -> dict[int, str]:
    """id(object) -> the public dotted name the API pages document it under."""
    names: dict[int, str] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            if name.startswith("__"):
                continue
            names.setdefault(id(getattr(module, name)), f"{module_name}.{name}")
    return names


def _lookup(dotted: str) -> Any | None:
    """The object a dotted name denotes at run time, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            try:
                obj = inspect.getattr_static(obj, part)
            except AttributeError:
                return None
        return obj
    return None


def _defined_in(module: types.ModuleType, name: str) -> bool:
    member = getattr(module, name, None)
    if isinstance(member, types.ModuleType):
        return False
    return getattr(member, "__module__", module.__name__) == module.__name__


def _is_public_module(dotted: str) -> bool:
    return dotted.startswith("aiocoord") and not any(p.startswith("_") for p in dotted.split("."))


def public_identifier(dotted: str) -> str | None:
    """The page anchor for a dotted name, if the site documents it under a public name."""
    parts = dotted.split(".")
    if _lookup(dotted) is None:
        return None
    for cut in range(len(parts), 0, -1):
        head = _lookup(".".join(parts[:cut]))
        rest = parts[cut:]
        if any(p.startswith("_") for p in rest):
            return None
        if isinstance(head, types.ModuleType):
            # Only what the module itself defines: ``asyncio.Lock`` seen through an
            # ``import asyncio`` is not aiocoord's to document.
            defined_here = not rest or _defined_in(head, rest[0])
            if _is_public_module(head.__name__) and defined_here:
                return ".".join([head.__name__, *rest])
            return None
        public = _public_names().get(id(head))
        if public is not None:
            return ".".join([public, *rest])
    return None


def _scopes(obj: griffe.Object) -> list[str]:
    """Where a relative role target is looked for: enclosing classes, then the module."""
    scopes: list[str] = []
    current: griffe.Object | None = obj if obj.is_class or obj.is_module else obj.parent
    while current is not None:
        scopes.append(current.path)
        current = current.parent
    return [*scopes, *PUBLIC_MODULES]


def resolve(target: str, obj: griffe.Object) -> str | None:
    target = target.lstrip("~").lstrip(".").removesuffix("()")
    candidates = [target] if target.startswith("aiocoord") else []
    candidates += [f"{scope}.{target}" for scope in _scopes(obj)]
    for candidate in candidates:
        identifier = public_identifier(candidate)
        if identifier is not None:
            return identifier
    return None


def rewrite(text: str, obj: griffe.Object) -> str:
    """The docstring with every role as a reference (or code) and module-docstring links."""

    def role(match: re.Match[str]) -> str:
        body = match["body"].strip()
        titled = TITLED.match(body)
        if titled:
            title, target = titled["title"], titled["target"]
        else:
            target = body
            shown = body.lstrip("~").lstrip(".")
            title = shown.rsplit(".", 1)[-1] if body.startswith("~") else shown
            if match["role"] in ("meth", "func") and not title.endswith(")"):
                title += "()"
        code = f"<code>{title}</code>"
        identifier = resolve(target, obj)
        if identifier is None:
            return code
        return f'<autoref identifier="{identifier}" optional>{code}</autoref>'

    text = ROLE.sub(role, text)
    module = obj.module.path if not obj.is_module else obj.path
    if _is_public_module(module):
        text = MODULE_DOCSTRING.sub(
            lambda m: f'<autoref identifier="{module}" optional>{m[1]}</autoref>', text
        )
    return text


class SphinxRoles(griffe.Extension):
    """Rewrites each loaded object's docstring as :func:`rewrite` does."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and obj.path.startswith("aiocoord"):
            obj.docstring.value = rewrite(obj.docstring.value, obj)
