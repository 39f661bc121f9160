"""What the renderings of reports share: the summary lines, the tool rows, totals.

Each rendering (``text.py``, ``markdown.py``, ``as_json.py``) lays these out its own way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ctxwin._core.records import Edit
from ctxwin._report.data import ReportData, RoundStats, ToolStats
from ctxwin._report.tables import (
    Col,
    fmt_arrow,
    fmt_num,
    fmt_pct,
    many,
    tools_label,
)

__all__ = [
    "EDIT_HEADER",
    "FILE_HEADER",
    "MAX_EDITS",
    "MAX_ROUNDS",
    "REPAIR_COL",
    "ROUND_HEADER",
    "TOOL_COLS",
    "Total",
    "biggest_rounds",
    "edit_cells",
    "edits_head",
    "file_cells",
    "rest_line",
    "round_cells",
    "round_header",
    "round_summary",
    "shown_edits",
    "sum_reports",
    "summary_pairs",
    "tool_columns",
    "tool_rows",
    "total_cells",
    "totals_line",
]

MAX_EDITS = 20
"""Edits listed in full before the rest are collapsed into one "... and K more" line."""
MAX_ROUNDS = 5
"""Rounds listed (the biggest, by tokens before the policy)."""


# ------------------------------------------------------------------------------ one report


def _counter_label(report: ReportData) -> str:
    return f"{report.counter} ({'exact' if report.exact else 'estimate'})"


def summary_pairs(report: ReportData) -> list[tuple[str, str]]:
    steps = Counter(e.step for e in report.edits)
    pairs = [
        ("format", report.format),
        ("counter", _counter_label(report)),
        ("tokens", fmt_arrow(report.tokens_before, report.tokens_after)),
        ("saved", f"{fmt_num(report.saved)} ({fmt_pct(report.saved, report.tokens_before)})"),
        (
            "context window",
            f"{fmt_num(report.context_window)} "
            f"({fmt_pct(report.provider_tokens, report.context_window)} used)",
        ),
        ("messages", fmt_arrow(report.messages_before, report.messages_after)),
        ("window events", fmt_num(report.window_events)),
        ("over budget", "YES" if report.over_budget else "no"),
        ("edits", ", ".join(f"{s} {c}" for s, c in steps.most_common()) or "none"),
        ("fallbacks", _fallback_label(report.edits)),
    ]
    if report.breakpoints:
        marks = ", ".join(f"#{m} ({fmt_num(t)} tokens)" for m, t in report.breakpoints)
        pairs.append(("cache breakpoints", marks))
    if report.calibration != 1.0:
        pairs.insert(2, ("calibration", f"x{report.calibration:.2f} (provider counts / ctxwin's)"))
    return pairs


def _fallback_label(edits: Sequence[Edit]) -> str:
    counts = Counter(e.fallback for e in edits if e.fallback)
    if not counts:
        return "none"
    return ", ".join(f"{f} x{c}" if c > 1 else f for f, c in counts.most_common())


def _signed(value: int) -> str:
    return f"{value:+,}" if value else "0"


def tool_rows(tools: Sequence[ToolStats], tokens_after: int) -> list[list[str] | None]:
    """The rows of :func:`tool_columns`: one per tool, and the total of all tools when
    there are several (the ``repair`` column only where repair changed a tool's tokens)."""
    repair = any(t.repaired for t in tools)
    rows: list[list[str] | None] = [
        [
            t.tool,
            fmt_num(t.calls),
            fmt_num(t.tokens_before),
            *([_signed(t.repaired)] if repair else []),
            fmt_num(t.tokens_after),
            fmt_num(t.saved),
            f"{t.share:.1%}",
        ]
        for t in tools
    ]
    if len(tools) > 1:
        before = sum(t.tokens_before for t in tools)
        repaired = sum(t.repaired for t in tools)
        after = sum(t.tokens_after for t in tools)
        rows.append(None)
        rows.append(
            [
                "all tools",
                fmt_num(sum(t.calls for t in tools)),
                fmt_num(before),
                *([_signed(repaired)] if repair else []),
                fmt_num(after),
                fmt_num(before + repaired - after),
                fmt_pct(after, tokens_after),
            ]
        )
    return rows


TOOL_COLS = (
    Col("tool", "<", flex=True, min_width=12),
    Col("calls"),
    Col("before"),
    Col("after"),
    Col("saved"),
    Col("share"),
)
REPAIR_COL = Col("repair")
"""Tokens repair added (+) or took away (-), between before and after."""


def tool_columns(tools: Sequence[ToolStats]) -> tuple[Col, ...]:
    """The columns of :func:`tool_rows`: with ``repair`` after ``before`` where repair
    changed a tool's tokens (``before + repair - saved = after``)."""
    if not any(t.repaired for t in tools):
        return TOOL_COLS
    return (*TOOL_COLS[:3], REPAIR_COL, *TOOL_COLS[3:])


def round_cells(r: RoundStats, repair: bool) -> list[str]:
    """One round's cells: round, msg, tools, before, (repair,) after, state."""
    return [
        str(r.index),
        "-" if r.message_index is None else str(r.message_index),
        tools_label(r.tools),
        fmt_num(r.tokens_before),
        *([_signed(r.repaired)] if repair else []),
        fmt_num(r.tokens_after),
        r.state,
    ]


ROUND_HEADER = ("round", "msg", "tools", "before", "after", "state")


def round_header(rounds: Sequence[RoundStats]) -> tuple[tuple[str, ...], bool]:
    """The rounds' column titles, and whether they have ``repair`` (where repair changed
    a round's tokens)."""
    repair = any(r.repaired for r in rounds)
    return (*ROUND_HEADER[:4], "repair", *ROUND_HEADER[4:]) if repair else ROUND_HEADER, repair


def round_summary(report: ReportData) -> str:
    states = Counter(r.state for r in report.rounds)
    n = len(report.rounds)
    return (
        f"rounds: {n} ({states['kept']} kept, {states['edited']} edited, "
        f"{states['dropped']} dropped)"
    )


def biggest_rounds(report: ReportData, limit: int) -> list[RoundStats]:
    return sorted(report.rounds, key=lambda r: (-r.tokens_before, r.index))[:limit]


def shown_edits(edits: Sequence[Edit], limit: int) -> tuple[list[Edit], list[Edit]]:
    """The edits listed (all of them, or the ``limit`` that saved most) and the rest."""
    if len(edits) <= limit:
        return list(edits), []
    order = sorted(range(len(edits)), key=lambda i: (-edits[i].saved, i))
    keep = set(order[:limit])
    return [edits[i] for i in order[:limit]], [e for i, e in enumerate(edits) if i not in keep]


def edits_head(edits: Sequence[Edit], shown: int) -> str:
    saved = sum(e.saved for e in edits)
    head = f"edits: {len(edits)}, {fmt_num(saved)} tokens saved"
    if shown < len(edits):
        head += f"; the {shown} that saved most:"
    return head


def rest_line(rest: Sequence[Edit]) -> str:
    saved = fmt_num(sum(e.saved for e in rest))
    return f"... and {many(len(rest), 'more edit')} ({saved} tokens saved)"


def edit_cells(e: Edit) -> list[str]:
    return [
        e.call_id or "-",
        e.tool,
        e.step,
        "-" if e.message_index is None else str(e.message_index),
        fmt_num(e.tokens_before),
        fmt_num(e.tokens_after),
        fmt_num(e.saved),
        e.fallback or "-",
    ]


EDIT_HEADER = ("call id", "tool", "step", "msg", "before", "after", "saved", "fallback")


@dataclass(frozen=True, slots=True)
class Total:
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


def sum_reports(reports: Sequence[ReportData]) -> Total:
    per_tool: dict[str, list[int]] = {}
    for r in reports:
        for t in r.tools:
            s = per_tool.setdefault(t.tool, [0, 0, 0, 0])
            s[0] += t.calls
            s[1] += t.tokens_before
            s[2] += t.tokens_after
            s[3] += t.repaired
    after = sum(r.tokens_after for r in reports)
    tools = tuple(
        sorted(
            (
                ToolStats(name, c, b, a, a / after if after else 0.0, f)
                for name, (c, b, a, f) in per_tool.items()
            ),
            key=lambda t: (-t.tokens_before, t.tool),
        )
    )
    return Total(
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


FILE_HEADER = (
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


def file_cells(name: str, r: ReportData) -> list[str]:
    return [
        name,
        r.format,
        fmt_arrow(r.messages_before, r.messages_after).replace(" ", ""),
        fmt_num(r.tokens_before),
        fmt_num(r.tokens_after),
        fmt_num(r.saved),
        fmt_pct(r.saved, r.tokens_before),
        fmt_pct(r.provider_tokens, r.context_window),
        fmt_num(len(r.edits)),
        "YES" if r.over_budget else "no",
    ]


def total_cells(t: Total) -> list[str]:
    return [
        f"total ({t.requests})",
        "",
        fmt_arrow(t.messages_before, t.messages_after).replace(" ", ""),
        fmt_num(t.tokens_before),
        fmt_num(t.tokens_after),
        fmt_num(t.saved),
        fmt_pct(t.saved, t.tokens_before),
        "-",
        fmt_num(t.edits),
        fmt_num(t.over_budget),
    ]


def totals_line(t: Total) -> str:
    counter = ", ".join(t.counters) + (" (exact)" if t.exact else " (estimate)")
    return (
        f"{many(t.requests, 'request')}, counted with {counter}; {many(t.edits, 'edit')}, "
        f"{many(t.fallbacks, 'fallback')}, {many(t.fixes, 'pairing fix', 'pairing fixes')}, "
        f"{many(t.window_events, 'window event')}, {t.over_budget:,} over budget"
    )
