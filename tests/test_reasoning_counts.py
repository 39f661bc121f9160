"""``benchmarks/reasoning_counts.py``: Codex CLI's counts of reasoning items and requests."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import benchmark_module, sealed


def _rollout(*, search: bool = False) -> list[str]:
    """Two calls: each a reasoning item and a shell call, then its output; a count after
    each call (the second sent twice, as Codex does at times)."""

    def item(payload: dict[str, Any]) -> str:
        return json.dumps({"type": "response_item", "payload": payload})

    def count(total: int, reasoning: int) -> str:
        last = {
            "input_tokens": total,
            "cached_input_tokens": 0,
            "reasoning_output_tokens": reasoning,
        }
        info = {"total_token_usage": {"total_tokens": total}, "last_token_usage": last}
        return json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": info}})

    lines = [item({"type": "message", "role": "user", "content": "Fix the tests."})]
    for k, (chars, reasoning) in enumerate(((40, 40), (300, 300))):
        lines.append(item({"type": "reasoning", "summary": [], "encrypted_content": sealed(chars)}))
        if search and k:
            lines.append(item({"type": "web_search_call", "id": "ws_1", "status": "completed"}))
        call = {"type": "function_call", "call_id": f"c{k}", "name": "shell", "arguments": "{}"}
        lines.append(item(call))
        lines.append(count(1000 * (k + 1), reasoning))
        lines.append(item({"type": "function_call_output", "call_id": f"c{k}", "output": "ok"}))
    return [*lines, lines[-2]]


def test_each_call_with_one_reasoning_item_gives_its_reported_reasoning_tokens() -> None:
    bench = benchmark_module("reasoning_counts")

    records = [json.loads(line) for line in _rollout()]
    calls = bench.calls_of(records)
    assert [tokens for _, tokens in calls] == [40, 300]
    assert [item["encrypted_content"] for item, _ in calls] == [sealed(40), sealed(300)]


def test_a_session_is_counted_request_by_request_and_one_with_a_web_search_is_not() -> None:
    bench = benchmark_module("reasoning_counts")
    reported, counted, every = bench.session_counts(_rollout())
    assert reported == [1000, 2000]
    assert len(counted) == len(every) == 2
    assert counted[1] > counted[0]
    assert every == counted  # one user message: no earlier turn
    assert bench.session_counts(_rollout(search=True)) is None


def test_a_new_user_message_leaves_the_earlier_turns_reasoning_out_of_ctxwins_count() -> None:
    bench = benchmark_module("reasoning_counts")
    lines = _rollout()
    user = json.dumps(
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "More"}}
    )
    rs = {"type": "reasoning", "summary": [], "encrypted_content": sealed(500)}
    more = [user, json.dumps({"type": "response_item", "payload": rs}), lines[-3]]
    more[-1] = more[-1].replace("2000", "3000")  # a third count
    reported, counted, every = bench.session_counts([*lines, *more])
    assert reported == [1000, 2000, 3000]
    assert every[2] - counted[2] == 40 + 300 + 2 * 3  # the first turn's two items
    # the cache of the request before ends at the first turn's first reasoning item
    ((k, read, model, kept),) = bench.turn_reads([*lines, *more])
    assert (k, read) == (2, 0)
    assert model == every[0]  # the first request: the user's message only
    assert kept == every[1]
