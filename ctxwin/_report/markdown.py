"""Reports as GitHub-flavoured Markdown (tables, for PR comments and notebooks)."""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._report.data import ReportData
from ctxwin._report.summary import (
    EDIT_HEADER,
    FILE_HEADER,
    MAX_EDITS,
    MAX_ROUNDS,
    TOOL_HEADER,
    biggest_rounds,
    edit_cells,
    edits_head,
    file_cells,
    rest_line,
    round_summary,
    shown_edits,
    sum_reports,
    summary_pairs,
    tool_rows,
    total_cells,
    totals_line,
)
from ctxwin._report.tables import (
    fmt_num,
    md_cell,
    md_table,
    tools_label,
    upper_first,
)

__all__ = ["report_markdown", "reports_markdown"]


def report_markdown(
    report: ReportData, *, max_edits: int = MAX_EDITS, title: str | None = None
) -> str:
    """The report as GitHub-flavoured Markdown: a summary row, then tools, rounds, edits."""
    out = [f"### {md_cell(title) if title else 'ctxwin report'}", ""]
    pairs = summary_pairs(report)
    out += md_table([p[0] for p in pairs], [[p[1].replace("->", "→") for p in pairs]], set())
    if report.tools:
        md_tool_rows = [
            ["**all tools**" if r[0] == "all tools" else r[0], *r[1:]]
            for r in tool_rows(report.tools, report.tokens_after)
            if r is not None
        ]
        out += ["", "#### Tools", "", *md_table(TOOL_HEADER, md_tool_rows, {1, 2, 3, 4, 5})]
    if report.rounds:
        big = biggest_rounds(report, MAX_ROUNDS)
        head = upper_first(round_summary(report))
        head += "; the biggest:" if len(big) < len(report.rounds) else ", biggest first."
        round_rows = [
            [
                r.index,
                "-" if r.message_index is None else r.message_index,
                tools_label(r.tools),
                fmt_num(r.tokens_before),
                fmt_num(r.tokens_after),
                r.state,
            ]
            for r in big
        ]
        header = ("round", "msg", "tools", "before", "after", "state")
        out += ["", "#### Rounds", "", head, "", *md_table(header, round_rows, {0, 1, 3, 4})]
    if report.edits:
        shown, rest = shown_edits(report.edits, max_edits)
        edit_rows = [[f"`{c[0]}`" if c[0] != "-" else "-", *c[1:]] for c in map(edit_cells, shown)]
        out += ["", "#### Edits", "", upper_first(edits_head(report.edits, len(shown))), ""]
        out += md_table(EDIT_HEADER, edit_rows, {3, 4, 5, 6})
        if rest:
            out += ["", f"_{rest_line(rest).replace('...', '…')}_"]
    if report.fixes:
        out += ["", "#### Pairing fixes", ""]
        out += [f"- `{md_cell(f.path)}` {f.code}: {md_cell(f.description)}" for f in report.fixes]
    if report.notes:
        out += ["", "#### Notes", "", *(f"- {md_cell(n)}" for n in report.notes)]
    return "\n".join(out) + "\n"


def reports_markdown(items: Sequence[tuple[str, ReportData]], *, detail: bool = False) -> str:
    """The per-file table and total as Markdown (``detail``: each full report after it)."""
    total = sum_reports([r for _, r in items])
    rows: list[list[str]] = [file_cells(f"`{name}`", r) for name, r in items]
    rows.append([f"**{c}**" if c else c for c in total_cells(total)])
    for row in rows:
        row[2] = row[2].replace("->", " → ")
    out = ["### ctxwin report", "", totals_line(total) + ".", ""]
    out += md_table(FILE_HEADER, rows, {2, 3, 4, 5, 6, 7, 8})
    if total.tools:
        md_tool_rows = [
            ["**all tools**" if r[0] == "all tools" else r[0], *r[1:]]
            for r in tool_rows(total.tools, total.tokens_after)
            if r is not None
        ]
        out += ["", "#### Tools over all requests", ""]
        out += md_table(TOOL_HEADER, md_tool_rows, {1, 2, 3, 4, 5})
    text = "\n".join(out) + "\n"
    if detail:
        for name, r in items:
            text += "\n" + report_markdown(r, title=name)
    return text
