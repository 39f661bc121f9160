"""Cache breakpoints at steady state: what the step reads of a request is memoized by its
messages, and the results the window cleared come from what the window tells; the
breakpoints are those the full scan of every message and every edit placed (its code is
kept here as the reference), on random histories of three formats."""

from __future__ import annotations

import random
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest

import ctxwin
from ctxwin._core.conversation import Conversation
from ctxwin._core.model import ToolResult, call_at
from ctxwin.formats import get_adapter
from ctxwin.replay import request_points
from ctxwin.steps import BudgetGuard, CacheBreakpoints, Context, EditResults, Window
from ctxwin.steps._base import Limits
from ctxwin.steps._clearing import reads_cleared
from ctxwin.steps.breakpoints import _Cleared, _first_cacheable, _Scan
from ctxwin.testing import FakeCounter
from tests.builders import sealed

# ------------------------------------------------------------------ the reference (old code)


def old_first_cacheable(conv: Conversation, ctx: Context, min_prefix: int) -> int | None:
    total = ctx.envelope_tokens(conv)
    messages = conv.messages
    unread = ctx.meter.unread(messages)
    skip = set(unread) if unread else ()
    for k, msg in enumerate(messages):
        if k not in skip:
            total += ctx.meter.message(msg)
        if total >= min_prefix:
            return k
    return None


def old_frontier(conv: Conversation, ctx: Context) -> int | None:
    cleared = {(e.message_index, e.call_id) for e in ctx.edits if e.step == "window"}
    messages, pairing = conv.messages, conv.pairing
    best: tuple[int, int] | None = None
    for mi, msg in enumerate(messages):
        for bi, block in enumerate(msg.blocks):
            if not isinstance(block, ToolResult) or (msg.index, block.call_id) in cleared:
                continue
            call_loc = pairing.call_of.get((mi, bi))
            if call_loc is None:
                continue
            rnd = pairing.round_of_message.get(call_loc[0])
            if rnd is None or (best is not None and rnd >= best[0]):
                continue
            tool = call_at(messages, call_loc).name
            rules = ctx.rules_for(tool)
            if rules is not None and rules.rules.window == "keep":
                continue
            if reads_cleared(block, tool, ctx):  # the policy's own output: cleared before
                continue
            best = (rnd, mi)
    return None if best is None else best[1]


class Checked(CacheBreakpoints):
    """The step, checking at every request that what it read gives what the full scan
    gave: the frontier, the first cacheable message, the messages with markers."""

    def __init__(self) -> None:
        super().__init__()
        self.checked = 0
        self.past_cleared = 0  # frontiers standing after results the window cleared
        self.dropped = 0  # requests whose oldest rounds the window dropped
        self.loose = 0
        self.late = 0  # requests under a policy with a tool of edit_latest: false

    def _targets(
        self, conv: Conversation, ctx: Context, limits: Limits, scan: _Scan, cleared: _Cleared
    ) -> set[int]:
        messages = conv.messages
        frontier = old_frontier(conv, ctx)
        assert scan.frontier(conv, ctx, cleared) == frontier
        latest = scan.latest_user()
        for min_prefix in {0, 500, limits.min_prefix}:
            want = old_first_cacheable(conv, ctx, min_prefix)
            assert _first_cacheable(conv, ctx, min_prefix, latest) == want
        assert scan.marked == [i for i, m in enumerate(messages) if m.cache]
        assert scan.system == [i for i in scan.marked if messages[i].role == "system"]
        self.checked += 1
        self.past_cleared += bool(frontier is not None and cleared.keys)
        self.dropped += any(e.step == "drop" for e in ctx.edits)
        self.loose += bool(scan.loose)
        self.late += scan.late
        return super()._targets(conv, ctx, limits, scan, cleared)


class Renew:
    """A step that hands on a new conversation object, as a user's step may."""

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        return conversation.with_messages(conversation.messages, same_structure=True)


# ------------------------------------------------------------------ random histories

TOOLS = ("read_file", "grep", "shell", "notes")


def _words(rng: random.Random) -> str:
    n = rng.choice([rng.randint(1, 6), rng.randint(30, 500), rng.randint(30, 500)])
    return " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(n))


def _turns(rng: random.Random) -> Iterator[tuple[str, Any]]:
    """The history as events: ("call", [(id, tool, args, result)...]), ("answer", text),
    ("user", text)."""
    n = 0
    ids: list[str] = []
    for _ in range(rng.randint(6, 30)):
        calls = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            if ids and rng.random() < 0.1:
                cid = rng.choice(ids[-6:])  # reused in a later turn, as tau-bench does
            else:
                n += 1
                cid = f"call_{n}"
                ids.append(cid)
            args = {"path": "x" * rng.choice([5, 80])}
            calls.append((cid, rng.choice(TOOLS), args, _words(rng)))
        if len({c[0] for c in calls}) < len(calls):
            calls = calls[:1]
        yield "call", calls
        if rng.random() < 0.2:
            yield "answer", "done " * rng.randint(1, 20)
            yield "user", "next " * rng.randint(1, 40)


