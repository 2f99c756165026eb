"""Membership changes of a test ensemble, for :class:`~aiocoord.testing.ZooKeeperEnsemble`'s
``add_member`` and ``remove_member``: the joiner's first configuration, and reading the
configuration and reconfiguring through an aiocoord client from synchronous code.

The reconfig is authorized as the super user every test server knows
(:data:`~aiocoord.testing.server.SUPER_AUTH`): ZooKeeper lets only the super user (or a
server running with ``zookeeper.skipACL=yes``, which would switch off every ACL check of
the tests as well) write ``/zookeeper/config``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiocoord._connect import open_client
from aiocoord._session.ensemble_config import EnsembleConfig, EnsembleMember
from aiocoord.client import Client
from aiocoord.testing._zkserver import SUPER_AUTH

__all__ = ["joiner_config", "read_config", "reconfigure"]

_T = TypeVar("_T")


def joiner_config(current: EnsembleConfig, joiner: EnsembleMember) -> str:
    """The dynamic config a joining server starts with: the members of ``current`` and
    itself listed as an observer. The ZooKeeper manual's procedure for a joiner not yet in
    the configuration: listed so, it cannot form a quorum of its own, finds the leader among
    the members, adopts the committed configuration and follows without a vote until a
    reconfig adds it. (An observer added by reconfig already is in ``current`` as one.)"""
    observer = EnsembleMember(
        joiner.id,
        joiner.host,
        joiner.quorum_port,
        joiner.election_port,
        "observer",
        joiner.client_host,
        joiner.client_port,
    )
    lines = [m.spec for m in current.members if m.id != joiner.id] + [observer.spec]
    return "".join(f"{line}\n" for line in lines)


def read_config(connect_string: str, timeout: float) -> EnsembleConfig:
    """The committed configuration, read after a sync (so it is the leader's latest)."""

    async def read(client: Client) -> EnsembleConfig:
        await client.sync("/")
        return await client.get_config()

    return _with_client(connect_string, timeout, read)


def reconfigure(connect_string: str, timeout: float, **changes: Any) -> EnsembleConfig:
    """``client.reconfig(**changes)`` as the super user; the new configuration."""

    async def change(client: Client) -> EnsembleConfig:
        return await client.reconfig(**changes)

    return _with_client(connect_string, timeout, change)


def _with_client(
    connect_string: str, timeout: float, work: Callable[[Client], Awaitable[_T]]
) -> _T:
    """Run ``work`` with a fresh client on an event loop of its own, in a thread of its own:
    the ensemble's methods are synchronous and may be called from a thread whose loop runs
    (``asyncio.run`` cannot nest there)."""

    async def main() -> _T:
        client = await open_client(
            connect_string, session_timeout=max(timeout, 4.0), auth=[SUPER_AUTH]
        )
        try:
            return await asyncio.wait_for(work(client), timeout)
        finally:
            await client.close()

    result: list[_T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(main()))
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)

    thread = threading.Thread(target=run, name="aiocoord-reconfigure", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
