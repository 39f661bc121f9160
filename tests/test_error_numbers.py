"""Numbers in error messages are written as the rest of ctxwin writes them: ``3,810``."""

from __future__ import annotations

from ctxwin import BudgetExceeded, PairingError
from ctxwin._core.records import Problem


def test_budget_exceeded_writes_its_token_counts_with_separators() -> None:
    """It read ``request is 3810 tokens`` where every other message says ``3,810``."""
    error = BudgetExceeded(tokens=3810, limit=128000, report=None)
    assert str(error) == (
        "request is 3,810 tokens after the policy ran, over the context window of 128,000 "
        "tokens (overflow: error)"
    )
    assert (error.tokens, error.limit) == (3810, 128000)


def test_a_pairing_error_counts_its_problems_with_separators() -> None:
    problem = Problem("orphan_result", "no call", 3, 0, "messages[3]", "call_1")
    error = PairingError([problem] * 1200)
    assert str(error).splitlines()[0] == "1,200 pairing problems:"
    assert error.reason == "1,200 pairing problems"
