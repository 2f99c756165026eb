"""What one client knows about one queue path: names it has seen go, and listings that its
waiters share.

**Shared listings.** Listings of the same path by the same client are shared when they were
sent after the caller's create had been sent (contenders entering in one burst share one); a
listing that does not contain the caller's node is never trusted.

**Gone names.** A client learns that a node is gone from its own deletions (the local
hand-over, :func:`~aiocoord.recipes._contention.contender.delete_node`), from its waiters' deletion
events and from NoNode answers; each waiter of the client on the path benefits at once. A node
granted by an exclusive driver (a mutex, a writer) and then gone *clears* everything ahead of it:
when it was granted nothing was left ahead, and nothing can enter ahead later.

**Whose state.** The state lives per client, in ``door.extension_state``, and per path
for as long as some waiter of the client uses it: it ends with its users, and with the client.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools

from aiocoord._client import door
from aiocoord._client.door import children_now
from aiocoord._futures import fail
from aiocoord._paths import join, sequence_of, sort_by_sequence, split
from aiocoord.client import Client
from aiocoord.errors import NoNodeError
from aiocoord.recipes._contention.drivers import Driver

__all__ = [
    "QueueState",
    "enter_state",
    "forget_node",
    "leave_state",
    "next_stamp",
    "queued_nodes",
]

#: How many gone node names each (client, path) remembers; forgetting one only costs a probe.
_GONE_LIMIT = 65536
#: How many of the nearest nodes ahead a waiter keeps in view (more only when its driver needs
#: more): deciding costs O(window), not O(queue length), so N waiters cost O(N), not O(N^2).
_WINDOW = 32

# Orders events in this process: a shared listing may serve a caller only if it was sent after
# the caller's create was.
next_stamp = itertools.count(1).__next__


class _Listing:
    """A listing of one queue path that several waiters of one client may share."""

    __slots__ = ("_names", "future", "sent")

    def __init__(self) -> None:
        #: failed only through fail(): its exception is marked seen for joiners that left
        self.future: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        #: when the request was handed to the session; None while it waits to be sent
        self.sent: int | None = None
        self._names: frozenset[str] | None = None

    def contains(self, name: str) -> bool:
        """Whether the (completed) listing holds ``name``."""
        if self._names is None:
            self._names = frozenset(self.future.result())
        return name in self._names


class QueueState:
    """What one client knows about one queue path: names seen gone, and a shared listing.

    Invariants (the one place they are written; :meth:`check` asserts them, and each mutation
    asserts the part it touches):

    1. ``gone`` only grows but for forgetting its oldest names past a bound; nothing once seen
       gone comes back (sequence numbers are never reused), so a name is never unmarked.
    2. ``cleared`` is a subset of ``gone``: a name is cleared only as it is marked gone, and
       forgotten with it.
    3. ``mine`` and ``gone`` are disjoint: a node of ours seen gone is no longer ours to hand
       over.
    4. No future waits on a name in ``gone`` (:meth:`mark_gone` resolves them; :meth:`when_gone`
       on such a name is resolved at once).
    5. ``users`` is never negative; the state is dropped when it reaches 0.
    """

    __slots__ = (
        "_last",
        "_listing",
        "_sorted",
        "_waiting",
        "cleared",
        "gone",
        "layout_checked",
        "mine",
        "users",
    )

    def __init__(self) -> None:
        self.gone: dict[str, None] = {}  # an ordered set: the oldest is forgotten first
        #: gone names that had been granted by an exclusive driver: when such a node was
        #: granted, no node ahead of it was left, and none can enter ahead later
        self.cleared: dict[str, None] = {}
        #: nodes of this client's waiters (until seen gone): one may be handed over locally
        self.mine: dict[str, None] = {}
        self.users = 0
        self._listing: _Listing | None = None
        self._last: _Listing | None = None  # the latest completed listing
        self._sorted: tuple[list[str], list[tuple[int, str]]] | None = None
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}
        #: the latest listing searched for contenders of another layout (the kernel searches
        #: each listing once, however many waiters share it)
        self.layout_checked: list[str] | None = None

    def sorted_keys(self, names: list[str]) -> list[tuple[int, str]]:
        """``(sequence, name)`` of the listing ``names``, sorted; computed once per listing
        (waiters sharing a listing share the very list object)."""
        cached = self._sorted
        if cached is not None and cached[0] is names:
            return cached[1]
        keyed = sorted((seq, n) for n in names if (seq := sequence_of(n)) is not None)
        self._sorted = (names, keyed)
        return keyed

    def ahead(
        self, names: list[str], name: str, sequence: int, driver: Driver
    ) -> tuple[list[str], bool]:
        """The nearest nodes of the listing ``names`` ahead of node ``name`` (at ``sequence``)
        that ``driver`` finds relevant and that are not known to be gone, oldest first, at most
        a window of them; and whether more are further ahead."""
        keyed = self.sorted_keys(names)
        i = bisect.bisect_left(keyed, (sequence, ""))
        relevant = driver.relevant
        gone = self.gone
        cleared = self.cleared
        window = driver.window
        limit = len(keyed) if window is None else max(_WINDOW, window)
        out: list[str] = []
        truncated = False
        while i > 0:
            i -= 1
            key = keyed[i][1]
            if key in cleared:
                break  # granted exclusively, then gone: nothing before it is left
            if key == name or key in gone or not relevant(key):
                continue
            out.append(key)
            if len(out) >= limit:
                truncated = i > 0
                break
        out.reverse()
        return out, truncated

    def mark_gone(self, name: str, cleared: bool = False) -> None:
        """Record that node ``name`` is gone (``cleared``: it had been granted exclusively),
        and wake whoever waits for that news (:meth:`when_gone`)."""
        gone = self.gone
        gone[name] = None
        if len(gone) > _GONE_LIMIT:
            # Forgetting a name only costs a probe later; it leaves both sets (invariant 2).
            oldest = next(iter(gone))
            del gone[oldest]
            self.cleared.pop(oldest, None)
        if cleared:
            self.cleared[name] = None
        self.mine.pop(name, None)
        for fut in self._waiting.pop(name, ()):
            if not fut.done():
                fut.set_result(None)
        assert name not in self.mine and name not in self._waiting  # invariants 3 and 4

    def add_mine(self, name: str) -> None:
        """Record that node ``name`` is one of this client's waiters' (until seen gone)."""
        if name not in self.gone:  # invariant 3: a node seen gone is nobody's to hand over
            self.mine[name] = None

    def check(self) -> None:
        """Assert every invariant of the class docstring (O(size): for tests)."""
        assert len(self.gone) <= _GONE_LIMIT  # 1
        assert self.cleared.keys() <= self.gone.keys()  # 2
        assert not (self.mine.keys() & self.gone.keys())  # 3
        assert not (self._waiting.keys() & self.gone.keys())  # 4
        assert self.users >= 0  # 5

    def when_gone(self, name: str) -> asyncio.Future[None]:
        """A future resolved when this client learns ``name`` is gone (see mark_gone)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if name in self.gone:
            fut.set_result(None)
        else:
            self._waiting.setdefault(name, []).append(fut)
        return fut

    def stop_waiting(self, name: str, fut: asyncio.Future[None]) -> None:
        """Withdraw a future of :meth:`when_gone` that is no longer awaited."""
        futures = self._waiting.get(name)
        if futures is not None and fut in futures:
            futures.remove(fut)
            if not futures:
                del self._waiting[name]

    async def children(
        self,
        client: Client,
        path: str,
        after: int,
        *,
        gather: bool = False,
        containing: str | None = None,
    ) -> list[str]:
        """The children of ``path`` from a listing sent after stamp ``after``.

        A listing in flight serves if it was sent after ``after``, or is still to be sent.
        With ``gather``, a new listing waits one loop iteration before it is sent, so that
        contenders entering in the same burst (their creates written meanwhile) share it.

        With ``containing`` (the caller's node), any listing that holds that node serves,
        whenever it was sent, the latest completed one included: it was read after the node
        was made, so every node that can be ahead of it is there unless gone since (and a
        superset of the live nodes is always safe to decide on). A burst of contenders that
        found no parent thus shares one listing instead of sending one each.
        """
        if containing is not None:
            last = self._last
            if last is not None and last.contains(containing):
                return last.future.result()
        current = self._listing
        if (
            current is not None
            and not current.future.done()
            and (containing is not None or current.sent is None or current.sent > after)
        ):
            with contextlib.suppress(_LeaderGone):
                names = await asyncio.shield(current.future)
                if containing is None or current.contains(containing):
                    return names
        listing = self._listing = _Listing()
        fut = listing.future
        try:
            if gather:
                await asyncio.sleep(0)
            listing.sent = next_stamp()
            names = await children_now(client, path)
        except asyncio.CancelledError:
            fail(fut, _LeaderGone())  # the joiners list for themselves
            raise
        except BaseException as exc:
            fail(fut, exc)
            raise
        finally:
            if self._listing is listing:
                self._listing = None
        fut.set_result(names)
        self._last = listing
        return names


