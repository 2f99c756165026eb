"""The one exception hierarchy of aiocoord, rooted at :class:`CoordinationError`.

Server-reported failures are :class:`ZooKeeperError` subclasses, one per ZooKeeper error code
that users meet, each carrying the ``path`` and ``op`` it concerned. Bad input is refused
before anything is sent, with :class:`BadArgumentsError` (also a ``ValueError``) or
:class:`InvalidTypeError` (also a ``TypeError``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import ClassVar, TypeVar

__all__ = [
    "APIError",
    "AuthFailedError",
    "BadArgumentsError",
    "BadVersionError",
    "BarrierError",
    "CacheError",
    "ClientClosedError",
    "CompressedDataError",
    "ConnectionLossError",
    "CoordinationError",
    "CorruptedValueError",
    "DataInconsistencyError",
    "DataTooLargeError",
    "DiscoveryError",
    "EphemeralOnLocalSessionError",
    "FourLetterWordError",
    "HistoryError",
    "InstanceFormatError",
    "InvalidACLError",
    "InvalidCallbackError",
    "InvalidPathError",
    "InvalidTypeError",
    "LeadershipLostError",
    "LeaseDataError",
    "LockError",
    "LockLostError",
    "LockNotOwnedError",
    "LockUpgradeError",
    "MarshallingError",
    "MaxLeasesMismatchError",
    "MigrationChangedError",
    "MigrationError",
    "MissingDependencyError",
    "MixedClocksError",
    "MixedLayoutWarning",
    "ModelDecodeError",
    "ModelEncodeError",
    "ModelError",
    "NewConfigNoQuorumError",
    "NoAuthError",
    "NoChildrenForEphemeralsError",
    "NoNodeError",
    "NoServersError",
    "NoWatcherError",
    "NodeExistsError",
    "NotEmptyError",
    "NotReadOnlyError",
    "NotSentError",
    "OperationTimeoutError",
    "PartitionFailedError",
    "PortInUseError",
    "ProtocolError",
    "QueueEmptyError",
    "QuotaExceededError",
    "ReconfigDisabledError",
    "ReconfigInProgressError",
    "RequestTimeoutError",
    "RuntimeInconsistencyError",
    "SchemaViolationError",
    "ServerBadArgumentsError",
    "ServerNotReadyError",
    "ServerSetupError",
    "SessionClosedRequireSaslError",
    "SessionExpiredError",
    "SessionMovedError",
    "SystemZooKeeperError",
    "ThrottledError",
    "TimeoutError",
    "TransactionFailedError",
    "UnimplementedError",
    "UnmatchedCompletionError",
    "UnknownOperationError",
    "UnknownServerError",
    "UnknownSessionError",
    "ZooKeeperError",
    "ZooKeeperNotFoundError",
    "error_for_code",
]


class CoordinationError(Exception):
    """Root of every exception aiocoord raises on purpose."""


# --- input refused before anything is sent -------------------------------------------------


class BadArgumentsError(CoordinationError, ValueError):
    """An argument has the right type but a value ZooKeeper would refuse (nothing was sent)."""


class InvalidPathError(BadArgumentsError):
    """A znode path breaks ZooKeeper's path rules (nothing was sent)."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"invalid znode path {path!r}: {reason}")
        #: the path refused, exactly as given
        self.path: object = path
        #: which rule it breaks (``"path must start with '/'"``, ...)
        self.reason: str = reason


class DataTooLargeError(BadArgumentsError):
    """Node data (or a whole request) is larger than a server accepts (nothing was sent).

    Data is refused above 1 MiB; a request is refused when, with its path, ACL and framing,
    it exceeds the server's default ``jute.maxbuffer`` of 1 MiB - 1 byte.
    """

    def __init__(self, size: int, limit: int, path: str | None = None) -> None:
        where = f" for {path}" if path else ""
        super().__init__(
            f"data of {size} bytes{where} exceeds the {limit}-byte limit; "
            "store large values elsewhere and keep a reference in ZooKeeper"
        )
        #: the size refused, in bytes: of the data, or of the whole request
        self.size: int = size
        #: the largest size accepted, in bytes
        self.limit: int = limit
        #: the node the data or request was for; None where none was named
        self.path: str | None = path


