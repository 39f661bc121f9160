"""The steps of the chain, and the protocols for writing your own.

A conversation step is ``step(conversation, context) -> conversation``; a result step is
``step(result, info, context) -> result`` and runs inside :class:`EditResults`. Both see a
:class:`Context` (the policy, counting, ``add_edit``).
"""

from ctxwin._core.records import Edit
from ctxwin.steps._base import Context, ResultInfo, ResultStep, Step
from ctxwin.steps.breakpoints import CacheBreakpoints
from ctxwin.steps.budget import BudgetGuard
from ctxwin.steps.cap import Cap
from ctxwin.steps.edit_results import EditResults
from ctxwin.steps.select import Select
from ctxwin.steps.summarize import AsyncSummarizer, Summarize, Summarizer
from ctxwin.steps.window import Window

__all__ = [
    "AsyncSummarizer",
    "BudgetGuard",
    "CacheBreakpoints",
    "Cap",
    "Context",
    "Edit",
    "EditResults",
    "ResultInfo",
    "ResultStep",
    "Select",
    "Step",
    "Summarize",
    "Summarizer",
    "Window",
]
