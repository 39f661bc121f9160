"""Preserved thinking: on a model that checks the prefix of the thinking blocks sent back
(``thinking_binding: prefix``), no request the window returns holds a thinking block whose
prefix differs from what was sent when it was produced."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

import ctxwin

SYSTEM = "You are a coding agent. Use the tools."
TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]
POLICY: dict[str, Any] = {
    "context_window": 6000,
    "tokenizer": "o200k_base",
    "window": {"keep_rounds": 2, "clear_tool_inputs": True},
    "overflow": "drop_oldest_rounds",
    "tools": {"*": {"max_tokens": 600}},
}


def _reply(step: int, turn_end: bool) -> dict[str, Any]:
    """An assistant message as the API returns it: thinking first, then a call or an answer."""
    thinking = {"type": "thinking", "thinking": f"plan {step} " * 20, "signature": f"sig-{step}"}
    if turn_end:
        return {
            "role": "assistant",
            "content": [thinking, {"type": "text", "text": f"done {step}"}],
        }
    call = {
        "type": "tool_use",
        "id": f"toolu_{step}",
        "name": "read_file",
        "input": {"path": f"src/module_{step}.py", "why": "to see what it does " * 6},
    }
    return {"role": "assistant", "content": [thinking, call]}


def _result(step: int) -> dict[str, Any]:
    text = "\n".join(f"line {i} of module {step}: value = {i * step}" for i in range(45))
    return {"type": "tool_result", "tool_use_id": f"toolu_{step}", "content": text}


def _strip_markers(value: object) -> object:
    """What the prefix check compares: the content, without cache markers (Claude Code moves
    its breakpoint every turn and needs no change for preserved thinking)."""
    if isinstance(value, dict):
        return {k: _strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_markers(v) for v in value]
    return value


def _prefixes(body: dict[str, Any]) -> dict[str, str]:
    """Each thinking block's prefix in a request, by signature."""
    out = {}
    head = [body.get("system"), body.get("tools")]
    messages = body["messages"]
    for i, msg in enumerate(messages):
        content = msg["content"] if isinstance(msg["content"], list) else []
        for j, block in enumerate(content):
            if block.get("type") in ("thinking", "redacted_thinking"):
                before = [*messages[:i], {"role": msg["role"], "content": content[:j]}]
                text = json.dumps(_strip_markers([*head, before]), sort_keys=True)
                out[block["signature"]] = text
    return out


class PrefixCheckingApi:
    """Records what each request sent, and checks every thinking block sent back as the
    API does: its prefix must be the one it was produced with."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}

    def send(self, request: dict[str, Any], reply: dict[str, Any]) -> list[str]:
        """The signatures that fail the check; then binds the reply's thinking."""
        failed = [
            sig
            for sig, prefix in _prefixes(request).items()
            if sig in self.bound and self.bound[sig] != prefix
        ]
        produced = {**request, "messages": [*request["messages"], reply]}
        for sig, prefix in _prefixes(produced).items():
            self.bound.setdefault(sig, prefix)
        return failed


def _loop(
    model: str, window: int = 6000, steps: int = 40, pricing: str = "auto"
) -> tuple[list[dict[str, Any]], list[list[str]], list[Any]]:
    """A growing tool loop with thinking, applied before each request by one policy (and by
    a fresh one, which must return the same). Returns the requests, the signatures failing
    the prefix check in each, and the history's thinking signatures sent in each."""
    config = {**POLICY, "context_window": window, "pricing": pricing}
    policy = ctxwin.load_policy(config)
    api = PrefixCheckingApi()
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    requests, failures, openers = [], [], []
    for step in range(steps):
        body = {"model": model, "max_tokens": 4096, "system": SYSTEM, "tools": TOOLS}
        body["messages"] = copy.deepcopy(history)
        result = policy.apply(body, format="anthropic")
        request = result.request
        assert ctxwin.check(request) == []
        fresh = ctxwin.load_policy(config).apply(copy.deepcopy(body), format="anthropic")
        assert fresh.request == request, f"step {step}: incremental and fresh differ"
        turn_end = step % 9 == 8
        reply = _reply(step, turn_end)
        failures.append(api.send(request, reply))
        requests.append(request)
        openers.append(_turn_opener(request))
        history.append(reply)
        if turn_end:
            history.append({"role": "user", "content": f"Now the next task ({step})."})
        else:
            history.append({"role": "user", "content": [_result(step)]})
    return requests, failures, openers


