"""How a queue names its nodes in each :class:`~aiocoord.recipes.layout.Layout`, and which
nodes on its path belong to a peer of the other layout that may not see ours.

**Names.** Curator's: ``_c_<uuid>-<lock name><seq>`` (protected). kazoo's:
``<uuid hex><lock name><seq>`` (``__lock__``, ``__rlock__``). Either way the node is found
again by its prefix after a create whose reply was lost, as each peer finds its own.

**Who sees whom.** Our queue orders every child that ends in a sequence number, so it waits
for any contender of either layout. The peers do not: Curator's recipes list only the names
that carry their lock name (``lock-``, ``__WRIT__``), and kazoo's only those that match
``__lock__<seq>`` / ``__rlock__<seq>`` (unless given ``extra_lock_patterns``). A contender of
the other layout on our path may therefore not wait for us: :func:`foreign_contender` finds
it, and the queue warns (:class:`~aiocoord.errors.MixedLayoutWarning`).
"""

from __future__ import annotations

from collections.abc import Iterable

from aiocoord._paths import kazoo_prefix, protected_prefix
from aiocoord.recipes.layout import KAZOO_LOCK, KAZOO_READ, Layout, contender_layout

__all__ = ["KAZOO_LOCK", "KAZOO_READ", "fresh_prefix", "foreign_contender"]

_ADVICE = {
    Layout.CURATOR: (
        "a kazoo Lock does not wait for Curator-layout nodes; give it "
        "extra_lock_patterns=['-lock-'] (or the pattern of this recipe's nodes), or use "
        "this recipe with layout='kazoo'"
    ),
    Layout.KAZOO: (
        "a Curator recipe does not wait for kazoo-layout nodes; use this path from "
        "Curator-layout recipes only, or move that contender to layout='kazoo'"
    ),
}


def fresh_prefix(layout: Layout) -> str:
    """A new node's prefix in ``layout`` (see the module docstring)."""
    return kazoo_prefix() if layout is Layout.KAZOO else protected_prefix()


def foreign_contender(layout: Layout, names: Iterable[str]) -> str | None:
    """The first contender in ``names`` of the other layout than ``layout``, or None."""
    if layout is Layout.CURATOR:
        # On every acquisition's listing: a substring test first, the pattern only on a hit.
        for name in names:
            if "lock__" in name and contender_layout(name) is Layout.KAZOO:
                return name
        return None
    for name in names:
        if contender_layout(name) is Layout.CURATOR:
            return name
    return None


def advice(layout: Layout) -> str:
    """What to configure when :func:`foreign_contender` finds one."""
    return _ADVICE[layout]
