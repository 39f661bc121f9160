"""pydantic-ai ``ContextWindow`` learning from an ``AnthropicModel`` turn that ran a
server-side tool loop: its ``RequestUsage`` sums the sampling passes (each reading the
request and what the tools added), and pydantic-ai keeps no pass's own input (its
``details``: ``web_search_requests``, and ``message_iterations`` / ``compaction_iterations``
where Anthropic lists compaction passes; the stamp of the last pass's input, a context size).
One web search taught the policy a ratio of 4.6. The replies come from Anthropic's API on a
fake transport, read by pydantic-ai's own ``AnthropicModel``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("httpx2")
pytest.importorskip("anthropic")
pytest.importorskip("openai")

from pydantic_ai import Agent

import ctxwin
from ctxwin.integrations.pydantic_ai import ContextWindow
from tests.integrations.pai_wire_kit import ANTHROPIC_REPLY, Capture, anthropic_model

MODEL = "claude-sonnet-4-5"
TEXT = {"type": "text", "text": "Paris is sunny."}


def server_call(name: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": name, "input": {"q": "x"}}
    return [use, {"tool_use_id": "srvtoolu_1", **result}, TEXT]


SEARCH = server_call("web_search", {"type": "web_search_tool_result", "content": []})
CODE = server_call(
    "code_execution",
    {
        "type": "code_execution_tool_result",
        "content": {
            "type": "code_execution_result",
            "stdout": "1",
            "stderr": "",
            "return_code": 0,
            "content": [],
        },
    },
)


def iteration(kind: str, tokens: int) -> dict[str, Any]:
    return {
        "type": kind,
        "input_tokens": tokens,
        "output_tokens": 3,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


class _Billed(Capture):
    """Anthropic's reply, its usage made from what ctxwin counted for the request."""

    def __init__(self, capability: Any, content: list[Any], usage: Any) -> None:
        super().__init__(ANTHROPIC_REPLY)
        self.capability, self.content, self.usage = capability, content, usage

    def __call__(self, request: Any) -> Any:
        sent = self.capability.last_result.tokens
        self.reply = {**ANTHROPIC_REPLY, "content": self.content, "usage": self.usage(sent)}
        return super().__call__(request)


def run(content: list[Any], usage: Any) -> tuple[ctxwin.Policy, int]:
    policy = ctxwin.Policy({"context_window": 200_000})
    capability = ContextWindow(policy)
    model = anthropic_model(_Billed(capability, content, usage))
    agent = Agent(model, capabilities=[capability], model_settings={"max_tokens": 1024})
    asyncio.run(agent.run("weather in Paris? " * 200))
    return policy, capability.last_result.tokens


def summed(sent: int) -> int:
    return 3 * sent + 1200


@pytest.mark.parametrize(
    ("content", "usage"),
    [
        (
            SEARCH,
            lambda sent: {
                "input_tokens": summed(sent),
                "output_tokens": 9,
                "server_tool_use": {"web_search_requests": 2},
            },
        ),
        (CODE, lambda sent: {"input_tokens": summed(sent), "output_tokens": 9}),
        (
            [TEXT],
            lambda sent: {
                "input_tokens": summed(sent),
                "output_tokens": 9,
                "iterations": [iteration("compaction", 2 * sent), iteration("message", sent)],
            },
        ),
        (
            [TEXT],
            lambda sent: {
                "input_tokens": 2 * sent + 400,
                "output_tokens": 9,
                "iterations": [iteration("message", sent), iteration("message", sent + 400)],
            },
        ),
    ],
    ids=["web-search", "code-execution", "compaction", "listed-passes"],
)
def test_a_turn_that_sums_its_passes_is_not_learned_from(content: Any, usage: Any) -> None:
    """A web search (``web_search_requests``), a code execution (only its call among the
    parts says it), a compaction pass (pydantic-ai adds its totals to the input), passes
    listed (pydantic-ai stamps the last one's input apart from the sum): not learned from,
    the ratio stays 1.0, with a CalibrationWarning."""
    with pytest.warns(ctxwin.CalibrationWarning, match="sums the sampling passes"):
        policy, _ = run(content, usage)
    cal = policy.calibration.of(MODEL)
    assert cal.ratio == 1.0
    assert cal.refused == 1


def test_a_turn_of_one_pass_is_learned_from_as_before() -> None:
    """No server tool, or the passes listed as one: the usage is the request's."""
    policy, sent = run([TEXT], lambda sent: {"input_tokens": sent * 13 // 10, "output_tokens": 9})
    assert policy.calibration.of(MODEL).last == (sent, sent * 13 // 10)

    def one_pass(sent: int) -> dict[str, Any]:
        return {
            "input_tokens": sent * 13 // 10,
            "output_tokens": 3,
            "iterations": [iteration("message", sent * 13 // 10)],
        }

    policy, sent = run([TEXT], one_pass)
    assert policy.calibration.of(MODEL).last == (sent, sent * 13 // 10)
