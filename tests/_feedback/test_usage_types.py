"""Usage feedback of the wrong type is an InputError naming the field, never ignored."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin._feedback.usage import Usage, read_usage
from ctxwin.testing import FakeCounter, agent_body


def applied() -> tuple[ctxwin.Policy, ctxwin.Result]:
    policy = ctxwin.Policy({"context_window": 200_000}, counter=FakeCounter())
    body = agent_body([[("read_file", {"path": "a.py"}, "x " * 500)]], format="anthropic")
    body["model"] = "claude-sonnet-4-5"
    return policy, policy.apply(body)


@pytest.mark.parametrize("value", ["500", -5, 1e30, float("nan"), float("inf"), True, 2.5, [1]])
def test_a_count_that_is_not_a_whole_number_of_tokens_is_an_input_error(value: object) -> None:
    policy, result = applied()
    with pytest.raises(ctxwin.InputError) as e:
        policy.observe(result, {"input_tokens": value, "cache_read_input_tokens": 0})
    assert e.value.path == "usage.input_tokens"
    assert e.value.reason == (
        "a token count must be a whole number from 0 to 1,000,000,000,000, not "
        f"{value!r:.40} ({type(value).__name__})"
    )
    assert policy.calibration.of(result.model).last is None  # nothing learned


@pytest.mark.parametrize(
    ("usage", "path"),
    [
        (
            {"usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": "4"}}},
            "usage.prompt_tokens_details.cached_tokens",
        ),
        ({"usageMetadata": {"promptTokenCount": -1}}, "usageMetadata.promptTokenCount"),
        ({"input_tokens": 10, "output_tokens": "7"}, "usage.output_tokens"),
        (
            {"input_tokens": 10, "input_token_details": {"cache_read": 1.5}},
            "usage.input_token_details.cache_read",
        ),
    ],
)
def test_the_error_names_the_field_where_it_sits(usage: dict[str, Any], path: str) -> None:
    with pytest.raises(ctxwin.InputError) as e:
        read_usage(usage)
    assert e.value.path == path
    assert str(e.value).startswith(f"{path}: a token count must be a whole number")


def test_a_usage_object_built_by_hand_is_checked_as_well() -> None:
    with pytest.raises(ctxwin.InputError) as e:
        read_usage(Usage("500"))  # type: ignore[arg-type]
    assert e.value.path == "Usage.input_tokens"


def test_whole_floats_and_missing_counts_are_read() -> None:
    """A proxy may send 500.0; an SDK object says None for a count it does not have."""
    got = read_usage(
        {"input_tokens": 500.0, "cache_read_input_tokens": None, "cache_creation_input_tokens": 2}
    )
    assert got == Usage(502, 0, 2)
    assert type(got.input_tokens) is int
    assert read_usage({"prompt_tokens": 10, "prompt_tokens_details": None}) == Usage(10)
    with pytest.raises(ctxwin.InputError, match="not 'many'"):
        read_usage({"prompt_tokens": 10, "completion_tokens": "many"})


@pytest.mark.parametrize("given", [{"messages": []}, None, "result"])
def test_observe_takes_a_result_and_says_so(given: object) -> None:
    policy, _ = applied()
    with pytest.raises(ctxwin.InputError) as e:
        policy.observe(given, {"input_tokens": 500})  # type: ignore[arg-type]
    assert str(e.value) == f"observe takes the Result of apply, not {type(given).__name__}"
