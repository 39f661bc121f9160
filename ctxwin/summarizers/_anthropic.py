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
    bounded,
    check_arguments,
    check_options,
    choose,
    describe,
    require,
    secrets_of,
)
from ctxwin.summarizers._prompt import DEFAULT_PROMPT
from ctxwin.summarizers._stops import ANTHROPIC_STOPS, WHY, unfinished

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

_OWNED = {
    "model": "pass model=",
    "messages": "the summarizer writes them",
    "system": "pass prompt=",
    "max_tokens": "pass max_tokens=",
    "stream": "the summarizer reads whole answers",
}
"""The request's fields the summarizer sets itself, and what to pass instead."""


class _AnthropicMessages(Endpoint):
    provider = "anthropic"

    def request(self, call: SummaryCall) -> dict[str, Any]:
        request = {
            **self.options,
            "model": self.model,
            "max_tokens": self.max_tokens or call.max_tokens,
            "system": self.prompt,
            "messages": [{"role": "user", "content": call.task}],
        }
        return bounded(request, "anthropic")

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
        kind = unfinished(ANTHROPIC_STOPS, stop)
        if kind is not None:  # text after such a stop is no finished summary
            raise SummarizerError(f"anthropic: {WHY[kind]} ({stop})", provider="anthropic")
        if stop == "tool_use":  # text before a call is a preamble, not a summary
            raise SummarizerError(
                "anthropic: the model answered with a tool call (tool_use), not a summary",
                provider="anthropic",
            )
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):  # not a Message: a proxy's page, another API's JSON
            raise SummarizerError(
                f"anthropic: the answer is not a message (no content list, got "
                f"{type(response).__name__})",
                provider="anthropic",
            )
        return "".join(
            b.text for b in blocks if getattr(b, "type", None) == "text" and isinstance(b.text, str)
        )

    def failure(self, error: Exception) -> SummarizerError:
        status = getattr(error, "status_code", None)
        return describe("anthropic", error, status, secrets_of(self.client, error))


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
    refusal or an answer cut at ``max_tokens`` (or the context window) or paused
    (``pause_turn``) raises :class:`ctxwin.SummarizerError`, and the ``summarize`` step
    falls back to the cap.
    """
    sdk = require("anthropic", "anthropic", "anthropic")
    kind = choose("anthropic", sdk, client, _SYNC, _ASYNC)
    check_arguments("anthropic", model, max_tokens, prompt)
    backend = _AnthropicMessages(
        client,
        model=model,
        prompt=DEFAULT_PROMPT if prompt is None else prompt,
        max_tokens=max_tokens,
        options=check_options("anthropic", options, client.messages.create, _OWNED),
    )
    return kind(backend)
