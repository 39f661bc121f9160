"""ctxwin.tune: the figures it reports are those of the user's own policy, its steps and its
counters included, and its progress covers every setting it replays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin.replay import replay
from ctxwin.testing import FakeCounter, agent_body
from ctxwin.tune import tune

PRICE = {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0}
START = {"context_window": 3000, "pricing": PRICE, "overflow": "drop_oldest_rounds"}


def trace(rounds: int, words: int, task: str = "go", model: str | None = None) -> dict[str, Any]:
    body = agent_body([[("read", {}, " ".join(["w"] * words))] for _ in range(rounds)], task=task)
    return body if model is None else {**body, "model": model}


class Head:
    """A result step of the user's: keeps the first ten words of every result."""

    name = "head"

    def __call__(
        self, result: ctxwin.ToolResult, info: ctxwin.ResultInfo, context: ctxwin.Context
    ) -> ctxwin.ToolResult:
        words = result.text.split()
        return result if len(words) <= 10 else result.with_text(" ".join(words[:10]))


def assert_same_figures(figures: Any, bodies: list[tuple[str, Any]], policy: Policy) -> None:
    """``figures`` (tune's) are the sums of ``ctxwin.replay``'s for ``policy`` itself."""
    replayed = [replay(body, policy, name=name) for name, body in bodies]
    assert figures.cost == pytest.approx(sum(r.managed.effective_cost for r in replayed))
    assert figures.unmanaged_cost == pytest.approx(
        sum(r.unmanaged.effective_cost for r in replayed)
    )
    assert figures.peak == max(r.managed.peak for r in replayed)


def test_the_current_figures_are_those_of_a_policy_with_steps_of_its_own() -> None:
    """A policy whose chain has a result step of the user's: the candidates were built with
    the default chain, so tune's "current" was another policy's figures."""
    steps = ctxwin.default_steps([Head(), *ctxwin.EditResults().steps])
    policy = Policy(START, counter=FakeCounter(), steps=steps)
    traces = [(f"t{i}", trace(12 + 4 * i, 150, task=f"task {i}")) for i in range(2)]
    result = tune(traces, policy, holdout=0, passes=0)
    assert_same_figures(result.current_train, traces, policy)
    assert result.best_train == result.current_train


def test_every_candidate_runs_the_users_steps() -> None:
    """The tuned figures too are replayed with the user's chain."""
    steps = ctxwin.default_steps([Head(), *ctxwin.EditResults().steps])
    policy = Policy(START, counter=FakeCounter(), steps=steps)
    traces = [(f"t{i}", trace(16 + 4 * i, 150, task=f"task {i}")) for i in range(3)]
    result = tune(traces, policy, holdout=0.34, passes=1)
    assert result.best_holdout is not None
    held = [(n, b) for n, b in traces if n in result.holdout]
    tuned = Policy({**START, **result.best}, counter=FakeCounter(), steps=steps)
    assert_same_figures(result.best_holdout, held, tuned)
    assert_same_figures(result.current_holdout, held, policy)


def test_the_current_figures_are_those_of_a_policy_with_model_counters() -> None:
    """A model counted with a counter of its own (``model_counters``) fills the window
    sooner: the candidates counted it with the policy's counter, so the window's decisions
    were not the policy's."""
    policy = Policy(
        START,
        counter=FakeCounter(),
        model_counters={"claude": lambda text: 3 * len(text.split())},
    )
    traces = [(f"t{i}", trace(12 + 4 * i, 150, f"task {i}", "claude-x")) for i in range(2)]
    plain = Policy(START, counter=FakeCounter())
    assert replay(traces[0][1], policy).peak_ratio < replay(traces[0][1], plain).peak_ratio
    result = tune(traces, policy, holdout=0, passes=0)
    assert_same_figures(result.current_train, traces, policy)


def test_the_policys_calibration_is_the_candidates_too() -> None:
    """What a policy learned from usage decides its window in a replay: its candidates
    decide under it too."""
    policy = Policy(START, counter=FakeCounter())
    sent = policy.apply(trace(1, 300, model="gpt-x"))
    policy.observe(sent, {"prompt_tokens": 2 * sent.tokens})  # the provider counts twice
    body = trace(14, 300, model="gpt-x")
    plain = Policy(START, counter=FakeCounter())
    assert replay(body, policy).managed.peak < replay(body, plain).managed.peak
    result = tune([("t", body)], policy, holdout=0, passes=0)
    assert_same_figures(result.current_train, [("t", body)], policy)


