"""Usage that cannot be one request's input is refused, never read as a silent wrong number."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin._feedback.usage import Usage, read_usage

RUN_TOTAL = (
    "usage.requests: this usage sums 3 requests (an agent run's total): pass the usage of the "
    "one request the Result is for (pydantic-ai: the ModelResponse's usage; the OpenAI Agents "
    "SDK: usage.request_usage_entries[-1] or the raw response's usage)"
)


def test_a_pydantic_ai_run_total_is_refused() -> None:
    """``result.usage()`` of an agent run sums its requests: it was read as one."""
    from pydantic_ai.usage import RunUsage

    with pytest.raises(ctxwin.InputError) as e:
        read_usage(RunUsage(requests=3, input_tokens=30_000, output_tokens=90))
    assert str(e.value) == RUN_TOTAL


def test_an_openai_agents_run_total_is_refused() -> None:
    from agents.usage import Usage as AgentsUsage

    with pytest.raises(ctxwin.InputError) as e:
        read_usage(AgentsUsage(requests=3, input_tokens=30_000, output_tokens=9, total_tokens=9))
    assert str(e.value) == RUN_TOTAL


def test_the_usage_of_one_agents_request_is_read() -> None:
    from agents.usage import Usage as AgentsUsage

    usage = AgentsUsage(requests=1, input_tokens=1_000, output_tokens=9, total_tokens=1_009)
    assert read_usage(usage) == Usage(1_000, 0, 0, 9)


@pytest.mark.parametrize(
    ("usage", "path"),
    [
        ({"input_tokens": 90, "input_tokens_details": {"cached_tokens": 500}}, "usage"),
        (
            {"usageMetadata": {"promptTokenCount": 90, "cachedContentTokenCount": 500}},
            "usageMetadata",
        ),
        (
            {"input_tokens": 90, "input_token_details": {"cache_read": 80, "cache_creation": 20}},
            "usage",
        ),
        # OpenAI Chat: it was read as 500 input, 500 cached, and calibration learned from it
        ({"prompt_tokens": 90, "prompt_tokens_details": {"cached_tokens": 500}}, "usage"),
        (
            {
                "prompt_tokens": 90,
                "prompt_tokens_details": {"cached_tokens": 80, "cache_creation_tokens": 20},
            },
            "usage",
        ),
        ({"usage": {"prompt_tokens": 90, "cache_read_input_tokens": 500}}, "usage"),
    ],
)
def test_more_cache_reads_and_writes_than_input_is_refused(
    usage: dict[str, Any], path: str
) -> None:
    """Each of these counts its cache reads and writes within its input."""
    with pytest.raises(ctxwin.InputError) as e:
        read_usage(usage)
    assert e.value.path == path
    assert e.value.reason.endswith("input tokens in all: not a usage a provider reports")


def test_a_usage_built_by_hand_is_checked_for_the_same() -> None:
    with pytest.raises(ctxwin.InputError) as e:
        read_usage(Usage(100, 80, 30))
    assert str(e.value) == (
        "Usage: 80 tokens read from the cache and 30 written to it, of 100 input tokens in all: "
        "not a usage a provider reports"
    )


@pytest.mark.parametrize("details", ["64", [64], 64])
def test_details_that_are_not_an_object_are_refused(details: object) -> None:
    """They were read as no cache reads at all."""
    with pytest.raises(ctxwin.InputError) as e:
        read_usage({"prompt_tokens": 100, "prompt_tokens_details": details})
    assert str(e.value) == (
        f"usage.prompt_tokens_details: must be an object, not {type(details).__name__}"
    )


def test_numpy_counts_are_counts() -> None:
    """A usage from a data frame; it was refused as 'not dict'."""
    np = pytest.importorskip("numpy")
    usage = {
        "prompt_tokens": np.int64(100),
        "prompt_tokens_details": {"cached_tokens": np.int32(64)},
    }
    assert read_usage(usage) == Usage(100, 64)


def test_gemini_output_counts_its_thoughts() -> None:
    """Gemini counts thoughts apart from the candidates; OpenAI and Anthropic count them in."""
    usage = {
        "usageMetadata": {
            "promptTokenCount": 100,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 30,
            "toolUsePromptTokenCount": 12,
            "totalTokenCount": 147,
        }
    }
    assert read_usage(usage) == Usage(100, 0, 0, 35)
