"""The picture of a check: a self-contained HTML page (inline CSS and SVG, no script, nothing
fetched), drawn as Porcupine draws its histories.

One lane per client; each operation a bar from its call to its return (an UNKNOWN one fades
out to the end: it may take effect any time after its call); the linearization found is a line
through a point in each linearized bar, numbered in order. For a violation the page shows the
smallest failing prefix of its key, ending at the return of the operation that cannot be
placed (red), with the longest linearizable prefix (green) and the state each step leaves.
Time is drawn in event order, one column per distinct call or return time, so that concurrency
shows whatever the durations.
"""

from __future__ import annotations

import html
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Protocol

from aiocoord.testing.history._recording import Operation, Outcome
from aiocoord.testing.history._verdicts import Verdict, Violation


class Drawn(Protocol):
    """What the page shows of a check (a ``CheckResult``)."""

    @property
    def verdict(self) -> Verdict: ...
    @property
    def model(self) -> Any: ...
    @property
    def operations(self) -> tuple[Operation, ...]: ...
    @property
    def linearizations(self) -> Mapping[Hashable, tuple[Operation, ...]]: ...
    @property
    def violation(self) -> Violation | None: ...
    @property
    def reason(self) -> str: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def explored(self) -> int: ...


#: The most operations one page draws (the last ones of a violation's prefix): past a few
#: hundred bars a picture is no longer read.
MAX_DRAWN = 300
#: The most steps of the linearization the table lists (the last ones).
MAX_STEPS = 60

_COLUMN = 14  # pixels per event column, at least
_WIDE = 2400  # pixels the columns may take in all, when there are few: room for labels
_ROW = 22  # pixels per bar row
_LANE_GAP = 8
_NAMES = 150  # the lane names' column (outside the scrolled part: always in sight)
_LEFT = 10  # before the first column
_TOP = 26  # the axis

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d1d1f; }
h1 { font-size: 1.3em; margin: 0 0 .3em; }
h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
.verdict { display: inline-block; padding: .15em .6em; border-radius: .3em; color: white;
  font-weight: 600; }
