""":class:`DistributedAtomicValue`: bytes on one node, changed by compare-and-set, on Apache
Curator's layout, with Curator's optional promotion to a lock (:class:`PromotedToLock`).

**Layout.** Curator's ``DistributedAtomicValue``: one node whose data is the value as written,
with no encoding; a missing node is created (its parents as containers) by the first write.
:class:`~aiocoord.AtomicCounter` (Curator's ``DistributedAtomicLong``) is this recipe over an
8-byte big-endian integer, so a Java ``DistributedAtomicValue`` or ``DistributedAtomicLong``
on the same path shares the value.

**A change.** :meth:`DistributedAtomicValue.try_set` (and every counter change) reads the node,
makes the new value from the one read and writes it on the version read (or creates the node
if there was none). If another client wrote first it reads again and retries, as the ``retry``
policy allows: the *optimistic* phase. With a :class:`PromotedToLock`, a change still not
through after that phase takes a mutex at ``PromotedToLock.lock_path`` (Curator's
``InterProcessMutex`` layout, so Java clients in promoted mode exclude ours) and tries again
under it, as its own retry policy allows: the *promoted* phase. The result
(:class:`AtomicValue`) says whether it succeeded, with the value before and after and
:class:`AtomicStats` (tries and seconds of each phase).

**Exactly once.** Unlike Curator's, a write whose reply is lost to a connection loss is never
applied twice, nor reported failed after it was applied: each write goes in a transaction with
an ephemeral marker child (``<path>/_c_<uuid>-op``, see :mod:`aiocoord.recipes._marker`) that
tells, after the reconnect, whether it was applied. Markers are deleted by the next write, by
``close()``, or with the session. Curator never lists the node's children, so it does not see
them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from aiocoord._paths import split
from aiocoord._validation import (
    validate_create_size,
    validate_data,
    validate_path,
    validate_timeout,
)
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
from aiocoord.errors import TimeoutError as CoordTimeoutError
from aiocoord.recipes._args import check_client
from aiocoord.recipes._contention.contender import check_entry
from aiocoord.recipes._marker import MarkedCommit
from aiocoord.recipes.lock import LOCK_NAME, Lock
from aiocoord.retry import ExponentialBackoff, NoRetry, RetryPolicy

__all__ = [
    "AtomicStats",
    "AtomicValue",
    "DistributedAtomicValue",
    "PromotedToLock",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AtomicStats:
    """How a change went (Curator's ``AtomicStats``): the writes tried in each phase and the
    seconds each phase took. The promoted phase counts only with a :class:`PromotedToLock`
    and only when the optimistic phase gave up; its time includes waiting for the lock."""

    #: the writes tried in the optimistic phase (0 for a compare-and-set whose value did
    #: not match)
    optimistic_tries: int = 0
    #: the writes tried under the promoted mutex (0 unless the change was promoted)
    promoted_lock_tries: int = 0
    #: the seconds the optimistic phase took, its reads and retry sleeps included
    optimistic_time: float = 0.0
    #: the seconds the promoted phase took, the wait for the mutex included (0.0 unless the
    #: change was promoted)
    promoted_time: float = 0.0


@dataclass(frozen=True, slots=True)
class AtomicValue(Generic[T]):
    """The outcome of a :class:`DistributedAtomicValue` or :class:`~aiocoord.AtomicCounter`
    change (Curator's ``AtomicValue``).

    ``succeeded`` is False when the retry policies gave up before the write got through (or,
    for a compare-and-set, when the value was not the expected one); then ``post_value`` is
    the value that was attempted and nothing was written. ``pre_value`` is the value read
    last, None if the node did not exist.
    """

    #: whether the write got through; False when the retry policies gave up or a
    #: compare-and-set found another value (then nothing was written)
    succeeded: bool
    #: the value read last, on which the write was made or tried; None if the node did not
    #: exist
    pre_value: T | None
    #: the value written; when ``succeeded`` is False, the value that was attempted
    post_value: T
    #: how many writes were attempted (both phases)
    attempts: int = 1
    #: the tries and time of each phase
    stats: AtomicStats = field(default=AtomicStats(), compare=False)


@dataclass(frozen=True, slots=True)
class PromotedToLock:
    """Curator's ``PromotedToLock``: where and how a change that the optimistic phase could
    not get through is tried again under a mutex.

    ``lock_path`` is the mutex's node (Curator's ``InterProcessMutex`` layout: a Java client
    promoted on the same path excludes ours). ``timeout`` bounds the wait for the mutex in
    seconds (None: no bound; when it passes the change fails, nothing written). ``retry``
    says how often a write is tried again while holding it (default: once, as Curator's
    ``RetryNTimes(0, 0)``).
    """

    #: the mutex's node (Curator's ``InterProcessMutex`` layout, so a Java client promoted
    #: on the same path excludes ours)
    lock_path: str
    #: the longest wait for the mutex in seconds (None: no bound); when it passes the change
    #: fails, nothing written
    timeout: float | None = None
    #: how often a write is tried again while the mutex is held (default: never, one try)
    retry: RetryPolicy = field(default_factory=NoRetry)

    def __post_init__(self) -> None:
        validate_path(self.lock_path)
        if self.lock_path == "/":
            raise BadArgumentsError("a PromotedToLock's lock cannot live on the root node")
        validate_timeout(self.timeout)
        if not isinstance(self.retry, RetryPolicy):
            raise InvalidTypeError(f"retry must be a RetryPolicy, not {type(self.retry).__name__}")


@dataclass(slots=True)
class _Attempt:
    """What a change knows so far (Curator's ``MutableAtomicValue``)."""

    pre_value: bytes | None = None
    post_value: bytes = b""
    optimistic_tries: int = 0
    promoted_lock_tries: int = 0
    optimistic_time: float = 0.0
    promoted_time: float = 0.0

    def result(self, succeeded: bool) -> AtomicValue[bytes]:
        stats = AtomicStats(
            self.optimistic_tries,
            self.promoted_lock_tries,
            self.optimistic_time,
            self.promoted_time,
        )
        tries = self.optimistic_tries + self.promoted_lock_tries
        return AtomicValue(succeeded, self.pre_value, self.post_value, max(tries, 1), stats)


def check_retry(retry: Any) -> RetryPolicy:
    """``retry`` or the default of the atomic recipes; a typed error for anything else."""
    if retry is None:
        return ExponentialBackoff(0.005, 30, 0.25)
    if not isinstance(retry, RetryPolicy):
        raise InvalidTypeError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
    return retry


def check_promoted(promoted: Any) -> PromotedToLock | None:
    """``promoted`` if it is None or a :class:`PromotedToLock`; a typed error otherwise."""
    if promoted is not None and not isinstance(promoted, PromotedToLock):
        raise InvalidTypeError(
            f"promoted_to_lock must be a PromotedToLock, not {type(promoted).__name__}"
        )
    return promoted


class DistributedAtomicValue:
    """Bytes on one node, changed by compare-and-set (Curator's ``DistributedAtomicValue``);
    see the module docstring.

    ``await value.get()`` is the data (None: no node). ``await value.try_set(data)`` writes it
    on the version read, retrying as ``retry`` allows (an
    :class:`~aiocoord.ExponentialBackoff` by default), then under the mutex of
    ``promoted_to_lock`` if one is given. ``await value.compare_and_set(expected, new)``
    writes ``new`` only if the data is ``expected`` (one try). ``force_set`` writes whatever
    the data, ``initialize`` creates the node if it does not exist. Each change returns an
    :class:`AtomicValue`. ``close()`` (or leaving ``async with``) deletes the marker nodes of
    its last writes; the node stays. ``acl`` is the ACL of the nodes it creates, parents
    included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).

    **Cancellation.** A change cancelled while a write is in flight may or may not have been
    applied, as for any write; one cancelled while it waits for the promoted mutex leaves no
    lock node.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        retry: RetryPolicy | None = None,
        promoted_to_lock: PromotedToLock | None = None,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        #: the client whose session reads and writes the node
        self.client: Client = check_client(client)
        #: the value's node (as given, under the client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError(f"a {type(self).__name__} cannot live on the root node")
        #: how often a change that lost a race is tried again in the optimistic phase (an
        #: :class:`~aiocoord.ExponentialBackoff` unless one was given)
        self.retry: RetryPolicy = check_retry(retry)
        #: where a change the optimistic phase could not get through is tried again under a
        #: mutex; None: never promoted
        self.promoted_to_lock: PromotedToLock | None = check_promoted(promoted_to_lock)
        #: the ACL of the nodes it creates, parents included (None: the client's
        #: ``acl_provider``, else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        if self.promoted_to_lock is not None:
            # The mutex is made only when a change is promoted, long after this: a lock path
            # too long for its node is refused now rather than then.
            check_entry(client, self.promoted_to_lock.lock_path, LOCK_NAME, b"", self.acl)
        self._marked = MarkedCommit(client, path, acl=self.acl)
        self._mutex: Lock | None = None
        # Curator's parents are containers; a kazoo-layout AtomicCounter's are persistent
        # nodes, as kazoo's ensure_path makes them (Layout.parents_as_containers).
        self._parents_as_containers = True

    def _writable(self, value: Any) -> bytes:
        """``value`` if a create of the node with it is a request a server reads (a typed
        error otherwise): refused before the read that comes first, whether or not the
        change would get as far as writing it."""
        data = validate_data(value, self.path)
        validate_create_size(self.path, data, self.acl, self.client.chroot)
        return data

    async def close(self) -> None:
        """Delete the marker nodes of the last writes (they would go with the session)."""
        await self._marked.close()

    async def __aenter__(self) -> DistributedAtomicValue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- reading and unconditional writes -------------------------------------------------

    async def read(self) -> tuple[bytes | None, int]:
        """The data (None if no node) and the node's version (-1 if none)."""
        try:
            data, stat = await self.client.get(self.path)
        except NoNodeError:
            return None, -1
        return data, stat.version

    async def get(self) -> bytes | None:
        """The data now; None if the node does not exist."""
        data, _ = await self.read()
        return data

    async def force_set(self, value: bytes) -> None:
        """Write ``value`` whatever the current data (creating the node if needed)."""
        data = self._writable(value)
        try:
            await self.client.set(self.path, data)
        except NoNodeError:
            try:
                await self.client.create(
                    self.path,
                    data,
                    make_parents=True,
                    parents_as_containers=self._parents_as_containers,
                    acl=self.acl,
                )
            except NodeExistsError:
                await self.client.set(self.path, data)

    async def initialize(self, value: bytes) -> bool:
        """Create the node with ``value`` if it does not exist; True if this call did."""
        data = self._writable(value)
        try:
            await self.client.create(
                self.path,
                data,
                make_parents=True,
                parents_as_containers=self._parents_as_containers,
                acl=self.acl,
            )
        except NodeExistsError:
            return False
        return True

    # --- compare-and-set ------------------------------------------------------------------

    async def try_set(self, value: bytes) -> AtomicValue[bytes]:
        """Write ``value`` on the version read; retried (then promoted) as configured."""
        data = self._writable(value)
        return await self.change(lambda _current: data)

    async def compare_and_set(self, expected: bytes, new: bytes) -> AtomicValue[bytes]:
        """Write ``new`` only if the data is ``expected`` (a missing node never matches, as
        in Curator). One try: ``succeeded`` is False if the data differs or someone wrote
        between the read and the write."""
        want = validate_data(expected, self.path)
        return await self.compare_with(lambda current: current == want, new)

    async def compare_with(
        self, matches: Callable[[bytes | None], bool], new: bytes
    ) -> AtomicValue[bytes]:
        """Write ``new`` (creating the node if it is missing) only if ``matches`` holds for
        the data read (None: no node); one try. The mechanism of every compare-and-set."""
        new = self._writable(new)
        attempt = _Attempt(post_value=new)
        started = time.monotonic()
        current, version = await self.read()
        attempt.pre_value = current
        ok = False
        if matches(current):
            attempt.optimistic_tries = 1
            ok = await self._write_once(new, version)
        attempt.optimistic_time = time.monotonic() - started
        return attempt.result(ok)

    async def change(self, make: Callable[[bytes | None], bytes]) -> AtomicValue[bytes]:
        """Write ``make(data read)`` on the version read: the optimistic phase, then the
        promoted one if configured and needed (see the module docstring). An exception of
        ``make`` (a value it cannot read) ends the change, nothing written."""
        attempt = _Attempt()
        ok = await self._optimistic(attempt, make)
        if not ok and self.promoted_to_lock is not None:
            ok = await self._promoted(attempt, make, self.promoted_to_lock)
        return attempt.result(ok)

    async def _optimistic(self, attempt: _Attempt, make: Callable[[bytes | None], bytes]) -> bool:
        started = time.monotonic()
        try:
            return await self._tries(attempt, make, self.retry, promoted=False)
        finally:
            attempt.optimistic_time = time.monotonic() - started

    async def _promoted(
        self, attempt: _Attempt, make: Callable[[bytes | None], bytes], promoted: PromotedToLock
    ) -> bool:
        started = time.monotonic()
        if self._mutex is None:
            self._mutex = Lock(self.client, promoted.lock_path, acl=self.acl)
        mutex = self._mutex
        try:
            try:
                await mutex.acquire(timeout=promoted.timeout)
            except CoordTimeoutError:
                return False  # as Curator's: the change fails when the mutex is not had in time
            try:
                return await self._tries(attempt, make, promoted.retry, promoted=True)
            finally:
                await mutex.release()
        finally:
            attempt.promoted_time = time.monotonic() - started

    async def _tries(
        self,
        attempt: _Attempt,
        make: Callable[[bytes | None], bytes],
        retry: RetryPolicy,
        *,
        promoted: bool,
    ) -> bool:
        delays = retry.delays()
        while True:
            current, version = await self.read()
            attempt.pre_value = current
            new = validate_data(make(current), self.path)
            attempt.post_value = new
            if promoted:
                attempt.promoted_lock_tries += 1
            else:
                attempt.optimistic_tries += 1
            if await self._write_once(new, version):
                return True
            delay = next(delays, None)
            if delay is None:
                return False
            await asyncio.sleep(delay)

    async def _write_once(self, new: bytes, version: int) -> bool:
        """Write ``new`` if the node is still at ``version`` (-1: if it still does not
        exist); exactly once, whatever happens to the reply. False if someone was first."""
        path = self.path
        acl = self.acl
        while True:
            if version < 0:

                def build(txn: Any) -> None:
                    txn.create(path, new, acl=acl)

            else:

                def build(txn: Any) -> None:
                    txn.set(path, new, version)

            try:
                await self._marked.commit(build)
            except TransactionFailedError as exc:
                if exc.failed_index != 0:
                    raise
                if isinstance(exc.cause, NoNodeError) and version < 0:
                    # The parent is missing: make it (as a container, as Curator does; kazoo's
                    # layout: persistent).
                    parent = split(path)[0]
                    if parent != "/":
                        await self.client.ensure_path(
                            parent, container=self._parents_as_containers, acl=acl
                        )
                        continue
                if isinstance(exc.cause, (BadVersionError, NodeExistsError, NoNodeError)):
                    return False
                raise
            return True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path}>"
