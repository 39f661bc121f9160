"""CtxwinMiddleware learning from a Claude turn that ran a server-side tool loop: its
``usage_metadata`` sums the sampling passes (each reading the request and what the tools
added), which taught the policy a ratio of 4.6 from one web search. ChatAnthropic keeps
Anthropic's own usage in ``response_metadata["usage"]`` (its ``llm_output``, which
langchain-core merges into the message's ``response_metadata``), listing the passes
(``iterations``) or saying a server tool ran (``server_tool_use``); a streamed message keeps
none, and its content holds the server's calls (``server_tool_use`` blocks)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import ctxwin
from ctxwin.integrations.langchain import CtxwinMiddleware

MODEL = "claude-sonnet-4-5"
QUESTION = {"messages": [{"role": "user", "content": "weather in Paris? " * 200}]}
SEARCH = [
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
    {"type": "text", "text": "Paris is sunny."},
]


class FakeClaude(GenericFakeChatModel):
    """A Claude answer as ChatAnthropic makes it, its usage built from what ctxwin counted
    for the request (``raw``: Anthropic's usage for ``response_metadata``, or None as when
    streamed)."""

    model: str = MODEL
    middleware: Any = None
    answer: Any = None

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeClaude:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        sent = self.middleware.last_result.tokens
        content, raw = self.answer(sent)
        total = raw["input_tokens"] if raw else 3 * sent + 1200
        metadata: dict[str, Any] = {"model_provider": "anthropic", "model_name": MODEL}
        if raw is not None:
            metadata["usage"] = raw
        message = AIMessage(
            content=content,
            usage_metadata={"input_tokens": total, "output_tokens": 9, "total_tokens": total + 9},
            response_metadata=metadata,
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def run(answer: Any) -> tuple[ctxwin.Policy, int]:
    policy = ctxwin.Policy({"context_window": 200_000})
    middleware = CtxwinMiddleware(policy)
    model = FakeClaude(messages=iter([]), middleware=middleware, answer=answer)
    create_agent(model, tools=[], middleware=[middleware]).invoke(QUESTION)
    assert middleware.last_result is not None
    return policy, middleware.last_result.tokens


def passes(sent: int) -> list[int]:
    return [int(sent * 1.1), int(sent * 1.1) + 400, int(sent * 1.1) + 800]


def test_a_server_tool_loop_not_listed_is_not_learned_from() -> None:
    """Three passes summed, ``server_tool_use`` counting two searches: not learned from
    (the ratio stays 1.0, the usage counted as refused), with a CalibrationWarning."""

    def answer(sent: int) -> tuple[Any, Any]:
        raw = {
            "input_tokens": sum(passes(sent)),
            "output_tokens": 9,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "server_tool_use": {"web_search_requests": 2, "web_fetch_requests": 0},
        }
        return SEARCH, raw

    with pytest.warns(ctxwin.CalibrationWarning, match="sums the sampling passes"):
        policy, _ = run(answer)
    cal = policy.calibration.of(MODEL)
    assert cal.ratio == 1.0
    assert cal.refused == 1


def test_a_server_tool_loop_that_lists_its_passes_is_learned_from_its_first() -> None:
    """With ``iterations``, the first ``message`` pass is the request: learned from it
    (1.1), not from the sum (3.5)."""

    def answer(sent: int) -> tuple[Any, Any]:
        listed = [
            {
                "type": "message",
                "input_tokens": n,
                "output_tokens": 3,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            }
            for n in passes(sent)
        ]
        raw = {
            "input_tokens": sum(passes(sent)),
            "output_tokens": 9,
            "server_tool_use": {"web_search_requests": 2},
            "iterations": listed,
        }
        return SEARCH, raw

    policy, sent = run(answer)
    cal = policy.calibration.of(MODEL)
    assert cal.last == (sent, passes(sent)[0])
    assert 1.0 < cal.ratio < 1.5


def test_a_streamed_server_tool_loop_is_known_by_its_content() -> None:
    """Streamed, ChatAnthropic keeps no raw usage: the ``server_tool_use`` block in the
    content says the passes were summed."""
    with pytest.warns(ctxwin.CalibrationWarning, match="sums the sampling passes"):
        policy, _ = run(lambda sent: (SEARCH, None))
    assert policy.calibration.of(MODEL).refused == 1


def test_langchain_standard_blocks_of_an_anthropic_server_call_count_too() -> None:
    """ChatAnthropic's ``output_version="v1"`` writes the call as a ``server_tool_call``."""
    blocks = [{"type": "server_tool_call", "id": "srvtoolu_1", "name": "web_search", "args": {}}]
    with pytest.warns(ctxwin.CalibrationWarning, match="sums the sampling passes"):
        policy, _ = run(lambda sent: (blocks, None))
    assert policy.calibration.of(MODEL).refused == 1


def test_a_turn_without_a_server_tool_is_learned_from_as_before() -> None:
    def answer(sent: int) -> tuple[Any, Any]:
        raw = {"input_tokens": int(sent * 1.2), "output_tokens": 9}
        return "Paris is sunny.", raw

    policy, sent = run(answer)
    assert policy.calibration.of(MODEL).last == (sent, int(sent * 1.2))


def test_observe_given_the_message_reads_the_raw_usage_beside_usage_metadata() -> None:
    """``policy.observe(result, ai_message)`` reads the same: the first listed pass, or
    0 (summed, not listed) where a server tool ran."""
    usage = {"input_tokens": 3000, "output_tokens": 9, "total_tokens": 3009}
    listed = {
        "input_tokens": 3000,
        "output_tokens": 9,
        "iterations": [
            {"type": "message", "input_tokens": 900, "output_tokens": 3},
            {"type": "message", "input_tokens": 2100, "output_tokens": 6},
        ],
    }
    message = AIMessage(SEARCH, usage_metadata=usage, response_metadata={"usage": listed})
    assert ctxwin.read_usage(message) == ctxwin.Usage(3000, 0, 0, 9, 900)
    streamed = AIMessage(SEARCH, usage_metadata=usage, response_metadata={})
    assert ctxwin.read_usage(streamed).request_tokens == 0
    plain = AIMessage("ok", usage_metadata=usage, response_metadata={"usage": {"input_tokens": 3}})
    assert ctxwin.read_usage(plain).request_tokens is None
