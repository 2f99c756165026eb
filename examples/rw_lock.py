"""A read-write lock: many readers at once, one writer alone.

A configuration is kept in two nodes, ``/examples/rw_lock/config/host`` and ``.../port``,
that must change together. A writer (its own session) moves the service to a new host and
port a few times, writing one node and then the other; four readers (another session, one
task each) keep reading both. Under :class:`aiocoord.ReadWriteLock` (Curator's
``InterProcessReadWriteLock`` layout) readers share the lock with each other, so they run
together, but never with the writer, so no reader ever sees a half-made change (a new host
with an old port). Writers queue fairly with readers: a waiting writer is not starved.

Run a ZooKeeper first (``python -m aiocoord server``), then::

    python examples/rw_lock.py [--connect 127.0.0.1:2181]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import aiocoord

LOCK = "/examples/rw_lock/lock"
HOST = "/examples/rw_lock/config/host"
PORT = "/examples/rw_lock/config/port"


class Stats:
    """Who was inside the lock at once (checked in this process)."""

    def __init__(self) -> None:
        self.readers = 0
        self.writers = 0
        self.max_readers = 0
        self.mixed = False  # a reader and the writer inside at once
        self.torn = 0  # reads that saw a half-made change
        self.reads = 0


async def reader(name: str, rw: aiocoord.ReadWriteLock, stats: Stats, done: asyncio.Event) -> None:
    client = rw.client
    while not done.is_set():
        async with rw.read:
            stats.readers += 1
            stats.max_readers = max(stats.max_readers, stats.readers)
            stats.mixed |= stats.writers > 0
            (host, _), (port, _) = await asyncio.gather(client.get(HOST), client.get(PORT))
            await asyncio.sleep(0.02)  # use the configuration for a while
            stats.readers -= 1
        stats.reads += 1
        # Each release of the config ends in the same digit on host and port.
        if host[-1:] != port[-1:]:
            stats.torn += 1
            print(f"{name}: torn read {host.decode()}:{port.decode()}")


async def writer(rw: aiocoord.ReadWriteLock, stats: Stats) -> None:
    client = rw.client
    for release in range(1, 4):
        await asyncio.sleep(0.1)
        async with rw.write:
            stats.writers += 1
            stats.mixed |= stats.readers > 0
            await client.set(HOST, f"10.0.0.{release}".encode())
            await asyncio.sleep(0.02)  # the gap a reader must never see
            await client.set(PORT, f"808{release}".encode())
            stats.writers -= 1
        print(f"writer: moved the service to 10.0.0.{release}:808{release}")


async def main(hosts: str) -> int:
    async with (
        aiocoord.connect(hosts, session_timeout=10) as readers_client,
        aiocoord.connect(hosts, session_timeout=10) as writer_client,
    ):
        for path, value in ((HOST, b"10.0.0.0"), (PORT, b"8080")):
            try:
                await writer_client.create(path, value, make_parents=True)
            except aiocoord.NodeExistsError:  # left by an interrupted run
                await writer_client.set(path, value)
        try:
            stats = Stats()
            done = asyncio.Event()
            reading = [
                asyncio.create_task(
                    reader(f"reader-{i}", aiocoord.ReadWriteLock(readers_client, LOCK), stats, done)
                )
                for i in range(4)
            ]
            await writer(aiocoord.ReadWriteLock(writer_client, LOCK), stats)
            done.set()
            await asyncio.gather(*reading)
        finally:
            await writer_client.delete("/examples/rw_lock/config", recursive=True)
    print(
        f"{stats.reads} reads, up to {stats.max_readers} readers at once, "
        f"reader and writer together: {'yes' if stats.mixed else 'never'}, "
        f"torn reads: {stats.torn}"
    )
    return 0 if stats.max_readers > 1 and not stats.mixed and stats.torn == 0 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--connect",
        default=os.environ.get("AIOCOORD_CONNECT", "127.0.0.1:2181"),
        help="ZooKeeper connect string (default $AIOCOORD_CONNECT or 127.0.0.1:2181)",
    )
    sys.exit(asyncio.run(main(parser.parse_args().connect)))
