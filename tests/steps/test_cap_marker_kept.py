"""Capping a result of several text parts makes them one, with the wire fields of the last
(``ToolResult.with_text``); a cache breakpoint on an earlier part is not lost with it: the
message carried one (``Message.cache``), so rendering puts it back, its value (``ttl``)
kept, on the message's last part that takes one, which is where ctxwin keeps a message's
breakpoint (the prefix it caches ends with the message: the merged text is in it)."""

from __future__ import annotations

import json
from typing import Any

import ctxwin

CAP = ctxwin.load_policy({"context_window": 100_000, "tools": {"*": {"max_tokens": 50}}})


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def test_an_anthropic_result_keeps_the_marker_of_an_earlier_part() -> None:
    marker = {"type": "ephemeral", "ttl": "1h"}
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": _words(400), "cache_control": marker},
        {"type": "text", "text": _words(400)},
    ]
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "read", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": parts}],
            },
        ]
    }
    out = CAP.apply(body, format="anthropic").request["messages"][2]
    assert "truncated" in json.dumps(out)
    assert json.dumps(out).count('"cache_control"') == 1
    assert out["content"][-1]["cache_control"] == marker


def test_a_responses_output_keeps_the_marker_of_an_earlier_part() -> None:
    marker = {"mode": "explicit"}
    parts: list[dict[str, Any]] = [
        {"type": "input_text", "text": _words(400), "prompt_cache_breakpoint": marker},
        {"type": "input_text", "text": _words(400)},
    ]
    body = {
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": parts},
        ]
    }
    out = CAP.apply(body, format="openai-responses").request["input"][2]
    assert len(out["output"]) == 1
    assert "truncated" in out["output"][0]["text"]
    assert out["output"][0]["prompt_cache_breakpoint"] == marker
