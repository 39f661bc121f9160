"""The system prompt and tools a request carries: counted as the JSON the provider gets."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin

MESSAGES = [{"role": "user", "content": "hi"}]


def tools_with(value: object) -> dict[str, Any]:
    function = {"name": "f", "parameters": {"type": "object", "x": value}}
    return {
        "model": "gpt-4o",
        "messages": MESSAGES,
        "tools": [{"type": "function", "function": function}],
    }


@pytest.mark.parametrize(
    ("value", "name"), [({1, 2}, "set"), (b"x", "bytes"), (object(), "object")]
)
def test_a_tool_definition_holding_what_json_cannot_is_an_input_error(
    value: object, name: str
) -> None:
    """It raised json's bare TypeError from the meter."""
    with pytest.raises(ctxwin.InputError) as e:
        ctxwin.Policy({}).apply(tools_with(value), format="openai-chat")
    assert str(e.value) == (
        f"the request's system prompt or tools hold a value of type {name} at "
        "[0].function.parameters.x: ctxwin counts them as the JSON the provider receives; "
        "pass JSON data (dicts, lists, strings, numbers)"
    )


def test_a_key_json_cannot_write_is_an_input_error() -> None:
    body = tools_with(None)
    body["tools"][0]["function"][(1, 2)] = "tuple key"
    with pytest.raises(ctxwin.InputError, match=r"hold data JSON cannot hold \(keys must be str"):
        ctxwin.Policy({}).apply(body, format="openai-chat")


def test_an_sdk_tool_object_counts_as_the_json_it_sends() -> None:
    """Gemini's SDK builds tools as ``types.Tool`` objects; a body may carry them."""
    from google.genai import types

    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="get_weather",
                description="The weather in a city",
                parameters_json_schema={"type": "object", "properties": {"city": {}}},
            )
        ]
    )
    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    policy = ctxwin.Policy({})
    sent = policy.apply({"contents": contents, "tools": [tool]}, format="gemini")
    as_json = tool.model_dump(mode="json", exclude_none=True, by_alias=True)
    plain = policy.apply({"contents": contents, "tools": [as_json]}, format="gemini")
    assert sent.report.tokens_before == plain.report.tokens_before > 20
    assert sent.request["tools"][0] is tool  # type: ignore[index]
