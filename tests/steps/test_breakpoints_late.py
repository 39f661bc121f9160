"""Cache breakpoints under ``edit_latest: false``: the latest round's results go whole and
are edited from the next round on, so the last breakpoint stands before them, on a message
the next request sends as it is (a marker on the whole result wrote an entry never read)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxwin
from ctxwin.formats import get_adapter
from ctxwin.testing import FakeCounter

FORMATS = {"anthropic": "claude-sonnet-4-5", "openai-chat": "gpt-5.6"}


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def config(edit_latest: bool, **tools: Any) -> dict[str, Any]:
    return {
        "context_window": 200_000,
        "cache_breakpoints": "auto",
        "window": {"keep_rounds": 2},
        "tools": {"*": {"max_tokens": 200, "edit_latest": edit_latest}, **tools},
    }


def round_of(fmt: str, s: int, calls: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """An assistant turn calling ``calls`` ((tool, result text)...) and their results."""
    ids = [f"t{s}_{k}" for k in range(len(calls))]
    if fmt == "anthropic":
        uses = [
            {"type": "tool_use", "id": i, "name": n, "input": {}}
            for i, (n, _) in zip(ids, calls, strict=True)
        ]
        results = [
            {"type": "tool_result", "tool_use_id": i, "content": text}
            for i, (_, text) in zip(ids, calls, strict=True)
        ]
        return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    tool_calls = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": "{}"}}
        for i, (n, _) in zip(ids, calls, strict=True)
    ]
    return [
        {"role": "assistant", "content": None, "tool_calls": tool_calls},
        *(
            {"role": "tool", "tool_call_id": i, "content": t}
            for i, (_, t) in zip(ids, calls, strict=True)
        ),
    ]


class SimulatedCache:
    """The provider's cache as Anthropic documents it: a request writes an entry for the
    prefix up to and including each message it marks, and reads the longest entry that is a
    prefix of it (markers left out of the comparison: they do not change the prefix)."""

    def __init__(self, fmt: str) -> None:
        self.adapter = get_adapter(fmt)
        self.entries: set[str] = set()

    def send(self, messages: list[dict[str, Any]]) -> tuple[list[str], int]:
        """The request's messages as the cache compares them, and how many it read."""
        plain = [json.dumps(self.adapter.unmarked(m), sort_keys=True) for m in messages]
        keys = ["\n".join(plain[: i + 1]) for i in range(len(plain))]
        read = max((i + 1 for i, k in enumerate(keys) if k in self.entries), default=0)
        self.entries.update(
            k for k, m in zip(keys, messages, strict=True) if self.adapter.marker_of(m)
        )
        return plain, read

    def reachable(self, messages: list[dict[str, Any]], n: int) -> int:
        """How many of the first ``n`` messages a marker can cover: up to the last of them
        that takes one (an OpenAI Chat assistant message with calls only has no part for
        it)."""
        marked = (self.adapter.set_marker(dict(m), True) for m in messages[:n])
        return max((i + 1 for i, m in enumerate(marked) if self.adapter.marker_of(m)), default=0)


def loop(fmt: str, policy: ctxwin.Policy, rounds: int) -> list[tuple[int, int, list[int]]]:
    """An agent loop, one request per round: for each request after the first, the messages
    it read from the cache, those it shares with the request before (up to the last that
    takes a marker), and where the request before had its markers."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "task " + words(1500, "t")}]
    cache = SimulatedCache(fmt)
    prev: list[str] | None = None
    prev_marks: list[int] = []
    seen = []
    for s in range(rounds):
        history += round_of(fmt, s, [("read", words(800, f"r{s}-"))])
        body = {"model": FORMATS[fmt], "max_tokens": 100, "messages": list(history)}
        out = policy.apply(body, format=fmt).request
        assert out is not None
        messages = out["messages"]
        plain, read = cache.send(messages)
        if prev is not None:
            shared = next(
                (i for i, (a, b) in enumerate(zip(prev, plain, strict=False)) if a != b), len(prev)
            )
            seen.append((read, cache.reachable(messages, shared), prev_marks))
        prev = plain
        prev_marks = [i for i, m in enumerate(messages) if cache.adapter.marker_of(m)]
    return seen


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("edit_latest", [False, True])
def test_each_request_reads_from_the_cache_all_it_shares_with_the_one_before(
    fmt: str, edit_latest: bool
) -> None:
    """Over 24 rounds (window jumps included), every request reads from the cache the whole
    prefix it shares with the request before: under ``edit_latest: false`` the last marker
    is before the round's whole result, which the next request caps (on it, the next
    request read only up to the window's frontier)."""
    policy = ctxwin.Policy(config(edit_latest), counter=FakeCounter())
    seen = loop(fmt, policy, 24)
    assert [read for read, _, _ in seen] == [shared for _, shared, _ in seen]
    jumps = sum(shared <= marks[-1] for _, shared, marks in seen)
    assert 3 <= jumps < 12  # the window jumped now and then: read up to its frontier
    assert sum(read for read, _, _ in seen) > 23 * 3  # far past the first message


