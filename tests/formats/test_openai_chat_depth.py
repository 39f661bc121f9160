"""OpenAI Chat Completions in depth: the message shapes of the API, the SDK and the servers
that speak it (DeepSeek, OpenRouter, LiteLLM, vLLM), and what ctxwin sends back for them."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError
from ctxwin.testing import FakeCounter
from tests.builders import asst, call, tool, user, words

FMT = "openai-chat"
CLEARING: dict[str, Any] = {
    "context_window": 8000,
    "window": {"strategy": "threshold", "keep_rounds": 1, "clear_tool_inputs": True},
}
"""Every result but the newest round's cleared once the history passes 60 % of 8,000."""


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": list(messages)}


def legacy_call(name: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "function_call": {"name": name, "arguments": "{}"},
    }


def errors(b: object) -> list[tuple[str, str]]:
    return [(p.code, p.path) for p in ctxwin.check(b, format=FMT) if p.severity == "error"]


def cleared(tokens: int, tool: str = "search") -> str:
    return (
        f"[{tool} result cleared to save context ({tokens} tokens). "
        f"Call {tool} again if you need it.]"
    )


# ------------------------------------------------------------------------------ SDK objects


def sdk_message(**extra: Any) -> Any:
    chat = pytest.importorskip("openai.types.chat")
    data = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "annotations": [],
        "tool_calls": [call("call_0", "search", {"q": "x"})],
        **extra,
    }
    return chat.ChatCompletionMessage.model_validate(data)


def sent_back(message: Any) -> dict[str, Any]:
    """What apply sends for ``message`` appended to a history as the SDK returned it."""
    history = [user("go"), message, tool("call_0", "found")]
    out = ctxwin.Policy({}, counter=FakeCounter()).apply(body(*history)).request
    return out["messages"][1]  # type: ignore[no-any-return,index]


def test_an_sdk_message_keeps_the_reasoning_content_deepseek_wants_back() -> None:
    """DeepSeek's thinking mode answers 400 when the reasoning_content of a turn with tool
    calls is not sent back; its guide appends the SDK's message object as it is."""
    sent = sent_back(sdk_message(reasoning_content="I should search."))
    assert sent["reasoning_content"] == "I should search."


def test_an_sdk_message_keeps_openrouters_reasoning_details() -> None:
    details = [{"type": "reasoning.encrypted", "data": "c2lnbmVk", "format": "google-gemini-v1"}]
    sent = sent_back(sdk_message(reasoning="r", reasoning_details=details))
    assert (sent["reasoning"], sent["reasoning_details"]) == ("r", details)


def test_an_sdk_message_goes_out_as_the_sdk_sends_it_but_annotations_and_nulls() -> None:
    openai_transform = pytest.importorskip("openai._utils._transform")
    params = pytest.importorskip("openai.types.chat.completion_create_params")
    message = sdk_message(reasoning_content="think")
    sdk = openai_transform.maybe_transform(
        {"model": "m", "messages": [message]}, params.CompletionCreateParamsNonStreaming
    )["messages"][0]
    expected = {k: v for k, v in sdk.items() if k != "annotations" and k != "refusal"}
    assert sent_back(message) == expected


def test_a_parsed_message_goes_out_without_its_parsed_value() -> None:
    parsed = pytest.importorskip("openai.types.chat.parsed_chat_completion")
    message = parsed.ParsedChatCompletionMessage[dict].model_validate(  # type: ignore[misc]
        {"role": "assistant", "content": '{"a": 1}', "parsed": {"a": 1}}
    )
    out = ctxwin.render(ctxwin.parse(body(user("go"), message), format=FMT))
    assert out["messages"][1] == {"role": "assistant", "content": '{"a": 1}'}  # type: ignore[index]


# ------------------------------------------------------------------------------ legacy functions


def test_a_tool_message_does_not_answer_a_legacy_function_call() -> None:
    """OpenAI wants a function message after a function_call, and a tool message only after
    tool_calls: a tool message there answered nothing, yet check passed it."""
    b = body(user("go"), legacy_call("f"), tool("call_x", "ok"))
    assert errors(b) == [
        ("missing_result", "messages[1].function_call"),
        ("orphan_result", "messages[2]"),
    ]


def test_repair_answers_a_legacy_call_with_a_function_message() -> None:
    b = body(user("go"), legacy_call("f"), tool("call_x", "ok"))
    fixed = ctxwin.repair(b, format=FMT).body
    assert fixed["messages"][1:] == [  # type: ignore[index]
        legacy_call("f"),
        {
            "role": "function",
            "name": "f",
            "content": "tool result missing: the call was interrupted",
        },
    ]


