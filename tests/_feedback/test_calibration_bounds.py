"""A usage no tokenizer gap explains is not learned from: it would collapse the window."""

from __future__ import annotations

import pytest

import ctxwin
from ctxwin import CalibrationWarning
from ctxwin._feedback.calibration import Calibration

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
