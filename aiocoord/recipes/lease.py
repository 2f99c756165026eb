"""Leases held until a wall-clock time: :class:`NonBlockingLease` and
:class:`MultiNonBlockingLease`, kazoo's recipes of those names, for cron-like jobs that must run
on one host at a time (or on at most ``count`` hosts).

**Layout (kazoo's, so kazoo and aiocoord processes share a lease).** The lease path holds one
child, ``<path>/lease_holder``, whose data is the JSON object
``{"version": 1, "holder": <identifier>, "end": "YYYY-MM-DDTHH:MM:SS"}``: the end is a UTC time
to the second, from the obtaining process's clock. A lease is *free* if that node is missing,
*expired* once ``now >= end``, and *ours* if ``holder`` is our identifier; obtaining it in any of
those cases writes our identifier and ``now + duration``. A node of another ``version`` is left
alone (False), as kazoo does: a newer format's holders take over from the older ones.

**Exclusion.** The read-decide-write runs under kazoo's lock on the lease path (an ephemeral
sequential ``..__lock__<seq>`` child, which kazoo's ``Lock`` and aiocoord's queue both order by
the sequence number): kazoo replaces the holder node by delete-and-create, and a replaced node
has version 0 again, so a version check alone cannot see a kazoo process slip in between our read
and our write. Inside the lock the write is still a compare-and-set (a create, or a set at the
version read; on a conflict the node is read again and the decision made anew), so no writer
that skips the lock can be overwritten unseen either. The lock's requests are pinned to the
session that holds it: if that session ends, the write is not sent, and the decision is made
again under a lock of the new session.

**Clocks.** Times come from the ``utcnow`` callable (a naive datetime is taken as UTC), so the
lease is only as good as the agreement of the clocks of its holders, as kazoo's is; tests pass a
clock of their own. ``duration`` is a :class:`datetime.timedelta` or a number of seconds.

**Cancellation and timeouts.** ``obtain(timeout=)`` bounds the whole call (the wait for the lock
included) and raises :class:`aiocoord.TimeoutError`. A cancelled or timed-out call leaves no
lock node behind; if its write was already sent, the lease may have been obtained (or renewed)
on the server all the same: call ``obtain()`` again to know.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiocoord._client import door
from aiocoord._deadline import within
from aiocoord._json import ForeignDataError, load_foreign
from aiocoord._paths import join
from aiocoord._validation import validate_create_size, validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client
from aiocoord.errors import (
    BadArgumentsError,
    BadVersionError,
    ConnectionLossError,
    InvalidTypeError,
    LeaseDataError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from aiocoord.recipes._args import check_client, check_identifier
from aiocoord.recipes._contention.contender import delete_node
from aiocoord.recipes._contention.drivers import LeaseDriver
from aiocoord.recipes._contention.kernel import SequentialQueue
from aiocoord.recipes._contention.naming import KAZOO_LOCK
from aiocoord.recipes.layout import Layout

__all__ = [
    "HOLDER_NODE",
    "KAZOO_LOCK_NAME",
    "LeaseDataError",
    "LeaseHolder",
    "MultiNonBlockingLease",
    "NonBlockingLease",
]

log = logging.getLogger(__name__)

#: kazoo's name of the node that says who holds the lease, and of its lock nodes.
HOLDER_NODE = "lease_holder"
KAZOO_LOCK_NAME = KAZOO_LOCK
#: The version of the holder record this module reads and writes (kazoo's is 1).
FORMAT_VERSION = 1
_END_FORMAT = "%Y-%m-%dT%H:%M:%S"

Clock = Callable[[], datetime.datetime]


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who holds a lease until when, as its holder node says (``end`` is naive UTC)."""

    #: the holder's identifier (``holder`` in the record)
    identifier: str
    #: when the lease ends (naive UTC, to the second); ``datetime.max`` for a record of
    #: another version
    end: datetime.datetime
    #: the record's format version (kazoo's and ours: 1); another one is not read further
    version: int = FORMAT_VERSION

    def expired(self, now: datetime.datetime) -> bool:
        """True once ``now`` (naive UTC) has reached the end."""
        return now >= self.end


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _naive_utc(value: object) -> datetime.datetime:
    """``value`` as a naive UTC datetime (a naive one is taken as UTC already)."""
    if not isinstance(value, datetime.datetime):
        raise InvalidTypeError(f"utcnow() must return a datetime, not {type(value).__name__}")
    if value.tzinfo is not None:
        return value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value


def _check_duration(value: object) -> datetime.timedelta:
    if isinstance(value, datetime.timedelta):
        duration = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            duration = datetime.timedelta(seconds=value)
        except (OverflowError, ValueError):
            raise BadArgumentsError(f"duration out of range: {value!r}") from None
    else:
        raise InvalidTypeError(
            f"duration must be a timedelta or seconds, not {type(value).__name__}"
        )
    if not duration.total_seconds() >= 1:
        # The end is stored to the second: a shorter lease would end before it began.
        raise BadArgumentsError(f"duration must be at least one second, got {value!r}")
    return duration


