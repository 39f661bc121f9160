"""ctxwin.summarizers.openai on the real SDK client over a fake transport: the request it
sends, and the summarize step's fallback when the provider fails."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import openai as openai_sdk
import pytest

import ctxwin.summarizers
from ctxwin import SummarizerError
from ctxwin.steps._names import summarizer_name
from ctxwin.summarizers import DEFAULT_PROMPT, AsyncModelSummarizer, ModelSummarizer
from tests.summarizers.helpers import (
    KINDS,
    LONG,
    Kind,
    Server,
    apply,
    call,
    error_body,
    openai_answer,
    openai_client,
    result_of,
)

HEADER = "[summary of run_tests output ({n} tokens)]\n"


def summarizer(kind: Kind, server: Server, **kw: Any) -> Any:
    return ctxwin.summarizers.openai(openai_client(kind, server), model="gpt-test", **kw)


def test_the_sync_and_async_summarizers_of_one_model_share_summaries_by_name() -> None:
    server = Server(openai_answer())
    sync, async_ = (summarizer(kind, server) for kind in ("sync", "async"))
    other = ctxwin.summarizers.openai(openai_client("sync", server), model="gpt-other")
    assert summarizer_name(sync) == summarizer_name(async_)
    assert summarizer_name(sync).startswith("openai:gpt-test:")
    assert summarizer_name(other).startswith("openai:gpt-other:")


def test_summarizers_of_one_model_that_ask_differently_do_not_share_summaries() -> None:
    """Through a shared store, a summary written under one prompt (or limit, or options)
    was handed to a summarizer of the same model asking with another."""
    server = Server(openai_answer())
    plain = summarizer("sync", server)
    assert summarizer_name(plain) == summarizer_name(summarizer("sync", server))
    for other in (
        summarizer("sync", server, prompt="Summarize in French."),
        summarizer("sync", server, max_tokens=100),
        summarizer("sync", server, options={"temperature": 0}),
    ):
        assert summarizer_name(other) != summarizer_name(plain)


@pytest.mark.parametrize("kind", KINDS)
def test_the_client_kind_gives_the_summarizer_kind(kind: Kind) -> None:
    s = summarizer(kind, Server(openai_answer()))
    assert type(s) is (ModelSummarizer if kind == "sync" else AsyncModelSummarizer)
    assert repr(s).endswith("(openai, model='gpt-test')")


@pytest.mark.parametrize("kind", KINDS)
def test_the_request_is_one_chat_completion_with_the_prompt_and_the_output(kind: Kind) -> None:
    server = Server(openai_answer())
    result = apply(summarizer(kind, server), "apply" if kind == "sync" else "aapply")
    (request,) = server.requests
    assert (request.method, str(request.url)) == (
        "POST",
        "https://api.openai.com/v1/chat/completions",
    )
    assert request.headers["authorization"] == "Bearer sk-test"
    assert server.sent == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": DEFAULT_PROMPT},
            {
                "role": "user",
                "content": "Summarize the output of the tool `run_tests` (call c1) in at most "
                "50 tokens.\n\nInstructions for this tool:\nName every failing module.\n\n"
                f"<tool_output>\n{LONG}\n</tool_output>",
            },
        ],
        "max_completion_tokens": 50,
    }
    assert result_of(result) == HEADER.format(n=len(LONG.split())) + "summary: 60 TypeErrors"
    (edit,) = result.report.edits
    assert (edit.step, edit.fallback) == ("summarize", None)


def test_prompt_limit_and_options_are_the_callers() -> None:
    server = Server(openai_answer())
    s = summarizer(
        "sync",
        server,
        prompt="Be brief.",
        max_tokens=400,
        limit_param="max_tokens",
        options={"temperature": 0, "reasoning_effort": "minimal"},
    )
    call(s, "out", call_id=None)
    sent = server.sent
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["messages"][1]["content"] == (
        "Summarize the output of the tool `run_tests` in at most 50 tokens.\n\n"
        "<tool_output>\nout\n</tool_output>"
    )
    assert (sent["max_tokens"], sent["temperature"], sent["reasoning_effort"]) == (
        400,
        0,
        "minimal",
    )
    assert "max_completion_tokens" not in sent


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "error"), [(500, "InternalServerError"), (429, "RateLimitError")]
)
def test_a_provider_error_falls_back_to_the_cap(kind: Kind, status: int, error: str) -> None:
    server = Server(error_body(status), status=status)
    result = apply(summarizer(kind, server), "apply" if kind == "sync" else "aapply")
    assert len(server.requests) == 1  # max_retries=0: one try, no retry storm
    (edit,) = result.report.edits
    assert edit.step == "summarize"
    assert edit.fallback == (
        f"summarizer_error: SummarizerError: openai: {error} ({status}): "
        f"Error code: {status} - provider says {status}"
    )
    text = result_of(result)
    assert "tokens of run_tests output truncated" in text
    assert len(text.split()) <= 100


def test_a_sync_client_serves_aapply_too() -> None:
    server = Server(openai_answer())
    result = apply(summarizer("sync", server), "aapply")
    assert result_of(result).endswith("summary: 60 TypeErrors")


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_call_is_a_typed_error_with_the_sdk_error_as_cause(kind: Kind) -> None:
    s = summarizer(kind, Server(error_body(429), status=429))
    with pytest.raises(SummarizerError) as info:
        call(s)
    assert (info.value.provider, info.value.status_code) == ("openai", 429)
    assert isinstance(info.value.__cause__, openai_sdk.RateLimitError)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            openai_answer("half a summ", finish="length"),
            "openai: the summary was cut at 50 tokens (max_completion_tokens); a reasoning "
            "model may need a larger max_tokens=",
        ),
        (  # an OpenAI-compatible server (Mistral) at the model's context window
            openai_answer("half a summ", finish="model_length"),
            "openai: the summary was cut at the model's context window (model_length)",
        ),
        (  # Mistral: the generation broken off
            openai_answer("half a summ", finish="error"),
            "openai: the model stopped before finishing (error)",
        ),
        (
            openai_answer(None, refusal="I can't help"),
            "openai: no text in the answer (refused: I can't help)",
        ),
        (  # a model given tools (options=) may call one: its preamble is no summary
            openai_answer(
                "Let me re-run the failing tests.",
                finish="tool_calls",
                tool_calls=[
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "run_tests", "arguments": "{}"},
                    }
                ],
            ),
            "openai: the model answered with a tool call (tool_calls), not a summary",
        ),
    ],
)
def test_a_cut_or_refused_answer_is_a_typed_error(answer: dict[str, Any], message: str) -> None:
    s = summarizer("sync", Server(answer))
    with pytest.raises(SummarizerError) as info:
        call(s)
    assert str(info.value) == message


def parts_answer(content: Any) -> dict[str, Any]:
    """An answer whose message ``content`` is ``content`` as a server sent it."""
    answer = openai_answer()
    answer["choices"][0]["message"]["content"] = content
    return answer


THINKING = {"type": "thinking", "thinking": [{"type": "text", "text": "user wants a list"}]}
"""A reasoning part of Mistral's reasoning models (magistral), before the answer's text."""


@pytest.mark.parametrize(
    "content",
    [
        [THINKING, {"type": "text", "text": "60 TypeErrors in module_0..59"}],
        [{"type": "text", "text": "60 TypeErrors "}, {"type": "text", "text": "in module_0..59"}],
    ],
    ids=["thinking-then-text", "two-text-parts"],
)
def test_an_answer_in_parts_is_read_as_its_text_parts(content: list[Any]) -> None:
    """An OpenAI-compatible server (Mistral) may answer ``content`` as a list of parts: the
    summary was the Python repr of the list, reasoning included."""
    s = summarizer("sync", Server(parts_answer(content)))
    assert call(s) == "60 TypeErrors in module_0..59"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ([THINKING], "its content parts hold no text: thinking"),
        ({"text": "60 TypeErrors"}, "its content is dict, not text"),
        (60, "its content is int, not text"),
    ],
    ids=["only-thinking", "dict", "number"],
)
def test_an_answer_of_parts_without_text_is_a_typed_error(content: Any, why: str) -> None:
    result = apply(summarizer("sync", Server(parts_answer(content))))
    assert [e.fallback for e in result.report.edits] == [
        f"summarizer_error: SummarizerError: openai: the answer cannot be read ({why})"
    ]
    assert "tokens of run_tests output truncated" in result_of(result)


def test_a_cut_answer_falls_back_under_a_policy() -> None:
    result = apply(summarizer("sync", Server(openai_answer("half", finish="length"))))
    (edit,) = result.report.edits
    assert edit.fallback is not None
    assert edit.fallback.startswith(
        "summarizer_error: SummarizerError: openai: the summary was cut"
    )


def test_a_connection_error_is_typed_too() -> None:
    def down(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("no route", request=request)

    client = openai_sdk.OpenAI(
        api_key="k", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(down))
    )
    with pytest.raises(
        SummarizerError, match=r"^openai: APIConnectionError: Connection error"
    ) as info:
        call(ctxwin.summarizers.openai(client, model="m"))
    assert info.value.status_code is None


@pytest.mark.parametrize(
    ("client", "kw", "message"),
    [
        (
            object(),
            {},
            "ctxwin.summarizers.openai needs a client of the openai SDK (OpenAI, "
            "AsyncOpenAI...), got object",
        ),
        (None, {"model": ""}, "ctxwin.summarizers.openai: model must be a model name, got ''"),
        (
            None,
            {"max_tokens": 0},
            "ctxwin.summarizers.openai: max_tokens must be a positive int, got 0",
        ),
    ],
)
def test_bad_arguments_are_refused_when_built(
    client: Any, kw: dict[str, Any], message: str
) -> None:
    client = client if client is not None else openai_client("sync", Server(openai_answer()))
    with pytest.raises(SummarizerError) as info:
        ctxwin.summarizers.openai(client, **{"model": "m", **kw})
    assert str(info.value) == message


def test_azure_clients_are_openai_clients() -> None:
    client = openai_sdk.AsyncAzureOpenAI(
        api_key="k", api_version="2024-10-21", azure_endpoint="https://x.openai.azure.com"
    )
    assert isinstance(ctxwin.summarizers.openai(client, model="m"), AsyncModelSummarizer)
    asyncio.run(client.close())
