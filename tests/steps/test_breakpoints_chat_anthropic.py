"""Cache breakpoints in an OpenAI Chat body that goes to Anthropic through LiteLLM (its
adapter's ``cache_control`` dialect): Anthropic's ``cache_control`` on content parts, the
request's own breakpoints in LiteLLM's forms counted and, under ``auto``, moved."""

from __future__ import annotations

import json
from typing import Any

import ctxwin
from ctxwin.formats.openai_chat import OpenAIChatAdapter
from ctxwin.testing import FakeCounter, agent_body

AUTO: dict[str, Any] = {
    "context_window": 20_000,
    "cache_breakpoints": "auto",
    "window": {"trigger": 0.6, "target": 0.3},
    "pricing": {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0},
}
MARKER = {"type": "ephemeral"}
TO_ANTHROPIC = OpenAIChatAdapter(cache_control=True)


def chat(rounds: int = 25) -> dict[str, Any]:
    uses = [[(f"read{r}", {}, " ".join(["w"] * 1000))] for r in range(rounds)]
    body = agent_body(uses, format="openai-chat")
    body["model"] = "claude-sonnet-4-5"
    body["messages"][0]["content"] = "You are an agent. " * 400  # past Claude's 1,024
    return body


def count(value: object, key: str = "cache_control") -> int:
    return json.dumps(value).count(f'"{key}"')


def apply(body: dict[str, Any], format: Any = TO_ANTHROPIC) -> Any:
    return ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body, format=format)


def test_a_chat_for_claude_takes_cache_control_only_where_its_adapter_says_so() -> None:
    """A Claude model's chat sent straight to an OpenAI-compatible endpoint gets no field it
    may refuse; the same chat LiteLLM sends to Anthropic gets Anthropic's breakpoints."""
    plain = apply(chat(), "openai-chat").request
    assert count(plain) == count(plain, "prompt_cache_breakpoint") == 0
    result = apply(chat())
    assert count(result.request) == len(result.report.breakpoints) == 2
    assert count(result.request, "prompt_cache_breakpoint") == 0
    last = result.request["messages"][-1]
    assert last["content"][-1]["cache_control"] == MARKER


def test_litellm_s_own_forms_of_cache_control_are_breakpoints_auto_moves() -> None:
    """LiteLLM also sends a message's own ``cache_control`` (on a string content) and a tool
    call's: auto takes them away from the messages it does not mark, or the request went
    over Anthropic's four."""
    body = chat()
    body["messages"][1] = {**body["messages"][1], "cache_control": MARKER}
    call = body["messages"][2]["tool_calls"][0]
    body["messages"][2]["tool_calls"][0] = {**call, "cache_control": MARKER}
    body["messages"][3]["content"] = [
        {"type": "text", "text": body["messages"][3]["content"], "cache_control": MARKER}
    ]
    result = apply(body)
    assert count(result.request) == len(result.report.breakpoints) == 2
    assert result.request["messages"][1]["content"] == body["messages"][1]["content"]


def test_the_tools_and_automatic_caching_take_their_share_of_the_four() -> None:
    body = chat()
    body["tools"] = [
        {"type": "function", "function": {"name": "read0", "cache_control": MARKER}},
        {"type": "function", "function": {"name": "read1"}, "cache_control": MARKER},
    ]
    body["cache_control"] = MARKER
    result = apply(body)
    assert len(result.report.breakpoints) == 1
    assert count(result.request["messages"]) == 1


def test_automatic_caching_for_an_hour_gives_the_breakpoints_the_hour() -> None:
    """LiteLLM sends a chat's top-level ``cache_control`` on to Anthropic (automatic
    caching): with ``ttl: "1h"`` it is a 1-hour breakpoint at the request's end, after
    which ctxwin's may not be 5-minute ones."""
    body = chat()
    hour = {"type": "ephemeral", "ttl": "1h"}
    body["cache_control"] = hour
    result = apply(body)
    placed = [
        part["cache_control"]
        for msg in result.request["messages"]
        if isinstance(msg["content"], list)
        for part in msg["content"]
        if "cache_control" in part
    ]
    assert len(placed) == len(result.report.breakpoints) == 2
    assert all(v == hour for v in placed)


def test_keep_puts_a_lost_cache_control_back_with_its_ttl() -> None:
    """A result the window clears keeps its own ``cache_control`` (its ``ttl`` too), as
    Anthropic's: a chat message's marker is written in the kind it had."""
    body = chat()
    hour = {"type": "ephemeral", "ttl": "1h"}
    text = body["messages"][3]["content"]
    body["messages"][3]["content"] = [
        {"type": "text", "text": text[:40]},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}, "cache_control": hour},
    ]
    keep = {**AUTO, "cache_breakpoints": "keep"}
    out = ctxwin.Policy(keep, counter=FakeCounter()).apply(body, format="openai-chat").request
    assert count(out["messages"][3]) == 1
    assert hour in [p.get("cache_control") for p in out["messages"][3]["content"]]
