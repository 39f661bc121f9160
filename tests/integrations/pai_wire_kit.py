"""What the pydantic-ai tests that read the body a model sends share: a fake HTTP transport
that keeps each request's JSON body, Anthropic's and OpenAI's replies, and pydantic-ai's own
models built on clients that use it (imported only once the tests have skipped without
pydantic-ai)."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

ANTHROPIC_REPLY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}

CHAT_REPLY = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
RESPONSES_REPLY = {
    "id": "r",
    "object": "response",
    "created_at": 0,
    "model": "gpt-4o",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "m",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 1,
        "output_tokens": 1,
        "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}


class Capture:
    """A fake HTTP transport: keeps each request's JSON body, answers with ``reply``."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.reply = reply

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=self.reply)


def _client(capture: Capture) -> Any:
    return httpx.AsyncClient(transport=httpx.MockTransport(capture))


def anthropic_model(capture: Capture) -> AnthropicModel:
    """pydantic-ai's ``AnthropicModel`` (claude-sonnet-4-5) sending to ``capture``."""
    client = AsyncAnthropic(api_key="x", http_client=_client(capture))
    return AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(anthropic_client=client))


def openai_provider(capture: Capture) -> OpenAIProvider:
    """pydantic-ai's OpenAI provider sending to ``capture``."""
    return OpenAIProvider(openai_client=AsyncOpenAI(api_key="x", http_client=_client(capture)))