class InvalidTypeError(CoordinationError, TypeError):
    """An argument has the wrong type (nothing was sent)."""


# --- client-side conditions ---------------------------------------------------------------


class ClientClosedError(CoordinationError):
    """The client was closed; open a new one with :func:`aiocoord.connect`."""


class NoServersError(CoordinationError):
    """No server in the connect string could be reached."""


class CompressedDataError(CoordinationError):
    """A node read with ``compressed=True`` does not hold gzip data (it was written
    uncompressed, or by something else); its data is left as it is. ``path`` names it."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(f"{message} (path={path})" if path else message)
        #: the node read; None where the data was decompressed without naming one
        self.path: str | None = path


class FourLetterWordError(CoordinationError):
    """The server answered a four-letter word (``client.command("mntr")``) without running
    it: the word is not in its ``4lw.commands.whitelist`` (add it in zoo.cfg), or the server
    is not serving (no quorum, or still starting)."""


class MissingDependencyError(CoordinationError, ImportError):
    """An optional package a feature needs is not installed (nothing was sent); the message
    names the ``pip install`` command (``pip install 'aiocoord[kerberos]'`` for Kerberos)."""


class TimeoutError(CoordinationError, builtins.TimeoutError):  # shadows the builtin
    """A waiting call's ``timeout=`` passed before what it waited for happened.

    Also the builtin :class:`TimeoutError` (and so ``asyncio.TimeoutError``, the same class
    since Python 3.11): handlers written for either catch it. Nothing the call made is left
    behind (a lock waiter's node, say). Where Curator's and kazoo's users expect a plain
    answer, a non-blocking form says no without raising (``lock.acquire(blocking=False)``).
    """


class ProtocolError(CoordinationError):
    """A reply could not be decoded; the connection that carried it was dropped."""


class TransactionFailedError(CoordinationError):
    """A transaction was rejected as a whole; ``failed_op`` says which op and ``cause`` why."""

    def __init__(self, failed_index: int, failed_op: str, cause: ZooKeeperError) -> None:
        super().__init__(f"transaction op #{failed_index} ({failed_op}) failed: {cause}")
        #: the position of the failing op in the transaction, from 0
        self.failed_index: int = failed_index
        #: the failing op and its path, as ``"create /a/b"``
        self.failed_op: str = failed_op
        #: the error the server gave for that op (a :class:`NodeExistsError`, ...); it names
        #: the op and path too
        self.cause: ZooKeeperError = cause


# --- errors the server reports --------------------------------------------------------------


class ZooKeeperError(CoordinationError):
    """A failure reported by ZooKeeper (or, for connection loss, by the session manager)."""

    #: ZooKeeper's error code for this class (``KeeperException.Code``: -101 for
    #: :class:`NoNodeError`); 0 on ZooKeeperError itself
    code: ClassVar[int] = 0

    def __init__(
        self, message: str = "", *, path: str | None = None, op: str | None = None
    ) -> None:
        parts = [message or self.__class__.__doc__ or self.__class__.__name__]
        if op:
            parts.append(f"op={op}")
        if path is not None:
            parts.append(f"path={path}")
        super().__init__(" ".join(p.strip() for p in parts))
        #: the path of the failed request, as the caller named it (relative to the client's
        #: chroot); None for a request that names none
        self.path: str | None = path
        #: the kind of the failed request (``"create"``, ``"get"``, ``"sasl"``...); None if
        #: not known
        self.op: str | None = op


_BY_CODE: dict[int, type[ZooKeeperError]] = {}


_E = TypeVar("_E", bound="type[ZooKeeperError]")


def _code(code: int) -> Callable[[_E], _E]:
    def register(cls: _E) -> _E:
        cls.code = code
        _BY_CODE[code] = cls
        return cls

    return register


class UnknownServerError(ZooKeeperError):
    """The server answered with an error code aiocoord does not know."""


@_code(-1)
class SystemZooKeeperError(ZooKeeperError):
    """The server reported a system error."""


@_code(-2)
class RuntimeInconsistencyError(ZooKeeperError):
    """The server found a runtime inconsistency."""


@_code(-3)
class DataInconsistencyError(ZooKeeperError):
    """The server found a data inconsistency."""


@_code(-4)
class ConnectionLossError(ZooKeeperError):
    """The connection was lost before the reply came; the op may or may not have been applied."""


class NotSentError(ConnectionLossError):
    """The connection was lost before the request was written: it never left this process.

    Unlike a plain :class:`ConnectionLossError`, the op was certainly not applied, so it is safe
    to repeat even when it is not idempotent (a sequential create, say).
    """


@_code(-5)
class MarshallingError(ZooKeeperError):
    """The server could not decode the request."""


@_code(-6)
class UnimplementedError(ZooKeeperError):
    """The server does not implement this operation (too old, or a feature switched off)."""


@_code(-7)
class OperationTimeoutError(ZooKeeperError):
    """The operation timed out."""


@_code(-8)
class ServerBadArgumentsError(ZooKeeperError):
    """The server refused the arguments."""


@_code(-12)
class UnknownSessionError(ZooKeeperError):
    """The server does not know this session."""


@_code(-13)
class NewConfigNoQuorumError(ZooKeeperError):
    """Reconfiguration has no quorum."""


@_code(-14)
class ReconfigInProgressError(ZooKeeperError):
    """Another reconfiguration is in progress."""


@_code(-100)
class APIError(ZooKeeperError):
    """The server reported an API error."""


@_code(-101)
class NoNodeError(ZooKeeperError):
    """The node does not exist."""


@_code(-102)
class NoAuthError(ZooKeeperError):
    """Not authorised by the node's ACL; add the right credentials with ``add_auth``."""


@_code(-103)
class BadVersionError(ZooKeeperError):
    """The node's version differs from the one given (someone else changed it)."""


@_code(-108)
class NoChildrenForEphemeralsError(ZooKeeperError):
    """Ephemeral nodes cannot have children."""


@_code(-110)
class NodeExistsError(ZooKeeperError):
    """The node already exists."""


@_code(-111)
class NotEmptyError(ZooKeeperError):
    """The node has children; delete with ``recursive=True`` to remove them too."""


@_code(-112)
class SessionExpiredError(ZooKeeperError):
    """The session expired: its ephemeral nodes and watches are gone."""


@_code(-113)
class InvalidCallbackError(ZooKeeperError):
    """The server reported an invalid callback."""


@_code(-114)
class InvalidACLError(ZooKeeperError):
    """The ACL is invalid (for example empty, or an unknown scheme)."""


@_code(-115)
class AuthFailedError(ZooKeeperError):
    """Authentication failed; the session is unusable."""


@_code(-118)
class SessionMovedError(ZooKeeperError):
    """The session moved to another server."""


@_code(-119)
class NotReadOnlyError(ZooKeeperError):
    """A write was sent to a read-only server."""


@_code(-120)
class EphemeralOnLocalSessionError(ZooKeeperError):
    """Ephemeral nodes cannot be created on a local session."""


@_code(-121)
class NoWatcherError(ZooKeeperError):
    """No such watch is set on the server."""


@_code(-122)
class RequestTimeoutError(ZooKeeperError):
    """The request timed out on the server."""


@_code(-123)
class ReconfigDisabledError(ZooKeeperError):
    """Dynamic reconfiguration is disabled on the server."""


@_code(-124)
class SessionClosedRequireSaslError(ZooKeeperError):
    """The server requires SASL authentication."""


@_code(-125)
class QuotaExceededError(ZooKeeperError):
    """A quota was exceeded."""


@_code(-127)
class ThrottledError(ZooKeeperError):
    """The server throttled the operation; retry later."""


def error_for_code(code: int, *, path: str | None = None, op: str | None = None) -> ZooKeeperError:
    """Build the exception for a ZooKeeper reply error code."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return UnknownServerError(f"unknown error code {code}", path=path, op=op)
    return cls(path=path, op=op)


# --- recipes ----------------------------------------------------------------------------------


class LockError(CoordinationError):
    """Base of lock-recipe errors."""


class LockNotOwnedError(LockError):
    """``release()`` was called by a task that does not hold the lock."""


class LockLostError(LockError):
    """The lock was lost while held (session lost, or suspended under the strict policy)."""


class MixedLayoutWarning(CoordinationError, UserWarning):
    """A recipe saw on its path a contender of another peer's layout that may not see it
    (a kazoo node on a lock held in Curator's layout, say): two holders are possible unless
    that peer is configured for it. ``docs/from-kazoo.md`` says which side must be set how;
    ``warnings.simplefilter("error", MixedLayoutWarning)`` turns it into an error."""

    def __init__(self, path: str, node: str, layout: str, advice: str) -> None:
        # The node is left out of the text, so that the default filter warns once per path.
        super().__init__(
            f"{path} has contenders of another layout than this recipe's ({layout}), which "
            f"may not see this recipe's nodes: {advice}"
        )
        #: the recipe's path, whose children were listed
        self.path: str = path
        #: the name of the first contender found in the other layout (a child of ``path``)
        self.node: str = node


class LockUpgradeError(LockError):
    """A read-lock holder asked for the write lock; that would deadlock, so it is refused."""


# --- recipes' and models' own errors (one hierarchy, one module: each recipe re-exports its own)


class BarrierError(CoordinationError):
    """A double barrier was used out of order, or its participant node vanished while the
    session that made it was still alive (someone deleted it)."""


class CacheError(CoordinationError, RuntimeError):
    """A cache was used out of order: started twice, or used after it was closed."""


class CorruptedValueError(CoordinationError, ValueError):
    """A counter node holds data that is not a value of the expected form: a big-endian
    integer of ``width`` bytes, or (``width`` 0) kazoo's ASCII text of an integer."""

    def __init__(self, path: str, data: bytes, width: int) -> None:
        form = (
            f"a {width}-byte big-endian integer"
            if width
            else "an integer in kazoo's text form (a float or other value is not read as one)"
        )
        if not data and width == 4:  # SharedCount's int32
            # The one empty SharedCount node a peer makes on purpose; Curator's SharedCount
            # cannot read it either (ByteBuffer.getInt on no bytes), so it is not read as 0.
            why = (
                "kazoo's Counter(path, support_curator=True) makes its node empty and reads "
                "that as its default until its first change, which Curator's SharedCount "
                "cannot read either: write a value once (SharedCount.set(), or a change "
                "through kazoo's counter), or create the node through SharedCount first"
            )
        else:
            why = "was it written by something else?"
        super().__init__(
            f"counter node {path} holds {len(data)} bytes ({data[:16]!r}), not {form}; {why}"
        )
        #: the counter node's path (under the client's chroot)
        self.path: str = path
        #: the node's data as read, which is no value of the counter's form
        self.data: bytes = data


class LeadershipLostError(CoordinationError):
    """Leadership ended while the body of ``async with election.leadership():`` ran; the
    body was cancelled (or had finished, if it ended before the cancellation reached it)."""


class MaxLeasesMismatchError(CoordinationError, ValueError):
    """A semaphore of kazoo's layout stores another ``max_leases`` on its node than this
    object was given (kazoo refuses the same with a ValueError); nothing was written. Every
    process must use one number: delete the node to change it, as kazoo's docs say."""

    def __init__(self, path: str, stored: int, given: int) -> None:
        super().__init__(
            f"the semaphore {path} stores max_leases {stored}, this object was given {given}; "
            "every process on the path must use one number (delete the node to change it)"
        )
        #: the semaphore's path, whose node stores ``max_leases``
        self.path: str = path
        #: the ``max_leases`` stored on the node (by the process that made it)
        self.stored: int = stored
        #: the ``max_leases`` this object was given
        self.given: int = given


class PartitionFailedError(CoordinationError):
    """A :class:`~aiocoord.SetPartitioner` reached FAILURE; ``__cause__`` is the error behind it, if
    any (the session's end, a lost item lock, an error of ``partition_func``)."""


class QueueEmptyError(CoordinationError):
    """The queue had no item (``element()``/``remove()`` on an empty :class:`~aiocoord.SimpleQueue`;
    Java's ``NoSuchElementException``)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"the queue {path} is empty; use poll() or take() to wait for an item")
        #: the path of the queue that was empty
        self.path: str = path


class LeaseDataError(CoordinationError, ValueError):
    """A lease's holder node holds data that is not a lease record (someone else wrote it)."""

    def __init__(self, path: str, data: bytes, why: str) -> None:
        super().__init__(
            f"lease node {path} holds {data[:64]!r}, not a lease record ({why}); "
            "delete it if nothing else uses that path"
        )
        #: the holder node's path
        self.path: str = path
        #: the data found on it
        self.data: bytes = data


class MigrationError(CoordinationError):
    """A migration set does not fit what its records say was applied (Curator's
    ``MigrationException``); nothing was written."""

    def __init__(self, set_id: str, message: str) -> None:
        super().__init__(f"migration set {set_id!r}: {message}")
        #: the id of the migration set that does not fit
        self.set_id: str = set_id


class MigrationChangedError(MigrationError):
    """A migration that was applied has other operations now than when it was (Curator's
    "Metadata mismatch"), or the set lost migrations that were applied. Applied migrations
    are history: add a new migration instead of changing an old one."""


class DiscoveryError(CoordinationError, RuntimeError):
    """Service discovery used out of order: an update of an instance that is not registered
    here, or a discovery, cache or provider used after it was closed."""


class InstanceFormatError(CoordinationError, ValueError):
    """A node's data is not a service instance in Curator's JSON format (or a payload given
    to :class:`~aiocoord.recipes.discovery.ServiceInstance` is not a JSON value)."""


class ModelError(CoordinationError, ValueError):
    """The base of the typed-model errors; ``path`` is the node's, when there is one."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message if path is None else f"{path}: {message}")
        #: the path of the node concerned (under the client's chroot); None when raised by a
        #: serializer called on its own (a model's operations always give the path)
        self.path: str | None = path


class ModelDecodeError(ModelError):
    """A node's data is not a value of the model's type.

    ``data`` holds the bytes as read (the node is left as it is: fix or delete it, or read it
    with the plain client); ``__cause__`` is the serializer's own error, when it raised one.
    """

    def __init__(self, message: str, *, data: bytes, path: str | None = None) -> None:
        super().__init__(message, path=path)
        #: the node's bytes as read, which are no value of the model's type
        self.data: bytes = data


class ModelEncodeError(ModelError, BadArgumentsError):
    """A value cannot be written with the model's serializer (wrong type, a field that JSON
    cannot carry); nothing was sent. A :class:`~aiocoord.BadArgumentsError` too, as every
    input refused before anything is sent."""


class SchemaViolationError(ModelError):
    """A write refused by a :class:`~aiocoord.modeled.SchemaSet` before it was sent:
    ``schema`` is the rule broken (its ``name``, or its pattern)."""

    def __init__(self, message: str, *, schema: str, path: str | None = None) -> None:
        super().__init__(message, path=path)
        #: the rule broken: the governing :class:`~aiocoord.modeled.Schema`'s ``name`` (or
        #: its pattern), or ``"<none>"`` for a path no schema of a strict set governs
        self.schema: str = schema


# --- test servers -----------------------------------------------------------------------------


class ServerSetupError(CoordinationError):
    """A test ZooKeeper server could not be set up."""


class ZooKeeperNotFoundError(ServerSetupError):
    """No ZooKeeper distribution was found; the message says how to install one."""


class PortInUseError(ServerSetupError):
    """A port asked for is already in use."""


class ServerNotReadyError(ServerSetupError):
    """The server never became ready; the message holds the tail of its log."""


# --- recorded histories (aiocoord.testing.history) --------------------------------------------


class HistoryError(CoordinationError, ValueError):
    """A recorded history the linearizability checker cannot judge: bad input, reported
    instead of a verdict (:mod:`aiocoord.testing.history`). ``operation`` is the operation
    (or event) at fault, when there is one."""

    def __init__(self, message: str, *, operation: object = None) -> None:
        super().__init__(message)
        #: the operation (an ``aiocoord.testing.history.Operation``) or event (a ``Call`` or
        #: ``Completion``) at fault; None when the fault is the history's as a whole
        self.operation: object = operation


class UnmatchedCompletionError(HistoryError):
    """A completion without its call: an operation completed that was never called, or
    completed a second time."""


class UnknownOperationError(HistoryError):
    """An operation the model does not know: a kind it has no step for, or an argument or a
    result of a shape its step cannot read."""


class MixedClocksError(HistoryError):
    """A history from two clocks: histories merged from clocks that differ, or an operation
    that returned before it was called."""
