"""Jute primitives: the precompiled structs, and the writers and readers every record uses.

Writers return bytes. Readers take ``(buf, offset)`` and return ``(value, end offset)``; a
length that cannot be right raises :class:`ProtocolError`, and a read past the end raises
``struct.error``. :func:`parse` is the one place that turns every decoding failure into
ProtocolError, so a garbled reply never escapes as ``struct.error`` or ``UnicodeDecodeError``.

The structs are compiled once here (aiozk built a format string per message and a Struct
per field, which is where its codec spent its time).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import TypeVar

from aiocoord.errors import ProtocolError

__all__ = [
    "INT",
    "LONG",
    "TWO_INTS",
    "parse",
    "read_buffer",
    "read_int",
    "read_long",
    "read_ustring",
    "read_ustrings",
    "read_vector_size",
    "write_bool",
    "write_buffer",
    "write_ustring",
    "write_ustrings",
]

T = TypeVar("T")

INT = struct.Struct("!i")
LONG = struct.Struct("!q")
TWO_INTS = struct.Struct("!ii")

_TRUE = b"\x01"
_FALSE = b"\x00"


def write_bool(value: bool) -> bytes:
    """A Jute boolean: one byte."""
    return _TRUE if value else _FALSE


def write_ustring(value: str) -> bytes:
    """A Jute ustring: length, then UTF-8."""
    raw = value.encode()
    return INT.pack(len(raw)) + raw


def write_buffer(value: bytes) -> bytes:
    """A Jute buffer: length, then the bytes."""
    return INT.pack(len(value)) + value


def write_ustrings(values: Iterable[str]) -> bytes:
    """A Jute vector of ustrings: count, then each."""
    raws = [value.encode() for value in values]
    return INT.pack(len(raws)) + b"".join(INT.pack(len(raw)) + raw for raw in raws)


def read_int(buf: bytes, offset: int) -> tuple[int, int]:
    """A 32-bit signed int."""
    return INT.unpack_from(buf, offset)[0], offset + 4


def read_long(buf: bytes, offset: int) -> tuple[int, int]:
    """A 64-bit signed int."""
    return LONG.unpack_from(buf, offset)[0], offset + 8


def read_ustring(buf: bytes, offset: int) -> tuple[str, int]:
    """A ustring; null (-1) is refused: every string the server sends us is a value."""
    (size,) = INT.unpack_from(buf, offset)
    offset += 4
    end = offset + size
    if size < 0 or end > len(buf):
        raise ProtocolError(f"string of {size} bytes overruns its frame")
    return buf[offset:end].decode(), end


def read_buffer(buf: bytes, offset: int) -> tuple[bytes, int]:
    """A buffer; null (-1) reads as empty."""
    (size,) = INT.unpack_from(buf, offset)
    offset += 4
    if size < 0:
        if size == -1:
            return b"", offset
        raise ProtocolError(f"buffer length {size} in a reply")
    end = offset + size
    if end > len(buf):
        raise ProtocolError(f"data of {size} bytes overruns its frame")
    return buf[offset:end], end


def read_vector_size(buf: bytes, offset: int, item_size: int) -> tuple[int, int]:
    """The element count of a vector whose elements take at least ``item_size`` bytes each;
    null (-1) reads as empty. A count the rest of the frame cannot hold is refused before
    anything is allocated for it."""
    (count,) = INT.unpack_from(buf, offset)
    offset += 4
    if count < 0:
        if count == -1:
            return 0, offset
        raise ProtocolError(f"vector of {count} elements in a reply")
    if count * item_size > len(buf) - offset:
        raise ProtocolError(f"vector of {count} elements is impossible in a {len(buf)}-byte frame")
    return count, offset


def read_ustrings(buf: bytes, offset: int) -> tuple[list[str], int]:
    """A vector of ustrings (a child list: the hot read, so the loop is inlined)."""
    count, offset = read_vector_size(buf, offset, 4)
    unpack = INT.unpack_from
    limit = len(buf)
    names: list[str] = []
    append = names.append
    for _ in range(count):
        (size,) = unpack(buf, offset)
        offset += 4
        end = offset + size
        if size < 0 or end > limit:
            raise ProtocolError(f"string of {size} bytes overruns its frame")
        append(buf[offset:end].decode())
        offset = end
    return names, offset


def parse(decode: Callable[[bytes, int], tuple[T, int]], buf: bytes, offset: int, what: str) -> T:
    """``decode(buf, offset)``'s value; any decoding failure is raised as ProtocolError."""
    try:
        return decode(buf, offset)[0]
    except ProtocolError:
        raise
    except (struct.error, ValueError, IndexError) as exc:  # ValueError: UnicodeDecodeError
        raise ProtocolError(f"cannot decode {what}: {exc!r}") from exc
