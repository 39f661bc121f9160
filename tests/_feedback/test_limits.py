"""A model's profile, whatever name a router or cloud gives it."""

from __future__ import annotations

import pytest

import ctxwin
from ctxwin._feedback.limits import profile_of
from ctxwin.testing import FakeCounter

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("openai/gpt-4.1", 1_047_576),  # LiteLLM
        ("azure/gpt-4.1-mini-2025-04-14", 1_047_576),
        ("gemini/gemini-2.5-pro", 1_048_576),
        ("vertex_ai/gemini-2.5-flash", 1_048_576),
        ("publishers/google/models/gemini-2.5-pro", 1_048_576),
        ("anthropic/claude-sonnet-4-5", 200_000),
        ("openrouter/anthropic/claude-sonnet-4.5", 200_000),
        ("bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", 200_000),
        ("anthropic:claude-sonnet-4-5", 200_000),  # pydantic-ai
        ("google-gla:gemini-2.5-pro", 1_048_576),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", 128_000),
    ],
)
def test_a_routed_model_name_finds_its_profile(model: str, window: int) -> None:
    """These were 'unknown models': 128,000 tokens assumed, Anthropic's cache prices."""
    policy = ctxwin.Policy({"context_window": "auto"}, counter=FakeCounter())
    report = policy.apply({"model": model, "messages": MESSAGES}, format="openai-chat").report
    assert report.context_window == window
    assert not any("has no profile" in note for note in report.notes)


def test_a_routed_openai_model_is_priced_as_openai() -> None:
    policy = ctxwin.Policy({}, counter=FakeCounter())
    assert policy.pricing("openai/gpt-4o") == policy.pricing("gpt-4o")
    assert policy.pricing("openai/gpt-4o") != policy.pricing("my-local-llm")


def test_the_most_specific_profile_wins_over_the_routers_name() -> None:
    """``gemini/...`` starts like the generic ``gemini`` profile; the model's own is meant."""
    policy = ctxwin.Policy({"context_window": "auto"}, counter=FakeCounter())
    routed = policy.apply({"model": "gemini/gemini-2.5-pro", "messages": MESSAGES}, "openai-chat")
    assert routed.limits.min_prefix == 2048  # gemini-2.5-pro's; the generic gemini's is 1024


def test_an_unknown_deployment_name_stays_unknown() -> None:
    policy = ctxwin.Policy({"context_window": "auto"}, counter=FakeCounter())
    body = {"model": "azure/my-deployment", "messages": MESSAGES}
    report = policy.apply(body, format="openai-chat").report
    assert report.context_window == 128_000
    assert any("'azure/my-deployment' has no profile" in note for note in report.notes)


def test_a_pydantic_ai_fallback_model_has_the_smallest_window_of_its_models() -> None:
    """``FallbackModel(gpt-4o, gpt-4)`` is named ``fallback:gpt-4o,gpt-4``: either model may
    get the request, so the window is gpt-4's 8,192 (it was gpt-4o's 128,000)."""
    found = profile_of("fallback:gpt-4o,gpt-4")
    assert found is not None
    assert found[1].context_window == 8192
    assert profile_of("fallback:no-such-model,other") is None


@pytest.mark.parametrize(
    ("model", "read"),
    [
        ("gpt-4.1", 0.25),
        ("gpt-4.1-mini-2025-04-14", 0.25),
        ("openai/gpt-4.1-nano", 0.25),
        ("o3", 0.25),
        ("o4-mini", 0.25),
        ("o3-mini", 0.5),
        ("o3-pro-2025-06-10", 1.0),
        ("gpt-5-pro", 1.0),
        ("gpt-4o", 0.5),
        ("gpt-5", 0.1),
    ],
)
def test_openai_models_read_the_cache_at_their_own_price(model: str, read: float) -> None:
    """GPT-4.1, o3 and o4-mini read cached input at a quarter of the input price: they had
    the GPT-5 preset (0.1x), so the cost window and replay counted their cache reads 2.5x
    too cheap (review s50-3); o3-mini, named like o3, reads at half; o3-pro and gpt-5-pro,
    named like o3 and gpt-5, have no cached-input price (review s50-6)."""
    assert ctxwin.Policy({}, counter=FakeCounter()).pricing(model).cache_read == read
