"""The public API is exactly ``ctxwin.__all__`` (like httpx's test of the same name)."""

from __future__ import annotations

import inspect

import ctxwin

EXPECTED = {
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
}


def test_all_is_pinned() -> None:
    assert set(ctxwin.__all__) == EXPECTED


def test_every_public_name_exists_and_is_documented() -> None:
    for name in ctxwin.__all__:
        member = getattr(ctxwin, name)
        if isinstance(member, type) or inspect.isfunction(member):
            assert member.__doc__, name


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