def test_a_function_message_does_not_answer_a_tool_call_of_its_name() -> None:
    """OpenAI: "tool_call_ids did not have response messages: c1"; check passed it."""
    b = body(user("go"), asst(call("c1", "f")), {"role": "function", "name": "f", "content": "x"})
    assert errors(b) == [
        ("missing_result", "messages[1].tool_calls[0]"),
        ("orphan_result", "messages[2]"),
    ]


def test_a_function_message_with_null_content_is_accepted() -> None:
    """ChatCompletionFunctionMessageParam: content is Required[Optional[str]]."""
    b = body(user("go"), legacy_call("f"), {"role": "function", "name": "f", "content": None})
    assert errors(b) == []


def test_the_legacy_call_beside_tool_calls_is_located_at_function_call() -> None:
    both = {**legacy_call("g"), "tool_calls": [call("c1", "f")]}
    b = body(user("go"), both, tool("c1", "ok"))
    (problem,) = ctxwin.check(b, format=FMT)
    assert (problem.code, problem.path) == ("missing_result", "messages[1].function_call")


def test_a_second_function_message_is_named_by_its_function_not_a_null_id() -> None:
    answer = {"role": "function", "name": "f", "content": "1"}
    b = body(user("go"), legacy_call("f"), answer, {**answer, "content": "2"})
    (problem,) = ctxwin.check(b, format=FMT)
    assert (problem.code, problem.path) == ("duplicate_result", "messages[3]")
    assert problem.message == (
        "a second 'function' message for the call to f: it was already answered"
    )


def test_a_stray_function_message_is_not_described_as_a_tool_message() -> None:
    b = body(
        user("go"), legacy_call("f"), user("hm"), {"role": "function", "name": "f", "content": "1"}
    )
    (problem,) = ctxwin.check(b, format=FMT)
    assert (problem.code, problem.path) == ("misplaced_result", "messages[3]")
    assert problem.message == (
        "a 'function' message (from f) must come right after the assistant message whose "
        "'function_call' it answers"
    )


def test_a_legacy_round_clears_to_a_string_function_message() -> None:
    msgs = [user("go")]
    for r in range(40):
        msgs += [
            legacy_call(f"read{r}"),
            {"role": "function", "name": f"read{r}", "content": words(150)},
        ]
    out = ctxwin.Policy(CLEARING).apply(body(*msgs)).request["messages"]  # type: ignore[index]
    assert out[2] == {"role": "function", "name": "read0", "content": cleared(150, "read0")}
    assert ctxwin.check({"messages": out}, format=FMT) == []


def test_a_function_message_gets_no_cache_breakpoint_part() -> None:
    """A function message's content is a string (ChatCompletionFunctionMessageParam): auto
    breakpoints turned the last one into a list of parts."""
    msgs = [{"role": "system", "content": "You are an agent."}, user("go")]
    for r in range(8):
        msgs += [
            legacy_call(f"read{r}"),
            {"role": "function", "name": f"read{r}", "content": words(150, "w")},
        ]
    policy = {
        "context_window": 4000,
        "cache_breakpoints": "auto",
        "window": {"trigger": 0.6, "target": 0.3, "strategy": "threshold"},
        "pricing": {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0},
    }
    b = {"model": "gpt-5.6", "messages": msgs}
    out = ctxwin.Policy(policy, counter=FakeCounter()).apply(b).request["messages"]  # type: ignore[index]
    assert all(isinstance(m["content"], str) for m in out if m["role"] == "function")


# ------------------------------------------------------------------------------ servers' parts


VIDEO = {"type": "video_url", "video_url": {"url": "data:video/mp4;base64," + "A" * 40_000}}


def test_a_plain_system_prompt_beside_anthropic_tools_is_not_chat() -> None:
    b = {
        "messages": [{"role": "system", "content": "Be terse."}, user("go")],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
    }
    assert ctxwin.formats.get_adapter(FMT).detect(b) == 0
    assert ctxwin.formats.detect(b) == "anthropic"


def test_a_vllm_video_part_does_not_hide_a_chat_body() -> None:
    b = body(
        {"role": "user", "content": [{"type": "text", "text": "what happens?"}, VIDEO]},
        asst(call("c1", "frames")),
        tool("c1", "ok"),
    )
    assert ctxwin.detect(b) == FMT


def test_a_video_part_counts_as_media_not_as_its_base64() -> None:
    b = body({"role": "user", "content": [{"type": "text", "text": "what happens?"}, VIDEO]})
    image = body(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what happens?"},
                {"type": "image_url", "image_url": {"url": "u"}},
            ],
        }
    )
    pol = ctxwin.Policy({})
    video_tokens = pol.apply(b, format=FMT).report.tokens_before
    assert video_tokens == pol.apply(image, format=FMT).report.tokens_before


