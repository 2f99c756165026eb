"""Medians of the repeats, the issue's targets, and the markdown table."""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.settings import PEERS, RIVALS, SERVER_SETTINGS, WORKLOADS

#: Rows of the table: (workload, case or "*", metric, label, higher is better).
ROWS: list[tuple[str, str, str, str, bool]] = [
    ("W0", "cycle", "ops_per_s", "sequential create+getChildren+delete, cycles/s", True),
    ("W0", "cycle", "p50_ms", "cycle p50, ms", False),
    ("W0", "cycle", "requests_per_op", "ZooKeeper requests per cycle", False),
    ("W0", "pipelined", "creates_per_s", "pipelined creates/s", True),
    ("W1", "lock", "ops_per_s", "acquire+release/s", True),
    ("W1", "lock", "p50_ms", "acquire+release p50, ms", False),
    ("W1", "lock", "p99_ms", "acquire+release p99, ms", False),
    ("W1", "lock", "requests_per_op", "ZooKeeper requests per acquire+release", False),
    ("W1", "lock", "client_cpu_us_per_op", "client CPU per acquire+release, us", False),
    ("W1", "lock", "server_cpu_us_per_op", "server CPU per acquire+release, us", False),
    ("W2", "handoff", "acq_per_s", "acquisitions/s", True),
    ("W2", "handoff", "handoff_p50_ms", "handoff p50, ms", False),
    ("W2", "handoff", "handoff_p99_ms", "handoff p99, ms", False),
    ("W2", "handoff", "requests_per_op", "ZooKeeper requests per acquisition", False),
    ("W2", "handoff", "client_cpu_us_per_op", "client CPU per acquisition, us", False),
    ("W2", "handoff", "server_cpu_us_per_op", "server CPU per acquisition, us", False),
    ("W3", "*", "wall_s", "wall time, s", False),
    ("W3", "*", "peak_rss_mb", "peak RSS, MB", False),
    ("W3", "*", "requests_per_op", "ZooKeeper requests per contender", False),
    ("W4", "cache", "load_s", "initial load, s", False),
    ("W4", "cache", "update_p50_ms", "setData-to-event p50, ms", False),
    ("W4", "cache", "update_p99_ms", "setData-to-event p99, ms", False),
    ("W5", "*", "reconnect_s", "kill to reconnected, s", False),
    ("W5", "*", "same_session", "same session", True),
    ("W5", "*", "lock_held", "lock still held", True),
    ("W6", "*", "load_s", "tree cache initial load, s", False),
    ("W6", "*", "cache_rss_mb", "RSS added by the loaded cache, MB", False),
    ("W6", "*", "update_p50_ms", "paced setData-to-event p50, ms", False),
    ("W6", "*", "update_p99_ms", "paced setData-to-event p99, ms", False),
    ("W6", "*", "client_cpu_us_per_op", "client CPU per update (writer included), us", False),
    ("W7", "*", "all_back_s", "kill to every moved session back, s", False),
    ("W7", "*", "back_p50_s", "kill to a moved session back, p50, s", False),
    ("W7", "*", "moved", "sessions that were on the killed member", False),
    ("W7", "*", "expiries", "sessions expired (must be 0)", False),
    ("W7", "*", "client_cpu_ms", "client CPU from the kill until all back, ms", False),
    ("W7", "*", "server_cpu_s", "CPU of the two surviving members, s", False),
    ("W8", "*", "acquire_per_s", "acquisitions/s (one after another)", True),
    ("W8", "*", "release_per_s", "releases/s (one after another)", True),
    ("W8", "*", "kb_per_lock", "RSS per held lock, KB", False),
    ("W8", "*", "requests_per_op", "ZooKeeper requests per acquire+release", False),
    ("W8", "*", "client_cpu_us_per_op", "client CPU per acquire+release, us", False),
    ("W8", "*", "server_cpu_us_per_op", "server CPU per acquire+release, us", False),
    ("W9", "*", "load_s", "service cache initial load, s", False),
    ("W9", "*", "event_p50_ms", "paced update-to-event p50, ms", False),
    ("W9", "*", "event_p99_ms", "paced update-to-event p99, ms", False),
    ("W9", "*", "client_cpu_us_per_op", "client CPU per update (writer included), us", False),
]

