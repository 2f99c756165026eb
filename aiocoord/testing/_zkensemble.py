"""``n`` ZooKeeper servers forming one quorum on loopback (:class:`ZooKeeperEnsemble`): the
members' ports and ``server.N`` lines, starting them in parallel, waiting for a quorum with
one leader, stopping, killing and restarting members one by one, and adding and removing
members by dynamic reconfiguration (the reconfig itself is ``_reconfigure``'s). Public
through :mod:`aiocoord.testing.server`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aiocoord._session.ensemble_config import EnsembleMember, MemberRole
from aiocoord.errors import ServerNotReadyError, ServerSetupError
from aiocoord.testing._distribution import Distribution
from aiocoord.testing._lifecycle import StartClose
from aiocoord.testing._process import free_ports
from aiocoord.testing._reconfigure import joiner_config, read_config, reconfigure
from aiocoord.testing._zkserver import SERVING_QUORUM, ZooKeeperServer

__all__ = ["ZooKeeperEnsemble"]


class ZooKeeperEnsemble(StartClose):
    """``n`` ZooKeeper servers forming one quorum on loopback, each with its own client port.

    Members start in parallel; the ensemble is ready when every member serves and exactly one
    is the leader. Member ``i`` (0-based) has ``myid`` ``i + 1`` (until members are removed:
    :meth:`member_id` tells). Members can be stopped, killed and started one by one to
    exercise failover; :meth:`close` ends them all.

    With ``reconfig_enabled`` (the default; ZooKeeper 3.5+) the members run with
    ``reconfigEnabled=true``, ``standaloneEnabled=false`` and their ``server.N`` lines,
    client addresses included, in a dynamic config file, so that clients can read the
    membership (:meth:`aiocoord.Client.get_config`) and change it
    (:meth:`aiocoord.Client.reconfig`, as the super user
    :data:`~aiocoord.testing.server.SUPER_AUTH`), and :meth:`add_member` and
    :meth:`remove_member` work. ``reconfig_enabled=False`` writes the ``server.N`` lines into
    ``zoo.cfg`` instead, as ZooKeeper 3.4 needs.
    """

    #: the loopback address every member listens on, for clients and for its peers
    host: str = "127.0.0.1"

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
        reconfig_enabled: bool = True,
    ) -> None:
        if n < 1:
            raise ServerSetupError(f"an ensemble needs at least one member, not {n}")
        #: seconds :meth:`start` waits for the members to serve with a leader; also the
        #: limit of each step of :meth:`add_member` and :meth:`remove_member`
        self.startup_timeout: float = startup_timeout
        #: True if the members run with ``reconfigEnabled=true`` and a dynamic config file
        #: (membership readable and changeable by clients); False for a ZooKeeper 3.4 setup
        self.reconfig_enabled: bool = reconfig_enabled
        ports = free_ports(3 * n, self.host)
        # With reconfig the lines carry the client addresses, which clients then learn.
        client_host = self.host if reconfig_enabled else None
        specs = [
            EnsembleMember(
                i + 1,
                self.host,
                ports[n + i],
                ports[2 * n + i],
                "participant",
                client_host,
                ports[i] if reconfig_enabled else None,
            )
            for i in range(n)
        ]
        if reconfig_enabled:
            quorum: dict[str, object] = {"reconfigEnabled": "true", "standaloneEnabled": "false"}
        else:
            quorum = {
                f"server.{s.id}": f"{s.host}:{s.quorum_port}:{s.election_port}" for s in specs
            }
        # What every member gets, the ones add_member starts later too.
        self._settings: dict[str, Any] = {
            "tick_time": tick_time,
            "min_session_timeout": min_session_timeout,
            "max_session_timeout": max_session_timeout,
            "extra_config": {
                "initLimit": init_limit,
                "syncLimit": sync_limit,
                **quorum,
                **dict(extra_config or {}),
            },
            "jvm_options": [
                # A member that is down refuses at once on loopback; do not wait 5 s on it.
                "-Dzookeeper.cnxTimeout=1000",
                *jvm_options,
            ],
            "startup_timeout": startup_timeout,
            "stop_grace": stop_grace,
            "die_with_parent": die_with_parent,
            "distribution": distribution,
        }
        #: seconds the last start of every member (:meth:`start` without ``i``) took until
        #: the quorum served; None before the first
        self.last_start_seconds: float | None = None
        dynamic = "".join(f"{s.spec}\n" for s in specs) if reconfig_enabled else None
        self._members = [self._new_member(spec, ports[i], dynamic) for i, spec in enumerate(specs)]
        self._lock = threading.RLock()

    def _new_member(
        self, spec: EnsembleMember, client_port: int, dynamic: str | None
    ) -> ZooKeeperServer:
        member = ZooKeeperServer(port=client_port, **self._settings)
        member._myid = spec.id
        member._dynamic_config = dynamic
        return member

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

    def member_id(self, i: int) -> int:
        """The server id (``myid``) of member ``i``."""
        member_id = self._members[i]._myid
        assert member_id is not None
        return member_id

    def index_of_id(self, member_id: int) -> int:
        """The index of the member whose server id is ``member_id``."""
        for i, member in enumerate(self._members):
            if member._myid == member_id:
                return i
        raise ValueError(f"no member of {self.connect_string} has server id {member_id}")

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

    # --- membership (dynamic reconfiguration) ---------------------------------------------

    def add_member(self, *, observer: bool = False) -> int:
        """Start a new server and add it to the ensemble by reconfig; return its server id.

        A participant is added as the ZooKeeper manual says: its server starts first, with
        the committed configuration plus itself, follows the leader without a vote, and the
        reconfig then makes it a voter. An ``observer`` needs no vote to be added, so the
        reconfig comes first and its server starts with the new configuration: started the
        other way, it would restart once the reconfig reaches it. This returns when every
        running member serves; the new one is the last (index ``len(members) - 1``). Needs
        ``reconfig_enabled`` and a quorum running. On failure nothing of it is left: its
        server is stopped and removed, and it is reconfigured out again.
        """
        with self._lock:
            self._need_reconfig("add_member")
            deadline = time.monotonic() + self.startup_timeout
            connect = self._running_connect_string()
            current = read_config(connect, self.startup_timeout)
            taken = set(current.ids) | {self.member_id(i) for i in range(len(self._members))}
            client, peer, election = free_ports(3, self.host)
            role: MemberRole = "observer" if observer else "participant"
            spec = EnsembleMember(
                max(taken) + 1, self.host, peer, election, role, self.host, client
            )
            joined = False
            try:
                if observer:
                    new = reconfigure(connect, self.startup_timeout, joining=[spec])
                    joined = True
                    member = self._new_member(spec, client, joiner_config(new, spec))
                else:
                    member = self._new_member(spec, client, joiner_config(current, spec))
                try:
                    member.spawn()
                    member.wait_ready(deadline)
                    if not observer:
                        reconfigure(connect, self.startup_timeout, joining=[spec])
                except BaseException:
                    member.kill()
                    member.close()
                    raise
            except BaseException:
                if joined:
                    reconfigure(connect, self.startup_timeout, leaving=[spec.id])
                raise
            self._members.append(member)
            self.wait_for_quorum(max(0.0, deadline - time.monotonic()))
            return spec.id

    def remove_member(self, member_id: int) -> None:
        """Remove the member with server id ``member_id`` from the ensemble by reconfig
        (unless a reconfig of the test's own removed it already), then stop it and delete its
        directory; return when the remaining members serve with a leader. Needs
        ``reconfig_enabled`` and a quorum of the remaining members running."""
        with self._lock:
            self._need_reconfig("remove_member")
            index = self.index_of_id(member_id)
            others = [m for i, m in enumerate(self._members) if i != index and m.is_running]
            if not others:
                raise ServerSetupError(f"no other member runs to remove member {member_id} by")
            connect = ",".join(m.connect_string for m in others)
            if member_id in read_config(connect, self.startup_timeout).ids:
                reconfigure(connect, self.startup_timeout, leaving=[member_id])
            member = self._members.pop(index)
            member.stop()
            member.close()
            self.wait_for_quorum(self.startup_timeout)

    def _need_reconfig(self, what: str) -> None:
        if not self.reconfig_enabled:
            raise ServerSetupError(f"{what} needs an ensemble made with reconfig_enabled=True")

    def _running_connect_string(self) -> str:
        running = [m.connect_string for m in self._members if m.is_running]
        if not running:
            raise ServerSetupError(f"no member of {self.connect_string} is running")
        return ",".join(running)

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

    def __repr__(self) -> str:
        return f"<ZooKeeperEnsemble {self.connect_string}>"
