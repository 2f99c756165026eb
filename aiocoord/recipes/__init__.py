"""Coordination recipes built on :class:`aiocoord.Client` (re-exported from ``aiocoord``)."""
