"""ctxwin.summarizers.anthropic on the real SDK client over a fake transport: the request it
sends, and the summarize step's fallback when the provider fails."""

from __future__ import annotations

from typing import Any

import anthropic as anthropic_sdk
import pytest

import ctxwin.summarizers
from ctxwin import SummarizerError
from ctxwin.summarizers import DEFAULT_PROMPT, AsyncModelSummarizer, ModelSummarizer
from tests.summarizers.helpers import (
    KINDS,
    LONG,
    Kind,
    Server,
    anthropic_answer,
    anthropic_client,
    apply,
    call,
    error_body,
    result_of,
)


def summarizer(kind: Kind, server: Server, **kw: Any) -> Any:
    return ctxwin.summarizers.anthropic(anthropic_client(kind, server), model="claude-test", **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_the_client_kind_gives_the_summarizer_kind(kind: Kind) -> None:
    s = summarizer(kind, Server(anthropic_answer()))
    assert type(s) is (ModelSummarizer if kind == "sync" else AsyncModelSummarizer)


@pytest.mark.parametrize("kind", KINDS)
def test_the_request_is_one_message_with_the_prompt_as_system(kind: Kind) -> None:
    server = Server(anthropic_answer())
    result = apply(summarizer(kind, server), "apply" if kind == "sync" else "aapply")
    (request,) = server.requests
    assert (request.method, str(request.url)) == ("POST", "https://api.anthropic.com/v1/messages")
    key = request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    assert "sk-test" in key
    assert server.sent == {
        "model": "claude-test",
        "max_tokens": 50,
        "system": DEFAULT_PROMPT,
        "messages": [
            {
                "role": "user",
                "content": "Summarize the output of the tool `run_tests` (call c1) in at most "
                "50 tokens.\n\nInstructions for this tool:\nName every failing module.\n\n"
                f"<tool_output>\n{LONG}\n</tool_output>",
            }
        ],
    }
    assert result_of(result) == (
        f"[summary of run_tests output ({len(LONG.split())} tokens)]\nsummary: 60 TypeErrors"
    )


def test_prompt_limit_and_options_are_the_callers() -> None:
    server = Server(anthropic_answer())
    s = summarizer(
        "sync",
        server,
        prompt="Be brief.",
        max_tokens=300,
        options={"service_tier": "standard_only"},
    )
    call(s)
    sent = server.sent
    assert (sent["system"], sent["max_tokens"], sent["service_tier"]) == (
        "Be brief.",
        300,
        "standard_only",
    )


def test_the_text_blocks_of_the_answer_make_the_summary() -> None:
    answer = anthropic_answer("part one, ")
    answer["content"] = [
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "part one, "},
        {"type": "text", "text": "part two"},
    ]
    assert call(summarizer("sync", Server(answer))) == "part one, part two"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "error"), [(500, "InternalServerError"), (429, "RateLimitError")]
)
def test_a_provider_error_falls_back_to_the_cap(kind: Kind, status: int, error: str) -> None:
    body = {"type": "error", "error": {"type": "api_error", "message": f"provider says {status}"}}
    server = Server(body, status=status)
    result = apply(summarizer(kind, server), "apply" if kind == "sync" else "aapply")
    assert len(server.requests) == 1
    (edit,) = result.report.edits
    assert edit.step == "summarize"
    assert edit.fallback is not None
    assert edit.fallback.startswith(
        f"summarizer_error: SummarizerError: anthropic: {error} ({status}): Error code: {status}"
    )
    text = result_of(result)
    assert "tokens of run_tests output truncated" in text
    assert len(text.split()) <= 100


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_call_is_a_typed_error_with_the_sdk_error_as_cause(kind: Kind) -> None:
    s = summarizer(kind, Server(error_body(500), status=500))
    with pytest.raises(SummarizerError) as info:
        call(s)
    assert (info.value.provider, info.value.status_code) == ("anthropic", 500)
    assert isinstance(info.value.__cause__, anthropic_sdk.InternalServerError)


@pytest.mark.parametrize(
    ("stop", "message"),
    [
        ("max_tokens", "anthropic: the summary was cut at 50 tokens (max_tokens)"),
        ("refusal", "anthropic: the model refused (refusal)"),
        ("tool_use", "anthropic: the model answered with a tool call (tool_use), not a summary"),
    ],
)
def test_a_cut_or_refused_answer_is_a_typed_error(stop: str, message: str) -> None:
    s = summarizer("sync", Server(anthropic_answer("half a", stop=stop)))
    with pytest.raises(SummarizerError) as info:
        call(s)
    assert str(info.value) == message


def test_an_empty_answer_falls_back_as_empty() -> None:
    answer = anthropic_answer()
    answer["content"] = []
    result = apply(summarizer("sync", Server(answer)))
    assert [e.fallback for e in result.report.edits] == ["summarizer_empty"]


def test_an_openai_client_is_refused() -> None:
    import openai

    with pytest.raises(SummarizerError, match=r"needs a client of the anthropic SDK .* got OpenAI"):
        ctxwin.summarizers.anthropic(openai.OpenAI(api_key="k"), model="m")
