"""``ctxwin.summarizers.openai``: summaries through an OpenAI (or compatible) client's Chat
Completions endpoint. The ``openai`` package is imported when the factory is called."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

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
from ctxwin.summarizers._stops import FINISH_REASONS, WHY, unfinished

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = ["openai"]

LimitParam = Literal["max_completion_tokens", "max_tokens"]

_OWNED = {
    "model": "pass model=",
    "messages": "the summarizer writes them (pass prompt=)",
    "max_tokens": "pass max_tokens= (and limit_param=)",
    "max_completion_tokens": "pass max_tokens= (and limit_param=)",
    "stream": "the summarizer reads whole answers",
}
"""The request's fields the summarizer sets itself, and what to pass instead."""


def _text_of(content: object) -> str:
    """The text of an answer's ``content``: a ``str``, or a list of parts (an
    OpenAI-compatible server's: Mistral's reasoning models put a ``thinking`` part before
    the ``text``) read as its ``text`` parts joined; anything else is no summary."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise SummarizerError(
            "openai: the answer cannot be read (its content is "
            f"{type(content).__name__}, not text)",
            provider="openai",
        )
    kinds = [_field(part, "type") for part in content]
    texts = [_field(part, "text") for part in content]
    if "text" not in kinds:
        named = ", ".join(sorted({str(kind) for kind in kinds})) or "none"
        raise SummarizerError(
            f"openai: the answer cannot be read (its content parts hold no text: {named})",
            provider="openai",
        )
    return "".join(
        t for k, t in zip(kinds, texts, strict=True) if k == "text" and isinstance(t, str)
    )


def _field(part: object, name: str) -> object:
    """A field of a content part, a dict as the SDK passes it on or an object."""
    return part.get(name) if isinstance(part, dict) else getattr(part, name, None)


@dataclass
class _OpenAIChat(Endpoint):
    limit_param: LimitParam = "max_completion_tokens"
    provider = "openai"

    def request(self, call: SummaryCall) -> dict[str, Any]:
        request = {
            **self.options,
            "model": self.model,
            "messages": [
                {"role": "system", "content": self.prompt},
                {"role": "user", "content": call.task},
            ],
            self.limit_param: self.max_tokens or call.max_tokens,
        }
        return bounded(request, "openai")

    def send(self, request: dict[str, Any]) -> Any:
        return self.client.chat.completions.create(**request)

    async def asend(self, request: dict[str, Any]) -> Any:
        return await self.client.chat.completions.create(**request)

    def read(self, response: Any, call: SummaryCall) -> str:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise SummarizerError("openai: the answer has no choices", provider="openai")
        choice = choices[0]
        if choice.finish_reason == "content_filter":
            raise SummarizerError(
                "openai: the answer was stopped by the content filter (content_filter)",
                provider="openai",
            )
        if choice.finish_reason == "length":
            raise SummarizerError(
                f"openai: the summary was cut at {self.max_tokens or call.max_tokens} tokens "
                f"({self.limit_param}); a reasoning model may need a larger max_tokens=",
                provider="openai",
            )
        kind = unfinished(FINISH_REASONS, choice.finish_reason)
        if kind is not None:  # a compatible server's (Mistral's model_length, error...)
            raise SummarizerError(
                f"openai: {WHY[kind]} ({choice.finish_reason})", provider="openai"
            )
        if choice.finish_reason in ("tool_calls", "function_call") or getattr(
            choice.message, "tool_calls", None
        ):  # text before a call is a preamble, not a summary
            raise SummarizerError(
                f"openai: the model answered with a tool call ({choice.finish_reason}), not a "
                "summary",
                provider="openai",
            )
        content = choice.message.content
        refusal = getattr(choice.message, "refusal", None)
        if content is None or refusal:  # a refusal is no summary, whatever text comes with it
            raise SummarizerError(
                f"openai: no text in the answer ({'refused: ' + refusal if refusal else 'empty'})",
                provider="openai",
            )
        return _text_of(content)

    def failure(self, error: Exception) -> SummarizerError:
        status = getattr(error, "status_code", None)
        return describe("openai", error, status, secrets_of(self.client, error))


@overload
def openai(
    client: AsyncOpenAI,
    *,
    model: str,
    prompt: str | None = None,
    max_tokens: int | None = None,
    limit_param: LimitParam = "max_completion_tokens",
    options: Mapping[str, Any] | None = None,
) -> AsyncModelSummarizer: ...


@overload
def openai(
    client: OpenAI,
    *,
    model: str,
    prompt: str | None = None,
    max_tokens: int | None = None,
    limit_param: LimitParam = "max_completion_tokens",
    options: Mapping[str, Any] | None = None,
) -> ModelSummarizer: ...


def openai(
    client: Any,
    *,
    model: str,
    prompt: str | None = None,
    max_tokens: int | None = None,
    limit_param: LimitParam = "max_completion_tokens",
    options: Mapping[str, Any] | None = None,
) -> ModelSummarizer | AsyncModelSummarizer:
    """A summarizer that asks ``model`` through your ``openai.OpenAI`` client (an
    ``openai.AsyncOpenAI`` one gives an async summarizer, for ``aapply``).

    Each summary is one Chat Completions request: ``prompt`` (by default
    :data:`DEFAULT_PROMPT`) as the system message, then a user message with the tool's name,
    the budget, the policy's ``summarize.instructions`` and the output. Its output limit
    (``limit_param``; ``"max_tokens"`` for servers that know only that one) is ``max_tokens``,
    by default the policy's ``summarize.max_tokens``; a reasoning model spends part of it
    thinking, so give it more. ``options`` are passed to ``create`` as they are
    (``{"temperature": 0}``, ``{"reasoning_effort": "minimal"}``...). The client's own
    retries and timeout apply; a failed request, a refusal or an answer cut at the limit
    (or filtered, or broken off: a compatible server's ``model_length``, ``error``...)
    raises :class:`ctxwin.SummarizerError`, and the ``summarize`` step falls back to the cap.
    """
    sdk = require("openai", "openai", "openai")
    kind = choose("openai", sdk, client, ("OpenAI",), ("AsyncOpenAI",))
    check_arguments("openai", model, max_tokens, prompt)
    if limit_param not in ("max_completion_tokens", "max_tokens"):
        raise SummarizerError(
            "ctxwin.summarizers.openai: limit_param must be 'max_completion_tokens' or "
            f"'max_tokens', got {limit_param!r}",
            provider="openai",
        )
    create = client.chat.completions.create
    backend = _OpenAIChat(
        client,
        model=model,
        prompt=DEFAULT_PROMPT if prompt is None else prompt,
        max_tokens=max_tokens,
        limit_param=limit_param,
        options=check_options("openai", options, create, _OWNED),
    )
    return kind(backend)
