"""What no format can carry: data nested deeper than ctxwin reads, in every format and API."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin.testing import FakeCounter, agent_body

DEEP = 10_000


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("fmt", ctxwin.FORMATS)
def test_deeply_nested_data_in_a_message_is_a_format_error_everywhere(
    fmt: ctxwin.FormatName,
) -> None:
    body = agent_body([[("f", {}, "ok")]], format=fmt)
    deep = nested(DEEP)
    task = {
        "openai-chat": lambda: body["messages"][1].update(
            content=[{"type": "image_url", "image_url": {"url": deep}}]
        ),
        "anthropic": lambda: body["messages"][0].update(
            content=[{"type": "image", "source": deep}]
        ),
        "openai-responses": lambda: body["input"][0].update(
            content=[{"type": "input_image", "image_url": deep}]
        ),
        "gemini": lambda: body["contents"][0].update(parts=[{"inlineData": deep}]),
    }
    task[fmt]()
    for call in (
        lambda: ctxwin.check(body),
        lambda: ctxwin.repair(body),
        lambda: ctxwin.Policy({}, counter=FakeCounter()).apply(body),
    ):
        with pytest.raises(ctxwin.FormatError, match="nested more than 200 levels deep") as info:
            call()
        assert info.value.path is not None


def test_deeply_nested_tools_are_an_input_error() -> None:
    body = agent_body([], format="openai-chat")
    body["tools"] = [nested(DEEP)]
    with pytest.raises(ctxwin.InputError, match="nest more than 200 levels deep"):
        ctxwin.Policy({}, counter=FakeCounter()).apply(body)


def test_deeply_nested_json_text_in_arguments_and_results_is_only_text() -> None:
    """JSON text is parsed where ctxwin needs it (clearing arguments, selecting): text
    nested too deeply is treated as text, never a RecursionError."""
    body = agent_body(
        [[("f", {}, deep_json(DEEP) + " w" * 200)], [("g", {}, "x")], [("h", {}, "y")]],
        format="openai-chat",
    )
    body["messages"][2]["tool_calls"][0]["function"]["arguments"] = deep_json(DEEP)
    pol = ctxwin.Policy(
        {
            "context_window": 20_000,
            "window": {
                "trigger": 0.05,
                "target": 0.01,
                "keep_rounds": 1,
                "clear_tool_inputs": True,
            },
        },
        counter=ctxwin.ApproximateCounter(),
    )
    result = pol.apply(body)
    assert ctxwin.check(result.request) == []
    out = result.request["messages"]  # type: ignore[index]
    assert "cleared" in out[3]["content"]
    assert out[2]["tool_calls"][0]["function"]["arguments"] == "[cleared]"
