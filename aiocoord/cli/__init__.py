"""The ``aiocoord`` command (``python -m aiocoord``), one module per command:

* ``demo``: locks, an election and a membership cache on an embedded 3-member ensemble,
  surviving the loss of the member the leader is connected to (``--connect`` for your own);
* ``server``: a development ZooKeeper in the foreground, like ``redis-server``;
* ``inspect lock|rwlock|election|semaphore PATH``: holders and waiters, in queue order;
* ``tree [PATH]``: the nodes under a path.

``--connect`` defaults to ``$AIOCOORD_CONNECT``, else ``127.0.0.1:2181`` (where ``server``
listens by default).
"""

from aiocoord.cli._common import DEFAULT_CONNECT
from aiocoord.cli._main import main

__all__ = ["DEFAULT_CONNECT", "main"]
