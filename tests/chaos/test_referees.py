"""The referees themselves: each one must catch the violation it is there for (a referee that
cannot fail proves nothing), and tolerate only what a forced expiry explains."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest
from chaos_hostile import PAYLOAD_KINDS, hostile_payload, queue_items
from chaoslib import (
    CacheChecker,
    Chaos,
    CounterLedger,
    LeaderReferee,
    MutexReferee,
    QueueLedger,
    RWReferee,
    SemaphoreReferee,
    ServiceCacheChecker,
    client_report,
    watched_paths,
)

from aiocoord import Client, LeadershipChange, LeadershipTerm, Stat, State, StateChange, TreeCache
from aiocoord._json import ForeignDataError, load_foreign
from aiocoord._session.servers import Server
from aiocoord._session.session import Session
from aiocoord.client import ChildData
from aiocoord.recipes.cache import CacheEventType, NodeEvent
from aiocoord.recipes.discovery import ServiceDiscovery
from aiocoord.recipes.queue import unframe


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


def test_a_newer_stale_holder_over_an_older_stale_holder_is_fenced_not_failed(
    log: Chaos,
) -> None:
    # Seen in the mix (seed 3494539628): a leader's session was expired by force, the next
    # contender was granted, then its session was expired by force too before it heard of its
    # grant. Both are stale; the newcomer's token is the newer, so fencing holds.
    ref = MutexReferee(log, "m")
    ref.enter("a", 10, session=1)
    log.expiring(1)
    log.expiring(2)
    ref.enter("b", 11, session=2)
    assert log.violations == []
    assert log.events["forced-expiry overlaps (fenced)"] == 1
    # A stale newcomer over a holder whose session lives is still a violation.
    ref.exit("a")
    ref.exit("b")
    ref.enter("d", 20, session=4)
    log.expiring(3)
    ref.enter("c", 21, session=3)
    assert [v.invariant for v in log.violations] == ["m: mutual exclusion"]
    assert "not older" in log.violations[0].detail


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
    assert log.events["forced-expiry overlaps"] == 1  # the lease (no token)
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
        state=State.SUSPENDED, session_id=0xAB, _session=session, pending_deletes=lambda: 1
    )
    report = client_report("never-tracked", client)  # STATE_HISTORY is process-wide
    assert report == "never-tracked: suspended 0xab, in flight 3, background 1, transitions []"


# --- the forced expiry while blackholed: tolerated only until the holder is told ----------


def _told(log: Chaos, session: int, state: State = State.SUSPENDED) -> None:
    """The client of ``session`` reports ``state`` (what its holders hear); its holders'
    workers get no time to leave (the grace is checked on its own below)."""
    log.leave_grace = 0.0
    log.on_state(StateChange(state, State.CONNECTED, session))


def test_a_told_holder_still_on_its_workers_books_is_given_the_leave_grace(log: Chaos) -> None:
    # The news and another client's grant are handled in one turn of the loop: the told
    # holder's worker has not run yet to say it left.
    ref = MutexReferee(log, "m")
    ref.enter("a", 10, session=1)
    log.expiring(1)
    log.on_state(StateChange(State.SUSPENDED, State.CONNECTED, 1))
    ref.enter("b", 11, session=2)
    assert log.violations == []
    assert log.events["overlaps with told holders leaving"] == 1
    log.leave_grace = 0.0  # the same overlap once the grace is over
    ref.exit("b")
    ref.enter("c", 12, session=3)
    assert [v.invariant for v in log.violations] == ["m: mutual exclusion"]


def test_an_overlap_with_a_force_expired_holder_is_tolerated_only_until_it_is_told(
    log: Chaos,
) -> None:
    ref = MutexReferee(log, "m")
    ref.enter("a", 10, session=1)
    log.expiring(1)
    ref.enter("b", 11, session=2)  # a's session ended on the server, a has not heard
    assert log.violations == []
    assert log.events["forced-expiry overlaps (fenced)"] == 1
    ref.exit("b")
    _told(log, 1)  # a's client suspends: a strict holder takes that for a loss
    ref.enter("c", 12, session=3)  # a was told and is still inside
    assert [v.invariant for v in log.violations] == ["m: mutual exclusion"]
    assert "had been told" in log.violations[0].detail


def test_a_lenient_holder_is_told_by_lost_not_by_suspended(log: Chaos) -> None:
    ref = MutexReferee(log, "m", suspended_is_loss=False)
    ref.enter("a", 10, session=1)
    log.expiring(1)
    _told(log, 1)  # suspended: a lenient holder still believes it holds
    ref.enter("b", 11, session=2)
    assert log.violations == []
    ref.exit("b")
    _told(log, 1, State.LOST)
    ref.enter("c", 12, session=3)
    assert [v.invariant for v in log.violations] == ["m: mutual exclusion"]


def test_a_holder_that_entered_after_its_client_was_told_is_not_told_yet(log: Chaos) -> None:
    # The expiry's attach cuts the client (it suspends, its strict holders lose), the client
    # takes its session back and a task acquires on it; then the close lands.
    ref = MutexReferee(log, "m")
    log.expiring(1)
    _told(log, 1)
    ref.enter("a", 10, session=1)
    ref.enter("b", 11, session=2)
    assert log.violations == []
    assert log.events["forced-expiry overlaps (fenced)"] == 1


def test_a_holder_granted_after_its_client_took_the_session_back_is_untold(log: Chaos) -> None:
    # The same as a newcomer: the attach cut the client, which took its session back; its
    # holder was granted (before the close, in the server's order) and is heard of after the
    # next holder's grant. The report before its grant told it nothing; its token is older.
    ref = MutexReferee(log, "m")
    rw = RWReferee(log, "rw")
    sem = SemaphoreReferee(log, "s", 1)
    log.expiring(1)
    _told(log, 1)
    ref.enter("b", 11, session=2)
    ref.enter("a", 10, session=1)
    rw.enter("w2", True, 11, session=2)
    rw.enter("w1", True, 10, session=1)
    sem.enter("s2", 2)
    sem.enter("s1", 1)
    assert log.violations == []
    assert log.events["forced-expiry overlaps (fenced)"] == 2  # the lock, the writer
    assert log.events["forced-expiry overlaps"] == 1  # the lease (no token)


def test_a_told_force_expired_holder_entering_with_an_older_token_is_a_violation(
    log: Chaos,
) -> None:
    ref = MutexReferee(log, "m")
    ref.enter("fresh", 20, session=2)
    ref.exit("fresh")
    log.expiring(1)
    _told(log, 1, State.LOST)
    ref.enter("stale", 10, session=1)  # told before it entered: no excuse left
    assert [v.invariant for v in log.violations] == ["m: fencing"]


def test_semaphore_excess_of_a_told_force_expired_holder_is_a_violation(log: Chaos) -> None:
    ref = SemaphoreReferee(log, "s", 2)
    ref.enter("a", 1)
    ref.enter("b", 2)
    log.expiring(1)
    _told(log, 1)
    ref.enter("c", 3)  # a was told and has not left
    assert [v.invariant for v in log.violations] == ["s: lease bound"]


def test_rw_writer_overlapping_a_told_force_expired_reader_is_a_violation(log: Chaos) -> None:
    ref = RWReferee(log, "rw")
    ref.enter("r", False, None, session=1)
    log.expiring(1)
    ref.enter("w", True, 5, session=2)  # r not told: tolerated
    assert log.violations == []
    ref.exit("w", True)
    _told(log, 1)
    ref.enter("w2", True, 6, session=3)
    assert [v.invariant for v in log.violations] == ["rw: write exclusion"]


# --- hostile node data ----------------------------------------------------------------------


def test_queue_ledger_counts_hostile_items_and_catches_one_taken_twice(log: Chaos) -> None:
    ledger = QueueLedger()
    ledger.put_ok = {b"a"}
    ledger.hostile = {b"\xff\xfe", b"[[[1]]]"}
    ledger.hostile_nodes = 3
    ledger.take(b"a", "take-1")
    ledger.take(b"\xff\xfe", "take-1")  # a hostile node handed out raw: no phantom
    ledger.check(log)
    assert log.violations == []
    assert log.events["queue: hostile items taken"] == 1
    ledger.take(b"\xff\xfe", "take-3")
    ledger.take(b"never written", "take-3")
    ledger.check(log)
    assert [v.invariant for v in log.violations] == ["queue: no duplicates", "queue: no phantoms"]


class _Stream:
    """A change stream that yields nothing and then ends with ``error`` (or just ends)."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    def __aiter__(self) -> _Stream:
        return self

    async def __anext__(self) -> NodeEvent:
        if self.error is not None:
            raise self.error
        raise StopAsyncIteration


