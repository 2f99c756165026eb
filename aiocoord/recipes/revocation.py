"""Lock revocation, as Apache Curator's ``Revoking`` does it, and shared with it.

A holder that opted in (:meth:`Lock.make_revocable <aiocoord.Lock.make_revocable>`, on every
lock of :mod:`aiocoord.recipes.lock` and :mod:`aiocoord.recipes.rwlock`) is *told* when
anyone asks it to give its lock up: :attr:`Lock.revocation <aiocoord.Lock.revocation>`, a
:class:`RevocationEvent`, fires. It decides; the library never releases for it (revocation
is cooperative, as in Curator).

The request is Curator's: :func:`attempt_revoke` writes :data:`REVOKE_MESSAGE`
(``__REVOKE__``) as the data of the holder's node, which is what Curator's
``Revoker.attemptRevoke`` does; a Curator ``InterProcessMutex`` made revocable hears ours, and
an aiocoord holder hears Curator's. A holder that did not opt in is not told, and holds on
unchanged (its node's data now reads ``__REVOKE__``, as in Curator).

The holder hears the request through the watch it keeps on its own node anyway (to notice a
loss, :class:`~aiocoord.recipes._contention.holding.LossWatch`): the data change consumes
that watch, and the read that arms it again carries the data. Opting in costs no request.
A request made while the holder still waited is told once it holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from aiocoord._deadline import within
from aiocoord._validation import validate_path, validate_timeout
from aiocoord.client import Client
from aiocoord.errors import NoNodeError
from aiocoord.recipes._args import check_client
from aiocoord.recipes._contention.holding import REVOKE_MESSAGE

__all__ = ["REVOKE_MESSAGE", "RevocationEvent", "attempt_revoke"]


async def attempt_revoke(client: Client, node_path: str) -> bool:
    """Ask the holder of the lock node ``node_path`` to release it (Curator's
    ``Revoker.attemptRevoke``): write ``__REVOKE__`` as the node's data.

    True once written; False if the node does not exist (any more): nothing to revoke, which
    Curator ignores too. Whether the holder listens, and what it does, is its own business:
    this does not wait for the release (``await client.exists(node_path, watch=True)`` does).

    ``node_path`` is a contender's node: ``lock.node_path`` in the holder's process, or
    ``f"{lock.path}/{p.node_name}"`` for a :class:`~aiocoord.Participant` ``p`` of
    ``await lock.contenders()`` (Curator's ``getParticipantNodes()``). InvalidPathError before
    anything is sent for a bad path; the client's retry policy covers a lost connection.
    """
    check_client(client)
    validate_path(node_path)
    try:
        await client.set(node_path, REVOKE_MESSAGE)
    except NoNodeError:
        return False
    return True


class RevocationEvent:
    """Fires once when a revocation of a held lock is requested: ``await lock.revocation``.

    :attr:`node_path` is the held node that was asked (None until then). Later requests to
    the same holding find it fired already. The lock replaces a fired event with a fresh one
    when it is next acquired by an object holding nothing (as :attr:`Lock.lost
    <aiocoord.Lock.lost>`).
    """

    __slots__ = ("_event", "node_path")

    def __init__(self) -> None:
        self._event = asyncio.Event()
        #: the held node a revocation was asked of
        self.node_path: str | None = None

    def is_set(self) -> bool:
        """True once a revocation was requested."""
        return self._event.is_set()

    async def wait(self, timeout: float | None = None) -> str:
        """Wait for a revocation request (:class:`aiocoord.TimeoutError` after ``timeout``
        seconds); returns the path of the node it asked."""
        timeout = validate_timeout(timeout)
        await within(self._event.wait(), timeout, "no revocation request")
        assert self.node_path is not None
        return self.node_path

    def __await__(self) -> Generator[Any, None, str]:
        return self.wait().__await__()

    def _fire(self, node_path: str) -> None:
        if not self._event.is_set():
            self.node_path = node_path
            self._event.set()

    def __repr__(self) -> str:
        return f"<RevocationEvent {self.node_path if self.is_set() else 'not set'}>"
