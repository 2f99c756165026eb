"""Znode paths for the caller's code (Curator's ``ZKPaths``): build a path from parts, split
it, and order sequential nodes by their counter.

Every function checks its input (InvalidPathError, InvalidTypeError) and never talks to a
server. The recipes use the same functions, unchecked, from the module beside this one, so a
name this module sorts is ordered exactly as the recipes order it: by the 10-digit counter
alone, never by a protected node's random ``_c_<uuid>-`` prefix.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiocoord import _paths
from aiocoord._paths import PROTECTED_PREFIX, SEQUENCE_DIGITS
from aiocoord._validation import validate_path
from aiocoord.errors import InvalidPathError, InvalidTypeError

__all__ = [
    "PROTECTED_PREFIX",
    "SEQUENCE_DIGITS",
    "components",
    "join",
    "make_path",
    "protected_id",
    "sequence_of",
    "sort_by_sequence",
    "split",
]


def _name(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be a str, not {type(value).__name__}")
    if "/" in value or not value:
        raise InvalidPathError(value, f"{what} must be one non-empty node name, without '/'")
    return value


def join(parent: str, name: str) -> str:
    """The path of the child ``name`` of ``parent``: ``join("/a", "b") == "/a/b"``,
    ``join("/", "b") == "/b"``.

    :raises InvalidPathError: ``parent`` is no valid path, or ``name`` is empty or holds ``/``
        (use :func:`make_path` for several levels), or the result is no valid path.
    """
    validate_path(parent)
    path = _paths.join(parent, _name(name, "name"))
    return validate_path(path)


def make_path(parent: str, *children: str) -> str:
    """``parent`` and ``children`` joined with exactly one ``/`` between parts, whatever
    slashes the parts bring: ``make_path("/a/", "b/c", "/d") == "/a/b/c/d"``;
    ``make_path("a") == "/a"``; empty parts are skipped; ``make_path("") == "/"``
    (Curator's ``ZKPaths.makePath``).

    :raises InvalidTypeError: a part is not a str.
    :raises InvalidPathError: the result is no valid path (an empty segment, ``.``, ``..``,
        or a character the server refuses).
    """
    parts: list[str] = []
    for part in (parent, *children):
        if not isinstance(part, str):
            raise InvalidTypeError(f"path parts must be str, not {type(part).__name__}")
        stripped = part.strip("/")
        if stripped:
            parts.append(stripped)
    return validate_path("/" + "/".join(parts))


def split(path: str) -> tuple[str, str]:
    """``(parent, name)`` of ``path``: ``split("/a/b") == ("/a", "b")``,
    ``split("/a") == ("/", "a")``, ``split("/") == ("/", "")`` (Curator's
    ``ZKPaths.getPathAndNode``).

    :raises InvalidPathError: ``path`` is no valid path.
    """
    validate_path(path)
    if path == "/":
        return "/", ""
    return _paths.split(path)


def components(path: str) -> list[str]:
    """The node names along ``path``, from the root down: ``components("/a/b") == ["a", "b"]``,
    ``components("/") == []`` (Curator's ``ZKPaths.split``).

    :raises InvalidPathError: ``path`` is no valid path.
    """
    validate_path(path)
    return _paths.components(path)


def sequence_of(name: str) -> int | None:
    """The sequence number a sequential create appended to ``name`` (its 10 trailing
    digits), or None if it has none: ``sequence_of("lock-0000000042") == 42``. Give the
    node's name or its whole path.

    :raises InvalidTypeError: ``name`` is not a str.
    """
    if not isinstance(name, str):
        raise InvalidTypeError(f"name must be a str, not {type(name).__name__}")
    return _paths.sequence_of(name)


def sort_by_sequence(names: Iterable[str]) -> list[str]:
    """The names that carry a sequence number, ordered by it alone (as Curator's recipes and
    aiocoord's order them); names without one are left out. Ties keep an order by name.

    Sorting names whole would be wrong for protected nodes, whose ``_c_<uuid>-`` prefix is
    random: ``sort_by_sequence(["_c_f0..-lock-0000000002", "_c_0a..-lock-0000000003"])``
    keeps 2 before 3.

    :raises InvalidTypeError: ``names`` is a str (not a collection of names), or holds
        something other than str.
    """
    if isinstance(names, (str, bytes)):
        raise InvalidTypeError("names must be a collection of node names, not one str")
    listed = list(names)
    for name in listed:
        if not isinstance(name, str):
            raise InvalidTypeError(f"names must be str, not {type(name).__name__}")
    return _paths.sort_by_sequence(listed)


def protected_id(name: str) -> str | None:
    """The UUID of a protected node's name (``_c_<uuid>-<name>``, made by
    ``create(..., protected=True)`` and by Curator's ``withProtection()``), or None.

    :raises InvalidTypeError: ``name`` is not a str.
    """
    if not isinstance(name, str):
        raise InvalidTypeError(f"name must be a str, not {type(name).__name__}")
    return _paths.protected_id(name)