#: Rows of each matrix cell's table (the matrix workloads' ops, requests and CPU per op).
MATRIX_ROWS: list[tuple[str, str, str, str, bool]] = [
    ("W0", "cycle", "ops_per_s", "sequential create+getChildren+delete, cycles/s", True),
    ("W0", "cycle", "requests_per_op", "ZooKeeper requests per cycle", False),
    ("W1", "lock", "ops_per_s", "acquire+release/s", True),
    ("W1", "lock", "p50_ms", "acquire+release p50, ms", False),
    ("W1", "lock", "requests_per_op", "ZooKeeper requests per acquire+release", False),
    ("W1", "lock", "frames_per_op", "client frames through the proxy per acquire+release", False),
    ("W1", "lock", "client_cpu_us_per_op", "client CPU per acquire+release, us", False),
    ("W1", "lock", "server_cpu_us_per_op", "server CPU per acquire+release, us", False),
    ("W2", "handoff", "acq_per_s", "acquisitions/s", True),
    ("W2", "handoff", "handoff_p50_ms", "handoff p50, ms", False),
    ("W2", "handoff", "requests_per_op", "ZooKeeper requests per acquisition", False),
    ("W2", "handoff", "frames_per_op", "client frames through the proxy per acquisition", False),
    ("W2", "handoff", "client_cpu_us_per_op", "client CPU per acquisition, us", False),
    ("W2", "handoff", "server_cpu_us_per_op", "server CPU per acquisition, us", False),
]


# --- medians ------------------------------------------------------------------------------


def aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The status and median metrics of a peer's repeats of one case.

    Numbers: the median of the successful runs. Booleans: the share of runs where true.
    When no run succeeded, the status of the first run that timed out, else was unavailable,
    else failed, with its reason.
    """
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        for status in ("timeout", "killed", "unavailable", "error"):
            bad = [r for r in runs if r.get("status") == status]
            if bad:
                out: dict[str, Any] = {"status": status, "metrics": {}, "runs_ok": 0}
                if "reason" in bad[0]:
                    out["reason"] = bad[0]["reason"]
                if status == "timeout":
                    out["timeout_s"] = max(r.get("timeout_s", 0) for r in bad)
                return out
        return {"status": "error", "metrics": {}, "runs_ok": 0, "reason": "no runs"}
    names: list[str] = []
    for r in ok:
        names += [n for n in r.get("metrics", {}) if n not in names]
    metrics: dict[str, Any] = {}
    for name in names:
        values = [r["metrics"][name] for r in ok if r["metrics"].get(name) is not None]
        if not values:
            metrics[name] = None
        elif all(isinstance(v, bool) for v in values):
            metrics[name] = sum(values) / len(values)
        elif all(isinstance(v, (int, float)) for v in values):
            metrics[name] = statistics.median(values)
        else:
            metrics[name] = Counter(map(str, values)).most_common(1)[0][0]
    out = {"status": "ok", "metrics": metrics, "runs_ok": len(ok)}
    failed = [r for r in runs if r.get("status") != "ok"]
    if failed:
        out["failed_runs"] = len(failed)
        out["reason"] = failed[0].get("reason") or failed[0].get("status")
    return out


def _slot(doc: dict[str, Any], workload: str, case: str, peer: str) -> dict[str, Any] | None:
    try:
        slot: dict[str, Any] = doc["workloads"][workload]["cases"][case]["peers"][peer]
    except KeyError:
        return None
    return slot


def metric(doc: dict[str, Any], workload: str, case: str, peer: str, name: str) -> Any:
    """The median ``name`` of ``peer`` in a case, or None if it did not run successfully."""
    slot = _slot(doc, workload, case, peer)
    if slot is None or slot.get("status") != "ok":
        return None
    return slot["metrics"].get(name)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if math.isnan(value):
        return None
    return float(value)


def best_peer(
    doc: dict[str, Any], workload: str, case: str, name: str, higher: bool
) -> tuple[str, float] | None:
    """The best of the rivals (Curator, kazoo, aiozk) on a metric, as ``(peer, value)``; None
    if none ran."""
    found = []
    for peer in RIVALS:
        v = _number(metric(doc, workload, case, peer, name))
        if v is not None:
            found.append((peer, v))
    if not found:
        return None
    return max(found, key=lambda pv: pv[1]) if higher else min(found, key=lambda pv: pv[1])


def advantage(doc: dict[str, Any], workload: str, case: str, name: str, higher: bool) -> str:
    """aiocoord against the better peer: "2.1x" means aiocoord is 2.1 times better."""
    ours = _number(metric(doc, workload, case, "aiocoord", name))
    best = best_peer(doc, workload, case, name, higher)
    if ours is None:
        return ""
    if best is None:
        caps = [_slot(doc, workload, case, p) for p in RIVALS if _slot(doc, workload, case, p)]
        timeouts = [
            float(s["timeout_s"])
            for s in caps
            if s and s.get("status") == "timeout" and s.get("timeout_s")
        ]
        if timeouts and not higher and ours > 0:
            return f">{min(timeouts) / ours:.1f}x (peers timed out)"
        return ""
    peer, theirs = best
    if ours == 0 or theirs == 0:
        return ""
    ratio = ours / theirs if higher else theirs / ours
    return f"{ratio:.2f}x vs {peer}"


# --- targets ------------------------------------------------------------------------------


def _target(
    tid: str, text: str, required: str, measured: str, met: bool | None, note: str = ""
) -> dict[str, Any]:
    return {
        "id": tid,
        "text": text,
        "required": required,
        "measured": measured,
        "met": met,
        "note": note,
    }


#: Issue 29's goals are measured against Curator, the rival users of a JVM ensemble compare with.
GOAL_PEER = "curator"
#: The server settings of the loopback goals: ZooKeeper's production defaults.
GOAL_SETTINGS = "production"
#: The round trips (ms) the latency proxy adds in the network goals.
GOAL_RTTS_MS: tuple[float, ...] = (0.5, 2.0)


@dataclass(frozen=True)
class Goal:
    """One of issue 29's goals: aiocoord's ``metric`` in a case against ``factor`` times
    Curator's, both measured in the same place (the same cell of the run)."""

    id: str
    text: str
    workload: str
    case: str
    metric: str
    higher: bool
    factor: float
    unit: str
    #: How the factor reads ("1/3 of"); default "<factor>x".
    factor_text: str = ""

    def times(self) -> str:
        """The factor as the report shows it."""
        return self.factor_text or f"{self.factor:g}x"


