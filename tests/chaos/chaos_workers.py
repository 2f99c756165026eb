"""The workload actors: workers (``*_worker``) that drive one recipe in a loop and report to
the referees, starting and stopping them, and the clients' state tracking."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import random
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from chaos_log import FAULT_ERRORS, Chaos
from chaos_referees import CounterLedger, MutexReferee, QueueLedger, RWReferee, SemaphoreReferee

import aiocoord
from aiocoord import (
    AtomicCounter,
    Client,
    Lock,
    Queue,
    ReadWriteLock,
    Semaphore,
    State,
    StateChange,
)
from aiocoord.errors import (
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)


@dataclass
class Worker:
    """A named worker task and whether it should stop after its current operation."""

    name: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    ops: int = 0


def _guard(chaos: Chaos, worker: Worker, exc: BaseException) -> None:
    if isinstance(exc, FAULT_ERRORS):
        chaos.error(exc)
    elif isinstance(exc, ClientClosedError) and worker.stop.is_set():
        pass
    else:
        chaos.unexpected(worker.name, exc)


#: How often a holder holds long (seconds, drawn uniformly): long enough to be inside when its
#: session is expired by force while it hears nothing, so that it must learn of the loss.
LONG_HOLD_SHARE = 0.01
LONG_HOLD = (0.8, 1.5)


def _hold_time(rng: random.Random, hold: tuple[float, float]) -> float:
    """How long to hold this time: mostly drawn from ``hold``, now and then a long hold."""
    if rng.random() < LONG_HOLD_SHARE:
        return rng.uniform(*LONG_HOLD)
    return rng.uniform(*hold)


async def _hold_until_lost(lost: Any, seconds: float) -> None:
    """Stay in the critical section ``seconds``, or until the holding is lost."""
    with contextlib.suppress(asyncio.TimeoutError):
        await lost.wait(seconds)


async def mutex_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    referee: MutexReferee,
    rng: random.Random,
    *,
    hold: tuple[float, float] = (0.0, 0.03),
    acquire_timeout: float = 3.0,
) -> None:
    """Take the lock, hold it a little (until lost at most), release; again and again.

    Alternates ``async with`` (with ``cancel_on_loss``) and explicit acquire/release.
    """
    lock = Lock(client, path, identifier=worker.name, suspended_is_loss=True, cancel_on_loss=True)
    while not worker.stop.is_set():
        try:
            if rng.random() < 0.5:
                async with lock:
                    referee.enter(worker.name, lock.fencing_token, client.session_id)
                    try:
                        await asyncio.sleep(_hold_time(rng, hold))
                    finally:
                        referee.exit(worker.name)
            else:
                try:
                    await lock.acquire(timeout=acquire_timeout)
                except aiocoord.TimeoutError:
                    chaos.op("mutex: timed out")
                    continue
                lost = lock.lost
                referee.enter(worker.name, lock.fencing_token, client.session_id)
                try:
                    await _hold_until_lost(lost, _hold_time(rng, hold))
                finally:
                    referee.exit(worker.name)
                await lock.release()
            chaos.op("mutex")
            worker.ops += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _guard(chaos, worker, exc)


async def rwlock_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    referee: RWReferee,
    rng: random.Random,
    *,
    write_share: float = 0.3,
    hold: tuple[float, float] = (0.0, 0.03),
    acquire_timeout: float = 3.0,
) -> None:
    """Read or write, at random, under a ReadWriteLock."""
    rw = ReadWriteLock(
        client, path, identifier=worker.name, suspended_is_loss=True, cancel_on_loss=True
    )
    while not worker.stop.is_set():
        write = rng.random() < write_share
        part = rw.write if write else rw.read
        try:
            try:
                await part.acquire(timeout=acquire_timeout)
            except aiocoord.TimeoutError:
                chaos.op("rwlock: timed out")
                continue
            lost = part.lost
            referee.enter(worker.name, write, part.fencing_token, client.session_id)
            try:
                await _hold_until_lost(lost, _hold_time(rng, hold))
            finally:
                referee.exit(worker.name, write)
            await part.release()
            chaos.op("rwlock: write" if write else "rwlock: read")
            worker.ops += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _guard(chaos, worker, exc)


async def semaphore_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    referee: SemaphoreReferee,
    rng: random.Random,
    *,
    hold: tuple[float, float] = (0.0, 0.05),
    acquire_timeout: float = 3.0,
) -> None:
    """Take a lease, hold it a little, return it."""
    sem = Semaphore(
        client,
        path,
        referee.max_leases,
        identifier=worker.name,
        suspended_is_loss=True,
        cancel_on_loss=True,
    )
    while not worker.stop.is_set():
        try:
            try:
                (lease,) = await sem.acquire(1, timeout=acquire_timeout)
            except aiocoord.TimeoutError:
                chaos.op("semaphore: timed out")
                continue
            referee.enter(worker.name, client.session_id)
            try:
                await _hold_until_lost(lease.lost, _hold_time(rng, hold))
            finally:
                referee.exit(worker.name)
            await lease.release()
            chaos.op("semaphore")
            worker.ops += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _guard(chaos, worker, exc)


async def counter_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    ledger: CounterLedger,
    rng: random.Random,
    *,
    pause: tuple[float, float] = (0.0, 0.02),
) -> None:
    """Increment the counter, keeping the ledger."""
    async with AtomicCounter(client, path) as counter:
        while not worker.stop.is_set():
            try:
                result = await counter.increment()
            except asyncio.CancelledError:
                ledger.uncertain += 1  # cut in flight: may or may not have been applied
                raise
            except ConnectionLossError as exc:
                ledger.uncertain += 1
                chaos.error(exc)
                continue
            except Exception as exc:
                _guard(chaos, worker, exc)
                continue
            if result.succeeded:
                ledger.certain += 1
                chaos.op("counter: increment")
                worker.ops += 1
            else:
                chaos.op("counter: gave up")
            await asyncio.sleep(rng.uniform(*pause))


async def producer_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    ledger: QueueLedger,
    rng: random.Random,
    *,
    pause: tuple[float, float] = (0.0, 0.03),
) -> None:
    """Put uniquely named items."""
    n = 0
    async with Queue(client, path) as queue:
        while not worker.stop.is_set():
            n += 1
            item = f"{worker.name}-{n}".encode()
            try:
                await queue.put(item)
            except asyncio.CancelledError:
                ledger.put_uncertain.add(item)
                raise
            except ConnectionLossError as exc:
                ledger.put_uncertain.add(item)
                chaos.error(exc)
                continue
            except Exception as exc:
                _guard(chaos, worker, exc)
                continue
            ledger.put_ok.add(item)
            chaos.op("queue: put")
            worker.ops += 1
            await asyncio.sleep(rng.uniform(*pause))


#: whether the claim running in this task learnt its outcome from a check after a lost reply
_CHECKED: contextvars.ContextVar[bool] = contextvars.ContextVar("checked", default=False)


class TracedQueue(Queue):
    """A :class:`Queue` that remembers which node each item it took came from, and whether
    the server acknowledged the claim or a check after a lost reply found it applied: the
    story of a duplicate (the same node taken twice means a delete the server acknowledged
    was undone; two nodes, that the item was put twice)."""

    def __init__(self, client: Client, path: str) -> None:
        super().__init__(client, path)
        #: item -> "<node> ack|checked"
        self.sources: dict[bytes, str] = {}
        commit = self._marked.commit

        async def traced(build: Callable[[Any], object]) -> Any:
            result = await commit(build)
            _CHECKED.set(result is None)
            return result

        self._marked.commit = traced  # type: ignore[method-assign]  # a test's tap, this object only

    async def _claim(self, name: str) -> list[bytes] | None:
        _CHECKED.set(False)
        items = await super()._claim(name)
        how = "checked" if _CHECKED.get() else "ack"
        for item in items or ():
            self.sources[item] = f"{name} {how}"
        return items

    def source(self, item: bytes) -> str:
        """Where ``item`` came from (forgotten once asked)."""
        return self.sources.pop(item, "?")


async def consumer_worker(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    path: str,
    ledger: QueueLedger,
    rng: random.Random,
) -> None:
    """Take items (a timeout is fine: the queue may be empty)."""
    async with TracedQueue(client, path) as queue:
        while not worker.stop.is_set():
            try:
                item = await queue.get(timeout=1.0)
            except TimeoutError:
                continue
            except ConnectionLossError as exc:
                ledger.uncertain_claims += 1
                chaos.error(exc)
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _guard(chaos, worker, exc)
                continue
            ledger.take(item, f"{worker.name} {queue.source(item)}", chaos.elapsed())
            chaos.op("queue: take")
            worker.ops += 1
        # Items this object claimed and holds (a get cancelled after its claim) are taken.
        while True:
            try:
                item = await queue.get(timeout=0)
            except (TimeoutError, CoordinationError):
                break
            ledger.take(item, f"{worker.name} {queue.source(item)} (kept)", chaos.elapsed())


async def drain(client: Client, path: str, ledger: QueueLedger) -> int:
    """Take whatever is left in the queue into the ledger; returns how many."""
    n = 0
    async with TracedQueue(client, path) as queue:
        while True:
            try:
                item = await queue.get(timeout=0.5)
            except TimeoutError:
                return n
            ledger.take(item, f"drain {queue.source(item)}")
            n += 1


async def tree_writer(
    chaos: Chaos,
    worker: Worker,
    client: Client,
    root: str,
    rng: random.Random,
    *,
    names: str = "abcde",
    pause: tuple[float, float] = (0.0, 0.02),
) -> None:
    """Random creates, sets and deletes in a small tree under ``root`` (depth <= 2)."""
    n = 0
    while not worker.stop.is_set():
        n += 1
        depth = rng.choice((1, 1, 2))
        path = root + "".join("/" + rng.choice(names) for _ in range(depth))
        action = rng.choice(("create", "create", "set", "set", "delete"))
        try:
            if action == "create":
                await client.create(path, f"{worker.name}:{n}".encode(), make_parents=True)
            elif action == "set":
                await client.set(path, f"{worker.name}:{n}".encode())
            else:
                await client.delete(path)
            chaos.op(f"tree: {action}")
            worker.ops += 1
        except (NodeExistsError, NoNodeError, NotEmptyError):
            chaos.op("tree: refused")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _guard(chaos, worker, exc)
        await asyncio.sleep(rng.uniform(*pause))


def start_worker(worker: Worker, coro: Awaitable[None]) -> Worker:
    """Run ``coro`` as the worker's task."""
    worker.task = asyncio.ensure_future(coro)
    worker.task.set_name(worker.name)
    return worker


