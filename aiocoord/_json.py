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
control characters use upper-case hex; and a double is Java's ``Double.toString`` (``1.0E20``,
``1.0E-7``, ``100.0``) where Python writes ``1e+20``, ``1e-07``, ``100.0``. The digits are
those of Java 17 (the JDK beside the OS's Jackson and Curator), which are not always the
shortest: ``1e23`` is ``9.999999999999999E22``, ``2**60`` is ``1.15292150460684698E18``,
``5e-324`` is ``4.9E-324`` (:func:`java_double` reproduces its algorithm; tests/integration/
test_modeled_jackson.py holds it against Jackson on random doubles). Java 19 and later print
the shortest digits instead (JDK-4511638): for some doubles (``1e23``, ``2**60``; about one in
twenty of the test's) the bytes differ while the value is the same, so the writer takes the
peers' Java version (``java=``, :data:`JAVA_DEFAULT` when not given) and writes either's
digits (:func:`java_double`; the same test holds both, on Java 17 and on Java 21).
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Mapping
from typing import Any

from aiocoord.errors import BadArgumentsError, InvalidTypeError

__all__ = [
    "JAVA_DEFAULT",
    "MAX_DEPTH",
    "ForeignDataError",
    "JavaDouble",
    "check_java",
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
    writes that text back, so a node another writer made (Java 19 and later write ``1e23`` as
    ``1.0E23`` where Java 17, and so :func:`java_double`, writes ``9.999999999999999E22``)
    round-trips to its very bytes. Otherwise a plain float."""

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


# Java 17's Double.toString (FloatingDecimal's binary-to-decimal conversion, unchanged from
# JDK 1.4 to 18). It is not Python's repr: it develops digits of the exact binary value until
# the remainder is within half an ulp on either side (a symmetric test, so it may print more
# digits than needed, 1e23 as 9.999999999999999E22), always two digits in E-form (4.9E-324),
# and an integral double below 2**63 as the digits of the integer itself (2**60 as
# 1.15292150460684698E18). Its fixed-width paths wrap as Java's int and long do; the wrapping
# is reproduced (_wrap) rather than assumed away, since it decides digits in a few corners.
# JDK 19 replaced it with the shortest-digits algorithm (JDK-4511638): _shortest_digits.

#: The Java feature version whose ``Double.toString`` digits the writer takes when not told:
#: the JDK beside the OS's Jackson and Curator (Debian's 17).
JAVA_DEFAULT = 17
#: The first Java whose ``Double.toString`` prints the shortest digits (JDK-4511638).
SHORTEST_SINCE = 19


def check_java(java: object) -> int:
    """``java`` (a Java feature version: 8 or later), or InvalidTypeError/BadArgumentsError."""
    if not isinstance(java, int) or isinstance(java, bool):
        raise InvalidTypeError(f"java must be a Java feature version (int), not {java!r}")
    if java < 8:
        raise BadArgumentsError(f"java must be 8 or later (Jackson 2 needs Java 8), not {java}")
    return java


_SIGNIFICAND_BITS = 52
_EXP_BIAS = 1023
#: Integral doubles with a binary exponent in this range take the integer path.
_SMALL_BIN_EXP = range(-21, 63)
#: Java's table of 5**i that fit a long (i < 27) and its estimate of their bit lengths.
_LONG_FIVES = 27


def _wrap(value: int, bits: int) -> int:
    """``value`` as Java's ``int`` (32 bits) or ``long`` (64) holds it, wrapped."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _java_div(a: int, b: int) -> int:
    """Java's integer division, which truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _five_bits(n: int) -> int:
    """FloatingDecimal's estimate of the bit length of 5**n (its table, then 3 bits a five)."""
    if n == 0:
        return 0
    return (5**n).bit_length() if n < _LONG_FIVES else 3 * n


def _estimate_dec_exp(fract: int, bin_exp: int) -> int:
    """floor(log10(value)) as Java estimates it (may be one too high, never too low): the
    same double arithmetic, so the same estimate."""
    one_point_fract = (_EXP_BIAS << _SIGNIFICAND_BITS) | (fract & ((1 << 52) - 1))
    mantissa: float = struct.unpack("<d", struct.pack("<Q", one_point_fract))[0]
    estimate = (mantissa - 1.5) * 0.289529654 + 0.176091259 + float(bin_exp) * 0.301029995663981
    return math.floor(estimate)


def _round_up(digits: list[int], dec_exp: int) -> int:
    """Add one to the last digit, carrying; a carry out of the first digit makes it 1 and the
    exponent one more (the other digits stay 0 and are printed). The new exponent."""
    i = len(digits) - 1
    while digits[i] == 9 and i > 0:
        digits[i] = 0
        i -= 1
    if digits[i] == 9:
        digits[0] = 1
        return dec_exp + 1
    digits[i] += 1
    return dec_exp


def _java17_digits(magnitude: float) -> tuple[list[int], int]:
    """The digits Java 17 prints for a positive finite double, and its decimal exponent
    ``e`` (the value is ``0.d1d2... * 10**e``)."""
    bits = struct.unpack("<Q", struct.pack("<d", magnitude))[0]
    fract = bits & ((1 << _SIGNIFICAND_BITS) - 1)
    bin_exp = bits >> _SIGNIFICAND_BITS
    if bin_exp == 0:  # subnormal: normalised so that bit 52 is the leading one
        significant = fract.bit_length()
        fract <<= _SIGNIFICAND_BITS + 1 - significant
        bin_exp = significant - _SIGNIFICAND_BITS
    else:
        fract |= 1 << _SIGNIFICAND_BITS
        significant = _SIGNIFICAND_BITS + 1
    bin_exp -= _EXP_BIAS
    tail_zeros = (fract & -fract).bit_length() - 1
    fract_bits = _SIGNIFICAND_BITS + 1 - tail_zeros
    tiny_bits = max(0, fract_bits - bin_exp - 1)

    if bin_exp in _SMALL_BIN_EXP and tiny_bits == 0:
        # An integer below 2**63: its own digits, less those below the double's precision
        # (rounded half up), trailing zeros dropped.
        whole = fract << (bin_exp - 52) if bin_exp >= 52 else fract >> (52 - bin_exp)
        p2 = bin_exp - significant - 1
        dropped = len(str(1 << p2)) - 1 if 1 < p2 < 64 else 0  # digits of 2**p2, less one
        if dropped:
            whole, rest = divmod(whole, 10**dropped)
            whole += rest >= 10**dropped // 2
        text = str(whole)
        return [int(c) for c in text.rstrip("0")], len(text) + dropped

    # value = B / S * 10**dec_exp, and M is half an ulp, scaled as B is: digits are taken
    # from B / S until the remainder is within M of either neighbouring digit.
    dec_exp = _estimate_dec_exp(fract, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + tiny_bits
    m5 = b5
    m2 = b2 - significant
    fract >>= tail_zeros
    b2 -= fract_bits - 1
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common
    if fract_bits == 1:  # a power of two: the double below is half as far
        m2 -= 1
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0

    b_bits = fract_bits + b2 + _five_bits(b5)
    ten_s_bits = s2 + 1 + _five_bits(s5 + 1)
    digits: list[int] = []
    if b_bits < 64 and ten_s_bits < 64:
        # Java's int (or long) arithmetic, with its wrapping; "high" is a strict test here.
        width = 32 if b_bits < 32 and ten_s_bits < 32 else 64
        b = _wrap(_wrap(_wrap(fract, width) * 5**b5, width) << b2, width)
        s = _wrap(5**s5 << s2, width)
        m = _wrap(5**m5 << m2, width)
        tens = _wrap(s * 10, width)

        def step(first: bool) -> tuple[int, bool, bool]:
            nonlocal b, m
            q = _java_div(b, s)
            b = _wrap(10 * (b - _java_div(b, s) * s), width)
            m = _wrap(m * 10, width)
            if not first and m <= 0:  # Java's guard against m overflowing
                return q, True, True
            return q, b < m, _wrap(b + m, width) > tens

        q, low, high = step(True)
        if q == 0 and not high:
            dec_exp -= 1  # the estimate was one too high
        else:
            digits.append(q)
        if dec_exp < -3 or dec_exp >= 8:
            low = high = False  # E-form: at least two digits
        while not low and not high:
            q, low, high = step(False)
            digits.append(q)
        difference = _wrap(_wrap(b << 1, width) - tens, width)
    else:
        # Arbitrary precision; here "high" also holds on equality.
        big_b = fract * 5**b5 << b2
        big_s = 5**s5 << s2
        big_m = 10 * (5**m5 << m2)
        ten_s = 10 * big_s
        q, big_b = divmod(big_b, big_s)
        big_b *= 10
        low, high = big_b < big_m, big_b + big_m >= ten_s
        if q == 0 and not high:
            dec_exp -= 1
        else:
            digits.append(q)
        if dec_exp < -3 or dec_exp >= 8:
            low = high = False
        while not low and not high:
            q, big_b = divmod(big_b, big_s)
            big_b *= 10
            big_m *= 10
            low, high = big_b < big_m, big_b + big_m >= ten_s
            digits.append(q)
        difference = (2 * big_b > ten_s) - (2 * big_b < ten_s) if low and high else 0

    dec_exp += 1
    if high and (not low or difference > 0 or (difference == 0 and digits[-1] % 2)):
        dec_exp = _round_up(digits, dec_exp)
    return digits, dec_exp


def _shortest_digits(magnitude: float) -> tuple[str, int]:
    """Java 19's ``Double.toString`` digits of a positive finite double, and its decimal
    exponent (the value is ``0.<digits> * 10**exp``): the shortest decimal that rounds to it
    and, of those, the closest (repr's), except that one digit is never enough: of the
    two-digit decimals that round to it, the closest (ties to even) is written, as
    Java 19's specification says (``5e-324`` is ``4.9E-324``, ``2e-3`` stays ``0.002``)."""
    text = repr(magnitude)
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    exp = len(whole) + (int(exponent) if exponent else 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0")
    if len(digits) == 1:
        # Correctly rounded to two digits, half to even: the closest two-digit decimal. At a
        # power of two's uneven neighbours it may not round back; the one digit, as "d0", does.
        two = f"{magnitude:.1e}"
        if float(two) == magnitude:
            mantissa, _, exponent = two.partition("e")
            digits = mantissa.replace(".", "").rstrip("0")
            exp = int(exponent) + 1
    return digits, exp


def java_double(value: float, java: int = JAVA_DEFAULT) -> str:
    """``Double.toString(value)`` on Java ``java``, digit for digit: Java 17's digits (which
    Java 8 to 18 share, see the comment above) below 19, the shortest ones from 19 on."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not JSON")
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0.0:
        return f"{sign}0.0"
    if java >= SHORTEST_SINCE:
        digits, exp = _shortest_digits(abs(value))
    else:
        numbers, exp = _java17_digits(abs(value))
        digits = "".join(map(str, numbers))
    if 0 < exp < 8:
        # Plain notation, at least one digit after the point.
        if len(digits) <= exp:
            return f"{sign}{digits.ljust(exp, '0')}.0"
        return f"{sign}{digits[:exp]}.{digits[exp:]}"
    if -3 < exp <= 0:
        return f"{sign}0.{'0' * -exp}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp - 1}"


def _write(value: Any, out: list[str], depth: int, java: int) -> None:
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
        out.append(java_double(float(value), java))
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
            _write(item, out, depth + 1, java)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, depth + 1, java)
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


def dump_jackson(value: Any, *, java: int = JAVA_DEFAULT) -> bytes:
    """``value`` as compact JSON in UTF-8, byte for byte what Jackson writes for the same
    tree on Java ``java`` (see the module docstring). TypeError for a value that is not JSON,
    ValueError for NaN, an infinity or nesting deeper than :data:`MAX_DEPTH`,
    UnicodeEncodeError for a lone surrogate."""
    out: list[str] = []
    _write(value, out, 0, java)
    return "".join(out).encode("utf-8")
