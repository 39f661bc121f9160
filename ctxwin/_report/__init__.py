"""Reports: the data (``data.py``, ``report.py``), how they are built (``build.py``) and
rendered (``text.py``, ``markdown.py``, ``as_json.py``, ``replay.py``; shared pieces in
``summary.py`` and ``tables.py``)."""

from ctxwin._report.build import build_report
from ctxwin._report.data import ReplayResult, ReplayStats, RoundStats, ToolStats
from ctxwin._report.report import Report

__all__ = ["ReplayResult", "ReplayStats", "Report", "RoundStats", "ToolStats", "build_report"]
