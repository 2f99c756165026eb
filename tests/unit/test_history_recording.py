"""Recording a history (aiocoord.testing.history): calls and completions on one clock, from
tasks and from other processes, and the typed errors of bad input (never a verdict)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import pickle

import pytest

import aiocoord
import aiocoord.errors
from aiocoord.testing.history import (
    Call,
    Completion,
    CounterModel,
    History,
    HistoryError,
    ManualClock,
    MixedClocksError,
    MonotonicClock,
    Operation,
    Outcome,
    UnmatchedCompletionError,
    Verdict,
    check,
)


def test_an_operation_is_timed_at_its_call_and_at_its_completion() -> None:
    clock = ManualClock(start=10)
    history = History(clock)
    op = history.call("a", "add", 1)
    clock.advance(5)
    done = op.ok(1)
    assert (done.call, done.ret, done.outcome, done.result) == (10, 15, Outcome.OK, 1)
    assert history.operations() == (done,)


def test_fail_and_unknown_keep_no_result_and_a_pending_call_has_no_return() -> None:
    history = History(ManualClock())
    history.call("a", "add", 1).fail()
    history.call("b", "add", 1).unknown()
    history.call("c", "read")
    failed, lost, pending = history.operations()
    assert (failed.outcome, failed.result) == (Outcome.FAIL, None)
    assert (lost.outcome, lost.result) == (Outcome.UNKNOWN, None)
    assert (pending.outcome, pending.ret) == (None, None)
    assert "pending" in pending.describe() and "unknown" in lost.describe()


def test_raised_tells_a_request_never_sent_from_one_that_may_have_been_applied() -> None:
    history = History(ManualClock())
    never_sent = [aiocoord.errors.NotSentError("x"), aiocoord.BadArgumentsError("x")]
    maybe = [
        aiocoord.ConnectionLossError("x"),
        aiocoord.TimeoutError("x"),
        asyncio.CancelledError(),
    ]
    for exc in never_sent:
        assert history.call("a", "add", 1).raised(exc).outcome is Outcome.FAIL, exc
    for exc in maybe:
        assert history.call("a", "add", 1).raised(exc).outcome is Outcome.UNKNOWN, exc


def test_a_block_completes_its_operation_from_the_exception_that_leaves_it() -> None:
    history = History(ManualClock())
    with pytest.raises(aiocoord.ConnectionLossError), history.call("a", "add", 1):
        raise aiocoord.ConnectionLossError("lost")
    with history.call("a", "add", 1) as op:
        op.ok(1)
    assert [op.outcome for op in history] == [Outcome.UNKNOWN, Outcome.OK]


def test_a_block_left_without_an_outcome_is_an_error_naming_the_operation() -> None:
    history = History(ManualClock())
    pending = r"operation 0 \(add\(1\) \(pending\)\)"
    with pytest.raises(HistoryError, match=pending) as err, history.call("a", "add", 1):
        pass
    assert isinstance(err.value.operation, Operation) and err.value.operation.id == 0
    assert history.operations()[0].outcome is Outcome.UNKNOWN  # still checkable


def test_a_second_completion_is_a_completion_without_its_call() -> None:
    history = History(ManualClock())
    op = history.call("a", "add", 1)
    op.ok(1)
    with pytest.raises(UnmatchedCompletionError, match=r"operation 0 .* completed a second"):
        op.unknown()


def test_a_completion_whose_call_is_missing_is_refused_by_name() -> None:
    events = [Call(0, "a", "add", 1, None, 1), Completion(0, Outcome.OK, 1, 2)]
    events.append(Completion(7, Outcome.OK, 3, 5))
    with pytest.raises(UnmatchedCompletionError, match=r"operation 7 .* was never called") as err:
        History.from_events(events, clock="log")
    assert err.value.operation == events[-1]
    assert isinstance(err.value, aiocoord.CoordinationError) and isinstance(err.value, ValueError)


def test_events_make_the_same_history_again() -> None:
    history = History(ManualClock("log"))
    history.add("a", "add", 1, result=1, call=0, ret=4)
    history.add("b", "add", 1, call=2, ret=None, outcome=None)
    history.add("c", "read", result=1, call=5, ret=6)
    again = History.from_events(reversed(history.events()), clock="log")
    assert again.operations() == history.operations()
    assert [type(e).__name__ for e in history.events()] == [
        "Call",
        "Call",
        "Completion",
        "Call",
        "Completion",
    ]


def test_a_return_before_its_call_is_a_history_from_two_clocks() -> None:
    history = History(ManualClock())
    with pytest.raises(MixedClocksError, match=r"returned at 3, before its call at 9"):
        history.add("a", "read", result=0, call=9, ret=3)
    events = [Call(0, "a", "read", None, None, 9), Completion(0, Outcome.OK, 0, 3)]
    with pytest.raises(MixedClocksError):
        History.from_events(events, clock="log")
    # Operations read from elsewhere, never through a History: the checker refuses them too.
    bad = Operation(0, "a", "read", None, None, call=9, ret=3, outcome=Outcome.OK, result=0)
    with pytest.raises(MixedClocksError, match="operation 0 of a"):
        check([bad], CounterModel())


def test_histories_of_two_clocks_are_not_merged() -> None:
    one, other = History(ManualClock("host-1")), History(ManualClock("host-2"))
    other.add("b", "add", 1, result=1, call=0, ret=1)
    with pytest.raises(MixedClocksError, match=r"'host-2' cannot be merged .* add\(1\) -> 1"):
        History.merge(one, other)


def test_the_monotonic_clock_is_one_for_every_process_of_the_machine() -> None:
    assert MonotonicClock().id == MonotonicClock().id
    assert MonotonicClock().id.startswith("monotonic@")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=_spawn()) as pool:
        assert pool.submit(_clock_id).result(timeout=60) == MonotonicClock().id


def _spawn() -> multiprocessing.context.BaseContext:
    return multiprocessing.get_context("spawn")


def _clock_id() -> str:
    return MonotonicClock().id


def _record_in_a_process(client: str, count: int) -> History:
    """A child's history: ``count`` adds of its own counter, returned to the parent."""
    history = History()
    for value in range(1, count + 1):
        op = history.call(client, "add", 1, key=client)
        op.ok(value)
    return history


