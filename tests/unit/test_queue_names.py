"""The node names of the issue-18 queues, as Curator writes and reads them: DelayQueue's
``queue-|<hex epoch>|<seq>`` and IdQueue's ``queue-|<id>|<seq>``, with Curator's readings of
malformed names."""

from __future__ import annotations

import pytest

from aiocoord.errors import BadArgumentsError, InvalidTypeError
from aiocoord.recipes.delay_queue import DelayQueue, _epoch_of
from aiocoord.recipes.id_queue import _fix_id, _id_of


def test_delay_tag_is_curators_epoch_to_string() -> None:
    assert DelayQueue._tag(1) == "|00000001|"
    assert DelayQueue._tag(0) == "|00000000|"
    assert DelayQueue._tag(1_700_000_000_000) == "|18BCFE56800|"  # more than 8 digits
    assert DelayQueue._tag(2**63 - 1) == "|7FFFFFFFFFFFFFFF|"


@pytest.mark.parametrize("bad", [-1, 2**63])
def test_delay_tag_refuses_times_outside_a_java_long(bad: int) -> None:
    with pytest.raises(BadArgumentsError):
        DelayQueue._tag(bad)


@pytest.mark.parametrize("bad", [1.0, "1", None, True])
def test_delay_tag_refuses_non_ints(bad: object) -> None:
    with pytest.raises(InvalidTypeError):
        DelayQueue._tag(bad)


def test_epoch_is_read_as_curator_reads_it() -> None:
    assert _epoch_of("queue-|18BCFE56800|0000000003") == 1_700_000_000_000
    assert _epoch_of("queue-|00000000|0000000003") == 0
    # No time, an empty one or one that is not hex: due at once (0), as in Curator.
    for name in ("queue-0000000003", "queue-||0000000003", "queue-|XYZ|0000000003", "|1|"):
        assert _epoch_of(name) == 0


def test_ids_are_written_and_read_as_curator_does() -> None:
    assert _fix_id("a/b|c") == "a_b_c"
    assert _id_of("queue-|a_b_c|0000000007") == "a_b_c"
    assert _id_of("queue-0000000007") == "queue-0000000007"  # no id: the whole name
    with pytest.raises(BadArgumentsError):
        _fix_id("")
    with pytest.raises(InvalidTypeError):
        _fix_id(b"id")
