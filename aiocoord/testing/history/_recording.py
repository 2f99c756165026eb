"""Recording a history: each operation's call and completion, timed on one monotonic clock.

A :class:`History` is written to by any number of tasks (each :meth:`History.call` returns the
:class:`Pending` operation its caller completes); histories recorded by other processes of the
same machine are joined with :meth:`History.merge`, which refuses two clocks. What the checker
reads is the frozen :class:`Operation` of each.
"""

from __future__ import annotations

import enum
import itertools
import time
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Protocol, runtime_checkable

from aiocoord.errors import (
    BadArgumentsError,
    HistoryError,
    InvalidTypeError,
    MixedClocksError,
    NotSentError,
    UnmatchedCompletionError,
)

__all__ = [
    "Call",
    "Clock",
    "Completion",
    "History",
    "ManualClock",
    "MonotonicClock",
    "Operation",
    "Outcome",
    "Pending",
]


class Outcome(enum.Enum):
    """How an operation ended, as its caller knows it."""

    #: it took effect, with the result recorded
    OK = "ok"
    #: it certainly did not take effect (refused before it was sent: nothing to check)
    FAIL = "fail"
    #: it may or may not have taken effect (the reply was lost, the caller gave up): the
    #: checker lets it take effect at any point after its call, or never
    UNKNOWN = "unknown"


@runtime_checkable
class Clock(Protocol):
    """Where a history's times come from: integers (nanoseconds, say) that never go back.

    ``id`` names the clock: two histories may be merged only when their clocks' ids are
    equal, that is when their times can be compared.
    """

    @property
    def id(self) -> str:
        """The clock's identity (equal ids: comparable times)."""
        ...

    def now(self) -> int:
        """The time now."""
        ...


def _boot_id() -> str:
    # CLOCK_MONOTONIC counts from the boot: every process of one boot reads the same clock.
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        import socket

        return socket.gethostname()


class MonotonicClock:
    """The machine's monotonic clock (:func:`time.monotonic_ns`), shared by every process of
    one boot: the default clock of a :class:`History`."""

    def __init__(self) -> None:
        #: ``monotonic@`` and the boot's id (the host's name where there is none)
        self.id: str = f"monotonic@{_boot_id()}"

    def now(self) -> int:
        """:func:`time.monotonic_ns`."""
        return time.monotonic_ns()

    def __repr__(self) -> str:
        return f"<MonotonicClock {self.id}>"


class ManualClock:
    """A clock that moves only when told (:meth:`advance`): for histories written by hand or
    replayed from a log, where the times are the test's."""

    def __init__(self, id: str = "manual", start: int = 0) -> None:
        #: the clock's identity (histories with equal ids may be merged)
        self.id: str = id
        #: the time :meth:`now` returns
        self.time: int = start

    def now(self) -> int:
        """The time set last."""
        return self.time

    def advance(self, by: int = 1) -> int:
        """Move the clock ``by`` (at least 0) and return the new time."""
        if by < 0:
            raise BadArgumentsError(f"a clock never goes back (advance by {by})")
        self.time += by
        return self.time

    def __repr__(self) -> str:
        return f"<ManualClock {self.id} at {self.time}>"


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of a history, as the checker reads it.

    ``kind`` and ``arg`` are what was asked (``"add"``, ``1``), ``result`` what came back
    (meaningful when ``outcome`` is OK), ``key`` the object it concerns: operations on
    different keys are checked apart (P-compositionality), each key against a fresh model.
    ``call`` and ``ret`` are times on the history's clock; ``ret`` and ``outcome`` are None
    while the operation is pending (the checker counts a pending operation as UNKNOWN).
    """

    #: the operation's number in its history, from 0 in call order
    id: int
    #: who called it: a lane of the picture (a task, a process, a client session)
    client: str
    #: the operation's name in the model (``"read"``, ``"write"``, ``"add"``, ...)
    kind: str
    #: its argument (hashable values only: the model's states are)
    arg: object
    #: the object it concerns (a node's path, say); None for a history of one object
    key: Hashable
    #: when it was called
    call: int
    #: when it completed (when its caller gave up, for UNKNOWN); None while pending
    ret: int | None = None
    #: how it ended; None while pending
    outcome: Outcome | None = None
    #: what it returned (None unless ``outcome`` is OK)
    result: object = None

    @property
    def known(self) -> bool:
        """True if it completed OK: its result is known."""
        return self.outcome is Outcome.OK

    def describe(self) -> str:
        """``kind(arg) -> result``, as the checker's messages and the picture show it."""
        arg = "" if self.arg is None else repr(self.arg)
        if self.outcome is Outcome.OK:
            tail = f" -> {self.result!r}"
        elif self.outcome is None:
            tail = " (pending)"
        else:
            tail = f" ({self.outcome.value})"
        key = "" if self.key is None else f"[{self.key!r}]"
        return f"{self.kind}{key}({arg}){tail}"