def _turn_opener(request: dict[str, Any]) -> str | None:
    """The type of the first block of the first assistant message after the user's latest
    message of their own (None: no such message)."""
    messages = request["messages"]
    last_user = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user"
        and (isinstance(m["content"], str) or all(b["type"] != "tool_result" for b in m["content"]))
    )
    after = [m for m in messages[last_user + 1 :] if m["role"] == "assistant"]
    return after[0]["content"][0]["type"] if after else None


@pytest.mark.parametrize(("window", "steps"), [(6000, 40), (30000, 60)])
def test_no_request_sends_thinking_bound_to_a_changed_prefix(window: int, steps: int) -> None:
    """Fable 5.1: the window clears (6,000: forced by the ceiling, mid-turn, and drops
    rounds; 30,000: by choice) and every request passes the prefix check (the invalidated
    thinking is removed, consistently from one request to the next), equal to a fresh
    policy's, with its pairing clean."""
    requests, failures, _ = _loop("claude-fable-5-1", window, steps)
    assert [f for f in failures if f] == []
    removed = [r for r in requests if len(_prefixes(r)) < _thinking_in_history(r)]
    assert removed, "the window never invalidated thinking: the test tests nothing"


def _thinking_in_history(request: dict[str, Any]) -> int:
    """The thinking blocks the history had at the request (one per reply so far)."""
    return sum(1 for m in request["messages"] if m["role"] == "assistant") + _dropped(request)


def _dropped(request: dict[str, Any]) -> int:
    texts = [m for m in request["messages"] if m["role"] == "assistant"]
    first = texts[0]["content"] if texts else []
    sigs = [b.get("signature", "") for b in first if b.get("type") == "thinking"]
    return int(sigs[0].removeprefix("sig-")) if sigs else 0


def test_the_current_turn_keeps_its_opening_thinking() -> None:
    """The cost strategy's jumps made by choice wait for the user's next message rather
    than invalidate the thinking the current turn opens with (on claude-opus-4-5 the same
    loop jumps mid-turn: the first failure below is not at a user's message). Both at
    the same prices: at Fable 5.1's own (cache reads 0.025x) the rule waits longer, until
    ``trigger`` forces a jump mid-turn, which does not wait."""
    _, _, openers = _loop("claude-fable-5-1", 30000, 60, "anthropic")
    assert all(o in (None, "thinking") for o in openers)
    _, failures, _ = _loop("claude-opus-4-5", 30000, 60, "anthropic")
    first = next(i for i, f in enumerate(failures) if f)
    assert first % 9 != 0, "the jump came with a user's message: nothing waited"


def test_a_model_without_the_check_is_unchanged() -> None:
    """claude-opus-4-5 runs no prefix check: the same loop returns what it returned before
    preserved thinking was handled (digest of every request, taken on the code before; taken
    again when Anthropic's tool-use system prompt came to be counted, 346 tokens a request:
    without it, the digest is the old one)."""
    requests, failures, _ = _loop("claude-opus-4-5", 6000, 40)
    digest = hashlib.sha256(json.dumps(requests, sort_keys=True).encode()).hexdigest()
    assert any(failures), "the window never invalidated thinking: the test tests nothing"
    assert digest == OPUS_4_5_DIGEST


OPUS_4_5_DIGEST = "7227cc6ac7253d1b8bf3bc06913a34c7caa7565e4369b99f5e604a70642d3220"


@pytest.mark.parametrize("model", ["claude-fable-5-1"])
def test_drop_block_leaves_the_thinking_to_the_api(model: str) -> None:
    """A body asking the API to drop failing blocks gets its thinking as it was."""
    policy = ctxwin.load_policy(POLICY)
    binding = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for step in range(30):
        history.append(_reply(step, False))
        history.append({"role": "user", "content": [_result(step)]})
    body = {"model": model, "max_tokens": 4096, "system": SYSTEM, "tools": TOOLS}
    asked = policy.apply({**body, "thinking": binding, "messages": history}, format="anthropic")
    plain = policy.apply({**body, "messages": history}, format="anthropic")
    count = len(_prefixes(asked.request))
    assert count > len(_prefixes(plain.request))
    assert count == sum(1 for m in asked.request["messages"] if m["role"] == "assistant")


