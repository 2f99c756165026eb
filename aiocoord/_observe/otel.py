"""OpenTelemetry, optional (``pip install 'aiocoord[otel]'``).

When the ``opentelemetry`` API is installed and the application has set a tracer provider
or a meter provider before it connects, the client reports to them:

- **a span per ZooKeeper request**, named ``"<operation> <path>"`` (``"create /locks/a"``),
  kind CLIENT, with ``db.system.name`` = ``"zookeeper"``, ``db.operation.name``,
  ``db.collection.name`` (the path), ``server.address``, ``server.port``, ``zk.xid``, and
  ``error.type`` (the exception name) when it failed. The span is made when the answer is
  read, with the times of the write and the read, as the child of the span that was current
  in the task that sent it;
- **a span per recipe grant** (``"aiocoord.lock acquire"``, ``"aiocoord.lease acquire"``,
  ...) from entering the queue to the grant, with ``aiocoord.path``, ``aiocoord.waited`` and
  ``aiocoord.fencing_token``;
- **metrics**: the histogram ``db.client.operation.duration`` (seconds, by operation and
  error), and observable instruments over :meth:`Client.stats`: ``aiocoord.requests``,
  ``aiocoord.requests.in_flight``, ``aiocoord.watches`` (by kind), ``aiocoord.reconnects``,
  ``aiocoord._session.session.expiries``, ``aiocoord.recipe.holds`` and ``aiocoord.recipe.losses``
  (by recipe kind).

Unless the application imported the API, nothing of it is imported; with the API but no
provider set (its default no-op proxies), nothing is recorded either: :func:`telemetry_for`
returns None and the hot path pays one ``is None`` check per request. Set the providers
before connecting: a client decides when it is made.
"""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from aiocoord._observe.metrics import ClientStats
from aiocoord._wire.opcodes import OP_NAMES

__all__ = ["Telemetry", "telemetry_for"]


def telemetry_for(stats: Callable[[], ClientStats]) -> Telemetry | None:
    """The telemetry of a new client (whose :meth:`Client.stats` is ``stats``), or None when
    the OpenTelemetry API is missing or no provider was set."""
    # A provider can only have been set by an application that imported the API: if nothing
    # imported it, aiocoord does not either (installed or not).
    if "opentelemetry" not in sys.modules:
        return None
    from opentelemetry import metrics, trace

    tracer_provider = trace.get_tracer_provider()
    meter_provider = metrics.get_meter_provider()
    traced = not isinstance(tracer_provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
    # The API's stand-in until a provider is set has no public class (unlike the tracer's):
    # it is known by its name.
    measured = not (
        isinstance(meter_provider, metrics.NoOpMeterProvider)
        or type(meter_provider).__name__ == "_ProxyMeterProvider"
    )
    if not traced and not measured:
        return None
    return Telemetry(
        tracer_provider if traced else None, meter_provider if measured else None, stats
    )


class Telemetry:
    """One client's spans and instruments (see the module docstring)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, stats: Any) -> None:
        from opentelemetry import context, trace

        from aiocoord import __version__

        self._context = context
        self._trace = trace
        self._tracer = (
            None if tracer_provider is None else tracer_provider.get_tracer("aiocoord", __version__)
        )
        # Loop and connection times are monotonic; spans want the wall clock.
        self._offset_ns = time.time_ns() - time.monotonic_ns()
        self._duration = None
        if meter_provider is not None:
            meter = meter_provider.get_meter("aiocoord", __version__)
            self._duration = meter.create_histogram(
                "db.client.operation.duration", unit="s", description="ZooKeeper request time"
            )
            _observe(meter_provider, meter, stats)

    def capture(self) -> Any:
        """The caller's context, kept with a request until its answer makes the span."""
        return self._context.get_current() if self._tracer is not None else None

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
        operation = OP_NAMES.get(request.opcode, str(request.opcode))
        if self._duration is not None:
            attrs = {"db.system.name": "zookeeper", "db.operation.name": operation}
            if err:
                attrs["error.type"] = err
            self._duration.record(received - sent, attrs)
        if self._tracer is None:
            return
        path = getattr(request, "path", None)
        attributes: dict[str, Any] = {
            "db.system.name": "zookeeper",
            "db.operation.name": operation,
            "server.address": server[0],
            "server.port": server[1],
            "zk.xid": xid,
        }
        if isinstance(path, str):
            attributes["db.collection.name"] = path
        if err:
            attributes["error.type"] = err
        span = self._tracer.start_span(
            f"{operation} {path}" if isinstance(path, str) else operation,
            context=parent,  # the Context capture() kept with the request
            kind=self._trace.SpanKind.CLIENT,
            attributes=attributes,
            start_time=int(sent * 1e9) + self._offset_ns,
        )
        if err:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, err))
        span.end(end_time=int(received * 1e9) + self._offset_ns)

    def granted(
        self, kind: str, path: str, entered: float | None, waited: bool, token: int
    ) -> None:
        """A recipe's grant, as a span from entering the queue (monotonic time) to now."""
        if self._tracer is None:
            return
        now = time.monotonic()
        start = entered if entered is not None else now
        span = self._tracer.start_span(
            f"aiocoord.{kind} acquire",
            attributes={
                "aiocoord.path": path,
                "aiocoord.waited": waited,
                "aiocoord.wait_seconds": now - start,
                "aiocoord.fencing_token": token,
            },
            start_time=int(start * 1e9) + self._offset_ns,
        )
        span.end(end_time=int(now * 1e9) + self._offset_ns)


