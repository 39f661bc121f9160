"""Usage feedback: calibrated counts per model, without a prefix break of its own."""

from __future__ import annotations

import copy
import gc
import json
import math
import weakref
from typing import Any

import pytest

import ctxwin
from ctxwin._feedback.calibration import ConversationRatios
from ctxwin._feedback.usage import Usage, read_usage
from ctxwin.testing import FakeCounter, agent_body

CLAUDE = 1.3
"""The provider counts 30% more than ctxwin (a Claude-style tokenizer gap)."""


def grow(rounds: int) -> list[dict[str, Any]]:
    body = agent_body(
        [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 90))] for r in range(rounds)],
        format="anthropic",
    )
    return body["messages"]  # type: ignore[no-any-return]


def reported(result: ctxwin.Result) -> dict[str, int]:
    real = math.ceil(result.tokens * CLAUDE)
    return {"input_tokens": real - 100, "cache_read_input_tokens": 100, "output_tokens": 5}


def test_a_claude_style_gap_is_budgeted_correctly_from_the_next_request_on() -> None:
    pol = ctxwin.Policy(
        {"context_window": 2000, "window": {"trigger": 0.7, "target": 0.4}},
        counter=FakeCounter(),
        format="anthropic",
    )
    messages = grow(30)
    previous: list[Any] | None = None
    events = 0
    for t in range(3, len(messages) + 1, 2):
        body = {"model": "claude-sonnet-4-5", "system": "s", "messages": messages[:t]}
        result = pol.apply(body)
        sent = result.request["messages"]  # type: ignore[index]
        if t > 3:
            assert result.tokens * CLAUDE <= 2000  # real tokens fit the real window
            assert result.report.calibration == pytest.approx(1.35)
        if previous is not None and result.report.window_events == events:
            assert sent[: len(previous)] == previous  # no break but the window's own jumps
        previous, events = sent, result.report.window_events
        pol.observe(result, {"usage": reported(result)})
    assert pol.calibration.of("claude-sonnet-4-5").ratio == pytest.approx(1.35)
    assert events >= 1


def test_a_new_ratio_applies_after_the_observed_request_only() -> None:
    pol = ctxwin.Policy({"context_window": 5000}, counter=FakeCounter(), format="anthropic")
    body = {"model": "claude-opus-4-1", "system": "s", "messages": grow(10)}
    first = pol.apply(body)
    pol.observe(first, reported(first))
    schedule = pol.calibration.schedule("claude-opus-4-1")
    assert schedule == [(0, 1.0), (len(first.conversation.messages), 1.35)]
    assert pol.apply(body).request == first.request  # the same history: decided before


def test_the_report_says_how_far_the_last_prediction_was_off() -> None:
    pol = ctxwin.Policy({}, counter=FakeCounter())
    result = pol.apply({"model": "claude-x", "system": "s", "messages": grow(2)})
    pol.observe(result, reported(result))
    cal = pol.calibration.of("claude-x")
    assert cal.error() == pytest.approx(0.3 / 1.3, abs=0.01)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"input_tokens": 10, "cache_read_input_tokens": 80, "cache_creation_input_tokens": 5},
            Usage(95, 80, 5),
        ),
        (
            {"usage": {"prompt_tokens": 90, "prompt_tokens_details": {"cached_tokens": 64}}},
            Usage(90, 64),
        ),
        ({"input_tokens": 90, "input_tokens_details": {"cached_tokens": 32}}, Usage(90, 32)),
        # LiteLLM for a Claude model, as an OpenHands run of July 2025 recorded it: the
        # cache writes (283) left out of prompt_tokens (4 uncached + 3,822 read); the next
        # request of that run read 4,105 of its 4,109 from the cache
        (
            {
                "prompt_tokens": 3826,
                "completion_tokens": 110,
                "prompt_tokens_details": {"cached_tokens": 3822, "audio_tokens": None},
                "cache_creation_input_tokens": 283,
                "cache_read_input_tokens": 3822,
            },
            Usage(4109, 3822, 283, 110),
        ),
        # LiteLLM today: prompt_tokens counts all, the writes itemized
        (
            {
                "prompt_tokens": 4111,
                "completion_tokens": 50,
                "prompt_tokens_details": {"cached_tokens": 3822, "cache_creation_tokens": 283},
                "cache_creation_input_tokens": 283,
                "cache_read_input_tokens": 3822,
            },
            Usage(4111, 3822, 283, 50),
        ),
        # LangChain's usage_metadata: input_tokens counts all, the cache in its details
        (
            {
                "input_tokens": 5000,
                "output_tokens": 20,
                "total_tokens": 5020,
                "input_token_details": {"cache_read": 4000, "cache_creation": 500},
            },
            Usage(5000, 4000, 500, 20),
        ),
        # and with nothing cached: all of it uncached, not none of it
        (
            {"prompt_tokens": 5000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            Usage(5000, 0, 0),
        ),
        ({"usageMetadata": {"promptTokenCount": 70, "cachedContentTokenCount": 20}}, Usage(70, 20)),
    ],
)
def test_usage_is_read_from_every_provider(usage: dict[str, Any], expected: Usage) -> None:
    assert read_usage(usage) == expected


