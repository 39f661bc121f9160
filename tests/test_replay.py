"""ctxwin.replay: the figures a trace costs, unmanaged and under a policy."""

from __future__ import annotations

from typing import Any

from ctxwin import Policy
from ctxwin.replay import replay, request_points
from ctxwin.testing import FakeCounter, agent_body


def chat(rounds: int) -> dict[str, Any]:
    """A user turn, then ``rounds`` rounds of one ``read`` with a 100-word result."""
    body = agent_body([[("read", {}, " ".join(["w"] * 100))] for _ in range(rounds)], task="go")
    body["messages"] = body["messages"][1:]  # no system prompt
    return body


def test_requests_are_sent_before_each_model_turn_and_at_the_end() -> None:
    assert request_points(chat(3)) == [1, 3, 5, 7]


def test_a_policy_that_never_acts_costs_exactly_the_unmanaged_history() -> None:
    result = replay(chat(5), Policy({"window": {"strategy": "threshold"}}, counter=FakeCounter()))
    assert result.managed == result.unmanaged
    assert result.cost_ratio == 1.0
    assert result.counter == "fake-words"


def test_prefix_caching_is_counted() -> None:
    stats = replay(chat(5), Policy({}, counter=FakeCounter())).unmanaged
    assert stats.requests == 6
    assert 0 < stats.cached_tokens < stats.input_tokens
    assert stats.effective_cost == 1.25 * stats.uncached_tokens + 0.1 * stats.cached_tokens


def test_a_responses_string_input_is_one_request() -> None:
    result = replay({"input": "hello there"}, None, format="openai-responses")
    assert (result.unmanaged.requests, result.managed.problems) == (1, 0)


def test_clearing_lowers_the_peak_and_the_cost_on_a_long_trace() -> None:
    pol = Policy({"context_window": 1000}, counter=FakeCounter())
    result = replay(chat(60), pol)
    assert result.peak_ratio < 0.2
    assert result.cost_ratio < 0.85  # the target for traces that outgrow the window
    assert result.managed.problems == 0
