"""The engine's entry points check what they are given, and say what they cannot do."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import CalibrationWarning, InputError, Policy, PolicyWarning
from ctxwin.testing import FakeCounter
from tests.builders import asst, call, history, tool, user

BODY: dict[str, Any] = {"model": "gpt-4o", "messages": [user("hi")]}

SUMMARIZE = {"summarize": {"over_tokens": 100, "max_tokens": 30}}


def chat_policy(**config: Any) -> Policy:
    return Policy(config, counter=FakeCounter(), format="openai-chat")


# ------------------------------------------------------------------------- model=


@pytest.mark.parametrize(
    ("model", "shown"),
    [(123, "int"), (["x"], "list"), (b"gpt-4o", "bytes"), ("", "an empty string")],
)
def test_apply_refuses_a_model_that_is_no_name(model: object, shown: str) -> None:
    """``model=123`` raised a bare AttributeError, ``model=["x"]`` a bare TypeError."""
    with pytest.raises(InputError) as caught:
        chat_policy().apply(BODY, model=model)  # type: ignore[arg-type]
    assert caught.value.path == "model"
    assert str(caught.value) == (
        f"model: model= takes the model's name (a non-empty str) or None, not {shown}"
    )


def test_aapply_refuses_a_model_that_is_no_name() -> None:
    with pytest.raises(InputError, match=r"^model: model= takes the model's name"):
        asyncio.run(chat_policy().aapply(BODY, model=123))  # type: ignore[arg-type]


def test_a_session_refuses_a_model_that_is_no_name() -> None:
    with pytest.raises(InputError, match=r"^model: model= takes the model's name"):
        chat_policy().session().apply(BODY, model=["x"])


def test_pricing_refuses_a_model_that_is_no_name() -> None:
    with pytest.raises(InputError, match=r"^model: model= takes the model's name"):
        chat_policy().pricing(123)  # type: ignore[arg-type]


def test_a_model_name_passed_is_used() -> None:
    result = chat_policy().apply({"messages": [user("hi")]}, model="gpt-4o")
    assert result.model == "gpt-4o"


# ------------------------------------------------------------ errors=, server_state=


def test_apply_refuses_errors_given_as_one_string() -> None:
    """``errors="call_1"`` was read as the call ids "c", "a", "l"...: no result flagged."""
    with pytest.raises(InputError) as caught:
        chat_policy().apply(BODY, errors="call_1")
    assert str(caught.value) == (
        "errors: errors= takes a collection of call ids (errors=['call_1']), not one string"
    )


def test_apply_refuses_errors_that_are_no_collection() -> None:
    """``errors=5`` raised a bare TypeError."""
    with pytest.raises(InputError) as caught:
        chat_policy().apply(BODY, errors=5)  # type: ignore[arg-type]
    assert str(caught.value) == "errors: errors= takes a collection of call ids (str), not int"


def test_apply_refuses_errors_holding_something_else_than_ids() -> None:
    with pytest.raises(InputError) as caught:
        chat_policy().apply(BODY, errors=["c1", 7])  # type: ignore[list-item]
    assert str(caught.value) == "errors: errors= takes call ids (str), not int"


def test_apply_refuses_a_server_state_that_is_no_bool() -> None:
    """``server_state="no"`` was truthy: outputs whose calls are absent were kept."""
    with pytest.raises(InputError) as caught:
        chat_policy().apply(BODY, server_state="no")  # type: ignore[arg-type]
    assert str(caught.value) == "server_state: server_state= takes True, False or None, not str"


def test_errors_given_as_a_set_flag_their_results() -> None:
    body = {"messages": [user("q"), asst(call("c1", "run")), tool("c1", "boom")]}
    result = chat_policy().apply(body, errors={"c1"})
    assert result.conversation.messages[2].blocks[0].is_error  # type: ignore[attr-defined]


# -------------------------------------------------------------- observe, server state

CHAINED = {
    "model": "gpt-4.1",
    "previous_response_id": "resp_1",
    "input": [{"type": "function_call_output", "call_id": "c1", "output": "x " * 200}],
}
"""A Responses request early in a chain: its usage counts the earlier turns too, about 3x
what the request itself holds (inside the bounds calibration learns from)."""


def test_the_usage_of_a_request_chained_on_the_server_is_not_learned() -> None:
    policy = Policy({"context_window": "auto"})
    result = policy.apply(CHAINED)
    usage = {"usage": {"input_tokens": result.tokens * 3}}
    with pytest.warns(CalibrationWarning) as caught:
        ratio = policy.observe(result, usage)
    assert ratio == 1.0
    assert str(caught[0].message) == (
        "model 'gpt-4.1': the provider reported 3x the tokens ctxwin counts: not learned from. "
        "The request's context lives on the provider's side (previous_response_id, "
        "conversation, a Gemini cachedContent, or server_state=True), which it bills and "
        "ctxwin does not see. (Said once per model; policy.calibration.of(model).refused "
        "counts every such usage.)"
    )
    assert caught[0].filename == __file__
    cal = policy.calibration.of("gpt-4.1")
    assert (cal.refused, cal.ratio, list(cal.recent)) == (1, 1.0, [])


def test_a_chain_of_requests_warns_once_and_counts_every_usage_refused() -> None:
    """A previous_response_id chain is a normal setup: each of its usages is refused, but
    the warning (whose text held the counts, so Python's once-filter never held it back)
    is said once per model."""
    policy = Policy({"context_window": "auto"})
    result = policy.apply(CHAINED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(5):
            policy.observe(result, {"usage": {"input_tokens": result.tokens * (3 + n)}})
    assert [type(w.message) for w in caught] == [CalibrationWarning]
    assert policy.calibration.of("gpt-4.1").refused == 5


def test_a_request_said_to_build_on_the_server_is_not_learned_from() -> None:
    policy = chat_policy()
    result = policy.apply({"messages": history(2)}, server_state=True)
    with pytest.warns(CalibrationWarning, match="lives on the provider's side"):
        assert policy.observe(result, {"prompt_tokens": result.tokens * 2}) == 1.0


@pytest.mark.parametrize(
    "extra",
    [
        {"cachedContent": "cachedContents/abc"},
        {"cached_content": "cachedContents/abc"},
        {"config": {"cached_content": "cachedContents/abc"}},
    ],
)
def test_the_usage_of_a_gemini_request_on_cached_content_is_not_learned(
    extra: dict[str, Any],
) -> None:
    """The cached contents are billed in ``promptTokenCount``; ctxwin never saw them."""
    policy = Policy({}, counter=FakeCounter())
    body = {"model": "gemini-2.5-pro", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    result = policy.apply({**body, **extra}, "gemini")
    usage = {"usageMetadata": {"promptTokenCount": result.tokens * 3}}
    with pytest.warns(CalibrationWarning, match="lives on the provider's side"):
        assert policy.observe(result, usage) == 1.0
    assert list(policy.calibration.of("gemini-2.5-pro").recent) == []


def test_the_usage_of_a_request_on_the_sdks_cached_content_config_is_not_learned() -> None:
    """``client.models.generate_content(..., config=GenerateContentConfig(cached_content=))``."""
    types = pytest.importorskip("google.genai.types")
    policy = Policy({}, counter=FakeCounter())
    body = {
        "model": "gemini-2.5-pro",
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "config": types.GenerateContentConfig(cached_content="cachedContents/abc"),
    }
    result = policy.apply(body, "gemini")
    usage = {"usageMetadata": {"promptTokenCount": result.tokens * 3}}
    with pytest.warns(CalibrationWarning, match="lives on the provider's side"):
        assert policy.observe(result, usage) == 1.0


def test_the_usage_of_a_request_that_holds_its_context_is_still_learned() -> None:
    policy = Policy({"context_window": "auto"})
    result = policy.apply({"model": "gpt-4.1", "input": [{"role": "user", "content": "x " * 200}]})
    assert policy.observe(result, {"usage": {"input_tokens": result.tokens * 3}}) > 3


# ------------------------------------------------------------ summarize, no summarizer


def test_a_policy_dict_with_summarize_rules_and_no_summarizer_warns() -> None:
    config = {"tools": {"search": SUMMARIZE, "grep_*": SUMMARIZE, "read": {"max_tokens": 90}}}
    with pytest.warns(PolicyWarning) as caught:
        Policy(config)
    warning = caught[0].message
    assert isinstance(warning, PolicyWarning)
    assert (warning.file, warning.key) == (None, "summarize")
    assert str(warning) == (
        "<policy>: summarize: the summarize rules of grep_*, search will not run: no "
        "summarizer was passed (load_policy(..., summarizer=...)); their results over "
        "over_tokens are capped instead, at the tool's max_tokens, else summarize.max_tokens"
    )
    assert caught[0].filename == __file__


def test_a_policy_folder_with_summarize_rules_and_no_summarizer_warns(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text("context_window: 4000\n", encoding="utf-8")
    (tmp_path / "search.yaml").write_text(
        "tool: search\nsummarize:\n  over_tokens: 100\n  max_tokens: 30\n", encoding="utf-8"
    )
    with pytest.warns(PolicyWarning) as caught:
        ctxwin.load_policy(tmp_path)
    warning = caught[0].message
    assert isinstance(warning, PolicyWarning)
    assert warning.file == str(tmp_path / "search.yaml")
    assert str(warning).startswith(f"{tmp_path / 'search.yaml'}: summarize: the summarize rules")
    assert caught[0].filename == __file__  # the user's load_policy, not ctxwin's own code


def test_a_policy_with_a_summarizer_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Policy({"tools": {"search": SUMMARIZE}}, summarizer=lambda text, **kw: "s")


def test_copies_of_a_loaded_policy_do_not_warn_again() -> None:
    with pytest.warns(PolicyWarning):
        policy = Policy({"tools": {"search": SUMMARIZE}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy.with_overrides(context_window=9000)
        Policy(policy.compiled)


@pytest.mark.parametrize(
    "source",
    [
        {"context_window": 6000, "window": {"keep_rounds": 2}},
        {"recall": True, "store": "memory", "server_state": "yes", "pricing": "openai"},
        {"pricing": {"cache_write": 1.0, "cache_read": 0.5}, "tools": {"*": {"max_tokens": 900}}},
        "examples/policy",
        "policies/coding",
    ],
)
def test_a_copy_with_overrides_keeps_the_settings_and_what_was_set(source: Any) -> None:
    """``with_overrides`` rebuilds the settings from those the policy set (not from all of
    them, which then all read as set: ``tune`` diffed every setting against the file)."""
    root = Path(__file__).resolve().parents[1]
    policy = Policy(root / source if isinstance(source, str) else source)
    copy = policy.with_overrides()
    assert copy.config == policy.config
    assert copy.config.model_dump(exclude_unset=True) == policy.config.model_dump(
        exclude_unset=True
    )
    changed = policy.with_overrides(context_window=9000).config
    assert changed.context_window == 9000
    assert changed.model_copy(update={"context_window": policy.config.context_window}) == (
        policy.config
    )


# ------------------------------------------------------------------- exact counts


def test_a_model_whose_tokenizer_is_another_is_not_counted_exactly() -> None:
    """gpt-4 reads cl100k_base; the policy counts with o200k_base: estimates."""
    report = Policy({}).apply({"model": "gpt-4", "messages": [user("hi")]}).report
    assert (report.counter, report.exact) == ("o200k_base", False)
    assert report.notes == (
        "gpt-4 reads cl100k_base, the policy counts with o200k_base: counts are estimates "
        "(tokenizer: cl100k_base counts them exactly)",
    )


def test_a_model_whose_tokenizer_the_policy_counts_with_is_counted_exactly() -> None:
    report = Policy({}).apply({"model": "gpt-4o", "messages": [user("hi")]}).report
    assert (report.counter, report.exact, report.notes) == ("o200k_base", True, ())


def test_the_tokenizer_of_the_model_counts_it_exactly() -> None:
    policy = Policy({"tokenizer": "cl100k_base"})
    report = policy.apply({"model": "gpt-4-turbo", "messages": [user("hi")]}).report
    assert (report.counter, report.exact) == ("cl100k_base", True)


def test_an_estimate_counts_as_the_policys_counter_does() -> None:
    policy = Policy({})
    body = {"messages": history(3)}
    exact = policy.apply(body, model="gpt-4o")
    estimate = policy.apply(body, model="gpt-4")
    assert estimate.report.tokens_before == exact.report.tokens_before


# ------------------------------------------------------------ counting outside the lock


class _EvictedMeanwhile(dict):  # type: ignore[type-arg]
    """An envelope memo whose oldest entry another thread evicts just as this one looks
    for it (``Result.report`` and ``Result.tokens`` count outside the policy's lock)."""

    def __iter__(self) -> Any:
        keys = list(super().__iter__())
        super().pop(keys[0], None)
        return iter(keys)


def test_two_threads_evicting_the_same_envelope_raise_nothing() -> None:
    """``pop(next(iter(memo)))`` raised KeyError for the thread that came second."""
    from ctxwin.formats import get_adapter

    meter = Policy({}, counter=FakeCounter()).context(BODY, "openai-chat").meter
    adapter = get_adapter("openai-chat")
    meter._envelope = _EvictedMeanwhile()
    for k in range(70):
        body = {
            "messages": [user("hi")],
            "tools": [{"type": "function", "function": {"name": f"t{k}"}}],
        }
        assert meter.envelope(adapter.parse(body)) > 0
    assert len(meter._envelope) <= 64


def test_a_full_envelope_memo_keeps_its_newest_half() -> None:
    from ctxwin.formats import get_adapter

    meter = Policy({}, counter=FakeCounter()).context(BODY, "openai-chat").meter
    adapter = get_adapter("openai-chat")
    tools = [[{"type": "function", "function": {"name": f"t{k}"}}] for k in range(65)]
    for listed in tools:
        meter.envelope(adapter.parse({"messages": [user("q")], "tools": listed}))
    assert [v[0] for v in meter._envelope.values()] == tools[-32:]


def test_the_warning_names_the_key_of_a_single_rule() -> None:
    with pytest.warns(PolicyWarning) as caught:
        Policy({"tools": {"search": SUMMARIZE}})
    warning = caught[0].message
    assert isinstance(warning, PolicyWarning)
    assert (warning.file, warning.key) == (None, "tools.search.summarize")


def test_a_replay_of_a_model_read_with_another_tokenizer_is_not_claimed_exact() -> None:
    from ctxwin.replay import replay

    body = {"model": "gpt-4", "messages": history(3)}
    assert replay(body, Policy({})).exact is False
    assert replay({**body, "model": "gpt-4o"}, Policy({})).exact is True


def test_each_model_s_results_are_edited_with_its_own_counter() -> None:
    """A result capped for one model (counted in tokens) was handed to another whose own
    counter counts characters: a fresh policy caps it otherwise."""
    config = {"tools": {"*": {"max_tokens": 50}}}
    body = {"messages": history(2)}
    policy = Policy(config, model_counters={"claude": len})
    policy.apply(body, model="gpt-4o")
    reused = policy.apply(body, model="claude-sonnet-4-5")
    fresh = Policy(config, model_counters={"claude": len}).apply(body, model="claude-sonnet-4-5")
    assert reused.request == fresh.request


# ------------------------------------------------------------------------- aapply


def test_aapply_runs_the_steps_once_when_nothing_is_to_summarize() -> None:
    """``aapply`` ran the whole chain a second time after its first pass even when no
    summary was pending (apply returns after one): every async request (the LiteLLM hook,
    pydantic-ai, the Agents SDK filter) paid twice. Its answer is the same as apply's."""
    passes: list[int] = []

    def counting(conv: Any, ctx: Any) -> Any:
        passes.append(len(conv.messages))
        return conv

    body = history(6, size=50)
    steps = [*ctxwin.default_steps(), counting]
    pol = Policy({"context_window": 2_000}, counter=FakeCounter(), steps=steps)
    result = asyncio.run(pol.aapply(body))
    assert len(passes) == 1
    fresh = Policy({"context_window": 2_000}, counter=FakeCounter()).apply(body)
    assert result.request == fresh.request
    assert result.report.tokens_after == fresh.report.tokens_after
