"""Benchmarks of aiocoord against kazoo (threads) and aiozk (asyncio) on one local ZooKeeper.

Run ``python -m benchmarks`` (``make bench``) for the full run, ``--quick`` for a smoke run.
The parent process (:mod:`benchmarks.cli`) starts the servers and runs every workload x peer x
repeat in a fresh worker subprocess (:mod:`benchmarks.worker`), so that one peer's threads,
tasks or memory never leak into another's figures, and so that a run which hangs is cut off
by a timeout instead of stalling the whole benchmark. Results go to ``benchmarks/results/``:
``latest.json``, ``latest.md`` and PNG plots.
"""
