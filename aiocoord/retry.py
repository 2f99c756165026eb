"""Retry policies for operations that are safe to repeat after a connection loss.

A policy is an iterable of sleeps: :meth:`RetryPolicy.delays` yields how long to wait before
each retry and stops when the policy gives up. The client applies a policy only to idempotent
reads, version-checked writes and protected creates; a plain create, delete or set whose reply
was lost is never sent twice, since it may have been applied.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

from aiocoord._validation import is_finite
from aiocoord.errors import BadArgumentsError, InvalidTypeError

__all__ = ["ExponentialBackoff", "NoRetry", "RetryNTimes", "RetryPolicy", "RetryUntilElapsed"]


def _number(value: object, name: str, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTypeError(f"{name} must be a number, not {type(value).__name__}")
    # NaN passes every comparison and inf makes endless sleeps or retries: refuse both.
    if not is_finite(value) or value < minimum:
        raise BadArgumentsError(f"{name} must be a finite number >= {minimum}, got {value!r}")
    return float(value)


class RetryPolicy:
    """Base class: yields the sleep before each retry; stops to give up."""

    def delays(self) -> Iterator[float]:
        """A fresh iterator of sleeps for one operation."""
        raise NotImplementedError


class NoRetry(RetryPolicy):
    """Never retry."""

    def delays(self) -> Iterator[float]:
        return iter(())

    def __repr__(self) -> str:
        return "NoRetry()"


class RetryNTimes(RetryPolicy):
    """Retry ``n`` times, sleeping ``sleep`` seconds before each retry."""

    def __init__(self, n: int, sleep: float = 0.1) -> None:
        self.n = int(_number(n, "n", 0))
        self.sleep = _number(sleep, "sleep", 0)

    def delays(self) -> Iterator[float]:
        for _ in range(self.n):
            yield self.sleep

    def __repr__(self) -> str:
        return f"RetryNTimes({self.n}, sleep={self.sleep})"


class RetryUntilElapsed(RetryPolicy):
    """Retry until ``max_elapsed`` seconds passed since the first attempt."""

    def __init__(self, max_elapsed: float, sleep: float = 0.1) -> None:
        self.max_elapsed = _number(max_elapsed, "max_elapsed", 0)
        self.sleep = _number(sleep, "sleep", 0)

    def delays(self) -> Iterator[float]:
        end = time.monotonic() + self.max_elapsed
        while time.monotonic() + self.sleep <= end:
            yield self.sleep

    def __repr__(self) -> str:
        return f"RetryUntilElapsed({self.max_elapsed}, sleep={self.sleep})"


class ExponentialBackoff(RetryPolicy):
    """Sleep ``base * 2**i`` (jittered, capped at ``max_sleep``) up to ``max_retries`` times."""

    def __init__(self, base: float = 0.05, max_retries: int = 10, max_sleep: float = 2.0) -> None:
        self.base = _number(base, "base", 0)
        self.max_retries = int(_number(max_retries, "max_retries", 0))
        self.max_sleep = _number(max_sleep, "max_sleep", 0)

    def delays(self) -> Iterator[float]:
        for i in range(self.max_retries):
            cap = min(self.base * (2**i), self.max_sleep)
            yield cap * (0.5 + random.random() / 2)

    def __repr__(self) -> str:
        return f"ExponentialBackoff({self.base}, {self.max_retries}, {self.max_sleep})"
