"""Policy files that used to break the loader: each is a PolicyError at its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxwin
from ctxwin import PolicyError, PolicyErrors


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def load_error(source: object, **kw: object) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        ctxwin.load_policy(source, **kw)  # type: ignore[arg-type]
    assert not isinstance(info.value, PolicyErrors), str(info.value)
    return info.value


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
@pytest.mark.parametrize("key", ["trigger", "target"])
def test_infinite_and_nan_numbers_are_refused_at_their_line(
    tmp_path: Path, key: str, value: str
) -> None:
    path = write(tmp_path, "d.yaml", f"context_window: 1000\nwindow:\n  {key}: {value}\n")
    err = load_error(path)
    assert (err.file, err.line, err.key) == (str(path), 3, f"window.{key}")
    assert err.reason.startswith("must be a finite number") or "greater than 0" in err.reason


def test_every_float_key_refuses_infinity(tmp_path: Path) -> None:
    path = write(
        tmp_path, "t.yaml", "tool: t\nsummarize: {over_tokens: 50, max_tokens: 30, timeout: .inf}\n"
    )
    err = load_error(path)
    assert (err.line, err.key, err.reason) == (
        2,
        "summarize.timeout",
        "must be a finite number (got inf)",
    )


def test_a_file_that_is_not_utf8_names_the_line_and_byte(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", b"context_window: 1000\ntokenizer: caf\xe9\n")
    err = load_error(path)
    assert str(err) == f"{path}:2: not UTF-8: byte 0xe9 at offset 35"


def test_a_nul_byte_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", "context_window: 1000\n\ntokenizer: a\x00b\n")
    err = load_error(path)
    assert (err.file, err.line) == (str(path), 3)
    assert err.reason == "character U+0000 is not allowed in YAML"


@pytest.mark.parametrize(
    ("char", "name"),
    [("\u2028", "LINE SEPARATOR"), ("\u2029", "PARAGRAPH SEPARATOR"), ("\x85", "NEXT LINE")],
)
def test_a_line_break_only_yaml_sees_is_named_where_an_editor_shows_it(
    tmp_path: Path, char: str, name: str
) -> None:
    """Pasted from a web page into a comment: YAML read the rest of the comment as content
    and named a later line that was fine."""
    text = (
        f"context_window: 6000\r\n# cap long outputs{char}see the wiki\nwindow:\n  trigger: 0.5\n"
    )
    path = write(tmp_path, "d.yaml", text)
    err = load_error(path)
    assert (err.line, err.column) == (2, 19)
    assert err.reason == (
        f"character U+{ord(char):04X} ({name}) is a line break to YAML, though editors show "
        "none: replace it with a newline or a space"
    )


def test_duplicate_keys_are_refused_naming_both_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path, "d.yaml", "context_window: 1000\nwindow:\n  trigger: 0.6\ncontext_window: 2000\n"
    )
    err = load_error(path)
    assert str(err) == f"{path}:4: duplicate key 'context_window' (first on line 1)"


def test_duplicate_keys_in_a_nested_mapping_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tool: t\nsummarize:\n  over_tokens: 9\n  over_tokens: 10\n")
    assert load_error(path).line == 4


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("context_window: '4000'\n", "context_window"),
        ("window:\n  keep_rounds: '3'\n", "window.keep_rounds"),
        ("window:\n  keep_rounds: 3.0\n", "window.keep_rounds"),
        ("window:\n  trigger: '0.7'\n", "window.trigger"),
        ("tools:\n  t: {max_tokens: '300'}\n", "tools.t.max_tokens"),
        (
            "tools:\n  t: {summarize: {over_tokens: '900', max_tokens: 100}}\n",
            "tools.t.summarize.over_tokens",
        ),
        (
            "tools:\n  t: {summarize: {over_tokens: 900, max_tokens: true}}\n",
            "tools.t.summarize.max_tokens",
        ),
        ("window:\n  clear_tool_inputs: 1\n", "window.clear_tool_inputs"),
    ],
)
def test_numbers_and_flags_are_not_coerced_from_other_types(
    tmp_path: Path, text: str, key: str
) -> None:
    err = load_error(write(tmp_path, "d.yaml", text))
    assert err.key == key
    assert err.line == text.count("\n")
    assert err.reason.startswith("must be")


def test_a_trigger_in_tokens_above_the_context_window_is_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path, "d.yaml", "context_window: 8000\nwindow:\n  trigger: 9000\n  target: 4000\n"
    )
    err = load_error(path)
    assert (err.line, err.key) == (3, "window.trigger")
    assert err.reason == "trigger 9,000 tokens is above the context window (8,000 tokens)"


def test_a_trigger_of_millions_of_tokens_is_said_in_whole_tokens(tmp_path: Path) -> None:
    """``{value:g}`` wrote 1500000 as 1.5e+06."""
    text = "context_window: 128000\nwindow:\n  trigger: 1500000\n  target: 1200000\n"
    err = load_error(write(tmp_path, "d.yaml", text))
    assert err.reason == "trigger 1,500,000 tokens is above the context window (128,000 tokens)"


def test_a_trigger_in_tokens_is_free_when_the_window_is_auto() -> None:
    policy = ctxwin.load_policy(
        {"context_window": "auto", "window": {"trigger": 9000, "target": 4000}}
    )
    assert policy.config.window.trigger == 9000


BILLION_LAUGHS = "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['lol'] * 9)}]\n"
    for p, n in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def test_a_yaml_bomb_is_refused_while_composing_with_a_short_message(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", BILLION_LAUGHS + "context_window: *i\n")
    err = load_error(path)
    assert type(err) is PolicyError
    assert err.reason == "its aliases expand to more than 100000 nodes"
    assert len(str(err)) < 200


def test_values_in_errors_are_short_excerpts(tmp_path: Path) -> None:
    """A value under the expansion bound, put under typed keys: each error quotes a prefix."""
    small = "".join(BILLION_LAUGHS.splitlines(keepends=True)[:4])
    path = write(tmp_path, "d.yaml", small + "context_window: *d\ntokenizer: *d\n")
    with pytest.raises(PolicyErrors) as info:
        ctxwin.load_policy(path)
    typed = [e for e in info.value.errors if e.key in ("context_window", "tokenizer")]
    assert [(e.key, e.line) for e in typed] == [("context_window", 5), ("tokenizer", 6)]
    for e in info.value.errors:
        assert len(e.reason) <= 200, e.reason
    assert all("got [[[" in e.reason and len(e.reason.split("got ", 1)[1]) <= 61 for e in typed)


def test_a_long_string_is_quoted_as_an_excerpt(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", f"context_window: {'9' * 50}x{'9' * 5000}\n")
    err = load_error(path)
    assert len(err.reason) <= 120
    assert "..." in err.reason


def test_more_than_a_thousand_aliases_are_refused(tmp_path: Path) -> None:
    aliases = ", ".join(["*a"] * 1001)
    path = write(tmp_path, "d.yaml", f"x: &a 1\ny: [{aliases}]\n")
    err = load_error(path)
    assert (err.line, err.reason) == (2, "more than 1000 aliases")


def test_an_alias_that_refers_to_itself_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", "context_window: 1000\nx: &x [1, *x]\n")
    err = load_error(path)
    assert (err.line, err.reason) == (2, "an alias refers to itself")


@pytest.mark.parametrize(
    "text",
    [
        "window: " + "[" * 3000 + "]" * 3000 + "\n",
        "".join("  " * i + f"k{i}:\n" for i in range(3000)),
    ],
    ids=["flow", "block"],
)
def test_deep_yaml_is_a_policy_error_with_a_line(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "d.yaml", text)
    err = load_error(path)
    assert err.reason == "nested deeper than 64 levels"
    assert err.line is not None


def test_ordinary_aliases_still_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "d.yaml",
        "x-cap: &cap {max_tokens: 300}\ntools:\n  a: *cap\n  b: *cap\n",
    )
    err = load_error(path)  # x-cap is not a policy key: the only error
    assert err.key == "x-cap"
    write(tmp_path, "d.yaml", "tools:\n  a: &cap {max_tokens: 300}\n  b: *cap\n")
    policy = ctxwin.load_policy(tmp_path / "d.yaml")
    assert policy.compiled.rules_for("b").rules.max_tokens == 300  # type: ignore[union-attr]


def test_a_symlink_out_of_the_policy_folder_is_refused_unless_opted_in(tmp_path: Path) -> None:
    secret = write(tmp_path, "secret.yaml", "context_window: TOP-SECRET-VALUE-1234\n")
    folder = tmp_path / "policy"
    folder.mkdir()
    write(folder, "t.yaml", "tool: t\nmax_tokens: 100\n")
    (folder / "defaults.yaml").symlink_to(secret)
    err = load_error(folder)
    assert err.file == str(folder / "defaults.yaml")
    assert "outside the policy folder" in err.reason
    assert "TOP-SECRET" not in str(err)
    with pytest.raises(PolicyError, match="TOP-SECRET"):  # opted in: read, and quoted
        ctxwin.load_policy(folder, follow_symlinks=True)


def test_a_symlink_inside_the_policy_folder_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "policy"
    folder.mkdir()
    write(folder, "base.yml", "context_window: 9000\n")
    (folder / "defaults.yaml").symlink_to(folder / "base.yml")
    err = load_error(folder)  # the same defaults twice, through the link: read as itself
    assert "a second defaults file" in err.reason
    (folder / "base.yml").rename(folder / "base.txt")
    (folder / "defaults.yaml").unlink()
    (folder / "defaults.yaml").symlink_to("base.txt")
    assert ctxwin.load_policy(folder).config.context_window == 9000


def test_the_text_of_many_errors_shows_the_first_fifty(tmp_path: Path) -> None:
    rules = ", ".join(f"k{i}: 1" for i in range(40))
    tools = "".join(f"  t{n}: *bad\n" for n in range(30))
    path = write(tmp_path, "d.yaml", f"x-bad: &bad {{{rules}}}\ntools:\n{tools}")
    with pytest.raises(PolicyErrors) as info:
        ctxwin.load_policy(path)
    assert len(info.value.errors) == 1 + 30 * 40
    lines = str(info.value).splitlines()
    assert len(lines) == 51
    assert lines[-1] == "... and 1,151 more policy errors"
    assert info.value.reason == "1,201 policy errors"


def test_a_yaml_error_quotes_a_long_name_as_an_excerpt(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", f"context_window: *{'a' * 5000}\n")
    err = load_error(path)
    assert err.line == 1
    assert err.reason.startswith("invalid YAML: found undefined alias 'aaa")
    assert len(err.reason) <= 135


@pytest.mark.parametrize("target", ["gone/read_file.yaml", "read_file.yaml"])
def test_a_policy_file_linking_to_nothing_is_refused_at_its_name(
    tmp_path: Path, target: str
) -> None:
    """A dangling link (a file moved, a stale mount; or a link to itself) was skipped
    silently: its tool's rules vanished and lint said ok."""
    write(tmp_path, "defaults.yaml", "context_window: 8000\n")
    (tmp_path / "read_file.yaml").symlink_to(target)
    err = load_error(tmp_path)
    assert (err.file, err.line) == (str(tmp_path / "read_file.yaml"), None)
    assert err.reason == (
        f"a symbolic link to {target}, which leads to no file: the rules it held would be "
        "missing (fix or remove the link)"
    )
