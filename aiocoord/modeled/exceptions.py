"""The errors of typed models (:mod:`aiocoord.modeled`), all under
:class:`aiocoord.CoordinationError`: a node that does not decode, a value that does not encode,
a write a schema refuses.
"""

from __future__ import annotations

from aiocoord.errors import BadArgumentsError, CoordinationError

__all__ = ["ModelDecodeError", "ModelEncodeError", "ModelError", "SchemaViolationError"]


class ModelError(CoordinationError, ValueError):
    """The base of the typed-model errors; ``path`` is the node's, when there is one."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message if path is None else f"{path}: {message}")
        #: the path of the node concerned (under the client's chroot); None when raised by a
        #: serializer called on its own (a model's operations always give the path)
        self.path: str | None = path


class ModelDecodeError(ModelError):
    """A node's data is not a value of the model's type.

    ``data`` holds the bytes as read (the node is left as it is: fix or delete it, or read it
    with the plain client); ``__cause__`` is the serializer's own error, when it raised one.
    """

    def __init__(self, message: str, *, data: bytes, path: str | None = None) -> None:
        super().__init__(message, path=path)
        #: the node's bytes as read, which are no value of the model's type
        self.data: bytes = data


class ModelEncodeError(ModelError, BadArgumentsError):
    """A value cannot be written with the model's serializer (wrong type, a field that JSON
    cannot carry); nothing was sent. A :class:`~aiocoord.BadArgumentsError` too, as every
    input refused before anything is sent."""


class SchemaViolationError(ModelError):
    """A write refused by a :class:`~aiocoord.modeled.SchemaSet` before it was sent:
    ``schema`` is the rule broken (its ``name``, or its pattern)."""

    def __init__(self, message: str, *, schema: str, path: str | None = None) -> None:
        super().__init__(message, path=path)
        #: the rule broken: the governing :class:`~aiocoord.modeled.Schema`'s ``name`` (or
        #: its pattern), or ``"<none>"`` for a path no schema of a strict set governs
        self.schema: str = schema