@pytest.mark.parametrize(
    ("error", "invariant"),
    [
        (RecursionError("maximum recursion depth exceeded"), "unexpected error"),
        (None, "t: stream lives"),
    ],
)
async def test_cache_checker_catches_a_stream_that_dies(
    log: Chaos, error: BaseException | None, invariant: str
) -> None:
    # A hostile node that makes a decoder raise must not end a subscriber's stream, whatever
    # the exception (the old checker only saw CoordinationError), nor may it end quietly.
    client = Client(Session([Server("127.0.0.1", 1)]))
    checker = CacheChecker(log, "t", TreeCache(client, "/t"))
    checker._sub = _Stream(error)  # type: ignore[assignment]
    checker.start()
    assert checker._task is not None
    await checker._task
    assert [v.invariant for v in log.violations] == [invariant]


def test_hostile_payloads_are_what_they_claim() -> None:
    rng = random.Random(7)
    seen: set[bytes] = set()
    for serial in range(40):
        kind = PAYLOAD_KINDS[serial % len(PAYLOAD_KINDS)]
        data = hostile_payload(kind, rng, serial)
        assert data not in seen  # unique: a queue item taken twice is told from two nodes
        seen.add(data)
        if kind == "json-deep":
            assert data.count(b"[") + data.count(b'{"a":') >= 1000
            # Too deep for a reader of foreign data (json.loads's own limit differs by
            # Python: 3.11 raises RecursionError, 3.12 parses it).
            with pytest.raises(ForeignDataError):
                load_foreign(data)
        elif kind == "utf8-invalid":
            with pytest.raises(UnicodeDecodeError):
                data.decode()
        elif kind == "truncated-frame":
            assert unframe(data) is None
            assert queue_items(data) == [data]


