"""A FIFO queue whose items carry an id, by which they can be removed before anyone takes
them: Curator's ``DistributedIdQueue``.

The layout is Curator's: each item is a persistent sequential node
``<path>/queue-|<id>|<10-digit sequence>`` whose data is the item in :class:`~aiocoord.Queue`'s
framing; ``/`` and ``|`` in an id are written as ``_`` (so ids that differ only there are the
same id). Consumers take items in arrival order, whatever their ids. A Curator
``DistributedIdQueue<byte[]>`` can share the queue.

:meth:`IdQueue.remove` deletes every queued item with an id, each exactly once (the same
marked delete a consumer's claim is), and says how many it removed; an item a consumer took
first is not counted. Everything else is :class:`~aiocoord.Queue`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiocoord._validation import validate_data, validate_path
from aiocoord._wire.data import ACL
from aiocoord.client import Client
from aiocoord.errors import BadArgumentsError, InvalidTypeError, NoNodeError
from aiocoord.recipes.queue import Queue, check_items

__all__ = ["IdQueue"]

_SEPARATOR = "|"


def _fix_id(item_id: Any) -> str:
    """The id as written in node names (Curator's ``fixId``); a typed error for no id."""
    if not isinstance(item_id, str):
        raise InvalidTypeError(f"item_id must be str, not {type(item_id).__name__}")
    if not item_id:
        raise BadArgumentsError("item_id must not be empty")
    return item_id.replace("/", "_").replace(_SEPARATOR, "_")


def _id_of(name: str) -> str:
    """The id in an item's name (the whole name if it has none, as Curator reads it)."""
    first = name.find(_SEPARATOR)
    second = name.find(_SEPARATOR, first + 1) if first >= 0 else -1
    if first < 0 or second < 0:
        return name
    return name[first + 1 : second]


class _IdItems(Queue):
    """The Queue underneath: items ordered by sequence alone, whatever their ids."""

    def _due(self, names: list[str]) -> tuple[list[str], float | None]:
        # Curator sorts by the name without its id: "queue-" and the sequence.
        return sorted((n for n in names if self._is_item(n)), key=lambda n: n[-10:]), None

    async def remove_node(self, name: str) -> bool:
        """Delete item node ``name`` exactly once: True if this call did."""
        return await self._claim(name) is not None


class IdQueue:
    """A FIFO queue of byte strings with ids (Curator's ``DistributedIdQueue``); see the
    module docstring.

    ``await q.put(b"job", "order-17")``; ``await q.get(timeout)`` takes the head item (its
    data); ``await q.remove("order-17")`` removes the items with that id still queued.
    ``close()`` (or leaving ``async with``) is :meth:`Queue.close`. ``acl`` is the ACL of the
    nodes it creates, parents included (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE).
    """

    def __init__(self, client: Client, path: str, *, acl: Sequence[ACL] | None = None) -> None:
        self._queue = _IdItems(client, path, acl=acl)
        #: the client whose session makes and takes the queue's nodes
        self.client: Client = self._queue.client
        #: the queue's path, the parent of its item and marker nodes (as given, under the
        #: client's chroot)
        self.path: str = self._queue.path
        #: the ACL of the nodes it creates, parents included (None: the client's ``acl_provider``,
        #: else OPEN_ACL_UNSAFE)
        self.acl: tuple[ACL, ...] | None = self._queue.acl

    def _item_path(self, item_id: str) -> str:
        prefix = self._queue._item_prefix() + _SEPARATOR + _fix_id(item_id) + _SEPARATOR
        return validate_path(prefix, sequential=True)

    async def put(self, data: bytes, item_id: str) -> None:
        """Add ``data`` with ``item_id`` at the tail (exactly once)."""
        prefix = self._item_path(item_id)
        await self._queue._put([validate_data(data, self.path)], prefix)

    async def put_all(self, items: Sequence[bytes], item_id: str) -> None:
        """Add several items as one node with one id (Curator's ``putMulti``)."""
        prefix = self._item_path(item_id)
        await self._queue._put(check_items(items, self.path), prefix)

    async def get(self, timeout: float | None = None) -> bytes:
        """Take the head item (see :meth:`Queue.get`)."""
        return await self._queue.get(timeout)

    async def _item_names(self) -> list[str]:
        try:
            names = await self.client.children(self.path)
        except NoNodeError:
            return []
        return self._queue._due(names)[0]

    async def ids(self) -> list[str]:
        """The id of every queued item, in queue order (as written: see the module
        docstring)."""
        return [_id_of(n) for n in await self._item_names()]

    async def contains(self, item_id: str) -> bool:
        """True if an item with ``item_id`` is queued now."""
        return _fix_id(item_id) in await self.ids()

    async def remove(self, item_id: str) -> int:
        """Remove every queued item with ``item_id``; the number removed by this call.

        Cancelling may leave some of them removed and others queued.
        """
        wanted = _fix_id(item_id)
        removed = 0
        for name in await self._item_names():
            if _id_of(name) == wanted and await self._queue.remove_node(name):
                removed += 1
        return removed

    async def size(self) -> int:
        """The number of item nodes in the queue now."""
        return await self._queue.size()

    async def close(self) -> None:
        """See :meth:`Queue.close`."""
        await self._queue.close()

    async def __aenter__(self) -> IdQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<IdQueue {self.path}>"
