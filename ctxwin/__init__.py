"""ctxwin: context-window management for tool-calling LLM agents.

Call :func:`ctxwin.load_policy` once, then ``policy.apply(request)`` before each request to
your provider. The foundation — neutral conversations, the four wire formats, pairing check
and repair, exact offline token counting — is usable on its own: :func:`parse`,
:func:`check`, :func:`repair`, :mod:`ctxwin.tokens`.

Extension points: your own steps (:class:`Step`, :class:`ResultStep`, with a
:class:`Context`; see :func:`default_steps` and the step classes), over the neutral model
(:class:`Conversation`, :class:`Message`, :class:`Text`, :class:`ToolCall`,
:class:`ToolResult`, :class:`Opaque`); your own counters (:class:`TokenCounter`) and
summarizers (:class:`Summarizer`, :class:`AsyncSummarizer`).
"""

from ctxwin._core.conversation import Conversation
from ctxwin._core.edit_map import EditMap, MessageChange
from ctxwin._core.model import (
    FORMATS,
    FormatName,
    Message,
    Opaque,
    ResultRef,
    Role,
    Text,
    ToolCall,
    ToolResult,
)
from ctxwin._core.records import Edit, Fix, Problem
from ctxwin._engine import Policy, Result, default_steps, load_policy
from ctxwin._exceptions import (
    BudgetExceeded,
    CalibrationWarning,
    CtxwinError,
    FormatError,
    InputError,
    PairingError,
    PolicyError,
    PolicyErrors,
    PolicyWarning,
    StoreError,
    SummarizerError,
)
from ctxwin._feedback.session import Session
from ctxwin._feedback.usage import Usage, read_usage
from ctxwin._policy.schema import (
    PolicyConfig,
    RepairConfig,
    SummarizeConfig,
    ToolRules,
    WindowConfig,
)
from ctxwin._policy.schema import json_schema as policy_json_schema
from ctxwin._report.data import RoundStats, ToolStats
from ctxwin._report.report import Report
from ctxwin._validate import Repaired, check, parse, render, repair
from ctxwin._version import __version__
from ctxwin.formats import detect
from ctxwin.steps import (
    AsyncSummarizer,
    BudgetGuard,
    CacheBreakpoints,
    Cap,
    Context,
    EditResults,
    ResultInfo,
    ResultStep,
    Select,
    Step,
    Summarize,
    Summarizer,
    Window,
)
from ctxwin.tokens import (
    ApproximateCounter,
    CallableCounter,
    CounterFallbackWarning,
    TiktokenCounter,
    TokenCounter,
    get_counter,
)

__all__ = [
    "FORMATS",
    "ApproximateCounter",
    "AsyncSummarizer",
    "BudgetExceeded",
    "BudgetGuard",
    "CacheBreakpoints",
    "CalibrationWarning",
    "CallableCounter",
    "Cap",
    "Context",
    "Conversation",
    "CounterFallbackWarning",
    "CtxwinError",
    "Edit",
    "EditMap",
    "EditResults",
    "Fix",
    "FormatError",
    "FormatName",
    "InputError",
    "Message",
    "MessageChange",
    "Opaque",
    "PairingError",
    "Policy",
    "PolicyConfig",
    "PolicyError",
    "PolicyErrors",
    "PolicyWarning",
    "Problem",
    "RepairConfig",
    "Repaired",
    "Report",
    "Result",
    "ResultInfo",
    "ResultRef",
    "ResultStep",
    "Role",
    "RoundStats",
    "Select",
    "Session",
    "Step",
    "StoreError",
    "Summarize",
    "SummarizeConfig",
    "Summarizer",
    "SummarizerError",
    "Text",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCall",
    "ToolResult",
    "ToolRules",
    "ToolStats",
    "Usage",
    "Window",
    "WindowConfig",
    "__version__",
    "check",
    "default_steps",
    "detect",
    "get_counter",
    "load_policy",
    "parse",
    "policy_json_schema",
    "read_usage",
    "render",
    "repair",
]

# Public names show as ``ctxwin.X`` wherever they are defined (as httpx does).
for _name in __all__:
    _member = globals()[_name]
    if getattr(_member, "__module__", "").startswith("ctxwin.") and hasattr(
        _member, "__qualname__"
    ):
        _member.__module__ = "ctxwin"
del _name, _member
