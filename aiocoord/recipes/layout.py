"""Which peer's on-ZooKeeper layout a recipe speaks: :class:`Layout`.

Recipes lay their nodes out as Apache Curator does by default, so Java and Python services
share them. A Python fleet moving from kazoo runs kazoo and aiocoord processes on the same
paths for a while: a recipe that kazoo has takes ``layout="kazoo"`` (or ``Layout.KAZOO``) and
then names, orders and encodes its nodes as kazoo does. The layout is chosen here, once per
recipe object; every recipe refuses a layout it cannot speak with a typed error before
anything is sent. ``docs/from-kazoo.md`` says, recipe by recipe, which side must be set how
on a shared path.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from aiocoord.errors import BadArgumentsError, InvalidTypeError

__all__ = ["Layout", "check_layout"]


class Layout(enum.StrEnum):
    """A peer whose node layout a recipe speaks (compare with a string: ``"kazoo"``)."""

    #: Apache Curator's layout (the default): ``_c_<uuid>-lock-<seq>`` and friends.
    CURATOR = "curator"
    #: kazoo's layout (2.x): ``<uuid hex>__lock__<seq>``, text counters, ``entry-`` items.
    KAZOO = "kazoo"


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
