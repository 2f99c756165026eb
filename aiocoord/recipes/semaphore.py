"""A distributed counting semaphore on Apache Curator's ``InterProcessSemaphoreV2`` layout.

**Layout.** ``<path>/locks`` is a lock (``_c_<uuid>-lock-<seq>`` nodes, as
:class:`~aiocoord.recipes.lock.Lock`) and ``<path>/leases`` holds one protected ephemeral
sequential node per lease, ``_c_<uuid>-lease-<seq>``, with the holder's identifier as data.
Java services using ``InterProcessSemaphoreV2`` (or ``InterProcessSemaphoreMutex``, which is
one with a single lease) on the same path share the leases.

**Algorithm.** Only the holder of ``<path>/locks`` adds lease nodes: it creates its ``n`` lease
nodes and waits, watching the children of ``<path>/leases``, until there are at most
``max_leases`` of them; then it lets the lock go. Every other contender waits in the lock's
queue, watching one node, so a returned lease wakes one process: no herd. While the lock is
held lease nodes can only go, so at no time do more than ``max_leases`` leases hold. Taking
all ``n`` leases in one tenure of the lock (Curator takes one per tenure) means two callers
each wanting several leases cannot each end up holding part of what they need.

**kazoo's layout** (``layout="kazoo"``) is kazoo's ``Semaphore``: the lock is a kazoo lock on the
sibling path ``<path>-__lock__``, the leases are ephemeral ``<path>/<uuid hex>`` nodes with the
holder's identifier as data, and ``max_leases`` is stored as text on ``<path>`` itself. An
object whose ``max_leases`` differs from the stored number is refused as kazoo refuses it
(:class:`MaxLeasesMismatchError`, a ValueError), before any lease or lock node is written;
kazoo's processes refuse ours alike. The holder of kazoo's lock takes its leases in kazoo's
order: it waits, watching the children of ``<path>``, until fewer than ``max_leases`` (for
``acquire(n)``: at most ``max_leases - n``) exist, and only then creates its lease nodes, so a
waiter has no node that kazoo's ``lease_holders()`` would count as a holder. Under the one
lock kazoo and aiocoord holders together never exceed ``max_leases``. ``acquire(n)`` takes all
``n`` in one tenure (a kazoo object holds one lease). A lease node of kazoo's layout has no
sequence number: :attr:`Lease.fencing_token` (the node's creation zxid) still grows. The
semaphore's own node stays once made, with ``max_leases`` on it, as kazoo leaves it, and so
does the lock's path: in kazoo's layout every parent is a persistent node, as kazoo's
``ensure_path`` makes it (a container would be removed by the server once empty, under a kazoo
object that counts on it).

**Cancellation and timeouts.** An acquire that fails, times out or is cancelled leaves no lease
node and no lock node behind (deleted now, or once reconnected). Lease loss is reported as for
locks: :attr:`Lease.lost` fires and, in ``async with sem.lease()`` with ``cancel_on_loss``,
the body is cancelled and LockLostError raised; ``suspended_is_loss`` picks the policy.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from types import TracebackType

from aiocoord._client import door
from aiocoord._deadline import Deadline, Expired, bounded, deadline_after, left_or_zero, timed_out
from aiocoord._paths import join
from aiocoord._validation import validate_flag, validate_path, validate_timeout
from aiocoord._wire.data import ACL
from aiocoord.acl import check_acl
from aiocoord.client import Client, Watch
from aiocoord.errors import (
    BadArgumentsError,
    InvalidTypeError,
    MaxLeasesMismatchError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from aiocoord.recipes._args import check_client, check_identifier, current_task, default_identifier
from aiocoord.recipes._contention.contender import (
    ProtectedNode,
    QueueNode,
    Restart,
    check_entry,
)
from aiocoord.recipes._contention.drivers import LeaseDriver
from aiocoord.recipes._contention.holding import Holding, LossEvent
from aiocoord.recipes._contention.kernel import SequentialQueue
from aiocoord.recipes._contention.naming import KAZOO_LOCK
from aiocoord.recipes._contention.participants import Participant
from aiocoord.recipes.layout import Layout, check_layout
from aiocoord.recipes.lock import LOCK_NAME

__all__ = ["LEASE_NAME", "LEASES", "LOCKS", "Lease", "MaxLeasesMismatchError", "Semaphore"]

log = logging.getLogger(__name__)

#: Curator's InterProcessSemaphoreV2 names.
LOCKS = "locks"
LEASES = "leases"
LEASE_NAME = "lease-"


class Lease:
    """One lease of a :class:`Semaphore`. Return it with :meth:`release`."""

    def __init__(self, semaphore: Semaphore, node: QueueNode) -> None:
        #: the semaphore this lease was taken from
        self.semaphore: Semaphore = semaphore
        # Made in the same step as the grant: no state change can fall in between.
        self._holding = Holding(
            semaphore.client,
            node,
            what=f"lease {node.path}",
            logger=log,
            suspended_is_loss=semaphore.suspended_is_loss,
            cancel_on_loss=semaphore.cancel_on_loss,
        )

    @property
    def node(self) -> QueueNode:
        """The lease node."""
        return self._holding.node

    @property
    def lost(self) -> LossEvent:
        """Fires if the lease is lost while held (see the module docstring)."""
        return self._holding.lost

    @property
    def path(self) -> str:
        """The lease node's path."""
        return self._holding.node.path

    @property
    def fencing_token(self) -> int:
        """The lease node's creation zxid."""
        return self._holding.fencing_token

    @property
    def is_held(self) -> bool:
        """True until the lease is released or lost."""
        return self._holding.is_held

    async def release(self) -> None:
        """Return the lease (at once locally; the node is deleted now or once reconnected).

        Releasing again does nothing. Raises LockLostError if the lease had been lost.
        """
        await self._holding.release()

    def _discard_now(self) -> None:
        """Give the lease back without waiting (for clean-up while unwinding)."""
        self._holding.discard()

    def __repr__(self) -> str:
        holding = self._holding
        state = "held" if holding.is_held else "released" if holding.released else "lost"
        return f"<Lease {holding.node.path} {state}>"


