"""A value on one node that every client follows and changes by compare-and-set: Curator's
``SharedValue`` (raw bytes), and the mechanism :class:`~aiocoord.SharedCount` is built on.

**SharedValue** is one node whose data is the value. ``start()`` creates it with the seed if
it does not exist, then a :class:`~aiocoord.recipes.cache.NodeCache` follows it: the value
and its version are always the latest known, and ``changes()`` streams each change.
:meth:`SharedValue.try_set` is Curator's ``trySetValue``: it writes only if the node still
has the version the caller read; :meth:`SharedValue.set` writes whatever the version.

Unlike Curator's, a ``try_set`` whose reply is lost to a connection loss is neither applied
twice nor reported failed after it was applied: it goes in a transaction with an ephemeral
marker child (``<path>/_c_<uuid>-op``, see :mod:`aiocoord.recipes._marker`) that tells, after
the reconnect, whether it was applied. Markers are deleted by the next write, by
:meth:`close`, or with the session.

:class:`_SharedNode` is that mechanism for any value type, given how a value is written as
bytes and read back; :class:`~aiocoord.SharedCount` is it over Curator's 4-byte integer.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aiocoord._client import door
from aiocoord._deadline import within
from aiocoord._validation import validate_data, validate_path, validate_timeout
from aiocoord._wire.data import ACL, Stat
from aiocoord.acl import check_acl
from aiocoord.client import ChildData, Client
from aiocoord.errors import (
    BadArgumentsError,
    BadVersionError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
    TransactionFailedError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._counter_codec import INT32_MAX, CorruptedValueError, check_int
from aiocoord.recipes._marker import MarkedCommit
from aiocoord.recipes._stream import EventSubscription
from aiocoord.recipes.cache import CacheEventType, NodeCache, NodeEvent

__all__ = ["SharedValue", "ValueChange", "ValueChanges", "VersionedValue"]

log = logging.getLogger(__name__)

T = TypeVar("T")
_S = TypeVar("_S", bound="_SharedNode[Any]")


@dataclass(frozen=True, slots=True)
class VersionedValue(Generic[T]):
    """A value with the node version it was read at (pass it to ``try_set``)."""

    #: the value as read
    value: T
    #: the node's data version it was read at (``stat.version``), the ``expected_version``
    #: of a ``try_set``
    version: int


@dataclass(frozen=True, slots=True)
class ValueChange(Generic[T]):
    """One change seen on a :class:`SharedValue`'s (or :class:`~aiocoord.SharedCount`'s)
    stream.

    ``value`` is None when the node was deleted. ``resynced`` marks the event a slow reader
    gets in place of the changes it missed (its value is the current one).
    """

    #: the node's new value; None when the node was deleted
    value: T | None
    #: the node's data version with that value (``stat.version``); -1 when it was deleted
    version: int
    #: True for the one change a reader that fell behind gets in place of those it missed
    #: (its value is the current one)
    resynced: bool = False


class ValueChanges(Generic[T]):
    """A shared value's change stream over its NodeCache's: ``async for change in ...``."""

    def __init__(self, owner: _SharedNode[T], source: EventSubscription[NodeEvent]) -> None:
        self._owner = owner
        self._source = source

    def __aiter__(self) -> ValueChanges[T]:
        return self

    async def __anext__(self) -> ValueChange[T]:
        while True:
            event = await self._source.__anext__()
            change = self._owner._change_of(event)
            if change is not None:
                return change

    async def get(self, timeout: float | None = None) -> ValueChange[T]:
        """The next change; :class:`aiocoord.TimeoutError` after ``timeout`` seconds."""
        return await within(self.__anext__(), validate_timeout(timeout), "no change")

    async def aclose(self) -> None:
        """Stop receiving changes."""
        await self._source.aclose()

    async def __aenter__(self) -> ValueChanges[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _SharedNode(Generic[T]):
    """The mechanism of a followed, compare-and-set value; see the module docstring.
    Subclasses say how a value is written (:meth:`_encode`) and read (:meth:`_decode`)."""

    #: the recipe kind in ``client.stats().recipes``
    _kind = "shared_value"

    def __init__(self, client: Client, path: str, seed: bytes, acl: Sequence[ACL] | None) -> None:
        #: the client whose session reads, writes and follows the node
        self.client: Client = check_client(client)
        #: the value's node (as given, under the client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError(f"a {type(self).__name__} cannot live on the root node")
        #: the ACL of the nodes it creates, parents included (None: the client's
        #: ``acl_provider``, else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        self._seed_data = seed
        self._cache = NodeCache(client, path)
        self._marked = MarkedCommit(client, path, acl=self.acl)
        # The newest write of ours whose event the cache may not have seen yet.
        self._written: ChildData | None = None
        # The last version of the node found unreadable (czxid, mzxid): logged and counted
        # once, however many streams and waits look at it.
        self._unreadable: tuple[int, int] | None = None

    def _encode(self, value: T) -> bytes:
        raise NotImplementedError

    def _decode(self, data: bytes) -> T:
        raise NotImplementedError

    def _readable(self, child: ChildData) -> tuple[T] | None:
        """``(value,)`` of ``child``, or None if another writer left data that is not a
        value (a stream skips it, a wait goes on; see CorruptedValueError)."""
        try:
            return (self._decode(child.data),)
        except CorruptedValueError as exc:
            version = (child.stat.czxid, child.stat.mzxid)
            if version != self._unreadable:
                self._unreadable = version
                log.warning("skipping a value that cannot be read: %s", exc)
                door.recorder(self.client).undecodable(self._kind)
            return None

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Create the node with the seed if missing, then load and follow it."""
        with contextlib.suppress(NodeExistsError):
            await self.client.create(
                self.path,
                self._seed_data,
                make_parents=True,
                parents_as_containers=True,
                acl=self.acl,
            )
        await self._cache.start()

    async def close(self) -> None:
        """Stop following the node (its cache's tasks and watches end; streams end) and
        delete the marker nodes of the last ``try_set`` calls. The node stays."""
        await self._cache.close()
        await self._marked.close()

    async def __aenter__(self: _S) -> _S:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- reading ---------------------------------------------------------------------------

    def _latest(self) -> ChildData | None:
        seen = self._cache.current
        mine = self._written
        if mine is not None and (seen is None or mine.stat.mzxid > seen.stat.mzxid):
            return mine
        return seen

    @property
    def versioned(self) -> VersionedValue[T]:
        """The latest known value and its node version (for ``try_set``).

        Raises NoNodeError if the node does not exist (deleted, or not started).
        """
        latest = self._latest()
        if latest is None:
            raise NoNodeError(f"the {type(self).__name__}'s node does not exist", path=self.path)
        return VersionedValue(self._decode(latest.data), latest.stat.version)

    @property
    def value(self) -> T:
        """The latest known value (see :attr:`versioned`)."""
        return self.versioned.value

    def changes(self, *, buffer_size: int | None = None) -> ValueChanges[T]:
        """A stream of :class:`ValueChange`: ``async for change in shared.changes():``.

        Values come in the order they were written; writes closer together than one read
        may come out as one change with the latest value (as with any ZooKeeper watch, and
        Curator's listener). Subscribe before ``start()`` to see the initial value. A
        reader that falls more than ``buffer_size`` changes behind gets one ``resynced``
        change with the current value instead of those it missed. The stream ends when the
        value is closed.
        """
        return ValueChanges(self, self._cache.changes(buffer_size=buffer_size))

    def _change_of(self, event: NodeEvent) -> ValueChange[T] | None:
        if event.type in (CacheEventType.CREATED, CacheEventType.UPDATED):
            assert event.data is not None
            read = self._readable(event.data)
            if read is None:
                return None  # not a value: the next value written is the next change
            return ValueChange(read[0], event.data.stat.version)
        if event.type is CacheEventType.DELETED:
            return ValueChange(None, -1)
        if event.type is CacheEventType.RESYNCED:
            current = self._cache.current
            if current is None:
                return ValueChange(None, -1, resynced=True)
            read = self._readable(current)
            if read is None:
                return None
            return ValueChange(read[0], current.stat.version, resynced=True)
        return None

    async def wait_for(
        self, predicate: Callable[[T], bool], timeout: float | None = None
    ) -> VersionedValue[T]:
        """Wait until ``predicate(value)`` holds for the followed value; return it.

        :class:`aiocoord.TimeoutError` after ``timeout`` seconds. Cancelling leaves nothing
        behind.
        """
        if not callable(predicate):
            raise InvalidTypeError("predicate must be callable")
        timeout = validate_timeout(timeout)

        def check(current: ChildData | None) -> bool:
            read = None if current is None else self._readable(current)
            return read is not None and predicate(read[0])

        if check(self._latest()):
            return self.versioned
        found = await self._cache.wait_for(check, timeout)
        assert found is not None
        return VersionedValue(self._decode(found.data), found.stat.version)

    # --- writing ---------------------------------------------------------------------------

    def _note(self, data: bytes, stat: Stat) -> None:
        latest = self._latest()
        if latest is None or stat.mzxid > latest.stat.mzxid:
            self._written = ChildData(self.path, data, stat)

    async def set(self, value: T) -> None:
        """Write ``value`` whatever the current version."""
        data = self._encode(value)
        stat = await self.client.set(self.path, data)
        self._note(data, stat)

    async def try_set(self, value: T, expected_version: int) -> bool:
        """Write ``value`` only if the node still has ``expected_version``; True if written.

        False means someone wrote since that version: read :attr:`versioned` and decide
        again. Exactly once even if the reply is lost (see the module docstring).
        """
        data = self._encode(value)
        check_int(expected_version, "expected_version", 0, INT32_MAX)
        path = self.path

        def build(txn: Any) -> None:
            txn.set(path, data, expected_version)

        # Through a marked transaction: a version-checked set whose reply is lost cannot
        # tell "someone else wrote" from "our own write was applied" (its retry would say
        # BadVersion either way); the marker can.
        try:
            results = await self._marked.commit(build)
        except TransactionFailedError as exc:
            if exc.failed_index == 0 and isinstance(exc.cause, BadVersionError):
                return False
            if exc.failed_index == 0 and isinstance(exc.cause, NoNodeError):
                raise exc.cause from None
            raise
        if results is not None and results[0].stat is not None:
            self._note(data, results[0].stat)
        return True

    def __repr__(self) -> str:
        latest = self._latest()
        shown = "unknown" if latest is None else repr(latest.data)
        return f"<{type(self).__name__} {self.path} {shown}>"


class SharedValue(_SharedNode[bytes]):
    """A shared byte string all clients see (Curator's ``SharedValue``); see the module
    docstring.

    ``async with SharedValue(client, path, b"seed") as shared:`` creates the node with the
    seed if it does not exist and follows it; :attr:`value` and :attr:`versioned` are then
    always the latest known. ``await shared.set(b"...")`` writes unconditionally, ``await
    shared.try_set(b"...", expected_version)`` only if nobody wrote since that version.
    ``shared.changes()`` streams every change; ``await shared.wait_for(predicate)`` waits for
    a value. ``close()`` stops the cache and its tasks; the node stays. ``acl`` is the ACL
    of the nodes it creates, parents included (None: the client's ``acl_provider``, else
    OPEN_ACL_UNSAFE).
    """

    def __init__(
        self, client: Client, path: str, seed: bytes = b"", *, acl: Sequence[ACL] | None = None
    ) -> None:
        #: the data :meth:`start` creates the node with if it does not exist
        self.seed: bytes = validate_data(seed, path)
        super().__init__(client, path, self.seed, acl)

    def _encode(self, value: bytes) -> bytes:
        return validate_data(value, self.path)

    def _decode(self, data: bytes) -> bytes:
        return data
