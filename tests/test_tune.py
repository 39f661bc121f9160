"""ctxwin.tune: the search keeps only what lowers the training cost within the window."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin._tune_traces import split_traces as _split
from ctxwin._tune_traces import trace_messages
from ctxwin.replay import replay
from ctxwin.testing import FakeCounter, agent_body
from ctxwin.tune import tune
from tests.builders import sealed

PRICE = {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0}


def trace(rounds: int, words: int, task: str = "go") -> dict[str, Any]:
    return agent_body([[("read", {}, " ".join(["w"] * words))] for _ in range(rounds)], task=task)


def test_the_split_is_stable_and_keeps_both_parts_non_empty() -> None:
    names = [f"t{i}" for i in range(8)]
    train, held = _split(names, 0.25)
    assert (len(train), len(held)) == (6, 2)
    assert _split(names, 0.25) == (train, held)
    assert set(train) | set(held) == set(range(8))
    assert _split(["a", "b"], 0.01)[1] != []  # a holdout asked for is never empty
    assert _split(["a", "b"], 0.0)[1] == []
    with pytest.raises(ValueError, match="holdout"):
        _split(names, 1.0)


@pytest.mark.parametrize(
    "folder", ["../proj/traces", "./traces/../traces", "traces//", os.path.abspath("traces")]
)
def test_the_split_does_not_depend_on_how_the_traces_folder_is_spelled(folder: str) -> None:
    """The CLI names a trace by the path typed: `tune traces` and `tune ../proj/traces` held
    out other traces of the same folder (names are hashed relative to their common folder)."""
    names = [f"traces/t{k}.json" for k in range(12)]
    spelled = [os.path.join(folder, f"t{k}.json") for k in range(12)]
    assert _split(spelled, 0.25) == _split(names, 0.25)
    assert _split(spelled[:1], 0.25) == _split(names[:1], 0.25)


def test_tuning_never_reports_worse_than_the_current_policy_on_its_training_traces() -> None:
    # A bad start: huge caps and a ceiling so high the window overflows the budget.
    start = {
        "context_window": 3000,
        "pricing": PRICE,
        "window": {"trigger": 0.95, "target": 0.9, "keep_rounds": 6, "strategy": "threshold"},
        "overflow": "drop_oldest_rounds",
        "tools": {"*": {"max_tokens": 8000}},
    }
    traces = [(f"t{i}", trace(20 + 4 * i, 150, task=f"task {i}")) for i in range(4)]
    result = tune(traces, Policy(start, counter=FakeCounter()), holdout=0.25, passes=1)
    assert len(result.train) == 3
    assert len(result.holdout) == 1
    assert set(result.train).isdisjoint(result.holdout)
    assert result.best_train.feasible
    assert result.best_train.cost < result.current_train.cost
    assert result.best != result.current
    assert result.diff().startswith("--- current")
    assert result.best_holdout is not None
    assert result.best_holdout.traces == 1


def test_a_policy_that_warned_at_load_does_not_warn_again_for_each_candidate() -> None:
    """Summarize rules without a summarizer warn when the policy loads; the candidates the
    search builds from it (filterwarnings = error would raise) do not."""
    start = {
        "context_window": 3000,
        "pricing": PRICE,
        "tools": {"*": {"max_tokens": 800, "summarize": {"over_tokens": 400, "max_tokens": 100}}},
    }
    with pytest.warns(ctxwin.PolicyWarning, match="summarize rules of"):
        policy = Policy(start, counter=FakeCounter())
    traces = [(f"t{i}", trace(20 + 4 * i, 150)) for i in range(2)]
    result = tune(traces, policy, holdout=0.0, passes=1)
    assert result.trials > 1


def test_a_policy_counting_with_a_tokenizer_of_its_own_is_tuned() -> None:
    """``tokenizer: words`` names a counter passed to the policy, not a built-in one: the
    candidates are built with that counter (they were refused as an unknown tokenizer)."""
    start = {"context_window": 3000, "pricing": PRICE, "tokenizer": "words"}
    policy = ctxwin.load_policy(start, counters={"words": lambda text: len(text.split())})
    traces = [(f"t{i}", trace(20 + 4 * i, 150)) for i in range(2)]
    result = tune(traces, policy, holdout=0.0, passes=1)
    assert result.best_train.cost <= result.current_train.cost


def test_a_setting_the_policy_refuses_is_skipped_not_raised() -> None:
    """``drop_target: 0.3`` is refused above a ``target`` of 0.2: the search goes on."""
    start = {
        "context_window": 3000,
        "pricing": PRICE,
        "window": {"trigger": 0.5, "target": 0.2},
        "overflow": "drop_oldest_rounds",
    }
    traces = [(f"t{i}", trace(20 + 4 * i, 150)) for i in range(3)]
    with pytest.raises(ctxwin.PolicyError):
        Policy({**start, "window": {**start["window"], "drop_target": 0.3}})
    result = tune(traces, Policy(start, counter=FakeCounter()), holdout=0.0, passes=1)
    assert result.best_train.cost <= result.current_train.cost
    assert result.best.get("window", {}).get("drop_target") != 0.3


def test_a_trace_that_cannot_be_replayed_is_named() -> None:
    """Among many traces, the error says which one could not be replayed."""
    start = {"context_window": 3000, "pricing": PRICE, "overflow": "drop_oldest_rounds"}
    broken = {"messages": [{"role": "tool", "tool_call_id": "gone", "content": "x"}]}
    traces = [("fine", trace(6, 50)), ("orphan.json", broken)]
    with pytest.raises(ctxwin.InputError, match=r"trace 'orphan.json': .*nothing is left"):
        tune(traces, Policy(start, counter=FakeCounter()), holdout=0.0, passes=1)


def responses_trace(rounds: int) -> dict[str, Any]:
    """A Responses trace whose reasoning items outweigh its results."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for r in range(rounds):
        items.append({"type": "reasoning", "summary": [], "encrypted_content": sealed(120)})
        items.append({"type": "function_call", "call_id": f"c{r}", "name": "sh", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{r}", "output": "w " * 40})
    return {"input": items}


def test_clear_reasoning_is_tried_on_traces_with_reasoning_and_only_there() -> None:
    start = {"context_window": 3000, "pricing": PRICE, "overflow": "drop_oldest_rounds"}
    traces = [(f"r{i}", responses_trace(30 + 5 * i)) for i in range(3)]
    tried: list[str] = []
    result = tune(
        traces, Policy(start, counter=FakeCounter()), holdout=0, passes=1, progress=tried.append
    )
    assert any(t.startswith("window.clear_reasoning = True") for t in tried)
    assert result.best["window"]["clear_reasoning"] is True
    assert result.best_train.cost < result.current_train.cost
    assert "+  clear_reasoning: true" in result.diff()
    chat: list[str] = []
    plain = [(f"t{i}", trace(20, 150)) for i in range(2)]
    tune(plain, Policy(start, counter=FakeCounter()), holdout=0, passes=1, progress=chat.append)
    assert chat
    assert not any("clear_reasoning" in t for t in chat)


def test_a_policy_folder_is_tuned_with_its_tool_files(tmp_path: Path) -> None:
    """The search varies the defaults; the candidates were compiled from the defaults alone,
    without the folder's tool files, so the "current" figures were not the policy's."""
    (tmp_path / "defaults.yaml").write_text(
        "context_window: 3000\npricing: {cache_write: 1.25, cache_read: 0.1, min_prefix: 0}\n"
        "tools:\n  '*':\n    max_tokens: 4000\n",
        encoding="utf-8",
    )
    (tmp_path / "read.yaml").write_text("tool: read\nmax_tokens: 40\n", encoding="utf-8")
    policy = Policy(tmp_path, counter=FakeCounter())
    body = trace(12, 150)
    result = tune([("t.json", body)], policy, holdout=0, passes=0)
    replayed = replay(body, policy, name="t.json")
    assert result.current_train.cost == pytest.approx(replayed.managed.effective_cost)
    assert result.current_train.peak == replayed.managed.peak
    assert replayed.managed.peak < replay(body, None, name="t.json").unmanaged.peak


def test_a_tool_file_for_every_tool_takes_the_tuned_default_cap(tmp_path: Path) -> None:
    """A tool file ``tool: "*"`` is the default cap the search varies: its other rules stay."""
    (tmp_path / "defaults.yaml").write_text("context_window: 3000\n", encoding="utf-8")
    (tmp_path / "any.yaml").write_text(
        "tool: '*'\nmax_tokens: 4000\ntruncate: tail\n", encoding="utf-8"
    )
    from ctxwin._tune_files import tool_files, with_tool_files

    policy = Policy(tmp_path, counter=FakeCounter())
    files = tool_files(policy)
    assert files == {"*": {"max_tokens": 4000, "truncate": "tail"}}
    both = with_tool_files({"tools": {"*": {"max_tokens": 500}}}, files)
    assert both["tools"]["*"] == {"max_tokens": 500, "truncate": "tail"}


def test_a_trace_given_twice_is_never_held_out_and_tuned_on() -> None:
    """The same name, or the same conversation under another name, goes to one part only."""
    start = {"context_window": 3000, "pricing": PRICE}
    body = trace(12, 150)
    twice = tune([("a.json", body), ("a.json", body)], Policy(start), holdout=0.5, passes=0)
    assert twice.holdout == ()
    assert twice.best_holdout is None
    copies = tune([("a.json", body), ("copy.json", body)], Policy(start), holdout=0.5, passes=0)
    assert copies.holdout == ()


def test_the_requests_of_one_session_stay_on_one_side_of_the_split() -> None:
    """Requests logged one per line are prefixes of each other: a held-out request was part
    of the training ones."""
    session = [(f"log.jsonl:{k}", trace(4 + 2 * k, 50)) for k in range(1, 5)]
    others = [(f"other-{k}.json", trace(6, 50, task=f"task {k}")) for k in range(4)]
    policy = Policy({"context_window": 3000, "pricing": PRICE}, counter=FakeCounter())
    for holdout in (0.1, 0.25, 0.5, 0.75):
        result = tune([*session, *others], policy, holdout=holdout, passes=0)
        assert result.train
        assert result.holdout
        names = {n for n, _ in session}
        assert names <= set(result.train) or names <= set(result.holdout), holdout


def test_traces_of_other_conversations_are_split_by_their_names_alone() -> None:
    from ctxwin._tune_traces import trace_messages as _messages

    others = [(f"other-{k}.json", trace(6, 50, task=f"task {k}")) for k in range(8)]
    names = [n for n, _ in others]
    items = [_messages(b, None) for _, b in others]
    assert _split(names, 0.25, items) == _split(names, 0.25)


def test_a_large_conversation_is_not_held_out_whole_where_a_small_one_fits() -> None:
    """Groups were taken in hash order and added whole: a session of 8 logged requests
    first in that order held out 8 of 10 traces where 1 was asked (review s47-1)."""
    for session_name in ("run0", "run11", "run14", "run3"):
        names = [f"{session_name}.jsonl:{k}" for k in range(1, 9)] + ["a.json", "b.json"]
        items: list[list[object] | None] = [[f"m{j}" for j in range(k)] for k in range(1, 9)]
        items += [["a"], ["b"]]
        train, held = _split(names, 0.1, items)
        assert [names[i] for i in held] in (["a.json"], ["b.json"]), session_name
        train, held = _split(names, 0.8, items)  # the session alone is the nearest to 8
        assert [names[i] for i in held] == names[:8], session_name
    # only large groups: the nearest one, never the whole training part
    names = [f"s{g}.jsonl:{k}" for g in range(3) for k in range(1, 4)]
    items = [[f"s{g}"] * k for g in range(3) for k in range(1, 4)]
    train, held = _split(names, 0.1, items)
    assert len(held) == 3
    assert train


def test_a_setting_that_overflows_under_overflow_error_is_infeasible_not_fatal() -> None:
    """``overflow: error``: a candidate that takes a request over the window (a bigger cap,
    more rounds kept) raised BudgetExceeded out of the whole search."""
    start = {
        "context_window": 1200,
        "pricing": PRICE,
        "overflow": "error",
        "window": {"keep_rounds": 1},
        "tools": {"*": {"max_tokens": 300}},
    }
    traces = [(f"t{i}", trace(8, 1200, task=f"task {i}")) for i in range(3)]
    policy = Policy(start, counter=FakeCounter())
    with pytest.raises(ctxwin.BudgetExceeded):
        replay(traces[0][1], Policy({**start, "tools": {"*": {"max_tokens": 8000}}}))
    tried: list[str] = []
    result = tune(traces, policy, holdout=0.34, passes=1, progress=tried.append)
    assert 'tools."*".max_tokens = 8000: ' in " ".join(tried)
    assert result.best_train.feasible
    assert result.best_train.over == 0
    assert result.best_train.cost <= result.current_train.cost


def _unfittable() -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """Four traces a bad start overpays for, and one whose last user message alone is over
    a window of 3,000: no setting fits it."""
    traces = [(f"t{i}", trace(20 + 4 * i, 150, task=f"task {i}")) for i in range(4)]
    big = trace(3, 100, task="big")
    big["messages"] += [
        {"role": "user", "content": " ".join(["big"] * 4000)},
        {"role": "assistant", "content": "ok"},
    ]
    return traces, big


def test_a_trace_no_setting_fits_does_not_veto_the_search() -> None:
    """Its request over the window under every setting made every candidate infeasible:
    nothing was kept, and the diff said the current settings were the best found, though
    others were cheaper and took that trace no further over (review s49-5, finding 2)."""
    start = {
        "context_window": 3000,
        "pricing": PRICE,
        "window": {"trigger": 0.95, "target": 0.9, "keep_rounds": 6, "strategy": "threshold"},
        "overflow": "drop_oldest_rounds",
        "tools": {"*": {"max_tokens": 8000}},
    }
    traces, big = _unfittable()
    policy = Policy(start, counter=FakeCounter())
    assert replay(big, policy).managed.peak > 3000
    result = tune([*traces, ("big.json", big)], policy, holdout=0, passes=1)
    assert not result.current_train.feasible
    assert result.best_train.cost < result.current_train.cost
    assert result.best != result.current
    tuned = Policy({**start, **result.best}, counter=FakeCounter())
    assert replay(big, tuned).managed.peak <= replay(big, policy).managed.peak
    assert all(replay(b, tuned).managed.peak <= 3000 for _, b in traces)
    assert "the current settings are the best found" not in result.diff()
    assert "no setting keeps every trace within its window" in result.diff()
    unsearched = tune([*traces, ("big.json", big)], policy, holdout=0, passes=0)
    assert unsearched.diff() == "  (no change: nothing was searched, passes is 0)\n"


def test_no_change_with_a_trace_over_its_window_says_no_setting_fits_not_that_it_is_best() -> None:
    from ctxwin.tune import Figures, TuneResult

    over = Figures(2, 10.0, 20.0, 4138, 0, 3000, 0, "big.json", ((900, 3000), (4138, 3000)))
    result = TuneResult({}, {}, ("a", "big.json"), (), over, over, None, None, 20)
    assert result.diff() == (
        "  (no change: no setting keeps every trace within its window (big.json: 4,138 / "
        "3,000 tokens), and none tried is cheaper without taking a trace further over)\n"
    )


def _rolling_breakpoint(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with a ``cache_control`` breakpoint on the last block of its last message,
    as a client that moves its breakpoint each request sends it (Vercel AI SDK's recipe,
    qwen-code; in a Chat body, as LiteLLM and OpenRouter take it for Claude)."""
    out = copy.deepcopy(request)
    last = out["messages"][-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return out


@pytest.mark.parametrize("fmt", ["anthropic", "openai-chat"])
def test_a_session_logged_with_a_rolling_breakpoint_stays_on_one_side_of_the_split(
    fmt: str,
) -> None:
    """Each request carries a breakpoint on its last message, which the next request no
    longer has there: the requests were no prefix of each other, and requests of the one
    session were held out while the others were searched on."""
    whole = agent_body([[("read", {}, f"line {i} " * 40)] for i in range(8)], format=fmt)
    messages = whole["messages"]
    ends = [t for t in range(1, len(messages) + 1) if messages[t - 1]["role"] in ("user", "tool")]
    session = [
        (f"log.jsonl:{k}", _rolling_breakpoint({**whole, "messages": messages[:t]}))
        for k, t in enumerate(ends, 1)
    ]
    others = [
        (f"other-{k}.json", agent_body([[("read", {}, "w " * 50)]] * 6, task=f"{k}", format=fmt))
        for k in range(4)
    ]
    items = [trace_messages(body, fmt) for _, body in session]
    assert _split([n for n, _ in session], 0.5, items) == (list(range(len(session))), [])
    names = {n for n, _ in session}
    policy = Policy({"context_window": 3000, "pricing": PRICE}, counter=FakeCounter())
    for holdout in (0.1, 0.25, 0.5):
        result = tune([*session, *others], policy, format=fmt, holdout=holdout, passes=0)
        assert result.holdout
        assert names <= set(result.train) or names <= set(result.holdout), holdout


def _support_sessions(system: str | None) -> list[tuple[str, dict[str, Any]]]:
    """Eight sessions logged a request a line, each opening with the same "Hi"; each with a
    system prompt of its own (``system`` None) or all with ``system``."""
    out = []
    for k in range(8):
        msgs: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
        for i in range(3):
            prompt = system if system is not None else f"Customer {k}'s account"
            body = {"system": prompt, "messages": copy.deepcopy(msgs)}
            out.append((f"s{k}-{i}.json", _rolling_breakpoint(body)))
            msgs += [
                {"role": "assistant", "content": f"Hello {k}, turn {i}"},
                {"role": "user", "content": f"customer {k} question {i}"},
            ]
    return out


@pytest.mark.parametrize("system", [None, "One support bot"])
def test_sessions_opening_alike_are_not_one_conversation(system: str | None) -> None:
    """Every session's first request ("Hi") was a prefix of every other session's requests:
    all 24 were one group, and nothing was held out (review of e8f7485). A system prompt of
    their own tells them apart; alike, the first requests (the same request) go together,
    and each session's later requests stay together."""
    traces = _support_sessions(system)
    names = [n for n, _ in traces]
    items = [trace_messages(body, "anthropic") for _, body in traces]
    train, held = _split(names, 0.25, items)
    assert len(held) == 6 if system is None else 0 < len(held) <= 12  # whole groups
    for k in range(8):
        later = {f"s{k}-1.json", f"s{k}-2.json"}
        side = {names[i] for i in held}
        assert later <= side or not later & side
    if system is not None:  # the first requests are one request: on one side
        firsts = {names.index(f"s{k}-0.json") for k in range(8)}
        assert firsts <= set(train) or firsts <= set(held)


def _model_trace(model: str, rounds: int, words: int, task: str = "go") -> dict[str, Any]:
    return {**trace(rounds, words, task=task), "model": model}


AUTO = {
    "context_window": "auto",
    "pricing": PRICE,
    "window": {"strategy": "threshold", "trigger": 0.9, "target": 0.8},
    "tools": {"*": {"max_tokens": 8000}},
}


def test_traces_of_models_with_other_windows_are_each_held_to_their_own() -> None:
    """``context_window: auto``: the largest peak (gpt-4o's, within its 128,000) was held
    to the window of the trace replayed last (gpt-3.5-turbo's 16,385): the current policy
    was infeasible, and the search kept any feasible setting, whatever it cost."""
    big = _model_trace("gpt-4o", 8, 6000, task="big")
    small = _model_trace("gpt-3.5-turbo", 3, 50)
    policy = Policy(AUTO, counter=FakeCounter())
    assert replay(big, policy).managed.peak > replay(small, policy).context_window
    result = tune([("a-gpt4o.json", big), ("b-gpt35.json", small)], policy, holdout=0, passes=1)
    current = result.current_train
    assert current.feasible
    assert (current.window, current.peak_trace) == (128_000, "a-gpt4o.json")
    assert current.peak == replay(big, policy).managed.peak
    assert result.best_train.feasible
    assert result.best_train.cost <= current.cost


def test_a_trace_over_its_own_window_is_infeasible_whatever_the_other_windows() -> None:
    """gpt-3.5-turbo's trace over its 16,385 tokens, then a gpt-4o trace with a larger peak
    well within 128,000: the larger peak was held to the larger window, and it passed."""
    over = _model_trace("gpt-3.5-turbo", 2, 50, task=" ".join(["x"] * 20000))
    big = _model_trace("gpt-4o", 8, 6000, task="big")
    policy = Policy(AUTO, counter=FakeCounter())
    assert replay(over, policy).managed.peak > 16_385
    assert replay(big, policy).managed.peak > replay(over, policy).managed.peak
    result = tune([("a-gpt35.json", over), ("b-gpt4o.json", big)], policy, holdout=0, passes=0)
    current = result.current_train
    assert not current.feasible
    assert (current.window, current.peak_trace) == (16_385, "a-gpt35.json")
    assert current.peak == replay(over, policy).managed.peak