async def stop_workers(chaos: Chaos, workers: Iterable[Worker], grace: float = 10.0) -> None:
    """Ask every worker to stop after its current operation; cancel those that do not within
    ``grace`` seconds (recipes must leave nothing behind when cancelled)."""
    workers = list(workers)
    for w in workers:
        w.stop.set()
    tasks = [w.task for w in workers if w.task is not None]
    if tasks:
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for t in pending:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for t in tasks:
            if t.cancelled():
                continue
            exc = t.exception()
            if exc is not None:
                chaos.unexpected(t.get_name(), exc)


#: the last transitions of each tracked client, for violations that point at one client
STATE_HISTORY: dict[str, deque[str]] = {}


def track_states(chaos: Chaos, client: Client, name: str) -> Callable[[], None]:
    """Count the client's LOST and SUSPENDED transitions in the summary."""
    history = STATE_HISTORY[name] = deque(maxlen=12)

    def on_change(change: StateChange) -> None:
        history.append(
            f"{chaos.elapsed():8.3f}s 0x{change.session_id:x} {change.state.value}"
            + (" (new session)" if change.new_session else "")
        )
        chaos.note(
            f"{name} 0x{change.session_id:x} {change.state.value}"
            + (" (new session)" if change.new_session else "")
        )
        if change.state is State.LOST:
            chaos.events["sessions lost"] += 1
        elif change.state is State.SUSPENDED:
            chaos.events["connections lost"] += 1

    return client.add_state_listener(on_change)
