"""Reports as plain text: aligned tables that fit ``width`` columns (100 by default).

Long names are cut with ``...``, long edit lists collapsed to the edits that saved most.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from ctxwin._report.data import ReportData
from ctxwin._report.summary import (
    MAX_EDITS,
    MAX_ROUNDS,
    REPAIR_COL,
    biggest_rounds,
    edit_cells,
    edits_head,
    file_cells,
    rest_line,
    round_cells,
    round_header,
    round_summary,
    shown_edits,
    sum_reports,
    summary_pairs,
    tool_columns,
    tool_rows,
    total_cells,
    totals_line,
)
from ctxwin._report.tables import (
    Col,
    clip,
    common_dir,
    label_pairs,
    text_table,
    wrap_lines,
)

__all__ = ["report_text", "reports_text"]

_ROUND_COLS = {
    "round": Col("round"),
    "msg": Col("msg"),
    "tools": Col("tools", "<", flex=True, min_width=10),
    "before": Col("before"),
    "repair": REPAIR_COL,
    "after": Col("after"),
    "state": Col("state", "<"),
}


def report_text(
    report: ReportData, width: int = 100, *, max_edits: int = MAX_EDITS, title: str | None = None
) -> str:
    """The report as aligned text tables that fit in ``width`` columns."""
    head = clip(f"ctxwin report: {title}", width, left=True) if title else "ctxwin report"
    out = [head, *label_pairs(summary_pairs(report), width)]
    if report.tools:
        cols = tool_columns(report.tools)
        out += ["", *text_table(cols, tool_rows(report.tools, report.tokens_after), width)]
    if report.rounds:
        big = biggest_rounds(report, MAX_ROUNDS)
        head = round_summary(report)
        head += "; the biggest:" if len(big) < len(report.rounds) else ", biggest first:"
        titles, repair = round_header(report.rounds)
        round_cols = tuple(_ROUND_COLS[t] for t in titles)
        rows: list[Sequence[str] | None] = [round_cells(r, repair) for r in big]
        out += ["", head, *text_table(round_cols, rows, width)]
    if report.edits:
        shown, rest = shown_edits(report.edits, max_edits)
        edit_cols = (
            Col("call id", "<", flex=True, min_width=10),
            Col("tool", "<", flex=True),
            Col("step", "<"),
            Col("msg"),
            Col("before"),
            Col("after"),
            Col("saved"),
            Col("fallback", "<", flex=True),
        )
        out += ["", edits_head(report.edits, len(shown))]
        out += text_table(edit_cols, [edit_cells(e) for e in shown], width)
        if rest:
            out.append(rest_line(rest))
    if report.fixes:
        out += ["", f"pairing fixes: {len(report.fixes)}"]
        for f in report.fixes:
            out += textwrap.wrap(str(f), width, initial_indent="  ", subsequent_indent="    ")
    if report.notes:
        out += ["", "notes:"]
        for n in report.notes:
            out += textwrap.wrap(n, width, initial_indent="  ", subsequent_indent="    ")
    return "\n".join(out) + "\n"


def reports_text(
    items: Sequence[tuple[str, ReportData]],
    width: int = 100,
    *,
    detail: bool = False,
    max_edits: int = MAX_EDITS,
) -> str:
    """One line per request file and their total, then the tools over all of them.

    ``detail`` appends each request's full report (``max_edits`` edits listed in each).
    """
    total = sum_reports([r for _, r in items])
    cols: tuple[Col, ...] = (
        Col("request", "<", flex=True, min_width=16, cut_left=True),
        Col("format", "<", flex=True),
        Col("messages"),
        Col("before"),
        Col("after"),
        Col("saved"),
        Col("saved%"),
        Col("window%"),
        Col("edits"),
        Col("over", "<"),
    )
    common = common_dir([name for name, _ in items])
    rows: list[Sequence[str] | None] = [file_cells(name[len(common) :], r) for name, r in items]
    rows += [None, total_cells(total)]
    if not total.over_budget:  # the line above the table says "0 over budget"
        cols = cols[:-1]
        rows = [None if row is None else row[:-1] for row in rows]
    where = [clip(f"files in {common}", width, left=True)] if common else []
    out = ["ctxwin report", *wrap_lines(totals_line(total), width), *where, ""]
    out += text_table(cols, rows, width)
    if total.tools:
        out += ["", "tools over all requests:"]
        cols = tool_columns(total.tools)
        out += text_table(cols, tool_rows(total.tools, total.tokens_after), width)
    text = "\n".join(out) + "\n"
    if detail:
        for name, r in items:
            text += "\n" + report_text(r, width, title=name, max_edits=max_edits)
    return text
