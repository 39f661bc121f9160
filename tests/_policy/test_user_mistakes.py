"""Mistakes users make in policies and the callbacks they pass: each is a clear PolicyError
at the right line and key, or a documented value that loads as written."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import PolicyError
from ctxwin._policy.callbacks import check_callbacks
from ctxwin.tokens.counters import CallableCounter, MemoCounter
from tests._policy.test_load_hardening import load_error
from tests.builders import history

BOOL = "YAML reads an unquoted yes, no, on or off as true or false"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ YAML booleans


@pytest.mark.parametrize(
    ("word", "meaning"),
    [("yes", "yes"), ("no", "no"), ("on", "yes"), ("off", "no"), ("true", "yes")],
)
def test_server_state_yes_and_no_load_unquoted_as_documented(
    tmp_path: Path, word: str, meaning: str
) -> None:
    """YAML reads an unquoted yes/no as a boolean; the documented words must still load."""
    path = write(tmp_path, "defaults.yaml", f"server_state: {word}\n")
    assert ctxwin.load_policy(path).config.server_state == meaning


def test_a_choice_given_a_yaml_boolean_says_why_it_is_refused(tmp_path: Path) -> None:
    """`window: no` has no single meaning (clear or keep): refused, saying what YAML read."""
    path = write(tmp_path, "t.yaml", "tool: t\nwindow: no\n")
    assert str(load_error(path)) == (
        f"{path}:2: window: must be 'clear' or 'keep' (got false: {BOOL})"
    )


def test_a_string_given_a_yaml_boolean_says_why_it_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "defaults.yaml", "context_window: 1000\ntokenizer: off\n")
    assert str(load_error(path)) == f"{path}:2: tokenizer: must be a string (got false: {BOOL})"


# ------------------------------------------------------------------ cross-key lines


def test_a_target_above_the_trigger_names_the_target_line(tmp_path: Path) -> None:
    write(
        tmp_path, "defaults.yaml", "context_window: 10000\nwindow:\n  trigger: 0.3\n  target: 0.5\n"
    )
    err = load_error(tmp_path)
    assert str(err) == f"{tmp_path / 'defaults.yaml'}:4: window.target must be below window.trigger"
    assert err.line == 4


def test_a_trigger_below_the_default_target_names_the_trigger_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, "d.yaml", "window:\n  strategy: threshold\n  trigger: 0.3\nserver_state: auto\n"
    )
    assert str(load_error(path)) == (
        f"{path}:3: window.target (default 0.4) must be below window.trigger"
    )
    assert load_error(path).key == "window.trigger"  # the key written (target is a default)


def test_a_drop_target_above_the_target_names_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, "d.yaml", "context_window: 1000\nwindow:\n  target: 0.3\n  drop_target: 0.5\n"
    )
    err = load_error(path)
    assert (err.line, err.reason) == (4, "window.drop_target must not be above window.target")
    assert err.key == "window.drop_target"  # the attribute (its text names it once)
    assert str(err) == f"{path}:4: window.drop_target must not be above window.target"


def test_a_cross_key_error_in_a_flow_mapping_names_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, "d.yaml", "context_window: 1000\n\nwindow: {trigger: 0.3, target: 0.5}\n"
    )
    assert load_error(path).line == 3


# ------------------------------------------------------------------ unquoted globs


def test_an_unquoted_star_key_hints_to_quote_it(tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", "tools:\n  *:\n    max_tokens: 100\n")
    assert str(load_error(path)) == (
        f"{path}:2: invalid YAML: expected alphabetic or numeric character, but found ':' "
        '(a word starting with * is a YAML alias: write the tool pattern in quotes: "*")'
    )


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("tools:\n  '*': {max_tokens: 100}\n  *search*:\n    max_tokens: 100\n", "*search*"),
        ("tools:\n  *_search:\n    max_tokens: 100\n", "*_search"),
        ("tool: *_search\nmax_tokens: 100\n", "*_search"),
        ("tool: *\nmax_tokens: 100\n", "*"),
    ],
)
def test_an_unquoted_glob_where_a_tool_pattern_stands_hints_to_quote_it(
    tmp_path: Path, text: str, pattern: str
) -> None:
    err = load_error(write(tmp_path, "d.yaml", text))
    assert err.reason.endswith(f'write the tool pattern in quotes: "{pattern}")'), err.reason


def test_only_a_glob_gets_the_hint_not_a_mistyped_alias(tmp_path: Path) -> None:
    glob = load_error(write(tmp_path, "a.yaml", "tools:\n  *_read:\n    max_tokens: 100\n"))
    alias = load_error(write(tmp_path, "b.yaml", "window: *defaults\n"))
    assert "in quotes" in glob.reason
    assert alias.reason == "invalid YAML: found undefined alias 'defaults'"


# ------------------------------------------------------------------ what load_policy takes


@pytest.mark.parametrize(("source", "kind"), [(42, "int"), ([], "list"), (b"p.yaml", "bytes")])
def test_a_policy_that_is_no_path_dict_or_config_is_a_policy_error(
    source: object, kind: str
) -> None:
    assert str(load_error(source)) == (
        "<policy>: a policy is a folder or file of YAML (a str or a Path), a dict or a "
        f"PolicyConfig, not {kind}"
    )


YAML_TEXT = "load_policy takes a folder, a file or a dict; for YAML text pass yaml.safe_load(text)"


@pytest.mark.parametrize("repeat", [1, 40])
def test_yaml_text_given_as_the_policy_says_to_parse_it(repeat: int) -> None:
    """YAML text where a path goes: a long one raised a bare OSError (the name too long for
    the file system), a short one said 'no such file or folder' naming the whole text."""
    text = "context_window: 8000\n" + "# the support agent's policy\n" * repeat
    err = load_error(text)
    assert err.file is None
    assert str(err) == (
        "<policy>: YAML text, not a path ('context_window: 8000\\n# the support agent'...): "
        f"{YAML_TEXT}"
    )


def test_a_one_line_key_and_value_given_as_the_policy_says_to_parse_it() -> None:
    assert load_error("context_window: 8000").reason.endswith(YAML_TEXT)


def test_a_path_the_file_system_cannot_take_is_a_policy_error_with_its_reason() -> None:
    """It was a bare OSError ('File name too long'), which the command line called
    unexpected."""
    name = "p" * 300
    err = load_error(name)
    assert str(err) == f"{name}: cannot read: File name too long"


def test_a_folder_that_cannot_be_listed_is_a_policy_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "defaults.yaml", "context_window: 8000\n")

    def refuse(self: Path) -> Any:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", refuse)
    err = load_error(tmp_path)
    assert str(err) == f"{tmp_path}: cannot read: Permission denied"


def test_a_summarizer_that_cannot_be_called_is_refused() -> None:
    with pytest.raises(PolicyError) as info:
        check_callbacks(summarizer=42)
    assert info.value.key == "summarizer"
    assert str(info.value) == (
        "<policy>: summarizer: must be a callable summarizer(text, *, tool, call_id, "
        "max_tokens, instructions) -> str (sync or async), not int 42"
    )


def test_a_summarizer_that_cannot_take_the_call_is_refused() -> None:
    """Else every summary fails with a TypeError, each kept as a fallback for good."""

    def summarize(text: str, max_tokens: int) -> str:
        return text

    with pytest.raises(PolicyError) as info:
        ctxwin.load_policy({}, summarizer=summarize)
    assert info.value.key == "summarizer"
    assert info.value.reason == (
        "test_a_summarizer_that_cannot_take_the_call_is_refused.<locals>.summarize(text, "
        "max_tokens) cannot be called as summarizer(text, *, tool, call_id, "
        "max_tokens, instructions) (got an unexpected keyword argument 'tool'); take those "
        "keywords, or **kwargs for those you do not use"
    )


def test_summarizers_taking_the_call_in_any_form_are_accepted() -> None:
    def keywords(text: str, *, tool: str, call_id: str, max_tokens: int, instructions: str) -> str:
        return text

    class Summarizer:
        async def __call__(self, text: str, **kw: object) -> str:
            return text

    def with_client(f: Any) -> Any:  # a decorator supplying a leading client argument
        @functools.wraps(f)
        def wrapper(text: str, **kwargs: Any) -> Any:
            return f("client", text, **kwargs)

        return wrapper

    @with_client
    def wrapped(client: str, text: str, **kw: object) -> str:
        return text

    for summarizer in (keywords, Summarizer(), functools.partial(keywords), wrapped):
        check_callbacks(summarizer=summarizer)  # wrapped: its own signature takes the call


def test_a_wrong_summarizer_behind_a_generic_decorator_is_refused() -> None:
    """A wrapper of ``*args, **kwargs`` (a retry, a log) takes any call: what it wraps is
    judged, or every summary fails with a TypeError kept for good."""

    def logged(f: Any) -> Any:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return f(*args, **kwargs)

        return wrapper

    @logged
    def summarize(text: str, max_tokens: int) -> str:
        return text

    with pytest.raises(PolicyError, match="cannot be called as summarizer") as info:
        check_callbacks(summarizer=summarize)
    assert info.value.reason.endswith(
        "(the signature of what functools.wraps says it wraps: a wrapper that supplies "
        "arguments itself names its own parameters)"
    )


@pytest.mark.parametrize(
    ("kw", "key"),
    [
        ({"counter": 42}, "counter"),
        ({"counters": {"words": 42}}, "counters.words"),
        ({"model_counters": {"claude": 42}}, "model_counters.claude"),
    ],
)
def test_a_counter_that_is_not_one_is_refused(kw: dict[str, object], key: str) -> None:
    with pytest.raises(PolicyError) as info:
        check_callbacks(**kw)
    assert (info.value.key, info.value.reason) == (
        key,
        "must be a TokenCounter, a callable(text) -> int or a tokenizer name, not int 42",
    )


def test_counters_that_are_not_a_mapping_are_refused() -> None:
    with pytest.raises(PolicyError) as info:
        check_callbacks(counters=[len])
    assert str(info.value).startswith("<policy>: counters: must be a dict of name -> counter")


def test_every_kind_of_callback_is_accepted() -> None:
    """A sync or async callable summarizer; a counter object, callable or name."""

    async def summarize(text: str, **kw: object) -> str:
        return text

    check_callbacks(
        summarizer=summarize,
        counter="o200k_base",
        counters={"words": lambda t: len(t.split())},
        model_counters={"claude": CallableCounter(len)},
    )
    with pytest.raises(PolicyError):  # and the check runs: the test above is not vacuous
        check_callbacks(summarizer=object())


# ------------------------------------------------------------------ counts at run time


@pytest.mark.parametrize("returned", [-1, -0.5, float("nan"), float("inf"), "3", None, True])
def test_a_counter_returning_no_count_names_the_counter(returned: object) -> None:
    def words(text: str) -> object:
        return returned

    with pytest.raises(PolicyError) as info:
        CallableCounter(words).count("hello")  # type: ignore[arg-type]
    assert info.value.reason == (
        f"the token counter 'words' returned {returned!r} for a text of 5 characters: "
        "a counter must return a non-negative int"
    )


def test_a_counter_returning_a_fraction_is_rounded_up() -> None:
    """``len(text) / 4`` is a count, an estimate: never fewer tokens than it says."""
    assert CallableCounter(lambda t: len(t) / 4, name="quarter").count("hello") == 2
    assert MemoCounter(CallableCounter(lambda t: 3.0, name="three")).count("x") == 3


@pytest.mark.parametrize(
    ("kw", "key"), [({"summarizer": 42}, "summarizer"), ({"counters": {"w": 42}}, "counters.w")]
)
def test_load_policy_refuses_a_callback_that_cannot_be_called(kw: dict[str, Any], key: str) -> None:
    """At load, not at the first request that needs it."""
    with pytest.raises(PolicyError) as info:
        ctxwin.load_policy({}, **kw)
    assert info.value.key == key


def test_a_counter_object_returning_a_negative_count_is_refused_at_apply() -> None:
    class Broken:
        name, exact = "broken", True

        def count(self, text: str) -> int:
            return -3

    policy = ctxwin.Policy({}, counter=Broken())
    with pytest.raises(PolicyError, match="the token counter 'broken' returned -3"):
        policy.apply({"messages": history(2)})


def test_a_memo_counter_keeps_a_valid_count() -> None:
    """An integer of another type (numpy's, here a subclass of int) counts as itself."""

    class Count(int):
        pass

    memo = MemoCounter(CallableCounter(lambda t: Count(len(t)), name="len"))
    assert memo.count("abcd") == 4
    with pytest.raises(PolicyError):  # the check above is the non-negative int one
        MemoCounter(CallableCounter(lambda t: -len(t), name="neg")).count("abcd")


# ------------------------------------------------------------------ tool names YAML retyped


@pytest.mark.parametrize(
    ("text", "line", "key", "got"),
    [
        (
            "tools:\n  no:\n    max_tokens: 50\n",
            2,
            "tools.False",
            f"got false: {BOOL}; write the name in quotes",
        ),
        (
            "tools:\n  404:\n    max_tokens: 50\n",
            2,
            "tools.404",
            "got the number 404: write it in quotes",
        ),
        ("tool: off\nmax_tokens: 50\n", 1, "tool", f"got false: {BOOL}; write the name in quotes"),
        ("tool: 404\nmax_tokens: 50\n", 1, "tool", "got the number 404: write it in quotes"),
        ("tool: [a]\nmax_tokens: 50\n", 1, "tool", "got ['a']"),
    ],
)
def test_a_tool_name_yaml_reads_as_no_string_is_one_error_saying_why(
    tmp_path: Path, text: str, line: int, key: str, got: str
) -> None:
    """One error at the name's line (pydantic's about the same key is not repeated)."""
    err = load_error(write(tmp_path, "t.yaml", text))
    assert (err.line, err.key, err.reason) == (
        line,
        key,
        f"a tool name or glob must be a string ({got})",
    )
