"""The recall tool's ``grep`` comes from the model, so its search is bounded: through the
``regex`` package, stopped at a deadline with an error answer; without it, through ``re``
on a capped part of each line, a pattern whose repeats nest refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ctxwin
from ctxwin.steps import _grep
from ctxwin.stores import open_store

ROOT = Path(__file__).resolve().parents[1]
CATASTROPHIC = "a" * 30 + "!"
"""Minutes of backtracking for ``(a+)+$`` in Python's ``re``."""
REFUSED = "recall: grep {!r} is refused: a repeated group in it holds another repeat"
NESTED = [
    "(a+)+$",
    "(a*)*b",
    "(x+x+)+y",
    "(a|a)+$",  # alternatives that match alike
    "(?:a|aa)+$",
    "(a?){25}a{25}",
    r"(\d+\.){3}",
    "((a+))+$",  # deeper
    "(?=(a+)+$)",  # in a lookahead
]


def kept(text: str) -> tuple[ctxwin.Policy, str]:
    policy = ctxwin.load_policy({"recall": True})
    handle = policy.shelf.keep(text)
    assert handle is not None
    return policy, handle


@pytest.fixture
def no_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "regex", None)  # import regex: ImportError


def test_with_regex_a_pattern_whose_repeats_nest_is_searched_within_its_time() -> None:
    """``regex`` stops a search at the deadline, so no pattern is refused for its shape:
    a catastrophic one on a short line answers (``regex`` finds no match at once), on a
    long one it runs out of time and says so; an IP-like pattern works."""
    pytest.importorskip("regex")
    policy, handle = kept(f"{CATASTROPHIC}\nhost 10.0.0.1 up\n")
    assert (
        policy.recall(handle, grep="(a+)+$").text == f"recall: no line of {handle} matches '(a+)+$'"
    )
    assert policy.recall(handle, grep=r"(\d+\.){3}\d+").text == "2:host 10.0.0.1 up"


def test_a_search_past_its_time_is_an_error_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("regex")
    monkeypatch.setattr(_grep, "GREP_SECONDS", 0.0)
    policy, handle = kept("alpha\nbeta\n")
    answer = policy.recall(handle, grep="beta")
    assert answer.is_error
    assert answer.text == (
        f"recall: grep 'beta' took over 0s on {handle}: use a simpler pattern, or lines to "
        "search fewer"
    )


@pytest.mark.usefixtures("no_regex")
@pytest.mark.parametrize("pattern", NESTED)
def test_without_regex_a_pattern_whose_repeats_nest_is_refused(pattern: str) -> None:
    policy, handle = kept(CATASTROPHIC)
    answer = policy.recall_call({"handle": handle, "grep": pattern})
    assert answer.is_error
    assert answer.text.startswith(REFUSED.format(pattern))
    assert "exponential time" in answer.text


@pytest.mark.usefixtures("no_regex")
def test_without_regex_a_pattern_that_does_not_nest_repeats_searches_as_before() -> None:
    policy, handle = kept(f"{CATASTROPHIC}\ndef f(x):\nfoo bar\n")
    for pattern, lines in [
        ("a+!$", ["1:" + CATASTROPHIC]),
        ("(ab)+|^def", ["2:def f(x):"]),
        (r"def \w+\(.*\):", ["2:def f(x):"]),
        ("(?:foo|bar)", ["3:foo bar"]),
        (r"(\w|-)+ bar", ["3:foo bar"]),  # one character either way: no nesting
        ("(x{3})+ b", []),  # a fixed count inside
    ]:
        answer = policy.recall(handle, grep=pattern)
        assert not answer.is_error, pattern
        found = [] if answer.text.startswith("recall: no line of") else answer.text.splitlines()
        assert found == lines, pattern


@pytest.mark.usefixtures("no_regex")
def test_without_regex_each_line_is_searched_up_to_its_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_grep, "GREP_LINE_CHARS", 10)
    policy, handle = kept("needle at the start\npast 10 characters: needle\n")
    assert policy.recall(handle, grep="needle").text == "1:needle at the start"


@pytest.mark.usefixtures("no_regex")
def test_without_the_parser_a_repeated_group_is_refused_by_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
    monkeypatch.setitem(sys.modules, parser, None)
    policy, handle = kept(CATASTROPHIC)
    assert policy.recall(handle, grep="(a+)+$").text.startswith(REFUSED.format("(a+)+$"))
    assert policy.recall(handle, grep="a+!").text == "1:" + CATASTROPHIC


def test_the_cli_bounds_a_catastrophic_pattern_on_a_long_line(tmp_path: Path) -> None:
    """``ctxwin recall --grep`` shares the path: an error answer after the deadline, not a
    command that hangs."""
    pytest.importorskip("regex")
    long_line = "a" * 5_000 + "!"
    url = f"sqlite:///{tmp_path}/store.db"
    _, handle = kept(long_line)
    store = open_store(url)
    store.put("recall:" + handle, long_line.encode())
    store.close()
    (tmp_path / "policy.yaml").write_text("recall: true\n", encoding="utf-8")
    options = ["-p", str(tmp_path / "policy.yaml"), "--store", url, "--grep", "(a+)+$"]
    done = subprocess.run(
        [sys.executable, "-m", "ctxwin", "recall", handle, *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert f"grep '(a+)+$' took over 2s on {handle}" in done.stderr


def test_the_tool_tells_the_model_how_long_a_search_may_run() -> None:
    from ctxwin.formats._recall import RECALL_PARAMETERS

    said = RECALL_PARAMETERS["properties"]["grep"]["description"]
    assert f"runs over {_grep.GREP_SECONDS:g} seconds is stopped" in said
