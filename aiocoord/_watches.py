"""The watch table: one-shot watches as futures, persistent watches as subscriptions.

ZooKeeper keeps at most one watch per (kind, path) per session, so every waiter on the same
(kind, path) shares it: the table maps each key to the set of futures waiting on it. Entries
are made *before* the request that sets the server watch is written, so an event that races
the reply still finds its waiter.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiocoord._deadline import within


class EventType(enum.IntEnum):
    """What happened to a watched node."""

    CREATED = 1
    DELETED = 2
    DATA_CHANGED = 3
    CHILDREN_CHANGED = 4


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """A fired watch: what happened, and to which path (relative to the client's chroot)."""

    type: EventType
    path: str


class WatchKind(enum.IntEnum):
    """The two kinds of one-shot watch the server keeps per path."""

    DATA = 1  # set by get() and exists(): fires on create, change, delete
    CHILD = 2  # set by children(): fires on child change and on delete


# Which one-shot kinds each event type triggers (ZooKeeper's ZKWatchManager rules).
_TRIGGERS: dict[int, tuple[WatchKind, ...]] = {
    1: (WatchKind.DATA,),
    2: (WatchKind.DATA, WatchKind.CHILD),
    3: (WatchKind.DATA,),
    4: (WatchKind.CHILD,),
}


class Watch:
    """A one-shot watch: await it for the :class:`WatchEvent` that fires it.

    Cancelling the awaiting task (or calling :meth:`cancel`) removes this waiter; when the last
    waiter on a server watch is gone, the server watch is removed too. If the session expires
    the await raises :class:`~aiocoord.SessionExpiredError`; if the client closes, it raises
    :class:`~aiocoord.ClientClosedError`.
    """

    __slots__ = ("_future", "_server_path", "kind", "path")

    def __init__(
        self, future: asyncio.Future[WatchEvent], kind: WatchKind, path: str, server_path: str
    ) -> None:
        self._future = future
        self._server_path = server_path
        self.kind = kind
        self.path = path

    def __await__(self) -> Generator[Any, None, WatchEvent]:
        return self._future.__await__()

    @property
    def server_path(self) -> str:
        """The watched path as the server knows it (with the client's chroot)."""
        return self._server_path

    def done(self) -> bool:
        """True once the watch fired, failed or was cancelled."""
        return self._future.done()

    def cancel(self) -> None:
        """Stop waiting; the shared server watch is removed if nobody else waits on it."""
        self._future.cancel()

    async def wait(self, timeout: float | None = None) -> WatchEvent:
        """Await the event; on timeout raise :class:`aiocoord.TimeoutError` and leave the
        watch armed."""
        return await within(asyncio.shield(self._future), timeout, f"no event on {self.path}")

    def fired(self) -> WatchEvent | None:
        """The event that fired the watch; None while it is armed, or if it failed or was
        cancelled."""
        fut = self._future
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            return fut.result()
        return None

    def failed(self) -> bool:
        """True if the watch ended without an event (the session expired, the client closed)."""
        fut = self._future
        return fut.done() and not fut.cancelled() and fut.exception() is not None

    def keep(self) -> None:
        """Leave the server watch armed until its event consumes it, without waiting for it:
        nothing is sent to remove it (a watch on a node the caller will delete anyway), and
        its outcome is not reported as unretrieved."""
        self._future.add_done_callback(_consume)

    def add_done_callback(self, callback: Callable[[Watch], None]) -> None:
        """Call ``callback(watch)`` once the watch fired, failed or was cancelled."""
        self._future.add_done_callback(lambda _fut: callback(self))

    def __repr__(self) -> str:
        return f"<Watch {self.kind.name} {self.path} {'done' if self.done() else 'pending'}>"


def _consume(fut: asyncio.Future[WatchEvent]) -> None:
    if not fut.cancelled():
        fut.exception()


@dataclass(slots=True)
class _Entry:
    waiters: set[asyncio.Future[WatchEvent]] = field(default_factory=set)
    # For restore after reconnect: a DATA watch on an existing node goes back as a data
    # watch, on a missing one as an exist watch (the server then fires CREATED/DELETED).
    exists: bool = True
    # Whether a request of a waiter of this entry has set the server watch (or a reconnect
    # restored it). Waiters share the entry, so the last one to leave may not be the one
    # whose request set it: then the watch must still be removed on the server.
    armed: bool = False


class PersistentWatch:
    """A persistent (optionally recursive) watch: ``async for event in watch``.

    Events are queued without bound in arrival (zxid) order. The iteration ends when the watch
    is closed; it raises SessionExpiredError if the session is lost.
    """

    def __init__(
        self, path: str, recursive: bool, remove: Callable[[PersistentWatch], Any]
    ) -> None:
        self.path = path
        self.recursive = recursive
        self._queue: asyncio.Queue[WatchEvent | BaseException | None] = asyncio.Queue()
        self._remove = remove
        self.closed = False

    def _put(self, item: WatchEvent | BaseException | None) -> None:
        self._queue.put_nowait(item)

    def __aiter__(self) -> PersistentWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._queue.put_nowait(item)
            raise item
        return item

    async def aclose(self) -> None:
        """Remove the watch from the server (when no other subscriber shares it) and end."""
        if not self.closed:
            self.closed = True
            self._put(None)
            await self._remove(self)

    async def __aenter__(self) -> PersistentWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class WatchTable:
    """Every watch this session holds, keyed as the server keys them."""

    def __init__(
        self,
        on_last_waiter_gone: Callable[[WatchKind, str], None],
        on_path_free: Callable[[str], Any] | None = None,
    ) -> None:
        self._one_shot: dict[tuple[WatchKind, str], _Entry] = {}
        self._persistent: dict[tuple[bool, str], set[PersistentWatch]] = {}
        self._on_last_gone = on_last_waiter_gone
        self._on_path_free = on_path_free
        # Paths whose server watches must all go once nothing of ours is left on them (a
        # persistent watch that could not be removed alone; see Session.remove_persistent).
        self._held_over: set[str] = set()

    # --- one-shot -----------------------------------------------------------------------

    def register(self, kind: WatchKind, server_path: str, user_path: str) -> Watch:
        """Add a waiter before the request that sets the server watch is written."""
        fut: asyncio.Future[WatchEvent] = asyncio.get_running_loop().create_future()
        key = (kind, server_path)
        entry = self._one_shot.get(key)
        if entry is None:
            entry = self._one_shot[key] = _Entry()
        entry.waiters.add(fut)
        fut.add_done_callback(lambda f: self._discard(key, f))
        return Watch(fut, kind, user_path, server_path)

    def has_waiters(self, kind: WatchKind, server_path: str) -> bool:
        """Whether anyone waits on the one-shot watch of this kind on this path."""
        entry = self._one_shot.get((kind, server_path))
        return entry is not None and bool(entry.waiters)

    def set_exists(self, kind: WatchKind, server_path: str, exists: bool) -> None:
        """Record whether the watched node existed when the server set the watch."""
        entry = self._one_shot.get((kind, server_path))
        if entry is not None:
            entry.exists = exists

    def armed(self, watch: Watch) -> None:
        """Record that ``watch``'s request set the server watch its entry stands for."""
        entry = self._one_shot.get((watch.kind, watch._server_path))
        if entry is not None and watch._future in entry.waiters:
            entry.armed = True

    def arm_entry(self, kind: WatchKind, server_path: str) -> None:
        """Record that the server watch of the current entry of (kind, path) is set (by a
        request whose own waiter was fired meanwhile by an earlier event)."""
        entry = self._one_shot.get((kind, server_path))
        if entry is not None:
            entry.armed = True

    def unregister(self, watch: Watch) -> None:
        """Withdraw a waiter whose request did not set a server watch (e.g. get on NoNode)."""
        fut = watch._future
        if not fut.done():
            key = (watch.kind, watch._server_path)
            entry = self._one_shot.get(key)
            if entry is not None:
                entry.waiters.discard(fut)
                if not entry.waiters:
                    del self._one_shot[key]
                    if entry.armed:
                        # Another waiter's request set it, and that waiter left first.
                        self._on_last_gone(key[0], key[1])
                    self._path_changed(key[1])
            fut.cancel()

    def _discard(self, key: tuple[WatchKind, str], fut: asyncio.Future[WatchEvent]) -> None:
        entry = self._one_shot.get(key)
        if entry is None or fut not in entry.waiters:
            return
        entry.waiters.discard(fut)
        if not entry.waiters:
            del self._one_shot[key]
            if fut.cancelled():
                self._on_last_gone(key[0], key[1])
            self._path_changed(key[1])

    def hold_over(self, server_path: str) -> None:
        """Remove every server watch on the path once nothing of ours is left on it."""
        self._held_over.add(server_path)
        self._path_changed(server_path)

    def _path_changed(self, server_path: str) -> None:
        if self._held_over and server_path in self._held_over and not self.watched(server_path):
            self._held_over.discard(server_path)
            if self._on_path_free is not None:
                self._on_path_free(server_path)

    # --- persistent ---------------------------------------------------------------------

    def add_persistent(self, watch: PersistentWatch, server_path: str) -> bool:
        """Add a subscriber; True when it is the first on (mode, path) and must be set."""
        key = (watch.recursive, server_path)
        subs = self._persistent.setdefault(key, set())
        subs.add(watch)
        self._held_over.discard(server_path)  # set again by the caller's addWatch
        return len(subs) == 1

    def remove_persistent(self, watch: PersistentWatch, server_path: str) -> bool:
        """Remove a subscriber; True when it was the last and the server watch must go."""
        key = (watch.recursive, server_path)
        subs = self._persistent.get(key)
        if not subs or watch not in subs:
            return False
        subs.discard(watch)
        if not subs:
            del self._persistent[key]
            return True
        return False

    # --- ZOOKEEPER-4466 -----------------------------------------------------------------
    # A server before 3.9 keeps one watch mode per path and session in each of its two watch
    # managers (data/exist watches; child watches), and the mode set last wins. A persistent
    # watch sits in the data manager (and, unless recursive, in the child manager too), so:
    # - a one-shot watch set there *after* it turns it into a one-shot: such one-shot
    #   watches are not set on the server at all but served from the persistent watch's
    #   events, which report everything they wait for (served_by_persistent);
    # - removing such a one-shot watch on the server would remove the persistent one with it
    #   (the session skips that: served_by_persistent again);
    # - a one-shot child watch set *before* a recursive one on the same path is left alone
    #   (different manager), but a recursive watch reports no child-list change; the one-shot
    #   waiters are fired from the child's creation or deletion (_child_change_from_recursive).

    def served_by_persistent(self, kind: WatchKind, server_path: str) -> bool:
        """Whether a one-shot watch of ``kind`` on the path is served from a persistent watch
        of this session on the same path (and must not be set or removed on the server)."""
        if (False, server_path) in self._persistent:
            return True
        return kind is WatchKind.DATA and (True, server_path) in self._persistent

    # --- events -------------------------------------------------------------------------

    def dispatch(self, etype: int, server_path: str, user_path: str) -> None:
        """Fire every waiter an event of this type on this path triggers."""
        try:
            event = WatchEvent(EventType(etype), user_path)
        except ValueError:
            return
        for kind in _TRIGGERS.get(etype, ()):
            entry = self._one_shot.pop((kind, server_path), None)
            if entry is None:
                continue
            for fut in entry.waiters:
                if not fut.done():
                    fut.set_result(event)
            self._path_changed(server_path)
        if not self._persistent:
            return
        for sub in self._persistent.get((False, server_path), ()):
            sub._put(event)
        if etype == EventType.CHILDREN_CHANGED:
            return  # recursive watches report node events, not child-list changes
        for ancestor in _ancestors(server_path):
            for sub in self._persistent.get((True, ancestor), ()):
                sub._put(event)
        if etype in (EventType.CREATED, EventType.DELETED) and server_path != "/":
            self._child_change_from_recursive(server_path, user_path)

    def _child_change_from_recursive(self, server_path: str, user_path: str) -> None:
        """ZOOKEEPER-4466 (see above): the creation or deletion of a direct child, which a
        recursive watch reports, is the child-list change it does not report: fire the
        parent's one-shot child waiters from it. (Where the server sends the change itself
        too, the first one fires the waiters and the other finds none.)"""
        parent = server_path.rsplit("/", 1)[0] or "/"
        if (True, parent) not in self._persistent:
            return
        entry = self._one_shot.pop((WatchKind.CHILD, parent), None)
        if entry is None:
            return
        user_parent = user_path.rsplit("/", 1)[0] or "/"
        event = WatchEvent(EventType.CHILDREN_CHANGED, user_parent)
        for fut in entry.waiters:
            if not fut.done():
                fut.set_result(event)
        self._path_changed(parent)

    def fail_all(self, exc: BaseException) -> None:
        """Fail every waiter and subscription (session expired or client closed)."""
        entries, self._one_shot = self._one_shot, {}
        for entry in entries.values():
            for fut in entry.waiters:
                if not fut.done():
                    fut.set_exception(exc)
                    fut.exception()  # a waiter that already left must not log "never retrieved"
        persistent, self._persistent = self._persistent, {}
        for subs in persistent.values():
            for sub in subs:
                sub._put(exc)

    # --- restore ------------------------------------------------------------------------

    def restore_lists(self) -> dict[str, list[str]]:
        """The server paths to re-arm after a reconnect, by SetWatches2 field."""
        lists: dict[str, list[str]] = {
            "data_watches": [],
            "exist_watches": [],
            "child_watches": [],
            "persistent_watches": [],
            "persistent_recursive_watches": [],
        }
        for (kind, path), entry in self._one_shot.items():
            if self.served_by_persistent(kind, path):
                continue  # ZOOKEEPER-4466: the persistent watch restored below serves it
            entry.armed = True
            if kind is WatchKind.CHILD:
                lists["child_watches"].append(path)
            elif entry.exists:
                lists["data_watches"].append(path)
            else:
                lists["exist_watches"].append(path)
        for recursive, path in self._persistent:
            key = "persistent_recursive_watches" if recursive else "persistent_watches"
            lists[key].append(path)
        return lists

    def watched(self, server_path: str) -> bool:
        """True when any watch of this session (one-shot or persistent) is on the exact path."""
        return any((kind, server_path) in self._one_shot for kind in WatchKind) or any(
            (rec, server_path) in self._persistent for rec in (False, True)
        )

    @property
    def has_persistent(self) -> bool:
        """True when any persistent watch is held (SetWatches2 then needed)."""
        return bool(self._persistent)

    def counts(self) -> dict[str, int]:
        """Number of server watches and of waiters, for tests and diagnostics."""
        return {
            "server_watches": len(self._one_shot) + len(self._persistent),
            "waiters": sum(len(e.waiters) for e in self._one_shot.values()),
            "persistent": sum(len(s) for s in self._persistent.values()),
        }


def _ancestors(path: str) -> Iterator[str]:
    yield path
    while path != "/":
        path = path.rsplit("/", 1)[0] or "/"
        yield path
