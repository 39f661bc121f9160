"""Preserved thinking in an OpenAI Responses body bound for Claude (the Agents SDK on
``LitellmModel``, LiteLLM's Responses bridge): its reasoning items are Claude's thinking
blocks, sent back as the next assistant message's thinking. On a model that checks their
prefix (``thinking_binding: prefix``), no request holds a reasoning item whose prefix (every
item before it) differs from what was sent when it was produced, and the current turn keeps
the reasoning it opens with while the window's jumps by choice can wait."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import ctxwin

POLICY: dict[str, Any] = {
    "context_window": 6000,
    "tokenizer": "o200k_base",
    "window": {"keep_rounds": 2},
    "overflow": "drop_oldest_rounds",
    "tools": {"*": {"max_tokens": 600}},
}


def _reply(step: int, turn_end: bool) -> list[dict[str, Any]]:
    """What the model produced at a step: its reasoning (the thinking, signed), then a call
    or an answer."""
    block = {"type": "thinking", "thinking": f"plan {step} " * 20, "signature": f"sig-{step}"}
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": json.dumps([block])}
    if turn_end:
        text = [{"type": "output_text", "text": f"done {step}", "annotations": []}]
        return [reasoning, {"type": "message", "role": "assistant", "content": text}]
    call = {"type": "function_call", "call_id": f"toolu_{step}", "name": "read_file"}
    return [reasoning, {**call, "arguments": json.dumps({"path": f"src/module_{step}.py"})}]


def _output(step: int) -> dict[str, Any]:
    text = "\n".join(f"line {i} of module {step}: value = {i * step}" for i in range(45))
    return {"type": "function_call_output", "call_id": f"toolu_{step}", "output": text}


def _prefixes(request: dict[str, Any]) -> dict[str, str]:
    """Each reasoning item's prefix in a request (the items before it), by its signature."""
    items = request["input"]
    return {
        json.loads(item["encrypted_content"])[0]["signature"]: json.dumps(items[:i])
        for i, item in enumerate(items)
        if item.get("type") == "reasoning"
    }


def _loop(model: str, window: int, steps: int, pricing: str = "auto") -> dict[str, Any]:
    """A growing tool loop, applied before each request by one policy (and by a fresh one,
    which must return the same); each reasoning item sent back is checked as the API
    checks the thinking it stands for."""
    config = {**POLICY, "context_window": window, "pricing": pricing}
    policy = ctxwin.load_policy(config)
    bound: dict[str, str] = {}
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    out: dict[str, Any] = {"failures": [], "openers": [], "removed": 0}
    for step in range(steps):
        body = {"model": model, "instructions": "You are a coding agent.", "input": history}
        result = policy.apply(copy.deepcopy(body), format="openai-responses")
        request = result.request
        fresh = ctxwin.load_policy(config).apply(copy.deepcopy(body), format="openai-responses")
        assert fresh.request == request, f"step {step}: incremental and fresh differ"
        assert ctxwin.check(request) == []
        prefixes = _prefixes(request)
        out["failures"].append([s for s, p in prefixes.items() if bound.get(s, p) != p])
        out["removed"] += len(_prefixes({"input": history})) - len(prefixes)
        out["openers"].append(_turn_opener(request))
        turn_end = step % 9 == 8
        reply = _reply(step, turn_end)
        for sig, prefix in _prefixes({"input": [*request["input"], *reply]}).items():
            bound.setdefault(sig, prefix)
        after = {"role": "user", "content": f"Next ({step})."} if turn_end else _output(step)
        history = [*history, *reply, after]
    return out


def _turn_opener(request: dict[str, Any]) -> str | None:
    """The type of the first item of the model's after the user's latest message."""
    items = request["input"]
    last = max(i for i, item in enumerate(items) if item.get("role") == "user")
    after = items[last + 1 :]
    return after[0].get("type") if after else None


@pytest.mark.parametrize(("window", "steps"), [(6000, 40), (30000, 60)])
def test_no_request_sends_reasoning_bound_to_a_changed_prefix(window: int, steps: int) -> None:
    """The review's case: the Agents filter cleared an old output and sent the reasoning
    produced after it unchanged, and Anthropic refused the request ("The block is bound to
    a different conversation"); LiteLLM's chat route removed it."""
    found = _loop("claude-fable-5-1", window, steps)
    assert [f for f in found["failures"] if f] == []
    assert found["removed"] > 0, "the window never invalidated reasoning: the test tests nothing"


def test_the_current_turn_keeps_its_opening_reasoning() -> None:
    found = _loop("claude-fable-5-1", 30000, 60, "anthropic")
    assert all(o in (None, "reasoning") for o in found["openers"])


def test_a_model_without_the_check_keeps_its_reasoning() -> None:
    """claude-opus-4-5 (no prefix check) and GPT models: reasoning items as they were."""
    for model in ("claude-opus-4-5", "gpt-5"):
        found = _loop(model, 6000, 30)
        assert found["removed"] == 0


def test_earlier_turns_reasoning_counts_for_claude() -> None:
    """OpenAI drops earlier turns' reasoning, and ctxwin counted it so for a Claude model
    too, which gets it back as thinking (review): 1,390 tokens for a request of 2,749."""
    block = {"type": "thinking", "thinking": "let me think " * 300, "signature": "sig-0"}
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": json.dumps([block])}
    text = [{"type": "output_text", "text": "done", "annotations": []}]
    items = [
        {"role": "user", "content": "first task"},
        reasoning,
        {"type": "message", "role": "assistant", "content": text},
        {"role": "user", "content": "second task"},
    ]
    policy = ctxwin.Policy({}, format="openai-responses")
    claude = policy.apply({"model": "claude-fable-5-1", "input": items})
    gpt = policy.apply({"model": "gpt-5", "input": items})
    assert claude.read_positions == (0, 1, 2, 3)
    assert gpt.read_positions == (0, 2, 3)
    assert claude.report.tokens_before > gpt.report.tokens_before + 300


def test_clear_reasoning_keeps_the_output_a_fixed_point() -> None:
    """The review's case (items with the Agents SDK's placeholder ids, ``clear_reasoning``):
    with earlier turns' reasoning counted as dropped, the reasoning item opening the current
    turn went as one of an old round, and the output applied again cleared two more
    results. Counted as Claude reads it, the output is its own fixed point."""
    config = {
        "context_window": 4000,
        "tokenizer": "o200k_base",
        "overflow": "drop_oldest_rounds",
        "tools": {"*": {"max_tokens": 600}},
        "window": {"keep_rounds": 1, "clear_reasoning": True},
    }
    fake = {"id": "__fake_id__"}
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for step in range(12):
        reasoning, *rest = _reply(step, step == 8)
        history.append({**reasoning, **fake})
        if step == 8:
            history += [{**rest[0], **fake}, {"role": "user", "content": "Next."}]
            continue
        outputs = []
        for j in range(2):
            call = {"type": "function_call", "call_id": f"toolu_{step}_{j}", "name": "read_file"}
            history.append({**call, "arguments": json.dumps({"path": f"m{step}_{j}.py"}), **fake})
            outputs.append({**_output(step), "call_id": f"toolu_{step}_{j}"})
        history += outputs
    body = {
        "model": "claude-fable-5-1",
        "instructions": "You are a coding agent.",
        "input": history,
    }
    out = ctxwin.load_policy(config).apply(copy.deepcopy(body), format="openai-responses")
    again = ctxwin.load_policy(config).apply(copy.deepcopy(out.request))
    assert again.request == out.request
