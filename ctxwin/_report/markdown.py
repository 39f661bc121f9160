"""Reports as GitHub-flavoured Markdown (tables, for PR comments and notebooks)."""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._report.data import ReportData, ToolStats
from ctxwin._report.summary import (
    EDIT_HEADER,
    FILE_HEADER,
    MAX_EDITS,
    MAX_ROUNDS,
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
from ctxwin._report.tables import md_cell, md_table, upper_first

__all__ = ["report_markdown", "reports_markdown"]


def _md_tools(tools: Sequence[ToolStats], tokens_after: int) -> list[str]:
    """The tools table (their total in bold), with a ``repair`` column where repair
    changed a tool's tokens."""
    rows = [
        ["**all tools**" if r[0] == "all tools" else r[0], *r[1:]]
        for r in tool_rows(tools, tokens_after)
        if r is not None
    ]
    header = [c.title for c in tool_columns(tools)]
    return md_table(header, rows, set(range(1, len(header))))


def report_markdown(
    report: ReportData, *, max_edits: int = MAX_EDITS, title: str | None = None
) -> str:
    """The report as GitHub-flavoured Markdown: a summary row, then tools, rounds, edits."""
    out = [f"### {md_cell(title) if title else 'ctxwin report'}", ""]
    pairs = summary_pairs(report)
    out += md_table([p[0] for p in pairs], [[p[1].replace("->", "→") for p in pairs]], set())
    if report.tools:
        out += ["", "#### Tools", "", *_md_tools(report.tools, report.tokens_after)]
    if report.rounds:
        big = biggest_rounds(report, MAX_ROUNDS)
        head = upper_first(round_summary(report))
        head += "; the biggest:" if len(big) < len(report.rounds) else ", biggest first."
        header, repair = round_header(report.rounds)
        round_rows = [round_cells(r, repair) for r in big]
        right = {i for i, t in enumerate(header) if t not in ("tools", "state")}
        out += ["", "#### Rounds", "", head, "", *md_table(header, round_rows, right)]
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


def reports_markdown(
    items: Sequence[tuple[str, ReportData]], *, detail: bool = False, max_edits: int = MAX_EDITS
) -> str:
    """The per-file table and total as Markdown (``detail``: each full report after it, with
    ``max_edits`` edits listed)."""
    total = sum_reports([r for _, r in items])
    rows: list[list[str]] = [file_cells(f"`{name}`", r) for name, r in items]
    rows.append([f"**{c}**" if c else c for c in total_cells(total)])
    for row in rows:
        row[2] = row[2].replace("->", " → ")
    out = ["### ctxwin report", "", totals_line(total) + ".", ""]
    out += md_table(FILE_HEADER, rows, {2, 3, 4, 5, 6, 7, 8})
    if total.tools:
        out += ["", "#### Tools over all requests", "", *_md_tools(total.tools, total.tokens_after)]
    text = "\n".join(out) + "\n"
    if detail:
        for name, r in items:
            text += "\n" + report_markdown(r, title=name, max_edits=max_edits)
    return text
