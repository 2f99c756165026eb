"""Path templates with named parameters: :class:`PathTemplate` (Curator's ``ZPath``).

``PathTemplate("/tenants/{tenant}/config")`` has one parameter, ``tenant``; :meth:`resolve`
fills it per call and checks the result like any path (:func:`aiocoord._validation.validate_path`
rules) and each value as one segment, so a value can never reach another part of the tree
(``"a/b"``, ``".."`` and ``""`` are refused). :meth:`match` goes the other way: a concrete path
to its parameters, or None. Plain data, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aiocoord._paths import components, join, split
from aiocoord._validation import validate_path
from aiocoord.errors import BadArgumentsError, InvalidPathError, InvalidTypeError

__all__ = ["PathTemplate"]

_PARAM = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")


class PathTemplate:
    """A ZooKeeper path whose segments may be named parameters: ``/tenants/{tenant}/config``.

    A parameter is a whole segment written ``{name}`` (a Python identifier). The fixed
    segments are checked when the template is made (InvalidPathError), a value when it is
    resolved. Templates are immutable and hashable; ``str(template)`` is the pattern.
    """

    __slots__ = ("_params", "_pattern", "_segments")

    def __init__(self, pattern: str) -> None:
        if not isinstance(pattern, str):
            raise InvalidTypeError(f"pattern must be str, not {type(pattern).__name__}")
        # The fixed parts must be a valid path on their own: check with placeholders.
        segments = components(pattern)
        params: list[str] = []
        probe: list[str] = []
        for segment in segments:
            found = _PARAM.match(segment)
            if found is not None:
                if found.group(1) in params:
                    raise BadArgumentsError(
                        f"parameter {found.group(1)!r} appears twice in {pattern!r}"
                    )
                params.append(found.group(1))
                probe.append("x")
            elif "{" in segment or "}" in segment:
                raise InvalidPathError(
                    pattern, f"segment {segment!r}: a parameter is a whole segment, '{{name}}'"
                )
            else:
                probe.append(segment)
        validate_path("/" + "/".join(probe) if pattern.startswith("/") else pattern)
        self._pattern = pattern
        self._segments: tuple[str, ...] = tuple(segments)
        self._params: tuple[str, ...] = tuple(params)

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameter names, in path order."""
        return self._params

    @property
    def pattern(self) -> str:
        """The template as written."""
        return self._pattern

    @property
    def last_parameter(self) -> str | None:
        """The name of the last segment if it is a parameter (a child template), else None."""
        if self._segments:
            found = _PARAM.match(self._segments[-1])
            if found is not None:
                return found.group(1)
        return None

    @property
    def parent(self) -> PathTemplate:
        """The template of the parent node (``/`` for a top-level one)."""
        return PathTemplate(split(self._pattern)[0])

    def child(self, segment: str) -> PathTemplate:
        """This template with one more segment (fixed, or ``{name}`` for a parameter)."""
        return PathTemplate(join(self._pattern, segment))

    def resolve(self, params: Mapping[str, Any] | None = None, /, **more: Any) -> str:
        """The concrete path with every parameter filled (``resolve(tenant="t1")``).

        Values must be str (or int, written in decimal) and one valid segment each.
        BadArgumentsError names a missing or unknown parameter; InvalidPathError a value
        that is no segment.
        """
        values = {**(params or {}), **more}
        unknown = sorted(set(values) - set(self._params))
        if unknown:
            raise BadArgumentsError(f"{self._pattern!r} has no parameter {unknown}")
        missing = [name for name in self._params if name not in values]
        if missing:
            raise BadArgumentsError(f"{self._pattern!r} needs a value for {missing}")
        if not self._segments:
            return "/"
        out: list[str] = []
        for segment in self._segments:
            found = _PARAM.match(segment)
            out.append(segment if found is None else self.segment(found.group(1), values))
        return validate_path("/" + "/".join(out))

    @staticmethod
    def segment(name: str, values: Mapping[str, Any]) -> str:
        """The value of parameter ``name`` as one path segment (checked)."""
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise InvalidTypeError(
                f"parameter {name!r} must be str or int, not {type(value).__name__}"
            )
        text = str(value)
        if not text or "/" in text or text in (".", ".."):
            raise InvalidPathError(text, f"parameter {name!r} must be one path segment")
        validate_path("/" + text)
        return text

    def match(self, path: str) -> dict[str, str] | None:
        """The parameters that make this template ``path``, or None if it does not fit."""
        if not isinstance(path, str):
            return None
        segments = components(path)
        if len(segments) != len(self._segments):
            return None
        out: dict[str, str] = {}
        for mine, theirs in zip(self._segments, segments, strict=True):
            found = _PARAM.match(mine)
            if found is not None:
                if not theirs:
                    return None
                out[found.group(1)] = theirs
            elif mine != theirs:
                return None
        return out

    def partial(self, params: Mapping[str, Any]) -> PathTemplate:
        """This template with the given parameters filled in and the others left open."""
        unknown = sorted(set(params) - set(self._params))
        if unknown:
            raise BadArgumentsError(f"{self._pattern!r} has no parameter {unknown}")
        if not self._segments:
            return self
        out: list[str] = []
        for segment in self._segments:
            found = _PARAM.match(segment)
            if found is not None and found.group(1) in params:
                out.append(self.segment(found.group(1), params))
            else:
                out.append(segment)
        return PathTemplate("/" + "/".join(out))

    def __str__(self) -> str:
        return self._pattern

    def __repr__(self) -> str:
        return f"PathTemplate({self._pattern!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PathTemplate) and other._pattern == self._pattern

    def __hash__(self) -> int:
        return hash(self._pattern)
