"""The soak run: the CI chaos mix, for as long as you like, on an ensemble of its own.

    python -m tests.chaos.soak --minutes 30            # from the repository root
    python -m tests.chaos.soak --minutes 5 --seed 1234  # replay a seed's fault schedule

It starts a 3-member ZooKeeper ensemble (local JVMs), runs :func:`chaoslib.run_mix` for the
chosen duration, prints progress every 30 s and the summary table at the end (faults injected
per kind, operations, violations), and exits with status 1 if any invariant was violated or
fewer faults than the CI minimum (20 of each kind per 2 minutes) were injected.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path

# The chaos modules import each other by their own names (as pytest finds them: this folder
# is on its path), so this folder goes on the path however soak is started (``python -m
# tests.chaos.soak`` or ``python tests/chaos/soak.py``).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from chaoslib import FAULT_KINDS, SEED_ENV, MixConfig, min_faults, run_mix

from aiocoord.testing import ZooKeeperEnsemble


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.chaos.soak", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--minutes", type=float, default=30.0, help="how long (default 30)")
    parser.add_argument(
        "--seed",
        type=lambda v: int(v, 0),
        default=None,
        help=f"seed (default ${SEED_ENV} or random)",
    )
    parser.add_argument("--clients", type=int, default=5, help="clients (default 5)")
    parser.add_argument(
        "--session-timeout", type=float, default=2.0, help="client session timeout, s (default 2)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log aiocoord at INFO")
    return parser.parse_args(argv)


async def soak(args: argparse.Namespace) -> int:
    """Run the mix; return the process exit status."""
    config = MixConfig(
        seconds=args.minutes * 60,
        clients=args.clients,
        session_timeout=args.session_timeout,
    )
    began = time.monotonic()
    print("starting a 3-member ensemble...", flush=True)
    async with ZooKeeperEnsemble(3) as ensemble:
        print(f"ensemble up in {time.monotonic() - began:.1f} s: {ensemble.connect_string}")
        chaos = await run_mix(
            ensemble, config, seed=args.seed, progress=lambda line: print(line, flush=True)
        )
    print()
    print(chaos.summary(verbose=args.verbose))
    status = 0
    if chaos.violations:
        print(f"\nFAILED: {len(chaos.violations)} violation(s); replay: {SEED_ENV}={chaos.seed}")
        status = 1
    least = min_faults(config)
    short = {k: chaos.faults[k] for k in FAULT_KINDS if chaos.faults[k] < least}
    if short:
        print(f"\nFAILED: fewer than {least} faults of kinds {short}")
        status = 1
    if status == 0:
        print(f"\nOK: 0 violations in {chaos.elapsed() / 60:.1f} min (seed {chaos.seed})")
    return status


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    return asyncio.run(soak(args))


if __name__ == "__main__":
    sys.exit(main())
