"""Foreign and hostile node data (the ``hostile`` fault kind): :func:`hostile_payload` makes
the data, :class:`HostileLane` writes it where the mix's recipes read what others wrote, and
checks what can be checked at once.

Where it writes, and what must hold there:

* ``tree``: nodes of the caches' tree (``/tree/<a..e>``, ``/tree/h``) get hostile data; the
  caches keep serving and their change streams never die (:class:`CacheChecker`), and at the
  end they equal the server, hostile data included;
* ``queue``: hostile item nodes (``/q/queue-<seq>``) and foreign children; consumers never
  crash, each hostile node's data is handed out at most once or skipped (a library that
  skips foreign items, logged and counted, is as right as one that hands them out raw), and
  the items of the mix stay exactly-once (:class:`QueueLedger`);
* ``count``: foreign children of the counter node (which the counter must not care about), and
  a counter node of its own holding hostile bytes: an increment must refuse it with the typed
  :class:`CorruptedValueError` and leave the bytes alone;
* ``services``: foreign instance nodes of the mix's service; its :class:`ServiceCache` keeps
  serving and its stream lives (:class:`ServiceCacheChecker`), and it lists the instances
  the mix registered at the end;
* ``locks``: ephemeral foreign children without a sequence number in the lock, read-write
  lock, semaphore's lock and latch paths (recipes order only sequence nodes: the foreign ones must
  neither block nor break a contender).

A worker that crashes on a hostile node is a violation (its ``_guard`` calls it unexpected).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import struct
from collections.abc import Awaitable, Callable

from chaos_cluster import Cluster
from chaos_log import FAULT_ERRORS, Chaos
from chaos_referees import QueueLedger

from aiocoord import AtomicCounter, Client
from aiocoord.errors import ClientClosedError, CoordinationError, NodeExistsError, NoNodeError
from aiocoord.recipes.counter import CorruptedValueError
from aiocoord.recipes.queue import unframe

#: The kinds of hostile data, in the order :func:`hostile_payload` draws from.
PAYLOAD_KINDS = ("json-deep", "utf8-invalid", "truncated-frame", "random")
#: Where the lane writes (see the module docstring).
TARGETS = ("tree", "queue", "count", "locks", "services")
#: The counter node whose bytes the lane makes hostile (the mix's own counter stays exact).
HOSTILE_COUNTER = "/count-hostile"
#: The mix's service discovery base path and service name: the service's instance nodes
#: (``<base>/<name>/<id>``) are JSON that others write.
SERVICES = "/services"
SERVICE = "svc"
#: Paths the lane leaves persistent nodes under (the end check allows them).
ALLOWED = ("/tree", "/q", "/count", HOSTILE_COUNTER, SERVICES)
#: The exclusive recipes' node parents in the mix. Not the semaphore's ``leases``: every
#: child there is a lease, whoever made it (Curator's InterProcessSemaphoreV2 counts them
#: all), so a foreign one takes a lease by design; its ``locks`` orders sequence nodes only.
LOCK_DIRS = ("/lock", "/rw", "/sem/locks", "/leader")


def hostile_payload(kind: str, rng: random.Random, serial: int) -> bytes:
    """Hostile data of ``kind``, unique per ``serial`` (so that a queue item handed out twice
    is told from two hostile nodes with the same bytes)."""
    tag = b'{"hostile":%d,' % serial
    if kind == "json-deep":
        # Valid JSON nested 1,000 deep (the 2 KB node): a recursive decoder overflows.
        depth = 1000
        opening = rng.choice((b"[", b'{"a":'))
        closing = b"]" if opening == b"[" else b"}"
        return tag + b'"x":' + opening * depth + b"1" + closing * depth + b"}"
    if kind == "utf8-invalid":
        bad = rng.choice((b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28"))
        return tag + b'"name":"' + bad + b'","address":"' + bad + b'"}'
    if kind == "truncated-frame":
        # Curator's queue framing (version, then 0x01 <length> <bytes>..., then 0x02), cut:
        # a length past the end, or no end marker; or JSON cut mid-string.
        body = b"h%d" % serial
        head = struct.pack(">i", 0x00010001)
        return rng.choice(
            (
                head + struct.pack(">bi", 1, len(body) + 1000) + body,
                head + struct.pack(">bi", 1, len(body)) + body,
                head + struct.pack(">bi", 1, -5) + body,
                tag + b'"name":"cut',
            )
        )
    return rng.randbytes(rng.randrange(16, 2048))


def queue_items(data: bytes) -> list[bytes]:
    """What a consumer may hand out for a queue node holding ``data`` (its items in Curator's
    framing, else the data raw)."""
    items = unframe(data)
    return [data] if items is None else items


class HostileLane:
    """The ``hostile`` fault lane: a client of its own (not behind a fault proxy) writes
    hostile nodes on a seeded schedule; :meth:`run` is the lane, :meth:`close` ends it."""

    def __init__(
        self, cluster: Cluster, chaos: Chaos, rng: random.Random, queue: QueueLedger
    ) -> None:
        self.cluster = cluster
        self.chaos = chaos
        self.rng = rng
        self.queue = queue
        self.client: Client | None = None
        self.counter: AtomicCounter | None = None
        self.serial = 0

    async def start(self) -> HostileLane:
        """Open the lane's client and its counter on :data:`HOSTILE_COUNTER`."""
        self.client = await self.cluster.client(proxied=False, session_timeout=10.0)
        self.counter = AtomicCounter(self.client, HOSTILE_COUNTER)
        return self

    async def run(
        self, stop: asyncio.Event, pause: Callable[[float, float], Awaitable[bool]]
    ) -> None:
        """Write a hostile node every while, until ``stop``."""
        while not await pause(0.5, 2.0):
            target = self.rng.choice(TARGETS)
            kind = self.rng.choice(PAYLOAD_KINDS)
            self.serial += 1
            data = hostile_payload(kind, self.rng, self.serial)
            self.chaos.fault("hostile")
            self.chaos.events[f"hostile: {target} {kind}"] += 1
            self.chaos.note(f"hostile {kind} ({len(data)} bytes) in {target}")
            try:
                await getattr(self, f"_{target}")(data)
            except FAULT_ERRORS as exc:
                # A killed member: the lane's own client saw the fault, not a recipe.
                self.chaos.events[f"hostile: write failed ({type(exc).__name__})"] += 1
            except ClientClosedError:
                return

    async def _tree(self, data: bytes) -> None:
        assert self.client is not None
        path = "/tree/" + self.rng.choice("abcdeh")
        try:
            await self.client.set(path, data)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                await self.client.create(path, data, make_parents=True)

    async def _queue(self, data: bytes) -> None:
        assert self.client is not None
        if self.rng.random() < 0.25:
            # A foreign child that is not an item: consumers must pass it by.
            await self.client.create(f"/q/hostile-{self.serial}", data, make_parents=True)
            return
        # Registered before the create: a consumer may take it before the reply is back.
        self.queue.hostile.update(queue_items(data))
        self.queue.hostile_nodes += 1
        await self.client.create("/q/queue-", data, sequential=True, make_parents=True)

    async def _count(self, data: bytes) -> None:
        assert self.client is not None and self.counter is not None
        if self.rng.random() < 0.5:
            await self.client.create(f"/count/hostile-{self.serial}", data, make_parents=True)
            return
        if len(data) == 8:
            data += b"\x00"  # 8 bytes would be a valid value
        try:
            await self.client.set(HOSTILE_COUNTER, data)
        except NoNodeError:
            await self.client.create(HOSTILE_COUNTER, data)
        try:
            result = await self.counter.increment()
        except CorruptedValueError:
            self.chaos.events["hostile: counter refused (CorruptedValueError)"] += 1
        except FAULT_ERRORS:
            raise
        except Exception as exc:
            self.chaos.unexpected("hostile: counter increment over hostile bytes", exc)
        else:
            self.chaos.violate(
                "hostile: counter refuses foreign bytes",
                f"increment over {data[:24]!r}... ({len(data)} bytes) returned {result}",
            )
        after, _ = await self.client.get(HOSTILE_COUNTER)
        self.chaos.check(
            after == data,
            "hostile: counter leaves foreign bytes alone",
            f"{HOSTILE_COUNTER} held {len(data)} hostile bytes, now {after[:24]!r}",
        )

    async def _locks(self, data: bytes) -> None:
        assert self.client is not None
        parent = self.rng.choice(LOCK_DIRS)
        # No trailing 10 ASCII digits: not a contender by Curator's rules (the second name
        # ends in ten Arabic-Indic digits, which str.isdigit() accepts).
        arabic_digits = "".join(chr(0x0660 + d) for d in range(10))
        name = self.rng.choice(
            (f"hostile-{self.serial}x", f"hostile-{self.serial}-{arabic_digits}")
        )
        self.chaos.note(f"hostile node {parent}/{name}")
        try:
            await self.client.create(f"{parent}/{name}", data, ephemeral=True)
        except NoNodeError:
            # The recipe's container is not there now (swept or not made yet).
            self.chaos.events["hostile: lock dir absent"] += 1

    async def _services(self, data: bytes) -> None:
        assert self.client is not None
        # An instance node nobody registered: the ServiceCache must skip it and keep serving.
        path = f"{SERVICES}/{SERVICE}/hostile-{self.serial}"
        await self.client.create(path, data, make_parents=True)

    async def close(self) -> None:
        """Close the lane's counter (its client closes with the cluster's)."""
        if self.counter is not None:
            with contextlib.suppress(CoordinationError):
                await self.counter.close()
