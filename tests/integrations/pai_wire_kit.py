"""What the pydantic-ai tests that read the body a model sends share: a fake HTTP transport
that keeps each request's JSON body, Anthropic's reply, and pydantic-ai's own models built
on clients that use it (imported only once the tests have skipped without pydantic-ai)."""

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
