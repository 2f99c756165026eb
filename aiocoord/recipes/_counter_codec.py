"""How the counters of :mod:`aiocoord.recipes.counter` keep their value on a node, as Curator
does: a 4-byte (SharedCount) or 8-byte (AtomicCounter, DistributedAtomicLong) big-endian signed
integer. The codecs, their ranges, the check of a value given by the caller, Java's long
wrap-around, and :class:`CorruptedValueError` for a node that holds something else.
Re-exported from :mod:`aiocoord.recipes.counter`, where the API reference shows the error.
"""

from __future__ import annotations

import struct
from typing import Any

from aiocoord.errors import (
    BadArgumentsError,
    CorruptedValueError,
    InvalidTypeError,
)

__all__ = [
    "INT32",
    "INT32_MAX",
    "INT32_MIN",
    "INT64",
    "INT64_MAX",
    "INT64_MIN",
    "CorruptedValueError",
    "check_int",
    "decode_text",
    "encode_text",
    "wrap64",
]

#: SharedCount's value (Curator's SharedCount), and AtomicCounter's (DistributedAtomicLong).
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def decode_text(path: str, data: bytes) -> int:
    """The integer of kazoo's ``Counter`` text (``repr(value)`` in ASCII), else
    :class:`CorruptedValueError`: a float or anything else is never read as an integer."""
    text = data.decode("ascii", "replace")
    digits = text[1:] if text[:1] == "-" else text
    if not (digits.isascii() and digits.isdigit()):
        raise CorruptedValueError(path, data, 0)
    return int(text)


def encode_text(value: int) -> bytes:
    """kazoo's ``Counter`` text of ``value``."""
    return str(value).encode("ascii")


def check_int(value: Any, name: str, low: int, high: int) -> int:
    """``value`` if it is an int (not a bool) in ``[low, high]``; else the error naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be int, not {type(value).__name__}")
    if not low <= value <= high:
        raise BadArgumentsError(f"{name} must be in [{low}, {high}], got {value}")
    return value


def wrap64(value: int) -> int:
    """Two's-complement wrap-around, as a Java long overflows."""
    return (value + 2**63) % 2**64 - 2**63
