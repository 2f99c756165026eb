"""Client statistics: what a client did, in one frozen snapshot (:meth:`Client.stats`).

A :class:`Recorder` belongs to a session and outlives its connections. The connection tells
it about every answered request (the opcode, the server's error code, the time from the
write to the read of the answer), every request a lost connection failed, and the bytes in
and out, and counts itself once handshaken; the session counts its expiries; the recipes'
holdings tell it about grants, waits and losses. Latency goes into a fixed histogram per
operation (quarter-octave buckets from 1 µs), so a reply costs a few integer operations and
the memory stays the same however long the client lives: p50 and p99 are read from the
buckets (within 10% of the true value), the maximum is exact.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiocoord._wire.opcodes import OP_NAMES
from aiocoord.errors import error_for_code

__all__ = [
    "ClientStats",
    "OpStats",
    "RecipeStats",
    "Recorder",
    "TelemetrySink",
    "WatchStats",
    "error_name",
]


class TelemetrySink(Protocol):
    """Where a :class:`Recorder` sends spans and instruments once OpenTelemetry is set up
    (:mod:`aiocoord._observe.otel` implements it; this module never imports it)."""

    def capture(self) -> Any:
        """The caller's context, kept with a request until its answer makes the span."""

    def request(
        self,
        request: Any,
        xid: int,
        err: str | None,
        sent: float,
        received: float,
        server: tuple[str, int],
        parent: Any,
    ) -> None:
        """Record one answered (or lost: ``err`` names the error) request."""

    def granted(
        self, kind: str, path: str, entered: float | None, waited: bool, token: int
    ) -> None:
        """Record a recipe's grant."""


#: Buckets per octave of latency, and how many: 4 per octave from 1 µs reach 2**25 µs (33 s).
_PER_OCTAVE = 4
_BUCKETS = 100


@dataclass(frozen=True, slots=True)
class OpStats:
    """One kind of request (``"create"``, ``"get"``, ...) since the client opened."""

    #: requests answered, or failed by a lost connection
    count: int
    #: errors by exception name (``"NoNodeError"``, ``"ConnectionLossError"``, ...)
    errors: Mapping[str, int]
    #: the median latency, from the write to the answer, in milliseconds (of the answered
    #: requests; estimated from buckets a fourth of an octave wide; 0.0 before any answer)
    p50_ms: float
    #: the 99th percentile of the latency, in milliseconds (estimated as ``p50_ms``)
    p99_ms: float
    #: the longest latency, in milliseconds (exact; 0.0 before any answer)
    max_ms: float


@dataclass(frozen=True, slots=True)
class WatchStats:
    """The watches a client holds on the server now, by kind."""

    #: one-shot data watches (``get(watch=True)``)
    data: int = 0
    #: one-shot watches set by ``exists(watch=True)``; the server keeps them as data watches,
    #: so this counts the data watches set on a node that did not exist then (0 otherwise)
    exist: int = 0
    #: one-shot child watches (``children(watch=True)``)
    child: int = 0
    #: persistent watches (``add_watch(path)``)
    persistent: int = 0
    #: persistent recursive watches (``add_watch(path, recursive=True)``)
    persistent_recursive: int = 0


@dataclass(frozen=True, slots=True)
class RecipeStats:
    """What the holdings of one kind of recipe (``"lock"``, ``"leadership"``, ...) did."""

    #: grants made
    holds: int = 0
    #: grants that had to wait for another holder first
    waits: int = 0
    #: time spent waiting by those, in seconds, in all
    wait_seconds: float = 0.0
    #: the longest of those waits, in seconds
    wait_seconds_max: float = 0.0
    #: holdings lost while held (session loss, node deleted)
    losses: int = 0
    #: nodes this kind of recipe skipped (or refused to read) because their data was not
    #: what it reads: counted once per version of each node, the version logged once
    undecodable: int = 0


@dataclass(frozen=True, slots=True)
class ClientStats:
    """A snapshot of one client's statistics (see :meth:`aiocoord.Client.stats`)."""

    #: by operation name
    requests: Mapping[str, OpStats]
    #: requests written and not yet answered
    in_flight: int
    #: bytes read from the servers, over every connection (handshakes and pings included)
    bytes_in: int
    #: bytes written to the servers, over every connection (handshakes and pings included)
    bytes_out: int
    #: the watches the client holds on the server now
    watches: WatchStats
    #: connections made after the first (a new one to the same session or a new session)
    reconnects: int
    #: sessions the server expired (or the client gave up as expired)
    session_expiries: int
    #: ``host:port`` of the server the client is connected to (None if none)
    server: str | None
    #: the current session's id; 0 while the client has none (before the first connection,
    #: after an expiry until the next session)
    session_id: int
    #: seconds, as negotiated with the server
    negotiated_timeout: float
    #: guaranteed deletes and other clean-ups still running in the background
    pending_deletes: int
    #: by recipe kind
    recipes: Mapping[str, RecipeStats] = field(default_factory=dict)


