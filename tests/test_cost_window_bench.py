"""``benchmarks/cost_window.py`` on one made-up trace: the figures it prints hold together,
and ``--told-end`` swaps the rule's bound only while it measures."""

from __future__ import annotations

import json
from pathlib import Path

from ctxwin.steps import _fold
from tests.builders import benchmark_module


def test_one_trace_prices_the_policy_against_its_optimum_and_the_rule_told_the_end(
    tmp_path: Path,
) -> None:
    bench = benchmark_module("cost_window")
    synthetic = benchmark_module("_synthetic")
    path = tmp_path / "talky-10.json"
    path.write_text(json.dumps(synthetic.trace("talky", 10)), encoding="utf-8")
    plain = _fold.affordable
    out = bench.run_one((str(path), 30_000, 3, 1000, True, True, True, True))
    assert _fold.affordable is plain  # restored after the measurement
    for pricing in bench.PRICINGS:
        row = out[pricing]
        assert row["problems"] == 0
        assert row["cost_peak"] <= 30_000 < row["unmanaged_peak"]
        # the optimum is the family's lower bound: the policy, the rule told the end and
        # the optimum guarded by the second target all pay at least as much
        for figure in ("cost", "told", "guarded", "deep"):
            assert row["optimum"] <= row[figure] + 1e-6, (pricing, figure)
        assert row["cost"] < row["unmanaged"]


def test_resampling_totals_random_sets_of_the_traces_that_outgrow_the_window() -> None:
    """``--resample``: each set's total is its costs over its optima, drawn only from the
    traces over the window, and the share above the target counts the sets over it."""
    bench = benchmark_module("cost_window")

    def row(cost: float, optimum: float, peak: int) -> dict[str, dict[str, float]]:
        return {"anthropic": {"cost": cost, "optimum": optimum, "unmanaged_peak": peak}}

    # below the window: never drawn, whatever its ratio
    rows = [row(100.0, 100.0, 40_000), row(130.0, 100.0, 40_000), row(900.0, 100.0, 20_000)]
    line = bench.resampled(rows, "anthropic", 30_000, 400)
    assert "400 sets of 2 of 2" in line  # fewer than SAMPLE: each set is all of them
    assert "median 1.150" in line  # (100 + 130) / (100 + 100), in every set
    assert "above 1.05: 100.0%" in line
    assert "no trace outgrows" in bench.resampled(rows[2:], "anthropic", 30_000, 10)
    many = [row(100.0 + (i % 2) * 20, 100.0, 40_000) for i in range(60)]
    line = bench.resampled(many, "anthropic", 30_000, 400)
    assert f"400 sets of {bench.SAMPLE} of 60" in line
    median = float(line.split("median ")[1].split(",")[0])
    assert 1.08 < median < 1.12  # half at 1.0, half at 1.2: about 1.10
