"""The report tells the truth about the body it comes with: totals, tools, rounds, edits."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin._report.text import reports_text
from ctxwin.testing import FakeSummarizer, agent_body
from tests.conftest import CHAINED_WITHOUT_ID, corpus_params, load

FORMATS = ("openai-chat", "anthropic", "openai-responses", "gemini")

POLICIES: dict[str, dict[str, Any]] = {
    "caps": {"tools": {"*": {"max_tokens": 120}}},
    "select": {"tools": {"search": {"select": "hits[].path"}, "*": {"max_tokens": 200}}},
    "summarize": {"tools": {"read": {"summarize": {"over_tokens": 100, "max_tokens": 40}}}},
    "window": {
        "context_window": 3000,
        "window": {"strategy": "threshold", "keep_rounds": 2, "clear_tool_inputs": True},
    },
    "drop": {"context_window": 1500, "window": {"strategy": "threshold", "keep_rounds": 1}},
}


def _rounds(n: int) -> list[list[tuple[str, dict[str, Any], str]]]:
    hits = '{"hits": [' + ",".join(f'{{"path": "f{i}.py", "line": {i}}}' for i in range(30))
    return [
        [
            ("read", {"path": f"/a/rather/long/path/to/the/file/number/{r}.py"}, "code " * 300),
            ("search", {"q": f"q{r}"}, hits + "]}"),
        ]
        for r in range(n)
    ]


def _fresh_count(body: object, fmt: str) -> int:
    """The body counted by a policy that edits nothing."""
    counter = ctxwin.Policy({"context_window": 10**7}, steps=[])
    return counter.apply(copy.deepcopy(body), fmt).report.tokens_before


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_totals_and_edits_agree_with_the_bodies(fmt: str, name: str) -> None:
    """Before/after are the bodies' own counts; the edits' savings add up to the difference."""
    body = agent_body(_rounds(8), format=fmt)  # type: ignore[arg-type]
    result = ctxwin.Policy(POLICIES[name], summarizer=FakeSummarizer()).apply(body, fmt)
    report = result.report
    assert report.tokens_before == _fresh_count(body, fmt)
    assert report.tokens_after == _fresh_count(result.request, fmt)
    assert sum(e.saved for e in report.edits) == report.saved
    assert report.edits


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_memoized_apply_reports_as_a_fresh_policy(fmt: str) -> None:
    policy = ctxwin.Policy(POLICIES["window"])
    for n in (5, 6, 7):
        body = agent_body(_rounds(n), format=fmt)  # type: ignore[arg-type]
        again = policy.apply(body, fmt).report
        fresh = ctxwin.Policy(POLICIES["window"]).apply(copy.deepcopy(body), fmt).report
        assert again.to_dict() == fresh.to_dict()


def _reasoning_body(rounds: int) -> dict[str, Any]:
    """OpenAI Responses: each round a reasoning item, a call and a short result."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "Fix it."}]
    for r in range(rounds):
        thought = f"step {r}: " + "what to look at next " * 40
        items += [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": thought}]},
            {"type": "function_call", "call_id": f"c{r}", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{r}", "output": f"a{r}.py"},
        ]
    return {"instructions": "You are an agent.", "input": items}


def test_a_round_that_lost_its_reasoning_item_is_edited_not_kept() -> None:
    """``clear_reasoning`` drops a round's reasoning item and keeps its call and result:
    the round's tokens fell, so its state is ``edited``."""
    policy = ctxwin.Policy(
        {
            "context_window": 2000,
            "window": {"strategy": "threshold", "keep_rounds": 1, "clear_reasoning": True},
            "tools": {"ls": {"window": "keep"}},
        }
    )
    report = policy.apply(_reasoning_body(8)).report
    cleared = {e.message_index for e in report.edits if e.tool == "(reasoning)"}
    assert cleared
    for rnd in report.rounds:
        if rnd.message_index in cleared:
            assert rnd.tokens_after < rnd.tokens_before
            assert rnd.state == "edited"
        else:
            assert rnd.state == "kept"
            assert rnd.tokens_after == rnd.tokens_before


def test_the_window_share_is_counted_as_over_budget_is_under_calibration() -> None:
    """Once usage taught that the provider counts 1.55x ctxwin's tokens, the share of the
    window used is the provider's, as ``over_budget`` is: in every rendering."""
    policy = ctxwin.Policy({"context_window": 3000, "window": {"keep_rounds": 5}})
    first = policy.apply(agent_body(_rounds(1)))
    policy.observe(first, {"prompt_tokens": round(first.tokens * 1.55)})
    report = policy.apply(agent_body(_rounds(2))).report
    assert report.calibration > 1.0
    share = report.tokens_after * report.calibration / report.context_window
    assert report.to_dict()["tokens"]["window_share"] == round(share, 4)
    assert f"({share:.1%} used)" in report.to_text()
    assert f"{share:.1%}" in reports_text([("a.json", report)])


def test_a_cleared_call_s_arguments_are_reported_at_the_call() -> None:
    """``clear_tool_inputs``: the edit names the message that holds the call, and the
    arguments' tokens before and after (they were shortened, not removed)."""
    rounds = [[("write", {"path": "a.py", "text": "x = 1\n" * 200}, "ok " * 300)] for _ in range(4)]
    body = agent_body(rounds, format="openai-chat")
    config = {
        "context_window": 2000,
        "window": {"strategy": "threshold", "keep_rounds": 1, "clear_tool_inputs": True},
    }
    result = ctxwin.Policy(config).apply(body)
    edits = [e for e in result.report.edits if e.step == "clear_input"]
    assert edits
    sent = result.request["messages"]
    for e in edits:
        assert e.message_index is not None
        held = sent[e.message_index].get("tool_calls") or []
        assert [c["id"] for c in held] == [e.call_id]
        assert e.tokens_after > 0  # what is left: "[cleared]" in place of the long values
        assert e.saved == e.tokens_before - e.tokens_after > 0


@pytest.mark.parametrize("path", corpus_params("openai-responses"))
@pytest.mark.parametrize(
    "config",
    [
        {"context_window": 30000, "window": {"keep_rounds": 3}},
        {"context_window": 8000, "window": {"keep_rounds": 2, "clear_reasoning": True}},
    ],
    ids=["drops", "clear-reasoning"],
)
def test_edits_save_what_the_request_lost_when_earlier_turns_reasoning_goes_unread(
    path: Path | None, config: dict[str, Any]
) -> None:
    """OpenAI reads no reasoning of turns before the user's latest message: an edit that
    took such an item out (cleared, or dropped with its round) before the user spoke saves
    nothing once they have (codex-00 at 30k: the edits said 85,280 saved, the request 76,333)."""
    assert path is not None
    if path.stem in CHAINED_WITHOUT_ID:
        pytest.skip("a chained request without its previous_response_id: nothing to send")
    report = ctxwin.Policy(config).apply(load(path)).report
    assert sum(e.saved for e in report.edits) == report.saved


@pytest.mark.parametrize("breakpoints", ["keep", "auto"])
def test_a_report_read_late_counts_the_envelope_as_it_was_sent(breakpoints: str) -> None:
    """The report is built when first read; the system prompt and the tool list are the
    caller's own objects, and one changed in place after the apply (a tool appended for the
    next request) changed the report's totals, shares and breakpoints: they count the
    request as it was sent."""
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 600))] for r in range(6)]
    reports = []
    for change in (False, True):
        body = agent_body(uses, format="anthropic")
        body["tools"] = [{"name": "read", "description": "d " * 50, "input_schema": {}}]
        policy = ctxwin.Policy(
            {"context_window": 3000, "window": {"trigger": 0.6, "target": 0.3}}
            | {"cache_breakpoints": breakpoints}
        )
        result = policy.apply(body)
        if change:
            body["tools"].append({"name": "y", "description": "e " * 300, "input_schema": {}})
            body["system"] = "changed " * 100
        reports.append(result.report.to_dict())
    assert reports[1]["tokens"] == reports[0]["tokens"]
    assert reports[1] == reports[0]
    assert reports[0]["tokens"]["saved"] > 0
