"""How long and how large each workload runs: the full run (issue 9) and the ``--quick`` run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

#: The peers, in table order. aiocoord first: every ratio is aiocoord against its rivals.
#: ``aiocoord_uvloop`` is aiocoord on uvloop's event loop (reported beside, never a rival);
#: ``curator`` is Apache Curator on Java 17 (``make bench-java`` builds it).
PEERS: tuple[str, ...] = ("aiocoord", "aiocoord_uvloop", "curator", "kazoo", "aiozk")
#: The other libraries: the targets are ratios against the best of these.
RIVALS: tuple[str, ...] = ("curator", "kazoo", "aiozk")

#: Workload ids and one-line titles (the issue's wording).
WORKLOADS: dict[str, str] = {
    "W0": "raw client ceiling: sequential create+getChildren+delete, pipelined creates",
    "W1": "uncontended lock: one client, acquire+release on one path",
    "W2": "contended handoff: 8 clients (own sessions) hammer one lock",
    "W3": "many waiters: N contenders in one process, each acquires once and releases",
    "W4": "cache: children of 100 bytes, initial load and setData-to-event latency",
    "W5": "failover: 3-member ensemble, kill the member the client is connected to",
    "W6": "scale: a tree cache over N nodes: initial load, RSS, update-to-event latency at a rate",
    "W7": "scale: N sessions on a 3-member ensemble, one member killed: all back, no expiry",
    "W8": "scale: N distinct lock paths held by one client: memory per lock, acquire/release rates",
    "W9": "scale: a service cache over N instances, updates at a rate: event latency, CPU",
}

#: The workloads run again in every other (server settings, RTT) cell of the matrix.
MATRIX_WORKLOADS: tuple[str, ...] = ("W1", "W2")
#: The network round trips added by the latency proxy, in milliseconds (0: straight to the
#: server on loopback, no proxy).
RTTS_MS: tuple[float, ...] = (0.0, 0.5, 2.0)


@dataclass(frozen=True)
class ServerSettings:
    """How the benchmark's ZooKeeper is configured: one column of the matrix."""

    name: str
    label: str
    tick_time: int
    force_sync: bool
    #: KB the transaction log is grown by at a time (ZooKeeper's default: 64 MB).
    prealloc_kb: int

    def server_options(self) -> dict[str, Any]:
        """Keyword arguments for ``ZooKeeperServer`` / ``ZooKeeperEnsemble``. The session
        timeout bounds are ZooKeeper's own defaults for the tick (2 and 20 ticks)."""
        return {
            "tick_time": self.tick_time,
            "min_session_timeout": 2 * self.tick_time,
            "max_session_timeout": 20 * self.tick_time,
            "extra_config": {
                "forceSync": "yes" if self.force_sync else "no",
                "preAllocSize": self.prealloc_kb,
                # Every benchmark client connects from this one host; ZooKeeper's default of
                # 60 connections per client address would refuse W7's 1,000 sessions (in
                # production they come from many hosts).
                "maxClientCnxns": 0,
            },
        }

    def describe(self) -> str:
        """One line for the report."""
        sync = "yes" if self.force_sync else "no"
        return f"{self.label}: forceSync={sync}, tickTime={self.tick_time}"


#: The server settings, headline first: ZooKeeper's production defaults (every write flushed
#: to disk before it is acknowledged), then the settings of the test suite.
SERVER_SETTINGS: dict[str, ServerSettings] = {
    "production": ServerSettings("production", "production defaults", 2000, True, 65536),
    "test": ServerSettings("test", "test settings", 500, False, 1024),
}


@dataclass(frozen=True)
class Settings:
    """Sizes and durations of one benchmark run."""

    mode: str
    repeats: int
    session_timeout: float
    warmup_cycles: int
    #: Seconds of load on a fresh server before the first measurement (JIT warm-up).
    server_warmup_s: float
    w0_cycle_s: float
    w0_pipeline_creates: int
    w0_pipeline_window: int
    w1_s: float
    w2_s: float
    w2_clients: int
    w3_ns: tuple[int, ...]
    #: A W3 run that takes longer is cut off and reported as "timeout >X s".
    w3_timeout_s: float
    w4_children: int
    w4_data_size: int
    w4_updates: int
    w5_cases: tuple[str, ...]
    #: The session timeout of the W5 clients: a client that only notices a dead server by a
    #: missed ping (aiozk) takes about this long to fail over.
    w5_session_timeout: float
    #: How long a W5 client may take to reconnect before the run is reported as failed.
    w5_reconnect_timeout_s: float
    #: Added to a worker's expected duration before it is killed as hung.
    worker_slack_s: float
    #: Seconds of W1 and W2 in the matrix cells beside the headline table.
    matrix_s: float = 5.0
    #: W6: leaves of the tree (``w6_fanout`` per parent), updates sent at ``w6_rate`` per s.
    w6_nodes: int = 100_000
    w6_fanout: int = 1_000
    w6_updates: int = 2_500
    w6_rate: float = 500.0
    #: W7: sessions on the ensemble, and how long they may take to be back.
    w7_sessions: int = 1_000
    w7_timeout_s: float = 60.0
    #: W8: distinct lock paths held at once.
    w8_locks: int = 10_000
    #: W9: instances of the service, updates at ``w9_rate`` per s.
    w9_instances: int = 1_000
    w9_updates: int = 100
    w9_rate: float = 10.0
    #: A worker whose resident memory passes this is killed (reported, not waited for).
    worker_rss_cap_mb: float = 4096.0

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain JSON data."""
        return dataclasses.asdict(self)


FULL = Settings(
    mode="full",
    repeats=3,
    session_timeout=10.0,
    warmup_cycles=50,
    server_warmup_s=8.0,
    w0_cycle_s=5.0,
    w0_pipeline_creates=20_000,
    w0_pipeline_window=1_000,
    w1_s=10.0,
    w2_s=10.0,
    w2_clients=8,
    w3_ns=(200, 2_000, 10_000),
    w3_timeout_s=60.0,
    w4_children=10_000,
    w4_data_size=100,
    w4_updates=500,
    w5_cases=("follower", "leader"),
    w5_session_timeout=10.0,
    w5_reconnect_timeout_s=30.0,
    worker_slack_s=90.0,
)

QUICK = Settings(
    mode="quick",
    repeats=1,
    session_timeout=10.0,
    warmup_cycles=5,
    server_warmup_s=1.0,
    w0_cycle_s=1.0,
    w0_pipeline_creates=1_000,
    w0_pipeline_window=250,
    w1_s=1.0,
    w2_s=1.0,
    w2_clients=8,
    w3_ns=(50, 200),
    w3_timeout_s=30.0,
    w4_children=300,
    w4_data_size=100,
    w4_updates=30,
    w5_cases=("follower", "leader"),
    w5_session_timeout=4.0,
    w5_reconnect_timeout_s=30.0,
    worker_slack_s=60.0,
    matrix_s=0.5,
    w6_nodes=2_000,
    w6_fanout=500,
    w6_updates=100,
    w7_sessions=30,
    w7_timeout_s=30.0,
    w8_locks=200,
    w9_instances=50,
    w9_updates=10,
)