#: The goals at each RTT of GOAL_RTTS_MS.
RTT_GOALS: list[Goal] = [
    Goal("W1", "W1 acquire+release/s >= 2.5x Curator's", "W1", "lock", "ops_per_s", True,
         2.5, "/s"),
    Goal("W2-rate", "W2 acquisitions/s >= 1.5x Curator's", "W2", "handoff", "acq_per_s", True,
         1.5, "/s"),
    Goal("W2-handoff", "W2 hand-over p50 <= 0.6x Curator's", "W2", "handoff",
         "handoff_p50_ms", False, 0.6, " ms"),
]  # fmt: skip
#: The goals on loopback under GOAL_SETTINGS.
LOOPBACK_GOALS: list[Goal] = [
    Goal("W1", "W1 acquire+release/s >= 1.5x Curator's", "W1", "lock", "ops_per_s", True,
         1.5, "/s"),
    Goal("W2-rate", "W2 acquisitions/s >= 1.3x Curator's", "W2", "handoff", "acq_per_s", True,
         1.3, "/s"),
    Goal("W1-cpu", "client CPU per W1 acquire+release <= 0.5x Curator's", "W1", "lock",
         "client_cpu_us_per_op", False, 0.5, " us"),
    Goal("W2-cpu", "client CPU per W2 acquisition <= 0.5x Curator's", "W2", "handoff",
         "client_cpu_us_per_op", False, 0.5, " us"),
]  # fmt: skip


def measured_under(
    doc: dict[str, Any], settings: str | None, rtt_ms: float
) -> tuple[dict[str, Any], str] | None:
    """Where a run measured under server ``settings`` (a key of ``SERVER_SETTINGS``; None:
    any) with ``rtt_ms`` added by the latency proxy (0: loopback): the headline table (the
    document itself) or a matrix cell, with its label; None if the run has neither.

    The headline is loopback under the first ``--server-settings``, recorded by its
    description; each matrix cell records its settings' name and RTT."""
    if rtt_ms == 0:
        headline = doc.get("server_settings")
        names = [settings] if settings else list(SERVER_SETTINGS)
        if any(headline == SERVER_SETTINGS[n].describe() for n in names):
            return doc, f"{headline}, loopback"
    for cell in doc.get("matrix", []):
        if _number(cell.get("rtt_ms")) != rtt_ms:
            continue
        if settings is None or cell.get("server_settings") == settings:
            return cell, str(cell.get("label", ""))
    return None


def _failed(slot: dict[str, Any] | None) -> str | None:
    """How a peer's runs of a case failed (timed out, killed, error); None if they did not
    run, were unavailable, or succeeded."""
    if slot is None or slot.get("status") in ("ok", "unavailable", None):
        return None
    status = str(slot["status"])
    if status == "timeout":
        return f"timeout >{slot.get('timeout_s', 0):.0f} s"
    return f"{status}: {slot['reason']}" if slot.get("reason") else status


