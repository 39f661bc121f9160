"""Cache breakpoints in depth: every block type the providers' SDKs describe, markers given
as ``null``, and messages whose wire form takes no marker (the breakpoint goes on the
markable message before, and the report lists only what the request carries)."""

from __future__ import annotations

import re
import typing
from typing import Any

import pytest

import ctxwin
from ctxwin.formats import get_adapter
from ctxwin.testing import FakeCounter, agent_body

AUTO: dict[str, Any] = {
    "context_window": 40_000,
    "cache_breakpoints": "auto",
    "pricing": {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0},
}
EPHEMERAL = {"type": "ephemeral"}
EXPLICIT = {"mode": "explicit"}
LONG = "q " * 3000


def _literal(annotation: object) -> str:
    found = re.search(r"Literal\[['\"]([a-z_0-9]+)['\"]\]", str(annotation))
    assert found, annotation
    return found.group(1)


def _anthropic_blocks() -> list[Any]:
    """(block type, whether some request shape of it has ``cache_control``) for every
    ``*BlockParam`` of ``anthropic.types`` and ``anthropic.types.beta``."""
    try:
        from anthropic import types
        from anthropic.types import beta
    except ImportError:
        return [pytest.param("", False, marks=pytest.mark.skip(reason="no anthropic"))]
    takes: dict[str, bool] = {}
    for module in (types, beta):
        for name in dir(module):
            cls = getattr(module, name)
            annotations = getattr(cls, "__annotations__", None)
            if not name.endswith("BlockParam") or not isinstance(annotations, dict):
                continue
            if "type" not in annotations or not hasattr(cls, "__optional_keys__"):
                continue
            keys = cls.__required_keys__ | cls.__optional_keys__
            kind = _literal(annotations["type"])
            takes[kind] = takes.get(kind, False) or "cache_control" in keys
    return [pytest.param(k, v, id=k) for k, v in sorted(takes.items())]


def marked(body: dict[str, Any]) -> list[int]:
    key = "messages" if "messages" in body else "input"
    adapter = get_adapter(ctxwin.detect(body))
    return [i for i, m in enumerate(body[key]) if adapter.marker_of(m)]


def listed(result: ctxwin.Result) -> list[int]:
    return [i for i, _ in result.report.breakpoints]


# ------------------------------------------------------------------ block types (Anthropic)


@pytest.mark.parametrize(("kind", "sdk_takes"), _anthropic_blocks())
def test_anthropic_marks_only_blocks_whose_sdk_shape_has_cache_control(
    kind: str, sdk_takes: bool
) -> None:
    """A message ending in a block the API gives no ``cache_control`` (``fallback``,
    ``mcp_tool_listing``...) has its marker on the block before (on it: a 400)."""
    msg = {"role": "assistant", "content": [{"type": "text", "text": "hi"}, {"type": kind}]}
    out = get_adapter("anthropic").set_marker(msg, True)
    assert ("cache_control" in out["content"][1]) is sdk_takes
    assert ("cache_control" in out["content"][0]) is not sdk_takes


