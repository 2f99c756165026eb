"""What every part of a client sends its requests through: the session, the chroot, the
session a view is bound to, the retry policy and the default ACL.

:class:`Requests` is owned by :class:`~aiocoord.Client` and handed to each of its parts
(path operations, admin operations, transactions), so that none of them needs the client
itself: the arrows point down, from the facade to its parts to the session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from aiocoord._session.session import Session
from aiocoord._session.watch import Watch
from aiocoord._wire.data import ACL
from aiocoord._wire.framing import Request
from aiocoord.acl import ACLProvider, wire_acl
from aiocoord.errors import ConnectionLossError, ZooKeeperError
from aiocoord.retry import RetryPolicy

__all__ = ["Requests"]

T = TypeVar("T")


class Requests:
    """One client's (or one bound view's) way to its session."""

    __slots__ = ("acl_provider", "full", "generation", "retry", "session", "short")

    def __init__(
        self,
        session: Session,
        retry: RetryPolicy,
        acl_provider: ACLProvider | None,
        generation: int | None = None,
    ) -> None:
        self.session = session
        #: the policy of :meth:`retrying` (``client.retry``)
        self.retry = retry
        #: the ACL of every node created without an explicit one (``client.acl_provider``)
        self.acl_provider = acl_provider
        #: when set, every request belongs to that session generation (``client.bound()``)
        self.generation = generation
        paths = session.paths
        # The chroot's add and strip, bound once: every request passes through them.
        self.full: Callable[[str], str] = paths.add
        self.short: Callable[[str], str] = paths.strip

    def bound(self, generation: int) -> Requests:
        """The same, with every request pinned to session ``generation``."""
        view = Requests.__new__(Requests)  # not copy.copy: a lock's waiter makes one per node
        view.session = self.session
        view.retry = self.retry
        view.acl_provider = self.acl_provider
        view.generation = generation
        view.full = self.full
        view.short = self.short
        return view

    @property
    def connected(self) -> bool:
        """True while requests can be sent."""
        state = self.session.state
        return state is not None and state.is_connected

    async def send(
        self,
        request: Request[T],
        *,
        path: str | None = None,
        watch: Watch | None = None,
        generation: int | None = None,
    ) -> T:
        """Send ``request`` and return its answer's body (an error code raised as its
        exception, naming ``path``); in the bound session, if any."""
        return await self.session.request(
            request,
            path=path,
            watch=watch,
            generation=generation if generation is not None else self.generation,
        )

    async def retrying(
        self,
        op: Callable[[], Awaitable[T]],
        ambiguous: tuple[type[ZooKeeperError], ...] = (),
    ) -> T:
        """Run ``op``, again after each ConnectionLossError while the policy allows.

        ``ambiguous`` are the errors a *retry* can get because the lost attempt was applied
        after all (a versioned set's BadVersion, a versioned delete's NoNode): they are then
        reported as ConnectionLossError, "may have been applied", rather than as a conflict
        that never happened.
        """
        delays = self.retry.delays()
        lost: ConnectionLossError | None = None
        while True:
            try:
                return await op()
            except ConnectionLossError as exc:
                lost = exc
                delay = next(delays, None)
                if delay is None:
                    raise
                await asyncio.sleep(delay)
            except ambiguous as exc:
                if lost is None:
                    raise
                raise ConnectionLossError(
                    f"the reply was lost and a retry got {type(exc).__name__}: the first "
                    "attempt may have been applied; read the node to find out",
                    path=exc.path,
                    op=exc.op,
                ) from exc

    def acls_for(self, path: str, acl: Sequence[ACL] | None) -> Sequence[ACL]:
        """The ACL a create of ``path`` sends (:func:`acl_for_create`)."""
        return acl_for_create(self.acl_provider, path, acl)


def acl_for_create(
    provider: ACLProvider | None, path: str, acl: Sequence[ACL] | None
) -> Sequence[ACL]:
    """The ACL a create of ``path`` sends: ``acl``, else ``provider``'s, else open."""
    if acl is None and provider is not None:
        acl = provider(path)
    return wire_acl(acl)
