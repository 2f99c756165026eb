"""Counters: :class:`SharedCount` (a versioned integer with compare-and-set and a change
stream) and :class:`AtomicCounter` (optimistic add with retries), on Apache Curator's layouts.

**SharedCount** is Curator's ``SharedCount``: one node whose data is the value as a 4-byte
big-endian signed integer. :meth:`SharedCount.try_set` is ``trySetCount``: it writes only if
the node still has the version the caller read. It is :class:`~aiocoord.SharedValue`'s
mechanism (:mod:`aiocoord.recipes.shared_value`) with that codec: the value and its changes
come from a :class:`~aiocoord.recipes.cache.NodeCache` on the node.

**AtomicCounter** is Curator's ``DistributedAtomicLong``: one node whose data is the value as
an 8-byte big-endian signed integer (empty data reads as 0; a missing node is created on the
first write). It is :class:`~aiocoord.DistributedAtomicValue` over that codec: each change
reads the value and writes the new one on the version read; if another client wrote first,
it reads again and retries, as the retry policy allows, then under a mutex with a
:class:`~aiocoord.recipes.atomic_value.PromotedToLock` (Curator's promoted mode). The result
says whether it succeeded and gives the value before and after.

**kazoo's layout** (``AtomicCounter(..., layout="kazoo")``): the value is kazoo's ``Counter``
text, the integer's ASCII digits (``repr(value)``; empty data reads as ``default``, as kazoo's
does), so that kazoo and aiocoord processes count on one node: kazoo's ``Counter`` also writes on
the version it read, so neither side's add is lost. A kazoo counter of floats is refused
(:class:`CorruptedValueError`), never mis-read. Values are Python integers, not wrapped at 64
bits. kazoo's ``Counter(support_curator=True)`` writes Curator's 4-byte ``SharedCount``
instead: share that with :class:`SharedCount`.

Unlike Curator's, an add (or a ``try_set``) is never applied twice, nor reported failed
after it was applied, when its reply is lost to a connection loss: each write goes in a
transaction with an ephemeral marker child
(``<path>/_c_<uuid>-op``, see :mod:`aiocoord.recipes._marker`) that tells, after the
reconnect, whether it was applied. Markers are deleted by the next write, by :meth:`close`,
or with the session.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aiocoord._client import door
from aiocoord._validation import validate_path
from aiocoord._wire.data import ACL
from aiocoord.client import Client
from aiocoord.errors import BadArgumentsError
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
    decode_text,
    encode_text,
    wrap64,
)
from aiocoord.recipes.atomic_value import AtomicValue, DistributedAtomicValue, PromotedToLock
from aiocoord.recipes.layout import Layout, check_layout
from aiocoord.recipes.shared_value import ValueChange, VersionedValue, _SharedNode
from aiocoord.retry import RetryPolicy

__all__ = [
    "AtomicCounter",
    "AtomicValue",
    "CorruptedValueError",
    "SharedCount",
    "VersionedValue",
]

# --- SharedCount -----------------------------------------------------------------------


class SharedCount(_SharedNode[int]):
    """A shared integer all clients see (Curator's ``SharedCount``); see the module docstring.

    ``async with SharedCount(client, path, seed) as count:`` creates the node with ``seed``
    if it does not exist and follows it; :attr:`value` and :attr:`versioned` are then always
    the latest known. ``await count.set(n)`` writes unconditionally, ``await
    count.try_set(n, expected_version)`` only if nobody wrote since that version.
    ``count.changes()`` streams every change (:class:`~aiocoord.ValueChange` of an int); ``await
    count.wait_for(predicate)`` waits for a value. ``close()`` stops the cache and its
    tasks; the node stays. Reading a node that holds something else than 4 bytes raises
    :class:`CorruptedValueError` (``value``, ``versioned``), an empty node too (kazoo's
    ``Counter(support_curator=True)`` makes one; Curator's ``SharedCount`` cannot read it
    either, and the error says so); the change stream and
    ``wait_for`` skip such a version (logged once, counted in
    ``client.stats().recipes["shared_count"].undecodable``) and go on. ``acl`` is the ACL
    of the nodes it creates, parents included (None: the client's ``acl_provider``, else
    OPEN_ACL_UNSAFE). It is :class:`~aiocoord.SharedValue`'s mechanism over Curator's 4-byte
    big-endian integer.
    """

    _kind = "shared_count"

    def __init__(
        self, client: Client, path: str, seed: int = 0, *, acl: Sequence[ACL] | None = None
    ) -> None:
        #: the value :meth:`start` creates the node with if it does not exist
        self.seed: int = check_int(seed, "seed", INT32_MIN, INT32_MAX)
        super().__init__(client, path, INT32.pack(self.seed), acl)

    def _encode(self, value: int) -> bytes:
        return INT32.pack(check_int(value, "value", INT32_MIN, INT32_MAX))

    def _decode(self, data: bytes) -> int:
        if len(data) != INT32.size:
            raise CorruptedValueError(self.path, data, INT32.size)
        return int(INT32.unpack(data)[0])


# --- AtomicCounter ---------------------------------------------------------------------


class AtomicCounter:
    """A 64-bit counter changed by optimistic compare-and-set (Curator's
    ``DistributedAtomicLong``); see the module docstring.

    ``await counter.increment()`` returns an :class:`AtomicValue` with the value before and
    after. Writes that lose a race are retried as ``retry`` allows (an
    :class:`~aiocoord.ExponentialBackoff` by default), then, with a
    :class:`~aiocoord.recipes.atomic_value.PromotedToLock`, under its mutex; when they give up
    the result has ``succeeded=False``. It is :class:`~aiocoord.DistributedAtomicValue`'s
    mechanism over an 8-byte big-endian integer. ``close()`` (or leaving ``async with``)
    deletes the marker nodes of its last writes; the counter node stays. ``acl`` is the ACL of
    the nodes it creates, parents included (None: the client's ``acl_provider``, else
    OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        retry: RetryPolicy | None = None,
        promoted_to_lock: PromotedToLock | None = None,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
        default: int = 0,
    ) -> None:
        check_client(client)
        if validate_path(path) == "/":
            raise BadArgumentsError("an AtomicCounter cannot live on the root node")
        #: whose node format the counter speaks (:class:`~aiocoord.Layout`)
        self.layout: Layout = check_layout(layout, "AtomicCounter")
        #: the value of a node with empty data (kazoo's ``default``; 0 in Curator's layout)
        self.default: int = check_int(default, "default", INT64_MIN, INT64_MAX)
        if self.default and self.layout is Layout.CURATOR:
            raise BadArgumentsError("default= is kazoo's: Curator's layout reads empty data as 0")
        self._value = DistributedAtomicValue(
            client, path, retry=retry, promoted_to_lock=promoted_to_lock, acl=acl
        )
        self._value._parents_as_containers = self.layout.parents_as_containers
        #: the client whose session reads and writes the counter's node
        self.client: Client = self._value.client
        #: the counter's node (as given, under the client's chroot)
        self.path: str = self._value.path
        #: how often a change that lost a race is tried again in the optimistic phase (an
        #: :class:`~aiocoord.ExponentialBackoff` unless one was given)
        self.retry: RetryPolicy = self._value.retry
        #: where a change the optimistic phase could not get through is tried again under a
        #: mutex; None: never promoted
        self.promoted_to_lock: PromotedToLock | None = self._value.promoted_to_lock
        #: the ACL of the nodes it creates, parents included (None: the client's
        #: ``acl_provider``, else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = self._value.acl

    async def close(self) -> None:
        """Delete the marker nodes of the last writes (they would go with the session)."""
        await self._value.close()

    async def __aenter__(self) -> AtomicCounter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _encode(self, value: int) -> bytes:
        return encode_text(value) if self.layout is Layout.KAZOO else INT64.pack(value)

    def _wrap(self, value: int) -> int:
        # Curator's value is a Java long; kazoo's a Python int.
        return value if self.layout is Layout.KAZOO else wrap64(value)

    def _decode(self, data: bytes | None) -> int:
        """The value of the node's data (a missing node or empty data reads as the
        default, 0 unless kazoo's layout was given another)."""
        if not data:
            return self.default
        if self.layout is Layout.KAZOO:
            try:
                return decode_text(self.path, data)
            except CorruptedValueError:
                door.recorder(self.client).undecodable("atomic_counter")
                raise
        if len(data) != INT64.size:
            door.recorder(self.client).undecodable("atomic_counter")
            raise CorruptedValueError(self.path, data, INT64.size)
        return int(INT64.unpack(data)[0])

    def _result(self, outcome: AtomicValue[bytes]) -> AtomicValue[int]:
        pre = outcome.pre_value
        return AtomicValue(
            outcome.succeeded,
            None if pre is None else self._decode(pre),
            self._decode(outcome.post_value),
            outcome.attempts,
            outcome.stats,
        )

    async def get(self) -> int:
        """The current value (0 if the node does not exist)."""
        return self._decode(await self._value.get())

    async def add(self, delta: int) -> AtomicValue[int]:
        """Add ``delta`` (wrapping around at 64 bits, as a Java long does)."""
        check_int(delta, "delta", INT64_MIN, INT64_MAX)
        return await self._change(lambda current: self._wrap(current + delta))

    async def increment(self) -> AtomicValue[int]:
        """Add 1."""
        return await self._change(lambda current: self._wrap(current + 1))

    async def decrement(self) -> AtomicValue[int]:
        """Subtract 1."""
        return await self._change(lambda current: self._wrap(current - 1))

    async def subtract(self, delta: int) -> AtomicValue[int]:
        """Subtract ``delta``."""
        check_int(delta, "delta", INT64_MIN, INT64_MAX)
        return await self._change(lambda current: self._wrap(current - delta))

    async def try_set(self, value: int) -> AtomicValue[int]:
        """Write ``value`` on the version read, retried (then promoted) as configured
        (Curator's ``trySet``)."""
        check_int(value, "value", INT64_MIN, INT64_MAX)
        return await self._change(lambda _current: value)

    async def compare_and_set(self, expected: int, new: int) -> AtomicValue[int]:
        """Write ``new`` only if the value is ``expected`` (a missing node counts as 0).

        One attempt: ``succeeded`` is False if the value differs or someone wrote between
        the read and the write.
        """
        check_int(expected, "expected", INT64_MIN, INT64_MAX)
        check_int(new, "new", INT64_MIN, INT64_MAX)
        outcome = await self._value.compare_with(
            lambda current: self._decode(current) == expected, self._encode(new)
        )
        return self._result(outcome)

    async def force_set(self, value: int) -> None:
        """Write ``value`` whatever the current one."""
        await self._value.force_set(self._encode(check_int(value, "value", INT64_MIN, INT64_MAX)))

    async def initialize(self, value: int) -> bool:
        """Create the node with ``value`` if it does not exist; True if this call did."""
        data = self._encode(check_int(value, "value", INT64_MIN, INT64_MAX))
        return await self._value.initialize(data)

    async def _change(self, compute: Callable[[int], int]) -> AtomicValue[int]:
        outcome = await self._value.change(lambda data: self._encode(compute(self._decode(data))))
        return self._result(outcome)

    def __repr__(self) -> str:
        return f"<AtomicCounter {self.path}>"


if not TYPE_CHECKING:  # to a type checker the module has its names and no others

    def __getattr__(name: str) -> object:
        # CountChange was an alias of ValueChange: one release more, with a warning (PEP 562).
        if name == "CountChange":
            warnings.warn(
                "aiocoord.recipes.counter.CountChange is deprecated and goes in the next release; "
                "use aiocoord.ValueChange",
                DeprecationWarning,
                stacklevel=2,
            )
            return ValueChange
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
