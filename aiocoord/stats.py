"""The client's counters: what :meth:`aiocoord.Client.stats` returns (requests per operation,
watches, recipes' waits), the same numbers the OpenTelemetry export carries."""

from __future__ import annotations

from aiocoord._observe.metrics import ClientStats, OpStats, RecipeStats, WatchStats
from aiocoord._shown import show_in

__all__ = ["ClientStats", "OpStats", "RecipeStats", "WatchStats"]

show_in(__name__, globals(), __all__)