@dataclass(frozen=True, slots=True)
class Call:
    """The event of an operation's invocation (:meth:`History.events`,
    :meth:`History.from_events`)."""

    #: the operation's number, which its :class:`Completion` names
    op: int
    #: who called it
    client: str
    #: the operation's name in the model
    kind: str
    #: its argument
    arg: object
    #: the object it concerns (None: the history's one object)
    key: Hashable
    #: when it was called
    time: int


@dataclass(frozen=True, slots=True)
class Completion:
    """The event of an operation's completion, naming its :class:`Call` by ``op``."""

    #: the number of the operation completed
    op: int
    #: how it ended
    outcome: Outcome
    #: what it returned (None unless OK)
    result: object
    #: when it completed
    time: int


class Pending:
    """An operation called and not yet completed: complete it once, with :meth:`ok`,
    :meth:`fail`, :meth:`unknown` or :meth:`raised`.

    As a context manager, an exception leaving the block completes it with :meth:`raised`
    (and goes on); leaving the block without completing it is a :class:`HistoryError`.
    """

    __slots__ = ("_history", "id")

    def __init__(self, history: History, op_id: int) -> None:
        self._history = history
        #: the operation's number in its history
        self.id: int = op_id

    @property
    def operation(self) -> Operation:
        """The operation as recorded so far."""
        return self._history._ops[self.id]

    def ok(self, result: object = None) -> Operation:
        """It took effect and returned ``result``."""
        return self._history._complete(self.id, Outcome.OK, result)

    def fail(self) -> Operation:
        """It certainly did not take effect (refused before anything was sent)."""
        return self._history._complete(self.id, Outcome.FAIL, None)

    def unknown(self) -> Operation:
        """It may have taken effect: the reply was lost, or its caller gave up on it."""
        return self._history._complete(self.id, Outcome.UNKNOWN, None)

    def raised(self, exc: BaseException) -> Operation:
        """Complete it from the exception its call raised: :meth:`fail` for an error that
        says nothing was sent (:class:`~aiocoord.errors.NotSentError`, or an argument refused:
        :class:`~aiocoord.BadArgumentsError`, :class:`~aiocoord.errors.InvalidTypeError`),
        :meth:`unknown` for any other (a connection loss, a timeout, a cancellation).

        A server's answer (``BadVersionError``, ``NoNodeError``) is a result, not a failure:
        the operation happened and saw the state; record it with :meth:`ok` where the model
        reads it (a refused compare-and-set is ``ok(False)``).
        """
        if isinstance(exc, (NotSentError, BadArgumentsError, InvalidTypeError)):
            return self.fail()
        return self.unknown()

    def __enter__(self) -> Pending:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        done = self._history._ops[self.id].outcome is not None
        if exc is not None:
            if not done:
                self.raised(exc)
            return
        if not done:
            # Marked unknown (so the history stays checkable), then reported: a block that
            # forgot to say how its operation ended is a defect of the test.
            left = self.operation.describe()
            self.unknown()
            raise HistoryError(
                f"operation {self.id} ({left}) left its block without an outcome: call "
                "ok(), fail() or unknown()",
                operation=self.operation,
            )

    def __repr__(self) -> str:
        return f"<Pending {self.operation.describe()}>"