@functools.cache
def error_name(code: int) -> str:
    """The name of the exception a server error code raises (``"NoNodeError"``)."""
    return type(error_for_code(code)).__name__


class _Op:
    __slots__ = ("buckets", "count", "errors", "max_s")

    def __init__(self) -> None:
        self.count = 0
        self.errors: Counter[str] = Counter()
        self.buckets = [0] * _BUCKETS
        self.max_s = 0.0

    def snapshot(self) -> OpStats:
        return OpStats(
            count=self.count,
            errors=dict(self.errors),
            p50_ms=self._percentile(0.50),
            p99_ms=self._percentile(0.99),
            max_ms=self.max_s * 1000.0,
        )

    def _percentile(self, q: float) -> float:
        total = sum(self.buckets)
        if not total:
            return 0.0
        rank = q * total
        seen = 0
        for i, n in enumerate(self.buckets):
            seen += n
            if seen >= rank:
                # The bucket's geometric middle, capped by the largest value seen.
                middle_us = math.pow(2.0, (i + 0.5) / _PER_OCTAVE)
                return min(middle_us / 1000.0, self.max_s * 1000.0)
        return self.max_s * 1000.0


class _Recipe:
    __slots__ = ("holds", "losses", "undecodable", "wait_max", "wait_total", "waits")

    def __init__(self) -> None:
        self.holds = self.waits = self.losses = self.undecodable = 0
        self.wait_total = self.wait_max = 0.0


class Recorder:
    """The counters behind :class:`ClientStats` (one per session; see the module docstring)."""

    __slots__ = (
        "_ops",
        "_recipes",
        "bytes_in",
        "bytes_out",
        "connections",
        "expiries",
        "telemetry",
    )

    def __init__(self) -> None:
        #: spans and instruments, when OpenTelemetry is set up (see aiocoord._observe.otel)
        self.telemetry: TelemetrySink | None = None
        self._ops: dict[int, _Op] = {}
        self._recipes: dict[str, _Recipe] = {}
        self.bytes_in = 0
        self.bytes_out = 0
        #: connections made (the first included)
        self.connections = 0
        self.expiries = 0

    def _op(self, opcode: int) -> _Op:
        op = self._ops.get(opcode)
        if op is None:
            op = self._ops[opcode] = _Op()
        return op

    def _recipe(self, kind: str) -> _Recipe:
        rec = self._recipes.get(kind)
        if rec is None:
            rec = self._recipes[kind] = _Recipe()
        return rec

    def reply(self, opcode: int, err: int, seconds: float) -> None:
        """An answer came ``seconds`` after its request was written."""
        op = self._ops.get(opcode)  # _op's lookup, inlined: every answer passes here
        if op is None:
            op = self._ops[opcode] = _Op()
        op.count += 1
        if err:
            op.errors[error_name(err)] += 1
        if seconds > op.max_s:
            op.max_s = seconds
        us = seconds * 1e6
        i = int(math.log2(us) * _PER_OCTAVE) if us > 1.0 else 0
        op.buckets[i if i < _BUCKETS else _BUCKETS - 1] += 1

    def lost(self, opcode: int) -> None:
        """A request was failed by a lost connection (it may have been applied)."""
        op = self._op(opcode)
        op.count += 1
        op.errors["ConnectionLossError"] += 1

    def granted(self, kind: str, waited: float | None) -> None:
        """A recipe of ``kind`` granted a holding, after waiting ``waited`` seconds for
        another holder (None: at once)."""
        rec = self._recipe(kind)
        rec.holds += 1
        if waited is not None:
            rec.waits += 1
            rec.wait_total += waited
            rec.wait_max = max(rec.wait_max, waited)

    def holding_lost(self, kind: str) -> None:
        """A holding of a recipe of ``kind`` was lost while held."""
        self._recipe(kind).losses += 1

    def undecodable(self, kind: str) -> None:
        """A recipe of ``kind`` met a node whose data it cannot read (a new version of it)."""
        self._recipe(kind).undecodable += 1

    def requests(self) -> dict[str, OpStats]:
        """Per operation name, a snapshot (the opcodes of one call, such as the four kinds of
        create, are counted together)."""
        by_name: dict[str, _Op] = {}
        for code, op in self._ops.items():
            name = OP_NAMES.get(code, str(code))
            into = by_name.get(name)
            if into is None:
                into = by_name[name] = _Op()
            into.count += op.count
            into.errors.update(op.errors)
            into.max_s = max(into.max_s, op.max_s)
            into.buckets = [a + b for a, b in zip(into.buckets, op.buckets, strict=True)]
        return {name: op.snapshot() for name, op in by_name.items()}

    def recipes(self) -> dict[str, RecipeStats]:
        """Per recipe kind, a snapshot."""
        return {
            kind: RecipeStats(r.holds, r.waits, r.wait_total, r.wait_max, r.losses, r.undecodable)
            for kind, r in self._recipes.items()
        }
