"""What a caller holds of a watch: a one-shot :class:`Watch` (a future of its
:class:`WatchEvent`) or a :class:`PersistentWatch` (an async iterator of them).

The table that keeps them and the server's watches in step is in
:mod:`aiocoord._session.watch_table`.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from aiocoord._deadline import within
from aiocoord._futures import retrieve


class EventType(enum.IntEnum):
    """What happened to a watched node."""

    #: the node was created (a watch set by ``exists()`` on a missing node, a persistent
    #: watch; a recursive one reports its descendants' creations too)
    CREATED = 1
    #: the node was deleted (fires its data and child watches alike)
    DELETED = 2
    #: the node's data was set (even to the same bytes)
    DATA_CHANGED = 3
    #: a child of the node was created or deleted (a child watch, a non-recursive persistent
    #: watch; a recursive one reports the child's CREATED or DELETED instead)
    CHILDREN_CHANGED = 4
    #: the watch was removed by :meth:`Client.remove_watches <aiocoord.Client.remove_watches>`
    #: (ZooKeeper's DataWatchRemoved / ChildWatchRemoved; never sent by the server)
    DATA_WATCH_REMOVED = 5
    #: the child watch was removed by :meth:`Client.remove_watches
    #: <aiocoord.Client.remove_watches>` (ZooKeeper's ChildWatchRemoved; never sent by the server)
    CHILD_WATCH_REMOVED = 6


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """A fired watch: what happened, and to which path (relative to the client's chroot)."""

    #: what happened
    type: EventType
    #: the node it happened to, relative to the client's chroot: the watched path, or a
    #: descendant of it for a recursive persistent watch
    path: str


class WatchKind(enum.IntEnum):
    """The two kinds of one-shot watch the server keeps per path."""

    DATA = 1  # set by get() and exists(): fires on create, change, delete
    CHILD = 2  # set by children(): fires on child change and on delete


# Which one-shot kinds each event type triggers (ZooKeeper's ZKWatchManager rules).
TRIGGERS: dict[int, tuple[WatchKind, ...]] = {
    1: (WatchKind.DATA,),
    2: (WatchKind.DATA, WatchKind.CHILD),
    3: (WatchKind.DATA,),
    4: (WatchKind.CHILD,),
}
#: The event a one-shot watch of each kind fires with when removed (Client.remove_watches).
REMOVED: dict[WatchKind, EventType] = {
    WatchKind.DATA: EventType.DATA_WATCH_REMOVED,
    WatchKind.CHILD: EventType.CHILD_WATCH_REMOVED,
}


class Watch:
    """A one-shot watch: await it for the :class:`WatchEvent` that fires it.

    Cancelling the awaiting task (or calling :meth:`cancel`) removes this waiter; when the last
    waiter on a server watch is gone, the server watch is removed too. If the session expires
    the await raises :class:`~aiocoord.SessionExpiredError`; if the client closes, it raises
    :class:`~aiocoord.ClientClosedError`.
    """

    __slots__ = ("_future", "_server_path", "kind", "path")

    #: which of the node's server watches this is: data (``get``, ``exists``) or child
    #: (``children``)
    kind: WatchKind
    #: the watched node's path, relative to the client's chroot (as the caller gave it)
    path: str

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

    def _fire(self, event: WatchEvent) -> None:
        # A recipe that learned of the event first, another way (its own client deleted the
        # node): this waiter fires now; the server watch stays armed until the server's own
        # event consumes it (nothing is sent to remove it).
        if not self._future.done():
            self._future.set_result(event)

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
        self._future.add_done_callback(retrieve)

    def add_done_callback(self, callback: Callable[[Watch], None]) -> None:
        """Call ``callback(watch)`` once the watch fired, failed or was cancelled."""
        self._future.add_done_callback(lambda _fut: callback(self))

    def __repr__(self) -> str:
        return f"<Watch {self.kind.name} {self.path} {'done' if self.done() else 'pending'}>"


class PersistentWatch:
    """A persistent (optionally recursive) watch: ``async for event in watch``.

    Events are queued without bound in arrival (zxid) order. The iteration ends when the watch
    is closed; it raises SessionExpiredError if the session is lost.
    """

    def __init__(
        self, path: str, recursive: bool, remove: Callable[[PersistentWatch], Any]
    ) -> None:
        #: the watched node's path, relative to the client's chroot (as the caller gave it)
        self.path: str = path
        #: True if the watch also reports events on every descendant of ``path``
        self.recursive: bool = recursive
        self._queue: asyncio.Queue[WatchEvent | BaseException | None] = asyncio.Queue()
        self._remove = remove
        #: True once :meth:`aclose` was called (the iteration then ends)
        self.closed: bool = False

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
