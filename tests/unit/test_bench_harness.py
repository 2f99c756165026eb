"""The benchmark harness keeps working: ``python -m benchmarks --quick`` end to end against a
real server, and the pure parts (medians, targets, table) on made-up results.

No timing is asserted: CI machines are too noisy for that. Figures are for ``make bench``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aiocoord.testing import ServerHandle
from benchmarks import cli, report
from benchmarks.common import HandoffTracker, percentile, quantiles, summary
from benchmarks.settings import MATRIX_WORKLOADS, PEERS, RTTS_MS, SERVER_SETTINGS, WORKLOADS

REPO = Path(__file__).resolve().parents[2]
STATUSES = {"ok", "unavailable", "timeout", "killed", "error"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- end to end -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quick_run(zookeeper: ServerHandle, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    run_module("benchmarks", "--quick", "--connect", zookeeper.connect_string, "--out", str(out))
    return out


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m <args>`` in the repository; fails the test unless it exits 0."""
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_quick_run_writes_every_workload_for_every_peer(quick_run: Path) -> None:
    doc = json.loads((quick_run / "latest.json").read_text())
    assert doc["schema"] == 1
    assert doc["mode"] == "quick"
    assert set(doc["peers"]) == set(PEERS)
    for key in ("nproc", "cpu_model", "python"):
        assert doc["machine"][key]
    assert doc["server"]["version"].startswith("3.")
    assert set(doc["workloads"]) == set(WORKLOADS)
    for workload, entry in doc["workloads"].items():
        assert entry["title"] == WORKLOADS[workload]
        assert entry["cases"], workload
        for case, c in entry["cases"].items():
            assert set(c["peers"]) == set(PEERS), (workload, case)
            for peer, slot in c["peers"].items():
                where = (workload, case, peer)
                assert slot["status"] in STATUSES, where
                assert slot["runs"], where
                assert all(r["status"] in STATUSES for r in slot["runs"]), where
                if slot["status"] == "ok":
                    assert slot["metrics"], where
                    assert slot["runs_ok"] >= 1, where
                else:
                    assert slot.get("reason") or slot["status"] == "timeout", where


def test_quick_run_measures_aiocoord_everywhere(quick_run: Path) -> None:
    doc = json.loads((quick_run / "latest.json").read_text())
    expected = {
        ("W0", "cycle"): ["ops_per_s", "p50_ms", "p99_ms"],
        ("W0", "pipelined"): ["creates_per_s"],
        ("W1", "lock"): ["ops_per_s", "p50_ms", "p99_ms"],
        ("W2", "handoff"): ["acq_per_s", "handoff_p50_ms", "handoff_p99_ms", "violations"],
        ("W4", "cache"): ["load_s", "update_p50_ms", "update_p99_ms"],
    }
    for (workload, case), names in expected.items():
        slot = doc["workloads"][workload]["cases"][case]["peers"]["aiocoord"]
        assert slot["status"] == "ok", (workload, slot.get("reason"))
        for name in names:
            value = slot["metrics"][name]
            assert isinstance(value, (int, float)), (workload, name)
            assert not math.isnan(value), (workload, name)
    assert (
        doc["workloads"]["W2"]["cases"]["handoff"]["peers"]["aiocoord"]["metrics"]["violations"]
        == 0
    )
    for case, c in doc["workloads"]["W3"]["cases"].items():
        slot = c["peers"]["aiocoord"]
        assert slot["status"] == "ok", (case, slot.get("reason"))
        assert slot["metrics"]["acquisitions"] == int(case.split("=")[1])
        assert slot["metrics"]["peak_rss_mb"] > 0
    for case, c in doc["workloads"]["W5"]["cases"].items():
        slot = c["peers"]["aiocoord"]
        if slot["status"] == "unavailable":  # no local JVM for an ensemble on this runner
            continue
        assert slot["status"] == "ok", (case, slot.get("reason"))
        assert slot["metrics"]["killed_mode"] == case
        assert 0 <= slot["metrics"]["same_session"] <= 1


def test_quick_run_writes_distributions_targets_table_and_plots(quick_run: Path) -> None:
    doc = json.loads((quick_run / "latest.json").read_text())
    dist = doc["workloads"]["W1"]["cases"]["lock"]["peers"]["aiocoord"]["distribution"]["cycle_ms"]
    assert len(dist) == 101
    assert dist == sorted(dist)
    ids = {t["id"] for t in doc["targets"]}
    assert {"W1-peers", "W1-ceiling", "W2-rate", "W2-handoff", "W3-time", "W3-memory"} <= ids
    assert {"W4-load", "W4-update", "W5-follower"} <= ids
    for t in doc["targets"]:
        assert t["met"] in (True, False, None)
    table = (quick_run / "latest.md").read_text()
    header = " | ".join(["| workload", "metric", *PEERS, "aiocoord vs best peer |"])
    assert header in table
    assert "## Targets (issue 9)" in table
    if doc.get("plots_unavailable"):
        assert doc["plots"] == []
    else:
        assert set(doc["plots"]) >= {"latency.png", "throughput.png", "w3_scaling.png"}
        for name in doc["plots"]:
            assert (quick_run / name).read_bytes()[:8] == PNG_MAGIC


