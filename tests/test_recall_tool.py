"""The recall tool on every provider: its definition is what each API takes, and every
argument a model may send gets an answer the provider accepts, never an exception."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

import ctxwin
from ctxwin._core.model import FORMATS

TEXT = "".join(f"line {i}\n" for i in range(1, 31))


@pytest.fixture(scope="module")
def recalling() -> tuple[ctxwin.Policy, str]:
    policy = ctxwin.load_policy({"recall": True})
    handle = policy.shelf.keep(TEXT)
    assert handle is not None
    return policy, handle


def test_the_chat_and_anthropic_definitions_are_the_sdk_types() -> None:
    chat = pytest.importorskip("openai.types.chat")
    anthropic = pytest.importorskip("anthropic.types")
    policy = ctxwin.load_policy({"recall": True})
    for fmt, kind in (
        ("openai-chat", chat.ChatCompletionFunctionToolParam),
        ("anthropic", anthropic.ToolParam),
    ):
        tool = policy.recall_tool(fmt)
        pydantic.TypeAdapter(kind).validate_python(tool, strict=True)
        assert set(tool) <= set(kind.__annotations__), fmt


def test_the_responses_definition_turns_strict_off() -> None:
    """Responses makes a function strict when ``strict`` is left out (every property then
    required, so ``lines`` and ``grep`` on every call); the SDK's type requires the key."""
    responses = pytest.importorskip("openai.types.responses")
    tool = ctxwin.load_policy({"recall": True}).recall_tool("openai-responses")
    pydantic.TypeAdapter(responses.FunctionToolParam).validate_python(tool, strict=True)
    assert tool["strict"] is False


def test_the_gemini_definition_uses_only_the_openapi_subset() -> None:
    (decl,) = ctxwin.load_policy({"recall": True}).recall_tool("gemini")["functionDeclarations"]
    allowed = {"type", "properties", "required", "description"}
    schema = decl["parameters"]
    assert set(schema) <= allowed
    for prop in schema["properties"].values():
        assert set(prop) <= allowed
        assert prop["type"] == "string"


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        ("1" * 5000, "past the end"),
        ("1" * 5000 + "-2", "is not a range"),
        ("2-" + "1" * 5000, 2),
        (10**5000, "past the end"),
        ([1, 10**5000], 1),
    ],
    ids=["digits", "digits-range", "range-digits", "int", "int-pair"],
)
def test_a_line_number_too_long_to_read_is_answered_never_raised(
    recalling: tuple[ctxwin.Policy, str], lines: object, error: str | int
) -> None:
    """``int`` refuses over 4,300 digits: such a number is past the end, not a ValueError
    (an end past the end: the lines to the end)."""
    policy, handle = recalling
    answer = policy.recall_call({"handle": handle, "lines": lines})
    assert answer.is_error == isinstance(error, str)
    if isinstance(error, int):
        assert answer.text == "".join(f"line {i}\n" for i in range(error, 31))
    else:
        assert error in answer.text
        assert len(answer.text) < 200


@pytest.mark.parametrize("lines", ["", "  "])
def test_blank_lines_recall_the_whole_original(
    recalling: tuple[ctxwin.Policy, str], lines: str
) -> None:
    """Under a strict schema every property is required: the model sends ``""`` for the
    range it leaves out."""
    policy, handle = recalling
    assert policy.recall_call({"handle": handle, "lines": lines, "grep": ""}).text == TEXT


@pytest.mark.parametrize(
    ("lines", "first", "last"),
    [("28-", 28, 30), ("28 -", 28, 30), ("-2", 1, 2), ("28:", 28, 30), ("5 6", 5, 6)],
)
def test_an_open_range_runs_from_the_start_or_to_the_end(
    recalling: tuple[ctxwin.Policy, str], lines: str, first: int, last: int
) -> None:
    policy, handle = recalling
    want = "".join(f"line {i}\n" for i in range(first, last + 1))
    assert policy.recall_call({"handle": handle, "lines": lines}).text == want


