"""Which peer's on-ZooKeeper layout a recipe speaks: :class:`Layout`.

Recipes lay their nodes out as Apache Curator does by default, so Java and Python services
share them. A Python fleet moving from kazoo runs kazoo and aiocoord processes on the same
paths for a while: a recipe that kazoo has takes ``layout="kazoo"`` (or ``Layout.KAZOO``) and
then names, orders and encodes its nodes as kazoo does, and makes their parents as kazoo does
(persistent nodes where Curator's recipes make containers: :attr:`Layout.parents_as_containers`).
The layout is chosen here, once per recipe object; every recipe refuses a layout it cannot
speak with a typed error before anything is sent. ``docs/from-kazoo.md`` says, recipe by
recipe, which side must be set how on a shared path.

Which layout a contender's node is in is told by its name alone (:func:`contender_layout`):
the recipes use it to warn of a mixed path, and ``python -m aiocoord locks`` to mark one.
"""

from __future__ import annotations

import contextlib
import enum
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from aiocoord._paths import sequence_of
from aiocoord._wire.data import ACL
from aiocoord.errors import BadArgumentsError, InvalidTypeError, NodeExistsError

if TYPE_CHECKING:
    from aiocoord.client import Client

__all__ = ["KAZOO_LOCK", "KAZOO_READ", "Layout", "check_layout", "contender_layout"]

#: kazoo's lock node name before the sequence number: its ``Lock``'s, ``WriteLock``'s,
#: ``Election``'s and ``Semaphore``'s lock queue's.
KAZOO_LOCK = "__lock__"
#: kazoo's ``ReadLock`` node name before the sequence number.
KAZOO_READ = "__rlock__"

# The names kazoo's locks take for contenders (kazoo's own test of a name, without
# extra_lock_patterns).
_KAZOO_CONTENDER = re.compile(r"(?:__lock__|__rlock__)-?\d{10}$")


class Layout(enum.StrEnum):
    """A peer whose node layout a recipe speaks (compare with a string: ``"kazoo"``)."""

    #: Apache Curator's layout (the default): ``_c_<uuid>-lock-<seq>`` and friends.
    CURATOR = "curator"
    #: kazoo's layout (2.x): ``<uuid hex>__lock__<seq>``, text counters, ``entry-`` items.
    KAZOO = "kazoo"

    @property
    def parents_as_containers(self) -> bool:
        """Whether a recipe in this layout makes the missing parents of its nodes (its own
        path included, where that is a parent) as container nodes, which the server deletes
        once their last child is gone: Curator's ``creatingParentContainersIfNeeded``. False
        in kazoo's layout, where they are persistent nodes as kazoo's ``ensure_path`` makes
        them: a kazoo recipe object checks its path once and then counts on it for its life
        (its ``assured_path``), so a parent the server reaps between two uses breaks it
        (``docs/from-kazoo.md``, "Moving a running fleet"). Every recipe with a ``layout=``
        reads its parent mode here."""
        return self is Layout.CURATOR


def check_layout(
    value: Any, recipe: str, supported: Iterable[Layout] = (Layout.CURATOR, Layout.KAZOO)
) -> Layout:
    """``value`` (a :class:`Layout` or its name) as a Layout that ``recipe`` speaks, else
    InvalidTypeError / BadArgumentsError naming the layouts it does speak."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"layout must be a Layout or str, not {type(value).__name__}")
    try:
        layout = Layout(value.lower()) if not isinstance(value, Layout) else value
    except ValueError:
        layout = None
    speaks = tuple(supported)
    if layout is None or layout not in speaks:
        names = ", ".join(repr(s.value) for s in speaks)
        raise BadArgumentsError(f"{recipe} speaks the layouts {names}, not {value!r}")
    return layout


async def _make_node(client: Client, path: str, layout: Layout, acl: Sequence[ACL] | None) -> None:
    """Make ``path`` a persistent node (left alone if it exists) and its missing parents as
    ``layout`` makes them (:attr:`Layout.parents_as_containers`): a recipe's own node, such as a
    barrier's or a queue's."""
    with contextlib.suppress(NodeExistsError):
        await client.create(
            path, make_parents=True, parents_as_containers=layout.parents_as_containers, acl=acl
        )


def contender_layout(name: str) -> Layout | None:
    """The layout of the contender whose node is named ``name``: KAZOO for the names kazoo's
    locks take (``<uuid hex>__lock__<seq>``, ``__rlock__``), CURATOR for any other name that
    ends in a sequence number (Curator's and ours: ``_c_<uuid>-lock-<seq>`` and friends),
    None for a name with no sequence number (no contender)."""
    if _KAZOO_CONTENDER.search(name) is not None:
        return Layout.KAZOO
    return Layout.CURATOR if sequence_of(name) is not None else None
