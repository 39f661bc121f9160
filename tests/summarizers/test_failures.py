"""The ready SDK summarizers as a production user meets them: every way a provider call can
go wrong ends in the cap with the reason in the edit's ``fallback``, never an exception out
of ``apply``/``aapply``, under both the sync and the async client."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anthropic
import httpx2
import openai
import pytest

import ctxwin.summarizers
from ctxwin import Policy, SummarizerError
from ctxwin.testing import FakeCounter
from tests.steps.conftest import body_with_result
from tests.summarizers.helpers import (
    CONFIG,
    LONG,
    anthropic_answer,
    apply,
    call,
    openai_answer,
    result_of,
)

Provider = Literal["openai", "anthropic"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic")
WAYS = [("sync", "apply"), ("sync", "aapply"), ("async", "aapply"), ("async", "apply")]
"""Each client kind under each entry point."""


@dataclass
class Handler:
    """A fake provider answering every request with ``answer(request)``, counting calls."""

    answer: Callable[[httpx2.Request], httpx2.Response]
    requests: list[httpx2.Request] = field(default_factory=list)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.answer(request)


def summarizer(provider: Provider, kind: str, handler: Handler, **client: Any) -> Any:
    """The provider's summarizer over its real SDK client, ``max_retries=0`` unless given."""
    transport = httpx2.MockTransport(handler)
    http: Any = httpx2.Client(transport=transport)
    if kind == "async":
        http = httpx2.AsyncClient(transport=transport)
    sdk: Any = __import__(provider)
    name = {"openai": "OpenAI", "anthropic": "Anthropic"}[provider]
    cls = getattr(sdk, name if kind == "sync" else "Async" + name)
    made = cls(**{"api_key": "sk-test", "max_retries": 0, "http_client": http, **client})
    return getattr(ctxwin.summarizers, provider)(made, model="m")


def error(provider: Provider, status: int) -> dict[str, Any]:
    if provider == "openai":
        return {"error": {"message": f"says {status}", "type": "x"}}
    return {"type": "error", "error": {"type": "x", "message": f"says {status}"}}


def fallback_of(result: ctxwin.Result) -> str | None:
    (edit,) = result.report.edits
    assert edit.step == "summarize"
    return edit.fallback


def assert_capped(result: ctxwin.Result) -> None:
    text = result_of(result)
    assert "tokens of run_tests output truncated" in text
    assert len(text.split()) <= 100


STATUSES = {
    400: ("BadRequestError", "BadRequestError"),
    401: ("AuthenticationError", "AuthenticationError"),
    404: ("NotFoundError", "NotFoundError"),
    429: ("RateLimitError", "RateLimitError"),
    500: ("InternalServerError", "InternalServerError"),
    503: ("InternalServerError", "ServiceUnavailableError"),
    529: ("InternalServerError", "OverloadedError"),
}


@pytest.mark.parametrize(("kind", "how"), WAYS)
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", sorted(STATUSES))
def test_every_provider_status_falls_back_to_the_cap_after_one_call(
    status: int, provider: Provider, kind: str, how: Literal["apply", "aapply"]
) -> None:
    handler = Handler(lambda r: httpx2.Response(status, json=error(provider, status)))
    result = apply(summarizer(provider, kind, handler), how)
    assert len(handler.requests) == 1
    name = STATUSES[status][PROVIDERS.index(provider)]
    assert (fallback_of(result) or "").startswith(
        f"summarizer_error: SummarizerError: {provider}: {name} ({status}): Error code: {status}"
    )
    assert_capped(result)


def _raise(kind: type[Exception]) -> Callable[[httpx2.Request], httpx2.Response]:
    def answer(request: httpx2.Request) -> httpx2.Response:
        raise kind("boom", request=request)  # type: ignore[call-arg]

    return answer


@pytest.mark.parametrize(("kind", "how"), WAYS)
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (_raise(httpx2.ReadTimeout), "APITimeoutError: Request timed out"),
        (_raise(httpx2.RemoteProtocolError), "APIConnectionError: Connection error."),
        (
            lambda r: httpx2.Response(
                200, content=b"{not json", headers={"content-type": "application/json"}
            ),
            "JSONDecodeError: Expecting property name",
        ),
    ],
    ids=["timeout", "reset", "malformed-json"],
)
def test_transport_failures_fall_back_to_the_cap(
    answer: Callable[[httpx2.Request], httpx2.Response],
    reason: str,
    provider: Provider,
    kind: str,
    how: Literal["apply", "aapply"],
) -> None:
    handler = Handler(answer)
    result = apply(summarizer(provider, kind, handler), how)
    assert len(handler.requests) == 1
    assert (fallback_of(result) or "").startswith(
        f"summarizer_error: SummarizerError: {provider}: {reason}"
    )
    assert_capped(result)