ODD: list[Any] = [
    {"lines": "10-"},
    {"lines": "-5"},
    {"lines": "a-b"},
    {"lines": "5-2"},
    {"lines": "-"},
    {"lines": "99999999999999999999999-999999999999999999999999999"},
    {"lines": [1, 3]},
    {"lines": [3]},
    {"lines": 3},
    {"lines": 3.5},
    {"lines": True},
    {"lines": {"from": 1}},
    {"lines": "١-٢"},
    {"grep": "("},
    {"grep": "(a+)+$"},
    {"grep": "a{99999999999}"},
    {"grep": 5},
    {"grep": ["x"]},
    {"grep": "x" * 100_000},
    {"handle": 5},
    {"handle": None},
    {"handle": ["r-000000000000"]},
    {"handle": "R-000000000000"},
    {"handle": "r-000000000000"},
    {"handle": "x" * 100_000},
    {"handle": "\ud800"},
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("args", ODD, ids=lambda a: repr(a)[:40])
def test_every_odd_argument_is_a_result_the_provider_takes(
    recalling: tuple[ctxwin.Policy, str], fmt: str, args: dict[str, Any]
) -> None:
    policy, handle = recalling
    item = policy.recall_result("call_1", {"handle": handle, **args}, fmt)
    text = json.dumps(item)
    assert len(text) < 2_000
    if fmt == "anthropic":
        assert isinstance(item["content"], str)
    if fmt == "gemini":
        assert set(item["functionResponse"]["response"]) <= {"output", "error"}


@pytest.mark.parametrize(
    "arguments", ["", "not json", "[]", "null", '{"handle": ', '{"handle": 1e999999}', b"{}", 1.5]
)
def test_arguments_that_are_no_object_are_an_error_answer(
    recalling: tuple[ctxwin.Policy, str], arguments: object
) -> None:
    answer = recalling[0].recall_call(arguments)
    assert answer.is_error
    assert answer.text.startswith("recall:")


DEEP = '{"handle": "r-0000000000000000", "lines": ' + "[" * 100_000 + "]" * 100_000 + "}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_arguments_nested_past_the_stack_are_an_error_answer(
    recalling: tuple[ctxwin.Policy, str], fmt: str
) -> None:
    """JSON nested deeper than Python's stack let a bare RecursionError out of json.loads."""
    policy = recalling[0]
    answer = policy.recall_call(DEEP)
    assert answer.is_error
    assert answer.text == f"recall: arguments are not JSON: {DEEP!r:.60}"
    item = policy.recall_result("call_1", DEEP, fmt)
    assert "arguments are not JSON" in json.dumps(item)


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic", "gemini"])
@pytest.mark.parametrize("call_id", [None, 7, b"c1"], ids=["none", "number", "bytes"])
def test_a_call_id_that_is_no_string_is_an_input_error(
    recalling: tuple[ctxwin.Policy, str], fmt: str, call_id: object
) -> None:
    """It was written as it came ("tool_call_id": null), a result the provider refuses and
    that the next apply() refused pointing into the history, far from the call."""
    if fmt == "gemini" and call_id is None:
        return  # the one format whose calls may have no id: see the next test
    policy, handle = recalling
    with pytest.raises(ctxwin.InputError) as info:
        policy.recall_result(call_id, {"handle": handle}, fmt)  # type: ignore[arg-type]
    got = "null" if call_id is None else ("number" if call_id == 7 else "bytes")
    assert info.value.path == "call_id"
    assert info.value.reason == (
        f"the recall call's id must be a string, not {got}"
        + ("" if fmt == "gemini" else f" (only Gemini's calls come without one; {fmt}'s have one)")
    )


def test_a_gemini_call_without_an_id_is_answered_without_one(
    recalling: tuple[ctxwin.Policy, str],
) -> None:
    policy, handle = recalling
    part = policy.recall_result(None, {"handle": handle, "lines": "2"}, "gemini")
    assert part == {"functionResponse": {"name": "recall", "response": {"output": "line 2\n"}}}
