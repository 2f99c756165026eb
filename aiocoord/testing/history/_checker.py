"""The linearizability checker: Wing & Gong's search with Lowe's memoization, one key at a time.

A history is linearizable if each operation can be given a point between its call and its
return (for an UNKNOWN one: any point after its call, or none) such that applying them in
that order to the sequential model gives every result recorded. The search (as Porcupine does
it) walks a doubly linked list of call and return events in time order: a call before the
first return not yet linearized is a candidate; it is tried on the model's state and, if the
pair (operations linearized, state after) is new, lifted out of the list (call and return)
and the search goes on from the start; a return reached with nothing left to try means
backtracking (the last lifted call goes back into the list). The pairs seen are remembered,
so no configuration is explored twice. Operations on different keys are checked apart
(P-compositionality); an UNKNOWN operation has no return event, and is tried only when the
operations with known results cannot go on, one per (kind, argument) at a time (two such are
interchangeable: the earlier-called can stand wherever the later one does).
"""

from __future__ import annotations

import bisect
import math
import os
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from aiocoord.errors import BadArgumentsError, InvalidTypeError, MixedClocksError
from aiocoord.testing.history._recording import History, Operation, Outcome, snapshot
from aiocoord.testing.history._sequential import SequentialModel
from aiocoord.testing.history._verdicts import Verdict, Violation

__all__ = ["CheckResult", "assert_linearizable", "check"]

#: How many steps of the search run between two looks at the clock (the time budget's).
_CLOCK_EVERY = 2048
#: The quick passes: UNKNOWN operations placed in a row at most, and how recent (in events
#: before the return that needs them) an UNKNOWN call must be to be tried.
_QUICK_PASSES = ((1, 256), (2, 256), (4, 1024))
#: How far behind its deepest placement a quick pass backtracks before it gives up.
_QUICK_RETREAT = 100
#: How many configurations a quick pass explores without getting deeper before it gives up.
_QUICK_STALL = 20_000