def test_the_last_breakpoint_goes_on_the_latest_rounds_calls() -> None:
    """Anthropic: the assistant message with the calls takes it; the whole result, the last
    message, carries none."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []}
    body["messages"] = [{"role": "user", "content": "task " + words(1500, "t")}]
    for s in range(3):
        body["messages"] += round_of("anthropic", s, [("read", words(800, f"r{s}-"))])
    result = ctxwin.Policy(config(False), counter=FakeCounter()).apply(body)
    assert [m for m, _ in result.report.breakpoints] == [1, 5]  # the frontier, the calls
    assert "cache_control" not in json.dumps(result.request["messages"][6])  # type: ignore[index]


def test_the_breakpoint_stands_before_the_first_result_sent_whole() -> None:
    """OpenAI Chat, a round calling a tool edited now, then one sent whole: the first tool
    message (already as the next request sends it) takes the breakpoint, the second not;
    an assistant message with calls only takes none (no content part)."""
    body = {"model": "gpt-5.6", "messages": [{"role": "user", "content": words(1500, "t")}]}
    calls = [("grep", words(800, "g")), ("read", words(800, "r"))]
    body["messages"] += round_of("openai-chat", 0, calls)
    policy = ctxwin.Policy(config(True, read={"edit_latest": False}), counter=FakeCounter())
    result = policy.apply(body)
    assert [m for m, _ in result.report.breakpoints] == [0, 2]  # the frontier too
    sent = result.request["messages"]  # type: ignore[index]
    assert len(sent[2]["content"][0]["text"].split()) < 300  # grep's result, capped
    assert len(sent[3]["content"].split()) == 800  # read's, whole


def test_a_result_message_with_the_users_text_is_passed_over() -> None:
    """Anthropic: the user's text sent with the whole result changes with it next time: the
    breakpoint stays on the calls."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []}
    body["messages"] = [{"role": "user", "content": "task " + words(1500, "t")}]
    body["messages"] += round_of("anthropic", 0, [("read", words(800, "r"))])
    body["messages"][-1]["content"].append({"type": "text", "text": "and hurry"})
    result = ctxwin.Policy(config(False), counter=FakeCounter()).apply(body)
    assert [m for m, _ in result.report.breakpoints] == [1]


def test_none_before_the_minimum_prefix_that_only_the_whole_result_reaches() -> None:
    """The prefix before the whole result is below the model's minimum cacheable prefix
    (Sonnet 4.5: 1,024): no breakpoint, not one on the result that reaches it."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []}
    body["messages"] = [{"role": "user", "content": "task " + words(300, "t")}]
    body["messages"] += round_of("anthropic", 0, [("read", words(2000, "r"))])
    late = ctxwin.Policy(config(False), counter=FakeCounter()).apply(body)
    assert late.report.breakpoints == ()
    edited = ctxwin.Policy(config(True), counter=FakeCounter()).apply(body)
    assert edited.report.breakpoints == ()  # capped to 200 tokens, it does not reach it


def test_nothing_markable_before_the_result_sent_whole_places_none() -> None:
    """OpenAI Chat, a request that is the round alone: its calls take no breakpoint and
    nothing comes before them, so none is placed (the whole result would take one)."""
    body = {
        "model": "gpt-5.6",
        "messages": round_of("openai-chat", 0, [("read", words(2000, "r"))]),
    }
    result = ctxwin.Policy(config(False), counter=FakeCounter()).apply(body)
    assert result.report.breakpoints == ()
    assert result.request["messages"][1]["content"] == body["messages"][1]["content"]  # type: ignore[index]


def test_a_chat_after_the_latest_round_is_read_from_the_cache() -> None:
    """After one call the assistant answers and the user asks again, with no new call: the
    round stays the latest, its result whole in every request. Held before that result
    alone, the last breakpoint let no request read the chat after it (3,518 tokens read a
    request, whatever its length): the last message gets one too."""
    policy = ctxwin.load_policy(config(False))
    cache = SimulatedCache("anthropic")
    history: list[dict[str, Any]] = [{"role": "user", "content": "Find it. " + words(1500, "t")}]
    history += round_of("anthropic", 0, [("lookup", words(800, "row"))])
    shared = []
    for turn in range(6):
        body = {"model": FORMATS["anthropic"], "max_tokens": 100, "messages": list(history)}
        out = policy.apply(body, format="anthropic").request
        assert out is not None
        _, read = cache.send(out["messages"])
        shared.append((read, len(history) - 2))
        answer = {"type": "text", "text": f"answer {turn}: " + words(300, f"a{turn}.")}
        history.append({"role": "assistant", "content": [answer]})
        history.append({"role": "user", "content": f"and then {turn}? " + words(100, f"q{turn}.")})
    # from the third request on, each reads all the one before sent (the second reads up to
    # the calls: the first ended with the whole result)
    assert [read for read, _ in shared[2:]] == [n for _, n in shared[2:]]


def test_no_five_minute_breakpoint_before_the_users_one_hour_one_after_the_round() -> None:
    """The user's own 1-hour breakpoint on their latest message, after the round's whole
    result and an answer: marking the last message too kept it there, after ctxwin's
    5-minute one on the calls, which Anthropic refuses ("longer TTL cache entries must
    appear before shorter TTLs")."""
    one_hour = {"type": "ephemeral", "ttl": "1h"}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find it. " + words(1500, "t")}]
    messages += round_of("anthropic", 0, [("lookup", words(800, "row"))])
    messages += [
        {"role": "assistant", "content": [{"type": "text", "text": "answer " + words(300, "a")}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and? " + words(100, "q"), "cache_control": one_hour}
            ],
        },
    ]
    body = {"model": FORMATS["anthropic"], "max_tokens": 100, "messages": messages}
    out = ctxwin.load_policy(config(False)).apply(body, format="anthropic").request
    assert out is not None
    ttls = [
        block["cache_control"].get("ttl", "5m")
        for msg in out["messages"]
        if isinstance(msg["content"], list)
        for block in msg["content"]
        if block.get("cache_control")
    ]
    assert ttls
    assert not any(t == "5m" and "1h" in ttls[k + 1 :] for k, t in enumerate(ttls)), ttls
