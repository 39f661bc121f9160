"""summarize applied to its own output: a summary, or a result capped instead, passes
again untouched (no call, no edit), so a policy applied to its own output edits nothing."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin._core.model import FormatName
from ctxwin.testing import FakeCounter, FakeSummarizer, agent_body

LONG = "\n".join(f"line {i}: some text of the file with words" for i in range(600))
HITS = json.dumps({"hits": [{"path": f"src/m{i}.py", "line": i} for i in range(400)]}, indent=1)
ABOVE = {"summarize": {"over_tokens": 100, "max_tokens": 300}}
"""A summary budget above ``over_tokens``: what the cap leaves is over it still."""
CONFIGS = {
    "summary budget": {"tools": {"search": ABOVE}},
    "tool cap": {
        "tools": {
            "search": {"max_tokens": 300, "summarize": {"over_tokens": 100, "max_tokens": 50}}
        }
    },
    "recall": {"recall": True, "tools": {"search": ABOVE}},
    "head_tail": {"tools": {"search": {**ABOVE, "truncate": "head_tail"}}},
    "edit_latest false": {"tools": {"search": {**ABOVE, "edit_latest": False}}},
    "tiny cap": {"tools": {"search": {"summarize": {"over_tokens": 20, "max_tokens": 24}}}},
}


def policy(config: dict[str, Any], summarizer: Any, fmt: FormatName = "openai-chat") -> Policy:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxwin.PolicyWarning)  # no summarizer: said at load
        return Policy(config, summarizer=summarizer, counter=FakeCounter(), format=fmt)


def body(output: str, fmt: FormatName = "openai-chat") -> dict[str, Any]:
    return agent_body([[("search", {"q": "x"}, output)], [("noop", {}, "ok")]], format=fmt)


def twice(
    config: dict[str, Any], summarizer: Any, output: str = LONG, fmt: FormatName = "openai-chat"
) -> tuple[ctxwin.Result, ctxwin.Result]:
    """The policy applied to a body, then a fresh one (no memo) to its output."""
    first = policy(config, summarizer, fmt).apply(body(output, fmt))
    return first, policy(config, summarizer, fmt).apply(first.request)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("output", [LONG, HITS], ids=["text", "json"])
@pytest.mark.parametrize("summarizer", [None, "raise"], ids=["missing", "failing"])
def test_a_result_capped_instead_is_not_edited_again(
    name: str, output: str, summarizer: str | None
) -> None:
    """Without a summarizer the capped text (299 tokens, over over_tokens 100) was noted
    again (summarizer_missing, 299 -> 299); a failing one was called on it."""
    fake = FakeSummarizer(summarizer) if summarizer else None
    first, again = twice(CONFIGS[name], fake, output)
    assert [e.step for e in first.report.edits] == ["summarize"]
    assert first.report.edits[0].tokens_after < first.report.edits[0].tokens_before
    assert again.report.edits == ()
    assert again.request == first.request
    assert fake is None or len(fake.calls) == 1


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "openai-responses", "gemini"])
def test_a_summary_is_not_summarized_again(fmt: FormatName) -> None:
    """It was sent to the summarizer again, and its answer refused as not shorter."""
    fake = FakeSummarizer()
    first, again = twice(CONFIGS["summary budget"], fake, fmt=fmt)
    assert [e.fallback for e in first.report.edits] == [None]
    assert again.report.edits == ()
    assert again.request == first.request
    assert len(fake.calls) == 1


@pytest.mark.parametrize("summarizer", [None, "ok"], ids=["missing", "given"])
def test_a_placeholder_over_over_tokens_is_not_summarized(summarizer: str | None) -> None:
    """A placeholder longer than ``over_tokens`` was sent to the summarizer (or noted
    summarizer_missing) on every pass."""
    placeholder = "[{tool} output cleared ({tokens} tokens): " + "run it again. " * 40 + "]"
    config = {"tools": {"search": {**ABOVE, "placeholder": placeholder}}}
    cleared = placeholder.format(tool="search", tokens=812)
    fake = FakeSummarizer() if summarizer else None
    first = policy(config, fake).apply(body(cleared))
    assert first.report.edits == ()
    assert first.request == body(cleared)
    assert fake is None or fake.calls == []


def test_a_raw_result_quoting_a_notice_is_still_summarized() -> None:
    """The notice counts as ctxwin's only in a text the cap would leave as it is."""
    quoted = LONG + "\n[... 12 of 40 tokens of search output truncated ...]"
    fake = FakeSummarizer()
    first = policy(CONFIGS["summary budget"], fake).apply(body(quoted))
    assert [(e.step, e.fallback) for e in first.report.edits] == [("summarize", None)]
    assert [c.text for c in fake.calls] == [quoted]