def chat_body(rng: random.Random) -> dict[str, Any]:
    import json

    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent. " * rng.randint(1, 60)},
        {"role": "user", "content": "Do the task."},
    ]
    for kind, value in _turns(rng):
        if kind == "call":
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                        for cid, name, args, _ in value
                    ],
                }
            )
            for cid, _, _, res in value:
                msgs.append({"role": "tool", "tool_call_id": cid, "content": res})
        elif kind == "answer":
            msgs.append({"role": "assistant", "content": value})
        else:
            part: dict[str, Any] = {"type": "text", "text": value}
            if rng.random() < 0.3:  # the user's own breakpoint
                part["prompt_cache_breakpoint"] = {"mode": "explicit"}
            msgs.append({"role": "user", "content": [part]})
    return {"model": "gpt-5.6", "messages": msgs}


def anthropic_body(rng: random.Random) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Do the task."}]
    for kind, value in _turns(rng):
        if kind == "call":
            msgs.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": cid, "name": name, "input": args}
                        for cid, name, args, _ in value
                    ],
                }
            )
            results: list[dict[str, Any]] = []
            for cid, _, _, res in value:
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": cid, "content": res}
                if rng.random() < 0.05:  # the user's own, now and then for an hour
                    ttl = {"ttl": "1h"} if rng.random() < 0.5 else {}
                    block["cache_control"] = {"type": "ephemeral", **ttl}
                results.append(block)
            msgs.append({"role": "user", "content": results})
        elif kind == "answer":
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": value}]})
        else:
            msgs.append({"role": "user", "content": value})
    system = [{"type": "text", "text": "You are an agent. " * rng.randint(1, 60)}]
    if rng.random() < 0.3:
        system[0]["cache_control"] = {"type": "ephemeral"}
    body: dict[str, Any] = {"system": system, "messages": msgs}
    if rng.random() < 0.5:  # else no model's minimum prefix: the policy's applies
        body["model"] = "claude-sonnet-4"
    return body


def responses_body(rng: random.Random) -> dict[str, Any]:
    import json

    items: list[dict[str, Any]] = []
    body: dict[str, Any] = {"model": rng.choice(["gpt-5.6", "gpt-5.6"]), "input": items}
    if rng.random() < 0.25:  # earlier turns on the server: outputs whose calls are not here
        body["previous_response_id"] = "resp_1"
        items.append({"type": "function_call_output", "call_id": "gone_1", "output": "old"})
        items.append({"type": "function_call_output", "call_id": "gone_2", "output": "x " * 99})
    if rng.random() < 0.5:
        body["reasoning"] = {"context": "current_turn"}  # earlier turns' reasoning dropped
    items.append({"role": "user", "content": "Do the task."})
    for kind, value in _turns(rng):
        if kind == "call":
            if rng.random() < 0.6:
                items.append(
                    {
                        "type": "reasoning",
                        "id": f"rs_{len(items)}",
                        "summary": [],
                        "encrypted_content": sealed(rng.randint(20, 400)),
                    }
                )
            for cid, name, args, _ in value:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": cid,
                        "name": name,
                        "arguments": json.dumps(args),
                    }
                )
            for cid, _, _, res in value:
                items.append({"type": "function_call_output", "call_id": cid, "output": res})
        elif kind == "answer":
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": value}],
                }
            )
        else:
            items.append({"role": "user", "content": value})
    return body


BODIES = {"openai-chat": chat_body, "anthropic": anthropic_body, "openai-responses": responses_body}


def random_config(rng: random.Random) -> dict[str, Any]:
    config: dict[str, Any] = {
        "cache_breakpoints": "auto",
        "context_window": rng.choice([1500, 2500, 5000, 10_000, 40_000]),
        "overflow": "drop_oldest_rounds",
        "window": {
            "strategy": rng.choice(["cost", "threshold"]),
            "keep_rounds": rng.randint(1, 3),
            "clear_reasoning": rng.random() < 0.5,
            "clear_tool_inputs": rng.random() < 0.5,
        },
        "tools": {},
    }
    if rng.random() < 0.6:
        config["tools"][rng.choice(TOOLS)] = {"window": "keep"}
    if rng.random() < 0.3:
        config["tools"]["*"] = {"max_tokens": 120}
    if rng.random() < 0.3:
        config["recall"] = {"enabled": True}
    if rng.random() < 0.5:
        config["pricing"] = {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0}
    if rng.random() < 0.3:  # sent whole while the latest: the last breakpoint before it
        config["tools"].setdefault(rng.choice(TOOLS), {})["edit_latest"] = False
    return config


def chains() -> dict[str, Any]:
    return {
        "default": lambda step: [EditResults(), Window(), step, BudgetGuard()],
        "no window": lambda step: [EditResults(), step],
        "renewed": lambda step: [EditResults(), Window(), Renew(), step, BudgetGuard()],
        "two windows": lambda step: [EditResults(), Window(), Window(), step],
    }