def test_an_unreadable_usage_names_what_it_found() -> None:
    with pytest.raises(ctxwin.InputError, match=r"found keys \['tokens'\]"):
        read_usage({"tokens": 5})
    with pytest.raises(ctxwin.InputError, match="not object"):
        read_usage(object())


def test_overrides_share_what_stays_valid() -> None:
    pol = ctxwin.Policy(
        {"context_window": 4000, "tools": {"*": {"max_tokens": 50}}}, counter=FakeCounter()
    )
    bigger = pol.with_overrides(context_window=100_000, pricing="openai")
    assert bigger.config.context_window == 100_000
    assert bigger.compiled.tools == pol.compiled.tools
    assert bigger.counter is pol.counter or bigger.counter.inner is pol.counter.inner
    auto = pol.with_overrides(context_window="auto")
    body = {"model": "gpt-4o", "messages": grow(1)[:1]}
    assert auto.apply(body, format="openai-chat").report.context_window == 128_000
    with pytest.raises(ctxwin.PolicyError, match="unknown pricing preset 'cheap'"):
        pol.with_overrides(pricing="cheap")


def test_an_unknown_model_under_auto_is_said_in_the_report() -> None:
    pol = ctxwin.Policy({"context_window": "auto"}, counter=FakeCounter(), format="openai-chat")
    report = pol.apply(
        {"model": "my-local-llm", "messages": [{"role": "user", "content": "hi"}]}
    ).report
    assert report.context_window == 128_000
    assert any("has no profile" in n for n in report.notes)


def test_a_model_may_count_with_a_counter_of_its_own_called_once_per_text() -> None:
    calls: list[str] = []

    def count_tokens(text: str) -> int:  # a provider's count endpoint, say
        calls.append(text)
        return 2 * len(text.split())

    pol = ctxwin.Policy({}, counter=FakeCounter(), model_counters={"claude": count_tokens})
    body = {"model": "claude-sonnet-4-5", "system": "s", "messages": grow(3)}
    first = pol.apply(body).report
    n = len(calls)
    again = pol.apply(body).report
    assert len(calls) == n  # nothing counted twice
    other = pol.apply({**body, "model": "gpt-4o"}, format="anthropic").report
    assert first.tokens_before == again.tokens_before > other.tokens_before


