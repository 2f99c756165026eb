"""The one queue every lock-like recipe drives (Curator's ``LockInternals``): contenders are
protected ephemeral sequential nodes; a *driver* decides from the nodes ahead whether a node is
through (a mutex, a reader, a writer, a semaphore lease, a leader); each waiter waits for the
deletion of the node it depends on, never polls.

``kernel`` runs the queue (enter, wait for a turn, release), ``turn`` decides what a waiter
does next, ``drivers`` decide who is through, ``listing``
keeps what one client knows of a queue path (shared listings, gone names), ``contender``
makes, trusts and deletes our nodes,
``holding`` is a granted node until released or lost, ``participants`` lists who waits.
"""