def test_histories_recorded_by_other_processes_merge_and_check() -> None:
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=_spawn()) as pool:
        parts = [pool.submit(_record_in_a_process, f"p{i}", 50) for i in range(2)]
        histories = [p.result(timeout=60) for p in parts]
    mine = History()
    mine.call("parent", "read", key="p0").unknown()
    merged = History.merge(mine, *histories)
    assert len(merged) == 101
    assert [op.id for op in merged] == list(range(101))
    calls = [op.call for op in merged]
    assert calls == sorted(calls)
    assert check(merged, CounterModel()).verdict is Verdict.LINEARIZABLE


async def test_tasks_record_into_one_history() -> None:
    history = History()
    value = 0

    async def worker(name: str) -> None:
        nonlocal value
        for _ in range(20):
            op = history.call(name, "add", 1)
            await asyncio.sleep(0)
            value += 1
            op.ok(value)

    await asyncio.gather(*(worker(f"task-{i}") for i in range(8)))
    assert len(history) == 160
    assert check(history, CounterModel(), timeout=10).linearizable


def test_a_history_pickles_with_its_clock() -> None:
    history = History(ManualClock("log"))
    history.add("a", "add", 1, result=1, call=0, ret=4)
    again = pickle.loads(pickle.dumps(history))
    assert again.clock.id == "log" and again.operations() == history.operations()
    again.call("b", "read").ok(1)
    assert len(again) == 2 and len(history) == 1


def test_the_public_types_live_under_the_public_module() -> None:
    import aiocoord.testing.history as module

    for name in module.__all__:
        obj = getattr(module, name)
        assert obj.__module__ in ("aiocoord.testing.history", "aiocoord.errors"), name
