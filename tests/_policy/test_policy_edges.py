"""Policies at the edges a production user reaches: numbers too large to run, the two forms
of ``pricing:``, keys in the wrong place, policies given as mappings or objects, templates
that cannot take effect, and the files a policy folder holds."""

from __future__ import annotations

import types
import warnings
from pathlib import Path

import pytest

import ctxwin
from ctxwin import PolicyError, PolicyErrors, PolicyWarning, ToolRules
from tests._policy.test_compile import load_error, write

HUGE = "9" * 400


# ------------------------------------------------------------------ numbers that cannot run


SUMMARY = "{over_tokens: 9, max_tokens: " + HUGE + "}"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (f"context_window: {HUGE}\n", "context_window"),
        (f"pricing: {{cache_write: 1, cache_read: 0, min_prefix: {HUGE}}}\n", "pricing.min_prefix"),
        (f"tools: {{a: {{summarize: {SUMMARY}}}}}\n", "tools.a.summarize.max_tokens"),
        (f"tools:\n  a: {{max_tokens: {HUGE}}}\n", "tools.a.max_tokens"),
        (f"window: {{keep_rounds: {HUGE}}}\n", "window.keep_rounds"),
    ],
)
def test_a_count_too_large_for_arithmetic_is_refused_at_load(
    tmp_path: Path, text: str, key: str
) -> None:
    """A 400-digit count raised a bare OverflowError, at load or at the first request."""
    err = load_error(write(tmp_path, "d.yaml", text))
    assert err.key == key
    assert err.reason.startswith("must be less than or equal to 1000000000000000 (got 9999")


@pytest.mark.parametrize("section", ["tools:\n  a:\n    summarize:", "store:"])
def test_a_timeout_python_cannot_wait_for_is_refused_at_load(tmp_path: Path, section: str) -> None:
    """``timeout: 1e10`` loaded, then every apply raised OverflowError from the wait."""
    extra = " {over_tokens: 50, max_tokens: 40, timeout: 1.0e+10}" if "summarize" in section else ""
    text = section + (extra or "\n  url: memory\n  timeout: 1.0e+10") + "\n"
    err = load_error(write(tmp_path, "d.yaml", text))
    assert err.reason == "must be less than or equal to 86400 (got 10000000000.0)"


def test_a_fraction_above_one_is_refused_not_read_as_one_token(tmp_path: Path) -> None:
    """``target: 1.5`` was read as 1 token: every old result cleared at each jump."""
    err = load_error(write(tmp_path, "d.yaml", "window:\n  trigger: 0.9\n  target: 1.5\n"))
    assert (err.line, err.key, err.reason) == (
        3,
        "window.target",
        "a value above 1 is a number of tokens and must be whole (got 1.5); "
        "a fraction of the window is at most 1",
    )


# ------------------------------------------------------------------ pricing


def test_custom_pricing_missing_a_price_is_one_error_at_its_key(tmp_path: Path) -> None:
    """pydantic's union branches leaked: 'pricing.str: must be a string' and
    'pricing.PricingConfig.cache_read' for one missing key."""
    path = write(tmp_path, "d.yaml", "pricing:\n  cache_write: 1.25\n")
    err = load_error(path)
    assert not isinstance(err, PolicyErrors)
    assert str(err) == f"{path}:2: pricing.cache_read: required key is missing"


def test_pricing_that_is_neither_a_name_nor_a_mapping_says_what_it_may_be(
    tmp_path: Path,
) -> None:
    err = load_error(write(tmp_path, "d.yaml", "pricing: 3\n"))
    assert not isinstance(err, PolicyErrors)
    assert (err.key, err.reason) == (
        "pricing",
        "must be a preset name or a mapping {cache_write, cache_read, min_prefix} (got 3)",
    )


def test_an_unknown_price_key_lists_the_keys_and_the_nearest(tmp_path: Path) -> None:
    text = "pricing:\n  cache_write: 1.25\n  cache_read: 0.1\n  min_prefx: 1024\n"
    err = load_error(write(tmp_path, "d.yaml", text))
    assert (err.line, err.key, err.reason) == (
        4,
        "pricing.min_prefx",
        "unknown key 'min_prefx' (expected one of: cache_read, cache_write, min_prefix); "
        "did you mean 'min_prefix'?",
    )