@pytest.mark.parametrize(("kind", "how"), [("async", "aapply"), ("async", "apply")])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_sdk_retries_do_not_hold_apply_past_the_summarize_timeout(
    provider: Provider, kind: str, how: str
) -> None:
    """The client's default retries honour a long retry-after; ctxwin stops waiting at its
    timeout, and the abandoned async call is cancelled before it retries."""
    handler = Handler(
        lambda r: httpx2.Response(429, json=error(provider, 429), headers={"retry-after": "30"})
    )
    s = summarizer(provider, kind, handler, max_retries=2)
    config = json.loads(json.dumps(CONFIG))
    config["tools"]["run_tests"]["summarize"]["timeout"] = 0.2
    pol = Policy(config, summarizer=s, counter=FakeCounter(), format="openai-chat")
    body = body_with_result(LONG, "run_tests")
    result = pol.apply(body) if how == "apply" else asyncio.run(pol.aapply(body))
    assert fallback_of(result) == "summarizer_timeout: no answer in 0.2s"
    assert len(handler.requests) == 1
    assert_capped(result)


def _ok(provider: Provider, **openai: Any) -> Callable[[httpx2.Request], httpx2.Response]:
    text = openai.pop("text", "summary: 60 TypeErrors")
    stop = openai.pop("stop", "end_turn")
    body = openai_answer(text, **openai) if provider == "openai" else anthropic_answer(text, stop)
    return lambda r: httpx2.Response(200, json=body)


@pytest.mark.parametrize(("kind", "how"), WAYS)
@pytest.mark.parametrize(
    ("provider", "answer", "reason"),
    [
        (
            "openai",
            {"text": "partial summ", "finish": "content_filter"},
            "openai: the answer was stopped by the content filter (content_filter)",
        ),
        (
            "openai",
            {"text": "I can't help with that", "refusal": "I can't help with that"},
            "openai: no text in the answer (refused: I can't help with that)",
        ),
        (
            "anthropic",
            {"text": "partial", "stop": "model_context_window_exceeded"},
            "anthropic: the summary was cut at the model's context window "
            "(model_context_window_exceeded)",
        ),
        (
            "anthropic",
            {"text": "partial", "stop": "pause_turn"},
            "anthropic: the model paused its turn before finishing (pause_turn)",
        ),
        (
            "anthropic",
            {"text": "I can't", "stop": "refusal"},
            "anthropic: the model refused (refusal)",
        ),
    ],
    ids=["openai-filter", "openai-refusal", "anthropic-window", "anthropic-pause", "refusal"],
)
def test_a_filtered_refused_or_unfinished_answer_is_no_summary(
    provider: Provider, answer: dict[str, Any], reason: str, kind: str, how: str
) -> None:
    handler = Handler(_ok(provider, **answer))
    result = apply(summarizer(provider, kind, handler), how)  # type: ignore[arg-type]
    assert fallback_of(result) == f"summarizer_error: SummarizerError: {reason}"
    assert_capped(result)


