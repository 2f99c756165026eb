"""Splitting a set of work items between the members of a group: :class:`SetPartitioner`,
kazoo's recipe of that name, with its four states (:class:`PartitionState`).

**Layout (kazoo's).** Each member is an ephemeral node ``<path>/party/<uuid hex>-<identifier>``
(a :class:`~aiocoord.recipes.nodes.GroupMember`, whose children cache is the membership view).
Each item is guarded by an exclusive lock on ``<path>/locks/<item>``, whose contender nodes end
in kazoo's ``__lock__<sequence>`` and are ordered by the sequence number alone, so a kazoo
``SetPartitioner`` on the same path and set takes part in the same split. Parents are made as
persistent nodes, as kazoo's ``ensure_path`` makes them (kazoo's layout: see
:attr:`~aiocoord.recipes.layout.Layout.parents_as_containers`), so the server never removes
an item's lock path under a kazoo ``Lock`` that counts on it.

**Why locks and not a plain owner node.** A member keeps its items' locks from the moment its
share is computed until it releases them; a member whose share grew waits in each new item's
lock queue until the previous owner has released it. No item is ever held by two members at
once, whatever their views of the membership, and no one has to trust anyone's clock or the
timing of their watches: that is the safe shape. The locks are ephemeral, so a member whose
session ends frees its items at once.

**The cycle.** A new partitioner is ALLOCATING: it waits until the membership has been quiet for
``time_boundary`` seconds (a timer on the loop, restarted by every join or leave), computes its
share with ``partition_func(identifier, members, items)`` (default: :meth:`round_robin`) and
takes the share's locks (all at once). If the membership changes meanwhile, it gives the locks
back and starts over; otherwise it is ACQUIRED and iterating it gives its items. When the
membership changes (or the connection is lost: SUSPENDED, the session may be expiring unseen),
it turns RELEASE: stop working on the items and call :meth:`release_set`, which gives the locks
back and starts ALLOCATING again. Nothing is released behind the user's back: a member keeps its
items, and the others wait for them, until it calls ``release_set()`` (or ``close()``).

**Failure.** The end of the session (LOST, or the client closed), the loss of an item's lock
(someone deleted its node), or an error of ``partition_func`` or of the server turns it FAILURE
for good: its locks and its member node are gone or deleted, the error is logged (WARNING; INFO
for a closed client) and kept in :attr:`SetPartitioner.failure` (a :class:`PartitionFailedError`
whose ``__cause__`` says why), published on the change stream, and raised by
:meth:`~SetPartitioner.wait_for_acquire` and :meth:`~SetPartitioner.release_set`. Make a new
partitioner to take part again. ``close()`` also ends in FAILURE (kazoo's ``finish()``),
without a log.

**Tasks and cancellation.** One task of the object's runs the cycle; ``close()`` cancels and
awaits it, deletes the lock nodes and the member node, and ends the change streams. Cancelling
``wait_for_acquire`` changes nothing; its ``timeout=`` raises :class:`aiocoord.TimeoutError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from aiocoord._deadline import within
from aiocoord._paths import join
from aiocoord._validation import is_finite, validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client, State, StateChange
from aiocoord.errors import (
    BadArgumentsError,
    CoordinationError,
    InvalidTypeError,
)
from aiocoord.errors import (
    TimeoutError as CoordTimeoutError,
)
from aiocoord.recipes._args import check_client, check_identifier
from aiocoord.recipes._contention.contender import check_entry
from aiocoord.recipes._contention.drivers import LeaseDriver
from aiocoord.recipes._contention.holding import Holding
from aiocoord.recipes._contention.kernel import SequentialQueue
from aiocoord.recipes._partition import (
    PartitionChange,
    PartitionFailedError,
    PartitionFunc,
    PartitionState,
    default_identifier,
    differs_from,
    first_of,
    identifier_of,
)
from aiocoord.recipes._stream import EventStream, EventSubscription, check_buffer_size
from aiocoord.recipes.layout import Layout
from aiocoord.recipes.lease import KAZOO_LOCK_NAME
from aiocoord.recipes.nodes import GroupMember

__all__ = [
    "PartitionChange",
    "PartitionFailedError",
    "PartitionFunc",
    "PartitionState",
    "SetPartitioner",
]

log = logging.getLogger(__name__)

#: kazoo's children of the partitioner's path.
PARTY = "party"
LOCKS = "locks"


class SetPartitioner:
    """Split ``items`` between the members of the group at ``path`` (kazoo's
    ``SetPartitioner``); see the module docstring for the layout, cycle and failures.

    ``async with SetPartitioner(client, "/work", ["q1", "q2", "q3"]) as p:`` joins; then
    ``await p.wait_for_acquire()`` and ``for item in p: ...``; on RELEASE, ``await
    p.release_set()``; ``p.changes()`` streams the state changes. Items are strings usable as
    node names (duplicates are dropped). ``identifier`` names this member (default:
    ``host-pid-<random>``); give every member its own, since members with the same identifier
    count once and contend for the same share. ``partition_func(identifier, members,
    items)`` returns this member's share, from the sorted identifiers and the items in the
    order given; every member must use the same function. ``acl`` is the ACL of the nodes it
    creates, parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(
        self,
        client: Client,
        path: str,
        items: Iterable[str],
        *,
        identifier: str | None = None,
        partition_func: PartitionFunc | None = None,
        time_boundary: float = 30.0,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        #: the client whose session holds the member node and the item locks
        self.client: Client = check_client(client)
        #: the group's path, the parent of ``party`` and ``locks`` (as given, under the
        #: client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a SetPartitioner cannot live on the root node")
        #: ``<path>/locks``, the parent of the items' lock paths
        self.locks_path: str = join(self.path, LOCKS)
        #: the items to split, in the order given, duplicates dropped
        self.items: tuple[str, ...] = self._check_items(items)
        checked = check_identifier(identifier)
        identifier = default_identifier() if checked is None else checked
        #: this member's name in the group (its member node is ``<uuid hex>-<identifier>``)
        #: and the data of its nodes (default: ``host-pid-<random>``)
        self.identifier: str = identifier
        if partition_func is not None and not callable(partition_func):
            raise InvalidTypeError("partition_func must be callable")
        #: ``partition_func(identifier, members, items)``, which computes this member's
        #: share (default: :meth:`round_robin`)
        self.partition_func: PartitionFunc = partition_func or self.round_robin
        if (
            isinstance(time_boundary, bool)
            or not isinstance(time_boundary, (int, float))
            or not is_finite(time_boundary)
            or time_boundary < 0
        ):
            raise BadArgumentsError(
                f"time_boundary must be a finite number of seconds >= 0, got {time_boundary!r}"
            )
        #: how long, in seconds, the membership must stay unchanged before the share is
        #: computed
        self.time_boundary: float = float(time_boundary)
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        data = identifier.encode()
        for item in self.items:  # each item's lock node holds the identifier
            check_entry(client, join(self.locks_path, item), KAZOO_LOCK_NAME, data, self.acl)
        # GroupMember checks the identifier as a node name.
        self._member = GroupMember(
            client,
            join(self.path, PARTY),
            f"{uuid.uuid4().hex}-{identifier}",
            identifier.encode(),
            acl=self.acl,
        )
        self._state = PartitionState.ALLOCATING
        self._partition: tuple[str, ...] = ()
        self._members: tuple[str, ...] = ()
        self._holdings: dict[str, Holding] = {}
        self._decided = asyncio.Event()  # set while not ALLOCATING
        self._release_requested = asyncio.Event()
        self._stream: EventStream[PartitionChange] = EventStream(self._resynced)
        self._task: asyncio.Task[None] | None = None
        self._remove_listener: Callable[[], None] | None = None
        self._closing = False
        #: the error that ended it (FAILURE), None before
        self.failure: PartitionFailedError | None = None

    def _check_items(self, items: Iterable[str]) -> tuple[str, ...]:
        if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
            raise InvalidTypeError(f"items must be an iterable of str, not {type(items).__name__}")
        out = tuple(dict.fromkeys(items))
        for item in out:
            if not isinstance(item, str):
                raise InvalidTypeError(f"every item must be str, not {type(item).__name__}")
            if not item or "/" in item:
                raise BadArgumentsError(f"items must be node names without '/', got {item!r}")
            validate_path(join(self.locks_path, item))
        return out

    @staticmethod
    def round_robin(identifier: str, members: list[str], items: list[str]) -> list[str]:
        """kazoo's default split: the sorted items, every ``len(members)``-th from this
        member's place among the sorted members."""
        place = sorted(members).index(identifier)
        return sorted(items)[place :: len(members)]

    # --- state ---------------------------------------------------------------------------

    @property
    def state(self) -> PartitionState:
        """The current state."""
        return self._state

    @property
    def partition(self) -> tuple[str, ...]:
        """This member's items while ACQUIRED (and RELEASE, until released), else empty."""
        return self._partition

    @property
    def members(self) -> tuple[str, ...]:
        """The identifiers the current share was computed from (sorted)."""
        return self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._partition)

    def __len__(self) -> int:
        return len(self._partition)

    @property
    def acquired(self) -> bool:
        """State is ACQUIRED."""
        return self._state is PartitionState.ACQUIRED

    @property
    def release(self) -> bool:
        """State is RELEASE: call :meth:`release_set`."""
        return self._state is PartitionState.RELEASE

    @property
    def allocating(self) -> bool:
        """State is ALLOCATING."""
        return self._state is PartitionState.ALLOCATING

    @property
    def failed(self) -> bool:
        """State is FAILURE."""
        return self._state is PartitionState.FAILURE

    def changes(self, *, buffer_size: int = 100) -> EventSubscription[PartitionChange]:
        """The state changes from now on: ``async for change in p.changes():``; ends after
        FAILURE (or ``close()``). On overflow a reader gets one ``resynced`` change with the
        state then (see :class:`~aiocoord.EventSubscription`)."""
        return self._stream.subscribe(check_buffer_size(buffer_size))

    def _resynced(self) -> PartitionChange:
        return PartitionChange(self._state, self._partition, self.failure, resynced=True)

    def _set_state(self, state: PartitionState) -> None:
        self._state = state
        if state is PartitionState.ALLOCATING:
            self._decided.clear()
        else:
            self._decided.set()
        self._stream.publish(PartitionChange(state, self._partition, self.failure))

    async def wait_for_acquire(self, timeout: float | None = None) -> PartitionState:
        """Wait while ALLOCATING; return the state then (ACQUIRED, or RELEASE if the
        membership changed at once). Raises the :class:`PartitionFailedError` on FAILURE,
        :class:`aiocoord.TimeoutError` after ``timeout`` seconds."""
        timeout = validate_timeout(timeout)
        if self._task is None and self.failure is None:
            raise CoordinationError(f"the SetPartitioner on {self.path} was not started")
        if not self._decided.is_set():  # (wait_for with timeout 0 would not even look)
            await within(self._decided.wait(), timeout, f"partition of {self.path} not acquired")
        if self.failure is not None:
            raise self.failure
        return self._state

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Join the group and start allocating (returns once joined)."""
        if self._task is not None or self._closing:
            raise CoordinationError(f"the SetPartitioner on {self.path} was already started")
        await self._member.start()
        self._remove_listener = self.client.add_state_listener(self._on_state)
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"aiocoord-partitioner:{self.path}"
        )

    async def release_set(self) -> None:
        """Give this member's items back and allocate again (ALLOCATING). Call it on RELEASE;
        in ALLOCATING it does nothing. Raises the :class:`PartitionFailedError` on FAILURE."""
        if self.failure is not None:
            raise self.failure
        if self._state is PartitionState.ALLOCATING:
            return
        self._partition = ()
        self._set_state(PartitionState.ALLOCATING)
        lost = await self._give_back()
        if lost is not None:
            self._fail(f"an item lock was lost before its release ({lost})", None)
        if self.failure is not None:  # lost, or failed while giving back
            raise self.failure
        self._release_requested.set()

    async def close(self) -> None:
        """Leave: stop the task, delete the lock nodes and the member node, end the change
        streams (FAILURE). Idempotent."""
        if self._closing:
            return
        self._closing = True
        if self._remove_listener is not None:
            self._remove_listener()
        task = self._task
        if task is not None and not task.done():
            if self.failure is None:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task  # after a failure: its clean-up, which leaves the group
        await self._give_back()
        await self._member.close()
        if self.failure is None:
            self.failure = PartitionFailedError(f"the SetPartitioner on {self.path} was closed")
            self._partition = ()
            self._set_state(PartitionState.FAILURE)
        self._stream.close()

    async def __aenter__(self) -> SetPartitioner:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- failure ---------------------------------------------------------------------------

    def _on_state(self, change: StateChange) -> None:
        if change.state in (State.LOST, State.CLOSED) or change.new_session:
            # A closed client is the user's own doing: said at INFO, as Holding does.
            level = logging.INFO if change.state is State.CLOSED else logging.WARNING
            self._fail(f"the session ended ({change.state.value})", None, level)
        elif change.state is State.SUSPENDED and self._state is PartitionState.ACQUIRED:
            # The session may be expiring unseen: the others may soon be given our items.
            self._set_state(PartitionState.RELEASE)

    def _on_item_lost(self, item: str, state: State, reason: str) -> None:
        if self._holdings.get(item) is not None:
            self._fail(f"the lock of item {item!r} was lost ({reason})", None)

    def _fail(self, why: str, cause: BaseException | None, level: int = logging.WARNING) -> None:
        if self.failure is not None or self._closing:
            return
        error = PartitionFailedError(
            f"the SetPartitioner on {self.path} ({self.identifier}) failed: {why}; "
            "make a new one to take part again"
        )
        error.__cause__ = cause
        self.failure = error
        log.log(level, "%s", error)
        self._partition = ()
        self._set_state(PartitionState.FAILURE)
        self._stream.close()
        task = self._task
        if task is not None and task is not asyncio.current_task() and not task.done():
            task.cancel()  # its clean-up leaves the group (see _run)

    # --- the task --------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                members = await self._settle()
                share = self._share(members)
                if not await self._take(share, members):
                    await self._give_back()  # the membership changed while taking them
                    continue
                self._release_requested.clear()
                self._partition = share
                self._members = tuple(sorted({identifier_of(m) for m in members}))
                self._set_state(PartitionState.ACQUIRED)
                await first_of(
                    self._member.wait_for(differs_from(members)),
                    self._release_requested.wait(),
                )
                if self._state is PartitionState.ACQUIRED:
                    self._set_state(PartitionState.RELEASE)
                await self._release_requested.wait()
        except asyncio.CancelledError:
            if self.failure is None:
                raise  # closed
        except Exception as exc:  # every error ends in FAILURE, reported there
            self._fail(f"{type(exc).__name__}: {exc}", exc)
        # FAILURE: leave at once, or another session's copy of our member node (the member
        # re-creates it after an expiry) would be given a share that nobody takes.
        self._discard_holdings()
        await self._member.close()

    async def _settle(self) -> frozenset[str]:
        """The membership (party node names, ours included) once quiet for time_boundary."""
        own = self._member.member_id
        while True:
            view = await self._member.wait_for(lambda names: own in names)
            names = frozenset(view)
            try:
                await self._member.wait_for(differs_from(names), timeout=self.time_boundary)
            except CoordTimeoutError:
                return names

    def _share(self, members: frozenset[str]) -> tuple[str, ...]:
        identifiers = sorted({identifier_of(m) for m in members})
        share = tuple(
            dict.fromkeys(self.partition_func(self.identifier, identifiers, list(self.items)))
        )
        stray = [item for item in share if item not in self.items]
        if stray:
            raise BadArgumentsError(f"partition_func returned items not in the set: {stray!r}")
        return share

    async def _take(self, share: tuple[str, ...], members: frozenset[str]) -> bool:
        """Take the locks of ``share`` (all at once): True once all are ours; False if the
        membership changed first (the caller gives back those taken)."""
        loop = asyncio.get_running_loop()
        changed = loop.create_task(self._member.wait_for(differs_from(members)))
        locks = [loop.create_task(self._lock(item)) for item in share]
        try:
            pending: set[asyncio.Task[Any]] = set(locks)
            while pending and not changed.done():
                _, pending = await asyncio.wait(
                    pending | {changed}, return_when=asyncio.FIRST_COMPLETED
                )
                pending.discard(changed)
                for task in locks:
                    error = task.exception() if task.done() else None
                    if error is not None:
                        raise error
            if changed.done():
                changed.result()  # a failed membership view ends here
                return False
            return True
        finally:
            # A lock granted meanwhile is in _holdings already (see _lock).
            changed.cancel()
            for task in locks:
                task.cancel()
            await asyncio.gather(changed, *locks, return_exceptions=True)

    async def _lock(self, item: str) -> Holding:
        queue = SequentialQueue(
            self.client,
            join(self.locks_path, item),
            KAZOO_LOCK_NAME,
            LeaseDriver(1),
            acl=self.acl,
            layout=Layout.KAZOO,
        )
        node = await queue.acquire(self.identifier.encode())
        assert node is not None  # blocking, no timeout
        # Made and recorded in the same step as the grant: no state change falls between,
        # and a cancellation after it still finds the lock to give back.
        holding = self._holdings[item] = Holding(
            self.client,
            node,
            what=f"item {item!r} of partitioner {self.path}",
            logger=log,
            suspended_is_loss=False,
            exclusive=True,
            on_loss=functools.partial(self._on_item_lost, item),
        )
        return holding

    async def _give_back(self) -> str | None:
        """Release every item lock held; the reason of a loss found on the way, if any."""
        lost = None
        while self._holdings:
            _, holding = self._holdings.popitem()
            reason = await holding.leave(confirm=True)
            lost = lost or reason
        return lost

    def _discard_holdings(self) -> None:
        while self._holdings:
            _, holding = self._holdings.popitem()
            holding.discard()

    def __repr__(self) -> str:
        return (
            f"<SetPartitioner {self.path} {self.identifier!r} {self._state.value} "
            f"items={len(self._partition)}/{len(self.items)}>"
        )
