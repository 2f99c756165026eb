"""What a client counts as work still owed (:class:`aiocoord._client.background.BackgroundWork`,
behind ``Client.pending_deletes`` and ``Client.wait_background``)."""

from __future__ import annotations

import asyncio

from aiocoord._client.background import BackgroundWork


async def _nothing() -> None:
    return None


async def test_a_task_that_has_finished_owes_nothing_before_its_callback_runs() -> None:
    # The task finishes in the step after spawn; its done-callback (which drops it from the
    # set) is queued behind this coroutine's wake-up, so the caller looks first. A finished
    # clean-up owes nothing: a recipe that gave up must not be seen to owe a delete.
    work = BackgroundWork()
    task = work.spawn(_nothing(), "finishes-at-once")
    await asyncio.sleep(0)
    assert task.done()
    assert work.pending() == 0
    await work.wait()


async def test_an_answer_is_owed_until_what_follows_it_has_run() -> None:
    # What follows an answer may start more work (a delete written again after a connection
    # loss): until it has run, the answer is still owed, done or not.
    work = BackgroundWork()
    answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    started: list[asyncio.Task[None]] = []
    work.follow(answer, lambda _: started.append(work.spawn(_nothing(), "after-the-answer")))
    assert work.pending() == 1
    answer.set_result(1)
    assert work.pending() == 1  # come, but what follows it has not run yet
    await work.wait()
    assert started and started[0].done()
    assert work.pending() == 0


async def test_daemons_are_not_owed_and_stop_ends_them() -> None:
    work = BackgroundWork()
    daemon = work.spawn(asyncio.Event().wait(), "follows-the-server", daemon=True)
    assert work.pending() == 0
    await asyncio.wait_for(work.wait(), 1)  # nothing to wait for
    await work.stop()
    assert daemon.cancelled()