@pytest.mark.parametrize(
    ("provider", "body", "message"),
    [
        (
            "openai",
            {"choices": [{"message": None, "finish_reason": "stop"}]},
            "openai: the answer cannot be read (AttributeError: 'NoneType' object has no "
            "attribute 'content')",
        ),
        (
            "anthropic",
            {"content": [{"type": "text"}], "stop_reason": "end_turn"},
            None,
        ),
        (
            "anthropic",
            {"content": "hello", "stop_reason": "end_turn"},
            "anthropic: the answer is not a message (no content list, got Message)",
        ),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_typed_error(
    provider: Provider, body: dict[str, Any], message: str | None
) -> None:
    s = summarizer(provider, "sync", Handler(lambda r: httpx2.Response(200, json=body)))
    if message is None:  # a text block without text: no text, as an empty answer
        assert call(s) == ""
        return
    with pytest.raises(SummarizerError) as info:
        call(s)
    assert (str(info.value), info.value.provider) == (message, provider)


def test_a_proxy_page_is_not_read_as_an_empty_anthropic_message() -> None:
    page = httpx2.Response(
        200, content=b"<html>gateway</html>", headers={"content-type": "text/html"}
    )
    result = apply(summarizer("anthropic", "sync", Handler(lambda r: page)))
    assert fallback_of(result) == (
        "summarizer_error: SummarizerError: anthropic: the answer is not a message "
        "(no content list, got str)"
    )


@pytest.mark.parametrize(("kind", "how"), WAYS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_echoed_api_key_is_masked_in_the_report(
    provider: Provider, kind: str, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy that quotes the request's headers in its error page puts no key in the report."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-env-0001")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-the-env-0001")

    def echo(request: httpx2.Request) -> httpx2.Response:
        headers = dict(request.headers)
        quoted = f"bad key {headers.get('authorization')} / {headers.get('x-api-key')}"
        return httpx2.Response(401, json={"error": {"message": quoted, "type": "x"}})

    for key in ("sk-passed-in-0002", None):  # given, or read from the environment
        s = summarizer(provider, kind, Handler(echo), api_key=key)
        result = apply(s, how)  # type: ignore[arg-type]
        fallback = fallback_of(result) or ""
        assert fallback.startswith(f"summarizer_error: SummarizerError: {provider}: Auth")
        assert "bad key" in fallback
        assert "sk-passed-in" not in fallback
        assert "sk-from-the-env" not in fallback
        assert "sk-" not in result.report.to_json()


BEARER = "eyJ0eXAiOiJKV1Qi.bearer-SECRET-0001"


def bearer_client(how: str, kind: str, http: Any) -> Any:
    """An Azure OpenAI or Anthropic Vertex client sending ``BEARER`` as its token."""
    azure: dict[str, Any] = {"azure_endpoint": "https://x.openai.azure.com"}
    azure.update(api_version="2024-06-01", max_retries=0, http_client=http)
    sync = kind == "sync"
    if how == "azure_ad_token":
        return (openai.AzureOpenAI if sync else openai.AsyncAzureOpenAI)(
            azure_ad_token=BEARER, **azure
        )
    if how == "azure_ad_token_provider":  # the client keeps no token: only the request has it
        return (openai.AzureOpenAI if sync else openai.AsyncAzureOpenAI)(
            azure_ad_token_provider=lambda: BEARER, **azure
        )
    vertex = anthropic.AnthropicVertex if sync else anthropic.AsyncAnthropicVertex
    return vertex(
        region="us-east5", project_id="p", access_token=BEARER, max_retries=0, http_client=http
    )


@pytest.mark.parametrize(("kind", "how"), [("sync", "apply"), ("async", "aapply")])
@pytest.mark.parametrize("token", ["azure_ad_token", "azure_ad_token_provider", "access_token"])
def test_an_echoed_bearer_token_is_masked_in_the_report_and_the_log(
    token: str, kind: str, how: Literal["apply", "aapply"], caplog: pytest.LogCaptureFixture
) -> None:
    """Azure AD and Vertex tokens travel as 'Authorization: Bearer ...': a proxy quoting it
    in its error page puts no token in the report nor the log (review s50-2)."""

    def echo(request: httpx2.Request) -> httpx2.Response:
        quoted = f"bad credentials: {request.headers.get('authorization')}"
        return httpx2.Response(401, json={"error": {"message": quoted, "type": "auth"}})

    transport = httpx2.MockTransport(echo)
    http = (
        httpx2.Client(transport=transport)
        if kind == "sync"
        else httpx2.AsyncClient(transport=transport)
    )
    client = bearer_client(token, kind, http)
    provider = "anthropic" if token == "access_token" else "openai"
    caplog.set_level(logging.WARNING, logger="ctxwin")
    result = apply(getattr(ctxwin.summarizers, provider)(client, model="m"), how)
    fallback = fallback_of(result) or ""
    assert fallback.startswith(f"summarizer_error: SummarizerError: {provider}: Auth")
    assert "bad credentials: Bearer ***" in fallback
    assert "SECRET" not in result.report.to_json()
    assert caplog.records
    assert not [r for r in caplog.records if "SECRET" in r.getMessage()]


@pytest.mark.parametrize(("kind", "how"), WAYS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_summary_is_asked_once_per_content(provider: Provider, kind: str, how: str) -> None:
    handler = Handler(_ok(provider))
    pol = Policy(
        CONFIG,
        summarizer=summarizer(provider, kind, handler),
        counter=FakeCounter(),
        format="openai-chat",
    )
    for _ in range(2):
        body = body_with_result(LONG, "run_tests")
        result = pol.apply(body) if how == "apply" else asyncio.run(pol.aapply(body))
        assert result_of(result).endswith("\nsummary: 60 TypeErrors")
    assert len(handler.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("words", "fallback"), [(55, None), (56, "summarizer_too_long: 56 > 50 tokens")]
)
def test_a_summary_over_1_1_times_its_budget_is_refused(
    provider: Provider, words: int, fallback: str | None
) -> None:
    handler = Handler(_ok(provider, text=" ".join(["w"] * words)))
    assert fallback_of(apply(summarizer(provider, "sync", handler))) == fallback


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_very_long_result_is_sent_whole_in_one_request(provider: Provider) -> None:
    """Nothing cuts the output before it is sent (docs/summarizers.md says none): a result
    past the model's context is the provider's 400, and falls back like one."""
    long = ("x" * 99 + "\n") * 5000  # 500k characters
    handler = Handler(_ok(provider))
    pol = Policy(
        CONFIG,
        summarizer=summarizer(provider, "sync", handler),
        counter=FakeCounter(),
        format="openai-chat",
    )
    pol.apply(body_with_result(long, "run_tests"))
    (request,) = handler.requests
    sent = json.loads(request.content)
    assert long in sent["messages"][-1]["content"]
    limit = "max_completion_tokens" if provider == "openai" else "max_tokens"
    assert (sent["model"], sent[limit]) == ("m", 50)
