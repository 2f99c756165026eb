"""Watches on the wire: the event the server pushes (xid -1), SetWatches and SetWatches2
(re-arming after a reconnect, under xid -8), removeWatches and addWatch (3.6+)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aiocoord._wire.framing import EmptyReplyRequest
from aiocoord._wire.jute import (
    INT,
    LONG,
    TWO_INTS,
    parse,
    read_int,
    read_long,
    read_ustring,
    read_ustrings,
    write_ustring,
    write_ustrings,
)
from aiocoord._wire.opcodes import Op

__all__ = [
    "SET_WATCHES_MAX_BYTES",
    "AddWatchRequest",
    "RemoveWatchesRequest",
    "SetWatches2Request",
    "SetWatchesRequest",
    "WatchNotification",
    "decode_watch",
]

#: Bound one SetWatches packet well under jute.maxbuffer, as the Java client does.
SET_WATCHES_MAX_BYTES = 128 * 1024


@dataclass(frozen=True, slots=True)
class WatchNotification:
    """A watch event as the server sends it (Jute's ``WatcherEvent``); the path is still
    the server's, not chroot-relative."""

    type: int
    state: int
    path: str

    def encode(self) -> bytes:
        """The Jute encoding."""
        return TWO_INTS.pack(self.type, self.state) + write_ustring(self.path)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[WatchNotification, int]:
        """Read one at ``offset``."""
        etype, state = TWO_INTS.unpack_from(buf, offset)
        path, offset = read_ustring(buf, offset + 8)
        return WatchNotification(etype, state, path), offset


def decode_watch(buf: bytes, offset: int) -> WatchNotification:
    """The watch event at ``offset`` of a frame; ProtocolError on garbage."""
    return parse(WatchNotification.decode, buf, offset, "watch event")


@dataclass(frozen=True, slots=True)
class SetWatchesRequest(EmptyReplyRequest):
    """SetWatches: re-arm one-shot watches after a reconnect; the server fires at once
    those whose node changed after ``relative_zxid``."""

    opcode = Op.SET_WATCHES
    relative_zxid: int
    data_watches: Sequence[str]
    exist_watches: Sequence[str]
    child_watches: Sequence[str]

    def encode(self) -> bytes:
        return (
            LONG.pack(self.relative_zxid)
            + write_ustrings(self.data_watches)
            + write_ustrings(self.exist_watches)
            + write_ustrings(self.child_watches)
        )

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SetWatchesRequest, int]:
        """Read the request body at ``offset``."""
        zxid, offset = read_long(buf, offset)
        data, offset = read_ustrings(buf, offset)
        exist, offset = read_ustrings(buf, offset)
        child, offset = read_ustrings(buf, offset)
        return SetWatchesRequest(zxid, data, exist, child), offset


@dataclass(frozen=True, slots=True)
class SetWatches2Request(EmptyReplyRequest):
    """SetWatches2 (3.6+): SetWatches that also restores persistent watches."""

    opcode = Op.SET_WATCHES2
    relative_zxid: int
    data_watches: Sequence[str]
    exist_watches: Sequence[str]
    child_watches: Sequence[str]
    persistent_watches: Sequence[str]
    persistent_recursive_watches: Sequence[str]

    def encode(self) -> bytes:
        return (
            LONG.pack(self.relative_zxid)
            + write_ustrings(self.data_watches)
            + write_ustrings(self.exist_watches)
            + write_ustrings(self.child_watches)
            + write_ustrings(self.persistent_watches)
            + write_ustrings(self.persistent_recursive_watches)
        )

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[SetWatches2Request, int]:
        """Read the request body at ``offset``."""
        zxid, offset = read_long(buf, offset)
        lists: list[list[str]] = []
        for _ in range(5):
            paths, offset = read_ustrings(buf, offset)
            lists.append(paths)
        return SetWatches2Request(zxid, *lists), offset


@dataclass(frozen=True, slots=True)
class RemoveWatchesRequest(EmptyReplyRequest):
    """removeWatches: drop this session's watches of ``type`` (a WatcherType) on ``path``."""

    opcode = Op.REMOVE_WATCHES
    path: str
    type: int

    def encode(self) -> bytes:
        return write_ustring(self.path) + INT.pack(self.type)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[RemoveWatchesRequest, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        wtype, offset = read_int(buf, offset)
        return RemoveWatchesRequest(path, wtype), offset


@dataclass(frozen=True, slots=True)
class AddWatchRequest(EmptyReplyRequest):
    """addWatch (3.6+): a persistent watch on ``path``, recursive per ``mode`` (an
    AddWatchMode)."""

    opcode = Op.ADD_WATCH
    path: str
    mode: int

    def encode(self) -> bytes:
        return write_ustring(self.path) + INT.pack(self.mode)

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[AddWatchRequest, int]:
        """Read the request body at ``offset``."""
        path, offset = read_ustring(buf, offset)
        mode, offset = read_int(buf, offset)
        return AddWatchRequest(path, mode), offset
