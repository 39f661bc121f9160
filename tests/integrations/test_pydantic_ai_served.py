"""pydantic-ai ``ContextWindow``: a request is counted as the model serving it is sent it
(its tools, system prompt and wire messages in that model's format), compared with ctxwin's
own count of the body pydantic-ai's ``OpenAIChatModel``, ``OpenAIResponsesModel`` and
``AnthropicModel`` send, caught by a fake transport."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("httpx2")
pytest.importorskip("anthropic")
pytest.importorskip("openai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

import ctxwin
from ctxwin.integrations.pydantic_ai import ContextWindow
from tests.integrations.pai_wire_kit import (
    ANTHROPIC_REPLY,
    CHAT_REPLY,
    RESPONSES_REPLY,
    Capture,
    anthropic_model,
    openai_provider,
)

FORMATS = {"chat": "openai-chat", "responses": "openai-responses", "anthropic": "anthropic"}


def model(kind: str, capture: Capture) -> Any:
    if kind == "anthropic":
        return anthropic_model(capture)
    openai = openai_provider(capture)
    if kind == "chat":
        return OpenAIChatModel("gpt-4o", provider=openai)
    return OpenAIResponsesModel("gpt-4o", provider=openai)


def history(rounds: int = 12, thinking: bool = False) -> list[ModelMessage]:
    """A run's history: parallel calls (their returns in one request), a failed return,
    text beside the calls, a user prompt in the same request as tool returns, an answer."""
    out: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Fix the failing test.")])]
    for i in range(rounds):
        calls = [ToolCallPart("grep", {"pattern": f"p{i}"}, tool_call_id=f"call_{i}")]
        returns = [ToolReturnPart("grep", f"src/m{i}.py:{i}: match {i}", tool_call_id=f"call_{i}")]
        if i % 3 == 1:
            calls.append(ToolCallPart("read_1", {"path": f"src/m{i}.py"}, tool_call_id=f"r_{i}"))
            text = "\n".join(f"{k:3d}  line {k} of m{i}" for k in range(20))
            returns.append(ToolReturnPart("read_1", text, tool_call_id=f"r_{i}"))
        if i % 4 == 2:
            failed = ToolReturnPart("grep", "grep: bad pattern", tool_call_id=f"call_{i}")
            returns[0] = failed
            failed.outcome = "failed"
        parts: list[Any] = [TextPart("Let me look.")] if i % 2 else []
        if thinking:
            signed = ThinkingPart(
                f"plan {i}", signature="Eq" + "A" * 400, provider_name="anthropic"
            )
            parts.insert(0, signed)
        out.append(ModelResponse(parts=[*parts, *calls]))
        prompt = [UserPromptPart("Also check the docs.")] if i == rounds // 2 else []
        out.append(ModelRequest(parts=[*returns, *prompt]))
    out.append(ModelResponse(parts=[TextPart("Fixed.")]))
    return out


def agent(kind: str, capture: Capture, capability: Any, tools: int) -> Agent:
    built = Agent(model(kind, capture), instructions="Be brief.", capabilities=[capability])

    @built.tool_plain
    def grep(pattern: str) -> str:
        """Search the code."""
        return ""

    for k in range(tools):

        def read(path: str, start: int = 0, end: int = 100) -> str:
            return ""

        read.__doc__ = f"Read lines start..end of a file ({k})."
        built.tool_plain(name=f"read_{k}")(read)
    return built


def run(
    kind: str, policy: dict[str, Any], tools: int = 30, thinking: bool = False
) -> tuple[Any, dict[str, Any]]:
    """The result ctxwin had for the request, and the body pydantic-ai sent."""
    capture = Capture({"chat": CHAT_REPLY, "responses": RESPONSES_REPLY}.get(kind, ANTHROPIC_REPLY))
    capability = ContextWindow(ctxwin.Policy(policy), observe=False)
    given = history(thinking=thinking)
    with contextlib.suppress(Exception):  # the fake reply may not end the run: the request counts
        asyncio.run(agent(kind, capture, capability, tools).run("next", message_history=given))
    return capability.last_result, capture.bodies[0]


def sent_tokens(kind: str, body: dict[str, Any]) -> int:
    """ctxwin's own count of the body pydantic-ai sent, in that body's format."""
    policy = ctxwin.Policy({"tokenizer": "o200k_base"})
    return policy.apply(body, format=FORMATS[kind], model=body.get("model")).report.tokens_before


@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic"])
def test_the_report_counts_the_request_as_the_model_is_sent_it(kind: str) -> None:
    """Its tools as that model's JSON (OpenAI's strict function tools are larger), its
    instructions where that model has them, each tool return (Chat) or each call and output
    (Responses) a wire message of its own, an error result wrapped in ``{"error": ...}``:
    ctxwin counted the Anthropic request with Anthropic's tools."""
    result, body = run(kind, {"tokenizer": "o200k_base"})
    assert result.report.tokens_after == sent_tokens(kind, body)