def _check_clock(utcnow: Any) -> Clock:
    if not callable(utcnow):
        raise InvalidTypeError(f"utcnow must be callable, not {type(utcnow).__name__}")
    clock: Clock = utcnow
    return clock


def encode_holder(identifier: str, end: datetime.datetime) -> bytes:
    """The holder node's data, as kazoo writes it."""
    record = {"version": FORMAT_VERSION, "holder": identifier, "end": end.strftime(_END_FORMAT)}
    return json.dumps(record).encode("utf-8")


def decode_holder(path: str, data: bytes) -> LeaseHolder:
    """The record in a holder node's data; LeaseDataError if it is not one."""
    try:
        record = load_foreign(data)
    except ForeignDataError as exc:
        raise LeaseDataError(path, data, f"not UTF-8 JSON ({exc})") from None
    if not isinstance(record, dict) or not isinstance(record.get("version"), int):
        raise LeaseDataError(path, data, "no integer 'version'")
    version = record["version"]
    holder, end = record.get("holder"), record.get("end")
    if version != FORMAT_VERSION:
        # Another format's record: its fields are not ours to read.
        return LeaseHolder(str(holder), datetime.datetime.max, version)
    if not isinstance(holder, str) or not isinstance(end, str):
        raise LeaseDataError(path, data, "'holder' and 'end' must be strings")
    try:
        when = datetime.datetime.strptime(end, _END_FORMAT)
    except ValueError:
        raise LeaseDataError(path, data, f"'end' is not {_END_FORMAT}") from None
    return LeaseHolder(holder, when, version)


