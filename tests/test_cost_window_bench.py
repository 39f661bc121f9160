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
    out = bench.run_one((str(path), 30_000, 3, 1000, True, True, True))
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
