"""ctxwin: context-window management for tool-calling LLM agents.

Call :func:`ctxwin.load_policy` once, then ``policy.apply(request)`` before each request to
your provider. The foundation — neutral conversations, the four wire formats, pairing check
and repair, exact offline token counting — is usable on its own: :func:`parse`,
:func:`check`, :func:`repair`, :mod:`ctxwin.tokens`.
"""

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
from ctxwin._problems import Problem
from ctxwin._repair import Fix
from ctxwin._validate import Repaired, check, parse, render, repair
from ctxwin.formats import detect
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
    "CallableCounter",
    "Conversation",
    "CounterFallbackWarning",
    "CtxwinError",
    "Fix",
    "FormatError",
    "FormatName",
    "InputError",
    "Message",
    "Opaque",
    "Pairing",
    "PairingError",
    "PairingRules",
    "PolicyError",
    "PolicyErrors",
    "Problem",
    "Repaired",
    "ResultRef",
    "Role",
    "Round",
    "SummarizerError",
    "Text",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCall",
    "ToolResult",
    "__version__",
    "check",
    "detect",
    "get_counter",
    "parse",
    "render",
    "repair",
]
