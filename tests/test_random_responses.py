"""The cost window on a sample of random OpenAI Responses histories
(``benchmarks/random_responses.py``), where a turn's reasoning item comes before its call."""

from __future__ import annotations

from tests.builders import benchmark_module


def test_random_responses_histories_check_clean_and_are_their_own_fixed_points() -> None:
    """At every request of 16 random histories under random settings (drops included):
    the request checks clean, a fresh policy gives the same one, and the policy applied to
    its own output changes nothing. A drop and a jump go on through their request (stop
    28), so what the window does depends on where a request ends: these check that it
    depends on nothing else."""
    bench = benchmark_module("random_responses")
    rows = [bench.invariants((3, i)) for i in range(16)]
    assert sum(r["checked"] for r in rows) >= 60
    assert sum(r["dropped"] for r in rows) >= 20  # the sample does drop
    assert [r for r in rows if r["unclean"] or r["hidden"] or r["moved"]] == []


def test_on_random_responses_histories_the_policy_never_pays_less_than_its_optimum() -> None:
    """The optimum is that of the policy's own family (clearing from the oldest, drops only
    where clearing cannot fit): a policy that left the family, dropping where a clearing
    would still fit, could pay less than it (one tried in stop 28 did, 0.953x on codex-00).
    On three random histories, with and without ``clear_reasoning``, at three prices, it
    never does. In the third (65), the window's request after a drop holds the user's
    latest message, which the family may drop, and only so is long enough for Anthropic to
    cache it: an optimum that read the family's shorter request as uncached was 0.04% above
    the policy (stop 34)."""
    bench = benchmark_module("random_responses")
    for index in (0, 1, 65):
        pairs = bench.bill((3, index))
        assert len(pairs) == 6
        assert all(paid >= best * (1 - 1e-9) for paid, best in pairs.values())
        assert any(paid > best for paid, best in pairs.values())