class History:
    """Operations recorded from any number of tasks, timed on one clock.

    ``op = history.call("client-1", "add", 1)`` records the call now; ``op.ok(7)`` (or
    ``fail()``, ``unknown()``, ``raised(exc)``) its completion, also timed now. Recording is
    not thread-safe: record from the event loop's thread (one history per process, joined
    with :meth:`merge`). A history pickles, to come back from another process.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        #: where the times come from (:class:`MonotonicClock` by default)
        self.clock: Clock = MonotonicClock() if clock is None else clock
        if not isinstance(self.clock, Clock):
            raise InvalidTypeError(f"clock must have an id and now(), not {self.clock!r}")
        self._ops: list[Operation] = []
        self._ids = itertools.count()

    def __getstate__(self) -> dict[str, object]:
        # Not the counter of numbers (itertools.count stops pickling in Python 3.14): the next
        # number is the history's length.
        return {"clock": self.clock, "ops": self._ops}

    def __setstate__(self, state: dict[str, object]) -> None:
        clock, ops = state["clock"], state["ops"]
        assert isinstance(clock, Clock) and isinstance(ops, list)
        self.clock = clock
        self._ops = ops
        self._ids = itertools.count(len(ops))

    # --- recording ----------------------------------------------------------------------------

    def call(self, client: str, kind: str, arg: object = None, *, key: Hashable = None) -> Pending:
        """Record that ``client`` calls ``kind(arg)`` on ``key`` now; complete the
        :class:`Pending` it returns when the call returns."""
        if not isinstance(client, str) or not isinstance(kind, str):
            raise InvalidTypeError(f"client and kind are strings, not {client!r}, {kind!r}")
        op_id = next(self._ids)
        self._ops.append(Operation(op_id, client, kind, arg, key, self.clock.now()))
        return Pending(self, op_id)

    def add(
        self,
        client: str,
        kind: str,
        arg: object = None,
        *,
        result: object = None,
        call: int,
        ret: int | None,
        outcome: Outcome | None = Outcome.OK,
        key: Hashable = None,
    ) -> Operation:
        """Add an operation with its times given (on this history's clock): for histories
        written by hand or read from a log. ``outcome=None`` (with ``ret=None``) leaves it
        pending."""
        if (ret is None) != (outcome is None):
            raise BadArgumentsError("ret and outcome are None together (a pending operation)")
        op = Operation(len(self._ops), client, kind, arg, key, call, ret, outcome, result)
        if ret is not None and ret < call:
            raise MixedClocksError(
                f"operation {op.id} ({op.describe()}) returned at {ret}, before its call at "
                f"{call}: its times are not of one clock",
                operation=op,
            )
        next(self._ids)
        self._ops.append(op)
        return op

    def _complete(self, op_id: int, outcome: Outcome, result: object) -> Operation:
        op = self._ops[op_id]
        if op.outcome is not None:
            raise UnmatchedCompletionError(
                f"operation {op_id} ({op.describe()}) completed a second time "
                f"({outcome.value}): its call was completed already",
                operation=op,
            )
        done = replace(
            op,
            ret=self.clock.now(),
            outcome=outcome,
            result=result if outcome is Outcome.OK else None,
        )
        assert done.ret is not None
        if done.ret < op.call:
            raise MixedClocksError(
                f"operation {op_id} ({done.describe()}) completed at {done.ret}, before its "
                f"call at {op.call}: the clock went back",
                operation=done,
            )
        self._ops[op_id] = done
        return done

    # --- reading ------------------------------------------------------------------------------

    def operations(self) -> tuple[Operation, ...]:
        """Every operation, in the order recorded (call order, unless :meth:`add` was given
        times out of order); pending ones have ``ret`` None."""
        return tuple(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def __iter__(self) -> Iterator[Operation]:
        return iter(tuple(self._ops))

    def events(self) -> list[Call | Completion]:
        """The history as call and completion events, in time order (a call first when
        times are equal)."""
        out: list[tuple[int, int, int, Call | Completion]] = []
        for op in self._ops:
            out.append(
                (op.call, 0, op.id, Call(op.id, op.client, op.kind, op.arg, op.key, op.call))
            )
            if op.ret is not None and op.outcome is not None:
                out.append((op.ret, 1, op.id, Completion(op.id, op.outcome, op.result, op.ret)))
        out.sort(key=lambda e: e[:3])
        return [e[3] for e in out]

    @classmethod
    def from_events(cls, events: Iterable[Call | Completion], *, clock: str) -> History:
        """The history of ``events`` (in any order), timed on the clock named ``clock``.

        A completion whose call is missing, or a second completion of one call, is an
        :class:`~aiocoord.errors.UnmatchedCompletionError`; a completion earlier than its call a
        :class:`~aiocoord.errors.MixedClocksError`. A call left without a completion is pending.
        """
        calls: dict[int, Call] = {}
        completions: dict[int, Completion] = {}
        for event in events:
            if isinstance(event, Call):
                if event.op in calls:
                    raise UnmatchedCompletionError(
                        f"operation {event.op} is called twice", operation=event
                    )
                calls[event.op] = event
            elif isinstance(event, Completion):
                if event.op in completions:
                    raise UnmatchedCompletionError(
                        f"operation {event.op} is completed twice", operation=event
                    )
                completions[event.op] = event
            else:
                raise InvalidTypeError(f"not a Call or a Completion: {event!r}")
        for op_id, done in completions.items():
            if op_id not in calls:
                raise UnmatchedCompletionError(
                    f"a completion without its call: operation {op_id} ({done.outcome.value}"
                    f"{'' if done.result is None else f' -> {done.result!r}'}) was never called",
                    operation=done,
                )
        history = cls(ManualClock(clock))
        for c in sorted(calls.values(), key=lambda c: (c.time, c.op)):
            end = completions.get(c.op)
            history.add(
                c.client,
                c.kind,
                c.arg,
                key=c.key,
                call=c.time,
                ret=None if end is None else end.time,
                outcome=None if end is None else end.outcome,
                result=None if end is None else end.result,
            )
        return history

    @classmethod
    def merge(cls, *histories: History) -> History:
        """One history of the operations of ``histories`` (recorded by other processes, say),
        renumbered in call order. Their clocks must be one (equal ids): otherwise their
        times cannot be compared, a :class:`~aiocoord.errors.MixedClocksError`."""
        if not histories:
            raise BadArgumentsError("merge needs at least one history")
        first = histories[0].clock
        for other in histories[1:]:
            if other.clock.id != first.id:
                ops = other.operations()
                raise MixedClocksError(
                    f"a history timed on clock {other.clock.id!r} cannot be merged with one "
                    f"timed on {first.id!r}"
                    + (f" (its first operation: {ops[0].describe()})" if ops else ""),
                    operation=ops[0] if ops else None,
                )
        merged = cls(first)
        ordered = sorted(
            (op for h in histories for op in h._ops), key=lambda op: (op.call, op.client)
        )
        merged._ops = [replace(op, id=i) for i, op in enumerate(ordered)]
        merged._ids = itertools.count(len(ordered))
        return merged

    def __repr__(self) -> str:
        pending = sum(op.outcome is None for op in self._ops)
        return f"<History {len(self._ops)} operations ({pending} pending) on {self.clock.id}>"


def snapshot(history: History | Sequence[Operation]) -> tuple[Operation, ...]:
    """The operations of ``history`` (a :class:`History` or operations already read)."""
    if isinstance(history, History):
        return history.operations()
    ops = tuple(history)
    for op in ops:
        if not isinstance(op, Operation):
            raise InvalidTypeError(f"a history is a History or Operations, not {op!r}")
    return ops
