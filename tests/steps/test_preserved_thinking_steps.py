"""Preserved thinking and the steps before the window: a result that a request sent whole
and a later one sends edited (``edit_latest: false``: capped, selected or summarized once
it leaves the latest round) changes the prefix of the thinking produced after it; on a
model that checks it (``thinking_binding: prefix``) the window removes that thinking, by
the same rule as for its own changes, and no request fails the check."""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import Any

import pytest

import ctxwin
from ctxwin.testing import FakeSummarizer
from tests.steps.test_preserved_thinking import (
    POLICY,
    SYSTEM,
    TOOLS,
    PrefixCheckingApi,
    _prefixes,
    _reply,
    _result,
    _turn_opener,
)

CAPPED: dict[str, Any] = {**POLICY, "tools": {"*": {"max_tokens": 300, "edit_latest": False}}}
"""Results sent whole while in the latest round, capped at 300 tokens once they leave it."""

SUMMARIZED: dict[str, Any] = {
    **POLICY,
    "tools": {
        "*": {
            "max_tokens": 300,
            "edit_latest": False,
            "summarize": {"over_tokens": 250, "max_tokens": 120, "timeout": 0.3},
        }
    },
}
"""The same, summarized (over 250 tokens) once they leave it, capped when no summary
comes in time."""


class _Loop:
    """A growing Fable 5.1 tool loop with thinking (a new task every 9 replies), each
    request edited by one policy and checked as the API checks it."""

    def __init__(self, config: dict[str, Any], model: str = "claude-fable-5-1", **kw: Any):
        self.config, self.model, self.kw = config, model, kw
        self.policy = ctxwin.load_policy(config, **kw)
        self.api = PrefixCheckingApi()
        self.history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
        self.requests: list[dict[str, Any]] = []
        self.failures: list[list[str]] = []
        self.openers: list[str | None] = []
        self.results: list[ctxwin.Result] = []

    def body(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": 4096,
            "system": SYSTEM,
            "tools": TOOLS,
            "messages": copy.deepcopy(self.history),
        }

    def run(self, steps: int, *, fresh: bool = True) -> _Loop:
        """``steps`` requests; ``fresh``: each equal to a fresh policy's."""
        for step in range(steps):
            result = self.policy.apply(self.body(), format="anthropic")
            request = result.request
            assert ctxwin.check(request) == []
            if fresh:
                again = ctxwin.load_policy(self.config, **self.kw)
                assert again.apply(self.body(), format="anthropic").request == request, step
            turn_end = step % 9 == 8
            reply = _reply(step, turn_end)
            self.failures.append(self.api.send(request, reply))
            self.requests.append(request)
            self.results.append(result)
            self.openers.append(_turn_opener(request))
            self.history.append(reply)
            nxt = f"Now the next task ({step})." if turn_end else [_result(step)]
            self.history.append({"role": "user", "content": nxt})
        return self

    def removed(self) -> int:
        """Thinking blocks the requests left out, all told."""
        return sum(
            sum(m["role"] == "assistant" for m in r["messages"]) - len(_prefixes(r))
            for r in self.requests
        )


def _edited_after_sent(loop: _Loop, step: str) -> int:
    """Results of the loop's requests that an earlier request sent whole (step ``step``)."""
    return sum(
        1
        for result in loop.results
        for e in result.report.edits
        if e.step == step and e.tokens_after < e.tokens_before
    )


@pytest.mark.parametrize("window", [200_000, 6000])
def test_a_result_capped_once_it_leaves_the_latest_round_sends_no_stale_thinking(
    window: int,
) -> None:
    """``edit_latest: false`` with a cap: each result is read whole, then capped a request
    later; the thinking produced after it is removed (200,000: no clearing of the window's
    own; 6,000: with its clearings and drops, which the ceiling forces mid-turn),
    consistently (equal to a fresh policy's); at 200,000 the current turn keeps its
    opening thinking."""
    loop = _Loop({**CAPPED, "context_window": window}).run(30)
    assert _edited_after_sent(loop, "cap") > 0
    assert loop.removed() > 0
    assert [f for f in loop.failures if f] == []
    if window == 200_000:
        assert all(o in (None, "thinking") for o in loop.openers)


def test_a_result_leaving_the_latest_round_before_the_user_spoke_waits_for_the_next_task() -> None:
    """The round that ended a task leaves the latest round when the next task's first call
    comes, whose thinking opens the current turn: the result stays whole until the user's
    next message, then is capped (and the thinking after it removed)."""
    loop = _Loop({**CAPPED, "context_window": 200_000}).run(20, fresh=False)
    last_of_task = "toolu_7"  # step 8 answers in text, then the user asks for the next task

    def whole(request: dict[str, Any]) -> bool:
        for msg in request["messages"]:
            for block in msg["content"] if isinstance(msg["content"], list) else []:
                if block.get("tool_use_id") == last_of_task:
                    return len(json.dumps(block)) > 1000  # whole: 1,565 characters
        raise AssertionError("the result is gone")

    kept = [whole(r) for r in loop.requests[8:]]
    # steps 8..17 (the next task's turn, opened at step 9) whole; capped from step 18 on
    assert kept == [True] * 10 + [False] * 2
    assert [f for f in loop.failures if f] == []