class NonBlockingLease:
    """A lease on ``path`` held until a wall-clock time (kazoo's ``NonBlockingLease``); see
    the module docstring.

    ``lease = NonBlockingLease(client, "/leases/cleanup", timedelta(minutes=70),
    identifier="cleanup@host-1")``, then ``if await lease.obtain(): run_the_job()``. It is
    obtained when free, expired, or already held by the same ``identifier`` (then renewed to
    ``now + duration``); otherwise ``obtain()`` returns False at once, it never waits for the
    lease. ``bool(lease)`` is the last answer, as kazoo's object is.

    ``identifier`` defaults to the host name (kazoo's default), so a job started again on the same
    host renews its lease. ``utcnow`` is the clock (a naive datetime is UTC). ``acl`` is the ACL of
    the nodes it creates, parents included (None: the client's ``acl_provider``, else
    OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        duration: datetime.timedelta | float,
        *,
        identifier: str | None = None,
        utcnow: Clock = _utc_now,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        #: the client that reads and writes the lease
        self.client: Client = check_client(client)
        #: the lease's path (as given): the parent of its holder node and lock nodes
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a lease cannot live on the root node")
        #: how long an ``obtain()`` takes or renews the lease for (at least one second)
        self.duration: datetime.timedelta = _check_duration(duration)
        ident = check_identifier(identifier)
        #: the holder name written into the lease
        self.identifier: str = ident if ident else socket.gethostname()
        #: the clock the lease's end is computed and compared with (a naive datetime is UTC)
        self.utcnow: Clock = _check_clock(utcnow)
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: the path of the holder node, ``<path>/lease_holder``
        self.holder_path: str = join(self.path, HOLDER_NODE)
        # The record (the longest end a record has) and the lock node, refused before the
        # lock's path is made.
        validate_create_size(
            door.server_path(client, self.holder_path),
            encode_holder(self.identifier, datetime.datetime(9999, 12, 31)),
            self.acl,
        )
        self._queue = SequentialQueue(
            client, self.path, KAZOO_LOCK_NAME, LeaseDriver(1), acl=self.acl, layout=Layout.KAZOO
        )
        #: the answer of the last ``obtain()`` (False before the first)
        self.obtained: bool = False
        #: when the lease obtained last ends (naive UTC), None if the last obtain failed
        self.end: datetime.datetime | None = None

    def __bool__(self) -> bool:
        return self.obtained

    def _now(self) -> datetime.datetime:
        return _naive_utc(self.utcnow())

    async def obtain(self, timeout: float | None = None) -> bool:
        """Take or renew the lease: True if it is ours until :attr:`end`, False if someone
        else holds it (or a holder of another record version does).

        Raises :class:`aiocoord.TimeoutError` after ``timeout`` seconds (the wait for the
        short-lived lock included), LeaseDataError if the holder node holds something else.
        """
        timeout = validate_timeout(timeout)
        self.obtained, self.end = False, None
        end = await within(self._obtain(), timeout, f"lease {self.path} not decided")
        self.obtained, self.end = end is not None, end
        return self.obtained

    async def holder(self) -> LeaseHolder | None:
        """The current holder record (None if the lease was never taken); it may have
        expired: compare ``end`` with the clock."""
        try:
            data, _ = await self.client.get(self.holder_path)
        except NoNodeError:
            return None
        return self._decode(self.holder_path, data)

    def _decode(self, path: str, data: bytes) -> LeaseHolder:
        try:
            return decode_holder(path, data)
        except LeaseDataError:
            door.recorder(self.client).undecodable("nonblocking_lease")
            raise

    async def _obtain(self) -> datetime.datetime | None:
        while True:
            node = await self._queue.acquire(self.identifier.encode())
            assert node is not None  # a blocking acquire with no timeout returns a node
            try:
                # Pinned: a write made for a lock that went with its session is never sent.
                return await self._decide(self.client.bound(node.generation))
            except SessionExpiredError:
                continue  # the lock went with its session: decide again under a new one
            finally:
                await delete_node(self.client, node.path, cleared=True)

    async def _decide(self, pinned: Client) -> datetime.datetime | None:
        path = self.holder_path
        while True:
            try:
                data, stat = await pinned.get(path)
            except NoNodeError:
                version = None
                now = self._now()
            else:
                current = self._decode(path, data)
                now = self._now()
                if current.version != FORMAT_VERSION:
                    log.info("lease %s has a version %d record; leaving it", path, current.version)
                    return None
                if current.identifier != self.identifier and not current.expired(now):
                    return None
                version = stat.version
            end = (now + self.duration).replace(microsecond=0)
            record = encode_holder(self.identifier, end)
            try:
                if version is None:
                    await pinned.create(path, record, acl=self.acl)
                else:
                    await pinned.set(path, record, version=version)
                return end
            except (NodeExistsError, BadVersionError):
                continue  # written between our read and our write: decide on what is there
            except ConnectionLossError:
                # The write may have been applied: our record there says it was.
                try:
                    data, _ = await pinned.get(path)
                except NoNodeError:
                    continue
                if data == record:
                    return end

    def __repr__(self) -> str:
        state = f"held until {self.end:%Y-%m-%dT%H:%M:%S}" if self.end else "not held"
        return f"<NonBlockingLease {self.path} {self.identifier!r} {state}>"


class MultiNonBlockingLease:
    """One of ``count`` leases ``<path>/0`` .. ``<path>/<count-1>`` (kazoo's
    ``MultiNonBlockingLease``): for a job that at most ``count`` hosts may run at a time.

    ``await leases.obtain()`` is True once one of them is ours (:attr:`index` says which).
    Unlike kazoo, which takes the first obtainable one in order, it renews a lease this
    ``identifier`` already holds before it takes another one, so that a holder keeps its
    slot and never holds two. Each lease is a :class:`NonBlockingLease` (same layout, so
    kazoo's ``MultiNonBlockingLease`` on the same path shares the slots); the other arguments
    are as there.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        count: int,
        duration: datetime.timedelta | float,
        *,
        identifier: str | None = None,
        utcnow: Clock = _utc_now,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        #: the client that reads and writes the leases
        self.client: Client = check_client(client)
        #: the parent of the leases' paths (as given)
        self.path: str = validate_path(path)
        if isinstance(count, bool) or not isinstance(count, int):
            raise InvalidTypeError(f"count must be int, not {type(count).__name__}")
        if count < 1:
            raise BadArgumentsError(f"count (the number of leases) must be >= 1, got {count}")
        #: the number of leases, the most holders at a time
        self.count: int = count
        #: the leases, one per slot: ``leases[i]`` is on ``<path>/<i>``
        self.leases: list[NonBlockingLease] = [
            NonBlockingLease(
                client,
                join(self.path, str(i)),
                duration,
                identifier=identifier,
                utcnow=utcnow,
                acl=acl,
            )
            for i in range(count)
        ]
        #: the holder name written into the lease obtained (the host name unless given)
        self.identifier: str = self.leases[0].identifier
        #: the index of the lease obtained last, None if the last obtain failed
        self.index: int | None = None

    @property
    def obtained(self) -> bool:
        """The answer of the last ``obtain()``."""
        return self.index is not None

    def __bool__(self) -> bool:
        return self.obtained

    async def obtain(self, timeout: float | None = None) -> bool:
        """Take one of the leases (renewing the one this identifier holds, if any): True if
        one is ours, False if all are held by others. Timeouts as
        :meth:`NonBlockingLease.obtain` (for the whole call)."""
        timeout = validate_timeout(timeout)
        self.index = None
        self.index = await within(self._obtain(), timeout, f"leases {self.path} not decided")
        return self.index is not None

    async def _obtain(self) -> int | None:
        order = list(range(self.count))
        holders = await asyncio.gather(
            *(lease.holder() for lease in self.leases), return_exceptions=True
        )
        for current in holders:
            if isinstance(current, BaseException):
                raise current
        for i, current in enumerate(holders):
            if isinstance(current, LeaseHolder) and current.identifier == self.identifier:
                order.remove(i)
                order.insert(0, i)  # ours already: renew it rather than take a second one
                break
        for i in order:
            if await self.leases[i].obtain():
                return i
        return None

    def __repr__(self) -> str:
        state = f"holds {self.index}" if self.index is not None else "holds none"
        return f"<MultiNonBlockingLease {self.path} x{self.count} {state}>"
