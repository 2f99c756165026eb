"""JSON in the shape Jackson's default ``ObjectMapper`` writes, for dataclasses and
``TypedDict`` (the standard library only): :class:`JsonSerializer`, the default serializer of a
:class:`~aiocoord.modeled.Model`.

Curator's ``JacksonModelSerializer`` writes a model with a plain ``ObjectMapper``; a Java service
and a Python one share a node when both write the same fields the same way. What Jackson does by
default, and so what this module does:

- an object is a JSON object of its properties; a nested object nests, a ``List`` is an array,
  a ``Map<String, V>`` an object; the property name is the Java one (give a dataclass field
  another name in JSON with ``field(metadata={"json": "javaName"})``);
- a property whose value is null is written as ``null`` (not left out); reading, a property
  left out gets the field's default, or None for an optional field;
- ``java.util.Date`` is written as a number, milliseconds since the epoch
  (``WRITE_DATES_AS_TIMESTAMPS``): a timezone-aware :class:`datetime.datetime` here, truncated
  to the millisecond, read back in UTC. ``java.time`` types need Jackson's JSR-310 module,
  which a default mapper does not have (Debian ships no ``jackson-datatype-jsr310`` jar
  beside Curator's): they are not a default format, so a naive datetime is refused rather than
  guessed at;
- an enum is written as its constant's name (the Python member's ``name``);
- non-finite doubles are refused (Jackson would write ``"NaN"`` as a string that no strict
  reader takes back as a number);
- a number no double holds is refused both ways (an ``int`` past 1.8e308 written to a
  ``float`` field, ``1e400`` read: Jackson would make it Infinity), and reading refuses
  nesting deeper than :data:`aiocoord._json.MAX_DEPTH` before parsing (the library's one
  foreign-JSON reader, :func:`aiocoord._json.load_foreign`);
- reading ignores properties the type does not have (a newer writer's fields), as a mapper
  set up for rolling upgrades does; pass ``ignore_unknown=False`` for Jackson's stricter
  default.

The checks of a value are strict in both directions: a ``str`` field holding a number, a
missing required field or a wrong-typed list item is a
:class:`~aiocoord.modeled.ModelDecodeError` naming the field (``config.limits[2].max``), never a
value of the wrong type handed on.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Generic, TypeVar, Union

from aiocoord._json import (
    JAVA_DEFAULT,
    MAX_DEPTH,
    ForeignDataError,
    check_java,
    dump_jackson,
    load_foreign,
)
from aiocoord.errors import InvalidTypeError
from aiocoord.modeled.exceptions import ModelDecodeError, ModelEncodeError

__all__ = ["JsonSerializer"]

T = TypeVar("T")

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MILLI = datetime.timedelta(milliseconds=1)


class _Bad(Exception):
    """A value does not fit its type; ``where`` is the field path."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where or 'value'}: {message}")


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _json_name(field: dataclasses.Field[Any]) -> str:
    name = field.metadata.get("json", field.name)
    return name if isinstance(name, str) else field.name


def _hints(tp: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tp)
    except Exception as exc:  # a forward reference that does not resolve
        raise InvalidTypeError(f"the annotations of {tp!r} do not resolve: {exc}") from exc