class _LeaseContext:
    """``async with sem.lease(timeout) as lease:`` — one lease for the body."""

    def __init__(self, semaphore: Semaphore, timeout: float | None) -> None:
        self._semaphore = semaphore
        self._timeout = timeout
        self._lease: Lease | None = None

    async def __aenter__(self) -> Lease:
        (lease,) = await self._semaphore.acquire(1, self._timeout)
        self._lease = lease
        lease._holding.enter_body(current_task())
        return lease

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        lease = self._lease
        assert lease is not None
        self._lease = None
        holding = lease._holding
        task = current_task()
        if not holding.lost.is_set():
            await holding.exit_body(task, exc)
            await holding.release()
            return
        await holding.leave()
        await holding.exit_body(task, exc)


class Semaphore:
    """At most ``max_leases`` leases held at once across every process using ``path``.

    ``async with sem.lease():`` for one lease, or ``leases = await sem.acquire(n)`` and ``await
    lease.release()`` for each. ``acl`` is the ACL of the nodes it creates, parents included (None:
    the client's ``acl_provider``, else OPEN_ACL_UNSAFE). Bad arguments raise BadArgumentsError/
    InvalidPathError/InvalidTypeError before anything is sent.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        max_leases: int,
        *,
        identifier: str | None = None,
        cancel_on_loss: bool = False,
        suspended_is_loss: bool = False,
        acl: Sequence[ACL] | None = None,
        layout: Layout | str = Layout.CURATOR,
    ) -> None:
        #: the client whose session holds the lease and lock nodes
        self.client: Client = check_client(client)
        #: the semaphore's path, as given (see the module docstring for what lives there)
        self.path: str = validate_path(path)
        #: whose node layout the semaphore speaks (:class:`~aiocoord.Layout`)
        self.layout: Layout = check_layout(layout, "Semaphore")
        if self.layout is Layout.KAZOO and path == "/":
            raise BadArgumentsError("a Semaphore in kazoo's layout cannot live on the root node")
        if isinstance(max_leases, bool) or not isinstance(max_leases, int):
            raise InvalidTypeError(f"max_leases must be int, not {type(max_leases).__name__}")
        if max_leases < 1:
            raise BadArgumentsError(f"max_leases must be >= 1, got {max_leases}")
        #: the most leases held at once across every process using the path
        self.max_leases: int = max_leases
        #: the data of this object's lease and lock nodes; None: each gets
        #: ``host:pid:task-name`` of the task that acquires
        self.identifier: str | None = check_identifier(identifier)
        #: whether a loss cancels the body of ``async with sem.lease():`` (which then raises
        #: :class:`~aiocoord.LockLostError`)
        self.cancel_on_loss: bool = validate_flag(cancel_on_loss, "cancel_on_loss")
        #: whether a lost connection (SUSPENDED) already loses a lease, not only the
        #: session's end
        self.suspended_is_loss: bool = validate_flag(suspended_is_loss, "suspended_is_loss")
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        if self.layout is Layout.KAZOO:
            self._locks = SequentialQueue(
                client,
                f"{path}-{KAZOO_LOCK}",
                KAZOO_LOCK,
                LeaseDriver(1),
                acl=self.acl,
                layout=Layout.KAZOO,
            )
            self._leases_path = path
        else:
            self._locks = SequentialQueue(
                client, join(path, LOCKS), LOCK_NAME, LeaseDriver(1), acl=self.acl
            )
            self._leases_path = join(path, LEASES)
        # kazoo's layout: whether the stored max_leases was checked (or written) yet
        self._max_checked = False

    def lease(self, timeout: float | None = None) -> _LeaseContext:
        """``async with sem.lease():`` holds one lease for the body; raises
        :class:`aiocoord.TimeoutError` if none came within ``timeout`` seconds."""
        validate_timeout(timeout)
        return _LeaseContext(self, timeout)

    async def participants(self) -> list[Participant]:
        """The lease holders, in lease order, each ``holds``: the nodes of Curator's
        ``getParticipantNodes()``, as the record every recipe's listing uses (see
        :class:`Participant`; kazoo's ``lease_holders()`` is ``[p.identifier for p in ...]``).
        Those waiting for a lease are not listed (``python -m aiocoord inspect`` shows them).
        """
        if self.layout is Layout.KAZOO:
            leases = await self._kazoo_leases()
        else:
            leases = await SequentialQueue(
                self.client, self._leases_path, LEASE_NAME, LeaseDriver()
            ).participants(LEASE_NAME)
        return [Participant(data.decode("utf-8", "replace"), True, name) for name, data in leases]

    async def _kazoo_leases(self) -> list[tuple[str, bytes]]:
        """kazoo's lease nodes (every child of the path, in name order) with their data."""
        try:
            names = sorted(await self.client.children(self.path))
        except NoNodeError:
            return []
        found: list[tuple[str, bytes]] = []
        for name in names:
            try:
                data, _ = await self.client.get(join(self.path, name))
            except NoNodeError:
                continue  # released meanwhile
            found.append((name, data))
        return found

    async def _check_max_leases(self) -> None:
        """kazoo's layout: store ``max_leases`` on the path if we make it, else refuse a
        stored number that differs (kazoo's check; data that is no number is left alone, as
        kazoo does). Before any lease or lock node is written."""
        if self._max_checked:
            return
        client = self.client
        try:
            await client.create(
                self.path, str(self.max_leases).encode(), make_parents=True, acl=self.acl
            )
        except NodeExistsError:
            data, _ = await client.get(self.path)
            try:
                stored: int | None = int(data.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                stored = None
            if stored is not None and stored != self.max_leases:
                raise MaxLeasesMismatchError(self.path, stored, self.max_leases) from None
        # The lease nodes' parent is there: their creates need not make it (were it deleted
        # meanwhile, they make it again as kazoo's ensure_path does, without max_leases).
        door.note_parent(client, self.path)
        self._max_checked = True

    def _data(self) -> bytes:
        ident = self.identifier
        if ident is None:
            ident = default_identifier(asyncio.current_task())
        return ident.encode()

    async def acquire(self, n: int = 1, timeout: float | None = None) -> list[Lease]:
        """Take ``n`` leases at once and return them. Raises :class:`aiocoord.TimeoutError`
        if ``timeout`` seconds pass first (then, as after an error or cancellation, no node of
        this call is left)."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise InvalidTypeError(f"n must be int, not {type(n).__name__}")
        if not 1 <= n <= self.max_leases:
            raise BadArgumentsError(f"n must be in 1..{self.max_leases}, got {n}")
        timeout = validate_timeout(timeout)
        leases = await self._acquire(n, timeout)
        if not leases:
            raise timed_out(f"{n} lease(s) of {self.path} not acquired", timeout)
        return leases

    async def _acquire(self, n: int, timeout: float | None) -> list[Lease]:
        """The leases, or [] once ``timeout`` passed."""
        deadline = deadline_after(timeout)
        data = self._data()
        # Refused before the path, its number or the lock is written.
        check_entry(self.client, self._leases_path, LEASE_NAME, data, self.acl)
        check_entry(self.client, self._locks.path, self._locks.lock_name, data, self.acl)
        while True:
            if self.layout is Layout.KAZOO:
                try:
                    await bounded(self._check_max_leases(), deadline)
                except Expired:
                    return []
            left = left_or_zero(deadline)
            if left == 0.0:
                return []
            lock_node = await self._locks.acquire(
                data, timeout=left, suspended_is_loss=self.suspended_is_loss
            )
            if lock_node is None:
                return []
            leases: list[Lease] = []
            try:
                if self.layout is Layout.KAZOO:
                    leases = await self._take_when_free(n, data, deadline, lock_node)
                else:
                    leases = await self._take(n, data, deadline)
            except Restart:
                pass  # our session ended while we held the lock: queue again
            except Expired:
                await self._locks.release(lock_node)
                return []
            except BaseException:
                await self._locks.release(lock_node)
                raise
            try:
                await self._locks.release(lock_node)
            except BaseException:
                for lease in leases:
                    lease._discard_now()
                raise
            if leases:
                return leases

    async def _take(self, n: int, data: bytes, deadline: Deadline) -> list[Lease]:
        """Holding the lock (Curator's layout): create ``n`` lease nodes and wait until they
        fit, as ``InterProcessSemaphoreV2`` does."""
        client = self.client
        entries = [
            ProtectedNode(
                client,
                self._leases_path,
                LEASE_NAME,
                data,
                acl=self.acl,
                layout=self.layout,
            )
            for _ in range(n)
        ]
        watch: Watch | None = None
        try:
            # Let the creates be written first: the listing then pipelines with them.
            await asyncio.sleep(0)
            try:
                first: list[str] | None = await bounded(
                    client.children(self._leases_path), deadline
                )
            except NoNodeError:
                first = None
            nodes = [await e.result(deadline) for e in entries]
            if first is None or any(node.name not in first for node in nodes):
                first = await self._leases_of_ours(deadline)
            names: list[str] = first
            while True:
                if any(node.name not in names for node in nodes):
                    raise Restart()  # the session that held them has ended
                if len(names) <= self.max_leases:
                    if not all(node.alive_in(client) for node in nodes):
                        raise Restart()
                    return [Lease(self, node) for node in nodes]
                if watch is not None:
                    try:
                        await bounded(watch, deadline)
                    except SessionExpiredError:
                        raise Restart() from None
                    watch = None
                try:
                    names, watch = await bounded(
                        client.children(self._leases_path, watch=True), deadline
                    )
                except NoNodeError:
                    raise Restart() from None  # see _leases_of_ours
        except BaseException:
            for e in entries:
                await e.discard()
            raise
        finally:
            if watch is not None:
                watch.cancel()

    async def _take_when_free(
        self, n: int, data: bytes, deadline: Deadline, lock_node: QueueNode
    ) -> list[Lease]:
        """Holding kazoo's lock (kazoo's layout): wait, watching the children of the path,
        until ``n`` more leases fit, then create them. Unlike Curator's order (create, then
        wait) no node of a waiter exists: kazoo's ``lease_holders()`` counts every child as a
        holder, and kazoo's lock holder takes a lease only while fewer than ``max_leases``
        exist. While the lock is held lease nodes can only go, so they still fit once made."""
        client = self.client
        watch: Watch | None = None
        entries: list[ProtectedNode] = []
        try:
            while True:
                try:
                    names, armed = await bounded(client.children(self.path, watch=True), deadline)
                except NoNodeError:
                    # Deleted (kazoo's way to change max_leases): store ours again and queue
                    # again, as a new kazoo object would.
                    self._max_checked = False
                    raise Restart() from None
                if _fit(len(names), n, self.max_leases):
                    armed.cancel()
                    break
                watch = armed
                try:
                    await bounded(armed, deadline)
                except SessionExpiredError:
                    raise Restart() from None  # the lock went with the session
                watch = None
            # kazoo's lease: a plain ephemeral ``<uuid hex>``, found again by that name.
            entries = [
                ProtectedNode(
                    client,
                    self.path,
                    "",
                    data,
                    sequential=False,
                    acl=self.acl,
                    layout=self.layout,
                )
                for _ in range(n)
            ]
            nodes = [await e.result(deadline) for e in entries]
            # Made in the lock's session, so while the lock was ours (its node is ephemeral):
            # a lease made in a later session could be one too many.
            if not all(_same_session(node, lock_node) and node.alive_in(client) for node in nodes):
                raise Restart()
            return [Lease(self, node) for node in nodes]
        except BaseException:
            for e in entries:
                await e.discard()
            raise
        finally:
            if watch is not None:
                watch.cancel()

    async def _leases_of_ours(self, deadline: Deadline) -> list[str]:
        """The lease names, from a listing that must hold our lease nodes. No leases parent
        means they are gone: their session ended, and the server then removed the empty
        container. Queue again (Restart)."""
        try:
            return await bounded(self.client.children(self._leases_path), deadline)
        except NoNodeError:
            raise Restart() from None

    def __repr__(self) -> str:
        return f"<Semaphore {self.path} max_leases={self.max_leases}>"


def _fit(held: int, wanted: int, max_leases: int) -> bool:
    """kazoo's rule, for ``wanted`` leases at once: take them while ``held`` (every child of
    the path) leaves room for all of them."""
    return held + wanted <= max_leases


def _same_session(node: QueueNode, other: QueueNode) -> bool:
    return node.session_id == other.session_id and node.generation == other.generation
