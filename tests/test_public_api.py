"""The public API is exactly ``ctxwin.__all__`` (like httpx's test of the same name)."""

from __future__ import annotations

import inspect

import ctxwin

EXPECTED = {
    "FORMATS",
    "ApproximateCounter",
    "AsyncSummarizer",
    "BudgetExceeded",
    "CalibrationWarning",
    "BudgetGuard",
    "CacheBreakpoints",
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
    "Summarize",
    "SummarizeConfig",
    "Summarizer",
    "StoreError",
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
}


def test_all_is_pinned() -> None:
    assert set(ctxwin.__all__) == EXPECTED


def own_doc(member: object) -> str:
    """The docstring a class or function was written with (a dataclass without one gets a
    generated signature as ``__doc__``, which says nothing)."""
    doc = member.__dict__.get("__doc__") if isinstance(member, type) else member.__doc__
    name = getattr(member, "__name__", "")
    if not isinstance(doc, str) or doc.startswith(f"{name}("):
        return ""
    return doc.strip()


def test_every_public_class_and_function_is_documented() -> None:
    undocumented = [
        name
        for name in ctxwin.__all__
        if (isinstance(getattr(ctxwin, name), type) or inspect.isfunction(getattr(ctxwin, name)))
        and not own_doc(getattr(ctxwin, name))
    ]
    assert undocumented == []


def test_the_documentation_check_catches_a_bare_dataclass() -> None:
    from dataclasses import dataclass

    @dataclass
    class Bare:
        x: int

    assert Bare.__doc__  # what the old check looked at: always there
    assert own_doc(Bare) == ""


def test_public_names_show_as_ctxwin_names() -> None:
    assert repr(ctxwin.Policy) == "<class 'ctxwin.Policy'>"
    assert ctxwin.Conversation.__module__ == "ctxwin"
    assert ctxwin.load_policy.__module__ == "ctxwin"


def test_internals_are_not_reachable_from_the_public_subpackages() -> None:
    import ctxwin.formats
    import ctxwin.steps
    import ctxwin.tokens

    internals = {
        "Memo",
        "PrefixCache",
        "FoldState",
        "Pending",
        "SummaryService",
        "cap_result",
        "truncate",
        "Pairing",
        "Round",
        "PairingRules",
        "MemoCounter",
        "TokenMeter",
    }
    for module in (ctxwin, ctxwin.steps, ctxwin.formats, ctxwin.tokens):
        assert not internals & set(module.__all__), module.__name__


def test_the_library_does_not_import_the_cli_or_optional_sdks() -> None:
    import subprocess
    import sys

    code = (
        "import sys, ctxwin; "
        "bad = [m for m in sys.modules if m.startswith(('ctxwin._cli', 'openai', 'anthropic', "
        "'langchain', 'google'))]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
