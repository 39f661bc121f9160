"""recall's grep finds what a cap cut, also in one-line JSON: a long matching line is shown
around its matches, not whole (the recall tool's own cap would cut it again)."""

from __future__ import annotations

import json
import re
import sys

import pytest

import ctxwin
from ctxwin.steps import _grep
from tests.steps.conftest import body_with_result, result_text


def one_line_json(n: int = 3000, at: int = 1700) -> str:
    rows = [{"path": f"src/m{i}.py", "text": f"def f{i}(): pass"} for i in range(n)]
    rows[at]["text"] = "NEEDLE_here"
    return json.dumps({"matches": rows})


def cut_and_grep(pattern: str) -> ctxwin.RecallAnswer:
    policy = ctxwin.load_policy({"recall": True, "tools": {"*": {"max_tokens": 200}}})
    text = result_text(policy.apply(body_with_result(one_line_json()), format="openai-chat"))
    assert "NEEDLE" not in text
    handle = re.search(r"r-[0-9a-f]{16}", text)
    assert handle is not None
    return policy.recall(handle.group(0), grep=pattern)


def test_grep_finds_what_a_cap_cut_from_one_line_json() -> None:
    answer = cut_and_grep("NEEDLE")
    assert not answer.is_error
    assert answer.text.startswith("1:…")
    assert answer.text.endswith("…")
    assert '"text": "NEEDLE_here"' in answer.text
    assert len(answer.text) <= 2 + 2 * _grep.GREP_CONTEXT + len("NEEDLE") + 2


def test_matches_close_together_share_one_excerpt() -> None:
    answer = cut_and_grep(r"m170[01]\.py")
    assert answer.text.count("…") == 2
    assert "src/m1700.py" in answer.text
    assert "src/m1701.py" in answer.text


def test_a_long_line_shows_at_most_its_first_matches() -> None:
    """Matches every 50 characters: their windows merge, up to the 20th match."""
    answer = cut_and_grep(r"def f\d+")
    assert answer.text.startswith('1:{"matches": [{"path": "src/m0.py", "text": "def f0(): pass"}')
    assert answer.text.endswith("…")
    assert len(answer.text) < _grep.GREP_MATCHES * 60
    assert "def f19()" in answer.text
    assert "def f29()" not in answer.text


def test_a_line_up_to_the_shown_length_is_shown_whole() -> None:
    line = "x" * (_grep.GREP_LINE_SHOWN - 6) + "needle"
    text, error = _grep.grep_lines([line + "\n"], 1, "r-0", "needle")
    assert (text, error) == (f"1:{line}", False)


def test_without_regex_a_long_line_is_shown_around_its_matches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "regex", None)
    line = "a" * 1000 + "needle" + "b" * 900
    text, _ = _grep.grep_lines([line], 7, "r-0", "needle")
    assert text == "7:…" + "a" * 150 + "needle" + "b" * 150 + "…"