class _LateOnce(FakeSummarizer):
    """Answers each text a while after ctxwin stopped waiting for it the first time it is
    asked (too late: the cap applies), at once after that."""

    def __init__(self, late_for: float) -> None:
        super().__init__()
        self.late_for = late_for
        self.asked: set[str] = set()
        self.lock = threading.Lock()

    def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str:
        with self.lock:
            first = text not in self.asked
            self.asked.add(text)
        if first:
            time.sleep(self.late_for)
        return super().__call__(
            text, tool=tool, call_id=call_id, max_tokens=max_tokens, instructions=instructions
        )


def test_a_result_summarized_once_it_leaves_the_latest_round_sends_no_stale_thinking() -> None:
    """``edit_latest: false`` with a summary: the summary replaces a result the model read
    whole a request before; the thinking produced after it is removed."""
    loop = _Loop(SUMMARIZED, summarizer=FakeSummarizer()).run(20)
    assert _edited_after_sent(loop, "summarize") > 0
    assert loop.removed() > 0
    assert [f for f in loop.failures if f] == []
    assert all(o in (None, "thinking") for o in loop.openers)


def test_a_summary_that_comes_too_late_leaves_the_cap_and_no_stale_thinking() -> None:
    """The summarizer answers after ``summarize.timeout`` (its answer is refused and the cap
    applies, memoized: the result reads the same in every later request, even though the
    summarizer would answer in time now). The capped result replaced one the model read
    whole: the thinking after it goes. (A fresh policy would ask again and get the summary
    in time: where the summarizer's timing decides, the policy that served the conversation
    keeps what it sent, and a fresh one cannot know it.)"""
    late = _LateOnce(0.6)
    loop = _Loop(SUMMARIZED, summarizer=late).run(8, fresh=False)
    fallbacks = {
        e.call_id
        for r in loop.results
        for e in r.report.edits
        if e.fallback and e.fallback.startswith("summarizer_timeout")
    }
    assert fallbacks, "the summarizer was never late: the test tests nothing"
    assert loop.removed() > 0
    assert [f for f in loop.failures if f] == []
    again = loop.policy.apply(loop.body(), format="anthropic")
    fresh = ctxwin.load_policy(SUMMARIZED, summarizer=late).apply(loop.body(), format="anthropic")
    assert fallbacks <= {e.call_id for e in again.report.edits if e.fallback}
    assert fallbacks.isdisjoint(e.call_id for e in fresh.report.edits if e.fallback)


def test_a_summary_too_late_at_entry_is_never_applied_later() -> None:
    """With results edited where they enter, a summary that comes too late leaves the cap
    for good: no later request changes what the model read (this holds on the code before
    too: it is what the README promises)."""
    tools = {"*": {**SUMMARIZED["tools"]["*"], "edit_latest": True}}
    loop = _Loop({**SUMMARIZED, "tools": tools}, summarizer=_LateOnce(0.6)).run(4, fresh=False)
    again = loop.policy.apply(loop.body(), format="anthropic")
    assert all(e.fallback for e in again.report.edits if e.step == "summarize")
    assert len([e for e in again.report.edits if e.step == "summarize"]) == 4
    assert loop.removed() == 0
    assert [f for f in loop.failures if f] == []


def test_a_model_without_the_check_removes_no_thinking_under_edit_latest_false() -> None:
    """claude-opus-4-5 runs no prefix check: under ``edit_latest: false`` its results are
    whole in the latest round only (capped from the next round's first message on, equal to
    a fresh policy's) and no thinking is removed."""
    loop = _Loop({**CAPPED, "context_window": 30000}, model="claude-opus-4-5").run(30)
    assert any(loop.failures), "nothing was edited after it was sent: the test tests nothing"
    assert loop.removed() == 0
    for step, request in enumerate(loop.requests):
        whole = {
            block["tool_use_id"]
            for msg in request["messages"]
            for block in (msg["content"] if isinstance(msg["content"], list) else [])
            if block.get("type") == "tool_result" and len(block["content"]) > 1000
        }
        calls = [j for j in range(step) if j % 9 != 8]  # step 8, 17...: an answer, no call
        assert whole == {f"toolu_{j}" for j in calls[-1:]}, step  # the latest round's only


def test_a_policy_that_saw_drop_block_holds_results_as_a_fresh_one_without_it() -> None:
    """Whether the model checks the prefix decides when a result of ``edit_latest: false``
    is edited (it waits for the user's next message rather than invalidate the current
    turn's opening thinking), so the memo is kept per answer: a policy that served the
    conversation with ``drop_block`` and then without returns what a fresh policy does."""
    binding = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    config = {**CAPPED, "context_window": 200_000}
    loop = _Loop(config)
    for step in range(12):  # the next task's turn opens at step 9, after toolu_7
        asked = {**loop.body(), "thinking": binding}
        loop.policy.apply(asked, format="anthropic")
        loop.history.append(_reply(step, step % 9 == 8))
        nxt = f"Now the next task ({step})." if step % 9 == 8 else [_result(step)]
        loop.history.append({"role": "user", "content": nxt})
    fresh = ctxwin.load_policy(config).apply(loop.body(), format="anthropic")
    dropping = ctxwin.load_policy(config).apply({**loop.body(), "thinking": binding})
    assert dropping.request["messages"] != fresh.request["messages"], "nothing held"
    assert loop.policy.apply(loop.body(), format="anthropic").request == fresh.request