def test_a_policy_that_saw_drop_block_decides_as_a_fresh_one_without_it() -> None:
    """Whether the model checks the prefix decides jumps too (the current turn's thinking
    waits for the user), so the window's memo is kept per answer: a policy that served a
    conversation with ``drop_block`` and then without returns what a fresh policy does."""
    binding = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    config = {**POLICY, "context_window": 30000, "pricing": "anthropic"}  # the jump below
    policy = ctxwin.load_policy(config)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    body = {"model": "claude-fable-5-1", "max_tokens": 4096, "system": SYSTEM, "tools": TOOLS}
    for step in range(15):  # a jump by choice at step 13, in the second task's turn
        turn_end = step % 9 == 8
        history.append(_reply(step, turn_end))
        nxt = f"Now the next task ({step})." if turn_end else [_result(step)]
        history.append({"role": "user", "content": nxt})
        asked = {**body, "thinking": binding, "messages": copy.deepcopy(history)}
        policy.apply(asked, format="anthropic")
    plain = {**body, "messages": copy.deepcopy(history)}
    fresh = ctxwin.load_policy(config).apply(copy.deepcopy(plain), format="anthropic")
    again = ctxwin.load_policy(config).apply({**asked, "messages": copy.deepcopy(history)})
    assert _edits(again) != _edits(fresh), "drop_block changed nothing: the test tests nothing"
    assert policy.apply(plain, format="anthropic").request == fresh.request


def _edits(result: ctxwin.Result) -> list[tuple[int | None, str | None]]:
    return sorted((e.message_index, e.call_id) for e in result.report.edits if e.step == "window")


@pytest.mark.parametrize("window", [6000, 30000])
def test_thinking_sent_in_an_assistant_message_of_its_own_goes_with_it(window: int) -> None:
    """Each reply sent as two assistant messages, its thinking then its call (the API joins
    them into one turn): a message left with nothing but invalidated thinking was sent
    whole, and 32 of 40 requests failed the check. It now goes, as invalid as its thinking;
    every request passes, equal to a fresh policy's, its pairing clean."""
    config = {**POLICY, "context_window": window, "pricing": "anthropic"}  # it jumps
    policy = ctxwin.load_policy(config)
    api = PrefixCheckingApi()
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    failures = []
    for step in range(40):
        body = {"model": "claude-fable-5-1", "max_tokens": 4096, "system": SYSTEM, "tools": TOOLS}
        body["messages"] = copy.deepcopy(history)
        request = policy.apply(body, format="anthropic").request
        assert ctxwin.check(request) == []
        fresh = ctxwin.load_policy(config).apply(copy.deepcopy(body), format="anthropic")
        assert fresh.request == request
        turn_end = step % 9 == 8
        reply = _reply(step, turn_end)
        failures += api.send(request, reply)
        thinking, call = reply["content"][:1], reply["content"][1:]
        history += [
            {"role": "assistant", "content": thinking},
            {"role": "assistant", "content": call},
        ]
        nxt = f"Now the next task ({step})." if turn_end else [_result(step)]
        history.append({"role": "user", "content": nxt})
    assert failures == []
    assert any(
        e.tool == "(thinking)" for e in policy.apply(body, format="anthropic").report.edits
    ), "the window never invalidated thinking: the test tests nothing"


