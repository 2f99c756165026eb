"""Generated histories for the linearizability checker: a linearizable system simulated with
concurrent clients and faults, and the same with one anomaly planted.

Each client calls one operation at a time; an operation takes effect at a point between its
call and its return, where its result is computed on the simulated object, so a clean history
is linearizable by construction. Faults: an UNKNOWN operation (its reply lost) took effect at
its point or never; a FAIL one never did. An anomaly is a short stretch in the middle of the
history, where the in-flight operations have all returned and the clients then take turns,
one operation at a time, while the object misbehaves once. Each stretch is one no
linearization explains, whatever the UNKNOWN operations around it did:

* counter, a duplicated value: ``add(1) -> v``, then ``add(1) -> v`` (adds only go up);
* register, a stale read: ``write(x)``, ``write(y)``, then ``read() -> x`` (values are unique);
* versioned, a lost compare-and-set: ``read() -> (a, v)``, ``cas((v, b)) -> True``, then
  ``read() -> (a, v)`` (versions only go up);
* queue, a reordered item: drained, ``put(a)``, ``put(b)``, then ``take() -> b``,
  ``take() -> a`` (items are unique: ``a`` cannot come out after ``b``);
* set, a forgotten add: ``add(x) -> True`` (``x`` new), then ``contains(x) -> False``;
* mutex, a double grant: ``acquire() -> t`` by one client, ``acquire() -> t + 1`` by another
  before the first released.

Used by tests/unit/test_history_checker.py and by benchmarks/history_check.py.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from aiocoord.testing.history import (
    CounterModel,
    History,
    ManualClock,
    MutexModel,
    Outcome,
    QueueModel,
    RegisterModel,
    SequentialModel,
    SetModel,
    VersionedRegisterModel,
)

#: The kinds of system simulated; each has a model and an anomaly.
KINDS = ("counter", "register", "versioned", "queue", "set", "mutex")
#: What each kind's planted anomaly is.
ANOMALY = {
    "counter": "a duplicated counter value",
    "register": "a stale read",
    "versioned": "a lost compare-and-set",
    "queue": "a reordered queue item",
    "set": "a forgotten add",
    "mutex": "a double grant",
}


def model_for(kind: str) -> SequentialModel[Any]:
    """The model that checks a history of ``kind``."""
    if kind == "counter":
        return CounterModel()
    if kind == "register":
        return RegisterModel()
    if kind == "versioned":
        return VersionedRegisterModel(value=None)
    if kind == "queue":
        return QueueModel(priorities=True)
    if kind == "set":
        return SetModel()
    if kind == "mutex":
        return MutexModel()
    raise ValueError(kind)


@dataclass(frozen=True)
class Sample:
    """A generated history, and the ids of the planted stretch's operations (none if
    clean)."""

    kind: str
    history: History
    planted: tuple[int, ...]


@dataclass
class _Planned:
    client: str
    kind: str
    arg: object
    call: int
    point: int
    ret: int
    outcome: Outcome
    applied: bool
    result: object = None
    planted: bool = False


class _System:
    """The simulated object of one kind: picks what a client asks next and answers it."""

    def __init__(self, kind: str, rng: random.Random) -> None:
        self.kind = kind
        self.rng = rng
        self.fresh = itertools.count(1)
        self.counter = 0
        self.value: Hashable = None
        self.version = 0
        self.queue: list[tuple[int, int, Hashable]] = []  # (priority, seq, item), a heap
        self.members: set[int] = set()
        # what each client knows of the versioned register (the version it read last)
        self.seen_version: dict[str, int] = {}

    def choose(self, client: str) -> tuple[str, object]:
        rng, kind = self.rng, self.kind
        roll = rng.random()
        if kind == "counter":
            return ("add", 1) if roll < 0.8 else ("read", None)
        if kind == "register":
            return ("write", next(self.fresh)) if roll < 0.5 else ("read", None)
        if kind == "versioned":
            if roll < 0.45:
                return "read", None
            if roll < 0.9:
                return "cas", (self.seen_version.get(client, 0), next(self.fresh))
            return "write", next(self.fresh)
        if kind == "queue":
            return ("put", (rng.randrange(3), next(self.fresh))) if roll < 0.45 else ("take", None)
        if kind == "set":
            item = rng.randrange(6)
            if roll < 0.35:
                return "add", item
            if roll < 0.6:
                return "remove", item
            if roll < 0.85:
                return "contains", item
            return "read", None
        raise ValueError(kind)

    def apply(self, client: str, kind: str, arg: Any, learns: bool) -> object:
        if self.kind == "counter":
            if kind == "add":
                self.counter += arg
            return self.counter
        if self.kind == "register":
            if kind == "write":
                self.value = arg
                return None
            return self.value
        if self.kind == "versioned":
            if kind == "read":
                if learns:
                    self.seen_version[client] = self.version
                return (self.value, self.version)
            if kind == "write":
                self.value, self.version = arg, self.version + 1
                return self.version
            expected, new = arg
            if expected != self.version:
                return False
            self.value, self.version = new, self.version + 1
            if learns:
                self.seen_version[client] = self.version
            return True
        if self.kind == "queue":
            if kind == "put":
                priority, item = arg
                heapq.heappush(self.queue, (priority, next(self.fresh), item))
                return None
            return heapq.heappop(self.queue)[2] if self.queue else None
        if self.kind == "set":
            if kind == "add":
                new = arg not in self.members
                self.members.add(arg)
                return new
            if kind == "remove":
                present = arg in self.members
                self.members.discard(arg)
                return present
            if kind == "contains":
                return arg in self.members
            return frozenset(self.members)
        raise ValueError(self.kind)


def generate(
    kind: str,
    operations: int,
    *,
    clients: int = 8,
    unknown: float = 0.02,
    fail: float = 0.01,
    anomaly: bool = False,
    seed: int = 0,
) -> Sample:
    """A history of about ``operations`` operations of ``clients`` clients on a simulated
    ``kind`` (see :data:`KINDS`), ``unknown`` and ``fail`` the shares of each fault; with
    ``anomaly``, the kind's anomaly planted in the middle."""
    rng = random.Random(seed)
    if kind == "mutex":
        planned = _mutex(operations, clients, unknown, fail, anomaly, rng)
    else:
        planned = _concurrent(kind, operations, clients, unknown, fail, anomaly, rng)
    history = History(ManualClock("simulated"))
    planted: list[int] = []
    for p in sorted(planned, key=lambda p: (p.call, p.client)):
        op = history.add(
            p.client,
            p.kind,
            p.arg,
            result=p.result if p.outcome is Outcome.OK else None,
            call=p.call,
            ret=p.ret,
            outcome=p.outcome,
        )
        if p.planted:
            planted.append(op.id)
    return Sample(kind, history, tuple(planted))


