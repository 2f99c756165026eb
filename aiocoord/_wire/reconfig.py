"""reconfig (ZooKeeper 3.5+): a change of the ensemble's membership, answered like a getData
of ``/zookeeper/config`` (the new configuration's text and the node's stat)."""

from __future__ import annotations

from dataclasses import dataclass

from aiocoord._wire.framing import Request
from aiocoord._wire.jute import INT, LONG, read_long, read_ustring, write_ustring
from aiocoord._wire.opcodes import Op
from aiocoord._wire.reads import GetDataResponse

__all__ = ["ReconfigRequest"]

_NULL = INT.pack(-1)


def _nullable(value: str | None) -> bytes:
    # The server tells "not given" (Jute null) from "given": an incremental change leaves
    # newMembers null, a non-incremental one leaves joining and leaving null.
    return _NULL if value is None else write_ustring(value)


def _read_nullable(buf: bytes, offset: int) -> tuple[str | None, int]:
    if INT.unpack_from(buf, offset)[0] == -1:
        return None, offset + 4
    return read_ustring(buf, offset)


@dataclass(frozen=True, slots=True)
class ReconfigRequest(Request[GetDataResponse]):
    """reconfig: ``joining`` and ``leaving`` (incremental) or ``new_members`` (the whole new
    membership), each a comma-separated list or None; ``config_id`` the version the change
    applies to (-1: whatever is current)."""

    opcode = Op.RECONFIG

    joining: str | None
    leaving: str | None
    new_members: str | None
    config_id: int = -1

    def encode(self) -> bytes:
        return (
            _nullable(self.joining)
            + _nullable(self.leaving)
            + _nullable(self.new_members)
            + LONG.pack(self.config_id)
        )

    @classmethod
    def decode(cls, buf: bytes, offset: int) -> tuple[ReconfigRequest, int]:
        """Read the request body at ``offset``."""
        joining, offset = _read_nullable(buf, offset)
        leaving, offset = _read_nullable(buf, offset)
        new_members, offset = _read_nullable(buf, offset)
        config_id, offset = read_long(buf, offset)
        return cls(joining, leaving, new_members, config_id), offset

    def decode_reply(self, buf: bytes, offset: int) -> GetDataResponse:
        return GetDataResponse.decode(buf, offset)[0]
