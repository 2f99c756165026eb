"""The linearizability checker proven able to fail: it agrees with an exhaustive search on
thousands of small random histories of every model, passes generated clean histories and
reports every planted anomaly (with the smallest failing prefix and its picture), gives up
with UNKNOWN when its budget runs out, and checks keys apart."""

from __future__ import annotations

import itertools
import random
import re
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from history_samples import ANOMALY, KINDS, generate, model_for

import aiocoord
import aiocoord.errors
from aiocoord.testing.history import (
    CounterModel,
    History,
    ManualClock,
    MutexModel,
    Operation,
    Outcome,
    QueueModel,
    RegisterModel,
    SequentialModel,
    SetModel,
    Verdict,
    VersionedRegisterModel,
    assert_linearizable,
    check,
)
from aiocoord.testing.history._checker import _Search

# --- against an exhaustive search -------------------------------------------------------------


def exhaustive(ops: Sequence[Operation], model: SequentialModel[Any]) -> bool:
    """Whether some order of the known operations and some of the UNKNOWN (or pending)
    ones, respecting real time, gives every recorded result: every subset, every order."""
    known = [op for op in ops if op.outcome is Outcome.OK]
    maybe = [op for op in ops if op.outcome in (Outcome.UNKNOWN, None)]
    for k in range(len(maybe) + 1):
        for chosen in itertools.combinations(maybe, k):
            for order in itertools.permutations(known + list(chosen)):
                if any(
                    later.outcome is Outcome.OK and later.ret is not None and later.ret < op.call
                    for i, op in enumerate(order)
                    for later in order[i + 1 :]
                ):
                    continue  # `later` returned before `op` was called
                state, ok = model.initial(), True
                for op in order:
                    ok, state = model.step(state, op)
                    if not ok:
                        break
                if ok:
                    return True
    return False


def _random_history(rng: random.Random, kind: str) -> History:
    h = History(ManualClock())
    for i in range(rng.randint(1, 6)):
        call = rng.randint(0, 20)
        ret = call + rng.randint(0, 10)
        outcome = rng.choice([Outcome.OK] * 3 + [Outcome.UNKNOWN, Outcome.FAIL, None])
        op_kind, arg, result = _random_op(rng, kind)
        h.add(
            f"c{i % 3}",
            op_kind,
            arg,
            result=result if outcome is Outcome.OK else None,
            call=call,
            ret=None if outcome is None else ret,
            outcome=outcome,
        )
    return h


def _random_op(rng: random.Random, kind: str) -> tuple[str, object, object]:
    # Few values, so that results are often right and both verdicts come up.
    if kind == "counter":
        if rng.random() < 0.6:
            # mostly up (a counter that only grows prunes its search), down now and then
            return "add", rng.choice([1, 1, 2, -1]), rng.randint(-2, 4)
        return "read", None, rng.randint(0, 3)
    if kind == "register":
        if rng.random() < 0.5:
            return "write", rng.randint(1, 2), None
        return "read", None, rng.choice([None, 1, 2])
    if kind == "versioned":
        roll = rng.random()
        if roll < 0.4:
            return "read", None, (rng.choice([None, 1, 2]), rng.randint(0, 2))
        if roll < 0.6:
            return "write", rng.randint(1, 2), rng.choice([None, 1, 2])
        return "cas", (rng.randint(0, 2), rng.randint(1, 2)), rng.choice([True, False])
    if kind == "queue":
        if rng.random() < 0.5:
            return "put", (rng.randint(0, 1), rng.randint(1, 3)), None
        return "take", None, rng.choice([None, 1, 2, 3])
    if kind == "set":
        op_kind = rng.choice(["add", "remove", "contains", "read"])
        if op_kind == "read":
            return "read", None, rng.sample([1, 2], rng.randint(0, 2))
        results: list[object] = [True, False] + ([None] if op_kind != "contains" else [])
        return op_kind, rng.randint(1, 2), rng.choice(results)
    if rng.random() < 0.5:
        return "acquire", None, rng.randint(1, 3)
    return "release", rng.randint(1, 3), None


