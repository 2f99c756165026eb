"""Node data compressed as Curator compresses it (``GzipCompressionProvider``, Curator's
default for ``.compressed()``): what ``create``, ``set`` and ``get`` do with
``compressed=True``, for nodes shared with Curator clients that opt in.

The bytes are those Curator writes, not merely readable by it: a gzip member with a 10-byte
header of no name, no time and an unknown OS (``1f 8b 08 00 00000000 00 ff``), the data
deflated at zlib's default level, then the CRC-32 and the length. That header is the one
Curator 5.6 and later write on Java 16 and later; Curator 5.5 and earlier write 0 as the OS
byte on every Java, and so do later ones on Java 15 and earlier: that one byte differs, and
every reader ignores it (tests compare with Curator 5.4's and 5.7's own output, and each
reads the other's). Reading takes any single gzip member, as Java's ``GZIPInputStream`` does
for what Curator wrote.
"""

from __future__ import annotations

import struct
import zlib

from aiocoord._validation import validate_data
from aiocoord.errors import CompressedDataError

__all__ = ["gzip_compress", "gzip_decompress"]

# Java's GZIPOutputStream header, which Curator writes too: no FNAME, MTIME 0, XFL 0, and OS
# 255 ("unknown"), Java's since JDK 16 (JDK-8244706; 0 before), which Curator 5.6 and later
# follow on the Java they run on (CURATOR-672; 5.5 and earlier wrote 0 on any Java): the
# bytes of a current Curator on a current Java. (Python's gzip module sets XFL by level and
# OS by platform, so its bytes would differ from Curator's.)
_HEADER = bytes((0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF))
_TRAILER = struct.Struct("<II")
#: gzip framing for zlib: 16 + the largest window
_GZIP_WBITS = 16 + zlib.MAX_WBITS


def gzip_compress(data: bytes) -> bytes:
    """``data`` compressed as Curator's ``GzipCompressionProvider.compress`` does, byte for
    byte. Raises InvalidTypeError if ``data`` is not bytes-like."""
    raw = validate_data(data, limit=2**63)
    # Raw deflate (negative wbits) at the default level and memory level, as Java's
    # Deflater(DEFAULT_COMPRESSION, nowrap=true) does: the framing is added here.
    deflater = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflater.compress(raw) + deflater.flush()
    return _HEADER + body + _TRAILER.pack(zlib.crc32(raw), len(raw) & 0xFFFFFFFF)


def gzip_decompress(data: bytes, path: str | None = None) -> bytes:
    """The data a gzip member (Curator's ``compressed()`` node) holds. Raises
    :class:`~aiocoord.errors.CompressedDataError` naming ``path`` if ``data`` is not one whole gzip
    member (an uncompressed node, a truncated or corrupted one), InvalidTypeError if it is not
    bytes-like."""
    raw = validate_data(data, path, limit=2**63)
    inflater = zlib.decompressobj(_GZIP_WBITS)
    try:
        out = inflater.decompress(raw) + inflater.flush()
    except zlib.error as exc:
        raise CompressedDataError(f"node data is not gzip-compressed: {exc}", path) from None
    if not inflater.eof:
        raise CompressedDataError("node data is a truncated gzip member", path)
    if inflater.unused_data:
        raise CompressedDataError("node data has bytes after its gzip member", path)
    return out


def _payload(data: object, path: str, compressed: bool) -> bytes:
    """What the client's create or set of ``data`` sends: the data, or its gzip form if
    ``compressed``; the size limit applies to what is sent."""
    if compressed:
        return validate_data(gzip_compress(validate_data(data, path, limit=2**63)), path)
    return validate_data(data, path)
