"""LiteLLM and Claude's extended thinking: a chat (or a Responses request) LiteLLM sends on to
Claude carries the thinking that opens the turn in progress, which Anthropic requires first
in the turn's first assistant message ("a final `assistant` message must start with a
thinking block"). The window keeps that message when it drops rounds, on every Claude model,
not only those that check the thinking's prefix."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
pytest.importorskip("litellm")

from litellm.llms.anthropic.chat.transformation import AnthropicConfig

import ctxwin
from ctxwin.integrations._litellm_route import route_of
from ctxwin.integrations.litellm import CtxwinHook

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

POLICY = {"context_window": 8000, "tools": {"*": {"max_tokens": 1000}}}
THINKING = {"type": "thinking", "thinking": "Let me read the files. " * 10, "signature": "s" * 64}
ENABLED = {"type": "enabled", "budget_tokens": 1024}


def output(i: int) -> str:
    return " ".join(f"line{i}_{k}" for k in range(300))


def one_long_turn(rounds: int = 200) -> list[dict[str, Any]]:
    """One user message, then a tool loop whose only thinking opens it (no interleaving)."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix code."},
        {"role": "user", "content": "fix the bug"},
    ]
    for i in range(rounds):
        call = {"id": f"toolu_{i}", "type": "function", "function": {"name": "read"}}
        call["function"]["arguments"] = json.dumps({"p": f"f{i}"})
        turn: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        if i == 0:
            turn["thinking_blocks"] = [THINKING]
        out.append(turn)
        out.append({"role": "tool", "tool_call_id": f"toolu_{i}", "content": output(i)})
    return out


def first_of_turn(body: dict[str, Any]) -> dict[str, Any]:
    """The first assistant message after the user's latest text in an Anthropic body."""
    msgs = body["messages"]
    users = [
        k
        for k, m in enumerate(msgs)
        if m["role"] == "user"
        and not all(isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"])
    ]
    return next(m for m in msgs[users[-1] :] if m["role"] == "assistant")


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-fable-5-1"])
def test_a_chat_to_claude_keeps_the_thinking_that_opens_the_turn(model: str) -> None:
    """Once only on a model that checks the thinking's prefix: on claude-sonnet-4-5 the
    window dropped the turn's first assistant message, and the Anthropic body LiteLLM made
    opened the turn with ``tool_use`` (a 400)."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    data = {"model": f"anthropic/{model}", "messages": one_long_turn(), "thinking": ENABLED}
    out = asyncio.run(hook.async_pre_call_deployment_hook(data, "acompletion"))
    assert out is not None
    assert len(out["messages"]) < len(data["messages"]), "nothing dropped: the test tests nothing"
    assert out["messages"][2] is data["messages"][2]  # the opener, with its thinking_blocks
    config = AnthropicConfig()
    optional = config.map_openai_params(
        {"max_tokens": 2048, "thinking": ENABLED}, {}, model, drop_params=False
    )
    body = config.transform_request(model, out["messages"], optional, {}, {})
    assert first_of_turn(dict(body))["content"][0] == THINKING


@pytest.mark.parametrize(
    ("model", "thinking"),
    [
        ("anthropic/claude-sonnet-4-5", True),
        ("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("vertex_ai/claude-sonnet-4-5", True),
        # an OpenAI-compatible proxy forwarding to Claude: its thinking_blocks open the turn
        ("openai/claude-sonnet-4-5", True),
        ("litellm_proxy/claude-sonnet-4-5", True),
        ("hosted_vllm/claude-sonnet-4-5", False),  # vLLM: no thinking_blocks sent on
        ("gpt-4o", False),
    ],
)
def test_a_chat_sent_on_to_claude_reads_its_thinking_as_the_turns_opener(
    model: str, thinking: bool
) -> None:
    assert route_of({"model": model}, auto=False).thinking is thinking


def test_a_proxy_chat_for_a_claude_group_waits_for_its_deployment() -> None:
    """Before routing, the proxy cannot tell whether LiteLLM sends the chat's thinking on
    as Claude's: edited then with the plain Chat adapter, the opener was gone."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    data = {"model": "claude-sonnet-4-5", "messages": one_long_turn(), "thinking": ENABLED}
    assert asyncio.run(hook.async_pre_call_hook(None, None, data, "acompletion")) is data


@pytest.mark.parametrize("model", ["anthropic/claude-sonnet-4-5", "anthropic/claude-fable-5-1"])
def test_a_responses_body_for_claude_keeps_the_reasoning_that_opens_the_turn(model: str) -> None:
    """LiteLLM's Responses bridge (and the Agents SDK on LitellmModel) sends reasoning items
    back as Claude's thinking: the turn's first one stays, as on a model that checks it."""
    policy = {
        "context_window": 1500,
        "window": {"keep_rounds": 2},
        "tools": {"*": {"max_tokens": 1000}},
    }
    reasoning = {"type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "sig" * 40}
    items: list[dict[str, Any]] = [{"role": "user", "content": "fix the bug"}, reasoning]
    for i in range(40):
        items.append(
            {"type": "function_call", "call_id": f"toolu_{i}", "name": "read", "arguments": "{}"}
        )
        items.append({"type": "function_call_output", "call_id": f"toolu_{i}", "output": output(i)})
    out = ctxwin.Policy(policy).apply({"input": items}, format="openai-responses", model=model)
    sent = out.request["input"]
    assert len(sent) < len(items), "nothing dropped: the test tests nothing"
    assert sent[1] is reasoning


@pytest.mark.parametrize(
    ("model", "kept"),
    [
        ("anthropic/claude-sonnet-4-5", True),
        ("claude-opus-4-1", True),
        ("gpt-4o", False),  # not Claude: the plain Chat adapter, as before
    ],
)
def test_a_chat_for_claude_applied_directly_keeps_the_thinking_that_opens_the_turn(
    model: str, kept: bool
) -> None:
    """A policy applied to the body before the application's own ``litellm.completion``
    (no hook): the plain Chat adapter read it and the window dropped the opener."""
    data = {"model": model, "messages": one_long_turn(), "thinking": ENABLED}
    out = ctxwin.Policy(POLICY).apply(data).request
    assert isinstance(out, dict)
    assert len(out["messages"]) < len(data["messages"]), "nothing dropped: the test tests nothing"
    assert (out["messages"][2] is data["messages"][2]) is kept
    if kept:
        name = model.split("/")[-1]
        config = AnthropicConfig()
        optional = config.map_openai_params(
            {"max_tokens": 2048, "thinking": ENABLED}, {}, name, drop_params=False
        )
        body = config.transform_request(name, out["messages"], optional, {}, {})
        assert first_of_turn(dict(body))["content"][0] == THINKING
