"""How a model's values become node data and back: the :class:`Serializer` protocol
(Curator's ``ModelSerializer``), the pydantic v2 and msgspec serializers, and
:func:`serializer_for`, which picks one for a type.

pydantic and msgspec are optional (extras ``aiocoord[pydantic]``, ``aiocoord[msgspec]``) and
imported only when a serializer for them is made: a type that is a pydantic model or a msgspec
``Struct`` can only exist once its library was imported, so :func:`serializer_for` looks for
them in :data:`sys.modules` and never imports either to find out. Both write their own JSON
(ISO-8601 datetimes, for one); the Jackson-compatible format is
:class:`~aiocoord.modeled.JsonSerializer`'s.
"""

from __future__ import annotations

import builtins
import importlib
import sys
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from aiocoord.errors import InvalidTypeError
from aiocoord.modeled.exceptions import ModelDecodeError, ModelEncodeError
from aiocoord.modeled.jackson import JsonSerializer

__all__ = ["MsgspecSerializer", "PydanticSerializer", "Serializer", "serializer_for"]

T = TypeVar("T")


@runtime_checkable
class Serializer(Protocol[T]):
    """Turns a model's values into node data and back (Curator's ``ModelSerializer``).

    ``deserialize`` should raise :class:`~aiocoord.modeled.ModelDecodeError` for data that is
    no value; any other exception it raises is reported as one too (with the node's path and
    bytes), so a third-party serializer needs no adapter. ``serialize`` should raise
    :class:`~aiocoord.modeled.ModelEncodeError` for a value it cannot write.
    """

    def serialize(self, value: T) -> bytes:
        """The node data for ``value``."""
        ...

    def deserialize(self, data: bytes) -> T:
        """The value ``data`` holds."""
        ...


def _module(name: str, extra: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise InvalidTypeError(f"{name} is not installed: pip install 'aiocoord[{extra}]'") from exc


class PydanticSerializer(Generic[T]):
    """pydantic v2 models as their JSON (``model_dump_json(by_alias=True)`` and
    ``model_validate_json``); a validation error reads as ModelDecodeError."""

    def __init__(self, type: type[T]) -> None:
        pydantic = _module("pydantic", "pydantic")
        if not (isinstance(type, builtins.type) and issubclass(type, pydantic.BaseModel)):
            raise InvalidTypeError(f"{type!r} is not a pydantic BaseModel")
        #: the pydantic model class of the values written and read
        self.type: builtins.type[T] = type
        self._error = pydantic.ValidationError

    def serialize(self, value: T) -> bytes:
        """``value`` as pydantic writes it."""
        if not isinstance(value, self.type):
            raise ModelEncodeError(f"expected {self.type.__name__}, got {type(value).__name__}")
        out: bytes = value.model_dump_json(by_alias=True).encode("utf-8")  # type: ignore[attr-defined]
        return out

    def deserialize(self, data: bytes) -> T:
        """The model ``data`` holds, validated by pydantic."""
        try:
            out: T = self.type.model_validate_json(data)  # type: ignore[attr-defined]
        except (self._error, ValueError) as exc:
            raise ModelDecodeError(str(exc), data=bytes(data)) from exc
        return out

    def __repr__(self) -> str:
        return f"PydanticSerializer({self.type.__name__})"


class MsgspecSerializer(Generic[T]):
    """Values of ``type`` (a msgspec ``Struct``, or any type msgspec knows) as msgspec's
    JSON; a decode or validation error reads as ModelDecodeError."""

    def __init__(self, type: Any) -> None:
        msgspec = _module("msgspec", "msgspec")
        #: the type of the values written and read (a msgspec ``Struct`` or any type msgspec
        #: knows), as given
        self.type: Any = type
        self._decoder = msgspec.json.Decoder(type)
        self._encoder = msgspec.json.Encoder()
        self._errors = (msgspec.DecodeError, msgspec.ValidationError)

    def serialize(self, value: T) -> bytes:
        """``value`` as msgspec writes it; read back first, so that nothing this model could
        not read is written (msgspec checks types when decoding, not when encoding)."""
        try:
            out: bytes = self._encoder.encode(value)
            self._decoder.decode(out)
        except (*self._errors, TypeError) as exc:
            raise ModelEncodeError(str(exc)) from exc
        return out

    def deserialize(self, data: bytes) -> T:
        """The value ``data`` holds, validated by msgspec."""
        try:
            out: T = self._decoder.decode(data)
        except self._errors as exc:
            raise ModelDecodeError(str(exc), data=bytes(data)) from exc
        return out

    def __repr__(self) -> str:
        return f"MsgspecSerializer({getattr(self.type, '__name__', self.type)!r})"


def serializer_for(type: Any) -> Serializer[Any]:
    """The default serializer of ``type``: :class:`PydanticSerializer` for a pydantic model,
    :class:`MsgspecSerializer` for a msgspec ``Struct``, else :class:`JsonSerializer`
    (dataclasses, ``TypedDict`` and plain types, Jackson's format)."""
    pydantic = sys.modules.get("pydantic")
    if (
        pydantic is not None
        and isinstance(type, builtins.type)
        and issubclass(type, pydantic.BaseModel)
    ):
        return PydanticSerializer(type)
    msgspec = sys.modules.get("msgspec")
    if msgspec is not None and isinstance(type, builtins.type) and issubclass(type, msgspec.Struct):
        return MsgspecSerializer(type)
    return JsonSerializer(type)
