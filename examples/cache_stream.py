"""``async for`` over a ChildrenCache: service discovery as a change stream.

A registrar (its own session) registers three instances of a service as ephemeral nodes under
``/examples/cache_stream/services``, moves one, deregisters one, and then goes away (its
session ends, and its ephemeral nodes with it). A watcher follows the directory with a
:class:`aiocoord.ChildrenCache`: the cache holds the current instances
(``cache.children``), and ``cache.changes()`` streams every change as it happens: added,
updated, removed, plus connection events.

Run a ZooKeeper first (``python -m aiocoord server``), then::

    python examples/cache_stream.py [--connect 127.0.0.1:2181]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import aiocoord
from aiocoord.recipes.cache import CacheEventType

SERVICES = "/examples/cache_stream/services"


async def follow(
    events: aiocoord.EventSubscription[aiocoord.NodeEvent], seen: list[CacheEventType]
) -> None:
    """Print every change, and the directory as the events so far describe it (applying
    the events in order to an empty mapping gives the cache's content). The stream ends
    when the cache is closed."""
    view: dict[str, bytes] = {}
    async for event in events:
        seen.append(event.type)
        if event.type is CacheEventType.CHILD_ADDED:
            assert event.data is not None
            view[event.name] = event.data.data
            print(f"  + {event.name} at {event.data.data.decode()}")
        elif event.type is CacheEventType.CHILD_UPDATED:
            assert event.data is not None and event.previous is not None
            view[event.name] = event.data.data
            print(f"  ~ {event.name}: {event.previous.data.decode()} -> {event.data.data.decode()}")
        elif event.type is CacheEventType.CHILD_REMOVED:
            del view[event.name]
            print(f"  - {event.name}")
        else:
            print(f"  ({event.type.value})")  # initialized, suspended, reconnected, lost...
        print(f"    services: {', '.join(f'{k}={v.decode()}' for k, v in sorted(view.items()))}")


async def main(hosts: str) -> int:
    async with aiocoord.connect(hosts, session_timeout=10) as client:
        await client.ensure_path(SERVICES)
        cache = aiocoord.ChildrenCache(client, SERVICES)
        # Subscribe before start() to see the initial load too (then INITIALIZED).
        events = cache.changes()
        seen: list[CacheEventType] = []
        follower = asyncio.create_task(follow(events, seen))
        await cache.start()

        # The registrar: its own session, as another process would have. Between its steps
        # we wait for the cache to show each one: a cache reports states, and a state that
        # lasts less than a read (a node created and changed at once) may be seen only in
        # its final form.
        async with aiocoord.connect(hosts, session_timeout=10) as registrar:
            for i in (1, 2, 3):
                await registrar.create(
                    f"{SERVICES}/api-{i}", f"10.0.0.{i}:8080".encode(), ephemeral=True
                )
            await cache.wait_for(lambda children: len(children) == 3, timeout=10)
            await registrar.set(f"{SERVICES}/api-2", b"10.0.0.20:8080")
            await cache.wait_for(
                lambda children: children["api-2"].data == b"10.0.0.20:8080", timeout=10
            )
            await registrar.delete(f"{SERVICES}/api-3")
            await cache.wait_for(lambda children: "api-3" not in children, timeout=10)
        # Leaving `async with` closed the registrar's session: its ephemeral nodes, api-1 and
        # api-2, vanish with it, as they would after a crash (once the session timed out).
        await cache.wait_for(lambda children: not children, timeout=10)
        await cache.close()  # ends the stream, so `follow` returns
        await follower
    added = seen.count(CacheEventType.CHILD_ADDED)
    updated = seen.count(CacheEventType.CHILD_UPDATED)
    removed = seen.count(CacheEventType.CHILD_REMOVED)
    print(f"events: {added} added, {updated} updated, {removed} removed")
    return 0 if (added, updated, removed) == (3, 1, 3) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--connect",
        default=os.environ.get("AIOCOORD_CONNECT", "127.0.0.1:2181"),
        help="ZooKeeper connect string (default $AIOCOORD_CONNECT or 127.0.0.1:2181)",
    )
    sys.exit(asyncio.run(main(parser.parse_args().connect)))
