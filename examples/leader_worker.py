"""Leader election: one worker at a time runs the job that must not run twice.

Three workers, each with its own ZooKeeper session, stand in one election
(:class:`aiocoord.Election`, Curator's ``LeaderSelector`` layout). ``async with
election.leadership() as term:`` waits until this worker leads and runs the body only while it
does: if leadership is lost (the session ends, the connection drops under the default policy),
the body is cancelled and ``LeadershipLostError`` raised. Each leader does a few rounds of the
leader-only job and steps down by leaving the block; the next in line takes over at once. One
leader is killed mid-term (its task cancelled, as in a crash): its node goes, and the next
worker leads. Every term carries a fencing token, larger than any term before it.

Run a ZooKeeper first (``python -m aiocoord server``), then::

    python examples/leader_worker.py [--connect 127.0.0.1:2181]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import aiocoord

ELECTION = "/examples/leader_worker/election"


class Ledger:
    """What the leaders did, and whether two ever led at once (checked in this process)."""

    def __init__(self) -> None:
        self.leading = 0
        self.overlap = False
        self.terms: list[tuple[str, int, int]] = []  # (worker, fencing token, rounds)


async def worker(name: str, hosts: str, ledger: Ledger, started: asyncio.Event) -> None:
    async with aiocoord.connect(hosts, session_timeout=10) as client:
        election = aiocoord.Election(client, ELECTION, identifier=name)
        async with election.leadership(timeout=30) as term:
            ledger.leading += 1
            ledger.overlap |= ledger.leading > 1
            print(f"{name}: leading (fencing token {term.fencing_token})")
            started.set()
            rounds = 0
            try:
                for _ in range(3):
                    await asyncio.sleep(0.1)  # the leader-only job, one round
                    rounds += 1
                    print(f"{name}:   round {rounds}")
            finally:
                ledger.leading -= 1
                ledger.terms.append((name, term.fencing_token, rounds))
        print(f"{name}: stepped down")


async def main(hosts: str) -> int:
    ledger = Ledger()
    first_leads = asyncio.Event()
    doomed = asyncio.create_task(worker("worker-1", hosts, ledger, first_leads))
    # worker-1 joins first, so it leads first.
    await asyncio.wait_for(first_leads.wait(), 30)
    others = [
        asyncio.create_task(worker(f"worker-{i}", hosts, ledger, asyncio.Event())) for i in (2, 3)
    ]
    await asyncio.sleep(0.15)  # let worker-1 get into its term
    print("worker-1: killed mid-term")
    doomed.cancel()
    await asyncio.gather(doomed, return_exceptions=True)
    await asyncio.gather(*others)

    tokens = [token for _, token, _ in ledger.terms]
    print("terms:", ", ".join(f"{n} (token {t}, {r} rounds)" for n, t, r in ledger.terms))
    ok = (
        len(ledger.terms) == 3
        and not ledger.overlap
        and tokens == sorted(tokens)
        and len(set(tokens)) == 3
    )
    print("one leader at a time, tokens increasing:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--connect",
        default=os.environ.get("AIOCOORD_CONNECT", "127.0.0.1:2181"),
        help="ZooKeeper connect string (default $AIOCOORD_CONNECT or 127.0.0.1:2181)",
    )
    sys.exit(asyncio.run(main(parser.parse_args().connect)))
