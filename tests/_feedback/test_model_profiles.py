"""The model table (``models.yaml``): the longest matching name wins, so a newer model's
profile is not shadowed by its family's and an older one keeps its own."""

from __future__ import annotations

import pytest

import ctxwin
from ctxwin._feedback.limits import limits_for, profile_of, resolve_pricing
from ctxwin._policy.schema import PolicyConfig


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        ("claude-opus-5-5-20261101", "claude-opus-5-5"),
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-opus-5", "claude-opus-5"),
        ("claude-opus-5-20260724", "claude-opus-5"),
        ("claude-opus-4-5", "claude-opus-4-5"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("claude-opus-4-1-20250805", "claude-opus-4"),
        ("claude-opus-4-6", "claude-opus-4-6"),
        ("claude-sonnet-4-6", "claude-sonnet-4-6"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4"),
        ("claude-sonnet-5-5", "claude-sonnet-5-5"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-fable-5-1", "claude-fable-5-1"),
        ("openrouter/anthropic/claude-opus-4.5", "claude-opus-4-5"),
        ("anthropic/claude-opus-5.5", "claude-opus-5-5"),
        ("us.anthropic.claude-sonnet-4-6", "claude-sonnet-4-6"),
        ("claude-3-opus-20240229", "claude"),
        ("gpt-5.6-sol", "gpt-5.6"),
        ("gpt-5.2", "gpt-5"),
        ("gemini-3-flash-preview", "gemini-3"),
        ("gpt-4-0125-preview", "gpt-4-0125-preview"),
        ("gpt-4-32k-0613", "gpt-4-32k"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-4.5-preview-2025-02-27", "gpt-4.5-preview"),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
        ("gpt-3.5-turbo-0613", "gpt-3.5-turbo-0613"),
    ],
)
def test_longest_prefix_wins(model: str, prefix: str) -> None:
    found = profile_of(model)
    assert found is not None
    assert found[0] == prefix


def test_opus_5_takes_its_million_token_window() -> None:
    """``context_window: auto`` on claude-opus-5 was the ``claude`` fallback's 200,000."""
    config = PolicyConfig.model_validate({"context_window": "auto"})
    ((_, limits),) = limits_for(config, "claude-opus-5", "anthropic", [(0, 1.0)])[0]
    assert limits.context_window == 1_000_000


def test_opus_4_6_minimum_cacheable_prompt() -> None:
    config = PolicyConfig.model_validate({"context_window": "auto"})
    ((_, limits),) = limits_for(config, "claude-opus-4-6", "anthropic", [(0, 1.0)])[0]
    assert limits.min_prefix == 4096


def test_opus_5_5_cache_reads_cost_a_twentieth() -> None:
    config = PolicyConfig.model_validate({"context_window": "auto", "pricing": "auto"})
    assert resolve_pricing(config, "claude-opus-5-5-20261101").cache_read == 0.05
    assert resolve_pricing(config, "claude-opus-5").cache_read == 0.1


@pytest.mark.parametrize(
    "model", ["claude-fable-5-1", "claude-fable-5-2", "claude-mythos-5-1", "claude-mythos-5-2"]
)
def test_fable_and_mythos_5_1_and_5_2_read_the_cache_at_a_fortieth(model: str) -> None:
    config = PolicyConfig.model_validate({"context_window": "auto", "pricing": "auto"})
    pricing = resolve_pricing(config, model)
    assert (pricing.cache_write, pricing.cache_read) == (1.25, 0.025)
    assert resolve_pricing(config, "claude-fable-5").cache_read == 0.1


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4-1106-preview", 128_000),
        ("gpt-4-0125-preview", 128_000),
        ("gpt-4.5-preview", 128_000),
        ("gpt-4-32k", 32_768),
        ("gpt-4-0613", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("gpt-4-1106-vision-preview", 128_000),
        ("azure/gpt-35-turbo", 16_385),
        ("azure/gpt-35-turbo-0613", 4_096),
    ],
)
def test_older_openai_models_get_their_own_window(model: str, window: int) -> None:
    """The GPT-4 Turbo previews were read as gpt-4 (8,192 tokens: a conversation that fit
    them was cut to 8k), and gpt-3.5-turbo had no profile (128,000 assumed)."""
    config = PolicyConfig.model_validate({"context_window": "auto"})
    ((_, limits),) = limits_for(config, model, "openai-chat", [(0, 1.0)])[0]
    assert limits.context_window == window


def test_ceilings_in_tokens_above_an_auto_window_are_taken_at_its_size() -> None:
    """A window in tokens refuses them at load; ``auto`` learns the window per request. At
    60k / 40k on a 32,768-token model, overflow dropped nothing (it drops down to the
    target) and the request went out over the window."""
    config = PolicyConfig.model_validate(
        {
            "context_window": "auto",
            "overflow": "drop_oldest_rounds",
            "window": {"strategy": "threshold", "trigger": 60_000, "target": 40_000},
        }
    )
    ((_, limits),), notes = limits_for(config, "gpt-4-32k", "openai-chat", [(0, 1.0)])
    # scaled: the band stays (at 32,768 each, the ceiling cleared at almost every request)
    assert (limits.trigger, limits.target, limits.drop_target) == (32_768, 21_845, 21_845)
    assert notes == [
        "window.trigger 60,000, window.target 40,000 tokens above the context window of "
        "'gpt-4-32k' (32,768 tokens, context_window: auto): scaled into it"
    ]


@pytest.mark.parametrize(
    ("window", "ceilings"),
    [
        ({"trigger": 0.8, "target": 0.5, "drop_target": 150_000}, (102_400, 64_000, 64_000)),
        ({"trigger": 900_000, "target": 0.5}, (128_000, 64_000, 64_000)),
        ({"trigger": 300_000, "target": 250_000}, (128_000, 106_666, 106_666)),
    ],
)
def test_only_ceilings_given_in_tokens_are_scaled_and_none_stays_above_the_window(
    window: dict[str, float], ceilings: tuple[int, int, int]
) -> None:
    """A drop target in tokens above the window went out as it was (143k tokens sent to a
    128k model); a target given as a share of the window was scaled with the trigger."""
    config = PolicyConfig.model_validate(
        {"context_window": "auto", "window": {"strategy": "threshold", **window}}
    )
    ((_, limits),), notes = limits_for(config, "gpt-4o", "openai-chat", [(0, 1.0)])
    assert (limits.trigger, limits.target, limits.drop_target) == ceilings
    (note,) = notes
    assert note.endswith("context_window: auto): scaled into it")


def test_an_auto_window_over_the_policys_ceilings_in_tokens_keeps_them() -> None:
    config = PolicyConfig.model_validate(
        {"context_window": "auto", "window": {"trigger": 20_000, "target": 10_000}}
    )
    ((_, limits),), notes = limits_for(config, "gpt-4-32k", "openai-chat", [(0, 1.0)])
    assert (limits.trigger, limits.target, notes) == (20_000, 10_000, [])


def test_a_request_over_an_auto_window_below_the_ceilings_in_tokens_is_dropped_to_fit() -> None:
    policy = ctxwin.Policy(
        {
            "context_window": "auto",
            "overflow": "drop_oldest_rounds",
            "window": {"strategy": "threshold", "trigger": 60_000, "target": 40_000},
        },
        format="openai-chat",
    )
    words = ("alpha beta gamma delta " * 1000).strip()  # about 4,000 tokens
    messages: list[dict[str, object]] = [{"role": "user", "content": "go"}]
    for i in range(12):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": words})
    report = policy.apply({"model": "gpt-4-32k", "messages": messages}).report
    assert report.tokens_before > 32_768 >= report.tokens_after
    assert not report.over_budget
