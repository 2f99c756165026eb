"""Transactions (ZooKeeper's ``multi``): ops applied all or none, and their results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiocoord._validation import (
    MAX_REQUEST,
    MAX_TTL_MS,
    validate_duration_ms,
    validate_flag,
    validate_path,
    validate_version,
)
from aiocoord._wire.data import ACL, Stat
from aiocoord._wire.multi import MultiRequest, TxnOp
from aiocoord._wire.opcodes import create_mode
from aiocoord._wire.writes import (
    CheckVersionRequest,
    Create2Request,
    Create2Response,
    CreateContainerRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    SetDataRequest,
    SetDataResponse,
)
from aiocoord.compression import _payload
from aiocoord.errors import (
    BadArgumentsError,
    DataTooLargeError,
    ProtocolError,
    SessionExpiredError,
    TransactionFailedError,
    error_for_code,
)

if TYPE_CHECKING:
    from aiocoord._client.requests import Requests

__all__ = ["OpResult", "Transaction"]

#: What a multi adds per op, and for its end marker: the op's type, a done flag, an error.
_OP_HEADER = 4 + 1 + 4


@dataclass(frozen=True, slots=True)
class OpResult:
    """The result of one transaction op: ``path`` (for a create, the node's actual name) and
    ``stat`` where the server returns one: always for a set and a container create; for a
    plain create only from ZooKeeper 3.9 on. Earlier servers answer a create inside a
    transaction with the path alone however it is sent (ZOOKEEPER-4026), so there ``stat``
    is None; read it with :meth:`Client.exists` if you need it (a later read, not part of
    the transaction). None for a delete and a check."""

    #: the op's kind: ``"create"``, ``"set"``, ``"delete"`` or ``"check"``
    op: str
    #: the node's path, relative to the client's chroot; for a create, the name the node got
    #: (with its sequence number, for a sequential one)
    path: str
    #: the node's Stat after the op, where the server returns one (see above); else None
    stat: Stat | None = None


class Transaction:
    """Ops applied atomically: all succeed or none does.

    An op that makes the whole request larger than a server reads is refused as it is added
    (DataTooLargeError), before anything is sent."""

    def __init__(self, requests: Requests) -> None:
        """Made by :meth:`Client.transaction <aiocoord.Client.transaction>`."""
        self._requests = requests
        self._ops: list[tuple[str, str, TxnOp]] = []
        #: the request's size so far: its xid and opcode, and the multi's end marker
        self._size = 8 + _OP_HEADER

    def _add(self, name: str, path: str, req: TxnOp) -> Transaction:
        # Refused as it is added, not when the whole is sent: the connection would refuse a
        # multi over the server's request limit too, but only after whatever its caller wrote
        # ahead of it (a recipe builds its transaction before it writes anything else).
        size = self._size + _OP_HEADER + len(req.encode())
        if size > MAX_REQUEST:
            raise DataTooLargeError(size, MAX_REQUEST, path)
        self._size = size
        self._ops.append((name, path, req))
        return self

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        container: bool = False,
        ttl: float | None = None,
        acl: Sequence[ACL] | None = None,
        compressed: bool = False,
    ) -> Transaction:
        """Add a create (returns self, so calls chain); the options are
        :meth:`Client.create`'s (``ttl``: a persistent node the server removes once it
        has gone that many seconds without a change or a child; ``compressed``: the data
        gzip-compressed as Curator's ``.compressed()`` stores it)."""
        validate_path(path, sequential=sequential)
        validate_flag(compressed, "compressed")
        payload = _payload(data, path, compressed)
        for flag, name in (
            (ephemeral, "ephemeral"),
            (sequential, "sequential"),
            (container, "container"),
        ):
            validate_flag(flag, name)
        ttl_ms = None if ttl is None else validate_duration_ms(ttl, "ttl", MAX_TTL_MS)
        if ttl_ms is not None and (ephemeral or container):
            raise BadArgumentsError("ttl needs a persistent node, not an ephemeral or container")
        if container and (ephemeral or sequential):
            raise BadArgumentsError("a container node cannot be ephemeral or sequential")
        mode = create_mode(ephemeral, sequential, container, ttl_ms)
        full = self._requests.full(path)
        acls = self._requests.acls_for(path, acl)
        req: TxnOp
        if container:
            req = CreateContainerRequest(path=full, data=payload, acl=acls, flags=mode)
        elif ttl_ms is not None:
            req = CreateTTLRequest(path=full, data=payload, acl=acls, flags=mode, ttl=ttl_ms)
        else:
            req = Create2Request(path=full, data=payload, acl=acls, flags=mode)
        return self._add("create", path, req)

    def delete(self, path: str, version: int = -1) -> Transaction:
        """Add a delete."""
        validate_path(path)
        validate_version(version)
        return self._add(
            "delete", path, DeleteRequest(path=self._requests.full(path), version=version)
        )

    def set(
        self, path: str, data: bytes, version: int = -1, *, compressed: bool = False
    ) -> Transaction:
        """Add a set (``compressed`` as :meth:`create`'s)."""
        validate_path(path)
        validate_flag(compressed, "compressed")
        payload = _payload(data, path, compressed)
        validate_version(version)
        req = SetDataRequest(path=self._requests.full(path), data=payload, version=version)
        return self._add("set", path, req)

    def check(self, path: str, version: int) -> Transaction:
        """Add a check that the node has ``version``."""
        validate_path(path)
        validate_version(version)
        req = CheckVersionRequest(path=self._requests.full(path), version=version)
        return self._add("check", path, req)

    def __len__(self) -> int:
        return len(self._ops)

    async def commit(self) -> list[OpResult]:
        """Apply every op or none; raises TransactionFailedError naming the failing op."""
        if not self._ops:
            return []
        requests = self._requests
        reply = await requests.send(MultiRequest([r for _, _, r in self._ops]))
        results = reply.results
        if any(r.err for r in results):
            for i, r in enumerate(results):
                if r.err not in (0, -2):  # -2: rolled back because another op failed
                    name, path, _ = self._ops[i]
                    cause = error_for_code(r.err, path=path, op=name)
                    if isinstance(cause, SessionExpiredError):
                        # Refused for the session (closing on the server), not for this op:
                        # nothing was applied, and callers handle it as for any request.
                        raise cause
                    raise TransactionFailedError(i, f"{name} {path}", cause)
            raise error_for_code(-2, op="transaction")
        out = []
        for (name, path, _), r in zip(self._ops, results, strict=True):
            match name, r.body:
                case "create", Create2Response(path=created, stat=stat):
                    out.append(OpResult(name, requests.short(created), stat))
                case "create", CreateResponse(path=created):
                    # ZOOKEEPER-4026: before 3.9 the server turns a create2 inside a multi
                    # into a plain create (MultiOperationRecord), and answers with the path
                    out.append(OpResult(name, requests.short(created)))
                case "set", SetDataResponse(stat=stat):
                    out.append(OpResult(name, path, stat))
                case (("delete" | "check"), _):
                    out.append(OpResult(name, path))
                case _:
                    raise ProtocolError(f"transaction reply answers {name} {path} with {r.body!r}")
        return out
