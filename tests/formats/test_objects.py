"""SDK objects in a history (anything with a pydantic ``model_dump``) and detection hints."""

from __future__ import annotations

import enum
import json
import types
from collections import UserDict
from typing import Any

import pytest
from pydantic import BaseModel

import ctxwin
from ctxwin.testing import FakeCounter, agent_body


class Function(BaseModel):
    name: str
    arguments: str


class ToolCallObj(BaseModel):
    id: str
    type: str = "function"
    function: Function


class ChatCompletionMessage(BaseModel):
    """The shape of the OpenAI SDK's response message (with its response-only fields)."""

    role: str = "assistant"
    content: str | None = None
    refusal: str | None = None
    annotations: list[Any] | None = None
    tool_calls: list[ToolCallObj] | None = None


class TextBlock(BaseModel):
    type: str = "text"
    text: str
    citations: list[Any] | None = None


class ToolUseBlock(BaseModel):
    type: str = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class AnthropicMessage(BaseModel):
    """The shape of the Anthropic SDK's ``Message`` (a response)."""

    id: str = "msg_1"
    type: str = "message"
    role: str = "assistant"
    model: str = "claude-sonnet-4-5"
    content: list[TextBlock | ToolUseBlock]
    stop_reason: str = "tool_use"


def test_an_openai_sdk_message_in_the_history_goes_out_as_a_request_dict() -> None:
    asked = ChatCompletionMessage(
        annotations=[],
        tool_calls=[ToolCallObj(id="c1", function=Function(name="f", arguments="{}"))],
    )
    history: list[Any] = [{"role": "user", "content": "go"}, asked]
    history.append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    body = {"model": "gpt-4o", "messages": history}
    assert ctxwin.detect(body) == "openai-chat"
    assert ctxwin.check(body) == []
    out = ctxwin.Policy({}, counter=FakeCounter()).apply(body).request
    assert out["messages"][1] == {  # type: ignore[index]
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    assert out["messages"][0] is history[0]  # type: ignore[index]


def test_anthropic_sdk_blocks_and_messages_in_the_history_are_read() -> None:
    reply = AnthropicMessage(
        content=[TextBlock(text="Let me look."), ToolUseBlock(id="t1", name="f", input={})]
    )
    body = {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": reply.content},  # the docs' pattern
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
            reply,  # the whole response object
        ],
    }
    conv = ctxwin.parse(body)
    assert [r.tool for r in conv.results()] == ["f"]
    out = ctxwin.render(conv)
    assert out["messages"][1]["content"] == [  # type: ignore[index]
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
    ]
    assert out["messages"][3] == {"role": "assistant", "content": out["messages"][1]["content"]}  # type: ignore[index]


def test_an_object_ctxwin_cannot_read_is_named_with_its_place_and_the_fix() -> None:
    class Opaque:
        pass

    body = {"system": "s", "messages": [{"role": "user", "content": [Opaque()]}]}
    with pytest.raises(ctxwin.FormatError) as info:
        ctxwin.parse(body, format="anthropic")
    assert info.value.path == "messages[0].content[0]"
    assert "Opaque is not something ctxwin can read" in info.value.reason
    assert ".model_dump()" in info.value.reason
    with pytest.raises(
        ctxwin.FormatError, match=r"messages\[1\] is a .*Opaque, which ctxwin cannot read"
    ):
        ctxwin.detect({"messages": [{"role": "user", "content": "hi"}, Opaque()]})


HUGE = 10**5000
"""An integer of 5,001 digits (a math tool's answer): over what Python writes as text."""


