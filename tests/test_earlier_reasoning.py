"""OpenAI drops the reasoning items of earlier turns (before the user's latest message)
before it reads a request: ctxwin counts, caches, clears and prices them as it reads them
(``Overheads.drops_earlier_reasoning``)."""

from __future__ import annotations

from typing import Any

import pytest

from ctxwin import Policy
from ctxwin._policy.tables import Pricing
from ctxwin.formats import get_adapter
from ctxwin.formats.openai_responses import OpenAIResponsesAdapter
from ctxwin.replay import replay
from ctxwin.steps import _fold
from ctxwin.testing import FakeCounter
from ctxwin.tokens._meter import Overheads
from tests.builders import sealed, words

FMT = "openai-responses"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def rnd(i: int, thought: int = 200, size: int = 2000) -> list[dict[str, Any]]:
    return [
        {"type": "reasoning", "summary": [], "encrypted_content": sealed(thought)},
        {"type": "function_call", "call_id": f"c{i}", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": f"c{i}", "output": words(size)},
    ]


def two_turns(rounds: int = 4, after: int = 0, last: int = 2000) -> list[dict[str, Any]]:
    """A first turn of ``rounds`` rounds (the last with a result of ``last`` words) and an
    answer, the user's next message, then ``after`` rounds."""
    items = [user("first")]
    for i in range(rounds):
        items += rnd(i, size=last if i == rounds - 1 else 2000)
    items += [
        {"type": "reasoning", "summary": [], "encrypted_content": sealed(50)},
        {"type": "message", "role": "assistant", "content": "done"},
        user("second"),
    ]
    for i in range(rounds, rounds + after):
        items += rnd(i)
    return items


def policy(**window: Any) -> Policy:
    config = {
        "context_window": 100_000,
        "pricing": "anthropic",
        "window": {"keep_rounds": 1, "clear_reasoning": True, **window},
    }
    return Policy(config, counter=FakeCounter(), format=FMT)


def reasoning_at(items: list[dict[str, Any]]) -> list[int]:
    return [k for k, x in enumerate(items) if x.get("type") == "reasoning"]


def test_the_reasoning_of_earlier_turns_counts_nothing() -> None:
    items = two_turns()
    pol = policy()
    conv = get_adapter(FMT).parse({"input": items})
    ctx = pol.context({"input": items}, FMT)
    assert ctx.meter.unread(conv.messages) == reasoning_at(items)  # all before "second"
    every = ctx.envelope_tokens(conv) + sum(ctx.message_tokens(m) for m in conv.messages)
    thoughts = sum(ctx.message_tokens(conv.messages[k]) for k in reasoning_at(items))
    assert thoughts == 4 * (200 + 3) + 50 + 3  # sealed sizes plus the message overhead
    assert ctx.conversation_tokens(conv) == every - thoughts
    # before the user's next message, the turn's reasoning is read
    first = get_adapter(FMT).parse({"input": items[:-1]})
    assert ctx.meter.unread(first.messages) == []


def test_the_reports_count_what_the_provider_reads() -> None:
    items = two_turns()
    report = (
        Policy({"context_window": 100_000}, counter=FakeCounter(), format=FMT)
        .apply({"input": items})
        .report
    )
    conv = get_adapter(FMT).parse({"input": items})
    ctx = policy().context({"input": items}, FMT)
    assert report.tokens_before == ctx.conversation_tokens(conv)
    rounds = {r.index: r for r in report.rounds}
    read = sum(ctx.message_tokens(conv.messages[k]) for k in (2, 3))  # round 0's call, output
    assert rounds[0].tokens_before == read  # its reasoning item counts nothing


def test_a_new_turn_breaks_the_cache_at_the_turns_first_reasoning_item() -> None:
    """The request after the user's next message shares with the one before only what comes
    before the first reasoning item the provider now drops, as OpenAI bills it."""
    items = two_turns(after=1)
    run = replay({"input": items}, None, format=FMT, pricing=Pricing(cache_write=1, cache_read=0.1))
    ctx = policy().context({"input": items}, FMT)
    conv = get_adapter(FMT).parse({"input": items})
    at = items.index(user("second")) + 1  # the request ending with the user's message
    assert len(run.requests_detail) == 7  # after the user's messages and each output
    tokens, cached = run.requests_detail[5].unmanaged
    head = ctx.envelope_tokens(conv) + ctx.message_tokens(conv.messages[0])
    assert cached == head  # the user's first message only
    assert tokens == ctx.conversation_tokens(get_adapter(FMT).parse({"input": items[:at]}))
    prev_tokens, prev_cached = run.requests_detail[4].unmanaged  # through round 3's output
    assert prev_cached > head
    answer, second = (ctx.message_tokens(conv.messages[k]) for k in (at - 2, at - 1))
    assert tokens == prev_tokens - 4 * (200 + 3) + answer + second  # the reasoning went


def test_the_window_clears_where_the_new_turn_rewrites_anyway(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the user's next message the provider writes the previous turn again whatever the
    window does: clearing its old results there costs nothing more, and the cost rule
    does. Were the reasoning read (and the cache kept), the same clearing would re-write
    the rounds after the one to clear (the two newest, kept), and the rule waits."""
    items = two_turns(rounds=3)
    assert not policy(keep_rounds=2).apply({"input": items[:-3]}).report.edits  # in turn 1
    edits = policy(keep_rounds=2).apply({"input": items}).report.edits
    assert {e.call_id for e in edits} == {"c0", None}  # round 0's result and reasoning item
    assert [e.saved for e in edits if e.call_id is None] == [0]  # the provider drops it
    kept = Overheads(encrypted_reasoning=OpenAIResponsesAdapter.overheads.encrypted_reasoning)
    monkeypatch.setattr(OpenAIResponsesAdapter, "overheads", kept)
    assert not policy(keep_rounds=2).apply({"input": items}).report.edits


def test_a_session_expects_the_cache_a_new_turn_leaves() -> None:
    """What a session expects the provider to read from its cache at the user's next
    message: only what comes before the first reasoning item it now drops (counted as the
    provider reads it), as the replay prices it."""
    items = two_turns(after=1)
    at = items.index(user("second")) + 1
    pol = Policy({"context_window": 100_000, "pricing": {"cache_write": 1, "cache_read": 0.1}})
    pol = Policy(pol.config, counter=FakeCounter(), format=FMT)
    session = pol.session()
    for t in (at - 3, at, at + 1):  # through round 3's output, the user's message, rs 4
        session.apply({"input": items[:t]})
    conv = get_adapter(FMT).parse({"input": items})
    ctx = pol.context({"input": items}, FMT)
    head = ctx.envelope_tokens(conv) + ctx.message_tokens(conv.messages[0])
    expected = [r.predicted_cached for r in session.records]
    run = replay({"input": items[: at + 1]}, pol, format=FMT)
    assert expected[1] == head == run.requests_detail[5].managed[1]
    assert expected[2] == run.requests_detail[6].managed[1] > head  # cached again after it


def turns(n: int, rounds: int) -> list[dict[str, Any]]:
    """``n`` turns of the user's: a message, ``rounds`` rounds, an answer."""
    items: list[dict[str, Any]] = []
    for t in range(n):
        items.append(user(f"task {t}"))
        items += [x for i in range(t * rounds, (t + 1) * rounds) for x in rnd(i)]
        items += [
            {"type": "reasoning", "summary": [], "encrypted_content": sealed(50)},
            {"type": "message", "role": "assistant", "content": "done"},
        ]
    return items


def jumps_and_bill(items: list[dict[str, Any]]) -> tuple[list[int], float]:
    run = replay({"input": items}, policy(keep_rounds=2, clear_reasoning=False), format=FMT)
    return [k for k, d in enumerate(run.requests_detail) if d.jump], run.managed.effective_cost


def test_a_jump_due_late_in_a_short_turn_waits_for_the_users_next_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the user's next message the provider writes the turn again from its first
    reasoning item whatever the window does. A jump due a request before it,
    in a turn of a few requests, which would re-write the kept rounds, waits for it and
    is made there: the bill is lower than when every jump is made as soon as it is due."""
    items = turns(4, 6)
    users = [7 * t for t in range(4)]  # each turn: the user's message, then 6 outputs
    jumps, bill = jumps_and_bill(items)
    monkeypatch.setattr(_fold, "user_soon", lambda *args: False)
    due, due_bill = jumps_and_bill(items)
    assert set(due) - set(jumps) == {13}  # the last request of the second turn
    assert set(jumps) - set(due) == {14}  # made at the user's message
    assert 14 in users
    assert bill < due_bill


def test_a_long_run_of_tool_calls_does_not_wait_for_the_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In an agent's long run the user's next message is not taken to come soon: every
    jump is made when it is due, as without the rule."""
    items = turns(1, 30)
    jumps, bill = jumps_and_bill(items)
    assert len(jumps) > 3
    monkeypatch.setattr(_fold, "user_soon", lambda *args: False)
    assert jumps_and_bill(items) == (jumps, bill)


# ------------------------------------------------ requests whose model reads every turn's


@pytest.mark.parametrize(
    ("extra", "dropped"),
    [
        ({}, True),
        ({"model": "gpt-5"}, True),
        ({"model": "gpt-5.6"}, False),  # the gpt-5.6 family reads all turns by default
        ({"model": "gpt-5.6-mini", "reasoning": {"context": "auto"}}, False),
        ({"model": "gpt-5.6", "reasoning": {"context": "current_turn"}}, True),
        ({"model": "gpt-5", "reasoning": {"context": "all_turns", "effort": "low"}}, False),
        ({"reasoning": {"context": "all_turns"}}, False),
        ({"reasoning": None}, True),
    ],
)
def test_reasoning_context_says_whether_earlier_turns_reasoning_counts(
    extra: dict[str, Any], dropped: bool
) -> None:
    """``reasoning.context`` (openai 3.57.0): ``all_turns`` reads earlier turns' reasoning,
    ``current_turn`` drops it, and left out (or ``auto``) the model decides: ``gpt-5.6``
    reads all turns, earlier models the current turn only. A request that reads them is
    counted with them: sent as if dropped, one could run over the window."""
    items = two_turns()
    body = {"input": items, **extra}
    conv = get_adapter(FMT).parse(body)
    ctx = policy().context(body, FMT)
    every = ctx.envelope_tokens(conv) + sum(ctx.message_tokens(m) for m in conv.messages)
    thoughts = sum(ctx.message_tokens(conv.messages[k]) for k in reasoning_at(items))
    assert ctx.meter.unread(conv.messages) == (reasoning_at(items) if dropped else [])
    assert ctx.conversation_tokens(conv) == (every - thoughts if dropped else every)
    report = policy().apply(body).report
    assert report.tokens_before == ctx.conversation_tokens(conv)


def test_a_request_that_reads_earlier_reasoning_keeps_its_cache_at_a_new_turn() -> None:
    """Read by the provider, the earlier turn's reasoning is neither free to clear nor a
    break in the cache: the clearing the new turn made free waits (as the format without
    the drop does)."""
    items = two_turns(rounds=3)
    assert policy(keep_rounds=2).apply({"input": items}).report.edits
    body = {"input": items, "reasoning": {"context": "all_turns"}}
    assert not policy(keep_rounds=2).apply(body).report.edits


def test_one_policy_follows_each_requests_reasoning_context() -> None:
    """A history sent with one ``reasoning.context``, then grown and sent with the other:
    each answer is the one a fresh policy gives (the memoized window is the request's own:
    resumed from the other's, the new turn would find no reasoning the provider drops)."""
    items = two_turns(rounds=3)
    read = {"reasoning": {"context": "all_turns"}}
    for first, then in (({**read}, {}), ({}, {**read}), ({"model": "gpt-5.6"}, {})):
        pol = policy(keep_rounds=2)
        pol.apply({"input": items[:-1], **first})
        got = pol.apply({"input": items, **then})
        fresh = policy(keep_rounds=2).apply({"input": items, **then})
        assert got.request == fresh.request
        assert [e.call_id for e in got.report.edits] == [e.call_id for e in fresh.report.edits]


def test_replay_counts_the_reasoning_a_gpt_5_6_request_reads() -> None:
    items = two_turns(after=1)
    at = items.index(user("second")) + 1
    price = Pricing(cache_write=1, cache_read=0.1)
    dropped = replay({"input": items}, None, format=FMT, pricing=price)
    read = replay({"input": items, "model": "gpt-5.6"}, None, format=FMT, pricing=price)
    conv = get_adapter(FMT).parse({"input": items[:at]})
    ctx = policy().context({"input": items}, FMT)
    thoughts = sum(ctx.message_tokens(conv.messages[k]) for k in reasoning_at(items[:at]))
    assert (
        read.requests_detail[5].unmanaged[0] == dropped.requests_detail[5].unmanaged[0] + thoughts
    )
    assert read.requests_detail[5].unmanaged[1] > dropped.requests_detail[5].unmanaged[1]
