"""The model library of aiocoord.testing.history, each on small hand-made histories: ones
that are linearizable (often only in one order the checker must find) and ones that are not,
with the operation that cannot be placed; and the operations each model refuses to read."""

from __future__ import annotations

from typing import Any

import pytest

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
    UnknownOperationError,
    Verdict,
    VersionedRegisterModel,
    check,
)

OK, UNKNOWN, FAIL = Outcome.OK, Outcome.UNKNOWN, Outcome.FAIL

#: A row: (client, kind, arg, result, call, ret) or with an outcome last.
Row = tuple[Any, ...]


def history(*rows: Row) -> History:
    h = History(ManualClock())
    for row in rows:
        client, kind, arg, result, call, ret, *rest = row
        outcome = rest[0] if rest else OK
        h.add(client, kind, arg, result=result, call=call, ret=ret, outcome=outcome)
    return h


def verdict(model: SequentialModel[Any], *rows: Row) -> tuple[Verdict, int | None]:
    """The verdict, and the id of the operation that cannot be placed (None if none)."""
    result = check(history(*rows), model, timeout=10)
    stuck = None if result.violation is None else result.violation.stuck.id
    return result.verdict, stuck


LINEARIZABLE = Verdict.LINEARIZABLE
NOT = Verdict.NOT_LINEARIZABLE

# --- register ---------------------------------------------------------------------------------


def test_register_a_read_concurrent_with_a_write_sees_either_value() -> None:
    for seen in (None, "x"):
        assert verdict(
            RegisterModel(),
            ("a", "write", "x", None, 0, 10),
            ("b", "read", None, seen, 2, 4),
        ) == (LINEARIZABLE, None)


def test_register_a_stale_read_after_the_next_write_returned() -> None:
    assert verdict(
        RegisterModel(),
        ("a", "write", "x", None, 0, 1),
        ("a", "write", "y", None, 2, 3),
        ("b", "read", None, "x", 4, 5),
    ) == (NOT, 2)


def test_register_reads_pin_one_order_of_concurrent_writes() -> None:
    # x and y overlap; two reads, one after the other, see y then x: y was written first.
    assert verdict(
        RegisterModel(),
        ("a", "write", "x", None, 0, 10),
        ("b", "write", "y", None, 1, 3),
        ("c", "read", None, "y", 4, 5),
        ("c", "read", None, "x", 6, 7),
    ) == (LINEARIZABLE, None)
    # ... and back to y once x was read is not.
    assert verdict(
        RegisterModel(),
        ("a", "write", "x", None, 0, 10),
        ("b", "write", "y", None, 1, 3),
        ("c", "read", None, "y", 4, 5),
        ("c", "read", None, "x", 6, 7),
        ("c", "read", None, "y", 8, 9),
    ) == (NOT, 4)


def test_register_a_lost_write_may_have_happened_or_not() -> None:
    lost = ("a", "write", "x", None, 0, 1, UNKNOWN)
    assert verdict(RegisterModel(), lost, ("b", "read", None, "x", 5, 6))[0] is LINEARIZABLE
    assert verdict(RegisterModel(), lost, ("b", "read", None, None, 5, 6))[0] is LINEARIZABLE
    # ... but not happened twice: x, then y, then x again.
    assert verdict(
        RegisterModel(),
        lost,
        ("b", "read", None, "x", 5, 6),
        ("b", "write", "y", None, 7, 8),
        ("b", "read", None, "x", 9, 10),
    ) == (NOT, 3)


def test_register_a_failed_write_did_not_happen() -> None:
    assert verdict(
        RegisterModel(),
        ("a", "write", "x", None, 0, 1, FAIL),
        ("b", "read", None, "x", 5, 6),
    ) == (NOT, 1)


# --- versioned register (compare-and-set) -----------------------------------------------------


