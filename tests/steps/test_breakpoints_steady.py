"""Cache breakpoints at steady state: the step reads a request's new messages, not its
whole history, and learns what the window cleared from the window (not from every edit)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import ctxwin
from ctxwin._core.conversation import Conversation
from ctxwin.replay import request_points
from ctxwin.steps import BudgetGuard, CacheBreakpoints, Context, EditResults, Window
from ctxwin.testing import FakeCounter


class CountingMap(Mapping[Any, Any]):
    def __init__(self, data: Mapping[Any, Any], counts: list[int]) -> None:
        self.data, self.counts = data, counts

    def get(self, key: Any, default: Any = None) -> Any:
        self.counts[0] += 1
        return self.data.get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.counts[0] += 1
        return self.data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


class Spy:
    """Around the breakpoints (``spy``, then ``done``): counts the pairing lookups and the
    reads of the list of edits between them (the conversation handed on is the window's own
    object)."""

    def __init__(self) -> None:
        self.lookups = [0]
        self.edit_reads = [0]
        self.seen = (0, 0)

    def done(self, conversation: Conversation, context: Context) -> Conversation:
        self.seen = (self.lookups[0], self.edit_reads[0])
        return conversation

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        self.lookups[0] = self.edit_reads[0] = 0
        pairing = conversation.pairing
        conversation.set_pairing(
            replace(pairing, call_of=CountingMap(pairing.call_of, self.lookups))
        )
        counts = self.edit_reads

        class Edits(list):  # type: ignore[type-arg]
            def __iter__(self) -> Iterator[Any]:
                counts[0] += 1
                return super().__iter__()

        context.edits = Edits(context.edits)
        return conversation


def test_a_steady_request_reads_its_new_messages_not_the_history() -> None:
    """At steady state the step looks up the pairing of the new round's results only (the
    full scan looked up every result not cleared: 60 here), and reads no edit: the window
    said what it cleared."""
    rng = random.Random(7)
    sizes = [rng.choice([3, 200]) for _ in range(60)]
    uses = [[("read_file", {"path": f"f{r}"}, "w " * n)] for r, n in enumerate(sizes)]
    body = ctxwin.testing.agent_body(uses, format="anthropic")
    del body["model"]  # no model's minimum prefix: the policy's (0) applies
    spy = Spy()
    steps = [EditResults(), Window(), spy, CacheBreakpoints(), spy.done, BudgetGuard()]
    config = {
        "cache_breakpoints": "auto",
        "context_window": 200_000,
        "window": {"strategy": "threshold"},  # nothing cleared: every result is looked at
        "pricing": {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0},
    }
    policy = ctxwin.Policy(config, counter=FakeCounter(), steps=steps)
    points = request_points(body, "anthropic")
    for t in points[:-3]:
        policy.apply({**body, "messages": body["messages"][:t]})
    for t in points[-3:]:
        result = policy.apply({**body, "messages": body["messages"][:t]})
        assert len(result.report.breakpoints) == 2  # the frontier and the last message
        assert spy.seen == (1, 0)  # the new result's call; no edit read


def test_the_window_tells_what_it_cleared() -> None:
    """``Context.window_cleared``: the (message index, call id) of each of the window's
    edits in the report; its own set, the same object while it resumes the history."""
    told: list[Any] = []

    def look(conversation: Conversation, context: Context) -> Conversation:
        told.append(context.window_cleared)
        return conversation

    uses = [[("read_file", {}, "w " * 300)] for _ in range(30)]
    body = ctxwin.testing.agent_body(uses, format="openai-chat")
    config = {"context_window": 4000, "window": {"strategy": "threshold"}}
    policy = ctxwin.Policy(config, counter=FakeCounter(), steps=[Window(), look])
    result = policy.apply({**body, "messages": body["messages"][:-2]})
    result = policy.apply(body)
    window = {(e.message_index, e.call_id) for e in result.report.edits if e.step == "window"}
    assert window
    assert told[1] == window
    assert told[1] is told[0]


def test_the_policys_own_output_keeps_its_breakpoints() -> None:
    """Sent back, the results the window cleared read as its placeholders and are cleared
    no more (no edit, so the window does not tell them): the frontier is still the first
    result it would clear next, not the oldest placeholder, and the output is a fixed
    point (review s50-9 finding 1: the breakpoint went to message 1 on Anthropic, and on
    OpenAI under the minimum prefix, was not placed)."""
    config = {"context_window": 8000, "cache_breakpoints": "auto"}
    uses = [
        [("read", {"path": f"f{i}"}, " ".join(f"w{i}_{k}" for k in range(350)))] for i in range(19)
    ]
    for fmt in ("anthropic", "openai-chat", "openai-responses"):
        body = ctxwin.testing.agent_body(uses, format=fmt, system="You are an agent. " * 200)
        if fmt != "anthropic":
            body["model"] = "gpt-5.6"
        first = ctxwin.load_policy(config).apply(body)
        assert any(e.step == "window" for e in first.report.edits)
        assert len(first.report.breakpoints) == 2  # the frontier and the last message
        again = ctxwin.load_policy(config).apply(first.request)
        assert again.report.breakpoints == first.report.breakpoints, fmt
        assert again.request == first.request, fmt
