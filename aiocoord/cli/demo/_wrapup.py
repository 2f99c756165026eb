"""The demo's end: checking that every cache shows the membership the server has, stopping
the workers (each finishes its job, so the ledger can be compared), the group leaving one by
one, and the clean-up that closes every client and stops the embedded ensemble even after a
failure (see :mod:`aiocoord.cli.demo`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiocoord.cli.demo._board import yes
from aiocoord.cli.demo._cast import MEMBERS_PATH, STEP_TIMEOUT
from aiocoord.cli.demo._stage import Stage
from aiocoord.client import Client
from aiocoord.errors import CoordinationError, NotEmptyError
from aiocoord.recipes.election import LeaderLatch
from aiocoord.recipes.nodes import GroupMember

__all__ = ["check_caches", "cleanup", "leave", "stop_workers"]


def _without(name: str) -> Callable[[Mapping[str, Any]], bool]:
    """A cache predicate: ``name`` is not a member."""
    return lambda view: name not in view


async def check_caches(demo: Stage) -> None:
    """Every cache must come to show what the server has (after a sync)."""
    assert demo.dashboard is not None
    assert demo.cache is not None
    await demo.dashboard.sync(MEMBERS_PATH)
    truth = set(await demo.dashboard.children(MEMBERS_PATH))
    waits: list[Awaitable[Any]] = [demo.cache.wait_for(lambda view: set(view) == truth, 10.0)]
    members = [w.member for w in demo.workers]
    if demo.newcomer is not None:
        members.append(demo.newcomer[1])
    waits += [m.wait_for(lambda view: set(view) == truth, 10.0) for m in members]
    outcome = await asyncio.gather(*waits, return_exceptions=True)
    if demo.leader_events is not None:
        await demo.leader_events.aclose()
    agree = sum(not isinstance(o, BaseException) for o in outcome)
    demo.result.cache_in_sync = agree == len(waits) and len(truth) == len(members)
    demo.board.event(
        f"caches: {agree} of {len(waits)} agree with the server "
        f"({len(truth)} members); in sync: {yes(demo.result.cache_in_sync)}"
    )


async def stop_workers(demo: Stage) -> None:
    """Stop every worker's loop; a worker that failed is reported on the board."""
    demo.stopping = True
    tasks = [w.task for w in demo.workers if w.task is not None]
    if tasks:
        # Each finishes the job it is on, so that the ledger can be compared.
        done, pending = await asyncio.wait(tasks, timeout=STEP_TIMEOUT)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                demo.board.event(f"a worker failed: {task.exception()!r}")


async def leave(demo: Stage) -> None:
    """Workers leave one by one: the dashboard's change stream shows each."""
    assert demo.cache is not None
    leaving: list[tuple[str, Client, GroupMember, LeaderLatch | None]] = [
        (w.name, w.client, w.member, w.latch) for w in demo.workers
    ]
    if demo.newcomer is not None:
        leaving.append(("newcomer", *demo.newcomer, None))
    for name, client, member, latch in leaving:
        if latch is not None:
            await latch.close()
        await member.close()
        await client.close()
        with contextlib.suppress(asyncio.TimeoutError, CoordinationError):
            await demo.cache.wait_for(_without(name), 5.0)


async def cleanup(demo: Stage) -> None:
    """Close every client and cache, remove the demo's nodes from a user's ZooKeeper, and stop
    the embedded ensemble; safe after a failure at any step."""
    if demo.newcomer is not None:
        client, member = demo.newcomer
        with contextlib.suppress(Exception):
            await member.close()
        await client.close()
    # Each close is idempotent: what leave() closed already is skipped.
    for w in demo.workers:
        with contextlib.suppress(Exception):
            await w.latch.close()
        with contextlib.suppress(Exception):
            await w.member.close()
        await w.client.close()
    if demo.cache is not None:
        await demo.cache.close()
    if demo.dashboard is not None:
        await demo.dashboard.close()
    if demo.admin is not None:
        if demo.ensemble is None and demo.admin.connected:
            # Leave the user's ZooKeeper as we found it.
            with contextlib.suppress(CoordinationError):
                await demo.admin.delete(demo.base, recursive=True)
            with contextlib.suppress(CoordinationError, NotEmptyError):
                await demo.admin.delete("/aiocoord-demo")
        await demo.admin.close()
    if demo.ensemble is not None:
        await demo.ensemble.__aexit__(None, None, None)