def _why_missing(scope: dict[str, Any], workload: str, case: str, peer: str) -> str:
    slot = _slot(scope, workload, case, peer)
    if slot is None:
        return f"{peer} did not run it"
    return f"{peer}: {slot.get('status')}" + (f" ({slot['reason']})" if slot.get("reason") else "")


def against_goal_peer(
    tid: str,
    text: str,
    where: tuple[dict[str, Any], str] | None,
    goal: Goal,
) -> dict[str, Any]:
    """The row of one :class:`Goal`, measured in ``where`` (from :func:`measured_under`).

    Not measured (no verdict) when the run lacked the place, aiocoord did not run, or
    Curator has no figure; not met when aiocoord's runs failed (timed out, killed, error)."""
    workload, case, name, higher, unit = (
        goal.workload,
        goal.case,
        goal.metric,
        goal.higher,
        goal.unit,
    )
    sign = ">=" if higher else "<="
    required = f"{sign} {goal.times()} Curator's"
    if where is None:
        return _target(tid, text, required, "not measured", None, "the run has no such cell")
    scope, label = where
    ours = _number(metric(scope, workload, case, "aiocoord", name))
    theirs = _number(metric(scope, workload, case, GOAL_PEER, name))
    failed = _failed(_slot(scope, workload, case, "aiocoord"))
    if ours is None:
        if failed:
            return _target(tid, text, required, failed, False, label)
        note = _why_missing(scope, workload, case, "aiocoord")
        return _target(tid, text, required, "not measured", None, note)
    if theirs is None or theirs <= 0:
        note = _why_missing(scope, workload, case, GOAL_PEER)
        return _target(tid, text, required, f"{_format(ours, name)}{unit}", None, note)
    need = goal.factor * theirs
    met = ours >= need if higher else ours <= need
    shown = f"{_format(theirs, name)}{unit}"
    required = f"{sign} {_format(need, name)}{unit} ({goal.times()} Curator's {shown})"
    measured = f"{_format(ours, name)}{unit} ({ours / theirs:.2f}x Curator's)"
    if met:
        note = ""
    elif higher:
        note = f"short by {(need - ours) / need:.0%}"
    else:
        note = f"{(ours - need) / need:.0%} over"
    return _target(tid, text, required, measured, met, note)


def _only_case(doc: dict[str, Any], workload: str) -> str | None:
    """The case of a scale workload (its size, ``N=...``): the largest if several."""
    cases: list[str] = list(doc.get("workloads", {}).get(workload, {}).get("cases", {}))
    if not cases:
        return None
    return max(cases, key=lambda c: _size(c) or 0.0)


def _size(case: str) -> float | None:
    try:
        return float(case.split("=", 1)[1])
    except (IndexError, ValueError):
        return None


def _w7_goal(doc: dict[str, Any]) -> dict[str, Any]:
    """W7: no session expired, and every session that was on the killed member back within
    the session timeout, in every repeat (the worst run decides, not the median)."""
    tid = "W7-sessions"
    text = "W7: no expiry, every moved session back within the session timeout"
    case = _only_case(doc, "W7")
    slot = _slot(doc, "W7", case, "aiocoord") if case else None
    params = doc["workloads"]["W7"]["cases"][case]["params"] if case else {}
    timeout = _number(params.get("session_timeout", doc.get("settings", {}).get("session_timeout")))
    limit = f"{timeout:g} s" if timeout else "the session timeout"
    required = f"0 expiries; all back within {limit}"
    if slot is None or slot.get("status") == "unavailable":
        note = _why_missing(doc, "W7", case, "aiocoord") if case else ""
        return _target(tid, text, required, "not measured", None, note)
    failed = _failed(slot)
    if failed:
        return _target(tid, text, required, failed, False)
    runs = [r for r in slot.get("runs", []) if r.get("status") == "ok"] or [slot]
    expiries = max(_number(r["metrics"].get("expiries")) or 0 for r in runs)
    backs = [_number(r["metrics"].get("all_back_s")) for r in runs]
    moved = _number(slot["metrics"].get("moved"))
    if any(b is None for b in backs) or timeout is None:
        return _target(tid, text, required, f"{expiries:g} expiries", None, "no return time")
    back = max(b for b in backs if b is not None)
    bad_runs = slot.get("failed_runs", 0)
    met = expiries == 0 and back <= timeout and not bad_runs
    measured = (
        f"{expiries:g} expiries; {moved or 0:g} moved sessions all back in {back:.3g} s "
        f"(worst of {len(runs)} run{'s' if len(runs) > 1 else ''})"
    )
    notes = []
    if expiries:
        notes.append(f"{expiries:g} expired")
    if back > timeout:
        notes.append(f"{back - timeout:.3g} s late")
    if bad_runs:
        notes.append(f"{bad_runs} runs failed: {slot.get('reason')}")
    return _target(tid, text, required, measured, met, "; ".join(notes))


