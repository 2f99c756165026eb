"""OpenTelemetry: spans and metrics of a real lock acquisition, read from the SDK's in-memory
exporters; and no import of the API by a client in a process that did not import it.

Providers are global to a process, so each case runs in a process of its own (as an
application would: the providers set before it connects)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="pip install -e '.[test]' (opentelemetry-sdk)")

ROOT = Path(__file__).resolve().parents[2]

TRACED = """
import asyncio, json, sys
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

spans = InMemorySpanExporter()
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(tracer_provider)
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

import aiocoord

async def main(connect):
    a = await aiocoord.connect(connect)
    b = await aiocoord.connect(connect)
    first, second = aiocoord.Lock(a, "/otel/lock"), aiocoord.Lock(b, "/otel/lock")
    with trace.get_tracer("app").start_as_current_span("job"):
        await first.acquire()
    async def wait_then_release():
        await second.acquire()
        await second.release()

    waiting = asyncio.ensure_future(wait_then_release())
    def queued():  # the second watches the first's node, and that watch is answered
        stats = b.stats()
        return stats.watches.data >= 1 and stats.in_flight == 0
    while not queued():
        await asyncio.sleep(0.01)
    await first.release()
    await waiting
    try:
        await a.get("/otel/missing")
    except aiocoord.NoNodeError:
        pass
    data = reader.get_metrics_data()  # a scrape while the clients live
    await a.close()
    await b.close()
    return data

data = asyncio.run(main(sys.argv[1]))
points = {}
for rm in data.resource_metrics:
    for sm in rm.scope_metrics:
        for m in sm.metrics:
            for p in m.data.data_points:
                value = getattr(p, "value", None)
                if value is None:
                    value = p.count
                points.setdefault(m.name, []).append([dict(p.attributes), value])
out = {
    "spans": [
        {
            "name": s.name,
            "kind": s.kind.name,
            "attributes": dict(s.attributes),
            "parent": s.parent.span_id if s.parent else None,
            "id": s.context.span_id,
            "trace": s.context.trace_id,
            "status": s.status.status_code.name,
            "duration": s.end_time - s.start_time,
        }
        for s in spans.get_finished_spans()
    ],
    "metrics": points,
}
print(json.dumps(out))
"""

UNTOUCHED = """
import asyncio, sys
import aiocoord

async def main(connect):
    async with aiocoord.connect(connect) as client:
        async with aiocoord.Lock(client, "/otel/plain"):
            pass

asyncio.run(main(sys.argv[1]))
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def _run(script: str, connect: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), connect],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_a_lock_acquisition_is_traced_and_measured(zookeeper: Any) -> None:
    out = json.loads(_run(TRACED, zookeeper.connect_string))
    spans = out["spans"]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    # Every request is a CLIENT span named after its operation and path.
    creates = [s for s in spans if s["name"].startswith("create /otel/lock/")]
    # One node per contender (the first create of all may have found no parents: NoNode).
    assert len([s for s in creates if s["status"] != "ERROR"]) == 2
    for span in creates:
        assert span["kind"] == "CLIENT"
        assert span["attributes"]["db.system.name"] == "zookeeper"
        assert span["attributes"]["db.operation.name"] == "create"
        assert span["attributes"]["server.port"] > 0
        assert span["duration"] > 0
    # The first acquisition ran under the application's span: its requests are children.
    job = by_name["job"][0]
    children = [s for s in spans if s["parent"] == job["id"]]
    assert any(s["name"].startswith("create /otel/lock/") for s in children)
    assert all(s["trace"] == job["trace"] for s in children)
    # A failed request says why.
    missing = by_name["get /otel/missing"][0]
    assert missing["status"] == "ERROR"
    assert missing["attributes"]["error.type"] == "NoNodeError"
    # The grants: the second waited for the first, and its fencing token is larger.
    grants = by_name["aiocoord.lock acquire"]
    assert [g["attributes"]["aiocoord.waited"] for g in grants] == [False, True]
    tokens = [g["attributes"]["aiocoord.fencing_token"] for g in grants]
    assert tokens[0] < tokens[1]
    assert grants[1]["attributes"]["aiocoord.wait_seconds"] > 0
    # Metrics: a duration histogram by operation, and the statistics as instruments.
    metrics = out["metrics"]
    # One point per operation and outcome (a refused create has its error.type): summed here.
    durations: dict[str, int] = {}
    for attributes, count in metrics["db.client.operation.duration"]:
        name = attributes["db.operation.name"]
        durations[name] = durations.get(name, 0) + count
    assert durations["create"] >= 2
    holds = [p for p in metrics["aiocoord.recipe.holds"] if p[0]["aiocoord.recipe"] == "lock"]
    assert sorted(p[1] for p in holds) == [1, 1]  # one grant by each client
    assert len({p[0]["aiocoord.client"] for p in holds}) == 2


def test_a_process_that_does_not_import_opentelemetry_gets_no_import(zookeeper: Any) -> None:
    assert _run(UNTOUCHED, zookeeper.connect_string) == "[]"