def test_a_jump_waiting_for_the_user_does_not_work_out_the_span_at_every_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the current turn's thinking holds a jump by choice back, the items eligible
    pile up; working out their span at every folded message made a request quadratic in
    the turn's length (516 ms at 1,500 replies under edit_latest: false, 73 ms before).
    The oldest eligible item alone says the jump waits."""
    from ctxwin.steps import _fold

    calls = []
    span = _fold._span
    monkeypatch.setattr(_fold, "_span", lambda st: calls.append(1) or span(st))
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for step in range(204):
        history.append(_reply(step, step == 3))
        nxt = "Now the next task." if step == 3 else [_result(step)]
        history.append({"role": "user", "content": nxt})
    config = {**POLICY, "context_window": 10_000_000}
    for model, spans in (("claude-fable-5-1", 0), ("claude-opus-4-5", 300)):
        calls.clear()
        body = {"model": model, "max_tokens": 4096, "system": SYSTEM, "tools": TOOLS}
        result = ctxwin.load_policy(config).apply({**body, "messages": history})
        jumped = any(e.step == "window" for e in result.report.edits)
        assert (len(calls) > spans, jumped) == (model == "claude-opus-4-5",) * 2


def _forced_drop_body(model: str) -> dict[str, Any]:
    """A second task whose turn opens with thinking, over the window: a drop is forced."""

    def words(n: int, tag: str) -> str:
        return " ".join(f"{tag}{i}" for i in range(n))

    def think(sig: str) -> dict[str, Any]:
        return {"type": "thinking", "thinking": f"plan {sig} " * 10, "signature": sig}

    def use(cid: str, name: str = "read") -> dict[str, Any]:
        return {"type": "tool_use", "id": cid, "name": name, "input": {"p": "xxxxx"}}

    def res(cid: str, n: int) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": cid, "content": words(n, cid + ".")}

    messages = [
        {"role": "user", "content": "task one"},
        {"role": "assistant", "content": [think("s0"), use("c0_0"), use("c0_1")]},
        {"role": "user", "content": [res("c0_0", 60), res("c0_1", 200)]},
        {"role": "assistant", "content": [think("sa0"), {"type": "text", "text": "done 0"}]},
        {"role": "user", "content": "next 0"},
        {
            "role": "assistant",
            "content": [think("s1"), use("c1_0"), use("c1_1"), use("c1_2", "grep")],
        },
        {"role": "user", "content": [res("c1_0", 60), res("c1_1", 10), res("c1_2", 10)]},
        {"role": "assistant", "content": [think("s2"), use("c2_0")]},
        {"role": "user", "content": [res("c2_0", 200)]},
    ]
    thinking = {"type": "enabled", "budget_tokens": 2048}
    return {"model": model, "max_tokens": 4096, "thinking": thinking, "messages": messages}


FORCED_DROP_POLICY: dict[str, Any] = {
    "context_window": 1500,
    "tokenizer": "o200k_base",
    "window": {"keep_rounds": 3, "strategy": "threshold"},
    "overflow": "drop_oldest_rounds",
    "tools": {"*": {"max_tokens": 150, "edit_latest": False}, "grep": {"max_tokens": 100}},
}


def test_a_forced_drop_does_not_keep_a_round_for_thinking_it_removes() -> None:
    """The round whose thinking opens the current turn stays through drops, for that
    thinking. On a model that checks the prefix, a drop before it invalidates that thinking,
    which is removed: the round was kept for nothing, and the request went over the window
    (1,531 tokens of 1,500). It may go now, as any other: the request fits, as the policy
    applied to its own output does."""
    policy = ctxwin.load_policy(FORCED_DROP_POLICY)
    result = policy.apply(_forced_drop_body("claude-fable-5-2"))
    assert result.report.tokens_after <= 1500
    assert not result.report.over_budget
    calls = [
        b["id"]
        for m in result.request["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    assert calls == ["c2_0"]
    again = ctxwin.load_policy(FORCED_DROP_POLICY).apply(copy.deepcopy(result.request))
    assert again.request == result.request
    assert not again.report.edits
    # without the check, the thinking stays valid and its round with it (over the window)
    plain = ctxwin.load_policy(FORCED_DROP_POLICY).apply(_forced_drop_body("claude-opus-4-5"))
    opener = plain.request["messages"][2]["content"]
    assert [b["type"] for b in opener][:2] == ["thinking", "tool_use"]
    assert plain.report.over_budget


def test_a_forced_drop_keeps_the_round_opening_the_turn_while_its_thinking_holds() -> None:
    """One task, every reply opening with thinking, a drop forced: nothing before the
    round opening the turn may go (the user's message stays), so its thinking is still
    valid and the round stays with it. Released whenever a drop applied, it went first, and
    the next reply, first in the turn now, lost its thinking to that drop: the turn opened
    with a call (25 of 40 requests of a loop at a 3,000-token window). At 1,200 tokens: at
    1,500 the clearing alone now fits, the thinking it invalidates counted off."""

    def think(sig: str) -> dict[str, Any]:
        return {"type": "thinking", "thinking": f"plan {sig} " * 60, "signature": sig}

    messages: list[dict[str, Any]] = [{"role": "user", "content": "task one"}]
    for s in range(6):
        call = {"type": "tool_use", "id": f"c{s}", "name": "read", "input": {"p": "x"}}
        text = " ".join(f"c{s}.{i}" for i in range(300))
        result = {"type": "tool_result", "tool_use_id": f"c{s}", "content": text}
        messages += [
            {"role": "assistant", "content": [think(f"s{s}"), call]},
            {"role": "user", "content": [result]},
        ]
    config = {**FORCED_DROP_POLICY, "context_window": 1200, "tools": {"*": {"max_tokens": 250}}}
    thinking = {"type": "enabled", "budget_tokens": 2048}
    body = {"model": "claude-fable-5-2", "max_tokens": 4096, "thinking": thinking}
    result = ctxwin.load_policy(config).apply({**body, "messages": messages})
    out = result.request["messages"]
    assert any(e.step == "drop" for e in result.report.edits)
    assert not result.report.over_budget
    opener = next(m for m in out if m["role"] == "assistant")["content"]
    assert [b["type"] for b in opener] == ["thinking", "tool_use"]
    assert opener[0]["signature"] == "s0"
