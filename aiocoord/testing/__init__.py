"""Test support for code that uses ZooKeeper: real servers, network faults, forced expiry.

* :class:`ZooKeeperServer`, :class:`ZooKeeperEnsemble`: local JVM servers on loopback;
* :func:`start_server`, :func:`select_backend`: the backend chosen by ``AIOCOORD_ZK_BACKEND``
  (``auto``, ``local``, ``docker``, ``external`` with ``AIOCOORD_ZK_CONNECT``);
* :class:`FaultProxy`: a proxy that drops, partitions, delays and loses replies;
* :func:`expire_session`: real server-side session expiry; :func:`expire_client` also waits
  until the client has heard;
* the pytest plugin (:mod:`aiocoord.testing.pytest_plugin`) with the ``zookeeper``,
  ``zookeeper_ensemble`` and ``zk_fault_proxy`` fixtures.
"""

from aiocoord.testing._backend import (
    ExternalServer,
    ServerHandle,
    docker_available,
    select_backend,
    start_server,
)
from aiocoord.testing._distribution import Distribution, find_distribution
from aiocoord.testing._process import four_letter, sweep_orphans
from aiocoord.testing.expire import RawSession, expire_client, expire_session, raw_session
from aiocoord.testing.faults import DroppedRequest, FaultProxy, FrameBuffer, PendingDrop
from aiocoord.testing.server import ZooKeeperEnsemble, ZooKeeperServer

__all__ = [
    "Distribution",
    "DroppedRequest",
    "ExternalServer",
    "FaultProxy",
    "FrameBuffer",
    "PendingDrop",
    "RawSession",
    "ServerHandle",
    "ZooKeeperEnsemble",
    "ZooKeeperServer",
    "docker_available",
    "expire_client",
    "expire_session",
    "find_distribution",
    "four_letter",
    "raw_session",
    "select_backend",
    "start_server",
    "sweep_orphans",
]