def test_quick_run_measures_cpu_per_op_and_the_rtt_matrix(quick_run: Path) -> None:
    doc = json.loads((quick_run / "latest.json").read_text())
    for workload, case in (("W1", "lock"), ("W2", "handoff")):
        metrics = doc["workloads"][workload]["cases"][case]["peers"]["aiocoord"]["metrics"]
        assert metrics["client_cpu_us_per_op"] > 0, workload
    # --connect: the given server's settings only, every RTT above 0 through the proxy.
    assert [cell["rtt_ms"] for cell in doc["matrix"]] == [r for r in RTTS_MS if r > 0]
    for cell in doc["matrix"]:
        assert set(cell["workloads"]) == set(MATRIX_WORKLOADS)
        assert cell["proxy"]["frames_up"] > 0
        slot = cell["workloads"]["W1"]["cases"]["lock"]["peers"]["aiocoord"]
        assert slot["status"] == "ok", slot.get("reason")
        # A cycle is at least one round trip through the proxy, and frames were counted.
        assert slot["metrics"]["p50_ms"] >= cell["rtt_ms"]
        assert slot["metrics"]["frames_per_op"] >= 1
        assert slot["metrics"]["client_cpu_us_per_op"] > 0
    table = (quick_run / "latest.md").read_text()
    assert "+2 ms RTT (latency proxy)" in table


def test_quick_run_measures_the_scale_workloads(quick_run: Path) -> None:
    doc = json.loads((quick_run / "latest.json").read_text())
    w = doc["workloads"]
    (w6,) = w["W6"]["cases"].values()
    m = w6["peers"]["aiocoord"]["metrics"]
    assert w6["peers"]["aiocoord"]["status"] == "ok"
    assert m["load_s"] > 0 and m["update_p50_ms"] > 0 and m["cache_rss_mb"] is not None
    (w8,) = w["W8"]["cases"].values()
    m = w8["peers"]["aiocoord"]["metrics"]
    assert m["acquire_per_s"] > 0 and m["release_per_s"] > 0 and m["kb_per_lock"] is not None
    (w9,) = w["W9"]["cases"].values()
    assert w9["peers"]["aiocoord"]["metrics"]["event_p50_ms"] > 0
    (w7,) = w["W7"]["cases"].values()
    slot = w7["peers"]["aiocoord"]
    if slot["status"] != "unavailable":  # no local JVM for an ensemble on this runner
        assert slot["status"] == "ok", slot.get("reason")
        assert slot["metrics"]["expiries"] == 0
        assert slot["metrics"]["moved"] >= 1
        assert slot["metrics"]["all_back_s"] > 0
    for workload in ("W6", "W7", "W8", "W9"):
        (case,) = w[workload]["cases"].values()
        assert case["peers"]["kazoo"]["status"] in ("unavailable", "error"), workload


def test_quick_run_with_its_own_servers_runs_both_server_settings(
    tmp_path: Path,
) -> None:
    run_module(
        "benchmarks", "--quick", "--only", "W1", "--peers", "aiocoord",
        "--server-settings", "production,test", "--rtt", "0,0.5", "--no-plots",
        "--out", str(tmp_path),
    )  # fmt: skip
    doc = json.loads((tmp_path / "latest.json").read_text())
    assert "forceSync=yes" in doc["server"]["config"]
    assert "tickTime=2000" in doc["server"]["config"]
    headline = doc["workloads"]["W1"]["cases"]["lock"]["peers"]["aiocoord"]["metrics"]
    assert headline["server_cpu_us_per_op"] > 0 and headline["requests_per_op"] >= 2
    cells = [(c["server_settings"], c["rtt_ms"]) for c in doc["matrix"]]
    assert cells == [("production", 0.5), ("test", 0.0)]
    assert "forceSync=no" in doc["matrix"][1]["label"]
    table = (tmp_path / "latest.md").read_text()
    assert "## Headline: production defaults: forceSync=yes, tickTime=2000, loopback" in table
    assert "## test settings: forceSync=no, tickTime=500, loopback" in table