def targets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 29's goals for aiocoord against Curator, then the earlier W3-W5 targets as
    no-regression rows: each with what was required, what was measured and whether it is
    met (None: not measured, or reported only)."""
    out: list[dict[str, Any]] = []
    production = SERVER_SETTINGS[GOAL_SETTINGS]
    for rtt in GOAL_RTTS_MS:
        where = measured_under(doc, GOAL_SETTINGS, rtt) or measured_under(doc, None, rtt)
        # Not under the production settings (another headline, --connect): say where.
        label = where[1] if where is not None else ""
        elsewhere = where is not None and not label.startswith(production.label)
        for goal in RTT_GOALS:
            text = f"+{rtt:g} ms RTT: {goal.text}" + (f" ({label})" if elsewhere else "")
            out.append(against_goal_peer(f"rtt{rtt:g}-{goal.id}", text, where, goal))
    where = measured_under(doc, GOAL_SETTINGS, 0.0)
    for goal in LOOPBACK_GOALS:
        text = f"loopback, production settings: {goal.text}"
        out.append(against_goal_peer(f"loopback-{goal.id}", text, where, goal))
    case = _only_case(doc, "W6")
    where = (doc, "headline") if case else None
    for goal in (
        Goal("W6-load", "W6: tree cache load >= 3x faster than Curator's TreeCache's", "W6",
             case or "", "load_s", False, 1 / 3, " s", "1/3 of"),
        Goal("W6-memory", "W6: tree cache memory <= 1/3 of Curator's TreeCache's", "W6",
             case or "", "cache_rss_mb", False, 1 / 3, " MB", "1/3 of"),
    ):  # fmt: skip
        out.append(against_goal_peer(goal.id, goal.text, where, goal))
    out.append(_w7_goal(doc))
    return out + no_regression(doc)


def no_regression(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 9's W3, W4 and W5 targets, against the faster peer, kept so that issue 29's work
    is seen not to undo them."""
    out: list[dict[str, Any]] = []

    def m(w: str, c: str, name: str, peer: str = "aiocoord") -> float | None:
        return _number(metric(doc, w, c, peer, name))

    def versus(tid: str, text: str, w: str, c: str, name: str, higher: bool, factor: float) -> None:
        ours = m(w, c, name)
        best = best_peer(doc, w, c, name, higher)
        if ours is None or best is None:
            out.append(_target(tid, text, "", "not measured", None))
            return
        peer, theirs = best
        if higher:
            need = factor * theirs
            ratio = ours / theirs if theirs else math.inf
            met = ours >= need
            required = f">= {need:.4g} ({factor:g}x {peer}'s {theirs:.4g})"
            note = "" if met else f"short by {(need - ours) / need:.0%}"
        else:
            need = factor * theirs
            ratio = theirs / ours if ours else math.inf
            met = ours <= need
            required = f"<= {need:.4g} ({factor:.3g}x {peer}'s {theirs:.4g})"
            note = "" if met else f"{(ours - need) / need:.0%} above the limit"
        measured = f"{ours:.4g} (advantage {ratio:.2f}x over {peer})"
        out.append(_target(tid, text, required, measured, met, note))

    w3_cases = sorted(
        doc.get("workloads", {}).get("W3", {}).get("cases", {}),
        key=lambda c: int(c.split("=")[1]),
    )
    mid = "N=2000" if "N=2000" in w3_cases else (w3_cases[-1] if w3_cases else "N=2000")
    ours = m("W3", mid, "wall_s")
    best = best_peer(doc, "W3", mid, "wall_s", False)
    text = f"W3 {mid} wall time <= 1/8 of the faster peer's"
    if ours is not None and best is not None:
        peer, theirs = best
        met = ours <= theirs / 8
        out.append(
            _target(
                "W3-time",
                text,
                f"<= {theirs / 8:.4g} s (1/8 of {peer}'s {theirs:.4g} s)",
                f"{ours:.4g} s ({theirs / ours:.1f}x faster than {peer})",
                met,
                "" if met else f"{ours / (theirs / 8):.1f}x too slow",
            )
        )
    elif ours is not None:
        caps = [
            s.get("timeout_s")
            for p in RIVALS
            if (s := _slot(doc, "W3", mid, p)) and s.get("status") == "timeout"
        ]
        if caps:
            cap = min(c for c in caps if c)
            out.append(
                _target(
                    "W3-time",
                    text,
                    f"<= 1/8 of the peers' (which timed out at {cap:.0f} s)",
                    f"{ours:.4g} s (>{cap / ours:.1f}x faster)",
                    ours <= cap / 8,
                )
            )
        else:
            out.append(_target("W3-time", text, "", "not measured", None))
    else:
        out.append(_target("W3-time", text, "", "not measured", None))
    big = w3_cases[-1] if w3_cases else "N=10000"
    slot = _slot(doc, "W3", big, "aiocoord")
    rss = m("W3", big, "peak_rss_mb")
    if slot is not None and slot.get("status") == "ok" and rss is not None:
        out.append(
            _target(
                "W3-memory",
                f"W3 {big} completes with peak RSS under 300 MB",
                "< 300 MB",
                f"{rss:.0f} MB in {m('W3', big, 'wall_s') or 0:.3g} s",
                rss < 300,
            )
        )
    else:
        status = str(slot.get("status")) if slot else "not measured"
        if slot and slot.get("status") == "timeout":
            status = f"timeout >{slot.get('timeout_s', 0):.0f} s"
        if slot and any(r.get("server_crashed") for r in slot.get("runs", [])):
            status += " (ZooKeeper crashed: OutOfMemoryError)"
        out.append(_target("W3-memory", f"W3 {big} completes under 300 MB", "< 300 MB",
                           str(status), False if slot else None))  # fmt: skip
    versus("W4-load", "W4 initial load >= 3x faster than the faster peer", "W4", "cache",
           "load_s", False, 1 / 3)  # fmt: skip
    versus("W4-update", "W4 update p50 no worse than the peers'", "W4", "cache",
           "update_p50_ms", False, 1.0)  # fmt: skip
    sec = m("W5", "follower", "reconnect_s")
    same = m("W5", "follower", "same_session")
    held = m("W5", "follower", "lock_held")
    if sec is not None:
        met = sec <= 0.5 and same == 1.0 and held == 1.0
        out.append(
            _target(
                "W5-follower",
                "W5 follower kill: reconnected within 0.5 s, same session, lock held",
                "<= 0.5 s, same session, lock held",
                f"{sec:.3f} s, same session {_share(same)}, lock held {_share(held)}",
                met,
                "" if sec <= 0.5 else f"{sec - 0.5:.3f} s over",
            )
        )
    else:
        out.append(_target("W5-follower", "W5 follower kill", "", "not measured", None))
    sec = m("W5", "leader", "reconnect_s")
    if sec is not None:
        same = m("W5", "leader", "same_session")
        held = m("W5", "leader", "lock_held")
        out.append(
            _target(
                "W5-leader",
                "W5 leader kill (reported, no target)",
                "report",
                f"{sec:.3f} s, same session {_share(same)}, lock held {_share(held)}",
                None,
            )
        )
    for t in out:
        t["text"] = "no regression: " + t["text"]
    return out