def test_versioned_cas_on_the_version_read() -> None:
    assert verdict(
        VersionedRegisterModel(),
        ("a", "read", None, (b"", 0), 0, 1),
        ("a", "cas", (0, b"1"), True, 2, 3),
        ("b", "cas", (0, b"2"), False, 2, 4),
        ("b", "read", None, (b"1", 1), 5, 6),
        ("c", "write", b"3", 2, 7, 8),
        ("c", "read", None, (b"3", 2), 9, 10),
    ) == (LINEARIZABLE, None)


def test_versioned_two_cas_on_one_version_cannot_both_succeed() -> None:
    assert verdict(
        VersionedRegisterModel(),
        ("a", "cas", (0, b"1"), True, 0, 5),
        ("b", "cas", (0, b"2"), True, 1, 6),
    ) == (NOT, 1)


def test_versioned_a_cas_refused_when_its_version_was_current() -> None:
    assert verdict(
        VersionedRegisterModel(),
        ("a", "read", None, (b"", 0), 0, 1),
        ("a", "cas", (0, b"1"), False, 2, 3),
    ) == (NOT, 1)


def test_versioned_a_lost_cas_explains_a_version_seen() -> None:
    rows: list[Row] = [
        ("a", "cas", (0, b"1"), None, 0, 1, UNKNOWN),
        ("b", "read", None, (b"1", 1), 3, 4),
    ]
    assert verdict(VersionedRegisterModel(), *rows)[0] is LINEARIZABLE
    # a CAS acknowledged but lost: reads still see version 0 after it returned
    assert verdict(
        VersionedRegisterModel(),
        ("a", "cas", (0, b"1"), True, 0, 1),
        ("b", "read", None, (b"", 0), 3, 4),
    ) == (NOT, 1)


def test_versioned_a_write_returns_its_new_version() -> None:
    assert verdict(VersionedRegisterModel(), ("a", "write", b"x", 2, 0, 1)) == (NOT, 0)
    assert verdict(VersionedRegisterModel(version=1), ("a", "write", b"x", 2, 0, 1))[0] is (
        LINEARIZABLE
    )


# --- counter ----------------------------------------------------------------------------------


def test_counter_concurrent_adds_in_the_order_their_values_say() -> None:
    assert verdict(
        CounterModel(),
        ("a", "add", 1, 2, 0, 10),
        ("b", "add", 1, 1, 1, 9),
        ("c", "add", 5, 7, 2, 11),
        ("d", "read", None, 7, 12, 13),
    ) == (LINEARIZABLE, None)


def test_counter_a_duplicated_value() -> None:
    assert verdict(
        CounterModel(),
        ("a", "add", 1, 1, 0, 1),
        ("b", "add", 1, 1, 2, 3),
    ) == (NOT, 1)


def test_counter_a_lost_add_fills_a_gap_and_a_failed_one_does_not() -> None:
    gap = ("b", "add", 1, 2, 5, 6)
    assert verdict(CounterModel(), ("a", "add", 1, None, 0, 1, UNKNOWN), gap)[0] is LINEARIZABLE
    assert verdict(CounterModel(), ("a", "add", 1, None, 0, 1, FAIL), gap) == (NOT, 1)
    # two lost adds may both have happened, one after the other
    assert (
        verdict(
            CounterModel(),
            ("a", "add", 1, None, 0, 1, UNKNOWN),
            ("b", "add", 1, None, 0, 1, UNKNOWN),
            ("c", "add", 1, 3, 5, 6),
        )[0]
        is LINEARIZABLE
    )


def test_counter_a_lost_add_takes_effect_after_its_call_never_before() -> None:
    assert verdict(
        CounterModel(),
        ("a", "read", None, 1, 0, 1),
        ("b", "add", 1, None, 2, 3, UNKNOWN),
    ) == (NOT, 0)


def test_counter_a_pending_add_counts_as_unknown() -> None:
    h = history(("b", "add", 1, 2, 5, 6))
    h.add("a", "add", 1, call=0, ret=None, outcome=None)
    assert check(h, CounterModel()).verdict is LINEARIZABLE


