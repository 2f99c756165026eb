"""The chaos runner: seeded faults against a real ensemble, recipes driven by several clients,
and referees that check the invariants while it all happens.

Reproducing a run: every random choice (which fault, on which member or client, for how
long, which operation a worker does next) comes from one ``random.Random(seed)``; the seed is
printed when a run starts and in every failure, and ``AIOCOORD_CHAOS_SEED=<seed>`` replays the
same schedule. Timing still depends on the machine, so a replay reproduces the *schedule*, not
the exact interleaving.

The pieces, one module each (this module re-exports their names, so ``from chaoslib import
...`` keeps working):

* ``chaos_log``: :class:`Chaos`, the seed, the fault and operation counters, the violations,
  the summary table;
* ``chaos_referees``: :class:`MutexReferee`, :class:`RWReferee`, :class:`SemaphoreReferee`,
  :class:`LeaderReferee`, :class:`CounterLedger`, :class:`QueueLedger`, :class:`CacheChecker`,
  :class:`ServiceCacheChecker`,
  each checking its invariant at the very step a holder enters or leaves, and at the end;
* ``chaos_cluster``, the fault injection: :class:`Links`, one
  :class:`~aiocoord.testing.FaultProxy` per ensemble member in front of one client, so that
  its link can be cut, delayed or partitioned (a partition of all its links for longer than
  the session timeout expires its session); :class:`Cluster`, the ensemble, a namespace,
  clients (each with its own links) and the end checks every chaos test finishes with (no
  orphan nodes, no leftover watches);
* ``chaos_workers``: workers (``*_worker``) that drive one recipe in a loop;
* ``chaos_mix``: :func:`run_mix`, the mix the CI test and the soak run share;
* ``chaos_hostile``: the hostile node data the ``hostile`` fault kind writes, and its lane;
* ``chaos_contenders``: :class:`Contender`, one interface over the exclusive recipes.
"""

from __future__ import annotations

from chaos_cluster import Cluster, Links, watched_paths
from chaos_contenders import Contender, contender_nodes
from chaos_log import FAULT_ERRORS, FAULT_KINDS, SECONDS_ENV, SEED_ENV, Chaos, Violation, chaos_seed
from chaos_mix import MixConfig, client_report, min_faults, run_mix
from chaos_referees import (
    CacheChecker,
    CounterLedger,
    LeaderReferee,
    MutexReferee,
    QueueLedger,
    RWReferee,
    SemaphoreReferee,
    ServiceCacheChecker,
    Shape,
    server_shape,
    shape,
)
from chaos_workers import (
    STATE_HISTORY,
    Worker,
    consumer_worker,
    counter_worker,
    drain,
    mutex_worker,
    producer_worker,
    rwlock_worker,
    semaphore_worker,
    start_worker,
    stop_workers,
    track_states,
    tree_writer,
)

__all__ = [
    "SEED_ENV",
    "SECONDS_ENV",
    "FAULT_ERRORS",
    "FAULT_KINDS",
    "chaos_seed",
    "Violation",
    "Chaos",
    "MutexReferee",
    "RWReferee",
    "SemaphoreReferee",
    "ServiceCacheChecker",
    "LeaderReferee",
    "CounterLedger",
    "QueueLedger",
    "Shape",
    "shape",
    "CacheChecker",
    "server_shape",
    "Links",
    "watched_paths",
    "Cluster",
    "Worker",
    "mutex_worker",
    "rwlock_worker",
    "semaphore_worker",
    "counter_worker",
    "producer_worker",
    "consumer_worker",
    "drain",
    "tree_writer",
    "start_worker",
    "stop_workers",
    "STATE_HISTORY",
    "track_states",
    "MixConfig",
    "client_report",
    "run_mix",
    "min_faults",
    "Contender",
    "contender_nodes",
]
