"""The system prompt and tools a request carries: counted as the JSON the provider gets."""

from __future__ import annotations

import json
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
    """It raised json's bare TypeError from the meter. The error's path names the body's
    key too (it said only ``[0].function.parameters.x``, with no path: review s48-3)."""
    with pytest.raises(ctxwin.InputError) as e:
        ctxwin.Policy({}).apply(tools_with(value), format="openai-chat")
    assert e.value.path == "tools[0].function.parameters.x"
    assert str(e.value) == (
        "tools[0].function.parameters.x: the request's system prompt, tools or output schema "
        f"hold a value of type {name}: ctxwin counts them as the JSON the provider receives; "
        "pass JSON data (dicts, lists, strings, numbers)"
    )


def test_a_system_prompt_holding_what_json_cannot_names_its_path() -> None:
    import datetime

    system = [{"type": "text", "text": "s", "d": datetime.date(2024, 1, 1)}]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 9, "system": system, "messages": MESSAGES}
    with pytest.raises(ctxwin.InputError, match=r"^system\[0\]\.d: .* datetime\.date:") as e:
        ctxwin.Policy({}).apply(body, format="anthropic")
    assert e.value.path == "system[0].d"


def test_an_integer_too_long_for_json_text_is_an_input_error_naming_it() -> None:
    with pytest.raises(ctxwin.InputError) as e:
        ctxwin.Policy({}).apply(tools_with(10**5000), format="openai-chat")
    assert e.value.path == "tools[0].function.parameters.x"
    assert str(e.value) == (
        "tools[0].function.parameters.x: the request's system prompt, tools or output schema "
        "hold an integer of more than 4,300 digits, which Python does not write as JSON text "
        "(sys.set_int_max_str_digits raises the limit): ctxwin counts them as the JSON the "
        "provider receives; pass JSON data (dicts, lists, strings, numbers)"
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


# ------------------------------------------------------------------------------ output schema

_SCHEMA = {
    "type": "object",
    "properties": {
        f"field_{i}": {"type": "string", "description": f"field {i}"} for i in range(40)
    },
    "required": [f"field_{i}" for i in range(40)],
    "additionalProperties": False,
}
_STRUCTURED: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    (
        "openai-chat",
        {"model": "gpt-4o", "messages": MESSAGES},
        "response_format",
        {"type": "json_schema", "json_schema": {"name": "inv", "strict": True, "schema": _SCHEMA}},
    ),
    (
        "openai-responses",
        {"model": "gpt-4.1", "input": MESSAGES},
        "text",
        {"format": {"type": "json_schema", "name": "inv", "strict": True, "schema": _SCHEMA}},
    ),
    (
        "anthropic",
        {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": MESSAGES},
        "output_config",
        {"format": {"type": "json_schema", "schema": _SCHEMA}},
    ),
    (
        "anthropic",
        {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": MESSAGES},
        "output_format",  # the beta's name for it, still taken
        {"type": "json_schema", "schema": _SCHEMA},
    ),
]


@pytest.mark.parametrize(
    ("fmt", "plain", "key", "value"), _STRUCTURED, ids=[f"{c[0]}-{c[2]}" for c in _STRUCTURED]
)
def test_a_structured_output_schema_counts_as_the_json_the_provider_receives(
    fmt: str, plain: dict[str, Any], key: str, value: dict[str, Any]
) -> None:
    """The schema is part of the prompt the provider bills: it counted nothing before."""
    counter = ctxwin.get_counter("o200k_base")
    policy = ctxwin.Policy({}, counter=counter)
    body = {**plain, key: value}
    without = policy.apply(plain, format=fmt).report.tokens_before
    result = policy.apply(body, format=fmt)
    as_json = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert result.report.tokens_before - without == counter.count(as_json) > 400
    assert result.request == body
    assert result.request[key] is value  # type: ignore[index]


def test_a_pydantic_model_class_as_the_response_format_counts_as_its_json_schema() -> None:
    """LiteLLM and the openai SDK's ``parse`` take the class and send its schema."""
    import pydantic

    class Invoice(pydantic.BaseModel):
        number: str
        lines: list[str]

    counter = ctxwin.get_counter("o200k_base")
    policy = ctxwin.Policy({}, counter=counter)
    plain = {"model": "gpt-4o", "messages": MESSAGES}
    without = policy.apply(plain, format="openai-chat").report.tokens_before
    result = policy.apply({**plain, "response_format": Invoice}, format="openai-chat")
    schema = json.dumps(Invoice.model_json_schema(), separators=(",", ":"))
    assert result.report.tokens_before - without == counter.count(schema)
    assert result.request["response_format"] is Invoice  # type: ignore[index]


def test_a_dataclass_as_the_response_format_counts_as_its_type_adapter_schema() -> None:
    """The openai SDK's ``parse`` takes a pydantic dataclass through ``pydantic.TypeAdapter``:
    counted as that schema, not refused."""
    import pydantic
    from pydantic.dataclasses import dataclass

    @dataclass
    class Answer:
        city: str
        population: int

    counter = ctxwin.get_counter("o200k_base")
    policy = ctxwin.Policy({}, counter=counter)
    plain = {"model": "gpt-4o", "messages": MESSAGES}
    without = policy.apply(plain, format="openai-chat").report.tokens_before
    result = policy.apply({**plain, "response_format": Answer}, format="openai-chat")
    schema = json.dumps(pydantic.TypeAdapter(Answer).json_schema(), separators=(",", ":"))
    assert result.report.tokens_before - without == counter.count(schema)
    assert result.request["response_format"] is Answer  # type: ignore[index]


def test_a_responses_text_format_class_counts_as_its_json_schema() -> None:
    """``responses.parse(text_format=Model)`` sends the class's schema as ``text.format``."""
    import pydantic

    class Invoice(pydantic.BaseModel):
        number: str
        lines: list[str]

    counter = ctxwin.get_counter("o200k_base")
    policy = ctxwin.Policy({}, counter=counter)
    plain = {"model": "gpt-4o", "input": [{"role": "user", "content": "hi"}]}
    without = policy.apply(plain, format="openai-responses").report.tokens_before
    result = policy.apply({**plain, "text_format": Invoice}, format="openai-responses")
    schema = json.dumps(Invoice.model_json_schema(), separators=(",", ":"))
    assert result.report.tokens_before - without == counter.count(schema)
    assert result.request["text_format"] is Invoice  # type: ignore[index]


def test_a_class_pydantic_cannot_describe_is_an_input_error() -> None:
    class Plain:
        pass

    body = {"model": "gpt-4o", "messages": MESSAGES, "response_format": Plain}
    with pytest.raises(ctxwin.InputError, match=r"Plain: pydantic makes no schema of it\)") as e:
        ctxwin.Policy({}).apply(body, format="openai-chat")
    assert e.value.path == "response_format"


_GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("generationConfig", "responseSchema"),
        ("generationConfig", "responseJsonSchema"),
        ("generation_config", "response_json_schema"),
        ("config", "response_schema"),
        ("config", "response_json_schema"),
    ],
)
def test_geminis_response_schema_counts_as_the_json_the_provider_receives(
    key: str, field: str
) -> None:
    """Gemini: "the size of the response schema counts towards the input token limit"; it counted
    nothing before. The rest of ``generationConfig`` (the mime type, the temperature) is
    no prompt."""
    counter = ctxwin.get_counter("o200k_base")
    policy = ctxwin.Policy({}, counter=counter)
    without = policy.apply(_GEMINI, format="gemini").report.tokens_before
    config = {"responseMimeType": "application/json", "temperature": 0.2, field: _SCHEMA}
    body = {**_GEMINI, key: config}
    result = policy.apply(body, format="gemini")
    as_json = json.dumps(_SCHEMA, ensure_ascii=False, separators=(",", ":"))
    assert result.report.tokens_before - without == counter.count(as_json) > 400
    assert result.request == body


