"""A blocking queue of raw byte strings in the layout of Curator's ``SimpleDistributedQueue``
(and of the queue recipe shipped with ZooKeeper itself).

Each item is a persistent sequential node ``<path>/qn-<10-digit sequence>`` whose data is the
item itself, with no framing, so a Curator ``SimpleDistributedQueue`` (or ZooKeeper's
``DistributedQueue`` recipe) can share the queue. Consumers take the lowest sequence first;
other children are skipped (Curator logs them as foreign nodes).

The methods are those of ``java.util.concurrent.BlockingQueue`` as Curator has them:
:meth:`~SimpleQueue.offer` adds, :meth:`~SimpleQueue.take` waits for an item,
:meth:`~SimpleQueue.poll` returns None instead of waiting (or after ``timeout``),
:meth:`~SimpleQueue.peek` and :meth:`~SimpleQueue.element` read the head without taking it,
and :meth:`~SimpleQueue.remove` takes it or raises :class:`QueueEmptyError`.

The mechanism is :class:`~aiocoord.Queue`'s, so unlike Curator's each item goes to exactly
one consumer even when a reply is lost (the claim deletes the node on the version read, in a
transaction with an ephemeral marker; see :mod:`aiocoord.recipes._marker`), waiting consumers
sleep on a children watch, and a cancelled ``take`` never loses an item.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from aiocoord._deadline import Expired, deadline_after
from aiocoord._paths import join
from aiocoord._validation import validate_timeout
from aiocoord.errors import NoNodeError, QueueEmptyError, SessionExpiredError
from aiocoord.recipes.layout import Layout
from aiocoord.recipes.queue import Queue, check_items

__all__ = ["SIMPLE_QUEUE_ITEM_NAME", "QueueEmptyError", "SimpleQueue"]

#: Curator's (and ZooKeeper's queue recipe's) item node name, before the sequence number.
SIMPLE_QUEUE_ITEM_NAME = "qn-"


class SimpleQueue(Queue):
    """A FIFO queue of raw byte strings (Curator's ``SimpleDistributedQueue``); see the
    module docstring.

    ``await q.offer(b"job")``; ``await q.take()`` waits for the head item; ``await
    q.poll(timeout=5)`` gives it or None. :meth:`Queue.put` and :meth:`Queue.get` work too.
    ``put_all`` makes one node per item in one transaction: all are added or none, in this order,
    with nothing of other producers in between. ``close()`` puts back what a cancelled ``take``
    claimed (at the tail) and deletes the marker nodes. ``acl`` is the ACL of the nodes it creates,
    parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    #: The item node name before the sequence number: Curator's (and ZooKeeper's) ``qn-``.
    item_name: str = SIMPLE_QUEUE_ITEM_NAME
    _LAYOUTS = (Layout.CURATOR,)

    def _payloads(self, items: list[bytes]) -> list[bytes]:
        return items  # one node per item, its data the raw bytes

    def _items_of(self, data: bytes, path: str) -> list[bytes]:
        return [data]

    async def offer(self, data: bytes) -> None:
        """Add ``data`` at the tail (exactly once, even if the reply is lost)."""
        await self.put(data)

    async def put_all(self, items: Sequence[bytes]) -> None:
        """Add several items, each its own node, all or none, in this order."""
        await self._put(check_items(items, self.path), self._item_prefix())

    async def take(self, timeout: float | None = None) -> bytes:
        """Take the head item, waiting while the queue is empty (:meth:`Queue.get`).

        :class:`aiocoord.TimeoutError` after ``timeout`` seconds with nothing taken.
        """
        return await self.get(timeout)

    async def poll(self, timeout: float | None = None) -> bytes | None:
        """Take the head item; None if there is none (without ``timeout``: now, with one
        listing; with it: after waiting that many seconds on a children watch)."""
        timeout = validate_timeout(timeout)
        if timeout is None:
            return await self._take(None, wait=False)
        try:
            return await self._take(deadline_after(timeout), wait=True)
        except Expired:
            return None

    async def remove(self) -> bytes:
        """Take the head item now; :class:`QueueEmptyError` if there is none."""
        item = await self._take(None, wait=False)
        if item is None:
            raise QueueEmptyError(self.path)
        return item

    async def peek(self) -> bytes | None:
        """The head item without taking it; None if the queue is empty."""
        if self._claims:
            # A cancelled take's claim may still bring the head item.
            await asyncio.wait(list(self._claims))
        if self._ready:
            return self._ready[0][0]  # claimed by a cancelled take: handed out first
        while True:
            try:
                names = await self.client.children(self.path)
            except NoNodeError:
                return None
            except SessionExpiredError:
                continue
            for name in self._due(names)[0]:
                try:
                    data, _ = await self.client.get(join(self.path, name))
                except NoNodeError:
                    continue  # taken meanwhile: the next one is the head
                return data
            return None

    async def element(self) -> bytes:
        """The head item without taking it; :class:`QueueEmptyError` if there is none."""
        item = await self.peek()
        if item is None:
            raise QueueEmptyError(self.path)
        return item

    def __repr__(self) -> str:
        return f"<SimpleQueue {self.path}>"