def _outcome(rng: random.Random, unknown: float, fail: float) -> tuple[Outcome, bool]:
    roll = rng.random()
    if roll < fail:
        return Outcome.FAIL, False
    if roll < fail + unknown:
        return Outcome.UNKNOWN, rng.random() < 0.5
    return Outcome.OK, True


def _concurrent(
    kind: str,
    operations: int,
    clients: int,
    unknown: float,
    fail: float,
    anomaly: bool,
    rng: random.Random,
) -> list[_Planned]:
    system = _System(kind, rng)
    out: list[_Planned] = []
    names = [f"client-{i}" for i in range(clients)]
    half = operations // 2 if anomaly else operations + 1
    seq = itertools.count()

    def run(start: int, until: int) -> int:
        """Simulate from ``start`` until ``until`` operations exist; the last time."""
        # (time, order, what, client, planned): calls and linearization points.
        events: list[tuple[int, int, str, str, _Planned | None]] = []
        for name in names:
            heapq.heappush(events, (start + rng.randrange(1, 40), next(seq), "call", name, None))
        end = start
        while events:
            t, _, what, name, planned = heapq.heappop(events)
            end = max(end, t)
            if what == "point":
                assert planned is not None
                if planned.applied:
                    learns = planned.outcome is Outcome.OK
                    planned.result = system.apply(name, planned.kind, planned.arg, learns)
                continue
            if len(out) >= until:
                continue  # this client stops; the others finish what they began
            op_kind, arg = system.choose(name)
            outcome, applied = _outcome(rng, unknown, fail)
            point = t + rng.randrange(1, 30)
            ret = point + rng.randrange(1, 30)
            planned = _Planned(name, op_kind, arg, t, point, ret, outcome, applied)
            out.append(planned)
            heapq.heappush(events, (point, next(seq), "point", name, planned))
            heapq.heappush(events, (ret + rng.randrange(1, 20), next(seq), "call", name, None))
            end = max(end, ret)
        return end

    end = run(0, half)
    if anomaly:
        end = _plant(kind, system, out, names, end + 10)
        run(end, operations)
    return out


