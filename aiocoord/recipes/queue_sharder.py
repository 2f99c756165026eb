""":class:`QueueSharder`: one logical queue spread over several :class:`~aiocoord.Queue`
shards, added as they fill up (Apache Curator's ``QueueSharder``, whose layout it shares).

**Layout.** Each shard is a :class:`~aiocoord.Queue` (Curator's ``DistributedQueue``: items
``queue-<sequence>`` in Curator's framing) at ``<path>/queue-<uuid>``; ``<path>`` is a
container node and every child of it is taken for a shard, as Curator does. The sharders of
all clients (Java ``QueueSharder``\\ s included) take part in one leader election at
``leader_path`` (a :class:`~aiocoord.LeaderLatch`, Curator's ``LeaderLatch`` layout); only
the leader adds shards.

**Thresholds** (:class:`QueueSharderPolicies`, Curator's ``QueueSharderPolicies``). Every
``threshold_check_interval`` seconds (Curator's ``thresholdCheckMs``, default 30 s) each
sharder lists the shards and counts the children of each: a shard with at least
``new_queue_threshold`` children (default 10,000) stops being *preferred* for puts, one with
at most half of it becomes preferred again. If any shard is at the threshold and this sharder
leads, it adds a shard, unless there are ``max_queues`` already (default 10; it then logs a
warning). Shards are never removed (nor are they by Curator). :meth:`QueueSharder.put`
goes to a random preferred shard, or to a random shard when none is preferred (Curator's
``getQueue``); :meth:`QueueSharder.get` takes from whichever shard has an item.

**Task.** A started sharder owns a background task (the periodic check) and its latch;
``close()`` (or leaving ``async with``) cancels and awaits the task, leaves the election and
closes every shard (see :meth:`Queue.close <aiocoord.Queue.close>`). A failed check is
logged and tried again at the next interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from aiocoord._deadline import Deadline, deadline_after, expiring
from aiocoord._paths import join
from aiocoord._validation import validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client, Watch
from aiocoord.errors import (
    BadArgumentsError,
    CoordinationError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from aiocoord.recipes._args import check_client
from aiocoord.recipes._watching import call_with_watch, wait_watches
from aiocoord.recipes.latch import LeaderLatch
from aiocoord.recipes.queue import QUEUE_ITEM_NAME, Queue

__all__ = [
    "SHARD_NAME",
    "QueueSharder",
    "QueueSharderPolicies",
    "ShardDecision",
    "decide_shards",
]

log = logging.getLogger(__name__)

#: The start of a shard's node name (Curator's ``QueueSharder`` prefix), before a UUID.
SHARD_NAME = "queue-"


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be int, not {type(value).__name__}")
    if value <= 0:
        raise BadArgumentsError(f"{name} must be a positive number, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class QueueSharderPolicies:
    """When a :class:`QueueSharder` adds shards (Curator's ``QueueSharderPolicies``, with its
    defaults). ``threshold_check_interval`` is in seconds (Curator's ``thresholdCheckMs``)."""

    #: children of a shard from which the leader adds a shard
    new_queue_threshold: int = 10_000
    #: seconds between two checks of the shards
    threshold_check_interval: float = 30.0
    #: the leader adds no shard beyond this many
    max_queues: int = 10

    def __post_init__(self) -> None:
        _positive_int(self.new_queue_threshold, "new_queue_threshold")
        _positive_int(self.max_queues, "max_queues")
        interval = self.threshold_check_interval
        if validate_timeout(interval, "threshold_check_interval") is None or interval <= 0:
            raise BadArgumentsError(
                f"threshold_check_interval must be a positive number of seconds, got {interval!r}"
            )


@dataclass(frozen=True, slots=True)
class ShardDecision:
    """What one threshold check decided (see :func:`decide_shards`)."""

    #: the shards puts go to from now on (empty: any shard)
    preferred: frozenset[str]
    #: add a shard now
    add_shard: bool
    #: a shard is at the threshold and this leader may add none: there are max_queues
    at_max: bool
    #: the largest count at the threshold (for the log), 0 if none
    largest: int = 0


def decide_shards(
    sizes: Mapping[str, int],
    preferred: Set[str],
    *,
    leader: bool,
    shard_count: int,
    policies: QueueSharderPolicies,
) -> ShardDecision:
    """Curator's threshold check over plain data: ``sizes`` are the children counts of the
    shards listed now, ``preferred`` the shards preferred so far, ``shard_count`` the shards
    this sharder knows. A shard at the threshold leaves the preferred set, one at half of it
    or below joins it, one in between keeps its place; a leader adds a shard if any is at
    the threshold and there are fewer than ``max_queues``."""
    threshold = policies.new_queue_threshold
    keep = set(preferred)
    largest = 0
    over = False
    for shard, size in sizes.items():
        if size >= threshold:
            over = True
            largest = max(largest, size)
            keep.discard(shard)
        elif size <= threshold // 2:
            keep.add(shard)
    add = over and leader and shard_count < policies.max_queues
    at_max = over and leader and not add
    return ShardDecision(frozenset(keep), add, at_max, largest)


class QueueSharder:
    """A queue spread over :class:`~aiocoord.Queue` shards that a leader adds as they fill
    (Curator's ``QueueSharder``); see the module docstring.

    ``async with QueueSharder(client, "/jobs", "/jobs-leader") as sharder:`` starts it (a first
    shard is made if there is none) and closes it. ``await sharder.put(b"job")`` adds an item to a
    random preferred shard; ``await sharder.get(timeout)`` takes one from any shard, waiting for one
    if all are empty (``aiocoord.TimeoutError`` after ``timeout`` seconds). :meth:`queue` is a shard
    to put to (Curator's ``getQueue``), :attr:`shard_paths` the shards known, :meth:`check` runs the
    periodic check now. ``policies`` is a :class:`QueueSharderPolicies` (None: Curator's defaults);
    ``acl`` is the ACL of the nodes it creates, parents included (None: the client's
    ``acl_provider``, else OPEN_ACL_UNSAFE).

    **Cancellation.** A cancelled ``get()`` never loses an item (see
    :class:`~aiocoord.Queue`): what its claim took is kept by the shard for the next
    ``get()``, or put back at ``close()``.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        leader_path: str,
        *,
        policies: QueueSharderPolicies | None = None,
        acl: Sequence[ACL] | None = None,
    ) -> None:
        #: the client whose session makes and takes the shards' nodes
        self.client: Client = check_client(client)
        #: the sharder's path, a container whose children are the shards (as given, under
        #: the client's chroot)
        self.path: str = validate_path(path)
        if path == "/":
            raise BadArgumentsError("a QueueSharder cannot live on the root node")
        if policies is not None and not isinstance(policies, QueueSharderPolicies):
            raise InvalidTypeError(
                f"policies must be QueueSharderPolicies, not {type(policies).__name__}"
            )
        #: when shards are added (Curator's defaults if none was given)
        self.policies: QueueSharderPolicies = (
            policies if policies is not None else QueueSharderPolicies()
        )
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: this sharder's part in the election at ``leader_path`` (only the leader adds
        #: shards); started by :meth:`start`, closed by :meth:`close`
        self.latch: LeaderLatch = LeaderLatch(client, leader_path, acl=self.acl)
        self._shards: dict[str, Queue] = {}
        self._preferred: frozenset[str] = frozenset()
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._closed = False

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Make the path (a container), take its children for shards (or make a first one),
        join the leader election and start the periodic check."""
        if self._started:
            raise CoordinationError(
                f"this QueueSharder on {self.path} was already started; make a new one"
            )
        self._started = True
        await self.client.ensure_path(self.path, container=True, acl=self.acl)
        names = await self.client.children(self.path)
        for name in names:
            self._adopt(self._shard_path(name))
        if not names:
            await self._add_shard()
        await self.latch.start()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"aiocoord-queue-sharder:{self.path}"
        )

    async def close(self) -> None:
        """Stop the periodic check (awaited), leave the election and close every shard.
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        task = self._task
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.latch.close()
        for shard in list(self._shards.values()):
            await shard.close()

    async def __aenter__(self) -> QueueSharder:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- shards ---------------------------------------------------------------------------

    @property
    def shard_count(self) -> int:
        """How many shards this sharder knows (Curator's ``getShardQty``)."""
        return len(self._shards)

    @property
    def shard_paths(self) -> frozenset[str]:
        """The paths of the shards this sharder knows (Curator's ``getQueuePaths``)."""
        return frozenset(self._shards)

    @property
    def preferred_paths(self) -> frozenset[str]:
        """The shards puts go to (empty: any shard), as of the last check."""
        return self._preferred

    def queue(self) -> Queue:
        """A shard to put to: a random preferred one, else any (Curator's ``getQueue``)."""
        self._check_started()
        pool = sorted(self._preferred & self._shards.keys()) or sorted(self._shards)
        return self._shards[random.choice(pool)]

    def _check_started(self) -> None:
        if not self._started or self._closed:
            state = "closed" if self._closed else "not started"
            raise CoordinationError(f"the QueueSharder on {self.path} is {state}")

    def _shard_path(self, name: str) -> str:
        return join(self.path, name)

    def _adopt(self, shard_path: str) -> None:
        """Know the shard at ``shard_path`` (Curator's ``addNewQueueIfNeeded``): a new one is
        preferred until a check says otherwise."""
        if shard_path not in self._shards:
            self._shards[shard_path] = Queue(self.client, shard_path, acl=self.acl)
            self._preferred = self._preferred | {shard_path}

    async def _add_shard(self) -> None:
        shard_path = self._shard_path(SHARD_NAME + str(uuid.uuid4()))
        with contextlib.suppress(NodeExistsError):
            await self.client.create(
                shard_path, make_parents=True, parents_as_containers=True, acl=self.acl
            )
        self._adopt(shard_path)

    async def check(self) -> None:
        """One threshold check now (what the background task does every
        ``threshold_check_interval``): adopt the shards others added, update the preferred
        shards, and add a shard if this sharder leads and one is at the threshold."""
        self._check_started()
        names = await self.client.children(self.path)
        sizes: dict[str, int] = {}
        for name in names:
            shard_path = self._shard_path(name)
            self._adopt(shard_path)
            stat = await self.client.exists(shard_path)
            if stat is not None:  # deleted since the listing: nothing to count
                sizes[shard_path] = stat.num_children
        decision = decide_shards(
            sizes,
            self._preferred,
            leader=self.latch.is_leader,
            shard_count=len(self._shards),
            policies=self.policies,
        )
        self._preferred = decision.preferred
        if decision.add_shard:
            log.info(
                "adding a shard to %s: a shard has %d children (threshold %d)",
                self.path,
                decision.largest,
                self.policies.new_queue_threshold,
            )
            await self._add_shard()
        elif decision.at_max:
            log.warning(
                "%s has its max of %d shards and one is at the threshold; consider raising "
                "max_queues",
                self.path,
                self.policies.max_queues,
            )

    async def _run(self) -> None:
        # Curator's policy is a period, not an event: the counts change with every put and
        # take, and a watch per shard would fire on each of them.
        while True:
            await asyncio.sleep(self.policies.threshold_check_interval)
            try:
                await self.check()
            except CoordinationError as exc:
                log.warning(
                    "checking the shards of %s failed (tried again later): %s", self.path, exc
                )

    # --- items ----------------------------------------------------------------------------

    async def put(self, data: bytes) -> None:
        """Add ``data`` to a shard (see :meth:`queue`), exactly once."""
        await self.queue().put(data)

    async def put_all(self, items: Sequence[bytes]) -> None:
        """Add several items as one node of one shard (Curator's ``putMulti``)."""
        await self.queue().put_all(items)

    async def get(self, timeout: float | None = None) -> bytes:
        """Take an item from any shard (tried in random order), waiting for one if all are
        empty; shards added meanwhile are waited on too. Raises
        :class:`aiocoord.TimeoutError` after ``timeout`` seconds with nothing taken."""
        self._check_started()
        timeout = validate_timeout(timeout)
        with expiring(f"no item taken from {self.path}", timeout):
            return await self._get_within(deadline_after(timeout))

    async def _get_within(self, deadline: Deadline) -> bytes:
        while True:
            shards = list(self._shards.values())
            random.shuffle(shards)
            for shard in shards:
                # The shard's own take: claims exactly once, keeps what a cancelled get took.
                item = await shard._take(deadline, wait=False)
                if item is not None:
                    return item
            try:
                await self._wait_for_items(deadline)
            except SessionExpiredError:
                continue  # a new session: look again

    async def _wait_for_items(self, deadline: Deadline) -> None:
        """Return when a shard may have an item: one has items now, or a watch on a shard's
        children or on the shard list fired (Expired at ``deadline``)."""
        watches: list[Watch] = []
        try:
            try:
                names, watch = await call_with_watch(
                    self.client.children(self.path, watch=True), deadline
                )
            except NoNodeError:
                # Every shard deleted and the container reaped: wait for it to come back.
                names = []
                stat, watch = await call_with_watch(
                    self.client.exists(self.path, watch=True), deadline
                )
                if stat is not None:
                    watch.cancel()
                    return
            watches.append(watch)
            for name in names:
                self._adopt(self._shard_path(name))
            for shard_path in list(self._shards):
                try:
                    items, watch = await call_with_watch(
                        self.client.children(shard_path, watch=True), deadline
                    )
                except NoNodeError:
                    continue
                watches.append(watch)
                if any(n.startswith(QUEUE_ITEM_NAME) for n in items):
                    return  # arrived before the watch: take it now
            await wait_watches(watches, deadline)
        finally:
            for watch in watches:
                watch.cancel()

    def __repr__(self) -> str:
        return f"<QueueSharder {self.path} shards={len(self._shards)}>"