# ------------------------------------------------------------------ keys


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("recall:\n  enable: true\n", "(expected one of: enabled, max_tokens, note); did you mean 'enabled'?"),  # noqa: E501
        ("store:\n  uri: memory\n", "(expected one of: max_bytes, timeout, ttl, url); did you mean 'url'?"),  # noqa: E501
    ],
)  # fmt: skip
def test_an_unknown_key_of_recall_or_store_lists_the_keys(
    tmp_path: Path, text: str, expected: str
) -> None:
    err = load_error(write(tmp_path, "d.yaml", text))
    assert err.line == 2
    assert err.reason.endswith(expected)


def test_a_section_key_written_at_the_top_says_where_it_belongs(tmp_path: Path) -> None:
    err = load_error(write(tmp_path, "d.yaml", "context_window: 1000\nkeep_rounds: 3\n"))
    assert (err.line, err.key) == (2, "keep_rounds")
    assert err.reason.endswith("; it is a key of window:")


def test_a_summarize_key_in_a_tool_file_says_it_belongs_under_summarize(tmp_path: Path) -> None:
    err = load_error(write(tmp_path, "t.yaml", "tool: a\nover_tokens: 500\n"))
    assert err.reason.endswith("; it is a key of summarize:")


def test_a_key_yaml_reads_as_no_string_is_named_at_its_own_line(tmp_path: Path) -> None:
    """pydantic said '1: Keys should be strings' at the section's line (and ``yes:`` as 1)."""
    err = load_error(write(tmp_path, "d.yaml", "window:\n  keep_rounds: 3\n  yes: 2\n"))
    assert err.line == 3
    assert err.reason.startswith(
        "unknown key true (YAML reads an unquoted yes, no, on or off as true or false; "
        "write it in quotes) (expected one of: clear_reasoning,"
    )


# ------------------------------------------------------------------ policies given in Python


def test_a_policy_given_as_a_read_only_mapping_loads() -> None:
    """A Mapping that is no dict was refused as 'must be a mapping (got mappingproxy(...))'."""
    window = types.MappingProxyType({"keep_rounds": 3})
    policy = ctxwin.load_policy(types.MappingProxyType({"context_window": 6000, "window": window}))
    assert policy.config.window.keep_rounds == 3


def test_tool_rules_given_as_objects_in_a_dict_are_used() -> None:
    """``tools: {"a": ToolRules(...)}`` loaded with no tool rules at all."""
    policy = ctxwin.load_policy({"tools": {"a": ToolRules(max_tokens=100)}})
    found = policy.compiled.rules_for("a")
    assert found is not None
    assert found.rules.max_tokens == 100


def test_tool_rules_given_as_objects_have_their_jmespath_checked() -> None:
    err = load_error({"tools": {"a": ToolRules(select="foo[?")}})
    assert (err.key, err.column) == ("tools.a.select", 6)


def test_a_mapping_nested_in_itself_is_refused() -> None:
    data: dict[str, object] = {}
    data["tools"] = data
    assert load_error(data).reason == "nested deeper than 64 levels"


def test_an_empty_policy_path_is_refused_not_read_as_the_working_folder() -> None:
    """``load_policy(os.environ.get("POLICY", ""))`` read every YAML file of the cwd."""
    assert load_error("").reason == "the policy path is empty (write '.' for this folder)"


# ------------------------------------------------------------------ templates and JMESPath


def test_a_template_quoting_handle_without_recall_warns_at_its_line(tmp_path: Path) -> None:
    """The step writes the default text instead: the template silently had no effect."""
    path = write(tmp_path, "t.yaml", "tool: a\nmax_tokens: 100\nnotice: 'cut, see {handle}'\n")
    with pytest.warns(PolicyWarning) as caught:
        ctxwin.load_policy(path)
    (warning,) = [w.message for w in caught]
    assert isinstance(warning, PolicyWarning)
    assert (warning.line, warning.key, warning.reason) == (
        3,
        "notice",
        "the template quotes {handle}, but recall is off for this tool: the default text is "
        "used instead",
    )


