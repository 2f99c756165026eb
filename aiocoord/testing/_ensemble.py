"""``n`` ZooKeeper servers forming one quorum on loopback (:class:`ZooKeeperEnsemble`): the
members' ports and ``server.N`` lines, starting them in parallel, waiting for a quorum with
one leader, and stopping, killing and restarting members one by one. Public through
:mod:`aiocoord.testing.server`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from types import TracebackType

from aiocoord.errors import ServerNotReadyError, ServerSetupError
from aiocoord.testing._distribution import Distribution
from aiocoord.testing._process import free_ports
from aiocoord.testing._zkserver import SERVING_QUORUM, ZooKeeperServer, in_thread

__all__ = ["ZooKeeperEnsemble"]


class ZooKeeperEnsemble:
    """``n`` ZooKeeper servers forming one quorum on loopback, each with its own client port.

    Members start in parallel; the ensemble is ready when every member serves and exactly one
    is the leader. Member ``i`` (0-based) has ``myid`` ``i + 1``. Members can be stopped,
    killed and started one by one to exercise failover; :meth:`close` ends them all.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        n: int = 3,
        *,
        tick_time: int = 500,
        init_limit: int = 10,
        sync_limit: int = 5,
        min_session_timeout: int = 1000,
        max_session_timeout: int = 60000,
        extra_config: Mapping[str, object] | None = None,
        jvm_options: Sequence[str] = (),
        startup_timeout: float = 60.0,
        stop_grace: float = 10.0,
        die_with_parent: bool = True,
        distribution: Distribution | None = None,
    ) -> None:
        if n < 1:
            raise ServerSetupError(f"an ensemble needs at least one member, not {n}")
        self.startup_timeout = startup_timeout
        ports = free_ports(3 * n, self.host)
        client, peer, election = ports[:n], ports[n : 2 * n], ports[2 * n :]
        servers = {f"server.{i + 1}": f"{self.host}:{peer[i]}:{election[i]}" for i in range(n)}
        self.last_start_seconds: float | None = None
        self._members = [
            ZooKeeperServer(
                port=client[i],
                tick_time=tick_time,
                min_session_timeout=min_session_timeout,
                max_session_timeout=max_session_timeout,
                extra_config={
                    "initLimit": init_limit,
                    "syncLimit": sync_limit,
                    **servers,
                    **dict(extra_config or {}),
                },
                jvm_options=[
                    # A member that is down refuses at once on loopback; do not wait 5 s on it.
                    "-Dzookeeper.cnxTimeout=1000",
                    *jvm_options,
                ],
                startup_timeout=startup_timeout,
                stop_grace=stop_grace,
                die_with_parent=die_with_parent,
                distribution=distribution,
            )
            for i in range(n)
        ]
        for i, member in enumerate(self._members):
            member._myid = i + 1
        self._lock = threading.RLock()

    @property
    def members(self) -> list[ZooKeeperServer]:
        """The member servers, in ``myid`` order."""
        return list(self._members)

    @property
    def connect_string(self) -> str:
        """All members: ``"127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"``."""
        return ",".join(m.connect_string for m in self._members)

    def member_connect_string(self, i: int) -> str:
        """The connect string of member ``i`` alone."""
        return self._members[i].connect_string

    def member_port(self, i: int) -> int:
        """The client port of member ``i``."""
        return self._members[i].port

    def index_of_port(self, port: int) -> int:
        """The index of the member whose client port is ``port``."""
        for i, member in enumerate(self._members):
            if member.port == port:
                return i
        raise ValueError(f"no member of {self.connect_string} listens on port {port}")

    def modes(self) -> list[str | None]:
        """Each member's mode (``leader``, ``follower``), None for one not serving."""
        return [m.mode() if m.is_running else None for m in self._members]

    def leader(self) -> int:
        """The index of the current leader; :class:`ServerNotReadyError` if there is none."""
        modes = self.modes()
        leaders = [i for i, mode in enumerate(modes) if mode == "leader"]
        if len(leaders) != 1:
            raise ServerNotReadyError(f"no single leader in {self.connect_string}: modes {modes}")
        return leaders[0]

    # --- lifecycle ----------------------------------------------------------------------

    def start(self, i: int | None = None) -> None:
        """Start every member (in parallel), or member ``i``; wait until the quorum serves."""
        with self._lock:
            began = time.monotonic()
            deadline = began + self.startup_timeout
            targets = self._members if i is None else [self._members[i]]
            targets = [m for m in targets if not m.is_running]
            try:
                for member in targets:
                    member.spawn()
                for member in targets:
                    member.wait_ready(deadline)
                self.wait_for_quorum(max(0.0, deadline - time.monotonic()))
            except BaseException:
                for member in targets:
                    member.kill()
                raise
            if i is None:
                self.last_start_seconds = time.monotonic() - began

    def stop(self, i: int | None = None) -> None:
        """Stop member ``i`` gracefully (SIGTERM), or every member."""
        with self._lock:
            for member in self._members if i is None else [self._members[i]]:
                member.stop()

    def kill(self, i: int) -> None:
        """SIGKILL member ``i``."""
        with self._lock:
            self._members[i].kill()

    def restart(self, i: int) -> None:
        """Stop member ``i`` (if running) and start it again with its data; wait for the quorum."""
        with self._lock:
            self._members[i].stop()
            self.start(i)

    def wait_for_quorum(self, timeout: float = 30.0) -> int:
        """Wait until every running member serves and exactly one leads; return its index."""
        deadline = time.monotonic() + timeout
        while True:
            running = [i for i, m in enumerate(self._members) if m.is_running]
            modes = self.modes()
            leaders = [i for i in running if modes[i] == "leader"]
            if len(leaders) == 1 and all(modes[i] in SERVING_QUORUM for i in running):
                return leaders[0]
            if time.monotonic() >= deadline:
                tails = "\n".join(
                    f"--- member {i} ({m.log_path}):\n{m.log_tail(15)}"
                    for i, m in enumerate(self._members)
                )
                raise ServerNotReadyError(
                    f"ensemble {self.connect_string} has no quorum within its deadline "
                    f"(modes {modes}, running {running})\n{tails}"
                )
            time.sleep(0.05)

    def close(self) -> None:
        """Stop every member and remove their directories."""
        with self._lock:
            # The data goes with the directories, so there is nothing to shut down cleanly.
            for member in self._members:
                member.kill()
                member.close()

    def __enter__(self) -> ZooKeeperEnsemble:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> ZooKeeperEnsemble:
        await in_thread(self.start, undo=self.close)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await in_thread(self.close, undo=self.close)

    def __repr__(self) -> str:
        return f"<ZooKeeperEnsemble {self.connect_string}>"
