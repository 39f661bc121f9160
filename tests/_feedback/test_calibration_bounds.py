"""A usage no tokenizer gap explains is not learned from: it would collapse the window."""

from __future__ import annotations

import pytest

import ctxwin
from ctxwin import CalibrationWarning
from ctxwin._feedback.calibration import Calibration
from ctxwin._feedback.usage import Usage, read_usage
from ctxwin.testing import FakeCounter, agent_body

FOLLOW_UP = {
    "model": "gpt-4.1",
    "previous_response_id": "resp_1",
    "input": [{"type": "function_call_output", "call_id": "c1", "output": "42"}],
}
"""A Responses request whose history lives on OpenAI's side: its usage counts all of it."""


def test_the_usage_of_a_request_with_server_side_history_is_not_learned() -> None:
    """It set the ratio to 8,742.9: every later request of the model was over budget."""
    policy = ctxwin.Policy({"context_window": "auto"})
    result = policy.apply(FOLLOW_UP)
    usage = {"usage": {"input_tokens": 60_000, "input_tokens_details": {"cached_tokens": 59_000}}}
    with pytest.warns(CalibrationWarning) as caught:
        ratio = policy.observe(result, usage)
    assert ratio == 1.0
    assert str(caught[0].message).startswith(
        "model 'gpt-4.1': the provider reported 8.57e+03x the tokens ctxwin counts: not "
        "learned from. The request's context lives on the provider's side"
    )
    assert caught[0].filename == __file__  # it points at the caller's observe
    cal = policy.calibration.of("gpt-4.1")
    assert (cal.refused, cal.ratio, list(cal.recent)) == (1, 1.0, [])
    assert policy.apply(FOLLOW_UP).report.context_window == 1_047_576


@pytest.mark.parametrize("reported", [501, 24])
def test_ratios_past_the_bounds_are_refused(reported: int) -> None:
    cal = Calibration()
    with pytest.warns(CalibrationWarning, match="not learned from"):
        assert cal.observe("m", 100, reported, 5) == 1.0
    assert (cal.of("m").refused, cal.schedule("m")) == (1, [(0, 1.0)])


def test_ratios_at_the_bounds_are_learned() -> None:
    cal = Calibration()
    assert cal.observe("m", 100, 500, 5) == 5.1
    assert cal.observe("m", 100, 25, 9) == 5.1  # down only when every recent one is
    assert cal.of("m").refused == 0


def _server_loop_usage(first: int, listed: bool) -> dict[str, object]:
    """An Anthropic turn where the model searched twice: three sampling passes, each reading
    the request and what the searches added, summed in the top-level fields."""
    passes = [first, first + 2_500, first + 5_200]
    usage: dict[str, object] = {
        "input_tokens": sum(passes),
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "output_tokens": 900,
        "server_tool_use": {"web_search_requests": 2},
    }
    if listed:
        usage["iterations"] = [
            {"type": "message", "input_tokens": n - 100, "cache_read_input_tokens": 100,
             "cache_creation_input_tokens": 0, "output_tokens": 300}
            for n in passes
        ]  # fmt: skip
    return usage


def _searching_body() -> dict[str, object]:
    body = agent_body([[("read_file", {"path": "a.py"}, "w " * 3000)]], format="anthropic")
    body.update(
        model="claude-sonnet-4-5", tools=[{"type": "web_search_20250305", "name": "web_search"}]
    )
    return body


def test_a_server_tool_loop_is_learned_from_its_first_pass() -> None:
    """The passes' sum (3.5x ctxwin's count) was learned as the tokenizer's ratio (4.2 with
    the margin): the next request of 54k tokens was cut to 18k, in a 200k window."""
    policy = ctxwin.Policy({"context_window": 200_000}, counter=FakeCounter(), format="anthropic")
    result = policy.apply(_searching_body())
    usage = _server_loop_usage(round(result.tokens * 1.15), listed=True)
    assert read_usage(usage).request_tokens == round(result.tokens * 1.15)
    assert policy.observe(result, usage) == 1.2


def test_a_server_tool_loop_that_does_not_list_its_passes_is_not_learned() -> None:
    policy = ctxwin.Policy({"context_window": 200_000}, counter=FakeCounter(), format="anthropic")
    result = policy.apply(_searching_body())
    usage = _server_loop_usage(round(result.tokens * 1.15), listed=False)
    assert read_usage(usage).request_tokens == 0
    with pytest.warns(CalibrationWarning, match="sums the sampling passes of a server-side"):
        assert policy.observe(result, usage) == 1.0
    cal = policy.calibration.of("claude-sonnet-4-5")
    assert (cal.refused, list(cal.recent)) == (1, [])
    plain = {"input_tokens": round(result.tokens * 1.15), "output_tokens": 9}
    assert read_usage(plain).request_tokens is None
    assert (
        read_usage({**plain, "server_tool_use": {"web_search_requests": 0}}).request_tokens is None
    )
    assert policy.observe(result, plain) == 1.2  # a turn without the loop: learned


def test_a_usage_object_keeps_and_checks_its_request_tokens() -> None:
    assert read_usage(Usage(900, 0, 0, 5, 300)).request_tokens == 300
    with pytest.raises(ctxwin.InputError, match=r"Usage\.request_tokens"):
        read_usage(Usage(900, 0, 0, 5, -1))


def test_a_pass_after_a_compaction_is_not_taken_for_the_request() -> None:
    """It reads the context the compaction left, not the request ctxwin counted."""
    message = {"type": "message", "input_tokens": 900, "output_tokens": 9}
    compaction = {"type": "compaction", "input_tokens": 40_000, "output_tokens": 900}
    usage = {"input_tokens": 900, "output_tokens": 9, "cache_read_input_tokens": 0}
    assert read_usage({**usage, "iterations": [compaction, message]}).request_tokens == 0
    assert read_usage({**usage, "iterations": [message, compaction]}).request_tokens == 900
