"""The steps of the chain, and the protocols for writing your own.

A conversation step is ``step(conversation, context) -> conversation``; a result step is
``step(result, info, context) -> result`` and runs inside :class:`EditResults`.
"""

from ctxwin.steps._base import Context, Edit, ResultInfo, ResultStep, Step
from ctxwin.steps.cap import Cap
from ctxwin.steps.results import EditResults
from ctxwin.steps.select import Select
from ctxwin.steps.summarize import Summarize
from ctxwin.steps.window import Window

__all__ = [
    "Cap",
    "Context",
    "Edit",
    "EditResults",
    "ResultInfo",
    "ResultStep",
    "Select",
    "Step",
    "Summarize",
    "Window",
]
