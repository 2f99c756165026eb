"""Opcodes, the special xids, and the small enumerations the wire carries (``ZooDefs``)."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["OP_NAMES", "AddWatchMode", "CreateFlag", "Op", "WatcherType", "Xid", "create_mode"]


class Op(IntEnum):
    """Request opcodes (``ZooDefs.OpCode``) of the requests aiocoord sends."""

    CREATE = 1
    DELETE = 2
    EXISTS = 3
    GET_DATA = 4
    SET_DATA = 5
    GET_ACL = 6
    SET_ACL = 7
    GET_CHILDREN = 8
    SYNC = 9
    PING = 11
    GET_CHILDREN2 = 12
    CHECK = 13
    MULTI = 14
    CREATE2 = 15
    RECONFIG = 16
    REMOVE_WATCHES = 18
    CREATE_CONTAINER = 19
    CREATE_TTL = 21
    MULTI_READ = 22
    AUTH = 100
    SET_WATCHES = 101
    SASL = 102
    GET_EPHEMERALS = 103
    GET_ALL_CHILDREN_NUMBER = 104
    SET_WATCHES2 = 105
    ADD_WATCH = 106
    WHO_AM_I = 107
    CLOSE = -11
    #: the type of a failed op's result inside a transaction reply
    ERROR = -1


class Xid(IntEnum):
    """The fixed xids of replies that answer no numbered request."""

    WATCH = -1
    PING = -2
    AUTH = -4
    SET_WATCHES = -8


class CreateFlag(IntEnum):
    """The ``flags`` of a create, as the server reads them (the wire's numbers; the public
    :class:`aiocoord.CreateMode` names the node kinds a recipe makes)."""

    PERSISTENT = 0
    EPHEMERAL = 1
    PERSISTENT_SEQUENTIAL = 2
    EPHEMERAL_SEQUENTIAL = 3
    CONTAINER = 4
    PERSISTENT_WITH_TTL = 5
    PERSISTENT_SEQUENTIAL_WITH_TTL = 6


class AddWatchMode(IntEnum):
    """The ``mode`` of an addWatch (3.6+)."""

    PERSISTENT = 0
    PERSISTENT_RECURSIVE = 1


class WatcherType(IntEnum):
    """The ``type`` of a removeWatches."""

    CHILDREN = 1
    DATA = 2
    ANY = 3


#: The client call each opcode serves, for errors and counters.
OP_NAMES: dict[int, str] = {
    Op.CREATE: "create",
    Op.DELETE: "delete",
    Op.EXISTS: "exists",
    Op.GET_DATA: "get",
    Op.SET_DATA: "set",
    Op.GET_ACL: "get_acl",
    Op.SET_ACL: "set_acl",
    Op.GET_CHILDREN: "children",
    Op.SYNC: "sync",
    Op.PING: "ping",
    Op.GET_CHILDREN2: "children",
    Op.CHECK: "check",
    Op.MULTI: "transaction",
    Op.CREATE2: "create",
    Op.RECONFIG: "reconfig",
    Op.REMOVE_WATCHES: "remove_watches",
    Op.CREATE_CONTAINER: "create",
    Op.CREATE_TTL: "create",
    Op.MULTI_READ: "get_many",
    Op.AUTH: "add_auth",
    Op.SET_WATCHES: "set_watches",
    Op.SASL: "sasl",
    Op.GET_EPHEMERALS: "get_ephemerals",
    Op.GET_ALL_CHILDREN_NUMBER: "count_descendants",
    Op.SET_WATCHES2: "set_watches",
    Op.ADD_WATCH: "add_watch",
    Op.WHO_AM_I: "whoami",
    Op.CLOSE: "close",
}


def create_mode(ephemeral: bool, sequential: bool, container: bool, ttl_ms: int | None) -> int:
    """The wire flags of a create of this kind."""
    if container:
        return CreateFlag.CONTAINER
    if ttl_ms is not None:
        return (
            CreateFlag.PERSISTENT_SEQUENTIAL_WITH_TTL
            if sequential
            else CreateFlag.PERSISTENT_WITH_TTL
        )
    return (1 if ephemeral else 0) | (2 if sequential else 0)
