"""The recall tool's ``grep`` comes from the model, so its search is bounded: through the
``regex`` package, stopped at a deadline with an error answer; without it, through ``re``
on a capped part of each line, a pattern whose repeats nest refused."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin.steps import _grep
from ctxwin.steps._answer import part_of
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


def test_a_pattern_counting_over_4300_digits_is_an_error_answer() -> None:
    """``re`` reads a repeat's count with ``int``, which refuses over 4,300 digits with a
    bare ValueError: it escaped the recall tool instead of an answer to the model."""
    policy, handle = kept("aaa\n")
    pattern = "a{" + "9" * 5000 + "}"
    answer = policy.recall(handle, grep=pattern)
    assert answer.is_error
    assert answer.text.startswith(f"recall: grep {pattern!r:.60} is not a regular expression: ")


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


# ------------------------------------------------------------- counted repeats, warnings

EXPANDS = "recall: grep {!r} is refused: its counted repeats ask for over 100,000 copies"
LAID_OUT = [
    "(?:a{1000}){200}",  # nested: 200,000 (regex took ~52 MB; {65535}){250}: 4.9 GB)
    "x{150000}",
    "(?:^){200000}",  # nothing wide is still laid out
    "(?<=(?:a{500}){500})b",  # in a lookbehind
    "(?:(?:ab){10}|c){20000}",  # in an alternative
]


def spy_on_regex(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of each ``regex.compile`` a grep makes (compiled for real)."""
    regex = pytest.importorskip("regex")
    calls: list[dict[str, Any]] = []

    def compile(pattern: str, flags: int = 0, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return regex.compile(pattern, flags, **kwargs)

    monkeypatch.setitem(
        sys.modules, "regex", SimpleNamespace(VERSION0=regex.VERSION0, compile=compile)
    )
    return calls


@pytest.mark.parametrize("pattern", LAID_OUT)
def test_a_pattern_whose_counts_multiply_past_the_limit_is_refused_before_it_compiles(
    pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``regex`` lays out counted repeats when it compiles, before any deadline runs:
    ``(?:a{65535}){250}`` took 4.9 GB, ``{65535}){65535}`` would take a terabyte."""
    calls = spy_on_regex(monkeypatch)
    policy, handle = kept("a" * 100 + "b\n")
    answer = policy.recall_call({"handle": handle, "grep": pattern})
    assert answer.is_error
    assert answer.text.startswith(EXPANDS.format(pattern))
    assert "write smaller counts" in answer.text
    assert calls == []


def test_counts_that_lay_out_little_are_searched() -> None:
    """Only what must match at least counts: ``.{0,1000000}`` lays out nothing."""
    policy, handle = kept("2024-01-31 ok\n" + "ab" * 1000 + "\n" + "f" * 64 + "\n")
    assert policy.recall(handle, grep=r"\d{4}-\d{2}-\d{2}").text == "1:2024-01-31 ok"
    assert policy.recall(handle, grep="(?:ab){1000}").text.startswith("2:")
    assert policy.recall(handle, grep="^[0-9a-f]{64}$").text == "3:" + "f" * 64
    assert policy.recall(handle, grep="^2.{0,1000000}k$").text == "1:2024-01-31 ok"
    assert policy.recall(handle, grep="(?:(?:ab){0,1000}){0,1000}c").text.startswith("recall: no")


@pytest.mark.usefixtures("no_regex")
def test_without_regex_the_same_patterns_are_refused() -> None:
    """The answer does not depend on whether ``regex`` is installed."""
    policy, handle = kept("a" * 100 + "b\n")
    assert policy.recall(handle, grep=LAID_OUT[0]).text.startswith(EXPANDS.format(LAID_OUT[0]))


def test_without_the_parser_counts_are_read_from_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """An upper bound: the pattern's length times every count it writes."""
    parser = "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
    monkeypatch.setitem(sys.modules, parser, None)
    policy, handle = kept("2024-01-31 ok\n")
    assert policy.recall(handle, grep=LAID_OUT[0]).text.startswith(EXPANDS.format(LAID_OUT[0]))
    assert policy.recall(handle, grep=r"\d{4}-\d{2}").text == "1:2024-01-31 ok"


def test_a_grep_pattern_is_not_kept_in_the_cache_of_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    """``regex`` caches 500 compiled patterns, each holding what it laid out (up to the
    limit, some 26 MB): forty greps near it held 560 MB for good."""
    calls = spy_on_regex(monkeypatch)
    policy, handle = kept("alpha\n")
    assert policy.recall(handle, grep="al+").text == "1:alpha"
    assert calls == [{"cache_pattern": False}]


@pytest.mark.parametrize("engine", ["regex", "re"])
@pytest.mark.parametrize("pattern", ["[[:alpha:]]", "[[=a=]]", "[a&&b]", "[a||b]", "[a~~b]"])
def test_a_warning_re_gives_of_a_pattern_does_not_escape_the_recall(
    pattern: str, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``re`` warns of a POSIX class ("FutureWarning: Possible nested set"): under
    warnings as errors (pytest's ``filterwarnings = error``, as here) it escaped
    ``recall_result``, and a framework's tool died."""
    if engine == "re":
        monkeypatch.setitem(sys.modules, "regex", None)
    re.purge()  # re warns when it compiles, not when its cache answers
    policy, handle = kept("a1\nb2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = policy.recall_result("c1", {"handle": handle, "grep": pattern}, "anthropic")
    assert result["tool_use_id"] == "c1"
    assert "is_error" not in result


@pytest.mark.parametrize("grep", [5, ["beta"], b"beta", {"re": "beta"}, 0, []])
def test_a_grep_that_is_not_a_string_is_an_error_answer(grep: object) -> None:
    """``Policy.recall`` never raises for what an agent may send: a pattern of another type
    (a number, a list, bytes) is answered as ``recall_call`` answers it, not a TypeError
    from deep in the search, nor the whole original for one that is falsy."""
    policy, handle = kept("alpha\nbeta\n")
    answer = policy.recall(handle, grep=grep)  # type: ignore[arg-type]
    assert (answer.text, answer.is_error) == (
        "recall: grep must be a string (a regular expression)",
        True,
    )


# ------------------------------------------------------------- a large original

BIG_LINES = 2_000_000
"""Lines of a large original (15.3 MiB, under the store's default ``max_bytes``), searched
line by line in some 2.5 s: past the deadline for the plainest pattern."""


@pytest.fixture(scope="module")
def big() -> tuple[ctxwin.Policy, str]:
    return kept("".join(f"{i:07d}\n" for i in range(BIG_LINES)))


@pytest.mark.parametrize(
    ("pattern", "lines"),
    [
        ("1999999", None),  # a literal
        (r"^19{6}$", None),  # no line breaks in it: searched as one text
        (r"^1999999\s", None),  # \s may match a line's end: lines holding 1999999 searched
        ("(?:1999999|0000001)", None),
        ("1999999", "1000000-"),
    ],
)
def test_a_plain_search_of_a_large_original_answers(
    pattern: str, lines: str | None, big: tuple[ctxwin.Policy, str]
) -> None:
    """An original the store keeps is searched whole for an ordinary pattern, not refused
    as taking over :data:`GREP_SECONDS` (meant for patterns that backtrack, such as
    ``(a+)+$``): line by line, two million lines ran out of time for ``1999999``."""
    pytest.importorskip("regex")
    policy, handle = big
    answer = policy.recall(handle, lines=lines, grep=pattern)
    found = "2:0000001\n2000000:1999999" if "|" in pattern else "2000000:1999999"
    assert (answer.text, answer.is_error) == (found, False)


ATOMS = [
    "a", "b", "ab", " ", "_", ".", r"\s", r"\S", r"\w", r"\W", r"\d", r"\D", "[^a]", "[ab]",
    r"[^\n]", r"\n", r"[\n]", "^", "$", r"\A", r"\Z", r"\b", r"\B", "(?=a)", "(?!a)",
    "(?<=a)", "(?<!a)", r"(?=\n)", r"(?!\n)", r"(?<!\n)", "(?-m:^)", "(?m:$)", "(?s:.)",
    "(?i:a)", "(a)", r"\1",
]  # fmt: skip
PIECES = st.tuples(
    st.sampled_from(ATOMS), st.sampled_from(["", "*", "+", "?", "{1,2}", "*?", "++"])
).map("".join)
PATTERNS = st.tuples(
    st.sampled_from(["", "(?m)", "(?s)", "(?i)", "(?ms)"]),
    st.lists(st.lists(PIECES, min_size=1, max_size=4).map("".join), min_size=1, max_size=2),
).map(lambda p: p[0] + "|".join(p[1]))
TEXTS = st.text(alphabet=st.sampled_from(list("aAb _1\n\r")), max_size=30)


def matching_lines(search: Callable[[str], object], text: str) -> list[int]:
    """The numbers of the lines of ``text`` (``\n``-ended, ends kept) that ``search`` finds
    a match in: what a grep answers, found line by line."""
    lines = [part + "\n" for part in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return [n for n, line in enumerate(lines, 1) if (line or n == 1) and search(line)]


def answered_lines(text: str, pattern: str) -> list[int] | None:
    answer = part_of(text, "r-0", None, pattern)
    if answer.is_error:
        return None
    if answer.text.startswith("recall: no line of"):
        return []
    return [int(line.split(":", 1)[0]) for line in answer.text.split("\n")]


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, pattern=PATTERNS)
def test_a_grep_answers_the_lines_a_search_line_by_line_finds(text: str, pattern: str) -> None:
    """However the original is searched (as one text, or only the lines holding a text
    every match needs), a grep answers the lines a search of each line alone matches: a
    pattern does not match across lines, ``$``, ``\\Z`` and lookarounds see a line's end."""
    regex = pytest.importorskip("regex")
    try:
        compiled = regex.compile(pattern, regex.VERSION0)
        re.compile(pattern)
    except (regex.error, re.error):
        assume(False)
    if not text:
        assume(False)
    assert answered_lines(text, pattern) == matching_lines(compiled.search, text)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, pattern=PATTERNS)
def test_without_regex_a_grep_answers_the_lines_a_search_line_by_line_finds(
    text: str, pattern: str
) -> None:
    try:
        compiled = re.compile(pattern)
    except re.error:
        assume(False)
    if not text:
        assume(False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "regex", None)
        answered = answered_lines(text, pattern)
    assume(answered is not None)  # refused: repeats that nest
    assert answered == matching_lines(compiled.search, text)