def _plant(kind: str, system: _System, out: list[_Planned], names: list[str], t: int) -> int:
    """Append ``kind``'s anomaly from time ``t``, one operation at a time; the end time."""

    def turn(client: str, op_kind: str, arg: object, result: object, planted: bool) -> None:
        nonlocal t
        out.append(
            _Planned(client, op_kind, arg, t, t + 1, t + 2, Outcome.OK, True, result, planted)
        )
        t += 3

    a, b = names[0], names[1 % len(names)]
    if kind == "counter":
        system.counter += 1
        turn(a, "add", 1, system.counter, True)
        turn(b, "add", 1, system.counter, True)  # the same value again: an update lost
    elif kind == "register":
        x, y = next(system.fresh), next(system.fresh)
        turn(a, "write", x, None, True)
        turn(b, "write", y, None, True)
        system.value = y
        turn(a, "read", None, x, True)  # stale: y was written after x
    elif kind == "versioned":
        now = (system.value, system.version)
        turn(a, "read", None, now, True)
        turn(b, "cas", (system.version, next(system.fresh)), True, True)  # lost: not applied
        turn(a, "read", None, now, True)
    elif kind == "queue":
        while system.queue:
            turn(a, "take", None, heapq.heappop(system.queue)[2], False)
        x, y = next(system.fresh), next(system.fresh)
        turn(a, "put", (0, x), None, True)
        turn(b, "put", (0, y), None, True)
        turn(a, "take", None, y, True)  # y handed out before x
        turn(b, "take", None, x, True)
    elif kind == "set":
        x = 1000 + next(system.fresh)
        turn(a, "add", x, True, True)
        turn(b, "contains", x, False, True)  # the add is forgotten
    else:
        raise ValueError(kind)
    return t + 10


def _mutex(
    operations: int,
    clients: int,
    unknown: float,
    fail: float,
    anomaly: bool,
    rng: random.Random,
) -> list[_Planned]:
    """Clients that acquire, hold and release one lock, granted in the order asked; an
    UNKNOWN acquire never got the lock (its client gave up), an UNKNOWN release did release
    it, a FAIL acquire timed out in the queue."""
    out: list[_Planned] = []
    names = [f"client-{i}" for i in range(clients)]
    tokens = itertools.count(1)
    half = operations // 2 if anomaly else operations + 1
    seq = itertools.count()

    def run(start: int, until: int) -> int:
        events: list[tuple[int, int, str, str, _Planned | None]] = []
        for name in names:
            heapq.heappush(events, (start + rng.randrange(1, 40), next(seq), "acquire", name, None))
        waiting: list[_Planned] = []
        holder: _Planned | None = None
        end = start

        def grant(t: int) -> None:
            nonlocal holder
            while waiting and holder is None:
                planned = waiting.pop(0)
                if planned.outcome is not Outcome.OK:
                    # gave up while waiting: it leaves at the time it decided
                    heapq.heappush(
                        events,
                        (
                            planned.ret + rng.randrange(1, 20),
                            next(seq),
                            "acquire",
                            planned.client,
                            None,
                        ),
                    )
                    continue
                planned.point = t + 1
                planned.ret = t + 1 + rng.randrange(1, 10)
                planned.result = next(tokens)
                holder = planned
                heapq.heappush(
                    events,
                    (
                        planned.ret + rng.randrange(1, 30),
                        next(seq),
                        "release",
                        planned.client,
                        planned,
                    ),
                )

        while events:
            t, _, what, name, planned = heapq.heappop(events)
            end = max(end, t)
            if what == "acquire":
                if len(out) >= until:
                    continue
                outcome, _ = _outcome(rng, unknown, fail)
                asked = _Planned(
                    name, "acquire", None, t, t, t + rng.randrange(5, 60), outcome, False
                )
                out.append(asked)
                waiting.append(asked)
                grant(t)
            else:
                assert planned is not None and holder is planned
                outcome, _ = _outcome(rng, unknown, 0.0)
                point = t + rng.randrange(1, 10)
                ret = point + rng.randrange(1, 10)
                out.append(_Planned(name, "release", planned.result, t, point, ret, outcome, True))
                holder = None
                heapq.heappush(
                    events, (ret + rng.randrange(1, 20), next(seq), "acquire", name, None)
                )
                grant(point)
                end = max(end, ret)
        for p in out:
            end = max(end, p.ret)
        return end

    end = run(0, half)
    if anomaly:
        t = end + 10
        first, second = next(tokens), next(tokens)
        a, b = names[0], names[1 % len(names)]
        for client, op_kind, arg, result in (
            (a, "acquire", None, first),
            (b, "acquire", None, second),  # granted while the first still holds it
            (a, "release", first, None),
            (b, "release", second, None),
        ):
            out.append(
                _Planned(client, op_kind, arg, t, t + 1, t + 2, Outcome.OK, True, result, True)
            )
            t += 3
        run(t + 10, operations)
    return out