def test_a_ratio_learned_on_one_conversation_reaches_a_shorter_one_the_policy_served() -> None:
    """The new ratio was placed from the longest history the policy had seen: after serving a
    121-message conversation, a 33-message one was still budgeted at 1.0 and its requests
    went over the provider's window (2,114 provider tokens of 2,000)."""
    cfg = {"context_window": 2000, "window": {"strategy": "threshold", "trigger": 0.9}}
    pol = ctxwin.Policy(cfg, counter=FakeCounter(), format="anthropic")
    model = "claude-sonnet-4-5"
    pol.apply({"model": model, "system": "s", "messages": grow(60)})  # another conversation
    b = agent_body(
        [[(f"b{r}", {"path": f"b{r}.py"}, " ".join(["v"] * 90))] for r in range(30)],
        format="anthropic",
    )["messages"]
    worst = 0.0
    for t in range(3, len(b) + 1, 2):
        result = pol.apply({"model": model, "system": "s", "messages": b[:t]})
        if t > 3:
            worst = max(worst, result.tokens * CLAUDE)
            assert result.report.calibration == pytest.approx(1.35)
            assert not result.report.over_budget
        pol.observe(result, reported(result))
    assert 1800 < worst <= 2000  # it came near the window, and fit


def test_the_report_gives_the_policys_window_under_calibration() -> None:
    """It gave round(int(2000 / 1.35) * 1.35): 1,999."""
    pol = ctxwin.Policy({"context_window": 2000}, counter=FakeCounter(), format="anthropic")
    body = {"model": "claude-sonnet-4-5", "system": "s", "messages": grow(3)}
    first = pol.apply(body)
    pol.observe(first, reported(first))
    body["messages"] = [*body["messages"], *grow(4)[-2:]]
    after = pol.apply(body)
    assert after.report.calibration == pytest.approx(1.35)
    assert after.report.context_window == 2000


TOOLS = [
    {"name": f"tool{i}", "description": "does a thing", "input_schema": {"type": "object"}}
    for i in range(3)
]


@pytest.mark.parametrize(
    ("choice", "prompt"),
    [(None, 346), ({"type": "auto"}, 346), ({"type": "none"}, 346), ({"type": "any"}, 313)],
)
def test_anthropics_tool_use_system_prompt_is_counted(choice: object, prompt: int) -> None:
    """Anthropic adds it to every request that offers tools ("Tool use pricing and
    tokens"); ctxwin left it out, and a small first request came out 35% over its count,
    which calibration learned as the tokenizer's gap (1.4 in force where 1.25 was due)."""
    pol = ctxwin.Policy({"context_window": 200_000}, counter=FakeCounter(), format="anthropic")
    body: dict[str, Any] = {"model": "claude-sonnet-4-5", "system": "s", "messages": grow(2)}
    bare = pol.apply(body).tokens
    offered = (
        {**body, "tools": TOOLS}
        if choice is None
        else {**body, "tools": TOOLS, "tool_choice": choice}
    )
    tools = pol.counter.count(json.dumps(TOOLS, separators=(",", ":")))
    assert pol.apply(offered).tokens == bare + tools + prompt
    assert pol.apply({**body, "tools": []}).tokens == bare + pol.counter.count("[]")  # no prompt


def test_small_first_requests_with_tools_do_not_inflate_the_ratio() -> None:
    pol = ctxwin.Policy({"context_window": 200_000}, counter=FakeCounter(), format="anthropic")
    system = "You are a careful coder. " * 400
    for _ in range(4):  # several users, one policy: each conversation starts small
        for rounds in (0, 20, 40):
            messages = grow(rounds)[: max(1, 2 * rounds + 1)]
            body = {"model": "claude-sonnet-4-5", "system": system, "tools": TOOLS}
            result = pol.apply({**body, "messages": messages})
            content = result.tokens - 346  # what Claude's tokenizer counts 20% more of
            usage = {"input_tokens": math.ceil(content * 1.2) + 346, "output_tokens": 1}
            pol.observe(result, usage)
    assert pol.calibration.of("claude-sonnet-4-5").ratio == pytest.approx(1.25)


