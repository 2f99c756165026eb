"""An asyncio service protecting a shared resource with a lock and a fencing token.

Three instances of an "account service", each with its own ZooKeeper session, serve deposit
requests against one account kept in a store they share. A deposit reads the balance and
writes it back plus the amount, so two deposits at once would lose one: every deposit runs
under one distributed lock (``async with lock:``).

A lock alone is not enough when a holder can stall: a long GC pause or a frozen VM can outlast
its session, the lock passes to someone else, and the stalled holder wakes up still believing
it holds it. So each write carries the lock's **fencing token** (its node's creation zxid, which
grows with every new holder), and the store refuses a token older than the newest it has seen.
The second half of this example plays that out: a holder's session is expired while it is
"paused", another instance takes the lock and writes, and the late write is refused.

Run a ZooKeeper first (``python -m aiocoord server``), then::

    python examples/lock_service.py [--connect 127.0.0.1:2181]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys

import aiocoord
from aiocoord.testing import expire_session, session_of

LOCK_PATH = "/examples/lock_service/account-42"


class StaleTokenError(Exception):
    """The store refused a write: a newer lock holder has written since."""


class FencedStore:
    """Stands for a database that takes fencing tokens (an in-memory one, to stay small).

    It remembers the largest token it has accepted and refuses any write with a smaller one.
    """

    def __init__(self) -> None:
        self.balance = 0
        self.highest_token = 0

    async def read(self) -> int:
        await asyncio.sleep(0.002)  # a network round trip
        return self.balance

    async def write(self, token: int, balance: int) -> None:
        await asyncio.sleep(0.002)
        if token < self.highest_token:
            raise StaleTokenError(f"token {token} < {self.highest_token}: a newer holder wrote")
        self.highest_token = token
        self.balance = balance


async def account_service(name: str, hosts: str, store: FencedStore, deposits: int) -> None:
    """One instance: serve ``deposits`` requests of 10, each under the lock."""
    async with aiocoord.connect(hosts, session_timeout=10) as client:
        lock = aiocoord.Lock(client, LOCK_PATH, identifier=name)
        for _ in range(deposits):
            async with lock:
                balance = await store.read()
                await store.write(lock.fencing_token or 0, balance + 10)
    print(f"{name}: {deposits} deposits done")


async def stalled_holder(hosts: str, store: FencedStore) -> bool:
    """A holder pauses past its session; True if its late write was refused."""
    async with (
        aiocoord.connect(hosts, session_timeout=10) as slow_client,
        aiocoord.connect(hosts, session_timeout=10) as other_client,
    ):
        slow = aiocoord.Lock(slow_client, LOCK_PATH, identifier="slow-instance")
        await slow.acquire()
        token = slow.fencing_token or 0
        balance = await store.read()
        print(f"slow-instance: holds the lock (token {token}), read {balance}, then stalls ...")

        # What a pause longer than the session timeout does: the server expires the session
        # and deletes the lock node. (expire_session does it now instead of in 10 s.)
        await expire_session(
            slow_client.session_id, session_of(slow_client).password, hosts.split("/")[0]
        )
        cause = await slow.lost.wait(timeout=10)
        print(f"slow-instance: lock lost ({cause.value}) - but a paused process would not know")

        other = aiocoord.Lock(other_client, LOCK_PATH, identifier="other-instance")
        async with other:
            balance_now = await store.read()
            await store.write(other.fencing_token or 0, balance_now + 10)
            print(f"other-instance: took the lock (token {other.fencing_token}), deposited 10")

        try:
            await store.write(token, balance + 10)  # the stalled instance wakes up
        except StaleTokenError as exc:
            print(f"slow-instance: its late write was refused: {exc}")
            refused = True
        else:
            print("slow-instance: its late write went through - the store is not fenced!")
            refused = False
        with contextlib.suppress(aiocoord.LockLostError):
            await slow.release()  # raises LockLostError: the lock had been lost
        return refused


async def main(hosts: str) -> int:
    store = FencedStore()
    await asyncio.gather(*(account_service(f"instance-{i}", hosts, store, 20) for i in (1, 2, 3)))
    print(f"balance after 60 deposits of 10: {store.balance}")
    if store.balance != 600:
        print("a deposit was lost: the lock did not exclude")
        return 1
    refused = await stalled_holder(hosts, store)
    print(f"final balance: {store.balance}")
    return 0 if refused and store.balance == 610 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--connect",
        default=os.environ.get("AIOCOORD_CONNECT", "127.0.0.1:2181"),
        help="ZooKeeper connect string (default $AIOCOORD_CONNECT or 127.0.0.1:2181)",
    )
    sys.exit(asyncio.run(main(parser.parse_args().connect)))
