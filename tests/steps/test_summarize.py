"""summarize: the user's callback, memoized; every failure falls back to the cap."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import ctxwin
from ctxwin import Policy, SummarizerError
from ctxwin.testing import AsyncFakeSummarizer, FakeCounter, FakeSummarizer
from tests.steps.conftest import body_with_result, result_text

LONG = " ".join(f"word{i}" for i in range(400))
CONFIG = {
    "tools": {
        "search": {
            "max_tokens": 100,
            "summarize": {
                "over_tokens": 200,
                "max_tokens": 50,
                "instructions": "Keep ids.",
                "timeout": 0.3,
            },
        }
    }
}


def run(
    summarizer: Any, content: str = LONG, config: dict[str, Any] = CONFIG
) -> tuple[ctxwin.Result, str]:
    pol = Policy(config, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")
    result = pol.apply(body_with_result(content, "search"))
    return result, result_text(result)


def test_long_results_are_summarized_with_the_policy_arguments() -> None:
    fake = FakeSummarizer()
    result, text = run(fake)
    (call,) = fake.calls
    assert (call.text, call.tool, call.call_id, call.max_tokens, call.instructions) == (
        LONG,
        "search",
        "c1",
        50,
        "Keep ids.",
    )
    assert text == "[summary of search output (400 tokens)]\nsummary: " + " ".join(
        LONG.split()[:25]
    )
    (edit,) = result.report.edits
    assert (edit.step, edit.tokens_before, edit.fallback) == ("summarize", 400, None)


def test_short_results_are_not_summarized() -> None:
    fake = FakeSummarizer()
    _, text = run(fake, content="only a few words")
    assert fake.calls == []
    assert text == "only a few words"


def test_summaries_are_memoized_by_content() -> None:
    fake = FakeSummarizer()
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    first = pol.apply(body_with_result(LONG, "search")).request
    again = pol.apply(body_with_result(LONG, "search")).request
    assert first == again
    assert len(fake.calls) == 1


def test_without_a_summarizer_the_cap_applies() -> None:
    result, text = run(None)
    assert [e.step for e in result.report.edits] == ["cap"]
    assert len(text.split()) <= 100


@pytest.mark.parametrize(
    ("behaviour", "fallback"),
    [
        ("raise", "summarizer_error: RuntimeError: model unavailable"),
        ("hang", "summarizer_timeout: no answer in 0.3s"),
        ("empty", "summarizer_empty"),
        ("too_long", "summarizer_too_long: 800 > 50 tokens"),
        ("not_str", "summarizer_bad_type: returned NoneType"),
    ],
)
def test_a_failing_summarizer_falls_back_to_the_cap(behaviour: str, fallback: str) -> None:
    fake = FakeSummarizer(behaviour=behaviour, hang_for=3.0)  # type: ignore[arg-type]
    result, text = run(fake)
    (edit,) = result.report.edits
    assert (edit.step, edit.fallback) == ("summarize", fallback)
    assert len(text.split()) <= 100
    assert "tokens of search output truncated" in text
    assert [e.fallback for e in result.report.fallbacks] == [fallback]


def test_a_failure_is_not_retried_for_the_same_content() -> None:
    fake = FakeSummarizer(behaviour="raise")
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    pol.apply(body_with_result(LONG, "search"))
    pol.apply(body_with_result(LONG, "search"))
    assert len(fake.calls) == 1


def test_errors_are_never_summarized() -> None:
    fake = FakeSummarizer()
    body = {
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": LONG},
        ]
    }
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter())
    pol.apply(body)
    assert len(fake.calls) == 1  # a Responses output carries no error flag: summarized
    gem = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "search", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "search", "response": {"error": LONG}}}],
            },
        ]
    }
    fake2 = FakeSummarizer()
    result = Policy(CONFIG, summarizer=fake2, counter=FakeCounter()).apply(gem)
    assert fake2.calls == []
    assert [e.step for e in result.report.edits] == ["cap"]


def test_aapply_awaits_an_async_summarizer() -> None:
    fake = AsyncFakeSummarizer()
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    result = asyncio.run(pol.aapply(body_with_result(LONG, "search")))
    assert result_text(result).startswith("[summary of search output (400 tokens)]\nsummary: word0")
    assert len(fake.calls) == 1


def test_aapply_times_out_a_hanging_async_summarizer() -> None:
    fake = AsyncFakeSummarizer(behaviour="hang", hang_for=5.0)
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    result = asyncio.run(pol.aapply(body_with_result(LONG, "search")))
    assert result.report.edits[0].fallback == "summarizer_timeout: no answer in 0.3s"


def test_apply_runs_an_async_summarizer_when_no_loop_is_running() -> None:
    fake = AsyncFakeSummarizer()
    _, text = run(fake)
    assert text.startswith("[summary of search output")


def test_apply_inside_a_running_loop_with_an_async_summarizer_says_to_use_aapply() -> None:
    pol = Policy(
        CONFIG, summarizer=AsyncFakeSummarizer(), counter=FakeCounter(), format="openai-chat"
    )

    async def inside() -> None:
        pol.apply(body_with_result(LONG, "search"))

    with pytest.raises(SummarizerError, match=r"use `await policy.aapply\(...\)`"):
        asyncio.run(inside())
