"""call_with_retry (issue 28): kazoo's ``client.retry(fn)`` / Curator's RetryLoop for the
caller's own code, with aiocoord's retry policies, against a real server behind a fault
proxy: it retries a lost reply, never another error, keeps to its deadline and stops at once
when cancelled."""

from __future__ import annotations

import asyncio

import pytest
from support import Factory

import aiocoord
from aiocoord import Client, NoRetry, RetryNTimes
from aiocoord.errors import (
    BadArgumentsError,
    ConnectionLossError,
    InvalidTypeError,
    NodeExistsError,
    NoNodeError,
)
from aiocoord.testing import FaultProxy


async def test_a_lost_reply_runs_the_whole_op_again(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string, retry=RetryNTimes(5, sleep=0.05))
    attempts: list[str] = []

    async def create_once() -> str:
        # Written as a caller would: a plain create is not retried by the client, so the
        # op checks what a lost earlier attempt did.
        attempts.append("try")
        try:
            return await client.create("/job", b"payload")
        except NodeExistsError:
            return "/job"

    dropped = zk_fault_proxy.drop_after_request()
    assert await client.call_with_retry(create_once, timeout=20) == "/job"
    assert (await dropped).opcode in (1, 15)  # a create's reply was the one lost
    assert len(attempts) == 2
    data, _ = await client.get("/job")
    assert data == b"payload"


async def test_no_retry_on_an_error_that_is_the_answer(zk_client: Client) -> None:
    attempts = 0

    async def read_missing() -> bytes:
        nonlocal attempts
        attempts += 1
        data, _ = await zk_client.get("/missing")
        return data

    with pytest.raises(NoNodeError):
        await aiocoord.call_with_retry(read_missing, policy=RetryNTimes(5, sleep=0))
    assert attempts == 1


async def test_the_policy_giving_up_raises_the_connection_loss(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string)
    attempts = 0

    async def create() -> str:
        nonlocal attempts
        attempts += 1
        return await client.create("/once")

    dropped = zk_fault_proxy.drop_after_request()
    with pytest.raises(ConnectionLossError):
        await aiocoord.call_with_retry(create, policy=NoRetry())
    await dropped
    assert attempts == 1
    assert await client.exists("/once") is not None  # applied: the reply alone was lost


async def test_the_deadline_ends_an_attempt_that_hangs(
    zk_connect: Factory, zk_fault_proxy: FaultProxy
) -> None:
    client = await zk_connect(zk_fault_proxy.connect_string)
    zk_fault_proxy.blackhole()
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        with pytest.raises(aiocoord.TimeoutError):
            await client.call_with_retry(lambda: client.create("/late"), timeout=0.5)
        took = loop.time() - started
    finally:
        zk_fault_proxy.heal()
    # Well before the 10 s session's connection-loss detection would have ended it.
    assert 0.5 <= took < 3


async def test_a_sleep_past_the_deadline_is_not_taken(zk_client: Client) -> None:
    attempts = 0

    async def lost() -> None:
        nonlocal attempts
        attempts += 1
        raise ConnectionLossError("the reply was lost")

    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(aiocoord.TimeoutError) as info:
        await aiocoord.call_with_retry(lost, policy=RetryNTimes(3, sleep=60), timeout=5)
    assert loop.time() - started < 1
    assert attempts == 1
    assert isinstance(info.value.__cause__, ConnectionLossError)


async def test_cancelling_during_the_sleep_stops_at_once(zk_client: Client) -> None:
    first_failed = asyncio.Event()
    attempts = 0

    async def lost() -> None:
        nonlocal attempts
        attempts += 1
        first_failed.set()
        raise ConnectionLossError("the reply was lost")

    task = asyncio.ensure_future(aiocoord.call_with_retry(lost, policy=RetryNTimes(3, sleep=60)))
    # The op fails and the task goes on to its sleep in one step: it sleeps by now.
    await first_failed.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 2)
    assert attempts == 1


async def test_bad_arguments_are_refused_before_op_runs(zk_client: Client) -> None:
    called = 0

    async def op() -> None:
        nonlocal called
        called += 1

    with pytest.raises(InvalidTypeError):
        await aiocoord.call_with_retry("not callable")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        await aiocoord.call_with_retry(op, policy=3)  # type: ignore[arg-type]
    with pytest.raises(BadArgumentsError):
        await aiocoord.call_with_retry(op, timeout=-1)
    with pytest.raises(BadArgumentsError):
        await zk_client.call_with_retry(op, timeout=float("nan"))
    with pytest.raises(InvalidTypeError):
        await aiocoord.call_with_retry(lambda: 3)  # type: ignore[arg-type,return-value]
    assert called == 0