def test_the_tool_use_prompt_is_counted_for_claude_models_only() -> None:
    """An OpenAI Chat body bound for Claude (LiteLLM) reaches Anthropic with its tools;
    the Anthropic format standing in for another provider's model (pydantic-ai) does not."""
    pol = ctxwin.Policy({"context_window": 200_000}, counter=FakeCounter())
    chat_tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    chat = {"messages": [{"role": "user", "content": "hi"}], "tools": chat_tools}

    def count(body: dict[str, Any], **kw: Any) -> int:
        return pol.apply(body, **kw).tokens

    gpt, claude = count({**chat, "model": "gpt-4o"}), count({**chat, "model": "claude-opus-4-5"})
    assert claude == gpt + 346
    forced = {**chat, "model": "openrouter/anthropic/claude-opus-4.5", "tool_choice": "required"}
    assert count(forced) == gpt + 313
    responses_tools = [{"type": "function", "name": "f", "parameters": {}}]
    responses = {"input": "hi", "tools": responses_tools, "model": "anthropic/claude-sonnet-4-5"}
    assert count(responses) == count({**responses, "model": "gpt-5"}) + 346  # LitellmModel
    anthropic = {"system": "s", "messages": grow(2), "tools": TOOLS}
    assert count(anthropic, format="anthropic", model="gemini-2.5-pro") + 346 == count(
        anthropic, format="anthropic"
    )


SIZES = [700, 1600, 200, 200, 700, 400, 400, 200, 200, 1100, 1600, 400, 400]


def _cleared_after_a_ratio_change(others: bool, copies: bool) -> list[list[str]]:
    """A conversation whose request 10 teaches a ratio of 1.5; ``others``: 8 other
    conversations go through the policy before request 13 (its fold leaves the memo);
    ``copies``: every request is a new copy of the history, as a proxy receives it."""
    cfg = {"context_window": 10_000, "window": {"strategy": "threshold", "keep_rounds": 2}}
    policy = ctxwin.Policy(cfg, counter=FakeCounter())
    rounds = [
        [("read", {"i": i}, " ".join(f"w{i}_{k}" for k in range(s)))] for i, s in enumerate(SIZES)
    ]
    messages = agent_body(rounds)["messages"]
    history, cleared = messages[:2], []
    for n in range(len(SIZES)):
        history += messages[2 + 2 * n : 4 + 2 * n]
        if n == 12 and others:
            for c in range(8):
                body = agent_body([[("read", {"c": c}, "x y z")]], task=f"task {c}")
                policy.apply(body, format="openai-chat", model="m")
        sent = copy.deepcopy(history) if copies else history
        result = policy.apply({"messages": sent}, format="openai-chat", model="m")
        cleared.append(sorted(e.call_id or "" for e in result.report.edits if e.step == "window"))
        if n == 9:
            usage = {"prompt_tokens": round(result.tokens * 1.5), "completion_tokens": 1}
            policy.observe(result, usage)
    return cleared


def test_a_ratio_change_decides_the_same_whatever_the_memo_holds() -> None:
    """The ratio applies from the messages a conversation brings after it was learned, also
    when its fold is made afresh: after 8 other conversations (the memo holds 8), call_10,
    cleared in request 12, came back whole in request 13 (review of 23c1b7e)."""
    kept = _cleared_after_a_ratio_change(others=False, copies=False)
    assert kept[12] == kept[11]  # decided before stays decided
    assert _cleared_after_a_ratio_change(others=True, copies=False) == kept
    assert _cleared_after_a_ratio_change(others=False, copies=True) == kept  # a proxy's


