"""The watch table: the one owner of this session's watches, on our side and the server's.

ZooKeeper keeps at most one watch per (kind, path) per session, so every waiter on the same
(kind, path) shares it: the table maps each key to the set of futures waiting on it. Entries
are made *before* the request that sets the server watch is written, so an event that races
the reply still finds its waiter. The table also decides what goes to the server about
watches: a waiter that leaves takes the server watch with it when nobody else shares it
(removeWatches), a persistent watch is added and removed here (addWatch), and after a
reconnect it lists what to re-arm (SetWatches / SetWatches2). It reaches the server only
through a :class:`WatchWire`, which the session provides; the session hands it the outcome of
every request that set a watch (:meth:`WatchTable.settle`) and every event
(:meth:`WatchTable.dispatch`).

A request's caller settles its answer a loop turn or more after the answer was read, and an
event read meanwhile may already have fired its waiter. Whether that event came before the
answer (an earlier watch's: the request then set a new one, which nobody waits on) or after
it (it consumed the watch the request set) is read from the wire order: the table knows each
unsettled waiter's answer future (:meth:`WatchTable.written`), resolved as its frame is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiocoord._observe.metrics import WatchStats
from aiocoord._paths import split
from aiocoord._session.connection import Reply
from aiocoord._session.watch import (
    REMOVED,
    TRIGGERS,
    EventType,
    PersistentWatch,
    Watch,
    WatchEvent,
    WatchKind,
)
from aiocoord._wire.framing import EmptyResponse, Request
from aiocoord._wire.opcodes import AddWatchMode, Op, WatcherType
from aiocoord._wire.watches import (
    SET_WATCHES_MAX_BYTES,
    AddWatchRequest,
    RemoveWatchesRequest,
    SetWatches2Request,
    SetWatchesRequest,
)
from aiocoord.errors import ClientClosedError, CoordinationError, NoWatcherError

__all__ = ["WatchTable", "WatchWire"]

log = logging.getLogger("aiocoord.session")

#: The code of an exists on a missing node, which sets an exist watch all the same.
NO_NODE = -101

#: What an unsettled waiter's answer becomes once an event fired it after the answer was read.
_CONSUMED = object()


class WatchWire(Protocol):
    """What the table needs of the session."""

    @property
    def closed(self) -> bool:
        """True once the client is closing: no new waiter is accepted."""
        ...

    def send_now(
        self, request: Request[EmptyResponse]
    ) -> asyncio.Future[Reply[EmptyResponse]] | None:
        """Write ``request`` at once on the current connection (None if there is none: the
        server dropped this session's watches with it, and they are not restored)."""
        ...

    def request(
        self, request: Request[EmptyResponse], *, path: str | None = ...
    ) -> Awaitable[EmptyResponse]:
        """Send ``request`` when connected and return its reply (raising the server's error)."""
        ...


@dataclass(slots=True)
class _Entry:
    """The waiters of one server watch."""

    waiters: set[asyncio.Future[WatchEvent]] = field(default_factory=set)
    # For restore after reconnect: a DATA watch on an existing node goes back as a data
    # watch, on a missing one as an exist watch (the server then fires CREATED/DELETED).
    exists: bool = True
    # Whether a request of a waiter of this entry has set the server watch (or a reconnect
    # restored it). Waiters share the entry, so the last one to leave may not be the one
    # whose request set it: then the watch must still be removed on the server.
    armed: bool = False


class WatchTable:
    """Every watch this session holds, keyed as the server keys them."""

    def __init__(self, wire: WatchWire) -> None:
        self._wire = wire
        self._one_shot: dict[tuple[WatchKind, str], _Entry] = {}
        self._persistent: dict[tuple[bool, str], set[PersistentWatch]] = {}
        # Paths whose server watches must all go once nothing of ours is left on them (a
        # persistent watch that could not be removed alone; see _release_persistent).
        self._held_over: set[str] = set()
        # Waiters whose request (the one that sets their server watch) is written and not yet
        # settled: the future of its answer, or _CONSUMED once an event fired the waiter
        # *after* that answer had arrived (see settle).
        self._unsettled: dict[asyncio.Future[WatchEvent], object] = {}

    # --- one-shot -----------------------------------------------------------------------

    def register(self, kind: WatchKind, server_path: str, user_path: str) -> Watch:
        """Add a waiter before the request that sets the server watch is written."""
        if self._wire.closed:
            raise ClientClosedError("client is closed")
        fut: asyncio.Future[WatchEvent] = asyncio.get_running_loop().create_future()
        key = (kind, server_path)
        entry = self._one_shot.get(key)
        if entry is None:
            entry = self._one_shot[key] = _Entry()
        entry.waiters.add(fut)
        fut.add_done_callback(lambda f: self._discard(key, f))
        return Watch(fut, kind, user_path, server_path)

    def written(self, watch: Watch, answer: asyncio.Future[Any]) -> None:
        """The request that sets ``watch``'s server watch is written (or held); ``answer`` is
        the future of its reply, resolved as the reply is read, in wire order with events."""
        self._unsettled[watch._future] = answer

    def abandon(self, watch: Watch) -> None:
        """The waiter's request was written but its answer will not be settled (its caller
        left): withdraw the waiter, and the server watch with it when nobody shares it."""
        self._unsettled.pop(watch._future, None)
        watch.cancel()

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
        if self._unsettled:
            self._unsettled.pop(fut, None)
        if not fut.done():
            key = (watch.kind, watch._server_path)
            entry = self._one_shot.get(key)
            if entry is not None:
                entry.waiters.discard(fut)
                if not entry.waiters:
                    del self._one_shot[key]
                    if entry.armed:
                        # Another waiter's request set it, and that waiter left first.
                        self._remove_server_watch(key[0], key[1])
                    self._path_changed(key[1])
            fut.cancel()

    def _discard(self, key: tuple[WatchKind, str], fut: asyncio.Future[WatchEvent]) -> None:
        if fut.cancelled() and self._unsettled:
            self._unsettled.pop(fut, None)
        entry = self._one_shot.get(key)
        if entry is None or fut not in entry.waiters:
            return
        entry.waiters.discard(fut)
        if not entry.waiters:
            del self._one_shot[key]
            if fut.cancelled():
                self._remove_server_watch(key[0], key[1])
            self._path_changed(key[1])

    def _hold_over(self, server_path: str) -> None:
        """Remove every server watch on the path once nothing of ours is left on it."""
        self._held_over.add(server_path)
        self._path_changed(server_path)

    def _path_changed(self, server_path: str) -> None:
        if self._held_over and server_path in self._held_over and not self.watched(server_path):
            self._held_over.discard(server_path)
            self._remove_all(server_path)

    def settle(self, watch: Watch, opcode: int, err: int) -> None:
        """The request of ``watch`` was answered with ``err`` (0: it set the server watch)."""
        answered = self._unsettled.pop(watch._future, None) if self._unsettled else None
        if err and not (opcode == Op.EXISTS and err == NO_NODE):
            self.unregister(watch)  # no server watch was set (an exists on NoNode sets one)
        elif watch.done():
            if answered is _CONSUMED:
                # The event that fired the waiter came after this answer on the wire, so the
                # server had set the watch by then and that event consumed it (its caller
                # only ran after both were read): nothing is left to remove.
                return
            # The waiter was fired by the event of an *earlier* server watch on the same path
            # (the table shares one entry per path), yet this request set a new one on the
            # server that nobody waits on now: remove it, unless a newer waiter shares it.
            if not self.has_waiters(watch.kind, watch.server_path):
                self._remove_server_watch(watch.kind, watch.server_path)
            else:
                self.arm_entry(watch.kind, watch.server_path)
        else:
            self.armed(watch)

    def waiter(self, kind: WatchKind, server_path: str, user_path: str) -> tuple[Watch, bool]:
        """A waiter for a read that asks for a one-shot watch of ``kind``, registered before
        the read is sent, and whether the read must set the watch on the server (False: a
        persistent watch of ours on the path serves it; see ZOOKEEPER-4466 below)."""
        return self.register(kind, server_path, user_path), not self.served_by_persistent(
            kind, server_path
        )

    def _remove_server_watch(self, kind: WatchKind, server_path: str) -> None:
        if self.served_by_persistent(kind, server_path):
            return  # ZOOKEEPER-4466: it would remove our persistent watch with it
        wtype = WatcherType.CHILDREN if kind is WatchKind.CHILD else WatcherType.DATA
        self._send_remove(server_path, wtype)

    def _remove_all(self, server_path: str) -> asyncio.Future[Reply[EmptyResponse]] | None:
        return self._send_remove(server_path, WatcherType.ANY)

    def _send_remove(
        self, server_path: str, wtype: WatcherType
    ) -> asyncio.Future[Reply[EmptyResponse]] | None:
        # Written now, synchronously, so it reaches the server before any later request
        # that sets a watch on the path again.
        fut = self._wire.send_now(RemoveWatchesRequest(path=server_path, type=wtype))
        if fut is not None:
            fut.add_done_callback(_ignore_result)
        return fut

    async def remove_one_shot(
        self, kinds: tuple[WatchKind, ...], server_path: str, user_path: str, local: bool
    ) -> None:
        """Remove this session's one-shot watches of ``kinds`` on the path (removeWatches):
        on the server unless ``local``, then here, firing their waiters with a
        ``*_WATCH_REMOVED`` event. NoWatcherError, with nothing sent, if there is none."""
        found = {kind: self._one_shot.get((kind, server_path)) for kind in kinds}
        entries = {kind: entry for kind, entry in found.items() if entry and entry.waiters}
        if not entries:
            raise NoWatcherError("no such watch here", path=user_path, op="remove_watches")
        for kind in () if local else entries:
            # ZOOKEEPER-4466: one served by a persistent watch is not on the server, and
            # removing it there would take the persistent one too. NoWatcher: the server's
            # watch fired (its event, on its way, fires the waiters first) or was never set.
            if not self.served_by_persistent(kind, server_path):
                wtype = WatcherType.CHILDREN if kind is WatchKind.CHILD else WatcherType.DATA
                with contextlib.suppress(NoWatcherError):
                    request = RemoveWatchesRequest(path=server_path, type=wtype)
                    await self._wire.request(request, path=user_path)
        for kind, entry in entries.items():
            # Only the entry asked about: one made after its event fired during the await
            # stands for a new server watch, which was not removed.
            if self._one_shot.get((kind, server_path)) is entry:
                del self._one_shot[(kind, server_path)]
                for fut in entry.waiters:
                    if not fut.done():
                        fut.set_result(WatchEvent(REMOVED[kind], user_path))
        self._path_changed(server_path)

    # --- persistent ---------------------------------------------------------------------

    async def add_persistent(self, watch: PersistentWatch, server_path: str) -> None:
        """Subscribe; sets the server's persistent watch when this is the first subscriber."""
        if not self._subscribe(watch, server_path):
            return
        mode = AddWatchMode.PERSISTENT_RECURSIVE if watch.recursive else AddWatchMode.PERSISTENT
        try:
            await self._wire.request(AddWatchRequest(path=server_path, mode=mode), path=watch.path)
        except asyncio.CancelledError:
            # The addWatch may have gone out, and the server may set the watch: take it
            # back, as a last subscriber leaving would.
            if self._unsubscribe(watch, server_path):
                self._release_persistent(server_path)
            raise
        except BaseException:
            self._unsubscribe(watch, server_path)
            raise

    async def remove_persistent(self, watch: PersistentWatch, server_path: str) -> None:
        """Unsubscribe; removes the server watch when this was the last subscriber."""
        if not self._unsubscribe(watch, server_path):
            return
        reply = self._release_persistent(server_path)
        if reply is not None:
            with contextlib.suppress(CoordinationError):
                await reply

    def _release_persistent(self, server_path: str) -> asyncio.Future[Reply[EmptyResponse]] | None:
        # Servers before 3.9 cannot decode removeWatches of type Persistent (4) or
        # PersistentRecursive (5), so the watch goes with type Any (3), which would also take
        # this session's other watches on that exact path: while any is left there, the
        # removal waits until the last of them fires or goes.
        if self.watched(server_path):
            log.debug(
                "persistent watch on %s removed once the path's other watches go", server_path
            )
            self._hold_over(server_path)
            return None
        return self._remove_all(server_path)

    def _subscribe(self, watch: PersistentWatch, server_path: str) -> bool:
        """Add a subscriber; True when it is the first on (mode, path) and must be set."""
        key = (watch.recursive, server_path)
        subs = self._persistent.setdefault(key, set())
        subs.add(watch)
        self._held_over.discard(server_path)  # set again by the caller's addWatch
        return len(subs) == 1

    def _unsubscribe(self, watch: PersistentWatch, server_path: str) -> bool:
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
        unsettled = self._unsettled
        for kind in TRIGGERS.get(etype, ()):
            entry = self._one_shot.pop((kind, server_path), None)
            if entry is None:
                continue
            for fut in entry.waiters:
                if not fut.done():
                    if unsettled:
                        answer = unsettled.get(fut)
                        if isinstance(answer, asyncio.Future) and answer.done():
                            unsettled[fut] = _CONSUMED  # its answer was read before this event
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
        parent = split(server_path)[0]
        if (True, parent) not in self._persistent:
            return
        entry = self._one_shot.pop((WatchKind.CHILD, parent), None)
        if entry is None:
            return
        user_parent = split(user_path)[0]
        event = WatchEvent(EventType.CHILDREN_CHANGED, user_parent)
        for fut in entry.waiters:
            if not fut.done():
                fut.set_result(event)
        self._path_changed(parent)

    def fail_all(self, exc: BaseException) -> None:
        """Fail every waiter and subscription (session expired or client closed)."""
        entries, self._one_shot = self._one_shot, {}
        self._unsettled.clear()
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

    def restore_requests(self, last_zxid: int) -> list[SetWatchesRequest | SetWatches2Request]:
        """What re-arms every watch after a reconnect, from ``last_zxid`` on (the server fires
        at once those whose node changed since); SetWatches2 when a persistent watch is held.
        Split to keep each request under the server's packet limit."""
        lists = self._restore_lists()
        if not any(lists.values()):
            return []
        requests: list[SetWatchesRequest | SetWatches2Request] = []
        for batch in _batches(lists):
            if self._persistent:
                requests.append(
                    SetWatches2Request(
                        relative_zxid=last_zxid,
                        data_watches=batch["data_watches"],
                        exist_watches=batch["exist_watches"],
                        child_watches=batch["child_watches"],
                        persistent_watches=batch["persistent_watches"],
                        persistent_recursive_watches=batch["persistent_recursive_watches"],
                    )
                )
            else:
                requests.append(
                    SetWatchesRequest(
                        relative_zxid=last_zxid,
                        data_watches=batch["data_watches"],
                        exist_watches=batch["exist_watches"],
                        child_watches=batch["child_watches"],
                    )
                )
        return requests

    def _restore_lists(self) -> dict[str, list[str]]:
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

    def stats(self) -> WatchStats:
        """The server watches held now, by kind (for :meth:`Client.stats`)."""
        data = exist = child = 0
        for (kind, _), entry in self._one_shot.items():
            if kind is WatchKind.CHILD:
                child += 1
            elif entry.exists:
                data += 1
            else:
                exist += 1
        recursive = sum(1 for (rec, _), held in self._persistent.items() if rec and held)
        plain = sum(1 for (rec, _), held in self._persistent.items() if not rec and held)
        return WatchStats(data, exist, child, plain, recursive)

    def listing(self) -> list[str]:
        """Every watch held here, one line each (``"DATA /a/b: 1 waiter(s)"``), for
        diagnostics: what a count of :meth:`counts` stands for."""
        out = [
            f"{kind.name} {path}: {len(entry.waiters)} waiter(s)"
            + (" armed" if entry.armed else "")
            for (kind, path), entry in self._one_shot.items()
        ]
        out += [
            f"{'RECURSIVE' if rec else 'PERSISTENT'} {path}: {len(subs)} subscriber(s)"
            for (rec, path), subs in self._persistent.items()
        ]
        return out

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
        path = split(path)[0]
        yield path


def _batches(lists: dict[str, list[str]]) -> list[dict[str, list[str]]]:
    out: list[dict[str, list[str]]] = []
    current: dict[str, list[str]] = {k: [] for k in lists}
    size = 0
    for key, paths in lists.items():
        for path in paths:
            cost = len(path.encode()) + 4
            if size + cost > SET_WATCHES_MAX_BYTES and size:
                out.append(current)
                current = {k: [] for k in lists}
                size = 0
            current[key].append(path)
            size += cost
    out.append(current)
    return out


def _ignore_result(fut: asyncio.Future[Reply[EmptyResponse]]) -> None:
    if not fut.cancelled():
        fut.exception()
