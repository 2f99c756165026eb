"""The chaos mix: every recipe at once, every kind of fault, for AIOCOORD_CHAOS_SECONDS
(default 120) seconds; zero violations and at least 20 faults of each kind per 2 minutes."""

from __future__ import annotations

import os

import pytest
from chaoslib import FAULT_KINDS, SECONDS_ENV, MixConfig, min_faults, run_mix

from aiocoord.testing import ZooKeeperEnsemble

pytestmark = pytest.mark.ensemble


async def test_mix(zookeeper_ensemble: ZooKeeperEnsemble) -> None:
    config = MixConfig(seconds=float(os.environ.get(SECONDS_ENV, "120")))
    chaos = await run_mix(zookeeper_ensemble, config, progress=print)
    print(chaos.summary())
    chaos.assert_clean()
    least = min_faults(config)
    for kind in FAULT_KINDS:
        assert chaos.faults[kind] >= least, (
            f"only {chaos.faults[kind]} {kind} faults (want {least}); seed {chaos.seed}"
        )
    assert sum(chaos.ops.values()) > 0
