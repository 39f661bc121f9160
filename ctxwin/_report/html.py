"""A replay as one self-contained HTML file: inline SVG, no script, no network.

Per trace, three charts of stacked bars, one bar per request: cached tokens (dark) under
uncached ones (light), for the unmanaged history, the policy and (when computed) the
clairvoyant optimum; the policy's window jumps are marked with a tick above the bar, and the
context window is drawn as a red line, labelled in the margin right of the bars. Then the
tokens of each tool's results over every request, before and after the policy, in bars
labelled in a monospace font so that a label's width is known here: one too long for its
column is shortened in the middle (:func:`_fit`), whole in its tooltip. A summary
table comes first (trace names without their common folder, which the caption gives; the
table wraps long names and scrolls sideways on a narrow page).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING
from unicodedata import east_asian_width

from ctxwin._report.replay import cost_formula, optimum_total, replay_total
from ctxwin._report.summary import MAX_ROUNDS, biggest_rounds
from ctxwin._report.tables import common_dir, many

if TYPE_CHECKING:
    from ctxwin._report.data import ReplayResult, ReplayStats, ReportData

__all__ = ["replay_html", "report_html"]

_W, _H, _PAD = 900, 160, 28
_MARGIN = 96
"""Room right of the bars for the window's label."""
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:960px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:12px 0;font-size:13px}
td,th{padding:3px 7px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{white-space:normal;vertical-align:bottom}caption{text-align:left;color:#555}
th:first-child,td:first-child{text-align:left}
td.name{white-space:normal;overflow-wrap:anywhere;min-width:10em;max-width:18em}
h2{margin-top:32px;overflow-wrap:anywhere}svg{max-width:100%;height:auto}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px}
"""


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Characters HTML does not allow in a page (a tool name from a trace may hold them)."""


def _visible(value: str) -> str:
    """Text from a trace with its control characters shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def _text(value: str) -> str:
    """Text from a trace (names of traces and tools) for the page: escaped, and control
    characters shown as ``\\xNN``."""
    return escape(_visible(value))


_LABEL = 340
"""Where the bars of a horizontal chart start: their labels end 8 px left of it."""
_LABEL_FONT = 12
_MONO = "ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',monospace"
"""The labels' font: monospace, so that their width is known without a browser (each
character at most 0.62 em; Menlo and DejaVu Sans Mono 0.602, Consolas 0.55)."""
LABEL_CELLS = int((_LABEL - 8 - 4) / (0.62 * _LABEL_FONT))
"""Characters of a label at most (a wide East Asian character counts two): its column,
less 4 px at the left edge."""


def _cells(text: str) -> int:
    return sum(2 if east_asian_width(c) in "WF" else 1 for c in text)


def _fit(text: str, cells: int = LABEL_CELLS) -> str:
    """``text`` in ``cells`` characters: whole, or its start and its longer end (a tool's
    call count, a round's state, what sets apart two names of one server) around "…"."""
    if _cells(text) <= cells:
        return text
    head_room = (cells - 1) // 3
    head, tail = "", ""
    for c in text:
        if _cells(head + c) > head_room:
            break
        head += c
    for c in reversed(text):
        if _cells(head + tail + c) > cells - 1:
            break
        tail = c + tail
    return f"{head}…{tail}"


def _cost(s: ReplayStats) -> str:
    return f"{s.effective_cost:,.0f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}x" if b else "-"


def _summary(results: Sequence[ReplayResult]) -> str:
    head = (
        "<tr><th>trace</th><th>requests</th><th>unmanaged cost</th><th>managed cost</th>"
        "<th>x unmanaged</th><th>optimum cost</th><th>x optimum</th><th>peak</th>"
        "<th>window</th><th>problems</th></tr>"
    )
    rows = []
    common = common_dir([r.name for r in results]) if len(results) > 1 else ""
    for r in results:
        u, m, o = r.unmanaged, r.managed, r.optimum
        rows.append(
            f'<tr><td class="name" title="{_text(r.name)}">{_text(r.name[len(common) :])}</td>'
            f"<td>{m.requests}</td><td>{_cost(u)}</td>"
            f"<td>{_cost(m)}</td><td>{_ratio(m.effective_cost, u.effective_cost)}</td>"
            f"<td>{_cost(o) if o else '-'}</td>"
            f"<td>{_ratio(m.effective_cost, o.effective_cost) if o else '-'}</td>"
            f"<td>{m.peak:,}</td><td>{r.context_window:,}</td><td>{m.problems}</td></tr>"
        )
    if len(results) > 1:  # each trace's cost at its own prices, summed; the largest peak
        (u, m), o = replay_total(results), optimum_total(results)
        rows.append(
            f'<tr class="total"><th>total ({len(results)} traces)</th>'
            f"<th>{m.requests}</th><th>{_cost(u)}</th><th>{_cost(m)}</th>"
            f"<th>{_ratio(m.effective_cost, u.effective_cost)}</th>"
            f"<th>{_cost(o) if o else '-'}</th>"
            f"<th>{_ratio(m.effective_cost, o.effective_cost) if o else '-'}</th>"
            f"<th>{m.peak:,}</th><th>-</th><th>{m.problems}</th></tr>"
        )
    caption = f"<caption>traces in {_text(common)}</caption>" if common else ""
    return f'<div class="scroll"><table>{caption}{head}{"".join(rows)}</table></div>'


MAX_BARS = 400
"""Bars in a chart at most (two pixels each): a longer trace has one bar per run of
requests, the largest of them, so that the page stays small (5,000 requests: about 350 kB)."""


def _bars(
    series: Sequence[tuple[int, int]], jumps: Sequence[bool]
) -> tuple[list[tuple[int, int, str]], list[bool], int]:
    """The bars of a chart: (total, cached, which requests), whether the window jumped in
    them, and how many requests one bar stands for."""
    per = -(-len(series) // MAX_BARS) if series else 1
    bars: list[tuple[int, int, str]] = []
    marks: list[bool] = []
    for start in range(0, len(series), per):
        run = range(start, min(start + per, len(series)))
        i = max(run, key=lambda k: series[k][0])  # the largest request of the run
        label = f"request {i}" if per == 1 else f"requests {run[0]}-{run[-1]}, largest {i}"
        bars.append((*series[i], label))
        marks.append(any(k < len(jumps) and jumps[k] for k in run))
    return bars, marks, per


def _chart(
    title: str, series: Sequence[tuple[int, int]], jumps: Sequence[bool], top: int, window: int
) -> str:
    """Stacked bars (cached below, uncached above) of one way of sending a trace."""
    bars, marks, per = _bars(series, jumps)
    if per > 1:
        title += f", each bar the largest of {per} requests"
    n = max(len(bars), 1)
    right = _W - _MARGIN  # bars and lines end here; the window's label sits beyond
    step = (right - _PAD) / n
    scale = (_H - 2 * _PAD) / max(top, 1)
    base = _H - _PAD
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" role="img" aria-label="{_text(title)}">',
        f'<text x="{_PAD}" y="16" font-size="13">{_text(title)}</text>',
        f'<line x1="{_PAD}" y1="{base}" x2="{right}" y2="{base}" stroke="#888"/>',
    ]
    for i, (total, cached, label) in enumerate(bars):
        x = _PAD + i * step
        w = max(step * 0.8, 0.5)
        hc, hu = cached * scale, (total - cached) * scale
        parts.append(
            f'<rect class="cached" x="{x:.1f}" y="{base - hc:.1f}" width="{w:.1f}" '
            f'height="{hc:.1f}" fill="#2b6cb0"><title>{label}: {cached:,} cached'
            "</title></rect>"
        )
        parts.append(
            f'<rect class="uncached" x="{x:.1f}" y="{base - hc - hu:.1f}" width="{w:.1f}" '
            f'height="{hu:.1f}" fill="#f6ad55"><title>{label}: {total - cached:,} '
            "uncached</title></rect>"
        )
        if marks[i]:
            y = base - hc - hu - 4
            parts.append(
                f'<path class="jump" d="M{x + w / 2:.1f} {y:.1f} l-3 -6 h6 z" fill="#222"/>'
            )
    if window and window <= top:
        y = base - window * scale
        parts.append(
            f'<line class="window" x1="{_PAD}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
            f'stroke="#e53e3e" stroke-dasharray="4 3"/><text class="window-label" '
            f'x="{right + 6}" y="{y + 4:.1f}" font-size="11" fill="#e53e3e">'
            f"window {window:,}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _trace(r: ReplayResult) -> str:
    detail = r.requests_detail
    unmanaged = [f.unmanaged for f in detail]
    managed = [f.managed for f in detail]
    jumps = [f.jump for f in detail]
    top = max([t for t, _ in unmanaged] + [r.context_window], default=1)
    out = [f"<h2>{_text(r.name)}</h2>"]
    out += [f'<p class="note">note: {_text(note)}</p>' for note in r.notes]
    out.append(_chart("unmanaged", unmanaged, [], top, r.context_window))
    out.append(_chart("policy (▼ window jump)", managed, jumps, top, r.context_window))
    if all(f.optimum is not None for f in detail) and detail:
        best = [f.optimum for f in detail if f.optimum is not None]
        out.append(_chart("clairvoyant optimum", best, [], top, r.context_window))
    if r.tools:
        tools = sorted(r.tools, key=lambda t: -t.tokens_before)
        out.append(
            _pairs(
                "per tool: tokens of its results over every request, unmanaged → policy",
                [
                    (f"{t.tool} ({many(t.calls, 'call')})", t.tokens_before, t.tokens_after)
                    for t in tools
                ],
            )
        )
    return "".join(out)


def replay_html(results: Sequence[ReplayResult]) -> str:
    """One page: the summary table, then each trace's charts."""
    price = cost_formula(results, "×") if results else "No traces."
    legend = (
        '<p class="legend"><span style="background:#2b6cb0"></span>cached'
        '<span style="background:#f6ad55"></span>uncached'
        '<span style="background:#e53e3e"></span>context window; per tool: '
        '<span style="background:#f6ad55"></span>unmanaged'
        '<span style="background:#2b6cb0"></span>policy</p>'
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>ctxwin replay</title><style>{_CSS}</style></head><body>"
        f"<h1>ctxwin replay</h1><p>{_text(price)}</p>"
        f"{legend + _summary(results) if results else ''}"
        f"{''.join(_trace(r) for r in results)}</body></html>\n"
    )


def _pairs(title: str, items: Sequence[tuple[str, int, int]]) -> str:
    """Horizontal bars, before (light) over after (dark), one pair per item, on one scale:
    the longest bar of either (an after may be the longer: a result repair added)."""
    row = 26
    height = _PAD + row * len(items) + 8
    top = max([max(b, a) for _, b, a in items] + [1])
    label, span = _LABEL, _W - _LABEL - 180  # room right of the bars for the figures
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
        f'viewBox="0 0 {_W} {height}" role="img" aria-label="{_text(title)}">',
        f'<text x="0" y="16" font-size="13">{_text(title)}</text>',
    ]
    for i, (name, before, after) in enumerate(items):
        y = _PAD + i * row
        wb, wa = span * before / top, span * after / top
        shown = _fit(_visible(name))
        full = f"<title>{_text(name)}</title>" if shown != _visible(name) else ""
        parts.append(
            f'<text x="{label - 8}" y="{y + 14}" font-size="{_LABEL_FONT}" '
            f'font-family="{_MONO}" text-anchor="end">{full}{escape(shown)}</text>'
            f'<rect class="before" x="{label}" y="{y}" width="{wb:.1f}" height="10" '
            f'fill="#f6ad55"><title>{_text(name)}: {before:,} before</title></rect>'
            f'<rect class="after" x="{label}" y="{y + 11}" width="{wa:.1f}" height="10" '
            f'fill="#2b6cb0"><title>{_text(name)}: {after:,} after</title></rect>'
            f'<text x="{label + max(wb, wa) + 6:.1f}" y="{y + 14}" font-size="11">'
            f"{before:,} → {after:,}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def report_html(report: ReportData, title: str = "request") -> str:
    """One request's report: tokens per tool and per round, before and after the policy;
    of a request of many rounds, the biggest :data:`MAX_ROUNDS` (by tokens before the
    policy, as the text report lists them), drawn in their order, so that the page stays
    small (5,000 rounds drawn made a 2 MB page)."""
    tools = [(t.tool, t.tokens_before, t.tokens_after) for t in report.tools]
    shown = sorted(biggest_rounds(report, MAX_ROUNDS), key=lambda r: r.index)
    rounds = [
        (f"round {r.index} ({', '.join(r.tools)}) {r.state}", r.tokens_before, r.tokens_after)
        for r in shown
    ]
    per_round = "per round"
    if len(shown) < len(report.rounds):
        per_round += f": {len(shown)} of {len(report.rounds):,} rounds, the biggest"
    legend = (
        '<p class="legend"><span style="background:#f6ad55"></span>before'
        '<span style="background:#2b6cb0"></span>after</p>'
    )
    summary = (
        f"<p>{report.tokens_before:,} → {report.tokens_after:,} tokens "
        f"(context window {report.context_window:,}); {many(len(report.edits), 'edit')}; "
        f"counted with {_text(report.counter)}</p>"
    )
    drawn = [_pairs(name, items) for name, items in (("per tool", tools), (per_round, rounds))]
    charts = (
        legend + "".join(d for d, items in zip(drawn, (tools, rounds), strict=True) if items)
        if tools or rounds
        else "<p>No tool calls: nothing to draw per tool or per round.</p>"
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>ctxwin report</title><style>{_CSS}</style></head><body>"
        f"<h1>ctxwin report: {_text(title)}</h1>{summary}{charts}</body></html>\n"
    )