def _share(value: Any) -> str:
    if value is None:
        return "?"
    return f"{value:.0%}"


# --- markdown -----------------------------------------------------------------------------


def _format(value: Any, name: str) -> str:
    if value is None:
        return "-"
    if name in ("same_session", "lock_held"):
        return _share(value)
    v = _number(value)
    if v is None:
        return str(value)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if abs(v) >= 0.01 else f"{v:.2g}"


def _cell(doc: dict[str, Any], workload: str, case: str, peer: str, name: str) -> str:
    slot = _slot(doc, workload, case, peer)
    if slot is None:
        return "-"
    status = slot.get("status")
    if status == "ok":
        text = _format(slot["metrics"].get(name), name)
        if any(r.get("server_crashed") for r in slot.get("runs", [])):
            text += " (server crashed)"
        if slot.get("failed_runs"):
            text += f" ({slot['runs_ok']}/{slot['runs_ok'] + slot['failed_runs']} ok)"
        return text
    if status == "timeout":
        return f"timeout >{slot.get('timeout_s', 0):.0f}s"
    crashed = any(r.get("server_crashed") for r in slot.get("runs", []))
    if status == "timeout":
        return f"timeout >{slot.get('timeout_s', 0):.0f}s" + (
            " (server crashed)" if crashed else ""
        )
    if status == "killed":
        return "killed (memory)"
    return (status or "-") + (" (server crashed)" if crashed else "")


