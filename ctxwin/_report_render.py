"""Rendering reports as text tables, Markdown and JSON.

Three things are rendered, each three ways:

- one :class:`~ctxwin.Report` (``report_text``, ``report_markdown``, ``report_json``; also
  ``Report.to_text()`` and friends);
- several reports, one per request file, with their total (``reports_text`` ...);
- the replay of several traces, unmanaged beside managed, summed (``replay_text`` ...,
  from :mod:`ctxwin._report_render_replay`).

Text is plain ASCII laid out to fit ``width`` columns (100 by default): long names are cut
with ``...``, long edit lists collapsed to the edits that saved most. Markdown is
GitHub-flavoured (tables, for PR comments and notebooks). JSON carries ``"version": 1``.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxwin._report import SCHEMA_VERSION, Report, RoundStats, ToolStats
from ctxwin._report_render_base import (
    _arrow,
    _Col,
    _common_dir,
    _cut,
    _dumps,
    _many,
    _md,
    _md_table,
    _n,
    _pairs,
    _pct,
    _table,
    _tools_label,
    _upper,
    _wrap,
)
from ctxwin._report_render_replay import replay_json, replay_markdown, replay_text

if TYPE_CHECKING:
    from ctxwin.steps._base import Edit

__all__ = [
    "replay_json",
    "replay_markdown",
    "replay_text",
    "report_json",
    "report_markdown",
    "report_text",
    "reports_json",
    "reports_markdown",
    "reports_text",
]

MAX_EDITS = 20
"""Edits listed in full before the rest are collapsed into one "... and K more" line."""
MAX_ROUNDS = 5
"""Rounds listed (the biggest, by tokens before the policy)."""


# ------------------------------------------------------------------------------ one report


def _counter_label(report: Report) -> str:
    return f"{report.counter} ({'exact' if report.exact else 'estimate'})"


def _summary_pairs(report: Report) -> list[tuple[str, str]]:
    steps = Counter(e.step for e in report.edits)
    return [
        ("format", report.format),
        ("counter", _counter_label(report)),
        ("tokens", _arrow(report.tokens_before, report.tokens_after)),
        ("saved", f"{_n(report.saved)} ({_pct(report.saved, report.tokens_before)})"),
        (
            "context window",
            f"{_n(report.context_window)} "
            f"({_pct(report.tokens_after, report.context_window)} used)",
        ),
        ("messages", _arrow(report.messages_before, report.messages_after)),
        ("window events", _n(report.window_events)),
        ("over budget", "YES" if report.over_budget else "no"),
        ("edits", ", ".join(f"{s} {c}" for s, c in steps.most_common()) or "none"),
        ("fallbacks", _fallback_label(report.edits)),
    ]


def _fallback_label(edits: Sequence[Edit]) -> str:
    counts = Counter(e.fallback for e in edits if e.fallback)
    if not counts:
        return "none"
    return ", ".join(f"{f} x{c}" if c > 1 else f for f, c in counts.most_common())


def _tool_rows(tools: Sequence[ToolStats], tokens_after: int) -> list[list[str] | None]:
    rows: list[list[str] | None] = [
        [
            t.tool,
            _n(t.calls),
            _n(t.tokens_before),
            _n(t.tokens_after),
            _n(t.saved),
            f"{t.share:.1%}",
        ]
        for t in tools
    ]
    if len(tools) > 1:
        before = sum(t.tokens_before for t in tools)
        after = sum(t.tokens_after for t in tools)
        rows.append(None)
        rows.append(
            [
                "all tools",
                _n(sum(t.calls for t in tools)),
                _n(before),
                _n(after),
                _n(before - after),
                _pct(after, tokens_after),
            ]
        )
    return rows


_TOOL_COLS = (
    _Col("tool", "<", flex=True, min_width=12),
    _Col("calls"),
    _Col("before"),
    _Col("after"),
    _Col("saved"),
    _Col("share"),
)
_TOOL_HEADER = ("tool", "calls", "before", "after", "saved", "share")


def _round_summary(report: Report) -> str:
    states = Counter(r.state for r in report.rounds)
    n = len(report.rounds)
    return (
        f"rounds: {n} ({states['kept']} kept, {states['edited']} edited, "
        f"{states['dropped']} dropped)"
    )


def _biggest_rounds(report: Report, limit: int) -> list[RoundStats]:
    return sorted(report.rounds, key=lambda r: (-r.tokens_before, r.index))[:limit]


def _shown_edits(edits: Sequence[Edit], limit: int) -> tuple[list[Edit], list[Edit]]:
    """The edits listed (all of them, or the ``limit`` that saved most) and the rest."""
    if len(edits) <= limit:
        return list(edits), []
    order = sorted(range(len(edits)), key=lambda i: (-edits[i].saved, i))
    keep = set(order[:limit])
    return [edits[i] for i in order[:limit]], [e for i, e in enumerate(edits) if i not in keep]


def _edits_head(edits: Sequence[Edit], shown: int) -> str:
    saved = sum(e.saved for e in edits)
    head = f"edits: {len(edits)}, {_n(saved)} tokens saved"
    if shown < len(edits):
        head += f"; the {shown} that saved most:"
    return head


def _rest_line(rest: Sequence[Edit]) -> str:
    saved = _n(sum(e.saved for e in rest))
    return f"... and {_many(len(rest), 'more edit')} ({saved} tokens saved)"


def _edit_cells(e: Edit) -> list[str]:
    return [
        e.call_id or "-",
        e.tool,
        e.step,
        "-" if e.message_index is None else str(e.message_index),
        _n(e.tokens_before),
        _n(e.tokens_after),
        _n(e.saved),
        e.fallback or "-",
    ]


_EDIT_HEADER = ("call id", "tool", "step", "msg", "before", "after", "saved", "fallback")


def report_text(
    report: Report, width: int = 100, *, max_edits: int = MAX_EDITS, title: str | None = None
) -> str:
    """The report as aligned text tables that fit in ``width`` columns."""
    head = _cut(f"ctxwin report: {title}", width, left=True) if title else "ctxwin report"
    out = [head, *_pairs(_summary_pairs(report), width)]
    if report.tools:
        out += ["", *_table(_TOOL_COLS, _tool_rows(report.tools, report.tokens_after), width)]
    if report.rounds:
        big = _biggest_rounds(report, MAX_ROUNDS)
        head = _round_summary(report)
        head += "; the biggest:" if len(big) < len(report.rounds) else ":"
        round_cols = (
            _Col("round"),
            _Col("msg"),
            _Col("tools", "<", flex=True, min_width=10),
            _Col("before"),
            _Col("after"),
            _Col("state", "<"),
        )
        rows: list[Sequence[str] | None] = [
            [
                str(r.index),
                "-" if r.message_index is None else str(r.message_index),
                _tools_label(r.tools),
                _n(r.tokens_before),
                _n(r.tokens_after),
                r.state,
            ]
            for r in big
        ]
        out += ["", head, *_table(round_cols, rows, width)]
    if report.edits:
        shown, rest = _shown_edits(report.edits, max_edits)
        edit_cols = (
            _Col("call id", "<", flex=True, min_width=10),
            _Col("tool", "<", flex=True),
            _Col("step", "<"),
            _Col("msg"),
            _Col("before"),
            _Col("after"),
            _Col("saved"),
            _Col("fallback", "<", flex=True),
        )
        out += ["", _edits_head(report.edits, len(shown))]
        out += _table(edit_cols, [_edit_cells(e) for e in shown], width)
        if rest:
            out.append(_rest_line(rest))
    if report.fixes:
        out += ["", f"pairing fixes: {len(report.fixes)}"]
        for f in report.fixes:
            out += textwrap.wrap(str(f), width, initial_indent="  ", subsequent_indent="    ")
    if report.notes:
        out += ["", "notes:"]
        for n in report.notes:
            out += textwrap.wrap(n, width, initial_indent="  ", subsequent_indent="    ")
    return "\n".join(out) + "\n"


def report_markdown(report: Report, *, max_edits: int = MAX_EDITS, title: str | None = None) -> str:
    """The report as GitHub-flavoured Markdown: a summary row, then tools, rounds, edits."""
    out = [f"### {_md(title) if title else 'ctxwin report'}", ""]
    pairs = _summary_pairs(report)
    out += _md_table([p[0] for p in pairs], [[p[1].replace("->", "→") for p in pairs]], set())
    if report.tools:
        tool_rows = [
            ["**all tools**" if r[0] == "all tools" else r[0], *r[1:]]
            for r in _tool_rows(report.tools, report.tokens_after)
            if r is not None
        ]
        out += ["", "#### Tools", "", *_md_table(_TOOL_HEADER, tool_rows, {1, 2, 3, 4, 5})]
    if report.rounds:
        big = _biggest_rounds(report, MAX_ROUNDS)
        head = _upper(_round_summary(report))
        head += "; the biggest:" if len(big) < len(report.rounds) else "."
        round_rows = [
            [
                r.index,
                "-" if r.message_index is None else r.message_index,
                _tools_label(r.tools),
                _n(r.tokens_before),
                _n(r.tokens_after),
                r.state,
            ]
            for r in big
        ]
        header = ("round", "msg", "tools", "before", "after", "state")
        out += ["", "#### Rounds", "", head, "", *_md_table(header, round_rows, {0, 1, 3, 4})]
    if report.edits:
        shown, rest = _shown_edits(report.edits, max_edits)
        edit_rows = [[f"`{c[0]}`" if c[0] != "-" else "-", *c[1:]] for c in map(_edit_cells, shown)]
        out += ["", "#### Edits", "", _upper(_edits_head(report.edits, len(shown))), ""]
        out += _md_table(_EDIT_HEADER, edit_rows, {3, 4, 5, 6})
        if rest:
            out += ["", f"_{_rest_line(rest).replace('...', '…')}_"]
    if report.fixes:
        out += ["", "#### Pairing fixes", ""]
        out += [f"- `{_md(f.path)}` {f.code}: {_md(f.description)}" for f in report.fixes]
    if report.notes:
        out += ["", "#### Notes", "", *(f"- {_md(n)}" for n in report.notes)]
    return "\n".join(out) + "\n"


def report_json(report: Report) -> str:
    """``Report.to_dict()`` as indented JSON (non-ASCII kept as is); see ``Report.to_json``."""
    return _dumps(report.to_dict())


# ------------------------------------------------------------------------------ many reports


@dataclass(frozen=True, slots=True)
class _Total:
    requests: int
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    edits: int
    fallbacks: int
    fixes: int
    over_budget: int
    window_events: int
    tools: tuple[ToolStats, ...]
    counters: tuple[str, ...]
    exact: bool

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after


def _total(reports: Sequence[Report]) -> _Total:
    per_tool: dict[str, list[int]] = {}
    for r in reports:
        for t in r.tools:
            s = per_tool.setdefault(t.tool, [0, 0, 0])
            s[0] += t.calls
            s[1] += t.tokens_before
            s[2] += t.tokens_after
    after = sum(r.tokens_after for r in reports)
    tools = tuple(
        sorted(
            (
                ToolStats(name, c, b, a, a / after if after else 0.0)
                for name, (c, b, a) in per_tool.items()
            ),
            key=lambda t: (-t.tokens_before, t.tool),
        )
    )
    return _Total(
        requests=len(reports),
        tokens_before=sum(r.tokens_before for r in reports),
        tokens_after=after,
        messages_before=sum(r.messages_before for r in reports),
        messages_after=sum(r.messages_after for r in reports),
        edits=sum(len(r.edits) for r in reports),
        fallbacks=sum(len(r.fallbacks) for r in reports),
        fixes=sum(len(r.fixes) for r in reports),
        over_budget=sum(1 for r in reports if r.over_budget),
        window_events=sum(r.window_events for r in reports),
        tools=tools,
        counters=tuple(dict.fromkeys(r.counter for r in reports)),
        exact=all(r.exact for r in reports),
    )


_FILE_HEADER = (
    "request",
    "format",
    "messages",
    "before",
    "after",
    "saved",
    "saved%",
    "window%",
    "edits",
    "over",
)


def _file_cells(name: str, r: Report) -> list[str]:
    return [
        name,
        r.format,
        _arrow(r.messages_before, r.messages_after).replace(" ", ""),
        _n(r.tokens_before),
        _n(r.tokens_after),
        _n(r.saved),
        _pct(r.saved, r.tokens_before),
        _pct(r.tokens_after, r.context_window),
        _n(len(r.edits)),
        "YES" if r.over_budget else "no",
    ]


def _total_cells(t: _Total) -> list[str]:
    return [
        f"total ({t.requests})",
        "",
        _arrow(t.messages_before, t.messages_after).replace(" ", ""),
        _n(t.tokens_before),
        _n(t.tokens_after),
        _n(t.saved),
        _pct(t.saved, t.tokens_before),
        "-",
        _n(t.edits),
        _n(t.over_budget),
    ]


def _totals_line(t: _Total) -> str:
    counter = ", ".join(t.counters) + (" (exact)" if t.exact else " (estimate)")
    return (
        f"{_many(t.requests, 'request')}, counted with {counter}; {_many(t.edits, 'edit')}, "
        f"{_many(t.fallbacks, 'fallback')}, {_many(t.fixes, 'pairing fix', 'pairing fixes')}, "
        f"{_many(t.window_events, 'window event')}, {t.over_budget:,} over budget"
    )


def reports_text(
    items: Sequence[tuple[str, Report]], width: int = 100, *, detail: bool = False
) -> str:
    """One line per request file and their total, then the tools over all of them.

    ``detail`` appends each request's full report.
    """
    total = _total([r for _, r in items])
    cols: tuple[_Col, ...] = (
        _Col("request", "<", flex=True, min_width=16, cut_left=True),
        _Col("format", "<", flex=True),
        _Col("messages"),
        _Col("before"),
        _Col("after"),
        _Col("saved"),
        _Col("saved%"),
        _Col("window%"),
        _Col("edits"),
        _Col("over", "<"),
    )
    common = _common_dir([name for name, _ in items])
    rows: list[Sequence[str] | None] = [_file_cells(name[len(common) :], r) for name, r in items]
    rows += [None, _total_cells(total)]
    if not total.over_budget:  # the line above the table says "0 over budget"
        cols = cols[:-1]
        rows = [None if row is None else row[:-1] for row in rows]
    where = [_cut(f"files in {common}", width, left=True)] if common else []
    out = ["ctxwin report", *_wrap(_totals_line(total), width), *where, ""]
    out += _table(cols, rows, width)
    if total.tools:
        out += ["", "tools over all requests:"]
        out += _table(_TOOL_COLS, _tool_rows(total.tools, total.tokens_after), width)
    text = "\n".join(out) + "\n"
    if detail:
        for name, r in items:
            text += "\n" + report_text(r, width, title=name)
    return text


def reports_markdown(items: Sequence[tuple[str, Report]], *, detail: bool = False) -> str:
    """The per-file table and total as Markdown (``detail``: each full report after it)."""
    total = _total([r for _, r in items])
    rows: list[list[str]] = [_file_cells(f"`{name}`", r) for name, r in items]
    rows.append([f"**{c}**" if c else c for c in _total_cells(total)])
    for row in rows:
        row[2] = row[2].replace("->", " → ")
    out = ["### ctxwin report", "", _totals_line(total) + ".", ""]
    out += _md_table(_FILE_HEADER, rows, {2, 3, 4, 5, 6, 7, 8})
    if total.tools:
        tool_rows = [
            ["**all tools**" if r[0] == "all tools" else r[0], *r[1:]]
            for r in _tool_rows(total.tools, total.tokens_after)
            if r is not None
        ]
        out += ["", "#### Tools over all requests", ""]
        out += _md_table(_TOOL_HEADER, tool_rows, {1, 2, 3, 4, 5})
    text = "\n".join(out) + "\n"
    if detail:
        for name, r in items:
            text += "\n" + report_markdown(r, title=name)
    return text


def reports_json(items: Sequence[tuple[str, Report]]) -> str:
    """Every request's report and the total, as one JSON document.

    Schema (``version`` 1)::

        {"version": 1, "kind": "report",
         "requests": [{"name": str, "report": <Report.to_dict()>}, ...],
         "total": {"requests": int, "tokens": {"before", "after", "saved"},
                   "messages": {"before", "after"}, "edits": int, "fallbacks": int,
                   "fixes": int, "over_budget": int (requests over their window),
                   "window_events": int, "counters": [str], "exact": bool,
                   "tools": [<ToolStats.to_dict()>, ...]}}
    """
    t = _total([r for _, r in items])
    return _dumps(
        {
            "version": SCHEMA_VERSION,
            "kind": "report",
            "requests": [{"name": name, "report": r.to_dict()} for name, r in items],
            "total": {
                "requests": t.requests,
                "tokens": {"before": t.tokens_before, "after": t.tokens_after, "saved": t.saved},
                "messages": {"before": t.messages_before, "after": t.messages_after},
                "edits": t.edits,
                "fallbacks": t.fallbacks,
                "fixes": t.fixes,
                "over_budget": t.over_budget,
                "window_events": t.window_events,
                "counters": list(t.counters),
                "exact": t.exact,
                "tools": [tool.to_dict() for tool in t.tools],
            },
        }
    )
