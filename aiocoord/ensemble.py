"""Ensemble tracking: the ensemble's configuration as ``/zookeeper/config`` holds it, and the
tracker that keeps a client's server list equal to the ensemble's members
(``connect(..., track_ensemble=True)``)."""

from __future__ import annotations

from aiocoord._client.tracker import EnsembleTracker
from aiocoord._session.ensemble_config import EnsembleConfig, EnsembleMember, MemberRole
from aiocoord._shown import show_in

__all__ = ["EnsembleConfig", "EnsembleMember", "EnsembleTracker", "MemberRole"]

show_in(__name__, globals(), __all__)
