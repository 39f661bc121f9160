"""``benchmarks/real_bills.py``: a run's recorded usage against the replay's cache model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxwin._policy.tables import Pricing, pricing_presets
from tests.builders import benchmark_module

ANTHROPIC = pricing_presets()["anthropic"]


def _body(results: int, size: int | None = None) -> dict[str, Any]:
    """``results`` rounds, result ``i`` of ``400 i`` words (or ``size``)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Fix the build."},
    ]
    for i in range(results):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        words = 400 * i if size is None else size
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "word " * words})
    return {"messages": messages}


def _provider(body: dict[str, Any], lose: set[int]) -> list[Any]:
    """What a provider counting 1.3 tokens for each of ctxwin's, plus 2,000 for tools left
    out of the log, would report, losing its cache before the requests in ``lose``."""
    import ctxwin
    from ctxwin.replay import replay

    model = [d.unmanaged for d in replay(body, None).requests_detail]
    out = []
    previous = 0
    for k, (tokens, _) in enumerate(model):
        total = round(2000 + 1.3 * tokens)
        read = 0 if k == 0 or k in lose else previous
        out.append(ctxwin.Usage(total, read, total - read))
        previous = total
    return out


def test_a_provider_that_caches_as_the_model_does_is_billed_as_it_says() -> None:
    bills = benchmark_module("real_bills")
    body = _body(8)
    run = bills.Run("steady", body, _provider(body, set()))
    row = bills.compare(run, ANTHROPIC)
    assert row.requests == 9
    assert row.slope == pytest.approx(1.3, abs=0.01)
    assert row.envelope == pytest.approx(2000, abs=30)
    assert row.lost == 0
    assert row.relost == 0
    assert row.model_bill == pytest.approx(row.real_bill, rel=0.01)


def test_a_lost_cache_is_found_and_costs_what_it_re_wrote() -> None:
    bills = benchmark_module("real_bills")
    body = _body(8)
    usages = _provider(body, {5})
    row = bills.compare(bills.Run("lost", body, usages), ANTHROPIC)
    assert row.lost == 1
    rewritten = (ANTHROPIC.cache_write - ANTHROPIC.cache_read) * usages[4].input_tokens
    assert row.relost == pytest.approx(rewritten)
    assert row.model_bill == pytest.approx(row.real_bill - rewritten, rel=0.01)


def test_openhands_usage_is_matched_response_by_response(tmp_path: Path) -> None:
    """Each response's usage once (a response with two calls is one request), read as
    LiteLLM gave it for a Claude model."""
    bills = benchmark_module("real_bills")

    def response(rid: str, read: int, write: int, *calls: str) -> dict[str, Any]:
        tool_calls = [
            {"id": c, "type": "function", "function": {"name": "sh", "arguments": "{}"}}
            for c in calls
        ]
        usage = {
            "prompt_tokens": 4 + read,
            "prompt_tokens_details": {"cached_tokens": read},
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }
        message = {"role": "assistant", "content": "", "tool_calls": tool_calls}
        return {"id": rid, "choices": [{"message": message}], "usage": usage}

    def pair(resp: dict[str, Any], call: str) -> list[dict[str, Any]]:
        meta = {"tool_call_id": call, "model_response": resp}
        action = {"source": "agent", "action": "run", "tool_call_metadata": meta}
        return [action, {**action, "action": None, "observation": "run", "content": "out"}]

    first, second = response("r1", 0, 900, "t1", "t2"), response("r2", 900, 40, "t3")
    events = [
        {"source": "user", "action": "message", "args": {"content": "Fix it."}},
        *pair(first, "t1"),
        *pair(first, "t2"),
        *pair(second, "t3"),
    ]
    logs = tmp_path / "run-1" / "agent-logs"
    logs.mkdir(parents=True)
    (logs / "a.json").write_text(json.dumps(events))
    (run,) = bills.openhands_runs(tmp_path)
    assert run.name == "run-1"
    assert [(u.input_tokens, u.cached_tokens, u.cache_write_tokens) for u in run.usages] == [
        (904, 0, 900),
        (944, 900, 40),
    ]


def test_a_policy_is_priced_with_the_caches_the_provider_lost() -> None:
    """Where the provider lost its cache, nothing is read, for the unmanaged history and the
    policy's requests alike: each pays its own cached part again, written."""
    import ctxwin
    from ctxwin.replay import replay

    bills = benchmark_module("real_bills")
    body = _body(8)
    config: dict[str, Any] = {"context_window": 100_000, "pricing": "anthropic"}
    config["tools"] = {"*": {"max_tokens": 200}}

    def policy() -> ctxwin.Policy:
        return ctxwin.load_policy(config)

    row = bills.compare(bills.Run("lost", body, _provider(body, {5})), ANTHROPIC, policy)
    unmanaged, managed, unmanaged_lost, managed_lost = row.policy
    assert managed < unmanaged  # the caps pay
    plain = Pricing(cache_write=ANTHROPIC.cache_write, cache_read=ANTHROPIC.cache_read)
    detail = replay(body, policy(), pricing=plain).requests_detail  # as compare counts
    rewrite = ANTHROPIC.cache_write - ANTHROPIC.cache_read
    assert unmanaged_lost == pytest.approx(unmanaged + rewrite * detail[5].unmanaged[1])
    assert managed_lost == pytest.approx(managed + rewrite * detail[5].managed[1])
    assert bills.compare(bills.Run("lost", body, _provider(body, {5})), ANTHROPIC).policy == (
        0.0,
        0.0,
        0.0,
        0.0,
    )


def test_a_rule_told_where_the_cache_was_lost_clears_there_and_pays_less() -> None:
    """``cold_jumps``: at a request that finds the cache cold a jump re-writes nothing more,
    so the rule told so clears every eligible result there; told nothing, it pays the same."""
    import ctxwin

    bills = benchmark_module("real_bills")
    body = _body(12, size=300)  # results too small for the rent rule to clear them
    config: dict[str, Any] = {"context_window": 1_000_000, "pricing": "anthropic"}
    config["window"] = {"keep_rounds": 3}

    def policy() -> ctxwin.Policy:
        return ctxwin.load_policy(config)

    warm = bills.compare(bills.Run("warm", body, _provider(body, set())), ANTHROPIC, policy)
    assert warm.told == pytest.approx(warm.policy[3])
    cold = bills.compare(bills.Run("cold", body, _provider(body, {6})), ANTHROPIC, policy)
    assert cold.told < cold.policy[3]
