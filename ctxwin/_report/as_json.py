"""Reports as JSON (``"version": 1``; see :meth:`ctxwin.Report.to_json`)."""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._report.data import SCHEMA_VERSION, ReportData
from ctxwin._report.summary import sum_reports
from ctxwin._report.tables import dumps_json

__all__ = ["report_json", "reports_json"]


def report_json(report: ReportData) -> str:
    """``report.to_dict()`` as indented JSON (non-ASCII kept as is); see ``Report.to_json``."""
    return dumps_json(report.to_dict())


def reports_json(items: Sequence[tuple[str, ReportData]]) -> str:
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
    t = sum_reports([r for _, r in items])
    return dumps_json(
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
