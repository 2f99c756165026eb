"""The referees themselves: each one must catch the violation it is there for (a referee that
cannot fail proves nothing), and tolerate only what a forced expiry explains."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from chaoslib import (
    CacheChecker,
    Chaos,
    CounterLedger,
    MutexReferee,
    QueueLedger,
    RWReferee,
    SemaphoreReferee,
    client_report,
    watched_paths,
)

from aiocoord import Client, Stat, State, TreeCache
from aiocoord._session.servers import Server
from aiocoord._session.session import Session
from aiocoord.client import ChildData
from aiocoord.recipes.cache import CacheEventType, NodeEvent


@pytest.fixture
def log() -> Chaos:
    return Chaos(seed=1, name="referees")


def test_mutex_referee_catches_overlap_and_token_regression(log: Chaos) -> None:
    ref = MutexReferee(log, "m")
    ref.enter("a", 10, session=1)
    ref.enter("b", 11, session=2)  # a is still inside
    ref.exit("a")
    ref.exit("b")
    ref.enter("c", 5, session=3)  # token went back
    ref.exit("c")
    ref.exit("c")  # left twice
    kinds = [v.invariant for v in log.violations]
    assert kinds == ["m: mutual exclusion", "m: fencing", "m: mutual exclusion"]
    with pytest.raises(AssertionError, match="AIOCOORD_CHAOS_SEED=1"):
        log.assert_clean()


def test_overlap_with_a_forcibly_expired_holder_is_counted_not_failed(log: Chaos) -> None:
    ref = MutexReferee(log, "m")
    log.force_expired.add(1)
    ref.enter("a", 10, session=1)
    ref.enter("b", 11, session=2)  # a's session was expired by force: tolerated
    assert log.violations == []
    assert log.events["forced-expiry overlaps (fenced)"] == 1
    ref.enter("c", 9, session=3)  # b was not expired, and the token went back
    assert [v.invariant for v in log.violations] == ["m: mutual exclusion", "m: fencing"]


def test_rw_referee_catches_readers_with_a_writer(log: Chaos) -> None:
    ref = RWReferee(log, "rw")
    ref.enter("r1", False, None)
    ref.enter("r2", False, None)
    assert log.violations == []
    ref.enter("w", True, 5)
    ref.exit("w", True)
    ref.enter("w2", True, 4)
    assert [v.invariant for v in log.violations] == [
        "rw: write exclusion",
        "rw: write exclusion",
        "rw: fencing",
    ]


def test_semaphore_referee_catches_too_many_leases(log: Chaos) -> None:
    ref = SemaphoreReferee(log, "s", 2)
    ref.enter("a")
    ref.enter("b")
    assert log.violations == []
    ref.enter("c")
    assert [v.invariant for v in log.violations] == ["s: lease bound"]


def test_semaphore_referee_tolerates_an_excess_of_force_expired_holders(log: Chaos) -> None:
    # Two hold, one of them force-expired and not told yet: a third may be granted the
    # expired one's lease. The bound holds for the live holders, whichever one expired.
    ref = SemaphoreReferee(log, "s", 2)
    ref.enter("a", 1)
    ref.enter("b", 2)
    log.force_expired.add(1)
    ref.enter("c", 3)
    assert log.violations == []
    assert log.events["forced-expiry overlaps"] == 1
    ref.enter("d", 4)  # a third live holder
    assert [v.invariant for v in log.violations] == ["s: lease bound"]


def test_counter_ledger_bounds_the_value(log: Chaos) -> None:
    ledger = CounterLedger()
    ledger.certain, ledger.uncertain = 10, 2
    for value in (10, 11, 12):
        ledger.check(log, value)
    assert log.violations == []
    ledger.check(log, 9)  # an acknowledged increment lost
    ledger.check(log, 13)  # counted twice
    assert len(log.violations) == 2


def test_queue_ledger_catches_duplicates_phantoms_and_loss(log: Chaos) -> None:
    ledger = QueueLedger()
    ledger.put_ok = {b"a", b"b", b"c"}
    ledger.put_uncertain = {b"d"}
    ledger.taken.update([b"a", b"x"])
    ledger.take(b"b", "take-1 queue-0000000007 ack", 12.5)
    ledger.take(b"b", "drain queue-0000000007 ack")
    ledger.check(log)
    assert [v.invariant for v in log.violations] == [
        "queue: no duplicates",
        "queue: no phantoms",
        "queue: no loss",
    ]
    # A duplicate's story: who took it, from which node, and when.
    assert "take-1 queue-0000000007 ack@12.500s" in log.violations[0].detail
    assert "drain queue-0000000007 ack" in log.violations[0].detail


def test_wchc_parser() -> None:
    text = "0x100\n\t/a\n\t/b\n0x200\n\t/c\n"
    assert watched_paths(text) == {"0x100": {"/a", "/b"}, "0x200": {"/c"}}


def _child(path: str, czxid: int, mzxid: int) -> ChildData:
    stat = Stat(czxid, mzxid, 0, 0, 0, 0, 0, 0, 0, 0, czxid)
    return ChildData(path, b"", stat)


async def test_cache_checker_catches_inconsistent_events(log: Chaos) -> None:
    # A cache that is never started: only its event stream's shape matters here.
    client = Client(Session([Server("127.0.0.1", 1)]))
    checker = CacheChecker(log, "tree", TreeCache(client, "/t"))
    added, updated, removed = (
        {CacheEventType.NODE_ADDED},
        {CacheEventType.NODE_UPDATED},
        {CacheEventType.NODE_REMOVED},
    )

    def apply(kind: CacheEventType, data: ChildData | None, path: str = "/t/a") -> None:
        checker._apply(NodeEvent(kind, path, data), added, updated, removed)

    apply(CacheEventType.NODE_ADDED, _child("/t/a", 5, 5))
    apply(CacheEventType.NODE_UPDATED, _child("/t/a", 5, 7))
    assert log.violations == []
    apply(CacheEventType.NODE_UPDATED, _child("/t/a", 5, 6))  # mzxid went back
    apply(CacheEventType.NODE_ADDED, _child("/t/a", 5, 8))  # added twice
    apply(CacheEventType.NODE_REMOVED, None, "/t/b")  # removed, never added
    assert len(log.violations) == 3
    assert checker.replayed.keys() == {"/t/a"}


def test_a_force_expired_grant_heard_late_is_tolerated_only_with_an_older_token(
    log: Chaos,
) -> None:
    ref = MutexReferee(log, "m")
    ref.enter("fresh", 20, session=2)
    log.force_expired.add(1)
    ref.enter("stale", 10, session=1)  # granted before its forced expiry, heard of late
    assert log.violations == []
    assert log.events["forced-expiry overlaps (fenced)"] == 1
    ref.exit("stale")
    ref.enter("newer-stale", 30, session=1)  # a force-expired grant with a newer token
    assert [v.invariant for v in log.violations] == ["m: mutual exclusion"]
    ref.exit("newer-stale")
    ref.enter("third", 5, session=3)  # not explained by anything
    assert [v.invariant for v in log.violations][1:] == ["m: mutual exclusion", "m: fencing"]


def test_client_report_names_a_stalled_clients_state() -> None:
    # Session.pending_count is a property: the report reads it, never calls it.
    session = SimpleNamespace(pending_count=3)
    client: Any = SimpleNamespace(
        state=State.SUSPENDED, session_id=0xAB, session=session, pending_deletes=lambda: 1
    )
    report = client_report("never-tracked", client)  # STATE_HISTORY is process-wide
    assert report == "never-tracked: suspended 0xab, in flight 3, background 1, transitions []"
