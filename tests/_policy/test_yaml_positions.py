"""Where a YAML error is said to be: a line and column the file has, 1-based. PyYAML's
marks count from 0, and at the end of a file that ends with a line break they stand on
a line after it: a 2-line file's unclosed bracket was reported on line 3."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ctxwin
from ctxwin import PolicyError, PolicyErrors


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_bytes(text.encode("utf-8"))  # as written: no newline translation
    return path


def load_error(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        ctxwin.load_policy(path)
    assert not isinstance(info.value, PolicyErrors), str(info.value)
    return info.value


def test_an_unclosed_bracket_is_on_the_last_line_at_the_end_of_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", "context_window: 1000\ntools:\n  grep: {max_tokens: [1\n")
    err = load_error(path)
    assert (err.line, err.column) == (3, 24)
    assert str(err) == (
        f"{path}:3: invalid YAML: expected ',' or ']', but got '<stream end>' at the end of "
        "the file (while parsing a flow sequence that starts on line 3)"
    )


def test_an_unclosed_quote_names_the_line_it_opens_on(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", 'context_window: 1000\ntokenizer: "o200k\n\ntools: {}\n')
    err = load_error(path)
    assert (err.line, err.column) == (4, 10)
    assert err.reason == (
        "invalid YAML: found unexpected end of stream at the end of the file (while "
        "scanning a quoted scalar that starts on line 2)"
    )


def test_a_key_without_its_colon_on_the_last_line(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", "context_window: 1000\ntokenizer\n")
    err = load_error(path)
    assert (err.line, err.column) == (2, 10)
    assert err.reason == (
        "invalid YAML: could not find expected ':' at the end of the file (while scanning a "
        "simple key that starts on line 2)"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: [1", (1, 6)),  # no final line break
        ("a: [1\n", (1, 6)),
        ("a: [1\n\n\n", (3, 1)),  # blank lines: the file's last line is the third
        ("a: [1\r\n", (1, 6)),
        ("a: 1\rb: [1\r", (2, 6)),  # old Mac line breaks, which YAML counts too
        ("\ufeffa: [1\n", (1, 6)),  # a byte-order mark is no column
    ],
)
def test_the_end_of_the_file_is_its_last_line_and_column(
    tmp_path: Path, text: str, where: tuple[int, int]
) -> None:
    err = load_error(write(tmp_path, "d.yaml", text))
    assert (err.line, err.column) == where
    assert " at the end of the file" in err.reason


def test_an_error_inside_the_file_keeps_its_line_and_gets_its_column(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", "context_window: 1000\ntools: [a, b\nwindow: {}\n")
    err = load_error(path)
    assert (err.line, err.column) == (3, 7)
    assert err.reason == "invalid YAML: expected ',' or ']', but got ':'"


def test_a_character_yaml_refuses_is_at_its_column(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", "context_window: 1000\r\rtokenizer: a\x07b\n")
    err = load_error(path)
    assert (err.line, err.column) == (3, 13)


POLICY = """\
context_window: 128000
window: {trigger: 0.5, keep_rounds: 2}
tools:
  "*":
    max_tokens: 4000
    notice: '[cut {dropped} of {tokens}]'
  grep:
    select: "items[?score > `1`]"
    truncate: head_tail
"""


def test_no_truncation_of_a_policy_is_reported_past_its_end(tmp_path: Path) -> None:
    """Every prefix of a policy, ending with no, one or several line breaks, that fails to
    load names a line the file has and a column that line has."""
    path = tmp_path / "d.yaml"
    failed = 0
    for n in range(1, len(POLICY)):
        for ending in ("", "\n", "\n\n  \n"):
            text = POLICY[:n] + ending
            path.write_text(text, encoding="utf-8")
            try:
                ctxwin.load_policy(path)
                continue
            except PolicyError as e:
                errors = getattr(e, "errors", (e,))
            failed += 1
            lines = re.split(r"\r\n|[\r\n]", text)
            if len(lines) > 1 and not lines[-1]:
                lines.pop()
            for err in errors:
                assert err.line is not None, (text, str(err))
                assert 1 <= err.line <= len(lines), (text, str(err))
                if err.column is not None and not err.reason.startswith("invalid JMESPath"):
                    assert 1 <= err.column <= len(lines[err.line - 1]) + 1, (text, str(err))
    assert failed > len(POLICY)  # most prefixes are broken YAML or policies


def test_a_key_overriding_a_merged_one_is_named_at_its_own_line(tmp_path: Path) -> None:
    """``<<: *base`` then the same key: PyYAML keeps the last value, but the error named the
    anchor's line, where the valid value stands."""
    text = (
        "tools:\n"
        "  read_file: &base\n"
        "    max_tokens: 1000\n"
        "    truncate: tail\n"
        "  search_code:\n"
        "    <<: *base\n"
        "    max_tokens: 10\n"
        "    truncate: middle\n"
    )
    path = write(tmp_path, "d.yaml", text)
    with pytest.raises(PolicyErrors) as info:
        ctxwin.load_policy(path)
    assert [(e.line, e.key) for e in info.value.errors] == [
        (7, "tools.search_code.max_tokens"),
        (8, "tools.search_code.truncate"),
    ]


def test_a_merged_key_that_is_wrong_is_named_where_its_value_stands(tmp_path: Path) -> None:
    text = "tools:\n  a: &base\n    max_tokens: 10\n  b:\n    <<: *base\n    truncate: tail\n"
    path = write(tmp_path, "d.yaml", text)
    with pytest.raises(PolicyErrors) as info:
        ctxwin.load_policy(path)
    assert [(e.line, e.key) for e in info.value.errors] == [
        (3, "tools.a.max_tokens"),
        (3, "tools.b.max_tokens"),
    ]