def _optional(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return (origin is Union or origin is types.UnionType) and type(None) in typing.get_args(tp)


def _where(base: str, name: str) -> str:
    return f"{base}.{name}" if base else name


class _Codec:
    """Type-directed conversion between Python values and JSON values."""

    def __init__(self, ignore_unknown: bool) -> None:
        self.ignore_unknown = ignore_unknown

    # --- Python -> JSON --------------------------------------------------------------------

    def dump(self, tp: Any, value: Any, where: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _Bad(where, "nested too deep")
        if tp is Any or tp is object:
            return self._plain(value, where, depth)
        if tp is type(None) or tp is None:
            if value is not None:
                raise _Bad(where, f"expected None, got {type(value).__name__}")
            return None
        origin = typing.get_origin(tp)
        if origin is Union or origin is types.UnionType:
            if value is None and type(None) in typing.get_args(tp):
                return None
            errors = []
            for option in typing.get_args(tp):
                if option is type(None):
                    continue
                try:
                    return self.dump(option, value, where, depth)
                except _Bad as exc:
                    errors.append(str(exc))
            raise _Bad(where, f"fits none of {tp}: {'; '.join(errors)}")
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            if not isinstance(value, tp):
                raise _Bad(where, f"expected {tp.__name__}, got {type(value).__name__}")
            hints = _hints(tp)
            return {
                _json_name(f): self.dump(
                    hints[f.name], getattr(value, f.name), _where(where, f.name), depth + 1
                )
                for f in dataclasses.fields(tp)
            }
        if _is_typeddict(tp):
            if not isinstance(value, Mapping):
                raise _Bad(where, f"expected a mapping, got {type(value).__name__}")
            hints = _hints(tp)
            extra = sorted(set(value) - set(hints), key=str)
            if extra:
                raise _Bad(where, f"{tp.__name__} has no key {extra}")
            missing = sorted(tp.__required_keys__ - set(value))
            if missing:
                raise _Bad(where, f"missing {missing}")
            return {
                k: self.dump(hints[k], value[k], _where(where, k), depth + 1)
                for k in hints
                if k in value
            }
        if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
            args = typing.get_args(tp)
            item = args[0] if args else Any
            if not isinstance(value, (list, tuple, set, frozenset)) or isinstance(value, str):
                raise _Bad(where, f"expected a list, got {type(value).__name__}")
            return [self.dump(item, v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
        if origin is dict or tp is dict or origin is Mapping:
            args = typing.get_args(tp)
            item = args[1] if args else Any
            if not isinstance(value, Mapping):
                raise _Bad(where, f"expected a mapping, got {type(value).__name__}")
            out = {}
            for k, v in value.items():
                if not isinstance(k, str):
                    raise _Bad(where, f"keys must be str, got {type(k).__name__}")
                out[k] = self.dump(item, v, f"{where}[{k!r}]", depth + 1)
            return out
        if tp is datetime.datetime:
            if not isinstance(value, datetime.datetime):
                raise _Bad(where, f"expected a datetime, got {type(value).__name__}")
            if value.tzinfo is None or value.utcoffset() is None:
                raise _Bad(where, "a naive datetime has no instant: give it a tzinfo")
            return (value - _EPOCH) // _MILLI
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            if not isinstance(value, tp):
                raise _Bad(where, f"expected {tp.__name__}, got {type(value).__name__}")
            return value.name
        if tp is bool:
            if not isinstance(value, bool):
                raise _Bad(where, f"expected bool, got {type(value).__name__}")
            return value
        if tp is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise _Bad(where, f"expected int, got {type(value).__name__}")
            return value
        if tp is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _Bad(where, f"expected float, got {type(value).__name__}")
            return _double(value, where)
        if tp is str:
            if not isinstance(value, str):
                raise _Bad(where, f"expected str, got {type(value).__name__}")
            return value
        raise _Bad(where, f"{tp!r} is not a type this serializer writes")

    def _plain(self, value: Any, where: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _Bad(where, "nested too deep")
        if value is None or isinstance(value, (str, bool, int)):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _Bad(where, f"{value} has no JSON number")
            return value
        if isinstance(value, (list, tuple)):
            return [self._plain(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return {k: self._plain(v, f"{where}[{k!r}]", depth + 1) for k, v in value.items()}
        raise _Bad(where, f"{type(value).__name__} has no JSON form")

    # --- JSON -> Python --------------------------------------------------------------------

    def load(self, tp: Any, value: Any, where: str) -> Any:
        if tp is Any or tp is object:
            return value
        if tp is type(None) or tp is None:
            if value is not None:
                raise _Bad(where, f"expected null, got {type(value).__name__}")
            return None
        origin = typing.get_origin(tp)
        if origin is Union or origin is types.UnionType:
            if value is None and type(None) in typing.get_args(tp):
                return None
            errors = []
            for option in typing.get_args(tp):
                if option is type(None):
                    continue
                try:
                    return self.load(option, value, where)
                except _Bad as exc:
                    errors.append(str(exc))
            raise _Bad(where, f"fits none of {tp}: {'; '.join(errors)}")
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            if not isinstance(value, dict):
                raise _Bad(where, f"expected an object, got {_kind(value)}")
            hints = _hints(tp)
            fields = dataclasses.fields(tp)
            known = {_json_name(f) for f in fields}
            if not self.ignore_unknown:
                extra = sorted(set(value) - known)
                if extra:
                    raise _Bad(where, f"unknown properties {extra}")
            kwargs: dict[str, Any] = {}
            for f in fields:
                key = _json_name(f)
                if key in value:
                    kwargs[f.name] = self.load(hints[f.name], value[key], _where(where, f.name))
                elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    if not _optional(hints[f.name]):
                        raise _Bad(_where(where, f.name), "missing")
                    kwargs[f.name] = None
            try:
                return tp(**kwargs)
            except Exception as exc:  # the class's own __post_init__ checks
                raise _Bad(where, f"{tp.__name__} refused it: {exc!r}") from exc
        if _is_typeddict(tp):
            if not isinstance(value, dict):
                raise _Bad(where, f"expected an object, got {_kind(value)}")
            hints = _hints(tp)
            if not self.ignore_unknown:
                extra = sorted(set(value) - set(hints))
                if extra:
                    raise _Bad(where, f"unknown properties {extra}")
            missing = sorted(tp.__required_keys__ - set(value))
            if missing:
                raise _Bad(where, f"missing {missing}")
            return {k: self.load(hints[k], value[k], _where(where, k)) for k in hints if k in value}
        if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
            args = typing.get_args(tp)
            item = args[0] if args else Any
            if not isinstance(value, list):
                raise _Bad(where, f"expected an array, got {_kind(value)}")
            items = [self.load(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
            kind = origin or tp
            return items if kind is list else kind(items)
        if origin is dict or tp is dict or origin is Mapping:
            args = typing.get_args(tp)
            item = args[1] if args else Any
            if not isinstance(value, dict):
                raise _Bad(where, f"expected an object, got {_kind(value)}")
            return {k: self.load(item, v, f"{where}[{k!r}]") for k, v in value.items()}
        if tp is datetime.datetime:
            if isinstance(value, bool) or not isinstance(value, int):
                raise _Bad(where, f"expected epoch milliseconds, got {_kind(value)}")
            try:
                return _EPOCH + value * _MILLI
            except OverflowError:
                raise _Bad(where, f"{value} ms is out of datetime's range") from None
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            if not isinstance(value, str) or value not in tp.__members__:
                raise _Bad(where, f"{value!r} is no {tp.__name__}")
            return tp[value]
        if tp is bool:
            if not isinstance(value, bool):
                raise _Bad(where, f"expected a boolean, got {_kind(value)}")
            return value
        if tp is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise _Bad(where, f"expected an integer, got {_kind(value)}")
            return value
        if tp is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _Bad(where, f"expected a number, got {_kind(value)}")
            return _double(value, where)
        if tp is str:
            if not isinstance(value, str):
                raise _Bad(where, f"expected a string, got {_kind(value)}")
            return value
        raise _Bad(where, f"{tp!r} is not a type this serializer reads")


def _double(value: float, where: str) -> float:
    """``value`` (an int or a float) as the double a Java ``double`` field holds: a plain
    float, whatever text it was read from (typed values are written with Java 17's digits)."""
    try:
        out = float(value)
    except OverflowError:  # an int past 1.8e308: Jackson would make it Infinity
        bits = int(value).bit_length()
        raise _Bad(where, f"an integer of {bits} bits is out of a double's range") from None
    if not math.isfinite(out):
        raise _Bad(where, f"{value} has no JSON number")
    return out


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"the number {value}"
    return names.get(type(value), type(value).__name__)


class JsonSerializer(Generic[T]):
    """Values of ``type`` (a dataclass, a ``TypedDict``, or a plain type: str, int, float,
    bool, lists and str-keyed dicts of them, ``Optional``, enums, aware datetimes) to and from
    UTF-8 JSON as Jackson's default ``ObjectMapper`` writes it; see the module docstring.

    ``ignore_unknown`` (default True) skips properties ``type`` does not have when reading.
    ``java`` is the Java feature version of the services that share the nodes: Jackson writes
    a double with that JVM's ``Double.toString``, whose digits changed in Java 19 (the
    default, 17, writes Java 8 to 18's; 19 or later, the shortest). Either way every value
    reads back the same; only the bytes of some doubles differ (``1e23`` is
    ``9.999999999999999E22`` on Java 17, ``1.0E23`` on Java 21).
    Errors: :class:`~aiocoord.modeled.ModelEncodeError` for a value that does not fit
    ``type``, :class:`~aiocoord.modeled.ModelDecodeError` for bytes that do not decode.
    """

    def __init__(self, type: Any, *, ignore_unknown: bool = True, java: int = JAVA_DEFAULT) -> None:
        if isinstance(type, (str, typing.ForwardRef)):
            raise InvalidTypeError(f"type must be a type, not the name {type!r}")
        if dataclasses.is_dataclass(type) or _is_typeddict(type):
            _hints(type)  # unresolvable annotations are a setup error, found now
        #: the type of the values written and read, as given
        self.type: Any = type
        #: the Java feature version whose ``Double.toString`` digits the doubles are written
        #: with (below 19: Java 17's; 19 and later: the shortest)
        self.java: int = check_java(java)
        self._codec = _Codec(ignore_unknown)

    def serialize(self, value: T) -> bytes:
        """``value`` as compact UTF-8 JSON; ModelEncodeError if it does not fit the type."""
        try:
            plain = self._codec.dump(self.type, value, "", 0)
            # The library's one Jackson writer: its doubles, escapes and surrogate pairs.
            return dump_jackson(plain, java=self.java)
        except _Bad as exc:
            raise ModelEncodeError(str(exc)) from None
        except (TypeError, ValueError) as exc:  # a lone surrogate has no UTF-8 form
            raise ModelEncodeError(f"not writable as JSON: {exc}") from None

    def deserialize(self, data: bytes) -> T:
        """The value ``data`` holds; ModelDecodeError (with ``data``) if it is none."""
        try:
            # The library's one reader of foreign JSON: nesting bounded before parsing (a
            # value under an ``Any`` field stays usable), NaN and out-of-range numbers refused.
            plain = load_foreign(bytes(data))
        except ForeignDataError as exc:
            message = str(exc) if str(exc).startswith("not JSON") else f"not JSON: {exc}"
            raise ModelDecodeError(message, data=bytes(data)) from exc
        try:
            out: T = self._codec.load(self.type, plain, "")
        except _Bad as exc:
            raise ModelDecodeError(str(exc), data=bytes(data)) from None
        return out

    def __repr__(self) -> str:
        return f"JsonSerializer({getattr(self.type, '__name__', self.type)!r})"
