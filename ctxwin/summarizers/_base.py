"""The two shapes of a ready summarizer, sync and async, over one provider backend.

A backend knows its SDK: how to build one request, send it, read the answer and type a
failure. The summarizers wrap it in the :class:`ctxwin.Summarizer` /
:class:`ctxwin.AsyncSummarizer` call signature the ``summarize`` step uses, so every failure
reaches the step as a :class:`ctxwin.SummarizerError` (and the step falls back to the cap).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from ctxwin._exceptions import SummarizerError
from ctxwin._lazy import require as lazy_require
from ctxwin.summarizers._prompt import task_message

__all__ = [
    "AsyncModelSummarizer",
    "Backend",
    "Endpoint",
    "ModelSummarizer",
    "SummaryCall",
    "check_arguments",
    "choose",
    "describe",
    "require",
]


def require(module: str, extra: str, who: str) -> ModuleType:
    """Import an SDK on first use, or say how to install it."""
    found: ModuleType = lazy_require(module, extra, f"ctxwin.summarizers.{who}")
    return found


@dataclass
class Endpoint:
    """What every backend holds: the user's client, the model, the prompt, the output limit
    (``None``: the rule's ``summarize.max_tokens``) and extra request options."""

    client: Any
    model: str
    prompt: str
    max_tokens: int | None
    options: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SummaryCall:
    """The arguments of one summarizer call, as the ``summarize`` step passes them."""

    text: str
    tool: str
    call_id: str | None
    max_tokens: int
    instructions: str

    @property
    def task(self) -> str:
        """The user message: the task, the policy's instructions, the output in tags."""
        return task_message(
            self.text,
            tool=self.tool,
            call_id=self.call_id,
            max_tokens=self.max_tokens,
            instructions=self.instructions,
        )


class Backend(Protocol):
    """One provider's SDK, seen by the summarizers."""

    provider: str
    model: str

    def request(self, call: SummaryCall) -> dict[str, Any]: ...

    def send(self, request: dict[str, Any]) -> Any: ...

    async def asend(self, request: dict[str, Any]) -> Any: ...

    def read(self, response: Any, call: SummaryCall) -> str: ...

    def failure(self, error: Exception) -> SummarizerError: ...


def _name(backend: Backend) -> str:
    return f"{backend.provider}, model={backend.model!r}" if backend.model else backend.provider


class ModelSummarizer:
    """A :class:`ctxwin.Summarizer` that asks a model through a sync client.

    Built by :func:`ctxwin.summarizers.openai`, :func:`~ctxwin.summarizers.anthropic` and
    :func:`~ctxwin.summarizers.langchain`. A failed call raises
    :class:`ctxwin.SummarizerError` with the SDK's exception as its cause.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str:
        call = SummaryCall(text, tool, call_id, max_tokens, instructions)
        request = self.backend.request(call)
        try:
            response = self.backend.send(request)
        except Exception as e:  # the SDK's errors, typed; the step falls back on them
            raise self.backend.failure(e) from e
        return self.backend.read(response, call)

    def __repr__(self) -> str:
        return f"ModelSummarizer({_name(self.backend)})"


class AsyncModelSummarizer:
    """A :class:`ctxwin.AsyncSummarizer` that asks a model through an async client (for
    ``await policy.aapply(...)``; under ``apply`` it runs in an event loop of its own)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str:
        call = SummaryCall(text, tool, call_id, max_tokens, instructions)
        request = self.backend.request(call)
        try:
            response = await self.backend.asend(request)
        except Exception as e:  # CancelledError is a BaseException: it passes untouched
            raise self.backend.failure(e) from e
        return self.backend.read(response, call)

    def __repr__(self) -> str:
        return f"AsyncModelSummarizer({_name(self.backend)})"


def describe(provider: str, error: Exception, status: object = None) -> SummarizerError:
    """A typed failure naming the provider, the SDK's error type and the HTTP status."""
    code = status if isinstance(status, int) and not isinstance(status, bool) else None
    where = f" ({code})" if code is not None else ""
    text = str(error)
    if len(text) > 300:  # a provider's error page can be long: an excerpt is enough
        text = text[:300] + "..."
    return SummarizerError(
        f"{provider}: {type(error).__name__}{where}: {text}", provider=provider, status_code=code
    )


def check_arguments(who: str, model: object, max_tokens: object) -> None:
    """Refuse a missing model or a bad limit when the summarizer is built, not per call."""
    if not isinstance(model, str) or not model.strip():
        raise SummarizerError(
            f"ctxwin.summarizers.{who}: model must be a model name, got {model!r}", provider=who
        )
    if max_tokens is not None and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        raise SummarizerError(
            f"ctxwin.summarizers.{who}: max_tokens must be a positive int, got {max_tokens!r}",
            provider=who,
        )


def choose(
    who: str, sdk: ModuleType, client: object, sync: tuple[str, ...], async_: tuple[str, ...]
) -> type[ModelSummarizer] | type[AsyncModelSummarizer]:
    """The summarizer class for ``client``: async for the SDK's async client classes (and
    their subclasses), sync for its sync ones."""

    def classes(names: tuple[str, ...]) -> tuple[type, ...]:
        return tuple(c for n in names if isinstance(c := getattr(sdk, n, None), type))

    if isinstance(client, classes(async_)):
        return AsyncModelSummarizer
    if isinstance(client, classes(sync)):
        return ModelSummarizer
    raise SummarizerError(
        f"ctxwin.summarizers.{who} needs a client of the {sdk.__name__} SDK "
        f"({', '.join(sync[:1] + async_[:1])}...), got {type(client).__name__}",
        provider=who,
    )