@pytest.mark.parametrize(
    ("fmt", "body", "path"),
    [
        (
            "gemini",
            agent_body([[("f", {}, "x")]], format="gemini"),
            "contents[2].parts[0].functionResponse.response.result",
        ),
        (
            "anthropic",
            agent_body([[("f", {}, "x")]], format="anthropic"),
            "messages[1].content[0].input.n",
        ),
        ("openai-chat", {"messages": [{"role": "user", "content": [{"n": HUGE}]}]}, None),
    ],
)
def test_an_integer_too_long_for_json_text_is_named_with_its_place(
    fmt: str, body: dict[str, Any], path: str | None
) -> None:
    """It raised a bare ValueError out of json.dumps deep in the adapter."""
    if fmt == "gemini":
        body["contents"][2]["parts"][0]["functionResponse"]["response"] = {"result": HUGE}
    elif fmt == "anthropic":
        body["messages"][1]["content"][0]["input"] = {"n": HUGE}
    with pytest.raises(ctxwin.FormatError) as info:
        ctxwin.Policy({}, format=fmt).apply(body)  # type: ignore[arg-type]
    assert info.value.path == (path or "messages[0].content[0].n")
    assert info.value.reason == (
        "an integer of more than 4,300 digits, which Python does not write as JSON text "
        "(sys.set_int_max_str_digits raises the limit): pass it as a string"
    )


@pytest.mark.parametrize(
    ("model", "fmt"),
    [("claude-sonnet-4-5", "anthropic"), ("gpt-4o", "openai-chat"), ("o3-mini", "openai-chat")],
)
def test_the_model_name_settles_a_one_message_first_request(model: str, fmt: str) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "hello"}]}
    assert ctxwin.detect(body) == fmt


def test_without_a_model_a_one_message_request_stays_ambiguous() -> None:
    with pytest.raises(ctxwin.FormatError, match="ambiguous") as info:
        ctxwin.detect({"messages": [{"role": "user", "content": "hello"}]})
    assert set(info.value.candidates) == {"openai-chat", "anthropic"}


def test_the_detection_error_says_what_it_found_in_the_messages() -> None:
    with pytest.raises(
        ctxwin.FormatError, match=r"a message must be a JSON object, not string"
    ) as e:
        ctxwin.detect({"model": "x", "messages": [{"role": "user", "content": "a"}, "oops"]})
    assert e.value.path == "messages[1]"


def test_a_parsed_responses_call_goes_out_without_what_the_sdk_leaves_out() -> None:
    """`responses.parse` output items carry `parsed_arguments` / `parsed`, which the SDK
    excludes from requests (`__api_exclude__`) and the API refuses."""
    parsed = pytest.importorskip("openai.types.responses.parsed_response")
    call = parsed.ParsedResponseFunctionToolCall(
        type="function_call", call_id="c1", name="f", arguments="{}", parsed_arguments={}
    )
    text = parsed.ParsedResponseOutputText(
        type="output_text", text='{"a":1}', annotations=[], parsed={"a": 1}
    )
    message = parsed.ParsedResponseOutputMessage(
        type="message", id="msg_1", role="assistant", status="completed", content=[text]
    )
    body = {"model": "gpt-5", "input": [{"role": "user", "content": "go"}, message, call]}
    body["input"].append({"type": "function_call_output", "call_id": "c1", "output": "ok"})
    out = ctxwin.render(ctxwin.parse(body, format="openai-responses"))
    assert out["input"][1]["content"] == [  # type: ignore[index]
        {"type": "output_text", "text": '{"a":1}', "annotations": []}
    ]
    assert out["input"][2] == {  # type: ignore[index]
        "type": "function_call",
        "call_id": "c1",
        "name": "f",
        "arguments": "{}",
    }


def test_a_required_null_field_of_an_sdk_object_is_kept() -> None:
    """`document_title` of a citation is required and may be null: the API refuses the
    block without it (the SDK sends what the response held, nulls included)."""
    types = pytest.importorskip("anthropic.types")
    block = types.TextBlock.model_validate(
        {
            "type": "text",
            "text": "x",
            "citations": [
                {
                    "type": "char_location",
                    "cited_text": "c",
                    "document_index": 0,
                    "document_title": None,
                    "start_char_index": 0,
                    "end_char_index": 1,
                }
            ],
        }
    )
    body = {"system": "s", "messages": [{"role": "user", "content": "hi"}]}
    body["messages"].append({"role": "assistant", "content": [block]})
    out = ctxwin.render(ctxwin.parse(body, format="anthropic"))
    (citation,) = out["messages"][1]["content"][0]["citations"]  # type: ignore[index]
    assert citation["document_title"] is None


