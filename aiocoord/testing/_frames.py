"""FaultProxy's view of the wire (see :mod:`aiocoord.testing.faults`): ZooKeeper frames (a
4-byte big-endian length, then the payload), a request's ``(xid, opcode)``, a reply's xid, and
which requests a drop takes by default. Re-exported from :mod:`aiocoord.testing.faults`.
"""

from __future__ import annotations

import struct

__all__ = [
    "CLOSE_OPCODE",
    "MAX_FRAME",
    "FrameBuffer",
    "default_drop_predicate",
    "reply_xid",
    "request_header",
]

#: Bigger frame lengths are taken to mean "not ZooKeeper framing" (jute.maxbuffer is ~1 MiB).
MAX_FRAME = 64 * 1024 * 1024
#: The opcode of closeSession.
CLOSE_OPCODE = -11
_REQUEST_HEADER = struct.Struct(">ii")
_XID = struct.Struct(">i")


class FrameBuffer:
    """Splits one direction of a ZooKeeper connection into whole frames.

    :meth:`feed` returns the frames completed by the bytes given, each with its 4-byte length
    prefix. A length beyond ``max_frame`` (or negative) switches the buffer to :attr:`raw`: from
    then on :meth:`feed` returns what it is given, unframed.
    """

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buffer = bytearray()
        self._max_frame = max_frame
        #: True once a frame length was implausible: the data is then passed on unframed
        self.raw: bool = False

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the frames it completes (or, once raw, the data itself)."""
        if self.raw:
            return [data] if data else []
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        start = 0
        while len(buffer) - start >= 4:
            (length,) = _XID.unpack_from(buffer, start)
            if length < 0 or length > self._max_frame:
                self.raw = True
                frames.append(bytes(buffer[start:]))
                buffer.clear()
                return frames
            end = start + 4 + length
            if len(buffer) < end:
                break
            frames.append(bytes(buffer[start:end]))
            start = end
        del buffer[:start]
        return frames

    @property
    def buffered(self) -> int:
        """Bytes held back, waiting for the rest of their frame."""
        return len(self._buffer)


def request_header(frame: bytes) -> tuple[int, int] | None:
    """``(xid, opcode)`` of a client request frame (length prefix included), None if too short.

    Not meaningful for the first frame of a connection, the ConnectRequest, which has neither.
    """
    if len(frame) < 4 + _REQUEST_HEADER.size:
        return None
    xid, opcode = _REQUEST_HEADER.unpack_from(frame, 4)
    return int(xid), int(opcode)


def reply_xid(frame: bytes) -> int | None:
    """The xid of a server reply frame (length prefix included), None if too short."""
    if len(frame) < 4 + _XID.size:
        return None
    return int(_XID.unpack_from(frame, 4)[0])


def default_drop_predicate(xid: int, opcode: int) -> bool:
    """The requests :meth:`FaultProxy.drop_after_request` drops by default: ordinary ones.

    Special xids are negative (ping -2, auth -4, setWatches -8) and closeSession ends the
    session anyway, so neither is chosen.
    """
    return xid > 0 and opcode != CLOSE_OPCODE