def test_latency_proxy_delays_each_round_trip_and_counts_frames(zookeeper: ServerHandle) -> None:
    import asyncio
    import time

    import aiocoord
    from benchmarks.latency import LatencyProxy

    async def round_trips(connect: str) -> tuple[float, float]:
        async with aiocoord.connect(connect) as client:
            began = time.perf_counter()
            for _ in range(20):
                await client.exists("/")
            one_by_one = (time.perf_counter() - began) / 20
            began = time.perf_counter()
            await asyncio.gather(*(client.exists("/") for _ in range(200)))
            return one_by_one, time.perf_counter() - began

    with LatencyProxy(zookeeper.connect_string, 4.0) as proxy:
        one, pipelined = asyncio.run(round_trips(proxy.connect_string))
        assert proxy.frames_up >= 1 + 220  # the ConnectRequest, the requests, the close
        assert proxy.frames_down >= 1 + 220
    assert one >= 0.004
    # No queueing behind the delay: 200 requests in flight take far less than 200 RTTs.
    assert pipelined < 200 * 0.004 / 4


def test_server_settings_give_zookeeper_its_production_defaults() -> None:
    options = SERVER_SETTINGS["production"].server_options()
    assert options["tick_time"] == 2000
    assert options["extra_config"]["forceSync"] == "yes"
    assert options["min_session_timeout"] == 4000
    assert SERVER_SETTINGS["test"].server_options()["extra_config"]["forceSync"] == "no"
    args = cli.parse_args(["--server-settings", "test,production", "--rtt", "2,0"])
    assert args.server_settings == ["test", "production"]
    assert args.rtt == [0.0, 2.0]
    with pytest.raises(SystemExit):
        cli.parse_args(["--server-settings", "fast"])
    with pytest.raises(SystemExit):
        cli.parse_args(["--rtt", "-1"])


def test_quick_run_does_not_touch_the_committed_results(quick_run: Path) -> None:
    # The run wrote to --out; benchmarks/results/ holds the full run's figures.
    assert (quick_run / "latest.json").exists()
    committed = REPO / "benchmarks" / "results" / "latest.json"
    if committed.exists():
        assert json.loads(committed.read_text()).get("mode") != "quick"


# --- pure parts -------------------------------------------------------------------------------


def test_percentiles_interpolate_and_summaries_name_their_keys() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 99) == 5.0
    assert math.isnan(percentile([], 50))
    s = summary([float(i) for i in range(1, 101)], "handoff_")
    assert s["handoff_p50_ms"] == pytest.approx(50.5)
    assert s["handoff_p99_ms"] == pytest.approx(99.01)
    assert s["handoff_max_ms"] == 100.0
    assert quantiles([3.0, 1.0, 2.0], 3) == [1.0, 2.0, 3.0]
    assert summary([]) == {}


def test_handoff_tracker_counts_only_handoffs_between_contenders() -> None:
    tracker = HandoffTracker()
    a, b = object(), object()
    tracker.acquired(a)
    tracker.releasing(a)
    tracker.acquired(a)  # the same holder again: not a handoff
    tracker.releasing(a)
    tracker.acquired(b)  # a -> b: one handoff
    assert tracker.acquisitions == 3
    assert len(tracker.handoffs_ms) == 1
    tracker.acquired(a)  # while b holds it: mutual exclusion broken
    assert tracker.violations == 1


def _run(status: str, **metrics: Any) -> dict[str, Any]:
    return {"status": status, "metrics": metrics}


def test_aggregate_takes_medians_shares_and_the_reason_of_failures() -> None:
    runs = [
        _run("ok", ops_per_s=300.0, same_session=True, killed_mode="leader"),
        _run("ok", ops_per_s=100.0, same_session=False, killed_mode="leader"),
        _run("ok", ops_per_s=200.0, same_session=True, killed_mode="leader"),
        {"status": "error", "reason": "boom", "metrics": {}},
    ]
    out = report.aggregate(runs)
    assert out["status"] == "ok"
    assert out["metrics"]["ops_per_s"] == 200.0
    assert out["metrics"]["same_session"] == pytest.approx(2 / 3)
    assert out["metrics"]["killed_mode"] == "leader"
    assert (out["runs_ok"], out["failed_runs"], out["reason"]) == (3, 1, "boom")
    timeout = report.aggregate([{"status": "timeout", "timeout_s": 60.0, "metrics": {}}])
    assert (timeout["status"], timeout["timeout_s"]) == ("timeout", 60.0)
    missing = report.aggregate([{"status": "unavailable", "reason": "no kazoo", "metrics": {}}])
    assert (missing["status"], missing["reason"]) == ("unavailable", "no kazoo")