def test_fields_an_object_made_by_hand_holds_by_default_are_kept() -> None:
    out = ctxwin.render(
        ctxwin.parse(
            {"system": "s", "messages": [AnthropicMessage(content=[TextBlock(text="hi")])]},
            format="anthropic",
        )
    )
    assert out["messages"][0] == {  # type: ignore[index]
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
    }


def test_a_parsed_chat_message_goes_out_without_parsed_fields_or_nulls() -> None:
    parsed = pytest.importorskip("openai.types.chat.parsed_chat_completion")
    message = parsed.ParsedChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "parsed": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}", "parsed_arguments": {}},
                }
            ],
        }
    )
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "go"}, message]}
    body["messages"].append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    out = ctxwin.render(ctxwin.parse(body, format="openai-chat"))
    assert out["messages"][1] == {  # type: ignore[index]
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


CALL = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}


class Role(str, enum.Enum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Level(enum.IntEnum):
    HIGH = 3


def test_enum_members_go_out_as_their_values() -> None:
    """``class Role(str, Enum)`` is how many codebases spell roles; the SDKs' JSON encoders
    write its value, so ctxwin reads and writes it as that value (it refused it)."""
    body = {
        "messages": [
            {"role": Role.USER, "content": "go", "priority": Level.HIGH},
            {"role": Role.ASSISTANT, "content": None, "tool_calls": [CALL]},
            {"role": Role.TOOL, "tool_call_id": "c1", "content": "x" * 400},
        ]
    }
    result = ctxwin.Policy({"tools": {"*": {"max_tokens": 30}}}).apply(body, format="openai-chat")
    sent = result.request["messages"]
    assert [type(m["role"]) for m in sent] == [str, str, str]
    assert type(sent[0]["priority"]) is int
    assert sent[0]["priority"] == 3
    assert json.loads(json.dumps(result.request)) == result.request
    assert [e.step for e in result.report.edits] == ["cap"]


def test_a_mapping_that_is_not_a_dict_goes_out_as_a_dict() -> None:
    """A ``MappingProxyType`` (or ``UserDict``) went out as itself, which no JSON encoder
    writes: the request failed in the SDK, after ctxwin."""
    body = {
        "messages": [
            types.MappingProxyType({"role": "user", "content": "go"}),
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            UserDict({"role": "tool", "tool_call_id": "c1", "content": "done"}),
        ]
    }
    sent = ctxwin.Policy({}).apply(body, format="openai-chat").request["messages"]
    assert [type(m) for m in sent] == [dict, dict, dict]
    assert json.loads(json.dumps(sent)) == sent


def test_the_gemini_sdk_s_objects_are_read_and_go_out_as_it_takes_them_back() -> None:
    """``contents`` of google-genai ``types.Content``: read through their camelCase dump,
    a thought signature (bytes) kept as its base64, and an edit in place seen."""
    types = pytest.importorskip("google.genai.types")
    call = types.FunctionCall(name="read", args={"p": "a"}, id="c1")
    answer = types.FunctionResponse(name="read", id="c1", response={"output": "x " * 3000})
    contents = [
        types.Content(role="user", parts=[types.Part(text="read the file")]),
        types.Content(
            role="model", parts=[types.Part(function_call=call, thought_signature=b"sig")]
        ),
        types.Content(role="user", parts=[types.Part(function_response=answer)]),
    ]
    policy = ctxwin.Policy({"tools": {"*": {"max_tokens": 50}}})
    sent = policy.apply({"contents": contents}, format="gemini").request["contents"]
    back = [types.Content.model_validate(c) for c in sent]
    assert back[1].parts[0].thought_signature == b"sig"
    assert back[1].parts[0].function_call == call
    assert "truncated" in back[2].parts[0].function_response.response["output"]
    answer.response = {"output": "short"}
    again = policy.apply({"contents": contents}, format="gemini").request["contents"]
    assert again[2]["parts"][0]["functionResponse"]["response"] == {"output": "short"}