# --- queue ------------------------------------------------------------------------------------


def test_queue_fifo_with_concurrent_puts_in_either_order() -> None:
    assert verdict(
        QueueModel(),
        ("a", "put", "x", None, 0, 5),
        ("b", "put", "y", None, 1, 4),
        ("c", "take", None, "y", 6, 7),
        ("c", "take", None, "x", 8, 9),
        ("c", "take", None, None, 10, 11),
    ) == (LINEARIZABLE, None)


def test_queue_a_reordered_item() -> None:
    assert verdict(
        QueueModel(),
        ("a", "put", "x", None, 0, 1),
        ("a", "put", "y", None, 2, 3),
        ("b", "take", None, "y", 4, 5),
    ) == (NOT, 2)


def test_queue_an_item_taken_twice_and_an_empty_take_of_a_full_queue() -> None:
    assert verdict(
        QueueModel(),
        ("a", "put", "x", None, 0, 1),
        ("b", "take", None, "x", 2, 3),
        ("c", "take", None, "x", 4, 5),
    ) == (NOT, 2)
    assert verdict(
        QueueModel(),
        ("a", "put", "x", None, 0, 1),
        ("b", "take", None, None, 2, 3),
    ) == (NOT, 1)


def test_queue_priorities_come_out_lowest_first_in_order_put() -> None:
    rows: list[Row] = [
        ("a", "put", (5, "late"), None, 0, 1),
        ("a", "put", (1, "first"), None, 2, 3),
        ("a", "put", (1, "second"), None, 4, 5),
        ("b", "take", None, "first", 6, 7),
        ("b", "take", None, "second", 8, 9),
        ("b", "take", None, "late", 10, 11),
    ]
    assert verdict(QueueModel(priorities=True), *rows) == (LINEARIZABLE, None)
    swapped = [*rows[:3], ("b", "take", None, "late", 6, 7)]
    assert verdict(QueueModel(priorities=True), *swapped) == (NOT, 3)


def test_queue_a_lost_take_may_have_taken_the_head() -> None:
    rows: list[Row] = [
        ("a", "put", "x", None, 0, 1),
        ("a", "put", "y", None, 2, 3),
        ("b", "take", None, None, 4, 5, UNKNOWN),
        ("c", "take", None, "y", 6, 7),
    ]
    assert verdict(QueueModel(), *rows)[0] is LINEARIZABLE
    # ... but not an item a known take returned later
    assert verdict(QueueModel(), *rows, ("c", "take", None, "x", 8, 9)) == (NOT, 3)


def test_queue_a_lost_put_whose_item_came_out_took_effect() -> None:
    assert verdict(
        QueueModel(),
        ("a", "put", "x", None, 0, 1, UNKNOWN),
        ("a", "put", "y", None, 2, 3),
        ("b", "take", None, "x", 4, 5),
        ("b", "take", None, "y", 6, 7),
    ) == (LINEARIZABLE, None)


# --- set --------------------------------------------------------------------------------------


def test_set_adds_removes_and_reads() -> None:
    assert verdict(
        SetModel(),
        ("a", "add", 1, True, 0, 1),
        ("b", "add", 1, False, 2, 3),
        ("a", "add", 2, None, 4, 5),
        ("b", "read", None, [2, 1], 6, 7),
        ("a", "remove", 1, True, 8, 9),
        ("b", "contains", 1, False, 10, 11),
        ("b", "remove", 1, False, 12, 13),
    ) == (LINEARIZABLE, None)


def test_set_a_forgotten_add() -> None:
    assert verdict(
        SetModel(),
        ("a", "add", 1, True, 0, 1),
        ("b", "contains", 1, False, 2, 3),
    ) == (NOT, 1)


