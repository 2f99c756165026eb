"""The client's background work: tasks it owns and answers it follows after their callers
have moved on (guaranteed deletes, a release's delete, a recipe's create in flight).

:class:`BackgroundWork` is the part of :class:`~aiocoord.Client` that keeps them: ``close()``
cancels and awaits them, :meth:`~BackgroundWork.wait` waits for them. The API
reference shows its methods on the client.

Daemons are tasks the client owns that only follow the server (a holding's loss watch, the
ensemble tracker): ``close()`` ends them too, but they are not work still owed, so
:meth:`~BackgroundWork.pending` does not count them and :meth:`~BackgroundWork.wait` does not
wait for them (the tracker runs as long as the client does).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundWork"]

T = TypeVar("T")


class BackgroundWork:
    """Tasks and futures a :class:`~aiocoord.Client` keeps past their callers (see above)."""

    def __init__(self) -> None:
        #: spawned tasks: owed until they finish (their done-callback drops them later)
        self._tasks: set[asyncio.Task[Any]] = set()
        #: followed answers: owed until their ``then`` has run (in their done-callback)
        self._followed: set[asyncio.Future[Any]] = set()
        self._daemons: set[asyncio.Task[Any]] = set()

    def spawn(
        self, coro: Coroutine[Any, Any, Any], name: str, *, daemon: bool = False
    ) -> asyncio.Task[Any]:
        """Run ``coro`` as a task this client owns: ``close()`` cancels and awaits it, and
        :meth:`wait` waits for it. For clean-ups that must outlive their caller
        (guaranteed deletes, a recipe's node removal after a cancelled acquire).

        ``daemon=True``: a task that only follows the server (a watch to arm, a node to
        follow): ``close()`` ends it, but :meth:`pending` does not count it and :meth:`wait`
        does not wait for it."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        owner = self._daemons if daemon else self._tasks
        owner.add(task)
        task.add_done_callback(owner.discard)
        return task

    def follow(self, future: asyncio.Future[T], then: Callable[[asyncio.Future[T]], None]) -> None:
        """Count ``future`` (the answer to a request written now, say) as this client's
        background work until it is done, then call ``then`` with it: :meth:`wait`
        waits for it and ``close()`` cancels it. For answers a recipe settles after its
        caller has moved on (a release's delete) without a task to start."""
        followed = self._followed
        followed.add(future)

        def settled(done: asyncio.Future[T]) -> None:
            # One done-callback, not two: each is a loop callback of its own.
            followed.discard(done)
            then(done)

        future.add_done_callback(settled)

    def pending(self) -> int:
        """Background work still owed: guaranteed deletes, a recipe's create or delete in
        flight, and answers still followed; not the daemons.

        A task that has finished owes nothing, though the callback that drops it from the
        set may not have run yet (a caller woken in the same loop turn looks first); an
        answer that has come is still owed until what follows it has run, since that may
        start more work (a delete written again after a connection loss)."""
        return len(self._followed) + sum(1 for task in self._tasks if not task.done())

    async def wait(self) -> None:
        """Wait until background work (guaranteed deletes, a release's delete) has finished;
        not for the daemons."""
        while self._tasks or self._followed:
            pending = [f for f in (*self._tasks, *self._followed) if not f.done()]
            if pending:
                await asyncio.wait(pending)
            else:
                # Done, but their done-callbacks (which drop them from the set) are still to
                # run: let them. Not gather(): on Python 3.12 it completes at once on done
                # tasks without yielding, and this loop would never let the callbacks run.
                await asyncio.sleep(0)

    async def stop(self) -> None:
        """Cancel the background work and the daemons, and wait until they have stopped
        (``close()``)."""
        owned = [*self._tasks, *self._followed, *self._daemons]
        for task in owned:
            task.cancel()
        for task in owned:
            with contextlib.suppress(BaseException):
                await task