@dataclass(frozen=True)
class CheckResult:
    """The checker's answer: a :class:`Verdict`, and what it rests on.

    :meth:`html` (and :meth:`write_html`) draws it: one lane per client, each operation a
    bar from call to return, the linearization found, and for a violation the operation
    that cannot be placed.
    """

    #: linearizable, not linearizable, or unknown (the budget ran out)
    verdict: Verdict
    #: the model checked against
    model: SequentialModel[Any] = field(repr=False)
    #: every operation checked (FAIL ones included: they are drawn, not checked)
    operations: tuple[Operation, ...] = field(repr=False)
    #: per key checked, the linearization found (UNKNOWN operations that never took effect
    #: are not in it)
    linearizations: dict[Hashable, tuple[Operation, ...]] = field(repr=False)
    #: where it fails, for NOT_LINEARIZABLE
    violation: Violation | None
    #: why the verdict is UNKNOWN (or a summary of the search otherwise)
    reason: str
    #: seconds the check took
    elapsed: float
    #: configurations (linearized operations, state) explored, all keys together
    explored: int = field(repr=False)

    @property
    def linearizable(self) -> bool:
        """True only for :attr:`Verdict.LINEARIZABLE`."""
        return self.verdict is Verdict.LINEARIZABLE

    def html(self) -> str:
        """A self-contained HTML page of the result (no external assets)."""
        from aiocoord.testing.history._picture import render

        return render(self)

    def write_html(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`html` to ``path`` (parents made); return the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(self.html(), encoding="utf-8")
        return out

    def __str__(self) -> str:
        head = f"{self.verdict.value} ({self.model.name}, {len(self.operations)} operations"
        head += f", {self.elapsed:.2f} s): {self.reason}"
        v = self.violation
        if v is None:
            return head
        key = "" if v.key is None else f" on key {v.key!r}"
        return (
            f"{head}\n  cannot place operation {v.stuck.id} of {v.stuck.client}{key}: "
            f"{v.stuck.describe()}\n  after {len(v.linearized)} linearized, in state "
            f"{self.model.describe_state(v.state)}"
        )


def check(
    history: History | Sequence[Operation],
    model: SequentialModel[Any],
    *,
    timeout: float | None = None,
    picture: str | os.PathLike[str] | None = None,
) -> CheckResult:
    """Check that ``history`` is linearizable against ``model``.

    Every operation is first read by the model (:meth:`SequentialModel.validate`): one it
    does not know is an :class:`~aiocoord.errors.UnknownOperationError`, an operation that returned
    before its call a :class:`~aiocoord.errors.MixedClocksError` — never a verdict. FAIL
    operations are left out; pending ones count as UNKNOWN. ``timeout`` (seconds, None: no
    budget) bounds the search: past it the verdict is UNKNOWN. ``picture``: write
    :meth:`CheckResult.html` there (whatever the verdict).
    """
    if not isinstance(model, SequentialModel):
        raise InvalidTypeError(f"model must be a SequentialModel, not {model!r}")
    if timeout is not None and not timeout > 0:
        raise BadArgumentsError(f"timeout must be > 0 seconds (or None), not {timeout!r}")
    started = time.monotonic()
    deadline = None if timeout is None else started + timeout
    ops = snapshot(history)
    partitions: dict[Hashable, list[Operation]] = {}
    for op in ops:
        if op.ret is not None and op.ret < op.call:
            raise MixedClocksError(
                f"operation {op.id} of {op.client} ({op.describe()}) returned at {op.ret}, "
                f"before its call at {op.call}: its times are not of one clock",
                operation=op,
            )
        model.validate(op)
        try:
            partitions.setdefault(op.key, []).append(op)
        except TypeError:
            raise InvalidTypeError(
                f"operation {op.id} ({op.describe()}): its key {op.key!r} is not hashable"
            ) from None
    linearizations: dict[Hashable, tuple[Operation, ...]] = {}
    explored = 0
    verdict, violation = Verdict.LINEARIZABLE, None
    reason = f"{len(partitions)} key(s) checked"
    for number, (key, part) in enumerate(partitions.items()):
        prepared = model.prepare(part)
        search, found = _decide(prepared, part, deadline)
        explored += search.explored
        if found is None:
            verdict = Verdict.UNKNOWN
            reason = (
                f"the time budget of {timeout:g} s ran out after {number} of "
                f"{len(partitions)} key(s) (key {key!r}: {search.explored} configurations "
                "explored); no verdict"
            )
            break
        if found:
            linearizations[key] = tuple(search.order)
            continue
        verdict, violation = Verdict.NOT_LINEARIZABLE, search.violation(key, part)
        reason = "no linearization" if key is None else f"key {key!r} has no linearization"
        break
    result = CheckResult(
        verdict,
        model,
        ops,
        linearizations,
        violation,
        reason,
        time.monotonic() - started,
        explored,
    )
    if picture is not None:
        result.write_html(picture)
    return result


def assert_linearizable(
    history: History | Sequence[Operation],
    model: SequentialModel[Any],
    *,
    timeout: float | None = 60.0,
    picture: str | os.PathLike[str] | None = None,
) -> CheckResult:
    """:func:`check`, for a test: an :class:`AssertionError` unless the verdict is
    LINEARIZABLE (an UNKNOWN verdict fails too), naming the operation that cannot be placed
    and the picture written to ``picture`` (written only then)."""
    result = check(history, model, timeout=timeout)
    if result.linearizable:
        return result
    message = str(result)
    if picture is not None:
        message += f"\n  picture: {result.write_html(picture)}"
    raise AssertionError(message)


def _decide(
    model: SequentialModel[Any], ops: Sequence[Operation], deadline: float | None
) -> tuple[_Search, bool | None]:
    """The search that decided whether ``ops`` are linearizable, and its answer."""
    search = _Search(model, ops)
    # First quick passes, which place a few UNKNOWN operations in a row at most, each soon
    # after its call: what a history with a lost reply here and there needs, without the
    # long runs of UNKNOWN operations the full search tries wherever it is stuck (each run a
    # configuration of its own), nor every UNKNOWN call of the history at each step. A
    # quick pass can only say yes (it leaves orders out); if none does, the full search
    # decides. Each gets half the time left at most.
    if search.unknown:
        for limit, window in _QUICK_PASSES:
            half = None if deadline is None else (time.monotonic() + deadline) / 2
            if search.run(half, quick=(limit, window)):
                return search, True
    return search, search.run(deadline)


class _Entry:
    """A call or return event in the search's lists."""

    __slots__ = ("bit", "group", "index", "match", "next", "op", "placed", "pos", "prev")

    def __init__(self, op: Operation | None, pos: int) -> None:
        # None only for a list's head, which is never stepped
        self.op: Operation = cast(Operation, op)
        #: position in the key's events, time order
        self.pos = pos
        #: a definite call's return entry; None for a return, or an UNKNOWN call
        self.match: _Entry | None = None
        self.prev: _Entry | None = None
        self.next: _Entry | None = None
        #: a definite call's number (from 0, in call order); an UNKNOWN call's bit
        self.bit = 0
        #: an UNKNOWN call's group (its index in ``_Search.groups``); -1 for the others
        self.group = -1
        #: an UNKNOWN call's index in ``_Search.unknowns``, and whether a quick pass placed it
        self.index = 0
        self.placed = False


class _Search:
    """The search over the operations of one key."""

    def __init__(self, model: SequentialModel[Any], ops: Sequence[Operation]) -> None:
        self.model = model
        # (low, rel, state) -> the sets of UNKNOWN operations linearized (bits) it was
        # explored with: one int, or a list. A configuration whose UNKNOWN set includes one
        # of them is dominated (it can do no more, having no fewer UNKNOWN operations left
        # to place, and none is owed), and is not explored again.
        self._cache: dict[tuple[int, int, object], Any] = {}
        #: configurations explored, every run together
        self.explored = 0
        #: the linearization (complete after a success; as far as it got otherwise)
        self.order: list[Operation] = []
        # The furthest the search got: the position of the return it could not pass, the
        # linearization and state it had there, and that return's operation.
        self._best = -1
        self._best_order: list[Operation] = []
        self._best_state: object = None
        self._best_stuck: Operation | None = None
        events: list[tuple[float, int, int, Operation]] = []
        required: set[int] = set()
        for i, op in enumerate(ops):
            if op.outcome is Outcome.FAIL:
                continue  # it did not happen: nothing to place
            if op.outcome is None:
                op = replace(op, outcome=Outcome.UNKNOWN)  # pending: its caller never heard
            if op.outcome is Outcome.UNKNOWN and model.inert(op):
                continue  # whether it took effect or not, no recorded result changes
            events.append((op.call, 0, i, op))
            if op.outcome is Outcome.OK:
                assert op.ret is not None
                events.append((op.ret, 1, i, op))
            elif model.required(op):
                # It took effect, at some point after its call: placed as surely as a known
                # operation, its return after every event.
                required.add(i)
                events.append((math.inf, 1, i, op))
        # At equal times a call goes first: the two operations are taken as concurrent,
        # which can only allow more orders, never refuse a linearizable history.
        events.sort(key=lambda e: e[:3])
        self.head = _Entry(None, -1)
        # The UNKNOWN calls, grouped by (kind, arg): two of a group are interchangeable (the
        # model's step reads nothing else), so only a group's first not linearized is tried
        # (the earlier-called can stand wherever a later one does). Each group is a list
        # in call order behind its own head; the groups are in the order of their first
        # call. ``firsts[g]`` is the position of group g's first call.
        self.groups: list[_Entry] = []
        self.firsts: list[int] = []
        # Each list in order, head first: what run() links (again) before it starts.
        self._lists: list[list[_Entry]] = [[self.head]]
        group_of: dict[object, int] = {}
        #: every UNKNOWN call, in call order, and their positions (for the quick passes)
        self.unknowns: list[_Entry] = []
        self.positions: list[int] = []
        calls: dict[int, _Entry] = {}
        definite = unknown = 0
        for pos, (_, is_return, i, op) in enumerate(events):
            entry = _Entry(op, pos)
            if is_return:
                calls[i].match = entry
            elif op.outcome is Outcome.OK or i in required:
                entry.bit = definite
                definite += 1
                calls[i] = entry
            else:
                entry.bit = 1 << unknown
                unknown += 1
                try:
                    sig: object = (op.kind, op.arg)
                    g = group_of.setdefault(sig, len(self.groups))
                except TypeError:  # an argument that does not hash: a group of its own
                    g = len(self.groups)
                if g == len(self.groups):
                    self.groups.append(_Entry(None, -1))
                    self.firsts.append(pos)
                    self._lists.append([self.groups[g]])
                entry.group = g
                entry.index = len(self.unknowns)
                self.unknowns.append(entry)
                self.positions.append(pos)
                self._lists[g + 1].append(entry)
                continue
            self._lists[0].append(entry)
        self.definite = definite
        self.unknown = unknown

    def _link(self) -> None:
        # Each list doubly linked in order; what a run lifted is back in.
        for entries in self._lists:
            prev: _Entry | None = None
            for entry in entries:
                entry.prev = prev
                if prev is not None:
                    prev.next = entry
                prev = entry
            entries[-1].next = None
        for entry in self.unknowns:
            entry.placed = False

    def run(self, deadline: float | None, quick: tuple[int, int] | None = None) -> bool | None:
        """True if linearizable, False if not, None if ``deadline`` (a time.monotonic())
        came first.

        ``quick``: a quick pass, ``(limit, window)``: place at most ``limit`` UNKNOWN
        operations one after another, each called at most ``window`` events before the
        return that needs it, and give up when backtracking far; its False means only "not
        found this way".
        """
        self._link()
        self._cache.clear()
        self.order.clear()
        self._best = -1
        model_step, may_reach = self.model.step, self.model.may_reach
        head, groups, firsts = self.head, self.groups, self.firsts
        unknowns, positions = self.unknowns, self.positions
        cache = self._cache
        frames: list[tuple[_Entry, object, int, int, int, int, int]] = []
        order = self.order
        state: object = self.model.initial()
        # The definite operations linearized: every one numbered below `low`, and those whose
        # bit (number - low) is set in `rel`; a window, so that the memo's keys stay small
        # once most of a long history is behind. The UNKNOWN ones linearized: `ubits`.
        low = rel = ubits = 0
        remaining = self.definite
        node = head.next
        countdown = _CLOCK_EVERY
        stop = 0
        g = j = 0  # phase 2's next group (full search), next UNKNOWN call (quick pass)
        streak = 0  # UNKNOWN operations placed since the last definite one
        limit, window = (self.unknown, 0) if quick is None else quick
        # A quick pass gives up once it backtracks `retreat` placements behind the deepest
        # it got: a history that needs a longer run of UNKNOWN operations somewhere would
        # have it retry every order of everything before, which the next pass need not.
        retreat = _QUICK_RETREAT
        deepest = floor = 0
        stall = self.explored + _QUICK_STALL  # past it, a quick pass has stalled
        if remaining == 0:
            return True
        cache[(0, 0, state)] = 0
        while True:
            # Phase 1: the definite calls before the first return not yet linearized.
            assert node is not None  # a return is left while remaining > 0
            while node.match is not None:
                countdown -= 1
                if not countdown:
                    countdown = _CLOCK_EVERY
                    if deadline is not None and time.monotonic() > deadline:
                        return None
                ok, new = model_step(state, node.op)
                if ok:
                    shift = node.bit - low
                    nrel = rel | (1 << shift)
                    nlow = low
                    if not shift:  # the lowest not linearized is now: slide the window
                        ones = (~nrel & (nrel + 1)).bit_length() - 1
                        nrel >>= ones
                        nlow += ones
                    if _remember(cache, (nlow, nrel, new), ubits):
                        self.explored += 1
                        frames.append((node, state, low, rel, ubits, stop, streak))
                        if len(frames) > deepest:
                            deepest = len(frames)
                            stall = self.explored + _QUICK_STALL
                            if quick and deepest - retreat > floor:
                                floor = deepest - retreat
                        elif quick and self.explored > stall:
                            return False  # a quick pass that no longer gets deeper
                        order.append(node.op)
                        state, low, rel, streak = new, nlow, nrel, 0
                        _lift(node)
                        remaining -= 1
                        if not remaining:
                            return True
                        node = head.next
                        assert node is not None
                        continue
                node = node.next
                assert node is not None
            # A return reached: its operation must be placed by now, and nothing before it
            # could be. The UNKNOWN calls made before it may fill the gap.
            stop = node.pos
            if stop > self._best:
                self._best = stop
                self._best_order = order[:]
                self._best_state = state
                self._best_stuck = node.op
            g = 0
            j = bisect.bisect_left(positions, stop - window) if quick else 0
            # No run of UNKNOWN operations can help if the model says the stuck operation
            # is out of reach from here.
            hopeless = not may_reach(state, node.op)
            while True:
                # Phase 2: an UNKNOWN call made before `stop`, not placed yet. The full
                # search tries the first of each group; a quick pass each recent one.
                placed = False
                while streak < limit and not hopeless:
                    u: _Entry | None = None
                    if quick:
                        while j < len(unknowns) and positions[j] < stop:
                            j += 1
                            if not unknowns[j - 1].placed:
                                u = unknowns[j - 1]
                                break
                    else:
                        while g < len(groups) and firsts[g] < stop:
                            g += 1
                            first = groups[g - 1].next
                            if first is not None and first.pos < stop:
                                u = first
                                break
                    if u is None:
                        break
                    countdown -= 1
                    if not countdown:
                        countdown = _CLOCK_EVERY
                        if deadline is not None and time.monotonic() > deadline:
                            return None
                    ok, new = model_step(state, u.op)
                    if ok and _remember(cache, (low, rel, new), ubits | u.bit):
                        self.explored += 1
                        frames.append((u, state, low, rel, ubits, stop, streak))
                        order.append(u.op)
                        state, ubits, streak = new, ubits | u.bit, streak + 1
                        if quick:
                            u.placed = True
                        else:
                            _unlink(u)
                        placed = True
                        break
                if placed:
                    node = head.next
                    break
                # Backtrack: undo the last placement and try what follows it.
                if len(frames) <= floor:
                    return False  # all tried; or, for a quick pass, too far back
                entry, state, low, rel, ubits, stop, streak = frames.pop()
                order.pop()
                if entry.group >= 0:
                    hopeless = False  # it was not, where this UNKNOWN one was placed
                    if quick:
                        entry.placed = False
                        j = entry.index + 1
                        continue
                    _relink(entry)
                    g = entry.group + 1  # the next group: this one's later calls stand in
                    continue
                _unlift(entry)
                remaining += 1
                node = entry.next
                break

    def violation(self, key: Hashable, ops: Sequence[Operation]) -> Violation:
        """The :class:`Violation` of a failed :meth:`run`."""
        stuck = self._best_stuck
        assert stuck is not None
        cut = stuck.ret if stuck.outcome is Outcome.OK else max(op.ret or op.call for op in ops)
        assert cut is not None
        prefix = tuple(op for op in ops if op.call <= cut)
        return Violation(key, stuck, tuple(self._best_order), self._best_state, prefix)


def _remember(
    cache: dict[tuple[int, int, object], Any], key: tuple[int, int, object], unknown: int
) -> bool:
    """Record the configuration ``key`` (definite operations linearized, state) reached with
    the UNKNOWN operations ``unknown`` linearized; False if it is dominated: reached before
    with a subset of them (it can do no more now, having no more left to place)."""
    known = cache.get(key)
    if known is None:
        cache[key] = unknown
        return True
    if type(known) is int:
        if not known & ~unknown:
            return False
        cache[key] = [known, unknown]
        return True
    if not all(k & ~unknown for k in known):
        return False
    known.append(unknown)
    return True


def _lift(entry: _Entry) -> None:
    # Out of the list: the call, and its return (both are between the head and a later
    # event, or the end).
    prev, nxt = entry.prev, entry.next
    assert prev is not None and nxt is not None
    prev.next, nxt.prev = nxt, prev
    match = entry.match
    assert match is not None and match.prev is not None
    match.prev.next = match.next
    if match.next is not None:
        match.next.prev = match.prev


def _unlift(entry: _Entry) -> None:
    # Back in, in the reverse order of _lift: the neighbours still point where they did.
    match = entry.match
    assert match is not None and match.prev is not None
    match.prev.next = match
    if match.next is not None:
        match.next.prev = match
    assert entry.prev is not None and entry.next is not None
    entry.prev.next = entry
    entry.next.prev = entry


def _unlink(entry: _Entry) -> None:
    assert entry.prev is not None
    entry.prev.next = entry.next
    if entry.next is not None:
        entry.next.prev = entry.prev


def _relink(entry: _Entry) -> None:
    assert entry.prev is not None
    entry.prev.next = entry
    if entry.next is not None:
        entry.next.prev = entry
