"""PNG plots drawn from the results document alone (so they can be redrawn from latest.json):
latency distributions, throughput bars, the W3 scaling curve, cache load and failover times.

``python -m benchmarks.plots results/latest.json`` redraws them next to that file.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from benchmarks.report import metric
from benchmarks.settings import PEERS

COLORS = {
    "aiocoord": "#1f77b4",
    "aiocoord_uvloop": "#17becf",
    "curator": "#d62728",
    "kazoo": "#ff7f0e",
    "aiozk": "#2ca02c",
}


def _peers(doc: dict[str, Any]) -> list[str]:
    return [p for p in PEERS if p in doc.get("peers", {})]


def _distribution(doc: dict[str, Any], workload: str, case: str, peer: str, name: str) -> list[Any]:
    try:
        slot = doc["workloads"][workload]["cases"][case]["peers"][peer]
    except KeyError:
        return []
    if slot.get("status") != "ok":
        return []
    values: list[Any] = slot.get("distribution", {}).get(name, [])
    return values


def _subtitle(doc: dict[str, Any]) -> str:
    mach = doc.get("machine", {})
    return (
        f"{doc.get('date', '')[:10]} · {mach.get('nproc')} CPUs · "
        f"ZooKeeper {doc.get('server', {}).get('version', '?')} · {doc.get('mode')} run"
    )


def _number_label(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2g}" if value < 0.1 else f"{value:.2f}"


def _plain_log_axis(axis: Any) -> None:
    """Log scale labelled with plain numbers (1, 10, 100), no labels on minor ticks."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _latency(plt: Any, doc: dict[str, Any], path: Path) -> bool:
    panels = [
        ("W0", "cycle", "cycle_ms", "W0 raw create+getChildren+delete"),
        ("W1", "lock", "cycle_ms", "W1 uncontended acquire+release"),
        ("W2", "handoff", "handoff_ms", "W2 handoff (release -> next acquire)"),
        ("W4", "cache", "update_ms", "W4 setData -> cache event"),
    ]
    panels = [
        p for p in panels if any(_distribution(doc, p[0], p[1], peer, p[2]) for peer in PEERS)
    ]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    for ax, (workload, case, name, title) in zip(axes[0], panels, strict=True):
        for peer in _peers(doc):
            q = _distribution(doc, workload, case, peer, name)
            if not q:
                continue
            pct = [100.0 * i / (len(q) - 1) for i in range(len(q))]
            ax.plot(q, pct, label=peer, color=COLORS[peer], linewidth=2)
        ax.set_xscale("log")
        _plain_log_axis(ax.xaxis)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("latency, ms (log)")
        ax.set_ylabel("percentile")
        ax.set_ylim(0, 100)
        ax.axhline(50, color="grey", linewidth=0.5, linestyle=":")
        ax.axhline(99, color="grey", linewidth=0.5, linestyle=":")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("Latency distributions (CDF; left is better)\n" + _subtitle(doc), fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _bars(ax: Any, doc: dict[str, Any], rows: list[tuple[str, str, str, str]], unit: str) -> bool:
    peers = _peers(doc)
    width = 0.8 / max(len(peers), 1)
    drawn = False
    for i, peer in enumerate(peers):
        xs, ys = [], []
        for j, (workload, case, name, _) in enumerate(rows):
            v = metric(doc, workload, case, peer, name)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v):
                xs.append(j + (i - (len(peers) - 1) / 2) * width)
                ys.append(v)
        if xs:
            drawn = True
            bars = ax.bar(xs, ys, width, label=peer, color=COLORS[peer])
            ax.bar_label(bars, labels=[_number_label(y) for y in ys], fontsize=7, padding=2)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r[3] for r in rows], fontsize=8)
    ax.set_ylabel(unit)
    ax.grid(True, axis="y", alpha=0.3)
    ax.margins(y=0.15)
    if drawn:
        ax.legend(fontsize=8)
    return drawn


def _throughput(plt: Any, doc: dict[str, Any], path: Path) -> bool:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [3, 1]})
    left = [
        ("W0", "cycle", "ops_per_s", "W0 raw cycle/s"),
        ("W1", "lock", "ops_per_s", "W1 acquire+release/s"),
        ("W2", "handoff", "acq_per_s", "W2 acquisitions/s"),
    ]
    right = [("W0", "pipelined", "creates_per_s", "W0 pipelined creates/s")]
    drawn = _bars(axes[0], doc, left, "operations per second")
    drawn = _bars(axes[1], doc, right, "creates per second") or drawn
    fig.suptitle("Throughput (higher is better)\n" + _subtitle(doc), fontsize=11)
    fig.tight_layout()
    if drawn:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return drawn


