"""``ctxwin.summarizers.anthropic``: summaries through an Anthropic client's Messages
endpoint. The ``anthropic`` package is imported when the factory is called."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, overload

from ctxwin._exceptions import SummarizerError
from ctxwin.summarizers._base import (
    AsyncModelSummarizer,
    Endpoint,
    ModelSummarizer,
    SummaryCall,
    check_arguments,
    choose,
    describe,
    require,
)
from ctxwin.summarizers._prompt import DEFAULT_PROMPT

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic

__all__ = ["anthropic"]

_SYNC = ("Anthropic", "AnthropicBedrock", "AnthropicVertex", "AnthropicBedrockMantle")
_ASYNC = (
    "AsyncAnthropic",
    "AsyncAnthropicBedrock",
    "AsyncAnthropicVertex",
    "AsyncAnthropicBedrockMantle",
)


class _AnthropicMessages(Endpoint):
    provider = "anthropic"

    def request(self, call: SummaryCall) -> dict[str, Any]:
        return {
            **self.options,
            "model": self.model,
            "max_tokens": self.max_tokens or call.max_tokens,
            "system": self.prompt,
            "messages": [{"role": "user", "content": call.task}],
        }

    def send(self, request: dict[str, Any]) -> Any:
        return self.client.messages.create(**request)

    async def asend(self, request: dict[str, Any]) -> Any:
        return await self.client.messages.create(**request)

    def read(self, response: Any, call: SummaryCall) -> str:
        stop = getattr(response, "stop_reason", None)
        if stop == "max_tokens":
            raise SummarizerError(
                f"anthropic: the summary was cut at {self.max_tokens or call.max_tokens} tokens "
                "(max_tokens)",
                provider="anthropic",
            )
        if stop == "refusal":
            raise SummarizerError("anthropic: the model refused", provider="anthropic")
        blocks = getattr(response, "content", None) or []
        return "".join(b.text for b in blocks if getattr(b, "type", None) == "text")

    def failure(self, error: Exception) -> SummarizerError:
        return describe("anthropic", error, getattr(error, "status_code", None))


@overload
def anthropic(
    client: AsyncAnthropic,
    *,
    model: str,
    prompt: str | None = None,
    max_tokens: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> AsyncModelSummarizer: ...


@overload
def anthropic(
    client: Anthropic,
    *,
    model: str,
    prompt: str | None = None,
    max_tokens: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> ModelSummarizer: ...


def anthropic(
    client: Any,
    *,
    model: str,
    prompt: str | None = None,
    max_tokens: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> ModelSummarizer | AsyncModelSummarizer:
    """A summarizer that asks ``model`` through your ``anthropic.Anthropic`` client (an
    ``anthropic.AsyncAnthropic`` one gives an async summarizer, for ``aapply``).

    Each summary is one Messages request: ``prompt`` (by default :data:`DEFAULT_PROMPT`) as
    ``system``, then a user message with the tool's name, the budget, the policy's
    ``summarize.instructions`` and the output. Its ``max_tokens`` is ``max_tokens``, by
    default the policy's ``summarize.max_tokens`` (extended thinking spends part of it:
    give it more). ``options`` are passed to ``create`` as they are (``thinking``,
    ``service_tier``...). The client's own retries and timeout apply; a failed request, a
    refusal or an answer cut at ``max_tokens`` raises :class:`ctxwin.SummarizerError`, and
    the ``summarize`` step falls back to the cap.
    """
    sdk = require("anthropic", "anthropic", "anthropic")
    kind = choose("anthropic", sdk, client, _SYNC, _ASYNC)
    check_arguments("anthropic", model, max_tokens)
    backend = _AnthropicMessages(
        client,
        model=model,
        prompt=DEFAULT_PROMPT if prompt is None else prompt,
        max_tokens=max_tokens,
        options=dict(options or {}),
    )
    return kind(backend)
