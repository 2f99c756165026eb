"""Real ZooKeeper servers for tests: one standalone server, or an ensemble, as local JVMs.

The API is synchronous first, so that session-scoped pytest fixtures need no event loop; the
``async with`` forms run the blocking parts in a thread. Each server lives in a temporary
directory of its own (``zoo.cfg``, data, ``zookeeper.log``) that :meth:`~ZooKeeperServer.close`
removes; :meth:`~ZooKeeperServer.restart` keeps it, so data survives restarts.

The launchers live in private modules, one each: :mod:`aiocoord.testing._zkserver` (one
server, and the settings every test server gets) and :mod:`aiocoord.testing._zkensemble`
(with :mod:`aiocoord.testing._reconfigure` for its membership changes).
"""

from __future__ import annotations

from aiocoord._shown import show_in
from aiocoord.testing._zkensemble import ZooKeeperEnsemble
from aiocoord.testing._zkserver import (
    DEFAULT_JVM_OPTIONS,
    SUPER_AUTH,
    TEST_SERVER_PROPERTIES,
    ZooKeeperServer,
)

__all__ = [
    "DEFAULT_JVM_OPTIONS",
    "SUPER_AUTH",
    "TEST_SERVER_PROPERTIES",
    "ZooKeeperEnsemble",
    "ZooKeeperServer",
]

# Shown as defined here: the private modules beside this one are no place to import from.
show_in(__name__, globals(), __all__)
