"""Rules for what may be written where: :class:`Schema` and :class:`SchemaSet` (Curator's
``Schema`` and ``SchemaSet``), checked by a model's writes before anything is sent.

A schema names a path pattern (a template such as ``/tenants/{tenant}/config``, or a compiled
regular expression matched against the whole path), the create modes allowed there, whether
nodes there must or must not be ephemeral, whether they may be deleted, and a validator of the
value. A :class:`SchemaSet` holds schemas; the first whose pattern matches a path governs it
(a path none matches is free, unless the set is ``strict``). A refused write raises
:class:`~aiocoord.modeled.SchemaViolationError` naming the rule. Plain data and pure checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiocoord.errors import InvalidTypeError
from aiocoord.modeled.exceptions import SchemaViolationError
from aiocoord.modeled.template import PathTemplate
from aiocoord.recipes.nodes import CreateMode

__all__ = ["Schema", "SchemaSet"]


@dataclass(frozen=True)
class Schema:
    """One rule of a :class:`SchemaSet`.

    :param pattern: the paths it governs: a :class:`~aiocoord.modeled.PathTemplate` (or its
        pattern string, ``{name}`` matching any one segment) or a compiled regular expression
        (``re.fullmatch`` on the path).
    :param name: how errors name the rule (default: the pattern).
    :param modes: the create modes allowed (None: any).
    :param ephemeral: True: nodes here must be ephemeral; False: must not be; None: either.
    :param deletable: False refuses deletes of these nodes.
    :param validator: called with each value written here; a false result or an exception
        refuses the write (the exception's text is the reason).
    """

    #: the paths this rule governs: a :class:`~aiocoord.modeled.PathTemplate` (a pattern
    #: given as a string is compiled to one) or a compiled regular expression
    pattern: PathTemplate | str | re.Pattern[str]
    #: how errors name the rule; empty: by its pattern (see :attr:`label`)
    name: str = ""
    #: the create modes allowed here; None: any
    modes: frozenset[CreateMode] | None = None
    #: True: nodes here must be ephemeral; False: must not be; None: either
    ephemeral: bool | None = None
    #: False refuses deletes of nodes here
    deletable: bool = True
    #: called with each value written here; a false result or an exception refuses the
    #: write; None: any value
    validator: Callable[[Any], object] | None = None

    def __post_init__(self) -> None:
        pattern = self.pattern
        if isinstance(pattern, str):
            object.__setattr__(self, "pattern", PathTemplate(pattern))
        elif not isinstance(pattern, (PathTemplate, re.Pattern)):
            raise InvalidTypeError(
                f"pattern must be a PathTemplate, str or re.Pattern, not {type(pattern).__name__}"
            )
        if self.modes is not None:
            modes = frozenset(self.modes)
            if not all(isinstance(m, CreateMode) for m in modes):
                raise InvalidTypeError("modes must be CreateMode values")
            object.__setattr__(self, "modes", modes)
        if self.validator is not None and not callable(self.validator):
            raise InvalidTypeError("validator must be callable")

    @property
    def label(self) -> str:
        """The name errors give this rule: ``name``, else the pattern."""
        if self.name:
            return self.name
        pattern = self.pattern
        return pattern.pattern if isinstance(pattern, (PathTemplate, re.Pattern)) else pattern

    def matches(self, path: str) -> bool:
        """Whether this rule governs ``path``."""
        pattern = self.pattern
        if isinstance(pattern, re.Pattern):
            return pattern.fullmatch(path) is not None
        assert isinstance(pattern, PathTemplate)
        return pattern.match(path) is not None

    def _refuse(self, path: str, why: str) -> SchemaViolationError:
        return SchemaViolationError(
            f"schema {self.label!r} refuses this write: {why}", schema=self.label, path=path
        )

    def check_create(self, path: str, mode: CreateMode, value: Any) -> None:
        """Raise SchemaViolationError if a create of ``path`` in ``mode`` with ``value``
        breaks this rule."""
        if self.modes is not None and mode not in self.modes:
            allowed = sorted(m.value for m in self.modes)
            raise self._refuse(path, f"create mode {mode.value!r} is not one of {allowed}")
        if self.ephemeral is True and not mode.ephemeral:
            raise self._refuse(path, f"nodes here must be ephemeral, not {mode.value!r}")
        if self.ephemeral is False and mode.ephemeral:
            raise self._refuse(path, f"nodes here must not be ephemeral ({mode.value!r})")
        self.check_value(path, value)

    def check_value(self, path: str, value: Any) -> None:
        """Raise SchemaViolationError if the validator refuses ``value``."""
        if self.validator is None:
            return
        try:
            verdict = self.validator(value)
        except Exception as exc:
            raise self._refuse(path, f"the validator refused the value: {exc}") from exc
        if not verdict:
            raise self._refuse(path, "the validator refused the value")

    def check_delete(self, path: str) -> None:
        """Raise SchemaViolationError if nodes here may not be deleted."""
        if not self.deletable:
            raise self._refuse(path, "nodes here may not be deleted")


class SchemaSet:
    """Schemas checked on every write of the models that carry the set (Curator's
    ``SchemaSet``): the first schema whose pattern matches a path governs it; a path none
    matches may be written freely, unless ``strict`` (then it is refused)."""

    def __init__(self, schemas: Iterable[Schema], *, strict: bool = False) -> None:
        #: the schemas, in the order they are tried (the first whose pattern matches governs)
        self.schemas: tuple[Schema, ...] = tuple(schemas)
        if not all(isinstance(s, Schema) for s in self.schemas):
            raise InvalidTypeError("a SchemaSet holds Schema objects")
        #: whether a path no schema matches is refused (False: written freely)
        self.strict: bool = bool(strict)

    def find(self, path: str) -> Schema | None:
        """The schema governing ``path``, or None."""
        for schema in self.schemas:
            if schema.matches(path):
                return schema
        return None

    def _governing(self, path: str) -> Schema | None:
        schema = self.find(path)
        if schema is None and self.strict:
            raise SchemaViolationError(
                "no schema of this strict set allows writing here", schema="<none>", path=path
            )
        return schema

    def check_create(self, path: str, mode: CreateMode, value: Any) -> None:
        """Raise SchemaViolationError if creating ``path`` in ``mode`` with ``value`` is
        refused."""
        schema = self._governing(path)
        if schema is not None:
            schema.check_create(path, mode, value)

    def check_set(self, path: str, value: Any) -> None:
        """Raise SchemaViolationError if writing ``value`` to ``path`` is refused."""
        schema = self._governing(path)
        if schema is not None:
            schema.check_value(path, value)

    def check_delete(self, path: str) -> None:
        """Raise SchemaViolationError if deleting ``path`` is refused."""
        schema = self._governing(path)
        if schema is not None:
            schema.check_delete(path)

    def __repr__(self) -> str:
        return f"SchemaSet({[s.label for s in self.schemas]!r}, strict={self.strict})"
