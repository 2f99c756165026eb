"""A queue whose items are handed out from a given time on: Curator's
``DistributedDelayQueue``.

The layout is Curator's: each item is a persistent sequential node
``<path>/queue-|<time, hex, at least 8 digits>|<10-digit sequence>`` whose data is the item in
:class:`~aiocoord.Queue`'s framing, the time being when it becomes visible, in milliseconds
since the epoch (``delay_until_epoch_ms``). Consumers take the items whose time has come,
earliest time first (then in arrival order); a name with no readable time counts as due at
once, as Curator's does. A Curator ``DistributedDelayQueue<byte[]>`` can share the queue.

A consumer with nothing due waits for whichever comes first: a change of the children (a
children watch) or the time of the earliest item (a timer), never polling. Times are read
against the consumer's own clock (``time.time()``), as Curator does: clocks that disagree
shift when an item comes out, never whether it does.

Everything else is :class:`~aiocoord.Queue`'s: exactly once per item even when a reply is
lost, and a cancelled ``get`` loses no item.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from aiocoord._validation import validate_data
from aiocoord.errors import BadArgumentsError, InvalidTypeError
from aiocoord.recipes.layout import Layout
from aiocoord.recipes.queue import Queue, check_items

__all__ = ["DelayQueue"]

_SEPARATOR = "|"
_LONG_MAX = 2**63 - 1
# A timer fires a hair early now and then against the wall clock: wait this much longer.
_MARGIN = 0.002
_HEX_LONG = re.compile(r"[+-]?[0-9A-Fa-f]+")


def _epoch_of(name: str) -> int:
    """The time in a delay item's name (Curator's reading: 0 if there is none, or if it is
    not a Java long in hex: Long.parseLong fails on it)."""
    end = name.rfind(_SEPARATOR)
    start = name.rfind(_SEPARATOR, 0, end) if end > 0 else -1
    if start > 0 and end > start + 1:
        text = name[start + 1 : end]
        # Python's int() also takes "_" and spaces; a foreign name with a thousand digits
        # would overflow the float arithmetic of the wait.
        if _HEX_LONG.fullmatch(text):
            value = int(text, 16)
            if -_LONG_MAX - 1 <= value <= _LONG_MAX:
                return value
    return 0


class DelayQueue(Queue):
    """A queue whose items come out once their time has come (Curator's
    ``DistributedDelayQueue``); see the module docstring.

    ``await q.put(b"job", delay_until_epoch_ms=int(time.time() * 1000) + 5000)`` puts an
    item visible in 5 s; ``await q.get(timeout)`` waits for the first item due. An item put
    with an earlier time overtakes the ones waiting. ``acl`` is as for :class:`Queue`.
    """

    #: The end of the marker nodes' names, ``op|7FFFFFFFFFFFFFFF|``.
    #: Markers carry the latest time there is, so that Curator's consumers, which sort the
    #: children by the time in their names and take a name without one as due long ago,
    #: sort them after every item: a marker first would hide the first item's time from them,
    #: and they would wait for the next change of the queue instead of for that time.
    marker_name: str = f"op{_SEPARATOR}{_LONG_MAX:X}{_SEPARATOR}"
    _LAYOUTS = (Layout.CURATOR,)

    @staticmethod
    def _tag(delay_until_epoch_ms: Any) -> str:
        value = delay_until_epoch_ms
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidTypeError(
                "delay_until_epoch_ms must be an int (milliseconds since the epoch), "
                f"not {type(value).__name__}"
            )
        if not 0 <= value <= _LONG_MAX:
            raise BadArgumentsError(
                f"delay_until_epoch_ms must be from 0 to 2**63-1 (a Java long), got {value}"
            )
        # Curator's epochToString: the time in upper-case hex, at least 8 digits, in bars.
        return f"{_SEPARATOR}{value:08X}{_SEPARATOR}"

    async def put(self, data: bytes, delay_until_epoch_ms: int = 0) -> None:
        """Add ``data``, visible to consumers from ``delay_until_epoch_ms`` (milliseconds
        since the epoch; 0, or any past time: at once)."""
        tag = self._tag(delay_until_epoch_ms)
        await self._put([validate_data(data, self.path)], self._item_prefix() + tag)

    async def put_all(self, items: Sequence[bytes], delay_until_epoch_ms: int = 0) -> None:
        """Add several items as one node with one time (Curator's ``putMulti``)."""
        tag = self._tag(delay_until_epoch_ms)
        await self._put(check_items(items, self.path), self._item_prefix() + tag)

    def _due(self, names: list[str]) -> tuple[list[str], float | None]:
        now_ms = time.time() * 1000
        # The sequence (the name's last 10 characters) orders items of the same time.
        items = sorted((_epoch_of(n), n[-10:], n) for n in names if self._is_item(n))
        due = [name for epoch, _, name in items if epoch <= now_ms]
        later = [epoch for epoch, _, _ in items if epoch > now_ms]
        if not later:
            return due, None
        return due, (min(later) - now_ms) / 1000 + _MARGIN

    def __repr__(self) -> str:
        return f"<DelayQueue {self.path}>"