def test_set_an_add_that_says_new_twice() -> None:
    assert verdict(
        SetModel(),
        ("a", "add", 1, True, 0, 5),
        ("b", "add", 1, True, 1, 6),
    ) == (NOT, 1)


# --- mutex ------------------------------------------------------------------------------------


def test_mutex_grants_one_at_a_time_with_growing_tokens() -> None:
    assert verdict(
        MutexModel(),
        ("a", "acquire", None, 1, 0, 1),
        ("b", "acquire", None, 2, 0, 5),  # waited for a's release
        ("a", "release", 1, None, 2, 3),
        ("b", "release", 2, None, 6, 7),
        ("a", "acquire", None, 9, 8, 9),
    ) == (LINEARIZABLE, None)


def test_mutex_a_double_grant() -> None:
    assert verdict(
        MutexModel(),
        ("a", "acquire", None, 1, 0, 1),
        ("b", "acquire", None, 2, 2, 3),
        ("a", "release", 1, None, 4, 5),
    ) == (NOT, 1)


def test_mutex_a_token_that_goes_back() -> None:
    assert verdict(
        MutexModel(),
        ("a", "acquire", None, 5, 0, 1),
        ("a", "release", 5, None, 2, 3),
        ("b", "acquire", None, 4, 4, 5),
    ) == (NOT, 2)


def test_mutex_a_release_of_a_grant_not_held() -> None:
    assert verdict(MutexModel(), ("a", "release", 3, None, 0, 1)) == (NOT, 0)


def test_mutex_a_lost_release_may_free_the_lock() -> None:
    assert verdict(
        MutexModel(),
        ("a", "acquire", None, 1, 0, 1),
        ("a", "release", 1, None, 2, 3, UNKNOWN),
        ("b", "acquire", None, 2, 4, 5),
    ) == (LINEARIZABLE, None)


def test_mutex_a_lost_acquire_holds_no_one_back() -> None:
    assert verdict(
        MutexModel(),
        ("a", "acquire", None, None, 0, 1, UNKNOWN),
        ("b", "acquire", None, 2, 4, 5),
    ) == (LINEARIZABLE, None)
    model = MutexModel()
    lost = history(("a", "acquire", None, None, 0, 1, UNKNOWN)).operations()[0]
    assert model.step(model.initial(), lost) == (True, ("?", None))


# --- what a model refuses ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "row", "why"),
    [
        (CounterModel(), ("a", "increment", None, 1, 0, 1), "knows only add, read"),
        (CounterModel(), ("a", "add", "1", 1, 0, 1), "add takes an int"),
        (CounterModel(), ("a", "read", None, "7", 0, 1), "read returns an int"),
        (RegisterModel(), ("a", "write", [1], None, 0, 1), "not hashable"),
        (VersionedRegisterModel(), ("a", "read", None, b"x", 0, 1), r"\(value, version\)"),
        (VersionedRegisterModel(), ("a", "cas", b"x", True, 0, 1), r"\(version, value\)"),
        (VersionedRegisterModel(), ("a", "cas", (0, b"x"), 1, 0, 1), "True .* or False"),
        (QueueModel(), ("a", "put", None, None, 0, 1), "None is what a take"),
        (QueueModel(priorities=True), ("a", "put", "x", None, 0, 1), r"\(priority, item\)"),
        (SetModel(), ("a", "read", None, 3, 0, 1), "iterable"),
        (MutexModel(), ("a", "acquire", None, "t", 0, 1), "fencing token"),
        (MutexModel(), ("a", "release", None, None, 0, 1), "release takes"),
    ],
)
def test_an_operation_the_model_does_not_know_is_refused_by_name(
    model: SequentialModel[Any], row: Row, why: str
) -> None:
    h = history(row)
    with pytest.raises(UnknownOperationError, match=why) as err:
        check(h, model)
    assert err.value.operation == h.operations()[0]
    assert f"{model.name} does not know operation 0 of a" in str(err.value)
