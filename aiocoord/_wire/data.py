"""The data records requests and replies carry: a node's :class:`Stat` and an :class:`ACL`
entry (Jute's ``ACL`` with its ``Id`` inlined). Both are public as ``aiocoord.Stat`` and
``aiocoord.ACL``."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from aiocoord._wire.jute import INT, read_ustring, read_vector_size

__all__ = ["ACL", "OPEN_ACL", "STAT", "Stat", "read_acls", "write_acls"]

#: A Stat's layout: czxid, mzxid, ctime, mtime, version, cversion, aversion,
#: ephemeralOwner, dataLength, numChildren, pzxid.
STAT = struct.Struct("!qqqqiiiqiiq")
# an ACL entry's perms and the length of its scheme
_PERMS_SCHEME = struct.Struct("!ii")


@dataclass(frozen=True, slots=True)
class Stat:
    """A znode's metadata, as the server reports it."""

    #: the zxid of the transaction that created the node
    czxid: int
    #: the zxid of the transaction that last set the node's data (``czxid`` if never set)
    mzxid: int
    #: when the node was created: milliseconds since the epoch, by the leader's clock
    ctime: int
    #: when the node's data was last set: milliseconds since the epoch (``ctime`` if never set)
    mtime: int
    #: the data version: how many times the data was set (0 at creation); the ``version=``
    #: that :meth:`~aiocoord.Client.set` and :meth:`~aiocoord.Client.delete` check
    version: int
    #: the child version: how many times a child was created or deleted
    cversion: int
    #: the ACL version: how many times the node's ACL was set
    aversion: int
    #: the session id of the owner if the node is ephemeral, 0 otherwise
    ephemeral_owner: int
    #: the length of the node's data, in bytes
    data_length: int
    #: how many children the node has
    num_children: int
    #: the zxid of the transaction that last created or deleted a child of the node
    pzxid: int

    @property
    def is_ephemeral(self) -> bool:
        """True when the node is ephemeral (owned by a session)."""
        return self.ephemeral_owner != 0

    def encode(self) -> bytes:
        """The Jute encoding."""
        return STAT.pack(
            self.czxid,
            self.mzxid,
            self.ctime,
            self.mtime,
            self.version,
            self.cversion,
            self.aversion,
            self.ephemeral_owner,
            self.data_length,
            self.num_children,
            self.pzxid,
        )

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[Stat, int]:
        """Read one at ``offset``; returns it and the offset after it."""
        return Stat(*STAT.unpack_from(buf, offset)), offset + STAT.size


@dataclass(frozen=True, slots=True)
class ACL:
    """One ACL entry: permission bits for an identity (``scheme``, ``id``)."""

    #: the permissions granted: the bits below, OR-ed together (``ACL.READ | ACL.WRITE``)
    perms: int
    #: the authentication scheme the identity belongs to: ``"world"``, ``"auth"``,
    #: ``"digest"``, ``"ip"``, ``"sasl"``, ``"x509"``...
    scheme: str
    #: the identity within the scheme: ``"anyone"`` for ``world``, ``"user:hash"`` for
    #: ``digest``, an address or a CIDR range for ``ip``...
    id: str

    #: permission to read the node's data and list its children
    READ: ClassVar[int] = 1
    #: permission to set the node's data
    WRITE: ClassVar[int] = 2
    #: permission to create children
    CREATE: ClassVar[int] = 4
    #: permission to delete children
    DELETE: ClassVar[int] = 8
    #: permission to set the node's ACL
    ADMIN: ClassVar[int] = 16
    #: all five permissions
    ALL: ClassVar[int] = 31

    def encode(self) -> bytes:
        """The Jute encoding: perms, then the Id (scheme, id)."""
        scheme = self.scheme.encode()
        ident = self.id.encode()
        return _PERMS_SCHEME.pack(self.perms, len(scheme)) + scheme + INT.pack(len(ident)) + ident

    @staticmethod
    def decode(buf: bytes, offset: int) -> tuple[ACL, int]:
        """Read one at ``offset``; returns it and the offset after it."""
        (perms,) = INT.unpack_from(buf, offset)
        scheme, offset = read_ustring(buf, offset + 4)
        ident, offset = read_ustring(buf, offset)
        return ACL(perms, scheme, ident), offset


#: ZooKeeper's OPEN_ACL_UNSAFE (public as ``aiocoord.acl.OPEN_ACL_UNSAFE``), what a create
#: given no ACL sends.
OPEN_ACL: tuple[ACL, ...] = (ACL(ACL.ALL, "world", "anyone"),)


def write_acls(acls: Sequence[ACL]) -> bytes:
    """A Jute vector of ACL entries."""
    if acls is OPEN_ACL:
        return _OPEN_ACL_WIRE  # a tuple of a frozen entry: its encoding never changes
    return INT.pack(len(acls)) + b"".join([acl.encode() for acl in acls])


_OPEN_ACL_WIRE = INT.pack(1) + OPEN_ACL[0].encode()


def read_acls(buf: bytes, offset: int) -> tuple[list[ACL], int]:
    """A vector of ACL entries."""
    count, offset = read_vector_size(buf, offset, 12)
    out: list[ACL] = []
    for _ in range(count):
        acl, offset = ACL.decode(buf, offset)
        out.append(acl)
    return out, offset