class _LeaderGone(Exception):
    """The task whose listing others joined was cancelled."""


def _states(client: Client) -> dict[str, QueueState]:
    return door.extension_state(client, QueueState, dict)


def enter_state(client: Client, path: str) -> QueueState:
    """The client's state of queue ``path``, made if need be; pair with :func:`leave_state`."""
    per_path = _states(client)
    state = per_path.get(path)
    if state is None:
        state = per_path[path] = QueueState()
    state.users += 1
    return state


def leave_state(client: Client, path: str, state: QueueState) -> None:
    """One user less of ``state``; the last one lets it go."""
    state.users -= 1
    assert state.users >= 0  # invariant 5 of QueueState
    if state.users == 0:
        per_path = _states(client)
        if per_path.get(path) is state:
            del per_path[path]


def forget_node(client: Client, path: str, cleared: bool = False) -> None:
    """Tell this client's waiters on the node's queue that the node is gone."""
    parent, name = split(path)
    state = _states(client).get(parent)
    if state is not None:
        state.mark_gone(name, cleared)


async def queued_nodes(
    client: Client, path: str, name_filter: str | None = None
) -> list[tuple[str, bytes]]:
    """``(name, data)`` of every node queued under ``path``, in queue order (a fresh listing,
    not the shared one); ``name_filter`` keeps only names containing it. Nodes that vanish
    meanwhile are left out."""
    try:
        names = await client.children(path)
    except NoNodeError:
        return []
    if name_filter is not None:
        names = [n for n in names if name_filter in n]
    ordered = sort_by_sequence(names)
    replies = await asyncio.gather(
        *(client.get(join(path, n)) for n in ordered), return_exceptions=True
    )
    out: list[tuple[str, bytes]] = []
    for name, reply in zip(ordered, replies, strict=True):
        if isinstance(reply, NoNodeError):
            continue
        if isinstance(reply, BaseException):
            raise reply
        out.append((name, reply[0]))
    return out
