"""Counters: :class:`SharedCount` (a versioned integer with compare-and-set and a change
stream) and :class:`AtomicCounter` (optimistic add with retries), on Apache Curator's layouts.

**SharedCount** is Curator's ``SharedCount``: one node whose data is the value as a 4-byte
big-endian signed integer. :meth:`SharedCount.try_set` is ``trySetCount``: it writes only if
the node still has the version the caller read. It is :class:`~aiocoord.SharedValue`'s
mechanism (:mod:`aiocoord.recipes.shared_value`) with that codec: the value and its changes
come from a :class:`~aiocoord.recipes.cache.NodeCache` on the node.

**AtomicCounter** is Curator's ``DistributedAtomicLong``: one node whose data is the value as
an 8-byte big-endian signed integer (empty data reads as 0; a missing node is created on the
first write). Each change reads the value and writes the new one on the version read; if
another client wrote first, it reads again and retries, as the retry policy allows. The
result says whether it succeeded and gives the value before and after.

Unlike Curator's, an add (or a ``try_set``) is never applied twice, nor reported failed
after it was applied, when its reply is lost to a connection loss: each write goes in a
transaction with an ephemeral marker child
(``<path>/_c_<uuid>-op``, see :mod:`aiocoord.recipes._marker`) that tells, after the
reconnect, whether it was applied. Markers are deleted by the next write, by :meth:`close`,
or with the session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiocoord._client import door
from aiocoord._validation import validate_path
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client
from aiocoord.errors import (
    BadArgumentsError,
    BadVersionError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
    TransactionFailedError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._counter_codec import (
    INT32,
    INT32_MAX,
    INT32_MIN,
    INT64,
    INT64_MAX,
    INT64_MIN,
    CorruptedValueError,
    check_int,
    wrap64,
)
from aiocoord.recipes._marker import MarkedCommit
from aiocoord.recipes.shared_value import ValueChange, VersionedValue, _SharedNode
from aiocoord.retry import ExponentialBackoff, RetryPolicy

__all__ = [
    "AtomicCounter",
    "AtomicValue",
    "CorruptedValueError",
    "CountChange",
    "SharedCount",
    "VersionedValue",
]

# --- SharedCount -----------------------------------------------------------------------

#: The change a :class:`SharedCount`'s stream carries (the :class:`ValueChange` of an int).
CountChange = ValueChange


class SharedCount(_SharedNode[int]):
    """A shared integer all clients see (Curator's ``SharedCount``); see the module docstring.

    ``async with SharedCount(client, path, seed) as count:`` creates the node with ``seed``
    if it does not exist and follows it; :attr:`value` and :attr:`versioned` are then always
    the latest known. ``await count.set(n)`` writes unconditionally, ``await
    count.try_set(n, expected_version)`` only if nobody wrote since that version.
    ``count.changes()`` streams every change (:class:`CountChange`); ``await
    count.wait_for(predicate)`` waits for a value. ``close()`` stops the cache and its
    tasks; the node stays. Reading a node that holds something else than 4 bytes raises
    :class:`CorruptedValueError` (``value``, ``versioned``); the change stream and
    ``wait_for`` skip such a version (logged once, counted in
    ``client.stats().recipes["shared_count"].undecodable``) and go on. ``acl`` is the ACL
    of the nodes it creates, parents included (None: OPEN_ACL_UNSAFE). It is
    :class:`~aiocoord.SharedValue`'s mechanism over Curator's 4-byte big-endian integer.
    """

    _kind = "shared_count"

    def __init__(
        self, client: Client, path: str, seed: int = 0, *, acl: Sequence[ACL] | None = None
    ) -> None:
        self.seed = check_int(seed, "seed", INT32_MIN, INT32_MAX)
        super().__init__(client, path, INT32.pack(self.seed), acl)

    def _encode(self, value: int) -> bytes:
        return INT32.pack(check_int(value, "value", INT32_MIN, INT32_MAX))

    def _decode(self, data: bytes) -> int:
        if len(data) != INT32.size:
            raise CorruptedValueError(self.path, data, INT32.size)
        return int(INT32.unpack(data)[0])


# --- AtomicCounter ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AtomicValue:
    """The outcome of an :class:`AtomicCounter` change (Curator's ``AtomicValue``).

    ``succeeded`` is False when the retry policy gave up before the write got through;
    then ``post_value`` is the value that was attempted and nothing was written.
    ``pre_value`` is None if the node did not exist before.
    """

    succeeded: bool
    pre_value: int | None
    post_value: int
    #: how many writes were attempted
    attempts: int = 1


class AtomicCounter:
    """A 64-bit counter changed by optimistic compare-and-set (Curator's
    ``DistributedAtomicLong``); see the module docstring.

    ``await counter.increment()`` returns an :class:`AtomicValue` with the value before and
    after. Writes that lose a race are retried as ``retry`` allows (an
    :class:`~aiocoord.ExponentialBackoff` by default); when it gives up the result has
    ``succeeded=False``. ``close()`` (or leaving ``async with``) deletes the marker nodes of
    its last writes; the counter node stays. ``acl`` is the ACL of the nodes it creates,
    parents included (None: OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        retry: RetryPolicy | None = None,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        self.client = check_client(client)
        self.path = validate_path(path)
        if path == "/":
            raise BadArgumentsError("an AtomicCounter cannot live on the root node")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidTypeError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        self.retry: RetryPolicy = (
            retry if retry is not None else ExponentialBackoff(0.005, 30, 0.25)
        )
        self.acl = check_acl(acl)
        self._marked = MarkedCommit(client, path, acl=self.acl)

    async def close(self) -> None:
        """Delete the marker nodes of the last writes (they would go with the session)."""
        await self._marked.close()

    async def __aenter__(self) -> AtomicCounter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _decode(self, data: bytes) -> int:
        if not data:
            return 0
        if len(data) != INT64.size:
            raise CorruptedValueError(self.path, data, INT64.size)
        return int(INT64.unpack(data)[0])

    async def _read(self) -> tuple[int | None, int]:
        """The current value (None if no node) and the node's version (-1 if none)."""
        try:
            data, stat = await self.client.get(self.path)
        except NoNodeError:
            return None, -1
        try:
            return self._decode(data), stat.version
        except CorruptedValueError:
            door.recorder(self.client).undecodable("atomic_counter")
            raise

    async def get(self) -> int:
        """The current value (0 if the node does not exist)."""
        value, _ = await self._read()
        return 0 if value is None else value

    async def add(self, delta: int) -> AtomicValue:
        """Add ``delta`` (wrapping around at 64 bits, as a Java long does)."""
        check_int(delta, "delta", INT64_MIN, INT64_MAX)
        return await self._change(lambda current: wrap64(current + delta))

    async def increment(self) -> AtomicValue:
        """Add 1."""
        return await self._change(lambda current: wrap64(current + 1))

    async def decrement(self) -> AtomicValue:
        """Subtract 1."""
        return await self._change(lambda current: wrap64(current - 1))

    async def subtract(self, delta: int) -> AtomicValue:
        """Subtract ``delta``."""
        check_int(delta, "delta", INT64_MIN, INT64_MAX)
        return await self._change(lambda current: wrap64(current - delta))

    async def compare_and_set(self, expected: int, new: int) -> AtomicValue:
        """Write ``new`` only if the value is ``expected`` (a missing node counts as 0).

        One attempt: ``succeeded`` is False if the value differs or someone wrote between
        the read and the write.
        """
        check_int(expected, "expected", INT64_MIN, INT64_MAX)
        check_int(new, "new", INT64_MIN, INT64_MAX)
        current, version = await self._read()
        if (0 if current is None else current) != expected:
            return AtomicValue(False, current, new)
        written = await self._try_write(new, version)
        return AtomicValue(written, current, new)

    async def force_set(self, value: int) -> None:
        """Write ``value`` whatever the current one."""
        data = INT64.pack(check_int(value, "value", INT64_MIN, INT64_MAX))
        try:
            await self.client.set(self.path, data)
        except NoNodeError:
            try:
                await self.client.create(
                    self.path, data, make_parents=True, parents_as_containers=True, acl=self.acl
                )
            except NodeExistsError:
                await self.client.set(self.path, data)

    async def initialize(self, value: int) -> bool:
        """Create the node with ``value`` if it does not exist; True if this call did."""
        data = INT64.pack(check_int(value, "value", INT64_MIN, INT64_MAX))
        try:
            await self.client.create(
                self.path, data, make_parents=True, parents_as_containers=True, acl=self.acl
            )
        except NodeExistsError:
            return False
        return True

    async def _change(self, compute: Callable[[int], int]) -> AtomicValue:
        delays = self.retry.delays()
        attempts = 0
        while True:
            current, version = await self._read()
            new = compute(0 if current is None else current)
            attempts += 1
            if await self._try_write(new, version):
                return AtomicValue(True, current, new, attempts)
            delay = next(delays, None)
            if delay is None:
                return AtomicValue(False, current, new, attempts)
            await asyncio.sleep(delay)

    async def _try_write(self, new: int, version: int) -> bool:
        """Write ``new`` if the node is still at ``version`` (-1: if it still does not
        exist); exactly once, whatever happens to the reply. False if someone was first."""
        data = INT64.pack(new)
        path = self.path
        acl = self.acl
        while True:
            if version < 0:

                def build(txn: Any) -> None:
                    txn.create(path, data, acl=acl)

            else:

                def build(txn: Any) -> None:
                    txn.set(path, data, version)

            try:
                await self._marked.commit(build)
            except TransactionFailedError as exc:
                if exc.failed_index != 0:
                    raise
                if isinstance(exc.cause, NoNodeError) and version < 0:
                    # The parent is missing: make it (as a container, as Curator does).
                    parent = path.rsplit("/", 1)[0]
                    if parent:
                        await self.client.ensure_path(parent, container=True, acl=acl)
                        continue
                if isinstance(exc.cause, (BadVersionError, NodeExistsError, NoNodeError)):
                    return False
                raise
            return True

    def __repr__(self) -> str:
        return f"<AtomicCounter {self.path}>"