@pytest.mark.parametrize(
    "block",
    [
        {"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}},
        {"type": "mcp_tool_listing", "mcp_server_name": "s", "tools": []},
    ],
    ids=["fallback", "mcp_tool_listing"],
)
def test_auto_puts_no_cache_control_on_a_trailing_block_that_refuses_it(
    block: dict[str, Any],
) -> None:
    body = {
        "messages": [
            {"role": "user", "content": LONG},
            {"role": "assistant", "content": [{"type": "text", "text": "partial"}, block]},
        ]
    }
    pol = ctxwin.Policy(AUTO, counter=FakeCounter(), format="anthropic")
    sent = pol.apply(body).request["messages"][-1]["content"]  # type: ignore[index]
    assert sent[1] == block
    assert sent[0]["cache_control"] == EPHEMERAL


# ------------------------------------------------------------------ part types (OpenAI)


def _openai_parts() -> list[Any]:
    """(part type, whether its request shape has ``prompt_cache_breakpoint``) for the
    content parts of OpenAI Chat and Responses messages and tool outputs."""
    try:
        from openai.types import chat, responses
    except ImportError:
        return [pytest.param("", False, marks=pytest.mark.skip(reason="no openai"))]
    shapes = [
        *typing.get_args(chat.ChatCompletionContentPartParam),
        chat.ChatCompletionContentPartRefusalParam,
        *typing.get_args(responses.ResponseInputContentParam),
        responses.ResponseInputTextContentParam,
        responses.ResponseInputImageContentParam,
        responses.ResponseInputFileContentParam,
        responses.ResponseOutputTextParam,
        responses.ResponseOutputRefusalParam,
    ]
    takes = {
        _literal(c.__annotations__["type"]): "prompt_cache_breakpoint"
        in (c.__required_keys__ | c.__optional_keys__)
        for c in shapes
    }
    return [pytest.param(k, v, id=k) for k, v in sorted(takes.items())]


@pytest.mark.parametrize(("kind", "sdk_takes"), _openai_parts())
def test_openai_marks_only_parts_whose_sdk_shape_has_the_breakpoint(
    kind: str, sdk_takes: bool
) -> None:
    msg = {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": kind}]}
    out = get_adapter("openai-chat").set_marker(msg, True)
    assert ("prompt_cache_breakpoint" in out["content"][1]) is sdk_takes


def test_no_breakpoint_lands_in_a_shell_call_s_output_chunks() -> None:
    """A ``shell_call_output``'s output is stdout/stderr chunks, not content parts: the
    breakpoint goes on the user message before (ctxwin put it on the last chunk)."""
    chunk = {"stdout": "x " * 300, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
    items = [
        {"role": "user", "content": LONG},
        {"type": "shell_call", "call_id": "c1", "action": {"commands": ["ls"]}},
        {"type": "shell_call_output", "call_id": "c1", "output": [chunk]},
    ]
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply({"model": "gpt-5.6", "input": items})
    assert result.request["input"][2] == items[2]  # type: ignore[index]
    assert marked(result.request) == listed(result) == [0]  # type: ignore[arg-type]


# ------------------------------------------------------------------ null markers


def history(rounds: int = 20) -> dict[str, Any]:
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 150))] for r in range(rounds)]
    body = agent_body(uses, format="anthropic")
    del body["model"]
    return body


def test_a_null_cache_control_on_the_last_block_gets_ctxwin_s_marker() -> None:
    """``"cache_control": null`` is no breakpoint: auto took the message for one of the
    user's, left it as it was, and the request went without the breakpoint it reported."""
    body = history()
    body["messages"][-1]["content"][-1]["cache_control"] = None
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    last = result.request["messages"][-1]["content"][-1]  # type: ignore[index]
    assert last["cache_control"] == EPHEMERAL


def test_a_null_cache_control_inside_a_result_is_no_breakpoint() -> None:
    body = history()
    block = body["messages"][-1]["content"][-1]
    block["content"] = [{"type": "text", "text": block["content"], "cache_control": None}]
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    last = result.request["messages"][-1]["content"][-1]  # type: ignore[index]
    assert last["cache_control"] == EPHEMERAL


def test_null_cache_control_on_system_and_tools_takes_none_of_the_four() -> None:
    body = history()
    body["system"] = [{"type": "text", "text": "s", "cache_control": None}]
    body["tools"] = [
        {"name": f"t{i}", "input_schema": {"type": "object"}, "cache_control": None}
        for i in range(3)
    ]
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert marked(result.request)[-1] == len(body["messages"]) - 1  # type: ignore[arg-type]
    assert listed(result) == marked(result.request)  # type: ignore[arg-type]


# ------------------------------------------------------------------ messages that take none


def test_auto_passes_over_a_legacy_function_message_for_the_message_before() -> None:
    """An OpenAI Chat ``function`` message's content must stay a string: the adapter puts
    no marker there, so the breakpoint goes on the user message (it was lost, and listed)."""
    body = {
        "model": "gpt-5.6",
        "messages": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": LONG},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "f", "arguments": "{}"},
            },
            {"role": "function", "name": "f", "content": "res " * 300},
        ],
    }
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    sent = result.request["messages"]  # type: ignore[index]
    assert sent[3] == body["messages"][3]
    assert marked(result.request) == listed(result) == [1]  # type: ignore[arg-type]
    assert sent[1]["content"][-1]["prompt_cache_breakpoint"] == EXPLICIT