def run_history(fmt: str, seed: int, chain: str) -> Checked:
    """A random history applied request after request by one policy (steady state), then
    some of its earlier requests again, then the policy's own last output; every request
    checked against the reference, and against a fresh policy now and then."""
    rng = random.Random(f"{fmt}-{seed}")
    body = BODIES[fmt](rng)
    config = random_config(rng)
    key = "input" if fmt == "openai-responses" else "messages"
    step = Checked()
    build = chains()[chain]
    policy = ctxwin.Policy(config, counter=FakeCounter(), steps=build(step))
    points = request_points(body, fmt)
    requests = [{**body, key: body[key][:t]} for t in points]
    requests += rng.sample(requests, min(4, len(requests)))  # back to shorter histories
    last = None
    for i, request in enumerate(requests):
        last = policy.apply(request, format=fmt)
        if i % 7 == 3:
            fresh = ctxwin.Policy(config, counter=FakeCounter(), steps=build(CacheBreakpoints()))
            assert fresh.apply(request, format=fmt).request == last.request
    assert last is not None
    assert last.request is not None
    policy.apply(last.request, format=fmt)  # the policy's own output
    return step


@pytest.mark.parametrize("chain", list(chains()))
@pytest.mark.parametrize("fmt", list(BODIES))
def test_breakpoints_match_the_full_scan_on_random_histories(fmt: str, chain: str) -> None:
    """At every request of 12 random histories (cleared rounds, drops, ``window: keep``
    tools, recall, reused call ids, the user's own markers), the memoized read gives the
    frontier, first cacheable message and markers of the full scan: what the window cleared
    told by the window (by both windows, where two run), or found in the edits without one."""
    steps = [run_history(fmt, seed, chain) for seed in range(12)]
    assert sum(s.checked for s in steps) > 100
    assert sum(s.late for s in steps) > 20
    if chain != "no window":
        assert sum(s.past_cleared for s in steps) > 20  # the frontier past cleared results
        assert sum(s.dropped for s in steps) > 3
    if fmt == "openai-responses":
        assert sum(s.loose for s in steps) > 5  # results whose calls live on the server


# ------------------------------------------------------------------ the memo


def test_results_left_out_as_cleared_come_back_under_a_new_set() -> None:
    """The results cleared are told in a set that only grows along a history (the
    window's own): under a new one (the window started over) the results the old one left
    out are read again."""
    grown: set[tuple[int | None, str | None]] = set()

    def tell(conversation: Conversation, context: Context) -> Conversation:
        n = len(conversation.messages)
        if n == 11:  # the second request: the first result cleared, told in the same set
            result = conversation.messages[2].blocks[0]
            assert isinstance(result, ToolResult)
            grown.add((2, result.call_id))
            context.add_edits([ctxwin.Edit("window", "t", result.call_id, 50, 5, message_index=2)])
        context.window_cleared = grown if n < 13 else set()  # then a new set: none cleared
        return conversation

    uses = [[("read_file", {}, "w " * 50)] for _ in range(8)]
    body = ctxwin.testing.agent_body(uses, format="anthropic")
    del body["model"]  # no model's minimum prefix: the policy's (0) applies
    step = Checked()
    config = {
        "cache_breakpoints": "auto",
        "pricing": {"min_prefix": 0, "cache_write": 1.25, "cache_read": 0.1},
    }
    policy = ctxwin.Policy(config, counter=FakeCounter(), steps=[tell, step])
    placed = []
    for t in (9, 11, 13):
        result = policy.apply({**body, "messages": body["messages"][:t]})
        placed.append([m for m, _ in result.report.breakpoints])
    assert step.checked == 3
    assert placed == [[1, 8], [3, 10], [1, 12]]  # before the first result not cleared


def test_a_result_before_its_call_is_looked_at_again_as_the_request_grows() -> None:
    """A result standing before a call of its id (paired forward, as a user's step could
    leave it) answers that call only while no later result does: read again in every
    request (repair puts such results after their calls before the chain runs)."""
    adapter = get_adapter("openai-responses")
    early = {"type": "function_call_output", "call_id": "g1", "output": "y " * 50}
    user = {"role": "user", "content": "go"}
    grep = {"type": "function_call", "call_id": "g1", "name": "grep", "arguments": "{}"}
    first = adapter.parse({"input": [early, user, grep]})
    late = adapter.parse({"input": [{**early, "output": "z"}]}).messages[0]
    grown = first.with_messages((*first.messages, late))
    policy = ctxwin.Policy({})
    ctx = cast(
        Context,
        SimpleNamespace(
            policy=policy.compiled, config=policy.config, edits=[], window_cleared=None
        ),
    )
    ctx.rules_for = policy.compiled.rules_for  # type: ignore[method-assign]
    ctx.recall_on = lambda tool: False  # type: ignore[method-assign]
    step = CacheBreakpoints()
    for conv, frontier in ((first, 0), (grown, 3)):  # then the late result answers it
        cleared = _Cleared.of(ctx)
        scan = step._read(conv, ctx, cleared)
        assert scan.frontier(conv, ctx, cleared) == old_frontier(conv, ctx) == frontier
