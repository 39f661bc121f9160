"""LiteLLM and ``cache_breakpoints: auto``: a chat request LiteLLM sends to Anthropic gets
Anthropic's ``cache_control`` on its content parts, which LiteLLM's own transformations
(run here offline) make the breakpoints of the Anthropic (or Bedrock Converse) request,
four at most with the request's own; a chat for any other endpoint gets none."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
pytest.importorskip("litellm")

from litellm.llms.anthropic.chat.transformation import AnthropicConfig
from litellm.llms.bedrock.chat.converse_transformation import AmazonConverseConfig

import ctxwin
from ctxwin.integrations.litellm import CtxwinHook

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

POLICY = {
    "context_window": "auto",
    "cache_breakpoints": "auto",
    "window": {"trigger": 0.05, "target": 0.02, "keep_rounds": 1},
    "tools": {"*": {"max_tokens": 300}},
}
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
MARKER = {"type": "ephemeral"}
CLAUDE = "anthropic/claude-sonnet-4-5"


def output(i: int) -> str:
    return "\n".join(f"read#{i} line {k}: value_{k} = compute(order_{i})" for k in range(250))


def chat(turns: int = 8) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You read files. " * 300},
        {"role": "user", "content": "go"},
    ]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": output(i)})
    return out


def edited(hook: Any, **kwargs: Any) -> dict[str, Any]:
    """The request as the deployment hook sends it on (LiteLLM's kwargs for the call)."""
    data = {"messages": chat(), "tools": TOOLS, **kwargs}
    out = asyncio.run(hook.async_pre_call_deployment_hook(data, "acompletion"))
    assert out is not None
    return out


def to_anthropic(out: dict[str, Any], **params: Any) -> dict[str, Any]:
    """The body LiteLLM's Anthropic transformation makes of a chat request (no network)."""
    config = AnthropicConfig()
    given = {"tools": out["tools"], "max_tokens": 10, **params}
    optional = config.map_openai_params(given, {}, "claude-sonnet-4-5", drop_params=False)
    return config.transform_request("claude-sonnet-4-5", out["messages"], optional, {}, {})


def marked(value: object) -> int:
    return json.dumps(value).count('"cache_control"')


def test_a_chat_litellm_sends_to_anthropic_gets_its_breakpoints() -> None:
    """Once none: ``cache_control`` went only into Anthropic bodies, and LiteLLM's chat for
    Claude reached Anthropic without a breakpoint."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    out = edited(hook, model=CLAUDE)
    places = [i for i, _ in hook.last_result.report.breakpoints]
    assert len(places) == 2
    assert [i for i, m in enumerate(out["messages"]) if marked(m)] == places
    body = to_anthropic(out)
    assert marked(body) == 2
    # the last chat message (a tool result) is the last Anthropic message's last block
    last = body["messages"][-1]["content"][-1]
    assert last["type"] == "tool_result"
    assert marked(last) == 1
    assert ctxwin.check({"messages": out["messages"]}, format="openai-chat") == []


def test_the_request_s_own_breakpoints_count_against_the_four() -> None:
    """A system message's, a tool's and a top-level ``cache_control`` (automatic caching)
    take three of Anthropic's four: ctxwin places one, and the Anthropic body has four
    (a fifth is a 400, "A maximum of 4 blocks with cache_control may be provided")."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    messages = chat()
    messages[0] = {
        "role": "system",
        "content": [{"type": "text", "text": "You read files. " * 300, "cache_control": MARKER}],
    }
    tools = [{**TOOLS[0], "cache_control": MARKER}]
    data = {"model": CLAUDE, "messages": messages, "tools": tools, "cache_control": MARKER}
    out = asyncio.run(hook.async_pre_call_deployment_hook(data, "acompletion"))
    assert [i for i, m in enumerate(out["messages"]) if marked(m)] == [0, len(messages) - 1]
    assert marked(to_anthropic(out, cache_control=MARKER)) == 4


def test_bedrock_converse_gets_a_cache_point_for_each() -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    out = edited(hook, model=f"bedrock/{model}")
    config = AmazonConverseConfig()
    optional = config.map_openai_params({"tools": TOOLS, "max_tokens": 10}, {}, model, False)
    body = config.transform_request(model, out["messages"], optional, {}, {})
    assert json.dumps(body).count("cachePoint") == len(hook.last_result.report.breakpoints) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": "gpt-4o"},
        {"model": "openai/claude-sonnet-4-5", "api_base": "http://127.0.0.1:9/v1"},
        {"model": "hosted_vllm/claude-sonnet-4-5", "api_base": "http://127.0.0.1:9/v1"},
    ],
)
def test_a_chat_for_another_endpoint_gets_no_cache_control(kwargs: dict[str, Any]) -> None:
    """GPT-4o takes no breakpoint; a Claude model behind an OpenAI-compatible endpoint may
    refuse a field it does not know."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    out = edited(hook, **kwargs)
    assert marked(out) == 0
    assert hook.last_result.report.breakpoints == ()


def test_a_github_copilot_chat_is_told_without_its_login(monkeypatch: pytest.MonkeyPatch) -> None:
    """Telling where a Copilot request goes built LiteLLM's Copilot configuration, whose
    authenticator starts a device-code login over the network, inside the hook (review)."""
    from litellm.llms.github_copilot import authenticator

    logins: list[object] = []

    def login(self: object, *args: Any, **kwargs: Any) -> None:
        logins.append(self)

    monkeypatch.setattr(authenticator.Authenticator, "__init__", login)
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    out = edited(hook, model="github_copilot/claude-sonnet-4")
    assert marked(out) == 0
    assert logins == []  # (LiteLLM turns an error raised there into "cannot route")


def test_keep_adds_no_breakpoint_and_leaves_strings_as_they_are() -> None:
    hook = CtxwinHook(ctxwin.Policy({**POLICY, "cache_breakpoints": "keep"}))
    out = edited(hook, model=CLAUDE)
    assert marked(out) == 0
    assert all(isinstance(m["content"], str | None) for m in out["messages"])


def test_only_the_marked_messages_change_shape() -> None:
    """A breakpoint needs a part: the string content of a marked message becomes one text
    part (which LiteLLM sends as the same text block); every other message goes as given."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    given = chat()
    out = asyncio.run(
        hook.async_pre_call_deployment_hook(
            {"model": CLAUDE, "messages": given, "tools": TOOLS}, "acompletion"
        )
    )
    places = {i for i, _ in hook.last_result.report.breakpoints}
    for i, (before, after) in enumerate(zip(given, out["messages"], strict=True)):
        if i in places:
            assert after["content"] == [
                {"type": "text", "text": after["content"][0]["text"], "cache_control": MARKER}
            ]
        elif after is not before:  # a result the window cleared: still a string
            assert isinstance(after["content"], str)


def test_an_assistant_s_string_content_takes_no_cache_control() -> None:
    """LiteLLM orders an assistant's thinking blocks by whether its content is a string:
    ctxwin leaves it one and marks the message before."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    messages = [*chat(), {"role": "assistant", "content": "Done reading. " * 50}]
    out = asyncio.run(
        hook.async_pre_call_deployment_hook(
            {"model": CLAUDE, "messages": messages, "tools": TOOLS}, "acompletion"
        )
    )
    assert out["messages"][-1] == messages[-1]
    assert marked(out["messages"][-2]) == 1