def test_a_conversation_starting_as_another_did_takes_the_ratio_in_force() -> None:
    """Conversations were told apart by their first two messages alone: one that started
    as a longer one had (the same task and first call) was budgeted at 1.0 up to that one's
    length and went over the provider's window (review of 73936b4)."""
    cfg = {"context_window": 2000, "window": {"strategy": "threshold", "trigger": 0.9}}
    pol = ctxwin.Policy(cfg, counter=FakeCounter(), format="anthropic")
    model = "claude-sonnet-4-5"
    a = grow(60)
    pol.apply({"model": model, "system": "s", "messages": a})
    rounds = [[(f"b{r}", {"path": f"b{r}.py"}, " ".join(["v"] * 90))] for r in range(30)]
    b = [*a[:3], *agent_body(rounds, format="anthropic")["messages"][3:]]  # a's first round
    worst = 0.0
    for t in range(3, len(b) + 1, 2):
        result = pol.apply({"model": model, "system": "s", "messages": copy.deepcopy(b[:t])})
        if t > 3:
            worst = max(worst, result.tokens * CLAUDE)
            assert result.report.calibration == pytest.approx(1.35)
        pol.observe(result, reported(result))
    assert 1800 < worst <= 2000


def test_many_conversations_starting_alike_each_keep_their_switches() -> None:
    """A pass@k eval: the same system prompt and task in many conversations. Eight were
    kept per start: the ninth pushed the first out, whose next request was then folded with
    the new ratio throughout (review of fa1ac51). An Anthropic system prompt given as text
    blocks tells starts apart too (only a string did)."""
    pol = ctxwin.Policy({}, counter=FakeCounter(), format="openai-chat")
    ratios = ConversationRatios()

    def conv(k: int, rounds: int) -> Any:
        calls = [[(f"t{k}", {"r": r, "k": k}, f"out {k} {r}")] for r in range(rounds)]
        body = agent_body(calls, format="openai-chat", system="An agent.", task="Fix the bug.")
        return pol.apply(body).conversation

    firsts = [conv(k, 1) for k in range(20)]
    for c in firsts:
        assert ratios.points("m", c, 1.0) == [(0, 1.0)]
    n = len(firsts[0].messages)
    for k in range(20):  # 1.35 learned since: each continues with 1.0 for what it had
        assert ratios.points("m", conv(k, 2), 1.35) == [(0, 1.0), (n, 1.35)]
    anthropic = ctxwin.Policy({}, counter=FakeCounter(), format="anthropic")
    starts = {
        ratios.fingerprint(
            anthropic.apply(
                {"system": [{"type": "text", "text": t}], "messages": grow(1)}
            ).conversation
        )
        for t in ("one system prompt", "another")
    }
    assert len(starts) == 2


def _ended(tag: str, last: dict[str, Any]) -> Any:
    """A conversation of an agent starting as every other does, its own results, and
    ``last`` after them."""
    calls = [[("read", {"r": r}, f"{tag} {r}")] for r in range(3)]
    body = agent_body(calls, format="openai-chat", system="An agent.", task="Fix the bug.")
    body["messages"].append(last)
    return ctxwin.parse(body, "openai-chat")


def shot(data: str) -> dict[str, Any]:
    """A screenshot as a browser agent sends it on OpenAI Chat: a user message of an image."""
    url = f"data:image/png;base64,{data}"
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}


def test_a_conversation_is_not_taken_for_another_by_its_last_message_alone() -> None:
    """Two runs of one task (one group of starts) ending with the user's "continue", or with
    a screenshot, at the same place: the second continued the first's switches (its own
    request folded with the first's ratios: over the provider's window, a cleared result
    back whole). The runs differ before it, which tells them apart now (review of
    198689f); and screenshots are told apart by their data (only their kind was read)."""
    for last_a, last_b in (
        ({"role": "user", "content": "continue"},) * 2,
        (shot("iVBORw0KGgoAAAAaaaa"), shot("iVBORw0KGgoAAAAbbbb")),
    ):
        ratios = ConversationRatios()
        a, b = _ended("a", last_a), _ended("b", last_b)
        assert ratios.fingerprint(a) == ratios.fingerprint(b)  # they start alike
        assert ratios.points("m", a, 1.0) == [(0, 1.0)]
        assert ratios.points("m", b, 1.35) == [(0, 1.35)]
    ratios = ConversationRatios()
    one, other = (ctxwin.parse({"messages": [shot(d)]}).messages[0] for d in ("AAAA", "BBBB"))
    assert ratios.digest(one) != ratios.digest(other)