def _table(
    doc: dict[str, Any], peers: list[str], rows: list[tuple[str, str, str, str, bool]] | None
) -> list[str]:
    """One markdown table: a row per metric, a column per peer, aiocoord's ratio last."""
    lines = [
        "| workload | metric | " + " | ".join(peers) + " | aiocoord vs best peer |",
        "|---|---|" + "---:|" * len(peers) + "---:|",
    ]
    for workload, case, name, label, higher in _rows(doc, rows):
        where = (
            workload
            if case in ("cycle", "pipelined", "lock", "handoff", "cache")
            else (f"{workload} {case}")
        )
        cells = [_cell(doc, workload, case, p, name) for p in peers]
        ratio = advantage(doc, workload, case, name, higher) if name not in (
            "same_session", "lock_held", "moved", "expiries") else ""  # fmt: skip
        lines.append(f"| {where} | {label} | " + " | ".join(cells) + f" | {ratio} |")
    return lines


def _rows(
    doc: dict[str, Any], table: list[tuple[str, str, str, str, bool]] | None = None
) -> list[tuple[str, str, str, str, bool]]:
    rows = []
    for workload, case, name, label, higher in ROWS if table is None else table:
        cases = doc.get("workloads", {}).get(workload, {}).get("cases", {})
        chosen = list(cases) if case == "*" else [case] if case in cases else []
        rows += [(workload, c, name, label, higher) for c in chosen]
    return rows


def markdown(doc: dict[str, Any]) -> str:
    """The results as markdown: context, the table with ratios, the targets, the notes."""
    peers = [p for p in PEERS if p in doc.get("peers", {})]
    mach = doc.get("machine", {})
    server = doc.get("server", {})
    versions = ", ".join(
        f"{p} {doc['peers'][p].get('version') or '(not installed)'} ({doc['peers'][p]['model']})"
        for p in peers
    )
    lines = [
        f"# aiocoord benchmarks ({doc.get('mode')} run, {doc.get('date')})",
        "",
        f"- Machine: {mach.get('nproc')} CPUs ({mach.get('cpu_model')}), "
        f"{mach.get('memory_gb')} GB, {mach.get('os')}, {mach.get('python')}",
        f"- ZooKeeper {server.get('version', '?')} on loopback ({server.get('config', '')}); "
        "W5 and W7 on a local 3-member ensemble with the same settings",
        f"- Peers: {versions}",
        f"- Repeats: {doc.get('settings', {}).get('repeats')} per workload and peer, "
        "interleaved, each in a fresh process; the median is shown",
        f"- Reproduce: `make bench` (or `{doc.get('command')}`); "
        f"this run took {doc.get('elapsed_s', 0):.0f} s"
        + (f", at commit {doc['commit']}" if doc.get("commit") else ""),
        "",
        "Ratio: aiocoord against the best of Curator, kazoo and aiozk on that row "
        "(above 1x: aiocoord is better, whether the metric is a rate or a time).",
        "",
        f"## Headline: {doc.get('server_settings', 'test settings')}, loopback",
        "",
        *_table(doc, peers, None),
    ]
    for cell in doc.get("matrix", []):
        lines += ["", f"## {cell['label']}", ""]
        proxy = cell.get("proxy")
        if proxy:
            lines += [
                f"Latency proxy: {proxy['connections']} connections, {proxy['frames_up']:,} "
                f"frames up, {proxy['frames_down']:,} down, {proxy['cpu_s']:.2f} s of its CPU.",
                "",
            ]
        lines += _table({"workloads": cell["workloads"]}, peers, MATRIX_ROWS)
    lines += ["", "## Targets (issue 29)", "", *TARGETS_INTRO, ""]
    lines += ["| target | required | measured | met |", "|---|---|---|---|"]
    for t in doc.get("targets", []):
        met = {True: "yes", False: "**no**", None: "-"}[t["met"]]
        if t["met"] is None and (t["measured"] == "not measured" or t.get("note")):
            met = "not measured"  # else a row that is reported only
        if t.get("note"):
            met += f" ({t['note']})"
        lines.append(f"| {t['text']} | {t['required']} | {t['measured']} | {met} |")
    lines += ["", "## Workloads", ""]
    for workload, title in WORKLOADS.items():
        if workload in doc.get("workloads", {}):
            lines.append(f"- **{workload}** {title}.")
    lines += ["", *NOTES]
    crashes = doc.get("server", {}).get("crashes") or []
    if crashes:
        lines += ["", "## ZooKeeper crashed", ""]
        lines += [
            f"- during {c['during']}: {c['reason']} (restarted with its data for the next run)"
            for c in crashes
        ]
    problems = _problems(doc)
    if problems:
        lines += ["", "## Runs that did not succeed", "", *problems]
    if doc.get("plots"):
        lines += ["", "## Plots", ""]
        lines += [f"![{name}]({name})" for name in doc["plots"]]
    if doc.get("plots_unavailable"):
        lines += ["", f"Plots not drawn: {doc['plots_unavailable']}"]
    return "\n".join(lines) + "\n"


