"""What the demo shows of a run: the status table of its stage and the summary at the end."""

from __future__ import annotations

from aiocoord.cli.demo._board import yes
from aiocoord.cli.demo._stage import Stage

__all__ = ["frame", "summary"]


def frame(demo: Stage) -> list[str]:
    """The status table: the ensemble, each worker, the totals, the recent events."""
    b = demo.board
    where = "embedded 3-member ensemble" if demo.ensemble else f"ZooKeeper {demo.connect}"
    lines = [f"aiocoord demo · {where} · {b.elapsed():5.1f} s · {demo.phase}"]
    if demo.member_modes:
        modes = "   ".join(
            f"member {i + 1}: {m.upper() if m in ('leader', 'down') else m}"
            for i, m in enumerate(demo.member_modes)
        )
        lines.append(f" ZooKeeper   {modes}")
    lines.append(
        f" {'worker':<10} {'server':<16} {'session':<19} {'state':<12} "
        f"{'role':<7} {'lock':<12} {'jobs':>5}"
    )
    for w in demo.workers:
        activity = "maintenance" if demo.maintenance is w else w.activity
        role = "LEADER" if w.latch.is_leader else "-"
        lines.append(
            f" {w.name:<10} {demo.where(w.client):<16} "
            f"{f'0x{w.client.session_id:x}':<19} {w.client.state.value:<12} "
            f"{role:<7} {activity:<12} {w.jobs:>5}"
        )
    members = sorted(demo.cache.children) if demo.cache is not None else []
    lines.append(
        f" jobs {demo.total_jobs()} · lock acquisitions {demo.result.acquisitions} · "
        f"holders at once: max {demo.result.max_holders} · "
        f"members in the dashboard cache: {len(members)}"
    )
    lines.append(f" {'─' * 30} events {'─' * 30}")
    lines.extend(b.recent)
    return lines


def summary(demo: Stage, runtime: float) -> list[str]:
    """The summary printed at the end: what was measured and checked."""
    r = demo.result
    where = (
        f"embedded 3-member ensemble (started in {demo.ensemble.last_start_seconds or 0:.1f} s)"
        if demo.ensemble is not None
        else f"{demo.user_connect} (under {demo.base}, removed afterwards)"
    )
    per = ", ".join(f"{n} {j}" for n, j in demo.jobs_by_worker.items())
    failover = f"{r.failover_seconds:.2f} s" if r.failover_seconds is not None else "-"
    lines = [
        "",
        "aiocoord demo: summary",
        f"  ZooKeeper: {where}",
        f"  workers: {demo.n_workers}, each with its own session; a newcomer joined "
        "during the failover",
        f"  jobs done: {r.jobs} ({per})",
        f"  ledger: {r.ledger}; no lost update: {yes(r.ledger == r.jobs and r.jobs > 0)}",
        f"  lock acquisitions: {r.acquisitions}; holders at once: max {r.max_holders}; "
        f"fencing tokens increasing: {yes(r.tokens_increasing)}",
        f"  failover time: {failover}",
        f"  same session: {yes(r.same_session)}",
        f"  lock held across failover: {yes(r.lock_held)}",
        f"  leader unchanged: {yes(r.leader_unchanged)}",
        f"  cache in sync: {yes(r.cache_in_sync)}",
        f"  all sessions kept: {yes(r.sessions_kept)}",
    ]
    lines += [f"  note: {note}" for note in demo.notes]
    failed = [name for name, ok in r.checks.items() if not ok]
    lines.append(f"  runtime: {runtime:.1f} s")
    lines.append(
        "  result: all checks passed" if not failed else f"  result: FAILED: {', '.join(failed)}"
    )
    return lines