def _doc(values: dict[tuple[str, str, str], dict[str, Any]]) -> dict[str, Any]:
    workloads: dict[str, Any] = {}
    for (workload, case, peer), slot in values.items():
        cases = workloads.setdefault(workload, {"title": WORKLOADS[workload], "cases": {}})
        cases["cases"].setdefault(case, {"params": {}, "peers": {}})["peers"][peer] = slot
    return {
        "mode": "full",
        "peers": {p: {"version": "1", "model": "m"} for p in PEERS},
        "workloads": workloads,
        "settings": {"repeats": 3},
    }


def _ok(**metrics: Any) -> dict[str, Any]:
    return {"status": "ok", "metrics": metrics, "runs_ok": 3, "runs": []}


def test_targets_compare_aiocoord_with_the_faster_peer() -> None:
    doc = _doc(
        {
            ("W0", "cycle", "aiocoord"): _ok(ops_per_s=800.0),
            ("W1", "lock", "aiocoord"): _ok(ops_per_s=760.0),
            ("W1", "lock", "kazoo"): _ok(ops_per_s=350.0),
            ("W1", "lock", "aiozk"): _ok(ops_per_s=500.0),
            ("W2", "handoff", "aiocoord"): _ok(acq_per_s=600.0, handoff_p50_ms=1.5),
            ("W2", "handoff", "kazoo"): _ok(acq_per_s=260.0, handoff_p50_ms=3.4),
            ("W2", "handoff", "aiozk"): _ok(acq_per_s=530.0, handoff_p50_ms=1.8),
            ("W3", "N=2000", "aiocoord"): _ok(wall_s=1.0, peak_rss_mb=50.0),
            ("W3", "N=2000", "kazoo"): _ok(wall_s=17.0),
            ("W3", "N=10000", "aiocoord"): _ok(wall_s=5.0, peak_rss_mb=120.0),
            ("W3", "N=10000", "kazoo"): {"status": "timeout", "timeout_s": 60.0, "runs": []},
        }
    )
    got = {t["id"]: t for t in report.targets(doc)}
    assert got["W1-peers"]["met"] is True  # 760 >= 1.5 x 500
    assert got["W1-ceiling"]["met"] is True  # 760 >= 0.9 x 800
    assert got["W2-rate"]["met"] is False  # 600 < 1.3 x 530
    assert "short by" in got["W2-rate"]["note"]
    assert got["W2-handoff"]["met"] is False  # 1.5 > 0.7 x 1.8
    assert got["W3-time"]["met"] is True  # 1 s <= 17 / 8
    assert got["W3-memory"]["met"] is True
    assert got["W4-load"]["met"] is None  # not measured: no verdict
    table = report.markdown({**doc, "targets": list(got.values())})
    assert "timeout >60s" in table
    assert "1.52x vs aiozk" in table  # W1: 760 / 500


def test_command_line_rejects_unknown_workloads_and_peers() -> None:
    with pytest.raises(SystemExit):
        cli.parse_args(["--only", "W99"])
    with pytest.raises(SystemExit):
        cli.parse_args(["--peers", "zookeeper-rs"])
    args = cli.parse_args(["--quick", "--only", "w2,W1", "--peers", "aiozk,aiocoord"])
    assert args.only == ["W2", "W1"]
    assert args.peers == ["aiocoord", "aiozk"]


def test_ab_compares_a_commit_with_the_working_tree(zookeeper: ServerHandle) -> None:
    """``python -m benchmarks.ab HEAD`` runs both trees on the given server, prints a line per
    counted run, the medians and the pair count, and leaves no git worktree behind."""
    proc = run_module(
        "benchmarks.ab",
        "HEAD",
        "--workload",
        "W2",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--seconds",
        "0.3",
        "--connect",
        zookeeper.connect_string,
    )
    lines = proc.stdout.splitlines()
    assert sum("acq_per_s=" in line and "median" not in line for line in lines) == 2
    assert any(line.strip().startswith("HEAD  median acq_per_s=") for line in lines)
    assert any(line.strip().startswith("working tree  median acq_per_s=") for line in lines)
    assert lines[-1].startswith("working tree better in ") and lines[-1].endswith(
        " of 1 pairs (acq_per_s)"
    )
    worktrees = subprocess.run(
        ["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True, check=True
    )
    assert "aiocoord-ab-" not in worktrees.stdout


def test_every_peer_has_a_plot_colour() -> None:
    # A peer without one broke the plots only where matplotlib is installed (`make bench`).
    from benchmarks.plots import COLORS

    assert set(PEERS) <= set(COLORS)
