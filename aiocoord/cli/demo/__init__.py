"""``python -m aiocoord demo``: locks, an election and a membership cache surviving the loss of
a ZooKeeper server, in about fifteen seconds.

What happens, in order:

1. an embedded 3-member ensemble starts (:class:`~aiocoord.testing.ZooKeeperEnsemble`), or,
   with ``--connect``, an existing ZooKeeper is used under a fresh path;
2. five workers start, each with its own client and session. Each joins the group
   (:class:`~aiocoord.GroupMember`: an ephemeral node plus a ChildrenCache), stands in one
   election (:class:`~aiocoord.LeaderLatch`) and loops over jobs done under one lock
   (``async with lock:``): read the ledger node, write it back plus one. A dashboard client
   follows the membership with a :class:`~aiocoord.ChildrenCache` change stream;
3. the leader takes the lock for "maintenance" and, while it holds it, the ensemble member its
   session is connected to is killed (with ``--connect``: its connection is dropped). A
   newcomer joins the group through a surviving member during the outage;
4. the demo shows the leader's session failing over (same session id), and checks against
   the server that the lock is still held by it, that it still leads, and that every cache
   shows the membership the server has;
5. the workers stop, leave the group one by one, and a summary says what was checked.

Why the recipes survive: a failover that resumes the session within its timeout (10 s here)
keeps every ephemeral node. The lock's default policy counts only the session's end as a loss,
and the latch is made with ``suspended_is_loss=False`` so that leadership does too (the latch's
default gives leadership up on SUSPENDED, the cautious choice when a leader must never overlap
with the next one). Caches re-read what they follow after every reconnect.

The terminal view is a status table redrawn in place when stdout is a terminal, and a plain
log of events otherwise (``--plain`` forces it). Every task the demo starts is awaited before
it returns; every client is closed and the embedded ensemble stopped, even on failure.

The parts: ``_show`` runs it (:func:`run`), ``_stage`` holds the state its parts share,
``_cast`` its settings, worker and result, ``_failover`` the outage, ``_wrapup`` the checks and
the clean-up, ``_board`` the terminal, ``_report`` the table and the summary.
"""

from aiocoord.cli.demo._cast import DemoResult
from aiocoord.cli.demo._show import run

__all__ = ["DemoResult", "run"]