def test_a_template_quoting_handle_with_recall_on_loads_silently(tmp_path: Path) -> None:
    path = write(
        tmp_path, "t.yaml", "tool: a\nmax_tokens: 100\nrecall: true\nnotice: 'cut {handle}'\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctxwin.load_policy(path)


def test_a_jmespath_error_on_a_later_line_of_the_expression_shows_that_line(
    tmp_path: Path,
) -> None:
    """The caret sat under the whole multi-line text, in the wrong line."""
    text = "tool: a\nselect: |\n  items[].path\n  | sort_by(@, &x\n"
    err = load_error(write(tmp_path, "t.yaml", text))
    assert (err.line, err.column) == (2, 16)
    assert err.reason == (
        "invalid JMESPath at line 2, column 16 of the expression: incomplete expression"
    )
    assert err.detail == "    | sort_by(@, &x\n" + " " * 19 + "^"


def test_an_empty_select_says_it_is_empty(tmp_path: Path) -> None:
    err = load_error(write(tmp_path, "t.yaml", "tool: a\nselect: ''\n"))
    assert (err.reason, err.detail) == ("invalid JMESPath: the expression is empty", None)


# ------------------------------------------------------------------ the files of a folder


def test_hidden_files_of_a_folder_are_not_read(tmp_path: Path) -> None:
    """macOS leaves ``._name.yaml`` beside each file copied to a foreign disk: not UTF-8."""
    write(tmp_path, "defaults.yaml", "context_window: 6000\n")
    (tmp_path / "._defaults.yaml").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X")
    assert ctxwin.load_policy(tmp_path).config.context_window == 6000


def test_a_file_with_an_upper_case_suffix_is_read(tmp_path: Path) -> None:
    write(tmp_path, "defaults.yaml", "context_window: 6000\n")
    write(tmp_path, "search.YAML", "tool: search\nmax_tokens: 100\n")
    found = ctxwin.load_policy(tmp_path).compiled.rules_for("search")
    assert found is not None
    assert found.rules.max_tokens == 100


def test_a_subfolder_of_yaml_files_warns_that_it_is_not_read(tmp_path: Path) -> None:
    """Rules in ``tools/search.yaml`` were ignored without a word."""
    write(tmp_path, "defaults.yaml", "context_window: 6000\n")
    write(tmp_path / "tools", "search.yaml", "tool: search\nmax_tokens: 100\n")
    with pytest.warns(PolicyWarning) as caught:
        ctxwin.load_policy(tmp_path)
    (warning,) = [w.message for w in caught]
    assert str(warning) == (
        f"{tmp_path / 'tools'}: a subfolder is not read: a policy folder holds its files directly"
    )


def test_a_tab_in_the_indentation_says_yaml_indents_with_spaces(tmp_path: Path) -> None:
    err = load_error(write(tmp_path, "d.yaml", "window:\n\tkeep_rounds: 3\n"))
    assert err.line == 2
    assert err.reason.endswith("(YAML indents with spaces, never tabs)")


def test_an_error_in_python_names_no_file() -> None:
    """A dict's errors keep naming ``<policy>`` and the key, as before."""
    with pytest.raises(PolicyError) as info:
        ctxwin.load_policy({"window": {"keep_rounds": 0}})
    assert str(info.value) == (
        "<policy>: window.keep_rounds: must be greater than or equal to 1 (got 0)"
    )


def test_a_glob_without_literal_characters_still_wins_over_star() -> None:
    """``"?*"`` (a name of one character or more) tied with ``"*"`` and lost by spelling."""
    policy = ctxwin.load_policy({"tools": {"*": {"max_tokens": 100}, "?*": {"max_tokens": 200}}})
    found = policy.compiled.rules_for("search")
    assert found is not None
    assert found.pattern == "?*"
