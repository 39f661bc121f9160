"""ctxwin: context-window management for tool-calling LLM agents.

Call :func:`ctxwin.load_policy` once, then ``policy.apply(request)`` before each request to
your provider. The foundation — neutral conversations, the four wire formats, pairing check
and repair, exact offline token counting — is usable on its own: :func:`parse`,
:func:`check`, :func:`repair`, :mod:`ctxwin.tokens`.
"""

from ctxwin._engine import BudgetGuard, Policy, Result, default_steps, load_policy
from ctxwin._exceptions import (
    BudgetExceeded,
    CtxwinError,
    FormatError,
    InputError,
    PairingError,
    PolicyError,
    PolicyErrors,
    SummarizerError,
)
from ctxwin._model import (
    FORMATS,
    Conversation,
    FormatName,
    Message,
    Opaque,
    ResultRef,
    Role,
    Text,
    ToolCall,
    ToolResult,
)
from ctxwin._pairing import Pairing, PairingRules, Round
from ctxwin._policy import PolicyConfig, SummarizeConfig, ToolRules, WindowConfig
from ctxwin._policy import json_schema as policy_json_schema
from ctxwin._problems import Problem
from ctxwin._repair import Fix
from ctxwin._report import Report, RoundStats, ToolStats
from ctxwin._validate import Repaired, check, parse, render, repair
from ctxwin.formats import detect
from ctxwin.steps import (
    Cap,
    Context,
    Edit,
    EditResults,
    ResultInfo,
    ResultStep,
    Select,
    Step,
    Summarize,
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

__version__ = "0.1.0"

__all__ = [
    "FORMATS",
    "ApproximateCounter",
    "BudgetExceeded",
    "BudgetGuard",
    "CallableCounter",
    "Cap",
    "Context",
    "Conversation",
    "CounterFallbackWarning",
    "CtxwinError",
    "Edit",
    "EditResults",
    "Fix",
    "FormatError",
    "FormatName",
    "InputError",
    "Message",
    "Opaque",
    "Pairing",
    "PairingError",
    "PairingRules",
    "Policy",
    "PolicyConfig",
    "PolicyError",
    "PolicyErrors",
    "Problem",
    "Repaired",
    "Report",
    "Result",
    "ResultInfo",
    "ResultRef",
    "ResultStep",
    "Role",
    "Round",
    "RoundStats",
    "Select",
    "Step",
    "Summarize",
    "SummarizeConfig",
    "SummarizerError",
    "Text",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCall",
    "ToolResult",
    "ToolRules",
    "ToolStats",
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
    "render",
    "repair",
]
