"""One request of every opcode aiocoord sends, for tests that go through all of them."""

from __future__ import annotations

from typing import Any

from aiocoord._wire.auth import AuthRequest, SaslRequest, WhoAmIRequest
from aiocoord._wire.data import ACL
from aiocoord._wire.framing import Request
from aiocoord._wire.handshake import CloseRequest, PingRequest
from aiocoord._wire.multi import MultiReadRequest, MultiRequest
from aiocoord._wire.opcodes import AddWatchMode, CreateFlag, Op, WatcherType
from aiocoord._wire.reads import (
    ExistsRequest,
    GetACLRequest,
    GetAllChildrenNumberRequest,
    GetChildren2Request,
    GetChildrenRequest,
    GetDataRequest,
    GetEphemeralsRequest,
    SyncRequest,
)
from aiocoord._wire.reconfig import ReconfigRequest
from aiocoord._wire.watches import (
    AddWatchRequest,
    RemoveWatchesRequest,
    SetWatches2Request,
    SetWatchesRequest,
)
from aiocoord._wire.writes import (
    CheckVersionRequest,
    Create2Request,
    CreateContainerRequest,
    CreateRequest,
    CreateTTLRequest,
    DeleteRequest,
    SetACLRequest,
    SetDataRequest,
)

OPEN = [ACL(ACL.ALL, "world", "anyone")]

#: A request of each opcode, by opcode.
SAMPLES: dict[int, Request[Any]] = {
    Op.CREATE: CreateRequest("/a", b"x", OPEN, CreateFlag.EPHEMERAL),
    Op.DELETE: DeleteRequest("/a", 3),
    Op.EXISTS: ExistsRequest("/a", True),
    Op.GET_DATA: GetDataRequest("/a", False),
    Op.SET_DATA: SetDataRequest("/a", b"y", 2),
    Op.GET_ACL: GetACLRequest("/a"),
    Op.SET_ACL: SetACLRequest("/a", OPEN, 1),
    Op.GET_CHILDREN: GetChildrenRequest("/a", True),
    Op.SYNC: SyncRequest("/a"),
    Op.PING: PingRequest(),
    Op.GET_CHILDREN2: GetChildren2Request("/a", False),
    Op.CHECK: CheckVersionRequest("/a", 4),
    Op.MULTI: MultiRequest(
        [
            Create2Request("/m", b"", OPEN, CreateFlag.PERSISTENT_SEQUENTIAL),
            SetDataRequest("/m", b"z", -1),
            CheckVersionRequest("/m", 0),
            DeleteRequest("/m", -1),
        ]
    ),
    Op.MULTI_READ: MultiReadRequest([GetDataRequest("/a", False), GetChildrenRequest("/b", False)]),
    Op.CREATE2: Create2Request("/a", b"x", OPEN, CreateFlag.PERSISTENT),
    Op.RECONFIG: ReconfigRequest("server.4=h:1:2;3", None, None, 7),
    Op.REMOVE_WATCHES: RemoveWatchesRequest("/a", WatcherType.ANY),
    Op.CREATE_CONTAINER: CreateContainerRequest("/c", b"", OPEN, CreateFlag.CONTAINER),
    Op.CREATE_TTL: CreateTTLRequest("/t", b"", OPEN, CreateFlag.PERSISTENT_WITH_TTL, 5000),
    Op.AUTH: AuthRequest(0, "digest", b"user:secret"),
    Op.SET_WATCHES: SetWatchesRequest(7, ["/d"], ["/e"], ["/c"]),
    Op.SASL: SaslRequest(b"token"),
    Op.GET_EPHEMERALS: GetEphemeralsRequest("/"),
    Op.GET_ALL_CHILDREN_NUMBER: GetAllChildrenNumberRequest("/a"),
    Op.SET_WATCHES2: SetWatches2Request(7, ["/d"], [], ["/c"], ["/p"], ["/r"]),
    Op.ADD_WATCH: AddWatchRequest("/a", AddWatchMode.PERSISTENT_RECURSIVE),
    Op.WHO_AM_I: WhoAmIRequest(),
    Op.CLOSE: CloseRequest(),
}
