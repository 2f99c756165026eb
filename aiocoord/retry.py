"""Retry policies for operations that are safe to repeat after a connection loss.

A policy is an iterable of sleeps: :meth:`RetryPolicy.delays` yields how long to wait before
each retry and stops when the policy gives up. The client applies a policy only to idempotent
reads, version-checked writes and protected creates; a plain create, delete or set whose reply
was lost is never sent twice, since it may have been applied.

:func:`call_with_retry` (and :meth:`Client.call_with_retry <aiocoord.Client.call_with_retry>`)
applies a policy to the caller's own code, as kazoo's ``client.retry(fn)`` and Curator's
``RetryLoop`` do: the whole of ``op`` runs again after a connection loss or an operation
timeout, never after any other error.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from aiocoord._deadline import timed_out, wait_at_most
from aiocoord._validation import is_finite, validate_timeout
from aiocoord.errors import (
    BadArgumentsError,
    ConnectionLossError,
    InvalidTypeError,
    OperationTimeoutError,
)

__all__ = [
    "RETRYABLE_ERRORS",
    "ExponentialBackoff",
    "NoRetry",
    "RetryNTimes",
    "RetryPolicy",
    "RetryUntilElapsed",
    "call_with_retry",
]

T = TypeVar("T")

#: What :func:`call_with_retry` retries on: the request may not have reached the server, or
#: its answer was lost (ConnectionLossError, NotSentError included), or the server gave up on
#: it (OperationTimeoutError). Every other error is the operation's answer and is raised.
RETRYABLE_ERRORS: tuple[type[Exception], ...] = (ConnectionLossError, OperationTimeoutError)


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
        """A fresh iterator of sleeps for one operation, asked for as the operation starts
        (before its first attempt)."""
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
        #: how many retries after the first attempt (0: none)
        self.n: int = int(_number(n, "n", 0))
        #: the sleep before each retry, in seconds
        self.sleep: float = _number(sleep, "sleep", 0)

    def delays(self) -> Iterator[float]:
        for _ in range(self.n):
            yield self.sleep

    def __repr__(self) -> str:
        return f"RetryNTimes({self.n}, sleep={self.sleep})"


class RetryUntilElapsed(RetryPolicy):
    """Retry until ``max_elapsed`` seconds passed since the first attempt."""

    def __init__(self, max_elapsed: float, sleep: float = 0.1) -> None:
        #: seconds, counted from the first attempt, within which retries are made: no retry
        #: is made whose sleep would end after them
        self.max_elapsed: float = _number(max_elapsed, "max_elapsed", 0)
        #: the sleep before each retry, in seconds
        self.sleep: float = _number(sleep, "sleep", 0)

    def delays(self) -> Iterator[float]:
        # Taken now, as the operation starts (a generator's body would first run after the
        # first failure, leaving the first attempt's time out of the budget).
        return self._until(time.monotonic() + self.max_elapsed)

    def _until(self, end: float) -> Iterator[float]:
        while time.monotonic() + self.sleep <= end:
            yield self.sleep

    def __repr__(self) -> str:
        return f"RetryUntilElapsed({self.max_elapsed}, sleep={self.sleep})"


class ExponentialBackoff(RetryPolicy):
    """Sleep ``base * 2**i`` (jittered, capped at ``max_sleep``) up to ``max_retries`` times."""

    def __init__(self, base: float = 0.05, max_retries: int = 10, max_sleep: float = 2.0) -> None:
        #: the sleep before the first retry, in seconds, doubled for each retry after it
        #: (then jittered: each sleep is between half of it and all of it)
        self.base: float = _number(base, "base", 0)
        #: how many retries after the first attempt (0: none)
        self.max_retries: int = int(_number(max_retries, "max_retries", 0))
        #: the cap on a sleep before jitter, in seconds
        self.max_sleep: float = _number(max_sleep, "max_sleep", 0)

    def delays(self) -> Iterator[float]:
        for i in range(self.max_retries):
            cap = min(self.base * (2**i), self.max_sleep)
            yield cap * (0.5 + random.random() / 2)

    def __repr__(self) -> str:
        return f"ExponentialBackoff({self.base}, {self.max_retries}, {self.max_sleep})"


async def call_with_retry(
    op: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy | None = None,
    timeout: float | None = None,
) -> T:
    """``await op()``, again after each connection loss or operation timeout while ``policy``
    allows; its result.

    :param op: a function of no arguments returning an awaitable (a coroutine function, a
        ``lambda: client.create(...)``, a ``functools.partial``); each attempt calls it anew.
    :param policy: the sleeps between attempts (default: :class:`ExponentialBackoff()`).
    :param timeout: seconds for all attempts and sleeps together; None: no limit.
    :returns: what the first attempt that did not fail with a :data:`RETRYABLE_ERRORS` error
        returned.
    :raises aiocoord.TimeoutError: ``timeout`` passed (the attempt then running is
        cancelled), or the policy's next sleep would end after it; chained to the last
        error, if any.
    :raises ConnectionLossError: (or OperationTimeoutError) when the policy gives up.
    :raises InvalidTypeError: ``op`` is not callable, returns no awaitable, or ``policy`` is
        not a :class:`RetryPolicy`; BadArgumentsError for a bad ``timeout``. Both before
        ``op`` is first called.

    Any other error ``op`` raises ends the loop at once. An attempt that lost its connection
    may have been applied: ``op`` is safe to repeat only if it is idempotent, or checks what
    an earlier attempt did (a versioned ``set``, a create that tolerates NodeExistsError).
    The client already retries its idempotent reads itself; this is for the caller's
    sequences of calls and for the writes the client does not repeat on its own.

    Cancellation: cancelling the caller cancels the attempt or the sleep in progress and
    nothing else runs afterwards; like any cancelled call, an attempt's write may have
    reached the server.
    """
    if not callable(op):
        raise InvalidTypeError(f"op must be a callable of no arguments, not {type(op).__name__}")
    if policy is None:
        policy = ExponentialBackoff()
    elif not isinstance(policy, RetryPolicy):
        raise InvalidTypeError(f"policy must be a RetryPolicy, not {type(policy).__name__}")
    limit = validate_timeout(timeout)
    loop = asyncio.get_running_loop()
    deadline = None if limit is None else loop.time() + limit
    delays = policy.delays()
    while True:
        attempt = op()
        if not inspect.isawaitable(attempt):
            raise InvalidTypeError(
                f"op must return an awaitable (a coroutine), not {type(attempt).__name__}"
            )
        try:
            if deadline is None:
                return await attempt
            try:
                return await wait_at_most(attempt, max(deadline - loop.time(), 0.0))
            except TimeoutError:
                # Only our own deadline: an attempt's aiocoord.TimeoutError is an answer.
                if loop.time() < deadline:
                    raise
                raise timed_out("the operation did not succeed", limit) from None
        except RETRYABLE_ERRORS as exc:
            delay = next(delays, None)
            if delay is None:
                raise
            if deadline is not None and loop.time() + delay >= deadline:
                raise timed_out("the operation did not succeed", limit) from exc
            await asyncio.sleep(delay)
