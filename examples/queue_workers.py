"""Workers sharing a job queue, where a job outlives the worker that crashes on it.

A producer puts 20 jobs in a :class:`aiocoord.LockingQueue` (kazoo's ``LockingQueue``
layout), two of them urgent (a lower priority number goes first). Three workers, each with
its own session, take jobs: ``take()`` locks the head job for this worker, ``consume()``
removes it for good once the work is done. A job stays in the queue while it is worked on,
so when worker-3 crashes holding one (its session ends before ``consume()``), the lock goes
with its session and another worker gets the job. Every job is done to the end; the
``consume()`` of each happens exactly once.

(:class:`aiocoord.Queue` is the simpler FIFO, Curator's ``DistributedQueue``: ``get()``
removes the item at once, so an item whose consumer crashes is lost.)

Run a ZooKeeper first (``python -m aiocoord server``), then::

    python examples/queue_workers.py [--connect 127.0.0.1:2181]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import aiocoord

QUEUE = "/examples/queue_workers/jobs"


async def produce(hosts: str) -> None:
    async with (
        aiocoord.connect(hosts, session_timeout=10) as client,
        aiocoord.LockingQueue(client, QUEUE) as queue,
    ):
        for i in range(1, 19):
            await queue.put(f"job-{i:02d}".encode())  # priority 100, the default
        for i in (19, 20):
            await queue.put(f"job-{i:02d} (urgent)".encode(), priority=0)
    print("producer: 20 jobs queued, 2 of them urgent")


async def work(
    name: str, hosts: str, taken_order: list[str], done: list[str], crash_on: int = 0
) -> None:
    """Take jobs until the queue stays empty for a second; crash on job ``crash_on``."""
    async with aiocoord.connect(hosts, session_timeout=10) as client:
        queue = aiocoord.LockingQueue(client, QUEUE)
        taken = 0
        while True:
            try:
                item = await queue.take(timeout=1.0)
            except TimeoutError:
                break  # nothing left
            taken += 1
            job = item.data.decode()
            taken_order.append(job)
            if taken == crash_on:
                print(f"{name}: took {job} and crashes")
                return  # leaving `async with` ends the session without consuming the job
            await asyncio.sleep(0.02)  # the work
            await item.consume()
            done.append(job)
            print(f"{name}: done {job}")
        await queue.close()


async def main(hosts: str) -> int:
    await produce(hosts)
    taken_order: list[str] = []
    done: list[str] = []
    await asyncio.gather(
        work("worker-1", hosts, taken_order, done),
        work("worker-2", hosts, taken_order, done),
        work("worker-3", hosts, taken_order, done, crash_on=2),
    )
    every_job_once = sorted(done) == sorted(set(done)) and len(done) == 20
    urgent_first = all("urgent" in job for job in taken_order[:2])
    retaken = len(taken_order) - len(done)
    print(f"{len(done)} jobs done, each once: {'yes' if every_job_once else 'NO'}")
    print(f"urgent jobs taken first: {'yes' if urgent_first else 'NO'}")
    print(f"jobs taken again after a crash: {retaken}")
    return 0 if every_job_once and urgent_first and retaken == 1 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--connect",
        default=os.environ.get("AIOCOORD_CONNECT", "127.0.0.1:2181"),
        help="ZooKeeper connect string (default $AIOCOORD_CONNECT or 127.0.0.1:2181)",
    )
    sys.exit(asyncio.run(main(parser.parse_args().connect)))
