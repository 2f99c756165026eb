"""QueueSharder's threshold check as Curator makes it, decided over plain data (no server):
which shards stay preferred for puts, when the leader adds a shard, when it may not."""

from __future__ import annotations

import pytest

from aiocoord import BadArgumentsError, QueueSharderPolicies
from aiocoord.errors import InvalidTypeError
from aiocoord.recipes.queue_sharder import decide_shards

POLICIES = QueueSharderPolicies(new_queue_threshold=10, max_queues=3)


def test_a_shard_at_the_threshold_leaves_the_preferred_set_and_the_leader_adds_one() -> None:
    decision = decide_shards(
        {"/q/a": 10, "/q/b": 2}, {"/q/a", "/q/b"}, leader=True, shard_count=2, policies=POLICIES
    )
    assert decision.preferred == {"/q/b"}
    assert (decision.add_shard, decision.at_max, decision.largest) == (True, False, 10)


def test_a_follower_adds_no_shard() -> None:
    decision = decide_shards({"/q/a": 50}, {"/q/a"}, leader=False, shard_count=1, policies=POLICIES)
    assert decision.preferred == frozenset()
    assert (decision.add_shard, decision.at_max) == (False, False)


def test_between_half_and_the_threshold_a_shard_keeps_its_place() -> None:
    sizes = {"/q/a": 7, "/q/b": 7}
    decision = decide_shards(sizes, {"/q/a"}, leader=True, shard_count=2, policies=POLICIES)
    assert decision.preferred == {"/q/a"}  # b was not preferred and is not at half (5) yet
    assert not decision.add_shard
    drained = decide_shards(
        {"/q/b": 5}, decision.preferred, leader=True, shard_count=2, policies=POLICIES
    )
    assert drained.preferred == {"/q/a", "/q/b"}  # at half: preferred again


def test_at_max_queues_the_leader_adds_none_and_says_so() -> None:
    sizes = {"/q/a": 10, "/q/b": 10, "/q/c": 11}
    decision = decide_shards(sizes, set(sizes), leader=True, shard_count=3, policies=POLICIES)
    assert decision.preferred == frozenset()
    assert (decision.add_shard, decision.at_max, decision.largest) == (False, True, 11)


def test_policies_default_to_curators_and_refuse_what_curator_refuses() -> None:
    default = QueueSharderPolicies()
    assert (default.new_queue_threshold, default.threshold_check_interval, default.max_queues) == (
        10_000,
        30.0,
        10,
    )
    with pytest.raises(BadArgumentsError):
        QueueSharderPolicies(new_queue_threshold=0)
    with pytest.raises(BadArgumentsError):
        QueueSharderPolicies(max_queues=-1)
    with pytest.raises(BadArgumentsError):
        QueueSharderPolicies(threshold_check_interval=0)
    with pytest.raises(InvalidTypeError):
        QueueSharderPolicies(new_queue_threshold=1.5)  # type: ignore[arg-type]
