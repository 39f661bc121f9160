"""The two shapes of a ready summarizer, sync and async, over one provider backend.

A backend knows its SDK: how to build one request, send it, read the answer and type a
failure. The summarizers wrap it in the :class:`ctxwin.Summarizer` /
:class:`ctxwin.AsyncSummarizer` call signature the ``summarize`` step uses, so every failure
reaches the step as a :class:`ctxwin.SummarizerError` (and the step falls back to the cap).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from pydantic import SecretStr

from ctxwin._exceptions import SummarizerError
from ctxwin._lazy import require as lazy_require
from ctxwin.steps._summaries import time_left
from ctxwin.stores._base import scrub
from ctxwin.summarizers._prompt import task_message

__all__ = [
    "AsyncModelSummarizer",
    "Backend",
    "Endpoint",
    "ModelSummarizer",
    "SummaryCall",
    "bounded",
    "check_arguments",
    "check_options",
    "check_prompt",
    "choose",
    "describe",
    "parts_of",
    "require",
    "secrets_of",
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


def bounded(request: dict[str, Any], provider: str) -> dict[str, Any]:
    """``request`` with a ``timeout`` no longer than ctxwin still waits for this summary
    (:func:`ctxwin.summarizers.time_left`), so that a call ctxwin fell back from does not
    go on for the client's own timeout (600 s by default). The client's retries still run,
    each attempt bounded by the time left when the call began. A number of your own in
    ``options`` that is shorter is kept, and so is an ``httpx.Timeout`` object."""
    left = time_left()
    if left is None:  # called outside a policy's summarize step: the client's own timeout
        return request
    if left <= 0:
        raise SummarizerError(
            f"{provider}: not asked: ctxwin stopped waiting for this summary before the "
            "request was sent",
            provider=provider,
        )
    own = request.get("timeout")
    if own is not None and not (isinstance(own, int | float) and own > left):
        return request
    return {**request, "timeout": left}


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


def _read(backend: Backend, response: Any, call: SummaryCall) -> str:
    """The backend's reading of an answer; an answer of an unexpected shape (a proxy's page,
    a field missing) is a typed failure too, not the SDK model's ``AttributeError``."""
    try:
        return backend.read(response, call)
    except SummarizerError:
        raise
    except Exception as e:
        raise SummarizerError(
            f"{backend.provider}: the answer cannot be read ({type(e).__name__}: {e})",
            provider=backend.provider,
        ) from e


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
        try:
            response = self.backend.send(self.backend.request(call))
        except SummarizerError:
            raise
        except Exception as e:  # the SDK's errors, typed; the step falls back on them
            raise self.backend.failure(e) from e
        return _read(self.backend, response, call)

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
        try:
            response = await self.backend.asend(self.backend.request(call))
        except SummarizerError:
            raise
        except Exception as e:  # CancelledError is a BaseException: it passes untouched
            raise self.backend.failure(e) from e
        return _read(self.backend, response, call)

    def __repr__(self) -> str:
        return f"AsyncModelSummarizer({_name(self.backend)})"


_SECRET_FIELDS = (
    "api_key",
    "auth_token",
    "azure_ad_token",
    "_azure_ad_token",
    "access_token",
    "openai_api_key",
    "anthropic_api_key",
    "google_api_key",
)
"""Where an SDK client or a LangChain model keeps its credentials (``AzureOpenAI`` keeps its
``azure_ad_token`` as ``_azure_ad_token``; ``AnthropicVertex`` its ``access_token``); a
LangChain model's every ``SecretStr`` field counts too, whatever its name."""
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key")
"""The request headers that carry a credential (``Authorization: Bearer <token>``), read
from the failed request: a token from a provider callable is held by no client field."""


def parts_of(obj: object, depth: int = 0) -> Iterator[object]:
    """``obj`` and, for a LangChain chain or binding, the runnables it is made of."""
    yield obj
    if depth >= 4:
        return
    for name in ("bound", "first", "last", "runnable"):
        if (inner := getattr(obj, name, None)) is not None and inner is not obj:
            yield from parts_of(inner, depth + 1)
    for name in ("middle", "fallbacks"):
        inner = getattr(obj, name, None)
        for each in inner if isinstance(inner, list | tuple) else ():
            yield from parts_of(each, depth + 1)