def test_a_breakpoint_moved_off_an_image_leaves_it_the_same_message() -> None:
    """A browser agent's rolling breakpoint sits on its newest screenshot and moves on at
    the next request: the image digested with its ``cache_control`` made the conversation
    a new one once a ratio was learned, and the window decided it all again (review of
    2080348)."""
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    marked = {**image, "cache_control": {"type": "ephemeral"}}
    ratios = ConversationRatios()
    digests = {
        ratios.digest(ctxwin.parse({"messages": [{"role": "user", "content": [b]}]}).messages[0])
        for b in (image, marked)
    }
    assert len(digests) == 1
    chat = [{**shot("iVBO")["content"][0], "prompt_cache_breakpoint": {"type": "x"}}]
    bare = ctxwin.parse({"messages": [shot("iVBO")]}, "openai-chat").messages[0]
    kept = ctxwin.parse({"messages": [{"role": "user", "content": chat}]}, "openai-chat")
    assert ratios.digest(kept.messages[0]) == ratios.digest(bare)


def test_a_conversation_changing_its_tools_is_the_same_conversation() -> None:
    """The tools offered change mid-run (an MCP server's list refreshed, a tool enabled):
    the request was taken for a new conversation, folded with the new ratio throughout, and
    a result cleared in one request came back whole in the next (review of 198689f)."""
    ratios = ConversationRatios()
    tool = {"type": "function", "function": {"name": "read", "parameters": {}}}
    other = {"type": "function", "function": {"name": "write", "parameters": {}}}
    body = agent_body([[("read", {}, "x")]], format="openai-chat")
    starts = {
        ratios.fingerprint(ctxwin.parse({**body, "tools": tools}, "openai-chat"))
        for tools in ([tool], [tool, other], [other, tool])
    }
    assert len(starts) == 1


def test_clear_memo_forgets_the_counts_and_the_digests_of_messages() -> None:
    """``clear_memo`` says it forgets every memoized count: the counter's memo and the
    calibration's digests held each message's text (31 MB after 300 conversations of 100 kB
    each, review of 198689f)."""
    counted: list[str] = []

    def counter(text: str) -> int:
        counted.append(text)
        return len(text.split())

    class Held(dict):  # type: ignore[type-arg]  # a dict that can be watched going
        pass

    policy = ctxwin.Policy({}, counter=counter, format="openai-chat")
    message = Held(role="user", content="a long task " * 1000)
    policy.apply({"messages": [message]})
    seen = len(counted)
    policy.apply({"messages": [message]})
    assert len(counted) == seen  # memoized
    policy.clear_memo()
    policy.apply({"messages": [{"role": "user", "content": "a long task " * 1000}]})
    assert len(counted) > seen  # counted again
    watched = weakref.ref(message)
    del message
    gc.collect()
    assert watched() is None


def test_a_growing_conversation_digests_its_new_messages_only() -> None:
    """A request holds, at eight positions spread over it, the messages its conversation
    had there; spread as ``n * j // 8``, the positions moved with every round, so each
    request of a long history digested up to seven old messages again (hashing up to 8,000
    characters each). They now sit on multiples of a power of two and stay put while the
    history grows: each request digests its last message and the one last before (parsed
    again now that a message follows it), and now and then a position that moved on."""
    pol = ctxwin.Policy({}, counter=FakeCounter(), format="openai-chat")
    calls = [[("read", {"r": r}, f"out {r} " + "x" * 50)] for r in range(300)]
    messages = agent_body(calls, format="openai-chat", task="Fix the bug.")["messages"]
    digests = pol._ratios._digests
    new: list[int] = []
    for n in range(401, len(messages) + 1, 2):  # a round (a call and its result) at a time
        before = len(digests)
        pol.apply({"messages": messages[:n]})
        new.append(len(digests) - before)
    assert len(new) == 101
    assert sum(new[1:]) <= 250  # ~2 a request (the newest, the last before): 555 before
