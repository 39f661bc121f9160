"""Another format's calls and results in a body read as OpenAI Chat (``format="openai-chat"``
or ``--format openai-chat`` on an Anthropic body) or as OpenAI Responses are refused, naming
where; the parts Chat servers take (OpenAI's, LiteLLM's thinking and server tools, vLLM's
media) and those of Responses messages still pass."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin._cli import main
from ctxwin.formats._chat_thinking import ClaudeThinkingChatAdapter
from ctxwin.testing import agent_body

REPO = Path(__file__).resolve().parents[2]
ANTHROPIC_EXAMPLE = REPO / "examples" / "requests" / "anthropic.json"
NOT_CHAT = (
    ", which OpenAI Chat does not have (its calls are an assistant message's 'tool_calls', "
    "its results 'tool' messages)"
)


def refusal(body: object) -> ctxwin.FormatError:
    policy = ctxwin.load_policy({"context_window": 2000})
    with pytest.raises(ctxwin.FormatError) as info:
        policy.apply(body, format="openai-chat")
    return info.value


def test_an_anthropic_body_read_as_chat_is_refused_at_its_first_call() -> None:
    """It was taken at its word: the budget dropped messages one by one and wrote a
    tool_result whose tool_use was gone, which Anthropic refuses."""
    body = json.loads(ANTHROPIC_EXAMPLE.read_text(encoding="utf-8"))
    given = copy.deepcopy(body)
    err = refusal(body)
    assert body == given
    assert (err.path, err.format) == ("messages[1].content[1]", "openai-chat")
    assert err.reason == "an Anthropic call block ('tool_use')" + NOT_CHAT
    assert ctxwin.detect(body) == "anthropic"
    ctxwin.load_policy({}).apply(body, format="anthropic")  # as what it is, it is fine


def test_a_result_block_in_a_user_message_is_refused_too() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "reading"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "here"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                ],
            },
        ]
    }
    err = refusal(body)
    assert err.path == "messages[2].content[1]"
    assert err.reason == "an Anthropic result block ('tool_result')" + NOT_CHAT


def test_a_gemini_call_part_is_refused() -> None:
    part = {"functionCall": {"name": "read", "args": {}}}
    body = {
        "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [part]}]
    }
    err = refusal(body)
    assert err.path == "messages[1].content[0]"
    assert err.reason == "a Gemini call part ('functionCall')" + NOT_CHAT


def test_the_command_line_says_it_in_its_own_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    code = main(
        [
            "apply",
            str(ANTHROPIC_EXAMPLE),
            "-p",
            str(REPO / "examples" / "policy"),
            "--format",
            "openai-chat",
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert not out.exists()
    assert err == (
        f"ctxwin: error: {ANTHROPIC_EXAMPLE}: messages[1].content[1]: an Anthropic call block "
        f"('tool_use'){NOT_CHAT}\n"
    )


SERVED_PARTS: list[tuple[str, dict[str, Any]]] = [
    ("user", {"type": "image_url", "image_url": {"url": "https://x/a.png"}}),
    ("user", {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}),
    ("user", {"type": "file", "file": {"file_id": "file-1"}}),
    ("assistant", {"type": "refusal", "refusal": "no"}),
    # LiteLLM: an assistant's thinking, and Claude's server tools, passed on to Anthropic
    ("assistant", {"type": "thinking", "thinking": "plan", "signature": "s"}),
    ("assistant", {"type": "redacted_thinking", "data": "xyz"}),
    ("assistant", {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}),
    ("assistant", {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []}),
    ("user", {"type": "document", "source": {"type": "text", "data": "d"}}),
    # vLLM's own
    ("user", {"type": "video_url", "video_url": {"url": "https://x/v.mp4"}}),
    ("user", {"type": "audio_url", "audio_url": {"url": "https://x/a.mp3"}}),
    ("user", {"type": "input_text", "text": "hi"}),
    ("user", {"image_url": "https://x/a.png"}),  # vLLM's part without a type
]


@pytest.mark.parametrize(("role", "part"), SERVED_PARTS, ids=lambda v: str(v)[:40])
def test_parts_chat_servers_take_still_pass(role: str, part: dict[str, Any]) -> None:
    body = agent_body([[("read", {}, "data")]])
    body["messages"].insert(1, {"role": role, "content": [{"type": "text", "text": "x"}, part]})
    result = ctxwin.load_policy({"context_window": 2000}).apply(body, format="openai-chat")
    assert result.request["messages"][1]["content"][1] is part


def test_litellm_thinking_blocks_still_pass() -> None:
    """LiteLLM's Claude thinking (``thinking_blocks``) is read by its own adapter, which
    refuses an Anthropic call in ``content`` all the same."""
    thinking = {"type": "thinking", "thinking": "plan", "signature": "sig"}
    body = {**agent_body([[("read", {}, "data")]]), "model": "claude-x"}
    turn = body["messages"][2]
    assert turn["role"] == "assistant"
    turn["thinking_blocks"] = [thinking]
    adapter = ClaudeThinkingChatAdapter()
    out = ctxwin.load_policy({}).apply(body, format=adapter).request
    assert out["messages"][2]["thinking_blocks"] == [thinking]
    turn["content"] = [{"type": "tool_use", "id": "t", "name": "r", "input": {}}]
    with pytest.raises(ctxwin.FormatError, match=r"^messages\[2\]\.content\[0\]: an Anthropic"):
        ctxwin.load_policy({}).apply(body, format=adapter)


# ------------------------------------------------------------------------------ responses

NOT_RESPONSES = (
    ", which OpenAI Responses does not have in a message (its calls and results are items "
    "of their own: 'function_call', 'function_call_output')"
)


def responses_refusal(items: list[Any]) -> ctxwin.FormatError:
    policy = ctxwin.load_policy({"context_window": 2000})
    with pytest.raises(ctxwin.FormatError) as info:
        policy.apply({"model": "gpt-4o", "input": items}, format="openai-responses")
    return info.value


def anthropic_rounds(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug"}]
    for k in range(1, n + 1):
        use = {"type": "tool_use", "id": f"c{k}", "name": "read_file", "input": {"n": k}}
        result = {"type": "tool_result", "tool_use_id": f"c{k}", "content": "x " * 2000}
        messages.append({"role": "assistant", "content": [use]})
        messages.append({"role": "user", "content": [result]})
    return messages


def test_an_anthropic_history_read_as_responses_is_refused_at_its_first_call() -> None:
    """Its blocks were opaque message parts: no call was seen, and a drop of the oldest
    rounds kept a tool_result whose tool_use it had removed."""
    items = anthropic_rounds(5)
    given = copy.deepcopy(items)
    err = responses_refusal(items)
    assert items == given
    assert (err.path, err.format) == ("input[1].content[0]", "openai-responses")
    assert err.reason == "an Anthropic call block ('tool_use')" + NOT_RESPONSES
    with pytest.raises(ctxwin.FormatError, match=r"^input\[1\]\.content\[0\]: an Anthropic"):
        ctxwin.check({"input": items}, format="openai-responses")


def test_a_result_block_in_a_responses_user_message_is_refused() -> None:
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "x"}
    items = [
        {"role": "user", "content": "go"},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "a"}, result],
        },
    ]
    err = responses_refusal(items)
    assert err.path == "input[1].content[1]"
    assert err.reason == "an Anthropic result block ('tool_result')" + NOT_RESPONSES


@pytest.mark.parametrize(
    ("part", "what"),
    [
        ({"functionCall": {"name": "read", "args": {}}}, "a Gemini call part ('functionCall')"),
        (
            {"functionResponse": {"name": "read", "response": {}}},
            "a Gemini result part ('functionResponse')",
        ),
    ],
)
def test_a_gemini_part_in_a_responses_message_is_refused(part: dict[str, Any], what: str) -> None:
    err = responses_refusal(
        [{"role": "user", "content": "go"}, {"role": "assistant", "content": [part]}]
    )
    assert (err.path, err.reason) == ("input[1].content[0]", what + NOT_RESPONSES)


RESPONSES_PARTS: list[tuple[str, dict[str, Any]]] = [
    ("user", {"type": "input_image", "image_url": "data:x", "detail": "auto"}),
    ("user", {"type": "input_file", "file_id": "file-1"}),
    ("user", {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}),
    ("assistant", {"type": "output_text", "text": "x", "annotations": [], "logprobs": []}),
    ("assistant", {"type": "refusal", "refusal": "no"}),
    ("assistant", {"type": "summary_text", "text": "plan"}),
    ("assistant", {"type": "reasoning_text", "text": "plan"}),
    # what the Chat rule lets pass: thinking, Claude's server tools, tool_reference
    ("assistant", {"type": "thinking", "thinking": "plan", "signature": "s"}),
    ("assistant", {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}),
    ("assistant", {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []}),
    ("user", {"type": "tool_reference", "tool_name": "read"}),
]


@pytest.mark.parametrize(("role", "part"), RESPONSES_PARTS, ids=lambda v: str(v)[:40])
def test_parts_of_responses_messages_still_pass(role: str, part: dict[str, Any]) -> None:
    text = "output_text" if role == "assistant" else "input_text"
    items = [
        {"role": "user", "content": "go"},
        {"type": "message", "role": role, "content": [{"type": text, "text": "x"}, part]},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "data"},
    ]
    policy = ctxwin.load_policy({"context_window": 2000})
    result = policy.apply({"model": "gpt-4o", "input": items}, format="openai-responses")
    assert result.request["input"][1]["content"][1] is part