def secrets_of(client: object, error: BaseException | None = None) -> tuple[str, ...]:
    """The credentials ``client`` holds (``str`` or pydantic ``SecretStr``: the fields named
    in :data:`_SECRET_FIELDS`, and every ``SecretStr`` field of a LangChain model) and those
    the failed request sent (``error.request``'s credential headers, the ``Bearer`` scheme
    left out), to be kept out of every failure message: a proxy or a provider may quote the
    request's headers."""
    found: list[str] = []
    for part in parts_of(client):
        fields = [getattr(part, name, None) for name in _SECRET_FIELDS]
        fields += [v for v in getattr(part, "__dict__", {}).values() if isinstance(v, SecretStr)]
        for value in fields:
            reveal = getattr(value, "get_secret_value", None)
            value = reveal() if callable(reveal) else value
            if isinstance(value, str) and len(value) >= 8 and value not in found:
                found.append(value)
    return (*found, *(s for s in _sent_secrets(error) if s not in found))


def _sent_secrets(error: BaseException | None) -> list[str]:
    """The credential header values of the request ``error`` (or an error it was raised
    from) failed: the SDKs' ``APIStatusError`` and ``APIConnectionError`` keep it."""
    found: list[str] = []
    for _ in range(8):  # an error, its cause, their causes: a short chain, maybe a cycle
        if error is None:
            break
        try:
            headers = getattr(getattr(error, "request", None), "headers", None)
        except RuntimeError:  # httpx's RequestError without a request
            headers = None
        sent = [headers.get(n) for n in _SECRET_HEADERS] if isinstance(headers, Mapping) else []
        for value in sent:
            if isinstance(value, str):
                scheme, _, token = value.strip().partition(" ")
                value = token.strip() if token.strip() else scheme
                if len(value) >= 8 and value not in found:
                    found.append(value)
        error = error.__cause__ or error.__context__
    return found


def describe(
    provider: str, error: Exception, status: object = None, secrets: tuple[str, ...] = ()
) -> SummarizerError:
    """A typed failure naming the provider, the SDK's error type and the HTTP status, with
    ``secrets`` masked wherever the error's text quotes them."""
    code = status if isinstance(status, int) and not isinstance(status, bool) else None
    where = f" ({code})" if code is not None else ""
    text = scrub(str(error), secrets)
    if len(text) > 300:  # a provider's error page can be long: an excerpt is enough
        text = text[:300] + "..."
    return SummarizerError(
        f"{provider}: {type(error).__name__}{where}: {text}", provider=provider, status_code=code
    )


def check_prompt(who: str, prompt: object) -> None:
    """Refuse a prompt that is not text when the summarizer is built, not per call."""
    if prompt is not None and not isinstance(prompt, str):
        raise SummarizerError(
            f"ctxwin.summarizers.{who}: prompt must be a str, got {type(prompt).__name__}",
            provider=who,
        )


def check_arguments(who: str, model: object, max_tokens: object, prompt: object = None) -> None:
    """Refuse a missing model, a bad limit or a prompt that is not text when the summarizer
    is built, not per call."""
    check_prompt(who, prompt)
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


def check_options(
    who: str, options: object, create: Callable[..., Any], owned: Mapping[str, str]
) -> dict[str, Any]:
    """``options`` as a dict, refused when the summarizer is built if it is not a mapping,
    sets what the summarizer sets itself (``owned``: the key and what to use instead), or
    names a parameter ``create`` does not take (a typo would fail every request)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise SummarizerError(
            f"ctxwin.summarizers.{who}: options must be a mapping of parameter names, "
            f"got {type(options).__name__}",
            provider=who,
        )
    for key in options:
        if key in owned:
            raise SummarizerError(
                f"ctxwin.summarizers.{who}: options may not set {key!r}: {owned[key]}",
                provider=who,
            )
    try:
        params = inspect.signature(create).parameters
    except (TypeError, ValueError):  # a wrapped client without a signature: not checked
        return dict(options)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(options)
    unknown = sorted(k for k in options if k not in params)
    if unknown:
        raise SummarizerError(
            f"ctxwin.summarizers.{who}: options {unknown} are not parameters of "
            f"{getattr(create, '__qualname__', 'create')}(); pass fields the SDK does "
            "not know in options={'extra_body': {...}}",
            provider=who,
        )
    return dict(options)


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
