"""The ensemble tracker (``connect(..., track_ensemble=True)``): it watches
``/zookeeper/config`` and keeps the client's server list equal to the members' client
addresses, so that a client started with one member's address learns the others and can
fail over to them, and follows members added and removed by reconfig (Curator's
EnsembleTracker does the same for its connect string).

It changes where the *next* connection goes; the current one stays where it is (no
rebalancing), unless its server was a member and a reconfig removed it: a removed server may
go on serving for a while, outside the ensemble, so the client then drops that connection and
moves to a member, keeping its session (SUSPENDED, then RECONNECTED), as the Java client's
HostProvider does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Literal, Protocol

from aiocoord._deadline import within
from aiocoord._session.ensemble_config import CONFIG_NODE, EnsembleConfig
from aiocoord._session.servers import parse_connect_string
from aiocoord._session.session import Session
from aiocoord._session.states import State
from aiocoord._session.watch import Watch
from aiocoord._validation import validate_timeout
from aiocoord.errors import ClientClosedError, CoordinationError, InvalidTypeError

__all__ = ["EnsembleTracker", "TrackedClient"]

log = logging.getLogger("aiocoord.client")

#: After a failed read of the configuration, the tracker tries again after this long,
#: doubling up to the max while the failures go on (a read fails mostly while disconnected,
#: and then the tracker waits for the reconnect first).
RETRY_MIN = 0.1
RETRY_MAX = 5.0


class TrackedClient(Protocol):
    """What the tracker needs of a client (an :class:`aiocoord.Client` has it): the tracker
    sits below the client, so it names the client's abilities rather than its class."""

    @property
    def _session(self) -> Session:
        """The session manager whose server list is kept."""

    async def get_config(self, *, watch: Literal[True]) -> tuple[EnsembleConfig, Watch]:
        """The ensemble's configuration, with a watch on its next change."""

    def _spawn(
        self, coro: Coroutine[Any, Any, Any], name: str, *, daemon: bool = False
    ) -> asyncio.Task[Any]:
        """Run ``coro`` as a task the client owns (a daemon: no work anyone waits for)."""

    async def wait_for(self, state: State, timeout: float | None = None) -> None:
        """Wait until the client's state is ``state``."""


class EnsembleTracker:
    """Keeps a client's server list equal to the ensemble's members (module docstring).

    Made by :func:`aiocoord.connect` with ``track_ensemble=True``, which reads the
    configuration once before it returns; then ``client.ensemble_tracker`` is this object.
    Its task belongs to the client and ends with ``client.close()``. A configuration with no
    client addresses (a standalone server's, or ``server.N`` lines without ``;host:port``)
    leaves the list as it is. A failed read is logged (warning) and retried once the client
    is connected again; the list stays as last learned meanwhile.
    """

    def __init__(self, client: TrackedClient) -> None:
        self._client = client
        #: the configuration last read (None before the first read)
        self.config: EnsembleConfig | None = None
        self._changed = asyncio.Event()

    async def start(self) -> None:
        """Read the configuration, apply it, and follow its changes in a task of the client."""
        config, watch = await self._client.get_config(watch=True)
        self._apply(config)
        self._client._spawn(self._follow(watch), name="aiocoord-ensemble-tracker", daemon=True)

    @property
    def servers(self) -> list[str]:
        """The client's server list now (``host:port`` each)."""
        return [str(s) for s in self._client._session.servers]

    async def wait_newer(self, version: int, timeout: float | None = None) -> EnsembleConfig:
        """Wait until the tracker has applied a configuration newer than ``version`` (an
        :attr:`EnsembleConfig.version`) and return it; at once if it already has.
        :class:`~aiocoord.TimeoutError` after ``timeout`` seconds."""
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidTypeError(f"version must be an int, not {type(version).__name__}")
        timeout = validate_timeout(timeout)

        async def newer() -> EnsembleConfig:
            while self.config is None or self.config.version <= version:
                await self._changed.wait()
            return self.config

        return await within(newer(), timeout, f"no configuration newer than {version:x}")

    def _apply(self, config: EnsembleConfig) -> None:
        self.config = config
        if config.client_addresses:
            servers, _ = parse_connect_string(config.connect_string)
            if servers != self._client._session.servers:
                log.info("ensemble tracker: servers now %s", config.connect_string)
                self._client._session.servers = servers
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _follow(self, watch: Watch) -> None:
        try:
            while True:
                try:
                    await watch
                except ClientClosedError:
                    raise
                except CoordinationError:
                    pass  # the session expired, and its watches with it: read in the next one
                config, watch = await self._read_again()
                self._apply(config)
        except ClientClosedError:
            return

    async def _read_again(self) -> tuple[EnsembleConfig, Watch]:
        """The configuration and a new watch on it; retried until read."""
        delay = RETRY_MIN
        while True:
            try:
                return await self._client.get_config(watch=True)
            except ClientClosedError:
                raise
            except CoordinationError as exc:
                log.warning(
                    "ensemble tracker: cannot read %s (%r); the server list stays %s",
                    CONFIG_NODE,
                    exc,
                    ",".join(self.servers),
                )
                await self._client.wait_for(State.CONNECTED)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