def test_geminis_sdk_config_response_schema_class_counts_as_its_json_schema() -> None:
    """python-genai takes a pydantic class, ``list[Recipe]`` or a ``types.Schema`` as
    ``response_schema`` and sends its schema; the class is no tool to declare."""
    import pydantic
    from google.genai import types

    class Recipe(pydantic.BaseModel):
        recipe_name: str
        ingredients: list[str]

    counter = ctxwin.get_counter("o200k_base")
    policy = ctxwin.Policy({}, counter=counter)
    without = policy.apply(_GEMINI, format="gemini").report.tokens_before
    for schema in (Recipe, list[Recipe]):
        adapter_schema = pydantic.TypeAdapter(schema).json_schema()
        expected = counter.count(json.dumps(adapter_schema, separators=(",", ":")))
        for config in (
            {"response_schema": schema},
            types.GenerateContentConfig(response_schema=schema),
        ):
            result = policy.apply({**_GEMINI, "config": config}, format="gemini")
            assert result.report.tokens_before - without == expected > 20
    sdk_schema = types.Schema(type="OBJECT", properties={"name": types.Schema(type="STRING")})
    config = types.GenerateContentConfig(response_schema=sdk_schema)
    result = policy.apply({**_GEMINI, "config": config}, format="gemini")
    dumped = sdk_schema.model_dump(mode="json", exclude_none=True, by_alias=True)
    expected = counter.count(json.dumps(dumped, separators=(",", ":")))
    assert result.report.tokens_before - without == expected > 5


