"""summarize: where no summary is had, the result is capped the same way and the edit says
why: no summarizer, a failing one, or a "summary" that is not shorter than the result."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin.testing import FakeCounter, FakeSummarizer
from tests.steps.conftest import body_with_result, result_text

LONG = " ".join(f"word{i}" for i in range(3000))
NO_CAP = {"tools": {"search": {"summarize": {"over_tokens": 100, "max_tokens": 50}}}}
"""The docs' shape: a summarize rule, no max_tokens of the tool's own."""
CAPPED = {"tools": {"search": {**NO_CAP["tools"]["search"], "max_tokens": 200}}}
MISSING = "summarizer_missing: none was passed to the policy"


def apply(config: dict[str, Any], summarizer: Any, content: str = LONG) -> ctxwin.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxwin.PolicyWarning)  # no summarizer: said at load
        pol = Policy(config, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")
    return pol.apply(body_with_result(content, "search"))


def test_without_a_summarizer_a_tool_without_max_tokens_is_capped_at_the_summary_budget() -> None:
    """It was sent whole (3,000 tokens) while the warning said it was capped."""
    result = apply(NO_CAP, None)
    (edit,) = result.report.edits
    assert (edit.step, edit.fallback, edit.tokens_before) == ("summarize", MISSING, 3000)
    assert edit.tokens_after <= 50
    assert len(result_text(result).split()) <= 50
    assert "tokens of search output truncated" in result_text(result)


@pytest.mark.parametrize("config", [NO_CAP, CAPPED], ids=["no max_tokens", "max_tokens"])
def test_no_summarizer_and_a_failing_one_send_the_same(config: dict[str, Any]) -> None:
    missing = apply(config, None)
    failing = apply(config, FakeSummarizer("raise"))
    assert missing.request == failing.request
    assert [(e.step, e.tokens_after) for e in missing.report.edits] == [
        (e.step, e.tokens_after) for e in failing.report.edits
    ]
    assert [e.fallback for e in failing.report.edits] == [
        "summarizer_error: RuntimeError: model unavailable"
    ]


def test_without_a_summarizer_a_result_under_over_tokens_is_left_alone() -> None:
    result = apply(NO_CAP, None, content="only a few words")
    assert result.report.edits == ()
    assert result_text(result) == "only a few words"


def test_the_warning_and_the_note_say_what_is_done_without_a_summarizer() -> None:
    with pytest.warns(ctxwin.PolicyWarning) as caught:
        pol = Policy(NO_CAP, counter=FakeCounter(), format="openai-chat")
    (warning,) = caught
    assert str(warning.message).endswith(
        "the summarize rules of search will not run: no summarizer was passed "
        "(load_policy(..., summarizer=...)); their results over over_tokens are capped "
        "instead, at the tool's max_tokens, else summarize.max_tokens"
    )
    assert pol.apply(body_with_result(LONG, "search")).report.notes == (
        "summarize rules for search were not applied: no summarizer was passed to the policy "
        "(results over over_tokens are capped at the tool's max_tokens, else "
        "summarize.max_tokens: fallback summarizer_missing)",
    )


# ------------------------------------------------------------------ not shorter


def words(n: int) -> Any:
    """A summarizer answering ``n`` words (FakeCounter: one token each), whatever it is given."""

    def summarizer(text: str, **_: Any) -> str:
        return " ".join(["s"] * n)

    return summarizer


SAME_BUDGET = {"tools": {"search": {"summarize": {"over_tokens": 500, "max_tokens": 500}}}}
RESULT = "w " * 520
HEADER = 6
"""The words of ``[summary of search output (520 tokens)]``."""


def test_a_summary_longer_than_the_result_is_refused() -> None:
    """Within 1.1 x max_tokens, but 551 tokens for a 520-token result: the cap instead."""
    result = apply(SAME_BUDGET, words(545), RESULT)
    (edit,) = result.report.edits
    assert (edit.step, edit.fallback) == (
        "summarize",
        f"summarizer_not_shorter: {545 + HEADER} >= 520 tokens",
    )
    assert edit.tokens_after <= 500
    assert result.report.saved > 0
    assert "tokens of search output truncated" in result_text(result)


def test_a_summary_as_long_as_the_result_is_refused() -> None:
    result = apply(SAME_BUDGET, words(520 - HEADER), RESULT)
    (edit,) = result.report.edits
    assert edit.fallback == "summarizer_not_shorter: 520 >= 520 tokens"


def test_a_summary_one_token_shorter_is_sent() -> None:
    result = apply(SAME_BUDGET, words(519 - HEADER), RESULT)
    (edit,) = result.report.edits
    assert (edit.fallback, edit.tokens_after) == (None, 519)
    assert result_text(result).startswith("[summary of search output (520 tokens)]\ns s")


def test_a_refused_summary_stays_refused_in_later_requests() -> None:
    """The summary is memoized; the refusal is made again, the same, from it."""
    calls: list[str] = []

    def wordy(text: str, **_: Any) -> str:
        calls.append(text)
        return " ".join(["s"] * 545)

    pol = Policy(SAME_BUDGET, summarizer=wordy, counter=FakeCounter(), format="openai-chat")
    first = pol.apply(body_with_result(RESULT, "search"))
    again = pol.apply(body_with_result(RESULT, "search"))
    assert first.request == again.request
    assert len(calls) == 1
    assert [e.fallback for e in again.report.edits] == [
        f"summarizer_not_shorter: {545 + HEADER} >= 520 tokens"
    ]


RECALL = {"recall": True, **SAME_BUDGET}
NOTE = 11
"""The words of the recall note: ``[recall("r-...") returns the whole search result; ...]``."""


def test_a_summary_not_shorter_with_its_recall_note_is_refused() -> None:
    """The note was added after the check: 509 tokens of summary went out as 520 for a
    520-token result, the report listing an edit that saved nothing."""
    result = apply(RECALL, words(509 - HEADER), RESULT)
    (edit,) = result.report.edits
    assert (edit.step, edit.fallback) == ("summarize", "summarizer_not_shorter: 520 >= 520 tokens")
    assert edit.tokens_after < edit.tokens_before
    assert "tokens of search output truncated" in result_text(result)


def test_a_summary_shorter_with_its_recall_note_is_sent_with_it() -> None:
    result = apply(RECALL, words(508 - HEADER), RESULT)
    (edit,) = result.report.edits
    assert (edit.fallback, edit.tokens_after) == (None, 508 + NOTE)
    assert result_text(result).startswith("[summary of search output (520 tokens)]\ns s")
    assert result_text(result).endswith(
        "returns the whole search result; lines or grep take part.]"
    )