def _scaling(plt: Any, doc: dict[str, Any], path: Path) -> bool:
    cases = doc.get("workloads", {}).get("W3", {}).get("cases", {})
    if not cases:
        return False
    ns = sorted(int(c.split("=")[1]) for c in cases)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    drawn = False
    for peer in _peers(doc):
        for ax, name in zip(axes, ("wall_s", "peak_rss_mb"), strict=True):
            xs, ys, tx, ty, kx, ky = [], [], [], [], [], []
            for n in ns:
                slot = cases[f"N={n}"]["peers"].get(peer)
                if slot is None:
                    continue
                if slot.get("status") == "ok":
                    if name not in slot["metrics"]:
                        continue  # a peer that does not measure it (Curator: no peak RSS)
                    xs.append(n)
                    ys.append(slot["metrics"][name])
                elif slot.get("status") == "timeout" and name == "wall_s":
                    tx.append(n)
                    ty.append(slot.get("timeout_s", 0))
                elif slot.get("status") == "killed" and name == "wall_s":
                    kx.append(n)
                    ky.append(doc.get("settings", {}).get("w3_timeout_s", 60.0))
            if xs:
                drawn = True
                ax.plot(xs, ys, marker="o", label=peer, color=COLORS[peer], linewidth=2)
            if tx:
                ax.scatter(tx, ty, marker="^", s=80, facecolors="none", edgecolors=COLORS[peer],
                           label=f"{peer}: timeout (> cap)")  # fmt: skip
                if xs:
                    ax.plot([xs[-1], tx[0]], [ys[-1], ty[0]], linestyle=":", color=COLORS[peer])
            if kx:
                ax.scatter(kx, ky, marker="x", s=80, color=COLORS[peer],
                           label=f"{peer}: killed (memory > cap)")  # fmt: skip
                if xs:
                    ax.plot([xs[-1], kx[0]], [ys[-1], ky[0]], linestyle=":", color=COLORS[peer])
    axes[0].set_title("W3 wall time: N contenders acquire once and release", fontsize=10)
    axes[0].set_ylabel("seconds (log)")
    axes[1].set_title("W3 peak RSS of the process", fontsize=10)
    axes[1].set_ylabel("MB")
    axes[1].axhline(300, color="red", linewidth=0.8, linestyle="--", label="300 MB target")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("N contenders (log)")
        _plain_log_axis(ax.xaxis)
        ax.set_xticks(ns)
        ax.set_xticklabels([f"{n:,}" for n in ns])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_yscale("log")
    _plain_log_axis(axes[0].yaxis)
    fig.suptitle("W3 many waiters (lower is better)\n" + _subtitle(doc), fontsize=11)
    fig.tight_layout()
    if drawn:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return drawn


def _cache_failover(plt: Any, doc: dict[str, Any], path: Path) -> bool:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    drawn = _bars(axes[0], doc, [("W4", "cache", "load_s", "W4 initial load")], "seconds")
    w5 = [
        ("W5", case, "reconnect_s", f"W5 {case} killed")
        for case in doc.get("workloads", {}).get("W5", {}).get("cases", {})
    ]
    if w5:
        drawn = _bars(axes[1], doc, w5, "seconds until reconnected") or drawn
        axes[1].axhline(0.5, color="red", linewidth=0.8, linestyle="--", label="0.5 s target")
        axes[1].legend(fontsize=8)
    axes[0].set_title("W4 cache of the children: initial load", fontsize=10)
    axes[1].set_title("W5 failover: SIGKILL to reconnected (same session)", fontsize=10)
    fig.suptitle("Cache load and failover (lower is better)\n" + _subtitle(doc), fontsize=11)
    fig.tight_layout()
    if drawn:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return drawn


def write_all(doc: dict[str, Any], out: Path) -> tuple[list[str], str | None]:
    """Draw every plot the results allow into ``out``; returns (file names, why none)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return [], f"matplotlib is not installed ({exc}); pip install 'aiocoord[bench]'"
    written = []
    for name, draw in (
        ("latency.png", _latency),
        ("throughput.png", _throughput),
        ("w3_scaling.png", _scaling),
        ("cache_failover.png", _cache_failover),
    ):
        if draw(plt, doc, out / name):
            written.append(name)
    return written, None


def main(argv: list[str]) -> int:
    """Redraw the plots of a results file next to it."""
    source = Path(argv[0]) if argv else Path(__file__).parent / "results" / "latest.json"
    doc = json.loads(source.read_text())
    written, reason = write_all(doc, source.parent)
    print(reason or "wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