def test_signed_thinking_counts_as_anthropic_model_sends_it() -> None:
    """A ``thinking`` block is counted as its JSON text, which depends on the order of its
    keys: ``AnthropicModel`` writes ``thinking``, ``signature``, ``type``."""
    result, body = run("anthropic", {"tokenizer": "o200k_base"}, thinking=True)
    assert sum(1 for m in body["messages"] for b in m["content"] if b["type"] == "thinking") > 3
    assert result.report.tokens_after == sent_tokens("anthropic", body)


@pytest.mark.parametrize("kind", ["chat", "responses"])
def test_a_request_the_report_says_fits_is_sent_within_the_window(kind: str) -> None:
    """The window decides on the count of what is sent: it trims the request to fit, where
    it let through a request over the window by ctxwin's own count of the body sent."""
    full = sent_tokens(kind, run(kind, {"tokenizer": "o200k_base"})[1])
    window = full - 60
    policy = {
        "tokenizer": "o200k_base",
        "context_window": window,
        "tools": {"*": {"max_tokens": 24}},
    }
    result, body = run(kind, policy)
    assert not result.report.over_budget
    assert result.report.tokens_after == sent_tokens(kind, body) <= window


@pytest.mark.parametrize("kind", ["chat", "responses"])
def test_edits_go_back_to_the_tool_returns_of_a_request_sent_as_several_messages(
    kind: str,
) -> None:
    """The stand-in counting the extra wire messages is no part: every tool return is sent,
    capped, with its call id, and nothing of the stand-in reaches the model."""
    policy = {"tokenizer": "o200k_base", "tools": {"read_1": {"max_tokens": 30}}}
    result, body = run(kind, policy, tools=2)
    assert any(e.step == "cap" for e in result.report.edits)
    text = json.dumps(body)
    assert "wire_messages" not in text
    items = body.get("messages") or body["input"]
    outputs = [
        m.get("tool_call_id") or m.get("call_id")
        for m in items
        if m.get("role") == "tool" or m.get("type") == "function_call_output"
    ]
    calls = [p.tool_call_id for m in history() for p in m.parts if isinstance(p, ToolCallPart)]
    assert outputs == calls
    assert "line 10 of m1" not in text  # capped
    assert result.report.tokens_after == sent_tokens(kind, body)


def test_a_request_left_with_nothing_but_its_stand_in_is_not_sent() -> None:
    """Tool returns of calls the history no longer holds are dropped: the request that held
    two of them (a Chat message each, so a stand-in for the second) is left out, not sent
    as an empty ``ModelRequest``."""
    from ctxwin.integrations._pydantic_ai_map import Mapper
    from ctxwin.integrations._pydantic_ai_parts import reader_of

    orphans = ModelRequest(
        parts=[ToolReturnPart("grep", "a", tool_call_id="x1"), ToolReturnPart("grep", "b", "x2")]
    )
    given = [ModelRequest(parts=[UserPromptPart("go")]), orphans, ModelResponse([TextPart("ok")])]
    mapper = Mapper()
    request = mapper.request(given, None, reader_of(model("chat", Capture(CHAT_REPLY))))
    assert len(request.body["messages"][1]["content"]) == 3  # two results and the stand-in
    result = ctxwin.Policy({"tokenizer": "o200k_base"}).apply(request.body, format=request.adapter)
    assert mapper.apply(request, result) == [given[0], given[2]]
