"""How a cache learns of changes: one persistent watch, or one-shot watches per node.

Both feeds follow one rule: watch events are hints, reads are the truth. An event schedules
a read, and only a read result changes the :class:`~aiocoord.recipes.cache._store.Store`.

:class:`PersistentFeed` (servers >= 3.6) holds one persistent watch on the cache's root,
recursive unless the cache holds a single node. There is at most one read of a node in
flight: an event that comes meanwhile marks the node to be read once more afterwards.
ZooKeeper answers one session's requests in order and never shows it an older state than it
has seen, so each node's reads, and therefore its changes, go forward in zxid order. The one
exception to "reads change the store" is a deletion event for a node with no read in flight,
which is applied directly: no reply can be older than it. A reconnect restores the watch but
not the events of the gap, so the feed re-reads the whole subtree (pipelined) and the store
emits exactly the differences; after a session expiry it re-adds the watch first. Its reads
take no task each: they are queued, written :data:`WINDOW` at a time, and answered by
callbacks, so a tree of 100,000 nodes costs its cached nodes and a window, not 100,000 tasks;
reads of data travel in multiReads (3.6+, like persistent watches), and a node is listed only
when its read counts children.

:class:`OneShotFeed` (older servers) gives each node a task that reads it with a data watch
and re-arms the watch after every event, and each node above the depth limit a task that
lists its children with a child watch. The session restores those watches after a
reconnect with the last zxid seen, so the server fires every watch whose node changed in the
gap; after an expiry each task reads its node again with a fresh watch.

A feed owns its tasks; :meth:`Feed.close` cancels and awaits all of them and removes its
watches from the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from aiocoord._client.door import Reply, corked, submit_children, submit_get, submit_get_many
from aiocoord._paths import join
from aiocoord._wire.data import Stat
from aiocoord._wire.multi import MultiReadResponse
from aiocoord._wire.opcodes import OP_NAMES, Op
from aiocoord.client import Client, EventType, PersistentWatch, State, WatchEvent
from aiocoord.errors import (
    ConnectionLossError,
    CoordinationError,
    NoAuthError,
    NoNodeError,
    SessionExpiredError,
    UnimplementedError,
    error_for_code,
)
from aiocoord.recipes.cache._store import Store

__all__ = ["Feed", "OneShotFeed", "PersistentFeed", "add_persistent_watch"]

#: The first pause after a connection loss; it doubles up to :data:`MAX_DELAY`.
FIRST_DELAY = 0.05
MAX_DELAY = 1.0


async def recover(client: Client, exc: BaseException, delay: float) -> float:
    """Wait before trying again after a connection loss or a session expiry; the next delay."""
    if isinstance(exc, SessionExpiredError):
        # Retrying is pointless until a session exists again; ClientClosedError if never.
        await client.wait_for(State.CONNECTED)
        return FIRST_DELAY
    await asyncio.sleep(delay)
    return min(delay * 2, MAX_DELAY)


async def add_persistent_watch(client: Client, store: Store) -> PersistentWatch:
    """The persistent watch a :class:`PersistentFeed` needs, retried through connection
    losses; UnimplementedError from a server without persistent watches."""
    delay = FIRST_DELAY
    while True:
        try:
            # A single node needs no recursion: its own events are all we want.
            return await client.add_watch(store.root, recursive=store.limit > 0)
        except (ConnectionLossError, SessionExpiredError) as exc:
            delay = await recover(client, exc, delay)


class Feed:
    """What both feeds share: the client, the store, the tasks, and how to fail."""

    def __init__(
        self,
        client: Client,
        store: Store,
        *,
        cache_data: bool,
        fail: Callable[[BaseException], None],
        owner: object,
        logger: logging.Logger,
    ) -> None:
        self._client = client
        self._store = store
        self._cache_data = cache_data
        self._fail = fail
        self._owner = owner  # named in log records and task names
        self._log = logger
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        """Return once the initial state is in the store."""
        raise NotImplementedError

    def reconnected(self, new_session: bool) -> None:
        """The client connected again (the watches the session restores are back)."""

    def abort(self) -> list[asyncio.Task[Any]]:
        """Cancel every task but the current one; the cancelled ones."""
        current = asyncio.current_task()
        tasks = [task for task in self._all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        return tasks

    async def close(self) -> None:
        """Cancel and await every task, then remove the feed's watches from the server."""
        tasks = self.abort()
        if tasks:
            # Cancelling a task that awaits a Watch cancels the Watch, which removes the
            # server watch once no other waiter shares it.
            await asyncio.gather(*tasks, return_exceptions=True)

    def _all_tasks(self) -> list[asyncio.Task[Any]]:
        return list(self._tasks)

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(
            coro, name=f"aiocoord-cache-{name}:{self._store.root}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guard(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Run ``func(*args)``; an error other than cancellation stops the cache.

        The coroutine is made here, not by the caller: a task cancelled before its first
        step (a cache closed at once) then leaves no coroutine that was never awaited.
        """
        try:
            await func(*args)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._fail(exc)


#: Reads a :class:`PersistentFeed` keeps in flight at most. Enough to keep the connection
#: busy; a bound, so that loading a large tree holds a window of replies, not the whole tree
#: of requests, futures and callbacks at once.
WINDOW = 1_000

#: Reads of data a :class:`PersistentFeed` sends in one multiRead at most: one request for
#: the server to take through its pipeline instead of one per node. 32 nodes of ZooKeeper's
#: default maximum size (1 MiB) make an answer well under a frame's limit (64 MiB).
BATCH = 32

#: What a job of a :class:`PersistentFeed` asks: a node's data (or stat), or its children.
_READ = 0
_LIST = 1


class PersistentFeed(Feed):
    """One persistent watch on the root, a read per event (see the module docstring).

    Reads carry no task: queued in order, they are written at most :data:`WINDOW` at a time,
    up to :data:`BATCH` in one multiRead (:func:`~aiocoord._client.door.submit_get_many`),
    and a callback applies each answer to the store. A resync walks the tree the same way: a
    node's children are listed once its read says it has any (``num_children``), which is
    safe because the watch is armed before the read: a child created after it has an event of
    its own.
    """

    def __init__(
        self,
        client: Client,
        store: Store,
        watch: PersistentWatch,
        *,
        cache_data: bool,
        fail: Callable[[BaseException], None],
        owner: object,
        logger: logging.Logger,
    ) -> None:
        super().__init__(
            client, store, cache_data=cache_data, fail=fail, owner=owner, logger=logger
        )
        self._watch: PersistentWatch | None = watch
        # Nodes with a read queued or in flight; at most one read of a node at a time.
        self._reading: set[str] = set()
        # nodes to read once more when their current read ends (an event came meanwhile)
        self._dirty: set[str] = set()
        # jobs not yet written, in order: (_READ or _LIST, path, depth)
        self._queue: deque[tuple[int, str, int]] = deque()
        self._in_flight = 0
        self._write_soon = False  # _write is scheduled for this loop iteration
        # reads of data go in multiReads (false for exists, or if the server lacks them)
        self._batch = cache_data
        # jobs whose answer was lost with the connection, written again by _retry_task
        self._stalled: list[tuple[int, str, int]] = []
        self._retry_task: asyncio.Task[None] | None = None
        self._stopped = False
        # The running resync's walk: nodes it waits for (path -> depth of a node whose
        # children are listed after its read, -1 for one only read), the nodes it met, its
        # outstanding jobs and the future set when there are none left.
        self._walk: dict[str, int] = {}
        self._seen: set[str] | None = None
        self._walk_left = 0
        self._walked: asyncio.Future[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self._resync_again = False
        self._sync_first = False

    async def start(self) -> None:
        assert self._watch is not None
        self._spawn(self._guard(self._pump, self._watch), "pump")
        self._request_resync()
        assert self._resync_task is not None
        await asyncio.shield(self._resync_task)

    def reconnected(self, new_session: bool) -> None:
        if not new_session:
            # The watch is back (restored before this was announced), but what changed in
            # the gap was never sent: read it all again. After an expiry the pump re-adds
            # the watch first and then asks for the same.
            self._request_resync()

    def abort(self) -> list[asyncio.Task[Any]]:
        # Answers still in flight find the feed stopped and change nothing.
        self._stopped = True
        self._queue.clear()
        self._stalled.clear()
        if self._walked is not None and not self._walked.done():
            self._walked.cancel()
        return super().abort()

    async def close(self) -> None:
        await super().close()
        watch, self._watch = self._watch, None
        if watch is not None:
            with contextlib.suppress(CoordinationError):
                await watch.aclose()

    # --- reads -------------------------------------------------------------------------------

    def _refresh(self, path: str) -> None:
        """Read ``path`` (again): once now, or once more after the read in flight."""
        if path in self._reading:
            self._dirty.add(path)
            return
        self._reading.add(path)
        self._queue.append((_READ, path, 0))
        self._write_later()

    def _write_later(self) -> None:
        """:meth:`_write` once the callbacks ready now have run: the requests they free room
        for leave in one write, not one each."""
        if not self._write_soon:
            self._write_soon = True
            asyncio.get_running_loop().call_soon(self._write)

    def _write(self) -> None:
        """Write queued jobs while fewer than :data:`WINDOW` are in flight."""
        self._write_soon = False
        queue = self._queue
        client = self._client
        data = self._cache_data
        with corked(client):
            while queue and self._in_flight < WINDOW and not self._stopped:
                job = queue.popleft()
                kind, path, _ = job
                jobs = [job]
                if kind == _READ and self._batch:
                    while queue and len(jobs) < BATCH and queue[0][0] == _READ:
                        jobs.append(queue.popleft())
                try:
                    if len(jobs) > 1:
                        fut: asyncio.Future[Any] = submit_get_many(client, [j[1] for j in jobs])
                    elif kind == _READ:
                        fut = submit_get(client, path, data=data)
                    else:
                        fut = submit_children(client, path)
                except (ConnectionLossError, SessionExpiredError) as exc:
                    for one in jobs:
                        self._stall(one, exc)
                    continue
                except BaseException as exc:
                    self._fail(exc)
                    return
                self._in_flight += len(jobs)
                if len(jobs) > 1:
                    fut.add_done_callback(functools.partial(self._answered_many, jobs))
                else:
                    fut.add_done_callback(functools.partial(self._answered, job))

    def _answered(self, job: tuple[int, str, int], fut: asyncio.Future[Reply[Any]]) -> None:
        self._in_flight -= 1
        if self._stopped:
            return
        try:
            # Nobody cancels these; were one cancelled, asking again keeps its node from
            # staying marked as being read for good.
            exc = ConnectionLossError("read withdrawn") if fut.cancelled() else fut.exception()
            if isinstance(exc, (ConnectionLossError, SessionExpiredError)):
                # The session retries the connection; keep asking: a cache must catch up.
                self._stall(job, exc)
            elif exc is not None:
                self._fail(exc)
            elif job[0] == _READ:
                self._read_done(job[1], fut.result())
            else:
                self._listed(job[1], job[2], fut.result())
        except BaseException as exc:  # a selector's or a subscriber's mistake stops the cache
            self._fail(exc)
            return
        self._write_later()

    def _answered_many(
        self, jobs: list[tuple[int, str, int]], fut: asyncio.Future[Reply[MultiReadResponse]]
    ) -> None:
        """The answer to a multiRead: each read's result, as if answered one by one."""
        self._in_flight -= len(jobs)
        if self._stopped:
            return
        try:
            exc = ConnectionLossError("read withdrawn") if fut.cancelled() else fut.exception()
            if isinstance(exc, (ConnectionLossError, SessionExpiredError)):
                for job in jobs:
                    self._stall(job, exc)
            elif exc is not None:
                self._fail(exc)
            else:
                reply = fut.result()
                if reply.err == UnimplementedError.code:
                    # A server with persistent watches but no multiRead: one read each.
                    self._batch = False
                    self._queue.extendleft(reversed(jobs))
                elif reply.err:
                    raise error_for_code(reply.err, path=jobs[0][1], op=OP_NAMES[Op.MULTI_READ])
                else:
                    assert reply.body is not None
                    for job, (err, body) in zip(jobs, reply.body.results, strict=True):
                        self._read_done(job[1], Reply(reply.zxid, err, body))
        except BaseException as exc:
            self._fail(exc)
            return
        self._write_later()

    def _read_done(self, path: str, reply: Reply[Any]) -> None:
        """Apply a read's answer to the store; the read ends unless an event came meanwhile."""
        store = self._store
        stat: Stat | None = None
        if reply.err == 0:
            body = reply.body
            assert body is not None  # the connection decodes every successful reply
            stat = body.stat
            store.put(path, body.data if self._cache_data else b"", stat)
        elif reply.err == NoNodeError.code:
            store.remove(path)
        elif reply.err == NoAuthError.code:
            self._log.warning("%s: no permission to read %s; leaving it out", self._owner, path)
            store.remove(path)
        else:
            raise error_for_code(reply.err, path=path, op=OP_NAMES[Op.GET_DATA])
        if path in self._dirty:
            self._dirty.discard(path)
            self._queue.append((_READ, path, 0))
            return
        self._reading.discard(path)
        depth = self._walk.pop(path, None)
        if depth is None:
            return
        # The walk waited for this node: list its children if it has any to follow.
        if depth >= 0 and stat is not None and stat.num_children and store.follows(path, depth):
            self._walk_left += 1
            self._queue.append((_LIST, path, depth))
        self._walk_step_done()

    def _listed(self, path: str, depth: int, reply: Reply[Any]) -> None:
        if reply.err == 0:
            store = self._store
            assert reply.body is not None
            for name in reply.body.children:
                child = join(path, name)
                if store.accepts(child):
                    self._visit(child, depth + 1)
        elif reply.err == NoAuthError.code:
            self._log.warning(
                "%s: no permission to list %s; its children are left out", self._owner, path
            )
        elif reply.err != NoNodeError.code:
            raise error_for_code(reply.err, path=path, op=OP_NAMES[Op.GET_CHILDREN])
        self._walk_step_done()

    def _stall(self, job: tuple[int, str, int], exc: BaseException) -> None:
        """Write ``job`` again once the client is back (:func:`recover`'s pause first)."""
        self._stalled.append(job)
        task = self._retry_task
        if task is None or task.done():
            self._retry_task = self._spawn(self._guard(self._retry, exc), "retry")

    async def _retry(self, exc: BaseException) -> None:
        delay = FIRST_DELAY
        while True:
            delay = await recover(self._client, exc, delay)
            if self._client.connected:
                break
            exc = ConnectionLossError("not connected yet")
        stalled, self._stalled = self._stalled, []
        # First in the queue: the answers they wait for are older than the queued jobs'.
        self._queue.extendleft(reversed(stalled))
        self._write()

    def _on_event(self, event: WatchEvent) -> None:
        etype = event.type
        if etype is EventType.CHILDREN_CHANGED:
            return  # a non-recursive watch on a single node: its children are not cached
        path = event.path
        if not self._store.wants(path):
            return
        if etype is EventType.DELETED and path not in self._reading:
            # No reply about this node is pending, so none can be older than this event.
            self._store.drop(path)
            return
        self._refresh(path)

    async def _pump(self, watch: PersistentWatch) -> None:
        while True:
            try:
                async for event in watch:
                    self._on_event(event)
                return  # closed
            except SessionExpiredError:
                # The new session has no watch; set it again, then re-read everything.
                self._sync_first = True
                watch = self._watch = await add_persistent_watch(self._client, self._store)
                self._request_resync()

    # --- resync ------------------------------------------------------------------------------

    def _request_resync(self) -> None:
        task = self._resync_task
        if task is not None and not task.done():
            self._resync_again = True
            return
        self._resync_task = self._spawn(self._guard(self._resync_loop), "resync")

    async def _resync_loop(self) -> None:
        while True:
            self._resync_again = False
            await self._resync()
            if not self._resync_again:
                return

    async def _resync(self) -> None:
        """Re-read every node of the subtree; the reads emit exactly the differences."""
        delay = FIRST_DELAY
        store = self._store
        while self._sync_first:
            try:
                # A new session may be served by a server behind the one we saw last.
                await self._client.sync(store.root)
                self._sync_first = False
            except (ConnectionLossError, SessionExpiredError) as exc:
                delay = await recover(self._client, exc, delay)
        # Only a store that holds nodes already needs to know which the walk did not meet.
        self._seen = set() if store.nodes else None
        self._walk_left = 0
        self._walked = asyncio.get_running_loop().create_future()
        self._visit(store.root, 0)
        self._write()
        await self._walk_end()
        # Whatever is held but was not listed is gone or new since: a read tells which.
        seen, self._seen = self._seen, None
        if seen is not None:
            for path in [path for path in store.nodes if path not in seen]:
                self._wait_read(path, -1)
            self._write()
            await self._walk_end()

    async def _walk_end(self) -> None:
        walked = self._walked
        assert walked is not None
        if self._walk_left:
            await walked
        self._walked = asyncio.get_running_loop().create_future()

    def _visit(self, path: str, depth: int) -> None:
        """The walk met ``path``, ``depth`` levels below the root: read it, then list it."""
        store = self._store
        if self._seen is not None:
            self._seen.add(path)
        if depth or store.include_root:
            self._wait_read(path, depth)
        elif store.follows(path, depth):
            # The root alone is not held, so its listing needs no read first.
            self._walk_left += 1
            self._queue.append((_LIST, path, depth))

    def _wait_read(self, path: str, depth: int) -> None:
        """Read ``path`` as a step of the walk (listed after, if ``depth`` >= 0)."""
        self._walk[path] = depth
        self._walk_left += 1
        if path in self._reading:
            self._dirty.add(path)  # the walk needs a read made from now on
        else:
            self._reading.add(path)
            self._queue.append((_READ, path, 0))

    def _walk_step_done(self) -> None:
        self._walk_left -= 1
        walked = self._walked
        if not self._walk_left and walked is not None and not walked.done():
            walked.set_result(None)


class OneShotFeed(Feed):
    """A task per node keeping its one-shot watches armed (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        store: Store,
        *,
        cache_data: bool,
        fail: Callable[[BaseException], None],
        owner: object,
        logger: logging.Logger,
    ) -> None:
        super().__init__(
            client, store, cache_data=cache_data, fail=fail, owner=owner, logger=logger
        )
        # path -> the task keeping its data / child-list watch armed
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._listers: dict[str, asyncio.Task[None]] = {}
        self._loading = 0
        self._loaded: asyncio.Future[None] | None = None

    async def start(self) -> None:
        self._loaded = asyncio.get_running_loop().create_future()
        store = self._store
        if store.include_root:
            self._watch_node(store.root, 0)
        if store.follows(store.root, 0):
            self._watch_children(store.root, 0)
        self._loaded_one(False)
        await self._loaded

    def abort(self) -> list[asyncio.Task[Any]]:
        if self._loaded is not None and not self._loaded.done():
            self._loaded.set_result(None)  # start() returns; the cache raises its error
        return super().abort()

    def _all_tasks(self) -> list[asyncio.Task[Any]]:
        return [*self._tasks, *self._watchers.values(), *self._listers.values()]

    def _watch_node(self, path: str, depth: int) -> None:
        if path not in self._watchers:
            self._loading += 1
            coro = self._guard(self._node_loop, path, depth)
            self._watchers[path] = self._spawn(coro, "node")

    def _watch_children(self, path: str, depth: int) -> None:
        if path not in self._listers:
            self._loading += 1
            coro = self._guard(self._list_loop, path, depth)
            self._listers[path] = self._spawn(coro, "children")

    def _loaded_one(self, first: bool) -> bool:
        """Count a node's first load (if ``first``); the initial load ends at zero."""
        if first:
            self._loading -= 1
        if self._loading == 0 and self._loaded is not None and not self._loaded.done():
            self._loaded.set_result(None)
        return False

    async def _until_connected(self) -> None:
        # Not needed for correctness (a read made while suspended waits by itself), but it
        # keeps a loop from arming a watch it would only withdraw if the cache closes now.
        await self._client.wait_for(State.CONNECTED)

    async def _node_loop(self, path: str, depth: int) -> None:
        """Keep one node read and its data watch armed."""
        first = True
        delay = FIRST_DELAY
        client = self._client
        store = self._store
        try:
            while True:
                try:
                    if not client.connected:
                        await self._until_connected()
                    try:
                        if self._cache_data:
                            data, stat, watch = await client.get(path, watch=True)
                        else:
                            maybe, watch = await client.exists(path, watch=True)
                            if maybe is None:
                                raise NoNodeError(path=path)
                            data, stat = b"", maybe
                    except NoNodeError:
                        store.remove(path)
                        if path != store.root:
                            return  # the parent's child watch reports a re-creation
                        # The root: wait for it to appear.
                        if not client.connected:
                            await self._until_connected()
                        maybe, watch = await client.exists(path, watch=True)
                        if maybe is not None:
                            watch.cancel()
                            continue  # created in between: read it
                        first = self._loaded_one(first)
                        await watch
                        continue
                    store.put(path, data, stat)
                    if store.follows(path, depth):
                        self._watch_children(path, depth)
                    first = self._loaded_one(first)
                    delay = FIRST_DELAY
                    await watch
                except (ConnectionLossError, SessionExpiredError) as exc:
                    # Expired: the watch is gone with the session; read again with a new one.
                    delay = await recover(client, exc, delay)
        finally:
            self._loaded_one(first)
            self._watchers.pop(path, None)

    async def _list_loop(self, path: str, depth: int) -> None:
        """Keep one node's children listed and its child watch armed."""
        first = True
        delay = FIRST_DELAY
        client = self._client
        root = self._store.root
        try:
            while True:
                try:
                    if not client.connected:
                        await self._until_connected()
                    try:
                        names, watch = await client.children(path, watch=True)
                    except NoNodeError:
                        if path != root:
                            return  # the node's own task reports the deletion
                        if not client.connected:
                            await self._until_connected()
                        maybe, watch = await client.exists(path, watch=True)
                        if maybe is not None:
                            watch.cancel()
                            continue
                        first = self._loaded_one(first)
                        await watch
                        continue
                    for name in names:
                        if self._store.accepts(child := join(path, name)):
                            self._watch_node(child, depth + 1)
                    first = self._loaded_one(first)
                    delay = FIRST_DELAY
                    await watch
                except (ConnectionLossError, SessionExpiredError) as exc:
                    delay = await recover(client, exc, delay)
        finally:
            self._loaded_one(first)
            self._listers.pop(path, None)
