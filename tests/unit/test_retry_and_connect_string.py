"""Retry policies and connect-string parsing."""

from __future__ import annotations

import itertools
import re
from types import SimpleNamespace

import pytest

import aiocoord.retry
from aiocoord import ExponentialBackoff, NoRetry, RetryNTimes, RetryUntilElapsed
from aiocoord._session.servers import Server, parse_connect_string
from aiocoord.errors import BadArgumentsError, InvalidTypeError


def test_policies_yield_bounded_sleeps() -> None:
    assert list(NoRetry().delays()) == []
    assert list(RetryNTimes(3, 0.2).delays()) == [0.2, 0.2, 0.2]
    sleeps = list(ExponentialBackoff(0.1, 5, 0.3).delays())
    assert len(sleeps) == 5
    assert all(0 < s <= 0.3 for s in sleeps)
    assert list(RetryUntilElapsed(0.0, 0.1).delays()) == []


def test_retry_until_elapsed_counts_from_the_first_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Curator's RetryUntilElapsed measures from the start of the operation: a first attempt
    # that took (almost) the whole budget before it failed leaves no room for a retry.
    now = [100.0]
    monkeypatch.setattr(aiocoord.retry, "time", SimpleNamespace(monotonic=lambda: now[0]))
    delays = RetryUntilElapsed(1.0, 0.1).delays()  # made as the operation starts
    now[0] += 0.95  # the first attempt fails after 0.95 s
    assert list(itertools.islice(delays, 3)) == []
    delays = RetryUntilElapsed(1.0, 0.1).delays()
    now[0] += 0.5
    assert list(itertools.islice(delays, 3)) == [0.1, 0.1, 0.1]  # time stands still here


def test_policies_refuse_bad_parameters() -> None:
    with pytest.raises(BadArgumentsError):
        RetryNTimes(-1)
    with pytest.raises(InvalidTypeError):
        ExponentialBackoff(base="fast")  # type: ignore[arg-type]


def test_connect_string_with_chroot_and_ipv6() -> None:
    servers, chroot = parse_connect_string("a:1,b:2,[::1]:3,c,fe80::1/app/x")
    assert servers == [
        Server("a", 1),
        Server("b", 2),
        Server("::1", 3),
        Server("c", 2181),
        Server("fe80::1", 2181),
    ]
    assert chroot == "/app/x"
    assert parse_connect_string("h:5")[1] == ""


def test_connect_string_errors() -> None:
    with pytest.raises(BadArgumentsError):
        parse_connect_string(" , /x")
    with pytest.raises(InvalidTypeError):
        parse_connect_string(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        (":2181", "':2181'"),
        ("[::1", "'[::1'"),
        ("a:b:c", "'a:b:c'"),
        ("host:99999", "'99999'"),
        ("", "''"),
        ("host:2181/", "empty"),
        ("host:2181/app/", "'/app/'"),
        ("[::1]x", "'x'"),
        ("[nope]:1", "'nope'"),
        ("ho st:1", "'ho st'"),
    ],
)
def test_malformed_connect_strings_are_refused_at_once_quoting_the_bad_part(
    text: str, quoted: str
) -> None:
    with pytest.raises(BadArgumentsError, match=re.escape(quoted)):
        parse_connect_string(text)
