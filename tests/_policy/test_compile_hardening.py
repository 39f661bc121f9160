"""Policies that used to lint "ok" and crash at apply: refused at load, at file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ctxwin
from ctxwin import PolicyError, PolicyErrors


def load_error(source: object) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        ctxwin.load_policy(source)  # type: ignore[arg-type]
    assert not isinstance(info.value, PolicyErrors), str(info.value)
    return info.value


def tool_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text("tool: t\n" + text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ JMESPath


def test_an_unknown_function_is_refused_with_its_column(tmp_path: Path) -> None:
    path = tool_file(tmp_path, "select: 'items[].{n: nosuchfn(@)}'\n")
    err = load_error(path)
    assert (err.file, err.line, err.key, err.column) == (str(path), 2, "select", 13)
    assert err.reason.startswith("invalid JMESPath at column 13: unknown function nosuchfn()")
    assert "(JMESPath has: abs, avg," in err.reason
    assert err.detail == "    items[].{n: nosuchfn(@)}\n" + " " * 16 + "^"


def test_a_function_with_the_wrong_number_of_arguments_is_refused(tmp_path: Path) -> None:
    err = load_error(tool_file(tmp_path, "select: 'length(a, b)'\n"))
    assert (err.line, err.reason) == (
        2,
        "invalid JMESPath at column 1: length() takes 1 argument, got 2",
    )
    err = load_error(tool_file(tmp_path, "select: 'not_null()'\n"))
    assert err.reason == "invalid JMESPath at column 1: not_null() takes at least 1 argument, got 0"


@pytest.mark.parametrize("expr", ["merge(a, b, c)", "join(',', a[].b)", "sort_by(a, &b)"])
def test_known_functions_load(expr: str) -> None:
    assert ctxwin.load_policy({"tools": {"t": {"select": expr}}}).compiled.tools


def test_a_long_bad_expression_is_quoted_as_a_window_around_the_column() -> None:
    expr = "a." * 200 + "nosuchfn(@)"
    err = load_error({"tools": {"t": {"select": expr}}})
    assert err.detail is not None
    shown, caret = err.detail.splitlines()
    assert len(shown) <= 84
    assert caret.index("^") == shown.index("nosuchfn")


NESTED = [
    "[" * 500 + "@" + "]" * 500,  # jmespath's parser ran out of stack
    "(" * 500 + "a" + ")" * 500,
    "abs(" * 500 + "@" + ")" * 500,
    "!" * 500 + "a",
    "||".join(["a"] * 500),  # parsed, but walked recursively when a result is no JSON
    "`" + "[" * 3000 + "1" + "]" * 3000 + "`",  # jmespath's lexer json.loads a literal
    "`" + '{"a": ' * 100 + "1" + "}" * 100 + "`",  # loaded: a literal's JSON nests too
]
NESTED_IDS = ["brackets", "parens", "calls", "nots", "ors", "literal", "literal-object"]


@pytest.mark.parametrize("expr", NESTED, ids=NESTED_IDS)
def test_an_expression_nested_too_deeply_is_refused_at_its_line(tmp_path: Path, expr: str) -> None:
    """A select nested some hundreds of levels deep raised a bare RecursionError from
    jmespath's parser, or (``a || a || ...``) loaded and raised it at apply; a backtick
    literal nested some thousands deep raised it from the lexer that looks for deprecated
    literals (review s49-1)."""
    err = load_error(tool_file(tmp_path, f"select: '{expr}'\n"))
    assert (err.line, err.key, err.column) == (2, "select", None)
    assert err.reason == (
        "invalid JMESPath: nested more than 64 levels deep (brackets, parentheses, function "
        "calls, operators): simplify it"
    )


@pytest.mark.parametrize(
    "expr",
    ["[" * 63 + "@" + "]" * 63, "`" + "[" * 63 + "1" + "]" * 63 + "`"],
    ids=["path", "literal"],
)
def test_an_expression_64_levels_deep_loads(expr: str) -> None:
    assert ctxwin.load_policy({"tools": {"t": {"select": expr}}}).compiled.tools


# ------------------------------------------------------------------------------ templates

NOT_PLAIN = [
    "{tokens[0]}",
    "{tool.nope}",
    "{tool:d}",
    "{tokens!z}",
    "{tokens!r}",
    "{tokens:>300000000}",
]


@pytest.mark.parametrize("field", NOT_PLAIN)
def test_a_placeholder_field_must_be_a_plain_name(tmp_path: Path, field: str) -> None:
    path = tool_file(tmp_path, f"placeholder: '[cleared {field}]'\n")
    err = load_error(path)
    assert (err.file, err.line, err.key) == (str(path), 2, "placeholder")
    assert err.reason == (
        f"template field {field} is not a plain name (no index, attribute, format spec or "
        "conversion; allowed: {call_id}, {handle}, {tokens}, {tool})"
    )


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("tool: t\nnotice: '{omitted_tokens:,}'\n", "notice", 2),
        ("window:\n  placeholder: '{tool.__class__}'\n", "window.placeholder", 2),
        ("repair:\n  missing_result: '{tool[0]}'\n", "repair.missing_result", 2),
        ("repair:\n  first_user: '{tool}'\n", "repair.first_user", 2),
        ("recall:\n  note: '{handle!s}'\n", "recall.note", 2),
        ("recall:\n  note: '{tokens}'\n", "recall.note", 2),
    ],
)
def test_every_template_is_checked_at_its_line(
    tmp_path: Path, text: str, key: str, line: int
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    err = load_error(path)
    assert (err.line, err.key) == (line, key)
    assert "template field" in err.reason


NO_HANDLE = (
    "must quote {handle}: the note is what tells the agent which original to recall "
    "(got 'Use the recall tool for the rest.')"
)


@pytest.mark.parametrize("enabled", ["true", "false"])
def test_a_recall_note_without_its_handle_is_refused_at_its_line(
    tmp_path: Path, enabled: str
) -> None:
    """It loaded, and every result it followed told the agent to recall with no handle to
    pass, the note said twice after a cap (review s50-8 finding 3)."""
    path = tmp_path / "p.yaml"
    text = f"recall:\n  enabled: {enabled}\n  note: 'Use the recall tool for the rest.'\n"
    path.write_text(text, encoding="utf-8")
    err = load_error(path)
    assert (err.file, err.line, err.key) == (str(path), 3, "recall.note")
    assert err.reason == NO_HANDLE


def test_a_recall_note_without_its_handle_is_refused_in_a_dict() -> None:
    err = load_error({"recall": {"enabled": True, "note": "Use the recall tool for the rest."}})
    assert (err.key, err.reason) == ("recall.note", NO_HANDLE)


def test_a_template_with_no_fields_allowed_says_none(tmp_path: Path) -> None:
    err = load_error({"repair": {"empty_result": "[{x}]"}})
    assert err.reason == "unknown template field {x} (allowed: none)"


def test_plain_fields_and_escaped_braces_load() -> None:
    policy = ctxwin.load_policy(
        {
            "window": {"placeholder": "{{json}} [{tool} {call_id} {tokens}]"},
            "recall": {"note": "recall({handle}) for {tool}"},
            "tools": {"t": {"notice": "[{omitted_tokens}/{total_tokens}]", "max_tokens": 100}},
        }
    )
    assert policy.config.window.placeholder.startswith("{{json}}")


@pytest.mark.parametrize("key", ["missing_result", "empty_result", "first_user", "last_user"])
@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_a_blank_repair_text_is_refused_at_its_line(tmp_path: Path, key: str, text: str) -> None:
    """Repair writes the text as a message or result of its own, and providers refuse a
    blank one (Anthropic: text content blocks must be non-empty; Gemini: an empty part)."""
    path = tmp_path / "p.yaml"
    path.write_text(f"repair:\n  {key}: {json.dumps(text)}\n", encoding="utf-8")
    err = load_error(path)
    assert (err.file, err.line, err.key) == (str(path), 2, f"repair.{key}")
    assert err.reason == (
        f"must hold some text: providers refuse a blank message or result (got {text!r})"
    )
