"""The ``aiocoord`` command (``python -m aiocoord``), one module per command:

* ``demo``: locks, an election and a membership cache on an embedded 3-member ensemble,
  surviving the loss of the member the leader is connected to (``--connect`` for your own);
* ``server``: a development ZooKeeper in the foreground, like ``redis-server``;
* ``tree [HOSTS] [PATH]``: the nodes under a path;
* ``stat [HOSTS]``: every member's mode, zxid, connections, latency... from its four-letter
  words, one row each;
* ``locks [HOSTS] PATH``: a lock-like recipe's queue with sessions, client addresses, fencing
  tokens and ages (``inspect KIND [HOSTS] PATH``: its old name, ``locks --kind KIND``).

Every command takes ``--json``; the exit statuses are 0, 1 (a server error or an unreachable
member), 2 (a usage error) and 130 on Ctrl-C (see docs/operations.md). Every command that
reads an ensemble takes the connect string the same way: ``--connect HOSTS``, or ``HOSTS``
as its first argument (``demo``: ``--connect`` only); it defaults to ``$AIOCOORD_CONNECT``,
else ``127.0.0.1:2181`` (where ``server`` listens by default).
"""

from aiocoord._shown import show_in
from aiocoord.cli._common import DEFAULT_CONNECT
from aiocoord.cli._main import main

__all__ = ["DEFAULT_CONNECT", "main"]

# Shown as defined here: the private modules beside this one are no place to import from.
show_in(__name__, globals(), __all__)