async def test_service_cache_checker_reports_an_outage_once_and_a_dead_stream(
    log: Chaos, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hostile node: a decoder's RecursionError while the node exists.
    client = Client(Session([Server("127.0.0.1", 1)]))
    cache = ServiceDiscovery(client, "/s").cache("svc")
    checker = ServiceCacheChecker(log, "svc", cache)
    assert checker.serving("now")
    assert log.violations == []

    def broken() -> list[Any]:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(cache, "instances", broken)
    assert not checker.serving("after an event")
    assert not checker.serving("after another")  # the same outage: reported once
    assert [v.invariant for v in log.violations] == ["unexpected error"]
    assert "RecursionError" in log.violations[0].detail
    checker._sub = _Stream(RecursionError("in the stream"))  # type: ignore[assignment]
    checker.start()
    assert checker._task is not None
    await checker._task
    assert [v.invariant for v in log.violations] == ["unexpected error"] * 2


# --- the leader latch: a term starts in the very step of its grant --------------------------


class _Latch:
    """What :class:`LeaderReferee` reads of a latch; :meth:`lead` and :meth:`stop` play its
    listener calls."""

    def __init__(self, identifier: str) -> None:
        self.identifier = identifier
        self.term: LeadershipTerm | None = None
        self._listeners: list[Any] = []

    def add_listener(self, callback: Any) -> None:
        self._listeners.append(callback)

    @property
    def is_leader(self) -> bool:
        return self.term is not None

    @property
    def fencing_token(self) -> int | None:
        return None if self.term is None else self.term.fencing_token

    def lead(self, token: int, session: int) -> None:
        self.term = LeadershipTerm(self.identifier, "/l/n", token, session, 0.0)
        for callback in self._listeners:
            callback(LeadershipChange(True, self.term))

    def stop(self) -> None:
        term, self.term = self.term, None
        for callback in self._listeners:
            callback(LeadershipChange(False, term, "suspended"))


def _leaders(log: Chaos, *names: str) -> list[_Latch]:
    ref = LeaderReferee(log, "latch")
    latches = [_Latch(name) for name in names]
    for latch in latches:
        ref.attach(latch)  # type: ignore[arg-type]  # a stand-in: the referee reads five names
    return latches


def test_leader_referee_catches_two_leaders_and_a_token_regression(log: Chaos) -> None:
    a, b = _leaders(log, "a", "b")
    b.lead(685, session=2)
    a.lead(173, session=4)  # nobody's session was expired: two leaders, the token went back
    assert [v.invariant for v in log.violations] == ["latch: single leader", "latch: fencing"]


def test_a_latch_granted_after_its_client_took_the_session_back_is_untold(log: Chaos) -> None:
    # The mix's seed 2786612530: the forced expiry attaches to c4's session (its client reports
    # SUSPENDED), the client takes the session back and its latch is granted (the node ahead
    # was deleted before the close, in the server's order); then the close ends the session
    # and the next contender leads first. The old report was about an earlier connection: the
    # latch, granted after it, was never told, and its older token is fenced.
    a, b = _leaders(log, "latch-4", "latch-2")
    log.expiring(4)
    _told(log, 4)  # the attach took the connection (long enough ago: no leave grace)
    log.on_state(StateChange(State.CONNECTED, State.SUSPENDED, 4))
    b.lead(685, session=2)
    a.lead(173, session=4)
    assert log.violations == []
    assert log.events["forced-expiry overlaps (fenced)"] == 1


def test_a_latch_told_after_its_grant_may_not_lead_beside_the_next(log: Chaos) -> None:
    # The same, but the report comes after the grant: the latch was told its session is gone,
    # and still leads (past the grace) when the next contender's term starts.
    a, b = _leaders(log, "latch-4", "latch-2")
    log.expiring(4)
    a.lead(173, session=4)
    _told(log, 4)
    b.lead(685, session=2)
    assert [v.invariant for v in log.violations] == ["latch: single leader"]