def test_anthropic_and_responses_parts_still_rule_chat_out() -> None:
    chat = ctxwin.formats.get_adapter(FMT)
    for part in (
        {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": "t", "content": []},
        {"type": "input_text", "text": "x"},
        {"type": "image", "source": {"type": "url", "url": "u"}},
    ):
        assert chat.detect({"messages": [{"role": "user", "content": [part]}]}) == 0, part


# ------------------------------------------------------------------------------ the whole shape


def rich_history(rounds: int = 24) -> dict[str, Any]:
    """Every message shape of the API and of the servers that speak it."""
    msgs: list[dict[str, Any]] = [
        {"role": "developer", "content": "Be terse.", "name": "ops"},
        {
            "role": "system",
            "content": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        },
        {
            "role": "user",
            "name": "alice",
            "content": [
                {"type": "text", "text": "look"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"},
                },
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-1"}},
            ],
        },
    ]
    for r in range(rounds):
        a = asst(call(f"call_{r % 2}", "search", {"q": words(20)}), content="" if r % 3 else None)
        a["reasoning_content"] = f"thought {r}"
        a["reasoning_details"] = [{"type": "reasoning.text", "text": f"thought {r}"}]
        msgs.append(a)
        if r % 3 == 0:
            content: object = [
                {"type": "text", "text": words(150)},
                {"type": "text", "text": "end", "cache_control": {"type": "ephemeral"}},
            ]
        elif r % 3 == 1:
            content = words(150)
        else:
            content = [{"type": "text", "text": words(150)}]
        msgs.append({"role": "tool", "tool_call_id": f"call_{r % 2}", "content": content})
    msgs.append(
        {
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "no"}],
            "refusal": "no",
            "audio": {"id": "audio_1"},
        }
    )
    msgs.append(user("go on"))
    msgs.append({"role": "assistant", "content": "Sure, ", "prefix": True})
    return {
        "model": "deepseek-chat",
        "messages": msgs,
        "tools": [
            {
                "type": "function",
                "function": {"name": "search", "strict": True, "parameters": {"type": "object"}},
            }
        ],
        "parallel_tool_calls": False,
        "n": 2,
        "prediction": {"type": "content", "content": "x"},
        "web_search_options": {},
        "response_format": {"type": "json_object"},
    }


def test_every_shape_round_trips_exactly() -> None:
    b = rich_history()
    assert ctxwin.render(ctxwin.parse(b, format=FMT)) == b


def test_apply_leaves_the_input_and_the_request_fields_alone() -> None:
    b = rich_history()
    before = copy.deepcopy(b)
    out = ctxwin.Policy(CLEARING).apply(b).request
    assert b == before
    assert {k: v for k, v in out.items() if k != "messages"} == {  # type: ignore[union-attr]
        k: v for k, v in b.items() if k != "messages"
    }
    assert out["messages"][-4:] == b["messages"][-4:]  # type: ignore[index]


def test_a_cleared_call_keeps_its_message_fields() -> None:
    b = rich_history()
    out = ctxwin.Policy(CLEARING).apply(b).request["messages"]  # type: ignore[index]
    first = out[3]
    assert first["reasoning_content"] == "thought 0"
    assert first["reasoning_details"] == [{"type": "reasoning.text", "text": "thought 0"}]
    assert first["content"] is None
    assert json.loads(first["tool_calls"][0]["function"]["arguments"]) == {"q": "[cleared]"}


@pytest.mark.parametrize(
    ("position", "expected"),
    [
        (4, [{"type": "text", "text": cleared(151), "cache_control": {"type": "ephemeral"}}]),
        (6, cleared(150)),
        (8, [{"type": "text", "text": cleared(150)}]),
    ],
)
def test_a_cleared_tool_message_keeps_the_shape_of_its_content(
    position: int, expected: object
) -> None:
    """A string stays a string, a list of text parts one text part (its marker kept)."""
    out = ctxwin.Policy(CLEARING).apply(rich_history()).request["messages"]  # type: ignore[index]
    assert out[position]["content"] == expected


def test_the_cleared_history_is_valid_and_applying_it_again_changes_nothing() -> None:
    pol = ctxwin.Policy(CLEARING)
    out = pol.apply(rich_history()).request
    assert ctxwin.check(out, format=FMT) == []
    assert pol.apply(out).request == out


# ------------------------------------------------------------------------------ ids


def test_a_reused_id_with_an_unanswered_earlier_call_gets_its_result_there() -> None:
    """Servers that number calls per turn (call_0) reuse ids: a result answers its own turn."""
    b = body(
        user("a"),
        asst(call("call_0", "f")),
        user("b"),
        asst(call("call_0", "g")),
        tool("call_0", "r"),
    )
    fixed, fixes = ctxwin.repair(b, format=FMT)
    assert [(f.code, f.path) for f in fixes] == [
        ("added_missing_result", "messages[1].tool_calls[0]")
    ]
    assert [m.get("tool_call_id") for m in fixed["messages"]] == [
        None,
        None,
        "call_0",
        None,
        None,
        "call_0",
    ]  # type: ignore[index]
    assert fixed["messages"][-1] is b["messages"][-1]  # type: ignore[index]