def test_auto_passes_over_a_computer_call_output_for_the_message_before() -> None:
    """A ``computer_call_output``'s output is one screenshot object, with no breakpoint
    field: the report listed a breakpoint there that the request did not carry."""
    screenshot = {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"}
    items = [
        {"role": "user", "content": LONG},
        {"type": "computer_call", "call_id": "c1", "action": {"type": "screenshot"}},
        {"type": "computer_call_output", "call_id": "c1", "output": screenshot},
    ]
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply({"model": "gpt-5.6", "input": items})
    assert result.request["input"][2] == items[2]  # type: ignore[index]
    assert marked(result.request) == listed(result) == [0]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "output"),
    [
        (
            {"type": "local_shell_call", "action": {"type": "exec", "command": ["ls"], "env": {}}},
            "local_shell_call_output",
        ),
        (
            {"type": "apply_patch_call", "operation": {"type": "delete_file", "path": "a"}},
            "apply_patch_call_output",
        ),
    ],
)
def test_an_output_that_must_stay_a_string_gets_no_breakpoint(
    call: dict[str, Any], output: str
) -> None:
    """Only a function or custom tool's output may be a list of parts: a local shell's or
    apply_patch's became one, with the breakpoint on it (a 400)."""
    items = [
        {"role": "user", "content": LONG},
        {**call, "call_id": "c1", "status": "completed"},
        {"type": output, "call_id": "c1", "id": "c1", "output": "x " * 300},
    ]
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply({"model": "gpt-5.6", "input": items})
    assert result.request["input"][2] == items[2]  # type: ignore[index]
    assert marked(result.request) == listed(result) == [0]  # type: ignore[arg-type]


def test_a_responses_string_input_still_gets_its_breakpoint() -> None:
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply({"model": "gpt-5.6", "input": LONG})
    assert marked(result.request) == listed(result) == [0]  # type: ignore[arg-type]


def test_auto_leaves_a_gemini_request_as_it_is() -> None:
    """Gemini has no explicit breakpoints (its cache is implicit or ``cachedContent``)."""
    body = agent_body([[("read", {"path": "a"}, "x " * 500)]], format="gemini")
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert result.request == body
    assert result.report.breakpoints == ()


def test_auto_passes_over_a_tool_message_with_empty_content() -> None:
    """A tool result of ``""`` (tau-bench's ``think`` tool) has no text to carry a marker:
    its content was rewritten to an empty text part with none, and the report listed a
    breakpoint the request did not carry."""
    body = {
        "model": "gpt-5.6",
        "messages": [
            {"role": "user", "content": LONG},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "think", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": ""},
        ],
    }
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert result.request["messages"][2] == body["messages"][2]  # type: ignore[index]
    assert marked(result.request) == listed(result) == [0]  # type: ignore[arg-type]


def test_keep_adds_no_marker_for_a_null_one_in_a_cleared_result() -> None:
    """Under ``keep`` a message that had a marker keeps one when the window clears the
    block that carried it: a ``null`` one counted, so a fifth breakpoint appeared."""
    body = history(25)
    block = body["messages"][4]["content"][0]
    block["content"] = [{"type": "text", "text": block["content"], "cache_control": None}]
    keep = {**AUTO, "context_window": 4000, "cache_breakpoints": "keep"}
    out = ctxwin.Policy(keep, counter=FakeCounter()).apply(body).request
    sent = out["messages"][4]["content"][0]  # type: ignore[index]
    assert "cleared" in str(sent["content"])
    assert marked(out) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode", "expected"), [(None, [0]), ("implicit", [0]), ("explicit", [0, 1])]
)
def test_openai_s_implicit_breakpoint_takes_one_of_the_four(
    mode: str | None, expected: list[int]
) -> None:
    """Under the default ``implicit`` mode OpenAI writes only the latest three explicit
    breakpoints: three of the user's leave ctxwin none (its own would push out the first
    of the user's, silently)."""
    parts = [
        {"type": "input_text", "text": f"rule {i} " * 200, "prompt_cache_breakpoint": EXPLICIT}
        for i in range(3)
    ]
    body: dict[str, Any] = {
        "model": "gpt-5.6",
        "input": [{"role": "developer", "content": parts}, {"role": "user", "content": LONG}],
    }
    if mode is not None:
        body["prompt_cache_options"] = {"mode": mode}
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert marked(result.request) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("mode", "expected"), [(None, [0]), ("explicit", [0, 1])])
def test_openai_chat_s_implicit_breakpoint_takes_one_of_the_four_too(
    mode: str | None, expected: list[int]
) -> None:
    parts = [
        {"type": "text", "text": f"rule {i} " * 200, "prompt_cache_breakpoint": EXPLICIT}
        for i in range(3)
    ]
    body: dict[str, Any] = {
        "model": "gpt-5.6",
        "messages": [{"role": "system", "content": parts}, {"role": "user", "content": LONG}],
    }
    if mode is not None:
        body["prompt_cache_options"] = {"mode": mode}
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body, format="openai-chat")
    assert marked(result.request) == expected  # type: ignore[arg-type]
