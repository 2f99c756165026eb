"""Test support for code that uses ZooKeeper: real servers, network faults, forced expiry.

* :class:`ZooKeeperServer`, :class:`ZooKeeperEnsemble`: local JVM servers on loopback;
* :func:`start_server`, :func:`select_backend`: the backend chosen by ``AIOCOORD_ZK_BACKEND``
  (``auto``, ``local``, ``docker``, ``external`` with ``AIOCOORD_ZK_CONNECT``);
* :class:`ZooKeeperTestCase`: a ``unittest`` base class with a server, a client under a
  namespace of the test's own, and ``expire_session``;
* :class:`FaultProxy`: a proxy that drops, partitions, delays and loses replies;
* :func:`session_of`: the session behind a client, for tests that look below the public API;
* :func:`expire_session`: real server-side session expiry; :func:`expire_client` also waits
  until the client has heard;
* the pytest plugin (:mod:`aiocoord.testing.pytest_plugin`) with the ``zookeeper``,
  ``zookeeper_ensemble`` and ``zk_fault_proxy`` fixtures.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    from aiocoord.testing.harness import ZooKeeperTestCase
    from aiocoord.testing.plumbing import session_of
    from aiocoord.testing.server import ZooKeeperEnsemble, ZooKeeperServer

#: Where each public name lives: imported on first use (PEP 562), because pytest imports the
#: plugin (aiocoord.testing.pytest_plugin), and so this package, in every run of every project
#: where aiocoord is installed. tests/unit/test_plugin_load.py holds this table to the imports
#: above.
_WHERE = {
    "Distribution": "aiocoord.testing._distribution",
    "DroppedRequest": "aiocoord.testing.faults",
    "ExternalServer": "aiocoord.testing._backend",
    "FaultProxy": "aiocoord.testing.faults",
    "FrameBuffer": "aiocoord.testing.faults",
    "PendingDrop": "aiocoord.testing.faults",
    "RawSession": "aiocoord.testing.expire",
    "ServerHandle": "aiocoord.testing._backend",
    "ZooKeeperEnsemble": "aiocoord.testing.server",
    "ZooKeeperServer": "aiocoord.testing.server",
    "ZooKeeperTestCase": "aiocoord.testing.harness",
    "docker_available": "aiocoord.testing._backend",
    "expire_client": "aiocoord.testing.expire",
    "expire_session": "aiocoord.testing.expire",
    "find_distribution": "aiocoord.testing._distribution",
    "four_letter": "aiocoord.testing._process",
    "raw_session": "aiocoord.testing.expire",
    "select_backend": "aiocoord.testing._backend",
    "session_of": "aiocoord.testing.plumbing",
    "start_server": "aiocoord.testing._backend",
    "sweep_orphans": "aiocoord.testing._process",
}

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
    "ZooKeeperTestCase",
    "docker_available",
    "expire_client",
    "expire_session",
    "find_distribution",
    "four_letter",
    "raw_session",
    "select_backend",
    "session_of",
    "start_server",
    "sweep_orphans",
]

if not TYPE_CHECKING:  # to a type checker, the names are those imported above, no others

    def __getattr__(name: str) -> object:
        try:
            module = _WHERE[name]
        except KeyError:
            raise AttributeError(f"module 'aiocoord.testing' has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        from aiocoord._shown import show_in

        # Shown as aiocoord.testing.X, as users import it, not as the private module's.
        show_in(__name__, {name: value}, [name])
        globals()[name] = value
        return value
