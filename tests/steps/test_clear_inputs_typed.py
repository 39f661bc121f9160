"""``clear_tool_inputs`` on calls whose arguments the provider checks against a schema of its
own: the Responses built-in calls (``local_shell_call``, ``shell_call``, ``computer_call``,
``apply_patch_call``). The window put ``"[cleared]"`` in place of a shell call's array of
commands or a drag's path, which the API refuses (openai SDK
``response_input_item_param.py``: ``LocalShellCallAction.command`` and
``ShellCallAction.commands`` are ``Required[SequenceNotStr[str]]``, a drag's ``path`` a list
of points). Only their long strings are cleared now, wherever they stand; function calls
(and Anthropic's, Gemini's, OpenAI Chat's) keep the documented rule, and their arguments
stay an object."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxwin
from ctxwin.steps._foldstate import shorten_arguments
from ctxwin.testing import agent_body

LONG_CMD = "grep -rn 'def main' src/ | head -n 50 && cat src/app/main.py | sed -n 1,200p"
POLICY = {
    "context_window": 4000,
    "window": {"strategy": "threshold", "keep_rounds": 1, "clear_tool_inputs": True},
}


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def _builtin_calls() -> list[dict[str, Any]]:
    """A call of each built-in kind with a long string in it, and its output."""
    path = [{"x": 10 * i, "y": 20 * i} for i in range(8)]
    return [
        {"role": "user", "content": "fix the bug"},
        {
            "type": "local_shell_call",
            "id": "lsh_1",
            "call_id": "c1",
            "status": "completed",
            "action": {"type": "exec", "command": ["bash", "-lc", LONG_CMD], "env": {"A": "1"}},
        },
        {"type": "local_shell_call_output", "id": "c1", "output": _words(900)},
        {
            "type": "shell_call",
            "call_id": "c2",
            "status": "completed",
            "action": {"commands": [LONG_CMD], "timeout_ms": 10000},
        },
        {
            "type": "shell_call_output",
            "call_id": "c2",
            "output": [
                {"stdout": _words(900), "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
            ],
        },
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "c3",
            "status": "completed",
            "pending_safety_checks": [],
            "action": {"type": "drag", "path": path},
        },
        {"type": "computer_call_output", "call_id": "c3", "output": _words(900)},
        {
            "type": "computer_call",
            "id": "cu_2",
            "call_id": "c4",
            "status": "completed",
            "pending_safety_checks": [],
            "actions": [{"type": "type", "text": LONG_CMD}, {"type": "drag", "path": path}],
        },
        {"type": "computer_call_output", "call_id": "c4", "output": _words(900)},
        {
            "type": "apply_patch_call",
            "call_id": "c5",
            "status": "completed",
            "operation": {"type": "update_file", "path": "src/app/main.py", "diff": LONG_CMD},
        },
        {
            "type": "apply_patch_call_output",
            "call_id": "c5",
            "status": "completed",
            "output": _words(900),
        },
        {"type": "function_call", "call_id": "c6", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c6", "output": _words(900)},
        {"type": "function_call", "call_id": "c9", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c9", "output": "ok"},
    ]


def _applied() -> tuple[list[Any], ctxwin.Result]:
    body = {"model": "codex-mini-latest", "input": _builtin_calls()}
    result = ctxwin.load_policy(POLICY).apply(body, format="openai-responses")
    return result.request["input"], result


def test_builtin_calls_keep_their_arrays_and_lose_only_long_strings() -> None:
    out, result = _applied()
    assert out[1]["action"] == {
        "type": "exec",
        "command": ["bash", "-lc", "[cleared]"],
        "env": {"A": "1"},
    }
    assert out[3]["action"] == {"commands": ["[cleared]"], "timeout_ms": 10000}
    assert out[5]["action"] == _builtin_calls()[5]["action"]  # numbers only: as it was
    assert out[7]["actions"] == [
        {"type": "type", "text": "[cleared]"},
        _builtin_calls()[7]["actions"][1],
    ]
    assert out[9]["operation"] == {
        "type": "update_file",
        "path": "src/app/main.py",
        "diff": "[cleared]",
    }
    inputs = [e for e in result.report.edits if e.step == "clear_input"]
    assert {e.call_id for e in inputs} == {"c1", "c2", "c4", "c5"}
    assert all(e.tokens_after < e.tokens_before for e in inputs)


def test_builtin_calls_cleared_are_what_the_openai_sdk_types_take() -> None:
    pydantic = pytest.importorskip("pydantic")
    params = pytest.importorskip("openai.types.responses.response_input_item_param")
    items = pydantic.TypeAdapter(params.ResponseInputItemParam)
    out, _ = _applied()
    for item in out[1:10:2]:  # the calls
        items.validate_python(item)
    with pytest.raises(pydantic.ValidationError):  # the old output, refused
        items.validate_python({**out[3], "action": {"commands": "[cleared]"}})


def test_builtin_calls_cleared_are_a_fixed_point() -> None:
    _out, result = _applied()
    again = ctxwin.load_policy(POLICY).apply(result.request, format="openai-responses")
    assert again.request == result.request
    assert not [e for e in again.report.edits if e.step == "clear_input"]


def test_typed_arguments_keep_every_type() -> None:
    args = json.dumps(
        {"a": ["x", "y" * 60, {"b": "z" * 60, "n": 5}], "c": {"d": "w" * 60}, "e": [1] * 40}
    )
    assert json.loads(shorten_arguments(args, typed=True)) == {
        "a": ["x", "[cleared]", {"b": "[cleared]", "n": 5}],
        "c": {"d": "[cleared]"},
        "e": [1] * 40,
    }
    short = json.dumps({"a": ["x"], "e": [1] * 40})
    assert shorten_arguments(short, typed=True) is short  # nothing long: as it was
    assert shorten_arguments(json.dumps(["q" * 60]), typed=True) == '["[cleared]"]'


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "gemini", "openai-responses"])
def test_function_calls_keep_an_object_of_arguments(fmt: ctxwin.FormatName) -> None:
    """A function call's long array is one value cleared (the documented rule, no provider
    checks those values), and its arguments stay an object in every format."""
    args = {"paths": [f"src/module_{i}.py" for i in range(8)], "q": "x" * 80, "n": 3}
    rounds = [[("read", args, _words(3000))], [("read", {}, "ok")]]
    body = agent_body(rounds, format=fmt)
    result = ctxwin.load_policy(POLICY).apply(body, format=fmt)
    call = next(b for m in result.conversation.messages for b in m.tool_calls)
    assert json.loads(call.arguments) == {"paths": "[cleared]", "q": "[cleared]", "n": 3}
    assert not ctxwin.check(result.request, format=fmt)