def test_a_raw_result_starting_with_a_summary_header_is_still_summarized() -> None:
    """A summary this step wrote is shorter than the result its header counts."""
    raw = "[summary of search output (12 tokens)]\n" + LONG
    fake = FakeSummarizer()
    first = policy(CONFIGS["summary budget"], fake).apply(body(raw))
    assert [(e.step, e.fallback) for e in first.report.edits] == [("summarize", None)]
    assert [c.text for c in fake.calls] == [raw]


def test_a_raw_result_starting_with_a_header_of_a_huge_count_is_still_summarized() -> None:
    """Tool output is untrusted: a count of over 4,300 digits made ``int`` raise a bare
    ValueError out of apply (on every later request too)."""
    raw = "[summary of search output (" + "9" * 5000 + " tokens)]\n" + LONG
    fake = FakeSummarizer()
    first = policy(CONFIGS["summary budget"], fake).apply(body(raw))
    assert [(e.step, e.fallback) for e in first.report.edits] == [("summarize", None)]
    assert [c.text for c in fake.calls] == [raw]


def test_a_result_under_the_cap_without_a_notice_is_still_noted() -> None:
    """Over over_tokens, under the cap, never capped: the report says it was not summarized."""
    short = "\n".join(LONG.split("\n")[:20])
    first, again = twice(CONFIGS["summary budget"], None, short)
    expected = [("summarize", "summarizer_missing: none was passed to the policy")]
    assert [(e.step, e.fallback) for e in first.report.edits] == expected
    assert [(e.step, e.fallback) for e in again.report.edits] == expected
    assert again.request == first.request


RECALL_BUDGET = {
    "recall": True,
    "tools": {"search": {"summarize": {"over_tokens": 500, "max_tokens": 500}}},
}
RESULT = "w " * 520
NOTE = '[recall("r-0123456789abcdef") returns the whole search result; lines or grep take part.]'
"""The recall note as the summarize step's result ends with it: 11 words."""


def test_a_summary_not_shorter_with_its_recall_note_passes_again_with_its_handle() -> None:
    """The note was measured after the check: 509 tokens of summary went out as 520 for a
    520-token result, and applied again it was summarized again, its new handle giving
    back the first summary, not the original."""
    calls: list[str] = []

    def summarizer(text: str, **_: Any) -> str:
        calls.append(text)
        return " ".join(["s"] * 503)

    pol = policy(RECALL_BUDGET, summarizer)
    first = pol.apply(body(RESULT))
    again = pol.apply(first.request)
    assert first.report.edits[0].tokens_after < first.report.edits[0].tokens_before
    assert again.report.edits == ()
    assert again.request == first.request
    assert len(calls) == 1
    found = re.search(r'recall\(\\"(r-[0-9a-f]+)\\"\)', json.dumps(again.request))
    assert found is not None
    assert pol.recall(found[1]).text == RESULT


def test_a_summary_sent_longer_with_its_recall_note_is_not_summarized_again() -> None:
    """Such a summary, sent before the note was measured, is the step's own all the same
    (its text without the note is shorter than the count in its header): summarized again,
    its handle was lost."""
    sent = "[summary of search output (520 tokens)]\n" + " ".join(["s"] * 503) + "\n" + NOTE
    fake = FakeSummarizer()
    result = policy(RECALL_BUDGET, fake).apply(body(sent))
    assert result.report.edits == ()
    assert result.request == body(sent)
    assert fake.calls == []