class _Observed:
    """The observable instruments of one meter provider, over every live client of this
    process that reports to it (an SDK keeps the first instrument of a name and drops later
    ones, so the instruments are made once, and each client joins them). Clients are held
    weakly, and each is told apart by ``aiocoord.client``, a number given in order."""

    def __init__(self, meter: Any) -> None:
        self._clients: list[tuple[int, weakref.WeakMethod[Callable[[], ClientStats]]]] = []
        self._next = 0
        gauge = meter.create_observable_up_down_counter
        counter = meter.create_observable_counter
        counter("aiocoord.requests", [self._requests], unit="{request}")
        gauge("aiocoord.requests.in_flight", [self._in_flight], unit="{request}")
        gauge("aiocoord.watches", [self._watches], unit="{watch}")
        counter("aiocoord.reconnects", [self._reconnects], unit="{reconnect}")
        counter("aiocoord._session.session.expiries", [self._expiries], unit="{expiry}")
        counter("aiocoord.recipe.holds", [self._holds], unit="{grant}")
        counter("aiocoord.recipe.losses", [self._losses], unit="{loss}")

    def join(self, stats: Callable[[], ClientStats]) -> None:
        self._next += 1
        self._clients.append((self._next, weakref.WeakMethod(stats)))  # stats: Client.stats

    def _each(self) -> Iterator[tuple[dict[str, Any], ClientStats]]:
        live = []
        for number, ref in self._clients:
            stats = ref()
            if stats is not None:
                live.append((number, ref))
                yield {"aiocoord.client": number}, stats()
        self._clients = live

    def _requests(self, _: Any) -> Iterable[Any]:
        for tags, s in self._each():
            for name, op in s.requests.items():
                yield self._obs(op.count, {**tags, "db.operation.name": name})

    def _in_flight(self, _: Any) -> Iterable[Any]:
        for tags, s in self._each():
            yield self._obs(s.in_flight, tags)

    def _watches(self, _: Any) -> Iterable[Any]:
        for tags, s in self._each():
            for kind in ("data", "exist", "child", "persistent", "persistent_recursive"):
                yield self._obs(getattr(s.watches, kind), {**tags, "aiocoord.watch.kind": kind})

    def _reconnects(self, _: Any) -> Iterable[Any]:
        for tags, s in self._each():
            yield self._obs(s.reconnects, tags)

    def _expiries(self, _: Any) -> Iterable[Any]:
        for tags, s in self._each():
            yield self._obs(s.session_expiries, tags)

    def _holds(self, _: Any) -> Iterable[Any]:
        for tags, s in self._each():
            for kind, r in s.recipes.items():
                yield self._obs(r.holds, {**tags, "aiocoord.recipe": kind})

    def _losses(self, _: Any) -> Iterable[Any]:
        for tags, s in self._each():
            for kind, r in s.recipes.items():
                yield self._obs(r.losses, {**tags, "aiocoord.recipe": kind})

    @staticmethod
    def _obs(value: float, attributes: dict[str, Any]) -> Any:
        from opentelemetry.metrics import Observation

        return Observation(value, attributes)


# One _Observed per meter provider. Module state, because the providers it belongs to are
# the OpenTelemetry API's own process globals; weak keys, so it ends with its provider.
_OBSERVED: weakref.WeakKeyDictionary[Any, _Observed] = weakref.WeakKeyDictionary()


def _observe(meter_provider: Any, meter: Any, stats: Callable[[], ClientStats]) -> None:
    observed = _OBSERVED.get(meter_provider)
    if observed is None:
        observed = _OBSERVED[meter_provider] = _Observed(meter)
    observed.join(stats)