.v-linearizable { background: #1f883d; } .v-not-linearizable { background: #cf222e; }
.v-unknown { background: #9a6700; }
.facts { color: #57606a; margin: .3em 0 1em; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: 1.6em; height: .9em; vertical-align: middle;
  margin-right: .3em; border: 1px solid #57606a; }
.frame { display: flex; border: 1px solid #d0d7de; border-radius: .3em; }
.names { flex: none; border-right: 1px solid #d0d7de; }
.scroll { overflow-x: auto; flex: 1; }
/* A violation's picture opens scrolled to its end, where the operation that cannot be placed is. */
.scroll.at-end { direction: rtl; } .scroll.at-end svg { direction: ltr; }
svg text { font: 11px ui-monospace, monospace; }
.lane { fill: #f6f8fa; } .lane-name { font-weight: 600; fill: #24292f; }
.axis { stroke: #d0d7de; }
.bar { stroke: #57606a; stroke-width: 1; }
.lin { fill: #aceebb; } .stuck { fill: #ff8182; stroke: #a40e26; stroke-width: 2.5; }
.lost { stroke-dasharray: 4 3; } .stuck-label { fill: #a40e26; font-weight: 700; }
.unplaced { fill: #d0d7de; } .unknown { fill: url(#fade); stroke-dasharray: 4 3; }
.fail { fill: url(#hatch); stroke: #8c959f; }
.point { fill: #0969da; } .line { stroke: #0969da; stroke-width: 1.5; fill: none; }
.cut { stroke: #a40e26; stroke-width: 1.5; stroke-dasharray: 5 4; }
table { border-collapse: collapse; margin-top: .5em; }
td, th { border: 1px solid #d0d7de; padding: .2em .6em; text-align: left;
  font: 12px ui-monospace, monospace; }
th { background: #f6f8fa; } tr.stuck-row td { background: #ffebe9; font-weight: 600; }
"""


def render(result: Drawn) -> str:
    """The page of ``result``."""
    model = result.model
    violation = result.violation
    parts: list[str] = []
    title = f"{model.name}: {result.verdict.value}"
    clients = {op.client for op in result.operations}
    keys = {op.key for op in result.operations}
    counts = {o: sum(op.outcome is o for op in result.operations) for o in Outcome}
    pending = sum(op.outcome is None for op in result.operations)
    parts.append(
        f"<h1>{_e(model.name)} history: "
        f'<span class="verdict v-{result.verdict.name.lower().replace("_", "-")}">'
        f"{_e(result.verdict.value)}</span></h1>"
    )
    parts.append(
        f'<p class="facts">{len(result.operations)} operations ({counts[Outcome.OK]} ok, '
        f"{counts[Outcome.UNKNOWN] + pending} unknown, {counts[Outcome.FAIL]} failed) by "
        f"{len(clients)} client(s) on {len(keys)} key(s); checked in {result.elapsed:.3f} s, "
        f"{result.explored} configurations explored. {_e(result.reason)}.</p>"
    )
    parts.append(_LEGEND)
    if violation is not None:
        stuck = violation.stuck
        key = "" if violation.key is None else f" on key {violation.key!r}"
        parts.append(
            f"<h2>Operation {stuck.id} of {_e(stuck.client)} cannot be placed{_e(key)}</h2>"
            f"<p><b>{_e(stuck.describe())}</b> returned, and no order of the operations "
            f"called before its return gives every result recorded. The longest "
            f"linearizable prefix found has {len(violation.linearized)} operation(s) and "
            f"leaves the state <code>{_e(model.describe_state(violation.state))}</code>. "
            f"The smallest failing prefix ({len(violation.prefix)} operations, ending at "
            f"the dashed line) is drawn"
            + (f", its last {MAX_DRAWN}" if len(violation.prefix) > MAX_DRAWN else "")
            + ".</p>"
        )
        linearized_ids = {op.id for op in violation.linearized}
        parts.append(
            _svg(
                _window(violation.prefix),
                list(violation.linearized),
                linearized_ids,
                stuck,
            )
        )
        parts.append(_steps(model, list(violation.linearized), stuck, violation.state))
    else:
        budget = MAX_DRAWN
        by_key: dict[Hashable, list[Operation]] = {}
        for op in result.operations:
            by_key.setdefault(op.key, []).append(op)
        for key_, ops in by_key.items():
            if budget <= 0:
                parts.append(f"<p>({len(by_key)} keys; the others are not drawn.)</p>")
                break
            order = list(result.linearizations.get(key_, ()))
            drawn = ops[:budget]
            budget -= len(drawn)
            name = "the history" if key_ is None else f"key {key_!r}"
            more = f", its first {len(drawn)}" if len(drawn) < len(ops) else ""
            parts.append(f"<h2>{_e(name)}: {len(ops)} operations{more}</h2>")
            parts.append(_svg(drawn, order, {op.id for op in order}, None))
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n"
        "</body></html>\n"
    )


_LEGEND = (
    '<p class="legend"><span><i style="background:#aceebb"></i>linearized</span>'
    '<span><i style="background:#ff8182;border-color:#a40e26"></i>cannot be placed</span>'
    '<span><i style="background:#d0d7de"></i>not placed yet</span>'
    '<span><i style="background:linear-gradient(90deg,#fff1c2,#fff)"></i>unknown (reply lost):'
    " may take effect any time after its call, or never</span>"
    '<span><i style="background:repeating-linear-gradient(45deg,#eaeef2 0 3px,#fff 3px 6px)">'
    "</i>failed: did not happen</span>"
    '<span><i style="background:#0969da;height:2px;border:0"></i>the linearization, '
    "numbered</span></p>"
)


def _window(prefix: Sequence[Operation]) -> list[Operation]:
    """The last :data:`MAX_DRAWN` operations of ``prefix``, by call."""
    ops = sorted(prefix, key=lambda op: (op.call, op.id))
    return ops[-MAX_DRAWN:]


def _svg(
    ops: Sequence[Operation],
    order: Sequence[Operation],
    linearized: set[int],
    stuck: Operation | None,
) -> str:
    if not ops:
        return "<p>(no operations)</p>"
    drawn_ids = {op.id for op in ops}
    end_time = max(max(op.call, op.ret or op.call) for op in ops)
    if stuck is not None and stuck.ret is not None:
        end_time = max(end_time, stuck.ret)
    times = sorted({t for op in ops for t in (op.call, op.ret) if t is not None})
    column = {t: i for i, t in enumerate(times)}
    step = max(float(_COLUMN), min(40.0, _WIDE / len(times)))
    last_x = _LEFT + (len(times) + 2) * step

    def x_of(t: int) -> float:
        return _LEFT + column[t] * step + step / 2

    def end_of(op: Operation) -> float:
        if op.ret is None or op.outcome is not Outcome.OK:
            return last_x  # UNKNOWN or pending: any time after the call
        return x_of(op.ret)

    # Lanes: one per client, as many rows as its bars overlap (an UNKNOWN operation's bar
    # runs to the end while its client goes on).
    lanes: dict[str, list[float]] = {}
    row_of: dict[int, tuple[str, int]] = {}
    for op in sorted(ops, key=lambda o: (o.call, o.id)):
        rows = lanes.setdefault(op.client, [])
        start = x_of(op.call)
        for r, busy_until in enumerate(rows):
            if busy_until < start:
                rows[r] = end_of(op)
                row_of[op.id] = (op.client, r)
                break
        else:
            rows.append(end_of(op))
            row_of[op.id] = (op.client, len(rows) - 1)
    lane_y: dict[str, float] = {}
    y = float(_TOP)
    for client, rows in lanes.items():
        lane_y[client] = y
        y += len(rows) * _ROW + _LANE_GAP
    height = y + 10
    width = last_x + 260  # room for the label of the operation that cannot be placed
    at_end = " at-end" if stuck is not None else ""
    names = [
        f'<div class="frame"><svg class="names" xmlns="http://www.w3.org/2000/svg" '
        f'width="{_NAMES}" height="{height:.0f}">'
    ]
    for client, rows in lanes.items():
        ly = lane_y[client]
        names.append(
            f'<rect class="lane" x="0" y="{ly - 2:.0f}" width="{_NAMES}" '
            f'height="{len(rows) * _ROW + 4}"/>'
            f'<text class="lane-name" x="8" y="{ly + _ROW / 2 + 4:.0f}">{_e(client[:20])}</text>'
        )
    names.append("</svg>")
    out = [
        *names,
        f'<div class="scroll{at_end}"><svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">',
        '<defs><linearGradient id="fade"><stop offset="0" stop-color="#fff1c2"/>'
        '<stop offset="1" stop-color="#ffffff" stop-opacity="0.2"/></linearGradient>'
        '<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
        '<rect width="3" height="6" fill="#eaeef2"/></pattern></defs>',
    ]
    for client, rows in lanes.items():
        ly = lane_y[client]
        out.append(
            f'<rect class="lane" x="0" y="{ly - 2:.0f}" width="{width:.0f}" '
            f'height="{len(rows) * _ROW + 4}"/>'
        )
    for i in range(0, len(times), 10):
        ax = x_of(times[i])
        out.append(
            f'<line class="axis" x1="{ax:.0f}" y1="{_TOP - 8}" x2="{ax:.0f}" y2="{height:.0f}"/>'
            f'<text x="{ax + 2:.0f}" y="{_TOP - 12}" fill="#8c959f">{i}</text>'
        )
    number = {op.id: k for k, op in enumerate(order, 1)}
    centre: dict[int, tuple[float, float, float]] = {}
    for op in ops:
        client, r = row_of[op.id]
        top = lane_y[client] + r * _ROW
        x1, x2 = x_of(op.call), end_of(op)
        if stuck is not None and op.id == stuck.id:
            cls = "stuck"
        elif op.outcome is Outcome.FAIL:
            cls = "fail"
        elif op.id in linearized:
            cls = "lin" if op.outcome is Outcome.OK else "lin lost"
        elif op.outcome is not Outcome.OK:
            cls = "unknown"
        else:
            cls = "unplaced"
        w = max(x2 - x1, 4.0)
        label = op.describe()
        if op.id in number:
            label = f"#{number[op.id]} {label}"
        fits = max(int(w / 6.7) - 1, 0)
        shown = label if len(label) <= fits else label[: max(fits - 1, 0)] + "…"
        tip = f"operation {op.id} of {op.client}: {op.describe()}"
        out.append(
            f'<g><title>{_e(tip)}</title><rect class="bar {cls}" x="{x1:.1f}" '
            f'y="{top + 2:.0f}" width="{w:.1f}" height="{_ROW - 5}" rx="3"/>'
            + (
                f'<text x="{x1 + 3:.1f}" y="{top + _ROW / 2 + 3:.0f}">{_e(shown)}</text>'
                if shown
                else ""
            )
            + "</g>"
        )
        if cls == "stuck":
            out.append(
                f'<text class="stuck-label" x="{x1 + w + 6:.1f}" y="{top + _ROW / 2 + 3:.0f}">'
                f"✗ {_e(op.describe())}</text>"
            )
        centre[op.id] = (x1, x2, top + _ROW / 2)
    # The linearization: a point in each bar, after the previous point, in order.
    points: list[tuple[float, float]] = []
    at = 0.0
    for op in order:
        if op.id not in drawn_ids:
            continue
        x1, x2, cy = centre[op.id]
        at = min(max(at + 3, x1 + 3), x2 - 1)
        points.append((at, cy))
    if len(points) > 1:
        out.append(
            '<polyline class="line" points="'
            + " ".join(f"{px:.1f},{py:.0f}" for px, py in points)
            + '"/>'
        )
    out.extend(f'<circle class="point" cx="{px:.1f}" cy="{py:.0f}" r="3"/>' for px, py in points)
    if stuck is not None and stuck.ret is not None and stuck.ret in column:
        cx = x_of(stuck.ret)
        out.append(
            f'<line class="cut" x1="{cx:.1f}" y1="{_TOP - 8}" x2="{cx:.1f}" y2="{height:.0f}"/>'
        )
    out.append("</svg></div></div>")
    return "\n".join(out)


def _steps(model: Any, order: Sequence[Operation], stuck: Operation, state: object) -> str:
    """The table of the last steps of the longest linearizable prefix, then the stuck one."""
    rows: list[str] = []
    now = model.initial()
    states: list[object] = []
    for op in order:
        _, now = model.step(now, op)
        states.append(now)
    first = max(len(order) - MAX_STEPS, 0)
    if first:
        rows.append(f'<tr><td colspan="4">… {first} earlier steps</td></tr>')
    for k in range(first, len(order)):
        op = order[k]
        rows.append(
            f"<tr><td>{k + 1}</td><td>{_e(op.client)}</td><td>{_e(op.describe())}</td>"
            f"<td>{_e(model.describe_state(states[k]))}</td></tr>"
        )
    rows.append(
        f'<tr class="stuck-row"><td>✗</td><td>{_e(stuck.client)}</td><td>{_e(stuck.describe())}'
        f"</td><td>cannot be placed in {_e(model.describe_state(state))}</td></tr>"
    )
    return (
        "<h2>The longest linearizable prefix, step by step</h2><table><tr><th>#</th>"
        "<th>client</th><th>operation</th><th>state after</th></tr>" + "".join(rows) + "</table>"
    )


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