def test_parallel_calls_sharing_a_mistral_id_get_a_new_mistral_id() -> None:
    """Mistral refuses ids other than 9 letters and digits (vllm#9019): not abcDEF123_2."""
    b = body(user("a"), asst(call("abcDEF123", "f"), call("abcDEF123", "g")))
    fixed = ctxwin.repair(b, format=FMT).body
    (_, new) = [c["id"] for c in fixed["messages"][1]["tool_calls"]]  # type: ignore[index]
    assert re.fullmatch("[A-Za-z0-9]{9}", new)
    assert new != "abcDEF123"
    assert [m["tool_call_id"] for m in fixed["messages"][2:]] == ["abcDEF123", new]  # type: ignore[index]


def test_parallel_calls_sharing_an_id_are_renamed_with_their_results() -> None:
    b = body(
        user("a"),
        asst(call("call_0", "f"), call("call_0", "g")),
        tool("call_0", "1"),
        tool("call_0", "2"),
    )
    fixed = ctxwin.repair(b, format=FMT).body
    calls = [c["id"] for c in fixed["messages"][1]["tool_calls"]]  # type: ignore[index]
    assert calls == ["call_0", "call_0_2"]
    assert [m["tool_call_id"] for m in fixed["messages"][2:]] == calls  # type: ignore[index]


# ------------------------------------------------------------------------------ no content

NO_CONTENT = [
    ({"content": None}, "Invalid value for 'content': expected a string, got null."),
    ({}, "Missing required parameter: 'messages[2].content'."),
    (
        {"content": []},
        "Invalid 'messages[2].content': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead.",
    ),
]


@pytest.mark.parametrize(("content", "text"), NO_CONTENT, ids=["null", "absent", "empty_list"])
def test_a_tool_message_without_content_is_an_error(content: dict[str, Any], text: str) -> None:
    """OpenAI refuses it with 400 (run-llama/llama_index#17555); it was only a warning."""
    answer = {"role": "tool", "tool_call_id": "c1", **content}
    (problem,) = ctxwin.check(body(user("go"), asst(call("c1", "f")), answer), format=FMT)
    assert (problem.code, problem.severity, problem.path, problem.message) == (
        "missing_content",
        "error",
        "messages[2]",
        text,
    )


def test_apply_fills_a_null_tool_content_with_the_policy_text() -> None:
    answer = {"role": "tool", "tool_call_id": "c1", "content": None}
    b = body(user("go"), asst(call("c1", "f")), answer, user("and?"))
    result = ctxwin.Policy({"repair": {"empty_result": "(nothing)"}}).apply(b)
    assert result.request["messages"][2] == {**answer, "content": "(nothing)"}  # type: ignore[index]
    assert [(f.code, f.path) for f in result.fixes] == [("filled_empty_result", "messages[2]")]


def test_an_empty_string_tool_content_stays_a_warning_and_goes_out_as_it_is() -> None:
    b = body(user("go"), asst(call("c1", "f")), tool("c1", ""))
    assert [(p.code, p.severity) for p in ctxwin.check(b, warnings=True)] == [
        ("empty_result", "warning")
    ]
    assert ctxwin.Policy({}).apply(b).request == b


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("message", "path", "text"),
    [
        (
            {"role": "assistant", "function_call": "f"},
            "messages[1].function_call",
            "'function_call' needs a string 'name'",
        ),
        (
            {"role": "assistant", "tool_calls": {"id": "x"}},
            "messages[1].tool_calls",
            "'tool_calls' must be a list",
        ),
        (
            {"role": "assistant", "tool_calls": ["x"]},
            "messages[1].tool_calls[0]",
            "a tool call must be an object",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": 5, "function": {"name": "f"}}]},
            "messages[1].tool_calls[0].id",
            "a tool call needs a string 'id'",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]},
            "messages[1].tool_calls[0].custom",
            "a custom tool call needs 'custom.name'",
        ),
        (
            {"role": "function", "content": "x"},
            "messages[1].name",
            "a function message needs a string 'name'",
        ),
        (
            {"role": "user", "content": {"text": "x"}},
            "messages[1].content",
            "'content' must be a string, a list of parts or null, not object",
        ),
        (
            {"role": "user", "content": [["x"]]},
            "messages[1].content[0]",
            "a content part must be an object, not array",
        ),
    ],
)
def test_a_malformed_message_is_a_format_error_at_its_path(
    message: dict[str, Any], path: str, text: str
) -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body(user("go"), message), format=FMT)
    assert (info.value.path, str(info.value)) == (path, f"{path}: {text}")