def test_progress_covers_every_setting_replayed() -> None:
    """A callable hears of the current settings and of both held-out replays, not only of
    the candidates of the search."""
    traces = [(f"t{i}", trace(12 + 4 * i, 150, task=f"task {i}")) for i in range(3)]
    heard: list[str] = []
    result = tune(
        traces, Policy(START, counter=FakeCounter()), holdout=0.34, passes=1, progress=heard.append
    )
    assert heard[0].startswith("current settings: ")
    assert heard[-2].startswith("held out, current settings: ")
    assert heard[-1].startswith("held out, tuned settings: ")
    replayed = [line for line in heard if line.endswith("x")]
    assert len(replayed) == result.trials + 2
    assert any(line.endswith(": the setting in force (not replayed)") for line in heard)


class Bar:
    """A progress bar: told the most settings it may count, then each one."""

    def __init__(self) -> None:
        self.totals: list[int] = []
        self.names: list[str] = []

    def start(self, total: int) -> None:
        self.totals.append(total)

    def advance(self, name: str) -> None:
        self.names.append(name)


@pytest.mark.parametrize("passes", [0, 1, 2])
def test_a_bar_is_told_the_whole_search_before_it_starts(passes: int) -> None:
    """An object with ``start``/``advance`` (the CLI's bar) is started once with the most
    lines the search may give, and advanced for each: a search that runs all its passes
    fills the bar."""
    traces = [(f"t{i}", trace(12 + 4 * i, 150, task=f"task {i}")) for i in range(3)]
    bar = Bar()
    tune(traces, Policy(START, counter=FakeCounter()), holdout=0.34, passes=passes, progress=bar)
    assert len(bar.totals) == 1
    assert bar.names[-1].startswith("held out, tuned settings: ")
    if passes < 2:  # the second pass may be skipped (the first improved nothing)
        assert bar.totals[0] == len(bar.names)
    else:
        assert bar.totals[0] >= len(bar.names)


def test_a_progress_that_is_neither_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"progress must be a callable\(message\) or"):
        tune([("t", trace(4, 10))], Policy(START), progress=3)  # type: ignore[arg-type]


def test_a_policy_whose_rules_are_not_its_settings_is_refused() -> None:
    """Rules changed after the policy loaded cannot be rebuilt from its settings: tuning
    them would replay another policy."""
    import dataclasses

    loaded = Policy({**START, "tools": {"*": {"max_tokens": 50}}}, counter=FakeCounter())
    policy = Policy(dataclasses.replace(loaded.compiled, tools=()), counter=FakeCounter())
    with pytest.raises(ctxwin.PolicyError, match="tune cannot rebuild this policy") as caught:
        tune([("t", trace(6, 100))], policy, holdout=0, passes=0)
    assert caught.value.key == "policy"


def test_the_command_line_bar_covers_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ctxwin tune``'s bar went through the traces once, then stood still for the whole
    search: it is advanced for every setting the search looks at."""
    from ctxwin._cli import io as cli_io
    from ctxwin._cli import main

    advanced: list[str] = []
    draw = cli_io.Progress.advance

    def spy(self: cli_io.Progress, name: str) -> None:
        advanced.append(name)
        draw(self, name)

    monkeypatch.setattr(cli_io.Progress, "advance", spy)
    (tmp_path / "policy.yaml").write_text(json.dumps(START), encoding="utf-8")
    files = []
    for i in range(3):
        files.append(tmp_path / f"t{i}.json")
        files[-1].write_text(json.dumps(trace(8 + 2 * i, 100, task=f"task {i}")), encoding="utf-8")
    args = ["tune", *map(str, files), "-p", str(tmp_path / "policy.yaml"), "--holdout", "0.34"]
    assert main(args) == 0
    assert "ctxwin tune:" in capsys.readouterr().out
    assert advanced[:3] == [str(f) for f in files]  # each trace replayed once first
    assert advanced[3].startswith("current settings: ")
    assert any(name.startswith("window.keep_rounds = 1: ") for name in advanced)
    assert advanced[-1].startswith("held out, tuned settings: ")