_GEMINI_HI = [{"role": "user", "parts": [{"text": "hi"}]}]
_BAD_ENVELOPES: list[tuple[str, dict[str, Any], str]] = [
    (
        "openai-chat",
        {
            "model": "gpt-4o",
            "messages": MESSAGES,
            "response_format": {"type": "json_schema", "json_schema": {"schema": {"x": {1}}}},
        },
        "response_format.json_schema.schema.x",
    ),
    (
        "anthropic",
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 10,
            "messages": MESSAGES,
            "output_format": {"type": "json_schema", "schema": {"x": {1}}},
        },
        "output_format.schema.x",
    ),
    (
        "openai-responses",
        {"model": "gpt-4o", "input": MESSAGES, "text": {"format": {"schema": {"x": {1}}}}},
        "text.format.schema.x",
    ),
    (
        "gemini",
        {"contents": _GEMINI_HI, "generationConfig": {"responseSchema": {"x": {1}}}},
        "generationConfig.responseSchema.x",
    ),
    (
        "gemini",
        {"contents": _GEMINI_HI, "generation_config": {"response_json_schema": [{1}]}},
        "generation_config.response_json_schema[0]",
    ),
    (
        "gemini",
        {
            "contents": _GEMINI_HI,
            "config": {"tools": [{"functionDeclarations": [{"parameters": {"x": {1}}}]}]},
        },
        "config.tools[0].functionDeclarations[0].parameters.x",
    ),
    (
        "gemini",
        {"contents": _GEMINI_HI, "config": {"system_instruction": {"parts": [{"x": {1}}]}}},
        "config.system_instruction.parts[0].x",
    ),
]


@pytest.mark.parametrize(
    ("fmt", "body", "path"), _BAD_ENVELOPES, ids=[c[2] for c in _BAD_ENVELOPES]
)
def test_a_nested_envelope_value_json_cannot_hold_is_named_by_its_full_path(
    fmt: str, body: dict[str, Any], path: str
) -> None:
    """The body's key and the path inside its value are joined with a dot (it said
    ``response_formatjson_schema.schema.x``), and a value Gemini nests in
    ``generationConfig`` or the SDK's ``config`` is named from the body (it had no path,
    and its text named ``x`` relative to nothing)."""
    with pytest.raises(ctxwin.InputError) as e:
        ctxwin.Policy({}).apply(body, format=fmt)
    assert e.value.path == path
    assert str(e.value).startswith(f"{path}: the request's system prompt, tools or output schema")
    assert " at " not in str(e.value)