TARGETS_INTRO = [
    "Issue 29's goals, each against Curator in the same run: the RTT rows in the matrix cells "
    "through the latency proxy, the loopback rows under ZooKeeper's production defaults, W6 "
    "and W7 from the headline run. A goal the run lacked (a cell, a workload, or Curator) is "
    'not measured. The "no regression" rows keep issue 9\'s W3-W5 targets against the '
    "faster peer.",
]

NOTES = [
    "Recipes used: aiocoord `Lock` and `ChildrenCache`; kazoo `Lock` and `TreeCache` (kazoo's "
    "only cache recipe); aiozk `Lock` and `TreeCache` (built on its DataWatcher and "
    "ChildrenWatcher; it emits no events, so an update is timed when its DataWatcher has "
    "fetched the new data, and its load counts until every watch loop has set its watch).",
    "Handoff latency: from the holder's call to release until the acquire of the next "
    "holder returns, all 8 clients (own sessions) in one process (kazoo: one thread each).",
    "W3 runs every peer and N in a fresh process (peak RSS is that process's). A run over "
    "the cap is killed and shown as a timeout; a peer that timed out is not run at larger N.",
    "W5: the worker SIGKILLs the member its client is connected to (a follower, then the "
    "leader) while holding a lock; session timeout 10 s for every peer.",
    "Client CPU: the worker process's CPU time (every thread; for Curator the JVM's, JIT and "
    "GC included) over the measured part only, divided by its operations. Server CPU: the "
    "ZooKeeper JVM's CPU time (/proc) over the whole worker run, warm-up and connecting "
    "included, divided by the operations (W1 counts its warm-up cycles). Requests: mntr "
    "zk_packets_received (pings and handshakes included); through the latency proxy also the "
    "client frames it forwarded.",
    "Matrix cells: the latency proxy (benchmarks/latency.py) delays each direction by RTT/2, "
    "keeps order and caps nothing; every peer, Curator's JVM included, connects through it.",
    "W6-W9 (issue 29): aiocoord `TreeCache`, `Lock`, `ServiceCache` against Curator's "
    "`TreeCache`, `InterProcessMutex`, curator-x-discovery `ServiceCache`; kazoo and aiozk "
    "are not run (W6 uses Curator's `TreeCache`: Curator 5.4's `CuratorCache` loads at most "
    "~65,000 nodes, CURATOR-690). W6/W9 updates are sent at a fixed rate (open loop) to "
    "distinct nodes by a second client in the same process. W7 SIGKILLs a follower; it is "
    "started again after the run. W8's release phase ends, for every peer, once the server "
    "has applied every release (aiocoord: `wait_background()` and a `sync()`; Curator: each "
    "release waits for its delete, then a sync).",
]


def main(argv: list[str]) -> int:
    """Recompute the targets and rewrite the markdown of a results file (next to it)."""
    source = Path(argv[0]) if argv else Path(__file__).parent / "results" / "latest.json"
    doc = json.loads(source.read_text())
    doc["targets"] = targets(doc)
    source.write_text(json.dumps(doc, indent=1) + "\n")
    source.with_suffix(".md").write_text(markdown(doc))
    print(f"rewrote {source} and {source.with_suffix('.md')}")
    return 0


def _problems(doc: dict[str, Any]) -> list[str]:
    out = []
    for workload, entry in doc.get("workloads", {}).items():
        for case, c in entry.get("cases", {}).items():
            for peer, slot in c.get("peers", {}).items():
                for i, run in enumerate(slot.get("runs", [])):
                    if run.get("status") in ("error", "unavailable", "killed"):
                        out.append(
                            f"- {workload} {case} {peer} run {i + 1}: {run['status']}: "
                            f"{run.get('reason', '')}"
                        )
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
