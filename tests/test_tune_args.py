"""ctxwin.tune's arguments: the traces' format, names that are paths, wrong types said as
such, and a diff that shows only what the search changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin.testing import FakeCounter, agent_body
from ctxwin.tune import tune

ROOT = Path(__file__).resolve().parents[1]
PRICE = {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0}
START: dict[str, Any] = {"context_window": 3000, "pricing": PRICE, "overflow": "drop_oldest_rounds"}


def trace(rounds: int, words: int) -> dict[str, Any]:
    return agent_body([[("read", {}, " ".join(["w"] * words))] for _ in range(rounds)], task="go")


def chat(turns: int) -> dict[str, Any]:
    """A text-only chat: OpenAI Chat and Anthropic read it alike (ambiguous)."""
    messages = [{"role": "user", "content": "hi " * 200}]
    for _ in range(turns):
        messages += [
            {"role": "assistant", "content": "ok " * 150},
            {"role": "user", "content": "more " * 150},
        ]
    return {"messages": messages}


def test_format_names_the_wire_format_of_ambiguous_traces() -> None:
    policy = Policy(START, counter=FakeCounter())
    traces = [("a", chat(6)), ("b", chat(8))]
    with pytest.raises(ctxwin.InputError, match="ambiguous"):
        tune(traces, policy, holdout=0, passes=1)
    result = tune(traces, policy, format="openai-chat", holdout=0, passes=1)
    assert result.train == ("a", "b")
    assert result.current_train.traces == 2


def test_the_cli_passes_format_to_the_search(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(json.dumps(START), encoding="utf-8")
    for i in range(3):
        (tmp_path / f"t{i}.json").write_text(json.dumps(chat(5 + i)), encoding="utf-8")
    files = [str(tmp_path / f"t{i}.json") for i in range(3)]
    options = ["-p", str(tmp_path / "policy.yaml"), "--format", "anthropic", "--store", "memory"]
    done = subprocess.run(
        [sys.executable, "-m", "ctxwin", "tune", *files, *options, "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ctxwin tune: ")
    assert "format=" not in done.stdout + done.stderr


def test_names_may_be_paths() -> None:
    traces = [(Path("a.json"), trace(8, 100)), (Path("dir/b.json"), trace(9, 100))]
    result = tune(traces, Policy(START, counter=FakeCounter()), holdout=0, passes=1)
    assert result.train == ("a.json", str(Path("dir/b.json")))


def test_bodies_without_names_are_a_type_error_that_says_traces_are_pairs() -> None:
    bodies = [trace(6, 50), trace(7, 50)]
    with pytest.raises(TypeError) as e:
        tune(bodies, Policy(START, counter=FakeCounter()))  # type: ignore[arg-type]
    assert str(e.value) == (
        "traces are (name, body) pairs, e.g. [('a.json', body), ...]; trace 0 is a dict"
    )


@pytest.mark.parametrize(
    ("traces", "message"),
    [
        ([(1, {})], "trace 0: a name must be a string or a path, not int"),
        ([("a", {}, "x")], "trace 0 is a tuple of 3"),
        ({"a": {}}, "traces must be a list of (name, body) pairs, not dict"),
    ],
)
def test_traces_of_the_wrong_shape_are_a_type_error(traces: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tune(traces, Policy(START, counter=FakeCounter()))


@pytest.mark.parametrize("holdout", ["0.5", None, True])
def test_a_holdout_that_is_not_a_number_is_a_type_error(holdout: Any) -> None:
    with pytest.raises(TypeError) as e:
        tune([("a", trace(6, 50))], Policy(START, counter=FakeCounter()), holdout=holdout)
    assert str(e.value) == f"holdout must be a number from 0 to below 1, not {holdout!r}"


def test_no_trace_and_numbers_out_of_range_are_value_errors_that_say_what_is_wanted() -> None:
    policy = Policy(START, counter=FakeCounter())
    with pytest.raises(ValueError, match=r"^tune needs at least one trace: traces is empty$"):
        tune([], policy)
    for holdout in (1.5, -0.1, float("nan")):
        wanted = f"^holdout must be at least 0 and below 1 \\(a fraction\\), not {holdout}$"
        with pytest.raises(ValueError, match=wanted):
            tune([("a", trace(6, 50))], policy, holdout=holdout)
    with pytest.raises(ValueError, match=r"^passes must be 0 or more, not -1$"):
        tune([("a", trace(6, 50))], policy, passes=-1)
    with pytest.raises(TypeError, match=r"^passes must be a whole number, not '2'$"):
        tune([("a", trace(6, 50))], policy, passes="2")  # type: ignore[arg-type]


def test_the_diff_shows_no_setting_the_policy_already_has() -> None:
    """``keep_rounds: 2`` is the default: a search that comes back to it changes nothing
    (the line is context, as the policy writes it, neither removed nor added)."""
    policy = Policy(
        {
            "context_window": 6000,
            "window": {"keep_rounds": 2, "trigger": 0.6, "target": 0.4},
            "tools": {"*": {"max_tokens": 1500}},
        },
        counter=FakeCounter(),
    )
    body = agent_body([[("read_file", {"p": j}, f"0-{j} " * 800)] for j in range(5)])
    result = tune([("t0", body)], policy, holdout=0)
    changed = [line for line in result.diff().splitlines() if line[:1] in "+-"]
    assert not [line for line in changed if "keep_rounds" in line]
    assert result.best["window"]["keep_rounds"] == 2
    assert result.diff().startswith("--- current")  # it did change something