def _small_model(kind: str) -> SequentialModel[Any]:
    return {
        "counter": CounterModel(),
        "register": RegisterModel(),
        "versioned": VersionedRegisterModel(value=None),
        "queue": QueueModel(priorities=True),
        "set": SetModel(),
        "mutex": MutexModel(),
    }[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_the_checker_agrees_with_an_exhaustive_search(kind: str) -> None:
    rng = random.Random(f"exhaustive-{kind}")
    verdicts = {True: 0, False: 0}
    for _ in range(600):
        h = _random_history(rng, kind)
        model = _small_model(kind)
        expected = exhaustive(h.operations(), model)
        result = check(h, model, timeout=10)
        assert result.verdict is not Verdict.UNKNOWN
        # The full search alone, too: check() asks it only when the quick passes found nothing.
        ops = h.operations()
        full = _Search(model.prepare(ops), ops).run(None)
        assert result.linearizable == expected == full, "\n".join(
            [f"{kind}: exhaustive says {expected}, the checker {result}, the full search {full}"]
            + [f"  {op.describe()} [{op.call}, {op.ret}]" for op in h]
        )
        verdicts[expected] += 1
    assert min(verdicts.values()) > 100, verdicts  # both verdicts were tested, often


def test_a_linearization_found_is_one() -> None:
    rng = random.Random("orders")
    for _ in range(300):
        h = _random_history(rng, "counter")
        result = check(h, CounterModel())
        if not result.linearizable:
            continue
        order = result.linearizations[None]
        state, ok = CounterModel().initial(), True
        for i, op in enumerate(order):
            ok, state = CounterModel().step(state, op)
            assert ok
            assert all(
                not (later.outcome is Outcome.OK and later.ret is not None and later.ret < op.call)
                for later in order[i + 1 :]
            )
        known = {op.id for op in h if op.outcome is Outcome.OK}
        assert known <= {op.id for op in order}


# --- generated histories: clean ones pass, planted anomalies are reported ---------------------

#: Operations and clients per kind: the queue's search, when it must prove there is no order,
#: explores every order of the concurrent puts still queued, so its histories stay small.
SIZES = {kind: (400, 8) for kind in KINDS} | {"queue": (200, 4)}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", KINDS)
def test_a_generated_clean_history_passes(kind: str, seed: int) -> None:
    operations, clients = SIZES[kind]
    sample = generate(kind, operations, clients=clients, seed=seed)
    faults = {op.outcome for op in sample.history}
    assert {Outcome.UNKNOWN, Outcome.FAIL} <= faults
    result = check(sample.history, model_for(kind), timeout=30)
    assert result.verdict is Verdict.LINEARIZABLE, result


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_anomaly_is_reported_with_its_picture(
    kind: str, seed: int, tmp_path: Path
) -> None:
    operations, clients = SIZES[kind]
    sample = generate(kind, operations, clients=clients, anomaly=True, seed=seed)
    picture = tmp_path / f"{kind}.html"
    result = check(sample.history, model_for(kind), timeout=30, picture=picture)
    assert result.verdict is Verdict.NOT_LINEARIZABLE, f"{ANOMALY[kind]} missed: {result}"
    violation = result.violation
    assert violation is not None
    assert violation.stuck.id in sample.planted, (ANOMALY[kind], str(result))
    page = picture.read_text()
    assert f"Operation {violation.stuck.id} of {violation.stuck.client} cannot be placed" in page
    assert 'class="bar stuck"' in page and 'class="cut"' in page
    _assert_self_contained(page)


def test_the_violation_is_the_smallest_failing_prefix() -> None:
    sample = generate("register", 400, anomaly=True, seed=7)
    result = check(sample.history, RegisterModel(), timeout=30)
    violation = result.violation
    assert violation is not None
    # the prefix fails on its own ...
    assert check(violation.prefix, RegisterModel()).verdict is Verdict.NOT_LINEARIZABLE
    # ... and cut just before the stuck operation's return (what returned later is pending
    # there), it passes: nothing shorter fails.
    cut = violation.stuck.ret
    assert cut is not None
    before = [
        op if op.ret is not None and op.ret < cut else replace(op, ret=None, outcome=None)
        for op in violation.prefix
    ]
    assert check(before, RegisterModel()).linearizable
    # the longest linearizable prefix found is a linearization, which leaves `state`
    assert violation.linearized and violation.stuck not in violation.linearized
    model = RegisterModel()
    state = model.initial()
    for op in violation.linearized:
        ok, state = model.step(state, op)
        assert ok
    assert state == violation.state


@pytest.mark.parametrize("kind", ["counter", "register"])
def test_a_ten_thousand_operation_history_of_eight_clients_gets_a_verdict(kind: str) -> None:
    # The acceptance figure (under 10 s, under 1 GiB) is measured by benchmarks/
    # history_check.py; here the check must end with a verdict, well within its budget.
    sample = generate(kind, 10_000, clients=8, seed=11)
    assert sum(op.outcome is Outcome.UNKNOWN for op in sample.history) > 100
    result = check(sample.history, model_for(kind), timeout=120)
    assert result.verdict is Verdict.LINEARIZABLE, result
    # Proving the planted anomaly has no order at all is the costly direction.
    planted = generate(kind, 10_000, clients=8, anomaly=True, seed=11)
    result = check(planted.history, model_for(kind), timeout=120)
    assert result.violation is not None and result.violation.stuck.id in planted.planted


# --- the budget, the keys, the inputs ---------------------------------------------------------


def test_the_budget_running_out_is_unknown_not_a_verdict() -> None:
    # A queue with lost replies and an anomaly planted: proving it has no order means trying
    # every order of the concurrent puts queued, far more than a tenth of a second allows.
    sample = generate("queue", 3000, anomaly=True, seed=1)
    started = time.monotonic()
    result = check(sample.history, model_for("queue"), timeout=0.3)
    assert result.verdict is Verdict.UNKNOWN and result.violation is None
    assert "time budget of 0.3 s ran out" in result.reason
    assert time.monotonic() - started < 5  # the clock is read every few thousand steps
    assert not result.linearizable


def test_keys_are_checked_apart_and_the_violation_names_its_key() -> None:
    h = History(ManualClock())
    for key in ("/a", "/b"):
        h.add("c1", "add", 1, result=1, call=0, ret=2, key=key)
        h.add("c2", "add", 1, result=2, call=1, ret=3, key=key)
    assert check(h, CounterModel()).linearizable
    h.add("c3", "read", result=1, call=4, ret=5, key="/b")
    result = check(h, CounterModel())
    assert result.violation is not None and result.violation.key == "/b"
    assert set(result.linearizations) == {"/a"}
    assert all(op.key == "/b" for op in result.violation.prefix)
    assert "on key '/b'" in str(result)


def test_the_input_is_checked_before_any_search() -> None:
    h = History(ManualClock())
    h.add("a", "add", 1, result=1, call=0, ret=1, key=["unhashable"])
    with pytest.raises(aiocoord.errors.InvalidTypeError, match=r"key .* is not hashable"):
        check(h, CounterModel())
    with pytest.raises(aiocoord.errors.InvalidTypeError, match="SequentialModel"):
        check(History(), "counter")  # type: ignore[arg-type]
    with pytest.raises(aiocoord.BadArgumentsError, match="timeout"):
        check(History(), CounterModel(), timeout=0)
    assert check(History(), CounterModel()).linearizable  # nothing to place


def test_assert_linearizable_fails_with_the_operation_and_the_picture(tmp_path: Path) -> None:
    h = History(ManualClock())
    h.add("alice", "add", 1, result=1, call=0, ret=1)
    assert_linearizable(h, CounterModel())
    h.add("bob", "add", 1, result=1, call=2, ret=3)
    picture = tmp_path / "counter.html"
    with pytest.raises(AssertionError, match=r"cannot place operation 1 of bob") as err:
        assert_linearizable(h, CounterModel(), picture=picture)
    assert str(picture) in str(err.value) and picture.exists()


# --- the picture ------------------------------------------------------------------------------


def _assert_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "<link" not in page and "<img" not in page
    assert "@import" not in page and "url(http" not in page
    # the one address is the SVG namespace, which is a name, not a fetch
    assert set(re.findall(r"https?://[^\s\"']+", page)) <= {"http://www.w3.org/2000/svg"}


def test_the_picture_has_a_lane_per_client_and_a_bar_per_operation() -> None:
    sample = generate("counter", 60, clients=3, seed=2)
    result = check(sample.history, CounterModel())
    page = result.html()
    _assert_self_contained(page)
    for client in ("client-0", "client-1", "client-2"):
        assert f">{client}</text>" in page
    assert page.count('<rect class="bar ') == len(sample.history)
    assert "polyline" in page  # the linearization
    assert page.count('class="bar fail"') == sum(
        op.outcome is Outcome.FAIL for op in sample.history
    )


def test_the_picture_of_a_violation_shows_the_prefix_and_the_steps() -> None:
    h = History(ManualClock())
    h.add("a", "write", "<x>", call=0, ret=1)
    h.add("a", "write", "y", call=2, ret=3)
    h.add("b", "read", result="<x>", call=4, ret=5)
    h.add("b", "read", result="y", call=6, ret=7)  # after the cut: not drawn
    result = check(h, RegisterModel())
    page = result.html()
    assert page.count('<rect class="bar ') == 3
    assert "&lt;x&gt;" in page and "<x>" not in page  # values are escaped
    assert "cannot be placed" in page and "step by step" in page
    assert 'class="bar lin"' in page
