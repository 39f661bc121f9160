"""``benchmarks/endings.py``: the least worst ending is what no schedule of the family beats
(against brute force on small made-up traces), and on a made-up agent trace the figures
it prints hold together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxwin import _optimum
from ctxwin._policy.tables import Pricing
from tests.builders import benchmark_module
from tests.test_optimum import ENVELOPE, brute_force, made_up

INF = float("inf")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    bench = benchmark_module("endings")
    synthetic = benchmark_module("_synthetic")
    path = tmp_path_factory.mktemp("endings") / "mixed-8.json"
    path.write_text(json.dumps(synthetic.trace("mixed", 8)), encoding="utf-8")
    return [bench.run_one((str(path), p, None, 10_000, 3, 1000, False)) for p in bench.PRICINGS]


def test_no_schedule_beats_the_least_worst_ending_and_the_policy_is_one_of_them(
    rows: list[dict[str, float]],
) -> None:
    bench = benchmark_module("endings")
    for row in rows:
        # the whole trace is one of its endings; the optimum knows it ends there
        assert row["optimum"] <= row["cost"] + 1e-6
        assert row["cost"] / row["optimum"] <= row["worst"] + 1e-9
        # the policy's own schedule is one of the family's: its worst ending is no better
        assert 1.0 <= row["least"] <= row["worst"] + 1e-3
        within = row["within"]
        if row["least"] <= bench.WITHIN:
            assert within is not None
            assert row["optimum"] - 1e-6 <= within <= bench.WITHIN * row["optimum"] + 1e-6
        else:
            assert within is None


def test_the_least_worst_ending_is_where_schedules_stop_existing() -> None:
    """Bisection finds the edge of what a made-up family allows: schedules exist from 1.3 on."""
    bench = benchmark_module("endings")

    def bounded(r: float) -> float | None:
        return 100.0 if r >= 1.3 else None

    assert bench.least_worst_ending(bounded, 1.2) == pytest.approx(1.3, abs=1e-3)
    assert bench.least_worst_ending(lambda r: 100.0, 1.5) == 1.0


def test_the_totals_name_the_traces_no_rule_keeps_within_the_target() -> None:
    bench = benchmark_module("endings")
    row = {
        "cost": 110.0,
        "optimum": 100.0,
        "worst_cost": 60.0,
        "worst_optimum": 50.0,
        "least": 1.08,
        "within": 103.0,
    }
    other = {**row, "least": 1.02, "cost": 100.0}
    lines = bench.totals([row, other])
    text = "\n".join(lines)
    assert "whole traces: 1.050 x optimum; at each trace's worst ending: 1.200" in text
    assert "1 of 2 traces no rule keeps within 1.05" in text
    assert "pays at least 1.080 x optimum" in text
    assert "the whole traces 1.030 x optimum at best (the policy 1.050)" in text


def test_past_forty_traces_the_totals_bound_a_set_of_forty() -> None:
    """The issue's count: among 50 traces, the 40 whose least worst ending is highest bound
    any rule on a set of 40 conversations by the lowest of theirs."""
    bench = benchmark_module("endings")
    base = {"cost": 100.0, "optimum": 100.0, "worst_cost": 1.0, "worst_optimum": 1.0}
    rows = [{**base, "least": 1.0 + i / 1000, "within": 100.0} for i in range(50)]
    text = "\n".join(bench.totals(rows))
    assert f"the {bench.SAMPLE} traces with the highest least worst ending" in text
    assert "pays at least 1.010 x optimum" in text  # the 40 highest are 1.010 to 1.049
    assert "highest least worst" not in "\n".join(bench.totals(rows[:40]))


def test_past_the_window_fewer_endings_count(rows: list[dict[str, float]], tmp_path: Path) -> None:
    """``--past-window``: only the endings whose unmanaged history has reached the window
    count, so the least worst ending and the policy's worst are no higher; a trace that
    never reaches the window has no row."""
    bench = benchmark_module("endings")
    path = tmp_path / "mixed-8.json"
    path.write_text(json.dumps(benchmark_module("_synthetic").trace("mixed", 8)), encoding="utf-8")
    for row in rows:
        past = bench.run_one((str(path), row["pricing"], None, 10_000, 3, 1000, True))
        assert past is not None
        assert past["least"] <= row["least"] + 1e-3
        assert past["worst"] <= row["worst"] + 1e-9
        assert past["worst_at"] > 0  # the first request is under the window
        assert past["cost"] == row["cost"]
        assert past["optimum"] == row["optimum"]
    assert bench.run_one((str(path), "anthropic", None, 1_000_000, 3, 1000, True)) is None


def test_the_command_prints_each_pricing_for_a_folder_of_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = benchmark_module("endings")
    trace = benchmark_module("_synthetic").trace("mixed", 8)
    (tmp_path / "mixed-8.json").write_text(json.dumps(trace), encoding="utf-8")
    argv = ["--traces", str(tmp_path), "--window", "10000", "--jobs", "1", "--per-trace"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 traces; the issue's policy, window 10000")
    for pricing in bench.PRICINGS:
        assert f"== pricing {pricing}:" in out
    assert out.count("mixed-8 ") == len(bench.PRICINGS)
    assert bench.main([*argv, "--window", "1000000", "--past-window"]) == 0
    out = capsys.readouterr().out  # it never reaches a million tokens: no row
    assert out.startswith("0 traces;")
    assert "== pricing" not in out


@pytest.mark.parametrize("seed", range(12))
def test_the_least_worst_ending_is_the_brute_force_edge(seed: int) -> None:
    """On made-up traces, checked against every schedule (the brute force of the optimum's
    tests, under ceilings on each ending): some schedule stays within the least worst
    ending at every ending, and none within a thousandth less."""
    bench = benchmark_module("endings")
    tr = made_up(seed)
    price = Pricing(cache_write=1.25, cache_read=0.1)
    window = (sum(tr.tokens) + ENVELOPE) // 2
    pts = tr.points()
    best = _optimum.prefix_optima(tr.layout(), pts, price, 1, window)

    def bounded(r: float) -> float | None:
        return bench.within_every_ending(tr.layout(), pts, price, 1, window, best, r)

    least = bench.least_worst_ending(bounded, 4.0)
    assert brute_force(tr, price, 1, window, [least * (1 + 1e-6) * b for b in best]) < INF
    if least > 1.0:
        assert brute_force(tr, price, 1, window, [least * (1 - 1e-3) * b for b in best]) == INF
