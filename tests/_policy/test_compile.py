"""Loading policies: every error names file, line, key (and column for JMESPath)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ctxwin
from ctxwin import PolicyError, PolicyErrors

REPO = Path(__file__).resolve().parents[2]


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(source: object) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        ctxwin.load_policy(source)  # type: ignore[arg-type]
    return info.value


# ------------------------------------------------------------------------------ loading


def test_a_folder_loads_defaults_and_one_file_per_tool(tmp_path: Path) -> None:
    write(tmp_path, "defaults.yaml", "context_window: 32000\ntools:\n  '*': {max_tokens: 900}\n")
    write(tmp_path, "get_order.yaml", "tool: get_order\nselect: '{id: id}'\nmax_tokens: 200\n")
    policy = ctxwin.load_policy(tmp_path)
    assert policy.config.context_window == 32000
    assert policy.compiled.rules_for("get_order").rules.max_tokens == 200  # type: ignore[union-attr]
    assert policy.compiled.rules_for("anything").rules.max_tokens == 900  # type: ignore[union-attr]


def test_exact_names_win_over_globs_and_globs_over_star() -> None:
    policy = ctxwin.load_policy(
        {
            "tools": {
                "*": {"max_tokens": 100},
                "search_*": {"max_tokens": 200},
                "search_web": {"max_tokens": 300},
            }
        }
    )
    rules = {
        t: policy.compiled.rules_for(t).rules.max_tokens for t in ("search_web", "search_db", "x")
    }  # type: ignore[union-attr]
    assert rules == {"search_web": 300, "search_db": 200, "x": 100}


def test_a_tool_without_rules_and_no_star_gets_none() -> None:
    assert ctxwin.load_policy({"tools": {"a": {"max_tokens": 50}}}).compiled.rules_for("b") is None


def test_defaults_apply_when_the_folder_has_only_tool_files(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "tool: t\nmax_tokens: 100\n")
    assert ctxwin.load_policy(tmp_path).config.context_window == 128000


def test_yaml_cannot_run_code(tmp_path: Path) -> None:
    path = write(tmp_path, "p.yaml", "context_window: !!python/object/apply:os.system ['true']\n")
    err = load_error(path)
    assert err.file == str(path)
    assert err.line == 1
    assert "invalid YAML" in err.reason


def test_the_example_policies_load() -> None:
    for folder in ("policies/airline", "policies/coding"):
        policy = ctxwin.load_policy(REPO / folder)
        assert policy.compiled.tools


# ------------------------------------------------------------------------------ errors


def test_unknown_key_names_file_line_key_and_what_is_allowed(tmp_path: Path) -> None:
    path = write(
        tmp_path, "defaults.yaml", "context_window: 1000\nwindow:\n  trigger: 0.6\n  targt: 0.4\n"
    )
    err = load_error(path)
    assert str(err) == (
        f"{path}:4: window.targt: unknown key 'targt' "
        "(expected one of: clear_reasoning, clear_tool_inputs, drop_target, keep_rounds, "
        "max_overrun, overrun_grace, placeholder, strategy, target, trigger); "
        "did you mean 'target'?"
    )
    assert (err.file, err.line, err.key) == (str(path), 4, "window.targt")


def test_wrong_type_says_what_was_expected(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tool: t\nmax_tokens: lots\n")
    assert str(load_error(path)) == f"{path}:2: max_tokens: must be an integer (got 'lots')"


def test_bad_choice_lists_the_choices(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tool: t\ntruncate: middle\n")
    assert str(load_error(path)) == f"{path}:2: truncate: must be 'head', 'tail' or 'head_tail'"


def test_bad_jmespath_names_the_column_with_a_caret(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tool: t\nselect: 'items[?qty > ].name'\n")
    err = load_error(path)
    assert (err.line, err.key, err.column) == (2, "select", 14)
    assert str(err) == (
        f"{path}:2: select: invalid JMESPath at column 14: unexpected ']'\n"
        "    items[?qty > ].name\n"
        "                 ^"
    )


def test_incomplete_jmespath(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tool: t\nselect: '{a: a, b: b'\n")
    err = load_error(path)
    assert err.reason == "invalid JMESPath at column 12: incomplete expression"


def test_unknown_template_field(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tool: t\nnotice: '[cut {omitted} tokens]'\n")
    assert str(load_error(path)) == (
        f"{path}:2: notice: unknown template field {{omitted}} (allowed: {{call_id}}, "
        "{handle}, {kept_tokens}, {omitted_tokens}, {tool}, {total_tokens})"
    )


def test_window_placeholder_template_is_checked(tmp_path: Path) -> None:
    path = write(tmp_path, "defaults.yaml", "window:\n  placeholder: '[{tool} {size}]'\n")
    err = load_error(path)
    assert (err.line, err.key) == (2, "window.placeholder")


def test_target_must_be_below_trigger() -> None:
    err = load_error({"window": {"trigger": 0.4, "target": 0.6}})
    assert err.reason == "window.target must be below window.trigger"


@pytest.mark.parametrize(
    ("window", "ceiling"),
    [
        ({}, (9_500, 6_000)),  # under cost the ceiling sits near the window
        ({"strategy": "threshold"}, (6_000, 4_000)),
        ({"trigger": 0.5}, (5_000, 4_000)),  # one key set: the other keeps its old default
        ({"target": 0.3}, (6_000, 3_000)),
        ({"trigger": 0.9, "target": 0.2}, (9_000, 2_000)),
    ],
)
def test_the_default_ceiling_depends_on_the_strategy_unless_either_key_is_set(
    window: dict[str, object], ceiling: tuple[int, int]
) -> None:
    policy = ctxwin.load_policy({"context_window": 10_000, "window": window})
    body = {"messages": [{"role": "user", "content": "hi"}]}
    limits = policy.apply(body, format="openai-chat").limits
    assert (limits.trigger, limits.target) == ceiling


def test_summary_budget_above_the_cap_is_refused() -> None:
    err = load_error(
        {"tools": {"t": {"max_tokens": 100, "summarize": {"over_tokens": 50, "max_tokens": 300}}}}
    )
    assert err.key == "tools.t.summarize.max_tokens"
    assert err.reason == "summary budget 300 is above the tool's max_tokens 100"


def test_summary_budget_above_the_cap_is_said_with_separators() -> None:
    summarize = {"over_tokens": 500, "max_tokens": 3000}
    err = load_error({"tools": {"t": {"max_tokens": 1000, "summarize": summarize}}})
    assert err.reason == "summary budget 3,000 is above the tool's max_tokens 1,000"


def test_all_errors_of_a_load_are_reported_in_file_order(tmp_path: Path) -> None:
    write(tmp_path, "defaults.yaml", "overflow: sometimes\n")
    write(tmp_path, "a.yaml", "tool: a\nselect: 'a[.b'\nmax_tokens: -1\n")
    with pytest.raises(PolicyErrors) as info:
        ctxwin.load_policy(tmp_path)
    where = [(Path(e.file or "").name, e.line, e.key) for e in info.value.errors]
    assert where == [
        ("a.yaml", 2, "select"),
        ("a.yaml", 3, "max_tokens"),
        ("defaults.yaml", 1, "overflow"),
    ]


def test_the_same_tool_twice_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "tool: get_order\n")
    b = write(tmp_path, "b.yaml", "tool: get_order\n")
    err = load_error(tmp_path)
    assert (err.file, err.line) == (str(b), 1)
    assert err.reason == f"tool 'get_order' already has rules in {tmp_path / 'a.yaml'}"


def test_two_defaults_files_are_an_error(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "context_window: 1000\n")
    write(tmp_path, "b.yaml", "context_window: 2000\n")
    assert "a second defaults file" in load_error(tmp_path).reason


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    """A 2-line file's unclosed bracket was said to be on line 3: PyYAML's end-of-file mark."""
    path = write(tmp_path, "t.yaml", "tool: t\nselect: [unclosed\n")
    err = load_error(path)
    assert err.file == str(path)
    assert (err.line, err.column) == (2, 18)
    assert err.reason.startswith("invalid YAML: ")
    assert err.reason.endswith(
        " at the end of the file (while parsing a flow sequence that starts on line 2)"
    )


def test_missing_path() -> None:
    err = load_error("no/such/policy")
    assert str(err) == "no/such/policy: no such file or folder"


def test_unknown_tokenizer_is_refused_at_load() -> None:
    err = load_error({"tokenizer": "claude-3"})
    assert err.key == "tokenizer"
    assert "unknown tokenizer 'claude-3'" in err.reason


def test_the_policy_object_refuses_an_unknown_tokenizer_as_loading_does() -> None:
    """One rule, one place: ``Policy(...)`` does not fall back where ``load_policy`` refuses."""
    with pytest.raises(ctxwin.PolicyError, match="unknown tokenizer 'o100k_typo'") as info:
        ctxwin.Policy({"tokenizer": "o100k_typo"})
    assert info.value.key == "tokenizer"


def test_a_tokenizer_error_in_a_file_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text("context_window: 8000\ntokenizer: gpt2\n")
    err = load_error(str(tmp_path))
    assert (err.file, err.line, err.key) == (str(tmp_path / "defaults.yaml"), 2, "tokenizer")


def test_a_counter_passed_in_makes_the_tokenizer_name_free() -> None:
    policy = ctxwin.Policy({"tokenizer": "mine"}, counter=lambda t: len(t))
    assert policy.counter.count("abc") == 3


def test_a_counter_can_be_named_by_the_policy() -> None:
    policy = ctxwin.load_policy(
        {"tokenizer": "words"}, counters={"words": lambda t: len(t.split())}
    )
    assert policy.counter.count("a b c") == 3


def test_a_cap_too_small_for_its_notice_is_refused() -> None:
    err = load_error({"tools": {"t": {"max_tokens": 5}}})
    assert (err.key, err.reason) == (
        "tools.t.max_tokens",
        "must be greater than or equal to 24 (got 5)",
    )


def test_a_summary_budget_too_small_for_the_cap_it_falls_back_to_is_refused() -> None:
    """A tool without max_tokens is capped at summarize.max_tokens when no summary comes:
    at 10 tokens, the notice alone would be over it and the whole output cut."""
    err = load_error({"tools": {"t": {"summarize": {"over_tokens": 500, "max_tokens": 10}}}})
    assert (err.key, err.reason) == (
        "tools.t.summarize.max_tokens",
        "must be greater than or equal to 24 (got 10)",
    )


def test_dict_policy_errors_point_at_keys() -> None:
    err = load_error({"window": {"keep_rounds": 0}})
    assert err.key == "window.keep_rounds"
    assert err.reason == "must be greater than or equal to 1 (got 0)"


# ------------------------------------------------------------------------------ schema


def test_json_schema_covers_defaults_and_tool_files() -> None:
    schema = ctxwin.policy_json_schema()
    json.dumps(schema)
    defaults, tool = schema["anyOf"]
    assert {"context_window", "tokenizer", "window", "overflow", "tools"} <= set(
        defaults["properties"]
    )
    assert {
        "tool",
        "select",
        "max_tokens",
        "truncate",
        "notice",
        "summarize",
        "placeholder",
        "window",
    } <= set(tool["properties"])
    assert tool["required"] == ["tool"]


def test_an_old_jmespath_literal_in_a_file_warns_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tool: t\n\nselect: 'rows[?state==`open`]'\n")
    with pytest.warns(ctxwin.PolicyWarning) as caught:
        ctxwin.load_policy(path)
    (warning,) = [w.message for w in caught if isinstance(w.message, ctxwin.PolicyWarning)]
    assert (warning.file, warning.line, warning.key, warning.column) == (str(path), 3, "select", 14)
    assert str(warning).startswith(f"{path}:3: select: deprecated JMESPath literal at column 14")
