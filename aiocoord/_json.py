"""JSON as the Java peers write and read it, one module for the whole library: :func:`load_foreign`
reads a node written by anyone (bounded, typed failure), :func:`dump_jackson` writes what
Jackson 2.x's ``ObjectMapper.writeValueAsBytes`` writes for the same value (Curator's discovery
nodes, and the typed models' :class:`~aiocoord.modeled.JsonSerializer`).

**Reading foreign bytes.** Any client may write any bytes to a node a recipe reads. Python's
``json`` recurses once per nesting level, so a small node nested a thousand deep raises
RecursionError, not ValueError, and a value nested just under that limit breaks later
``==``, ``repr`` or ``json.dumps`` on it. :func:`load_foreign` therefore refuses documents
nested deeper than :data:`MAX_DEPTH` before parsing, and turns every failure (bad UTF-8,
not JSON, NaN/Infinity, an integer too long for ``int()``) into :class:`ForeignDataError`.

**Writing like Jackson.** Jackson differs from ``json.dumps(ensure_ascii=False)`` in three
ways that change the bytes: it escapes each UTF-16 surrogate of a character beyond the BMP
(``"\\uD83D\\uDE00"``) instead of writing it as four UTF-8 bytes; its ``\\u00XX`` escapes of
control characters use upper-case hex; and a double is Java's ``Double.toString``
(``1.0E20``, ``1.0E-7``, ``100.0``) where Python writes ``1e+20``, ``1e-07``, ``100.0``.
Digits: Python's ``repr`` gives the shortest digits that read back to the same double, as
Java 19+'s ``Double.toString`` does, and ``.0`` where one digit is enough (``1.0E-323``, as
Java 17 writes it), but for ``Double.MIN_VALUE``, which every JDK writes ``4.9E-324``. Java
17's older algorithm agrees on every double a test here tries (tests/integration/
test_modeled_jackson.py asks Java 17's Jackson), but is known to print a longer digit string
for some rare doubles (JDK-4511638); Java 19+ writes some other subnormals with two digits
(``9.9E-324`` for ``1e-323``). There the bytes would differ and the value would not.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "ForeignDataError",
    "JavaDouble",
    "dump_jackson",
    "is_type_wrapper",
    "load_foreign",
]

#: Deepest nesting of arrays and objects a foreign document may have. Far below Python's
#: recursion limit (so the value stays usable), far above any real record or payload.
MAX_DEPTH = 200

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


class ForeignDataError(ValueError):
    """Bytes that are not the JSON a reader can take; each recipe turns it into its own
    typed error (InstanceFormatError, LeaseDataError)."""


def _too_deep(data: bytes) -> bool:
    # At most one level per opening bracket: most documents are decided by counting.
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return False
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub(b'""', data)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                return True
        else:
            depth -= 1
    return False


def _no_constant(name: str) -> Any:
    # Jackson refuses NaN and Infinity by default; so does this reader.
    raise ValueError(f"{name} is not JSON")


class JavaDouble(float):
    """A double read from a node, with the text it was written as: :func:`dump_jackson`
    writes that text back, so a node another writer made (Java 17's ``Double.toString``
    writes ``1e23`` as ``9.999999999999999E22``) round-trips to its very bytes. Otherwise a
    plain float."""

    text: str

    def __new__(cls, text: str) -> JavaDouble:
        value = super().__new__(cls, text)
        value.text = text
        return value


def _finite(text: str) -> float:
    value = JavaDouble(text)
    if math.isinf(value):  # 1e999: Jackson reads Infinity, which it would not write back
        raise ValueError(f"{text[:40]} is out of range for a double")
    return value


def load_foreign(data: bytes) -> Any:
    """The JSON value in ``data`` (UTF-8); ForeignDataError if it is not one, is nested
    deeper than :data:`MAX_DEPTH`, or holds a number out of a double's range."""
    if not isinstance(data, bytes | bytearray):
        raise ForeignDataError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if _too_deep(data):
        raise ForeignDataError(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ForeignDataError(f"not UTF-8: {exc}") from None
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        # RecursionError: only if the caller's own stack is already deep; the value is
        # refused rather than let it end the caller.
        raise ForeignDataError(f"not JSON: {str(exc)[:200]}") from None


# --- writing -------------------------------------------------------------------------------

# The forms Double.toString writes: plain from 1e-3 to 1e7, else computerized scientific;
# no trailing zero but in "x.0". A read double whose text has another form ("1e20", "5",
# "0.0001", "1.50") is written anew.
_JAVA_PLAIN = re.compile(r"-?(?:[1-9]\d{0,6}|0)\.(?:0|\d*[1-9])")
_JAVA_SCIENTIFIC = re.compile(r"-?[1-9]\.(?:0|\d*[1-9])E-?[1-9]\d{0,2}")


def _java_form(value: JavaDouble) -> bool:
    magnitude = abs(value)
    if magnitude == 0.0 or 1e-3 <= magnitude < 1e7:
        return _JAVA_PLAIN.fullmatch(value.text) is not None
    return _JAVA_SCIENTIFIC.fullmatch(value.text) is not None


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Characters Jackson escapes: the quote, the backslash, C0 controls, and (one by one, as
# UTF-16 surrogates) everything beyond the BMP.
_ESCAPED = re.compile('["\\\\\x00-\x1f\U00010000-\U0010ffff]')


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04X}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def java_string(value: str) -> str:
    """``value`` as a JSON string literal the way Jackson's UTF-8 generator writes it."""
    return '"' + _ESCAPED.sub(_escape, value) + '"'


#: The smallest positive double (Java's ``Double.MIN_VALUE``).
_MIN_DOUBLE = 5e-324


def java_double(value: float) -> str:
    """Java's ``Double.toString(value)`` (shortest digits; see the module docstring)."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not JSON")
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    # The shortest digits that read back to the double, and the power of ten of the first.
    lead, _, exp_part = f"{abs(value)!r}".partition("e")
    whole, _, frac = lead.partition(".")
    exp = int(exp_part or 0)
    if whole.strip("0"):
        exp += len(whole.lstrip("0")) - 1
    else:
        exp -= len(frac) - len(frac.lstrip("0")) + 1
    digits = (whole + frac).lstrip("0")
    digits = digits.lstrip("0").rstrip("0") or "0"
    if abs(value) == _MIN_DOUBLE:
        # Java's Double.MIN_VALUE, in every JDK: two digits, the closest to its exact value
        # (4.94...E-324), where the shortest digit is 5.
        digits, exp = "49", -324
    if -3 <= exp < 7:
        # Plain notation, at least one digit after the point.
        if exp >= 0:
            whole = digits[: exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    frac = digits[1:] or "0"
    return f"{sign}{digits[0]}.{frac}E{exp}"


def _write(value: Any, out: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        # Written, it could not be read back (load_foreign); refused before recursing deeper.
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(java_string(value))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, JavaDouble) and _java_form(value):
        out.append(value.text)  # as read: another writer's digits (see JavaDouble)
    elif isinstance(value, float):
        out.append(java_double(float(value)))
    elif isinstance(value, Mapping):
        out.append("{")
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(java_string(key))
            out.append(":")
            _write(item, out, depth + 1)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, depth + 1)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON-serializable")


# A Jackson type id: a Java binary class name ("java.lang.Long", "Outer$Inner") or an array
# type's descriptor ("[Ljava.lang.String;", "[J").
_JAVA_TYPE_ID = re.compile(r"\[*(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*|L[\w$.]+;|[ZBCSIJFD])")


def is_type_wrapper(value: Any) -> bool:
    """Whether ``value`` is Jackson's ``[type id, value]`` wrapper, the one array form a
    polymorphic value (Curator's payload) takes: ``["java.lang.Long", 5]``."""
    return (
        isinstance(value, list | tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and _JAVA_TYPE_ID.fullmatch(value[0]) is not None
    )


def dump_jackson(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8, byte for byte what Jackson writes for the same
    tree (see the module docstring). TypeError for a value that is not JSON, ValueError for
    NaN, an infinity or nesting deeper than :data:`MAX_DEPTH`, UnicodeEncodeError for a lone
    surrogate."""
    out: list[str] = []
    _write(value, out, 0)
    return "".join(out).encode("utf-8")
