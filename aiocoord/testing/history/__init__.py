"""Recorded histories and a linearizability checker: is what your code saw explainable by
some order of its operations, one at a time?

Record each operation's call and completion from any number of tasks (a :class:`History`;
other processes' histories join with :meth:`History.merge`, on one monotonic clock), then
:func:`check` it against a sequential model. An operation completes ``ok`` with its result,
``fail`` when it certainly did not happen, or ``unknown`` when its reply was lost (it may take
effect at any point after its call, or never)::

    history = History()
    op = history.call("worker-1", "add", 1)
    op.ok((await counter.add(1)).post_value)
    ...
    result = check(history, CounterModel(), timeout=10)
    assert result.linearizable, result  # result.write_html("history.html") draws it

The checker is Wing & Gong's search with Lowe's memoization, as Porcupine does it, one key at
a time (P-compositionality). A history that is not linearizable comes back with the smallest
failing prefix found (:class:`Violation`) and draws as a self-contained HTML page; when the
time budget runs out the verdict is ``unknown``, never a guess. Bad input (a completion
without its call, an operation the model does not know, two clocks) is a
:class:`~aiocoord.errors.HistoryError` naming the operation.

The models: :class:`RegisterModel`, :class:`VersionedRegisterModel` (compare-and-set on a
version), :class:`CounterModel`, :class:`QueueModel` (FIFO, with priorities),
:class:`SetModel`, :class:`MutexModel` (grants with fencing tokens); your own subclass
:class:`SequentialModel`. The guide: docs/testing.md, "Checking your own service's history".
"""

from __future__ import annotations

from aiocoord._shown import show_in
from aiocoord.errors import (
    HistoryError,
    MixedClocksError,
    UnknownOperationError,
    UnmatchedCompletionError,
)
from aiocoord.testing.history._checker import CheckResult, assert_linearizable, check
from aiocoord.testing.history._recording import (
    Call,
    Clock,
    Completion,
    History,
    ManualClock,
    MonotonicClock,
    Operation,
    Outcome,
    Pending,
)
from aiocoord.testing.history._sequential import (
    CounterModel,
    MutexModel,
    MutexState,
    QueueModel,
    RegisterModel,
    SequentialModel,
    SetModel,
    VersionedRegisterModel,
)
from aiocoord.testing.history._verdicts import Verdict, Violation

__all__ = [
    "Call",
    "CheckResult",
    "Clock",
    "Completion",
    "CounterModel",
    "History",
    "HistoryError",
    "ManualClock",
    "MixedClocksError",
    "MonotonicClock",
    "MutexModel",
    "MutexState",
    "Operation",
    "Outcome",
    "Pending",
    "QueueModel",
    "RegisterModel",
    "SequentialModel",
    "SetModel",
    "UnknownOperationError",
    "UnmatchedCompletionError",
    "Verdict",
    "VersionedRegisterModel",
    "Violation",
    "assert_linearizable",
    "check",
]

# Shown, pickled and documented under the public name: the modules that define them are
# private (the errors are aiocoord.errors', public already).
show_in(__name__, globals(), __all__)
