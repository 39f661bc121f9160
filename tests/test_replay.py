"""ctxwin.replay: the figures a trace costs, unmanaged and under a policy."""

from __future__ import annotations

from typing import Any

import pytest

from ctxwin import InputError, Policy, PolicyError
from ctxwin._core.model import ToolResult
from ctxwin._core.pairing import Linker
from ctxwin._policy.tables import Pricing
from ctxwin.formats import Adapter
from ctxwin.replay import replay, request_points
from ctxwin.testing import FakeCounter, FakeSummarizer, agent_body
from ctxwin.tokens._meter import TokenMeter
from ctxwin.tune import tune

PRICE = {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0}


def chat(rounds: int) -> dict[str, Any]:
    """A user turn, then ``rounds`` rounds of one ``read`` with a 100-word result."""
    body = agent_body([[("read", {}, " ".join(["w"] * 100))] for _ in range(rounds)], task="go")
    body["messages"] = body["messages"][1:]  # no system prompt
    del body["model"]  # the prices' min_prefix alone: gpt-4o caches nothing under 1,024
    return body


def test_requests_are_sent_before_each_model_turn_and_at_the_end() -> None:
    assert request_points(chat(3)) == [1, 3, 5, 7]


def test_a_policy_that_never_acts_costs_exactly_the_unmanaged_history() -> None:
    result = replay(
        chat(5),
        Policy({"window": {"strategy": "threshold"}, "pricing": PRICE}, counter=FakeCounter()),
    )
    assert result.managed == result.unmanaged
    assert result.cost_ratio == 1.0
    assert result.counter == "fake-words"


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", None])
def test_a_claude_trace_with_tools_counts_the_tool_prompt_on_both_sides(model: str | None) -> None:
    """The managed requests counted Anthropic's tool-use prompt and the unmanaged ones did
    not: a trace the policy left as it was came out at 2.06x (review of 23c1b7e)."""
    body = agent_body([[("read", {}, "w " * 100)] for _ in range(4)], format="anthropic")
    body.update(model=model, tools=[{"name": "read", "input_schema": {"type": "object"}}])
    policy = Policy({"window": {"strategy": "threshold"}, "pricing": PRICE}, counter=FakeCounter())
    result = replay(body, policy)
    assert result.managed == result.unmanaged
    assert result.cost_ratio == 1.0
    bare = replay({k: v for k, v in body.items() if k != "tools"}, policy)
    assert result.unmanaged.peak > bare.unmanaged.peak + 346


def test_prefix_caching_is_counted() -> None:
    stats = replay(chat(5), Policy({"pricing": PRICE}, counter=FakeCounter())).unmanaged
    assert stats.requests == 6
    assert 0 < stats.cached_tokens < stats.input_tokens
    assert stats.effective_cost == 1.25 * stats.uncached_tokens + 0.1 * stats.cached_tokens


def test_a_responses_string_input_is_one_request() -> None:
    result = replay({"input": "hello there"}, None, format="openai-responses")
    assert (result.unmanaged.requests, result.managed.problems) == (1, 0)


def test_clearing_lowers_the_peak_and_the_cost_on_a_long_trace() -> None:
    pol = Policy({"context_window": 1000, "pricing": PRICE}, counter=FakeCounter())
    result = replay(chat(60), pol)
    assert result.peak_ratio < 0.2
    assert result.cost_ratio < 0.85  # the target for traces that outgrow the window
    assert result.managed.problems == 0


def test_the_optimum_is_no_dearer_than_the_policy_or_the_unmanaged_history() -> None:
    for pricing in ("anthropic", "openai", "openai-4o", "none"):
        pol = Policy({"context_window": 1000, "pricing": pricing}, counter=FakeCounter())
        result = replay(chat(60), pol, optimum=True)
        assert result.optimum is not None
        best = result.optimum.effective_cost
        assert best <= result.managed.effective_cost + 1e-9, pricing
        assert result.optimum.peak <= 1000
        # With room for the whole history, sending it unmanaged is one of the schedules.
        roomy = Policy({"context_window": 100_000, "pricing": pricing}, counter=FakeCounter())
        wide = replay(chat(60), roomy, optimum=True)
        assert wide.optimum is not None
        assert wide.optimum.effective_cost <= wide.unmanaged.effective_cost + 1e-9, pricing
        assert result.optimum_ratio is not None
        assert result.optimum_ratio >= 1.0


def test_the_optimum_of_a_short_trace_is_the_unmanaged_history() -> None:
    # Nothing ever needs clearing and every clearing re-writes a suffix: keep it all.
    result = replay(chat(4), Policy({"pricing": PRICE}, counter=FakeCounter()), optimum=True)
    assert result.optimum is not None
    assert result.optimum.effective_cost == result.unmanaged.effective_cost


def test_per_request_figures_add_up_to_the_totals() -> None:
    pol = Policy({"context_window": 1000}, counter=FakeCounter())
    result = replay(chat(30), pol, optimum=True)
    assert len(result.requests_detail) == result.managed.requests
    assert sum(f.managed[0] for f in result.requests_detail) == result.managed.input_tokens
    assert sum(f.managed[1] for f in result.requests_detail) == result.managed.cached_tokens
    assert result.optimum is not None
    assert sum(f.optimum[0] for f in result.requests_detail if f.optimum) == (
        result.optimum.input_tokens
    )
    assert any(f.jump for f in result.requests_detail)


def test_a_preset_name_prices_the_replay() -> None:
    pol = Policy({}, counter=FakeCounter())
    stats = replay(chat(5), pol, pricing="openai-4o").unmanaged
    assert (stats.write_price, stats.read_price) == (1.0, 0.5)
    assert stats.effective_cost == stats.uncached_tokens + 0.5 * stats.cached_tokens


def test_a_policy_priced_auto_decides_under_the_replays_pricing() -> None:
    """``pricing: auto`` means the model's preset: replayed under a preset, it decides by it;
    a policy with its own prices keeps them and is only priced by the replay's."""
    body = chat(40)
    window = {"context_window": 1000, "window": {"keep_rounds": 2}}
    auto = replay(body, Policy(window, counter=FakeCounter()), pricing="none")
    told = replay(body, Policy({**window, "pricing": "none"}, counter=FakeCounter()))
    kept = Policy({**window, "pricing": "anthropic"}, counter=FakeCounter())
    assert auto.managed == told.managed
    assert replay(body, kept, pricing="none").managed != told.managed


def test_a_misspelled_pricing_preset_is_a_policy_error_naming_the_presets() -> None:
    policy = Policy({}, counter=FakeCounter())
    with pytest.raises(PolicyError) as info:
        replay(chat(2), policy, pricing="antropic")
    assert info.value.key == "pricing"
    assert info.value.reason.startswith(
        "unknown pricing preset 'antropic' (expected one of: anthropic, anthropic-1h, openai,"
    )
    with pytest.raises(PolicyError, match="unknown pricing preset 'antropic'"):
        tune([("t", chat(2))], policy, pricing="antropic", holdout=0)


def test_a_path_where_the_policy_goes_says_to_load_it() -> None:
    for call in (lambda: replay(chat(2), "examples/policy"), lambda: tune([("t", chat(2))], "p")):
        with pytest.raises(
            PolicyError, match=r"takes a Policy \(ctxwin.load_policy\(...\)\), not str"
        ):
            call()  # type: ignore[no-untyped-call]


def test_a_policy_priced_auto_keeps_its_model_counters_and_calibration_under_a_pricing() -> None:
    """``pricing=`` rebuilds a ``pricing: auto`` policy to decide under it: it kept the
    policy's steps but dropped its ``model_counters`` and what it learned from usage, so the
    window decided as another policy's would."""
    body = agent_body([[("read", {}, " ".join(["w"] * 150))] for _ in range(14)])
    body = {**body, "model": "claude-x"}
    config = {"context_window": 3000, "overflow": "drop_oldest_rounds"}
    counted = Policy(
        config, counter=FakeCounter(), model_counters={"claude": lambda t: 3 * len(t.split())}
    )
    learned = Policy(config, counter=FakeCounter())
    elsewhere = {**agent_body([[("read", {}, "w w")]], task="another task"), "model": "claude-x"}
    sent = learned.apply(elsewhere)  # another conversation: this trace is new to the policy
    learned.observe(sent, {"input_tokens": 2 * sent.tokens})  # the provider counts twice
    plain = Policy(config, counter=FakeCounter())
    for policy in (counted, learned):
        own = replay(body, policy.with_overrides(pricing="openai"), pricing="openai")
        assert replay(body, policy, pricing="openai").managed == own.managed
        other = replay(body, plain, pricing="openai")
        assert (own.managed, own.context_window) != (other.managed, other.context_window)


def test_a_replay_counts_every_figure_with_the_counter_of_the_traces_model() -> None:
    """The unmanaged and managed requests were counted with the policy's base counter, the
    window's decisions and the optimum with the model's (``model_counters``): the last
    request was 4,899 tokens in the replay and 50,630 in apply's report, and the optimum
    came out at 6 times the policy it bounds (x optimum 0.168)."""
    body = agent_body([[("read", {}, " ".join(["w"] * 150))] for _ in range(14)])
    body = {**body, "model": "claude-x"}
    config = {"context_window": 200_000, "tools": {"*": {"max_tokens": 100}}}
    policy = Policy(config, counter=FakeCounter(), model_counters={"claude": lambda t: 3 * len(t)})
    result = replay(body, policy, optimum=True)
    last = policy.apply(body).report
    assert result.unmanaged.peak == last.tokens_before
    assert result.managed.peak == last.tokens_after
    assert result.counter == last.counter == "<lambda>"
    assert result.optimum_ratio is not None
    assert result.optimum_ratio >= 1.0 - 1e-9


def test_replays_under_a_pricing_leave_nothing_behind_in_the_users_policy() -> None:
    """``replay(pricing=)`` decides with a copy of the policy (``with_overrides``) that
    shares its caches: each copy took a counter of its own, so every replay left one more
    meter and block memo in the user's policy, never freed, and recounted everything."""
    body = agent_body([[("read", {}, " ".join(["w"] * 150))] for _ in range(14)])
    policy = Policy({"context_window": 3000}, counter=FakeCounter())
    assert policy.with_overrides(pricing="openai").counter is policy.counter
    replay(body, policy, pricing="openai")
    held = (len(policy._caches._meters), len(policy._caches._blocks))
    for _ in range(5):
        again = replay(body, policy, pricing="openai")
    assert (len(policy._caches._meters), len(policy._caches._blocks)) == held
    fresh = replay(body, Policy({"context_window": 3000}, counter=FakeCounter()), pricing="openai")
    assert again.managed == fresh.managed


@pytest.mark.parametrize("pricing", [None, "anthropic", "x"])
def test_the_replay_caches_no_prefix_shorter_than_the_models_minimum(pricing: str | None) -> None:
    """claude-haiku-4-5 caches no prompt under 4,096 tokens (models.yaml), though the
    ``anthropic`` preset says 1,024: the replay read 7,078 tokens from the cache on requests
    none of which reached 4,096, where the window itself (and the provider) cached none."""
    rounds = [[("read_file", {"path": f"f{i}.py"}, "word " * 300)] for i in range(8)]
    body = agent_body(rounds, format="anthropic")
    given = Pricing(cache_write=1.25, cache_read=0.1, min_prefix=0) if pricing == "x" else pricing
    policy = Policy({"context_window": "auto"})
    body["model"] = "claude-sonnet-4-5"
    assert replay(body, policy, pricing=given).unmanaged.cached_tokens > 0
    body["model"] = "claude-haiku-4-5"
    result = replay(body, policy, pricing=given, optimum=True)
    assert result.unmanaged.peak < 4096
    assert result.unmanaged.cached_tokens == 0
    assert result.managed.cached_tokens == 0
    assert result.optimum is not None
    assert result.optimum.cached_tokens == 0
    assert policy.pricing("claude-haiku-4-5").min_prefix == 4096


def test_the_optimum_of_a_policy_that_summarizes_summarizes_alike() -> None:
    """The optimum's family edited the results without the policy's summarizer (caps only),
    so a policy that summarizes came out at 0.115x its own lower bound. Its summaries are
    the ones the policy made: the summarizer is not asked again."""
    rules = {
        "context_window": 200_000,
        "tools": {"*": {"max_tokens": 3000, "summarize": {"over_tokens": 500, "max_tokens": 100}}},
    }
    texts = [f"f{i} " + " ".join(f"w{j}" for j in range(2500)) for i in range(12)]
    body = agent_body([[("read_file", {"path": f"f{i}.py"}, t)] for i, t in enumerate(texts)])
    summarizer = FakeSummarizer()
    result = replay(body, Policy(rules, summarizer=summarizer), optimum=True)
    assert result.optimum is not None
    assert result.managed.input_tokens < result.unmanaged.input_tokens / 20  # summarized
    assert result.optimum.effective_cost <= result.managed.effective_cost
    assert len(summarizer.calls) == 12


def _repaired_traces() -> dict[str, dict[str, Any]]:
    rounds = [[("bash", {"i": i}, f"out{i} " * 60)] for i in range(6)]
    orphan = agent_body(rounds)
    del orphan["messages"][4]  # the turn calling call_2: its result is an orphan
    twice = agent_body(rounds)
    twice["messages"].insert(4, dict(twice["messages"][3]))  # a result sent twice
    return {"orphan": orphan, "twice": twice, "missing": agent_body(rounds, missing=["call_2"])}


@pytest.mark.parametrize("case", ["orphan", "twice", "missing"])
def test_the_optimum_of_a_trace_repair_changes_lays_out_the_repaired_requests(case: str) -> None:
    """The optimum laid out the repaired whole trace but counted its requests on the raw
    one: an orphan or a duplicate result raised a bare IndexError, a missing one priced
    requests of 1,665 tokens at 90 (review of 457e978). Nothing may be cleared here (every
    round kept): the optimum's requests are the repaired ones the policy sends."""
    policy = Policy({"pricing": PRICE, "window": {"keep_rounds": 50}}, counter=FakeCounter())
    result = replay(_repaired_traces()[case], policy, optimum=True)
    assert result.optimum is not None
    sizes = [(f.managed[0], f.optimum[0] if f.optimum else None) for f in result.requests_detail]
    assert [m for m, _ in sizes] == [o for _, o in sizes]
    assert result.optimum_ratio == 1.0


def test_the_optimum_of_a_trace_whose_requests_repair_apart_is_an_input_error() -> None:
    """A result that comes after a user message: the request before it is repaired with a
    synthetic result, the whole trace with the result moved up. One layout cannot hold
    both: an InputError naming the trace, not a wrong optimum."""
    body = agent_body([[("bash", {"i": i}, f"out{i} " * 60)] for i in range(4)])
    msgs = body["messages"]
    late = msgs.pop(5)  # call_2's result
    msgs[5:5] = [{"role": "user", "content": "hurry"}, {"role": "assistant", "content": "ok"}, late]
    policy = Policy({"pricing": PRICE}, counter=FakeCounter())
    replay(body, policy)  # fine without the optimum
    said = r"^messages\[7\]: the optimum of late\.json cannot lay out its request 3 \(its first 6 "
    with pytest.raises(InputError, match=said):
        replay(body, policy, optimum=True, name="late.json")


def _parallel_round_first() -> dict[str, Any]:
    """Three parallel reads of 300 words in the first round, then three short rounds."""
    rounds = [[("read", {"p": i}, " ".join(["w"] * 300)) for i in range(3)]]
    return agent_body(rounds + [[("read", {}, " ".join(["v"] * 50))] for _ in range(3)])


@pytest.mark.parametrize("strategy", ["threshold", "cost"])
def test_a_replay_notes_a_window_that_cleared_part_of_a_round(strategy: str) -> None:
    """Under ``strategy: threshold`` the window clears results from the oldest until the
    request is under target, part of a round here, where the optimum's family clears whole
    rounds: its lower bound does not hold there (x optimum 0.830 on a history of review
    s50-10), and the replay says so. The cost window clears every eligible result: no note,
    nor without the optimum."""
    config = {
        "context_window": 2000,
        "window": {"strategy": strategy, "trigger": 900, "target": 700, "keep_rounds": 1},
        "pricing": PRICE,
    }
    policy = Policy(config, counter=FakeCounter())
    noted = replay(_parallel_round_first(), policy, optimum=True).notes
    assert noted == (
        (
            "the window cleared part of a round (request 3 on): the optimum's family clears"
            " whole rounds, so this policy may pay less than that optimum (x optimum below 1)",
        )
        if strategy == "threshold"
        else ()
    )
    assert replay(_parallel_round_first(), policy).notes == ()


def _chat_with_a_long_instruction() -> dict[str, object]:
    """Three rounds, the user's 600-word message, fifteen rounds (review of 457e978)."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Do it."},
    ]
    for k in range(18):
        if k == 3:
            messages.append({"role": "assistant", "content": "Done so far."})
            messages.append({"role": "user", "content": " ".join(f"u{i}" for i in range(600))})
        call = {"id": f"c{k}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        text = " ".join(f"r{k}_{i}" for i in range(300))
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": text})
    return {"messages": messages}


def test_a_chat_whose_window_keeps_a_user_message_through_drops_never_beats_the_optimum() -> None:
    """The window keeps the user's message through its drops, where the requests after
    the next drop read it from the cache with the system prompt and task: so may the
    optimum's family (before, it came out at 1.48 times what the policy paid)."""
    policy = Policy({"context_window": 3000, "pricing": "anthropic", "window": {"keep_rounds": 2}})
    result = replay(_chat_with_a_long_instruction(), policy, optimum=True, format="openai-chat")
    assert result.managed.peak <= 3000
    assert result.optimum_ratio is not None
    assert result.optimum_ratio >= 1.0 - 1e-9


def replay_work(
    monkeypatch: pytest.MonkeyPatch, owner: type, name: str, count: Any, window: int
) -> list[int]:
    """The work ``owner.name`` was given, as ``count(self, *args)`` measures it, replaying
    a trace of 20 rounds, then one of 80, each under a fresh policy."""
    done = 0
    method = getattr(owner, name)

    def counting(self: Any, *args: Any) -> Any:
        nonlocal done
        done += count(self, *args)
        return method(self, *args)

    monkeypatch.setattr(owner, name, counting)
    work = []
    for rounds in (20, 80):
        done = 0
        replay(
            chat(rounds),
            Policy({"context_window": window, "pricing": PRICE}, counter=FakeCounter()),
        )
        work.append(done)
    return work


@pytest.mark.parametrize("window", [100_000, 1000])
def test_a_replay_parses_each_message_a_few_times_not_at_every_request(
    monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """Every request parsed the whole history again (the unmanaged one, and the managed
    body to check it): a replay's work grew with the square of the trace, 115 us a
    message a request, minutes for a 1,000-round trace (review s48-4, finding 2)."""
    short, long = replay_work(monkeypatch, Adapter, "_parse_one", lambda self, *args: 1, window)
    assert long <= 5 * short  # 4x the trace, 4x the parses (quadratic: 16x)


@pytest.mark.parametrize("window", [100_000, 1000])
def test_a_replay_pairs_each_message_a_few_times_not_at_every_request(
    monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """Checking each request for what a provider rejects paired its whole history again,
    unmanaged and managed, and so did each request's report, built for a few of its
    figures: quadratic in the trace, as parsing was (review s48-4, finding 2)."""
    fed = lambda self, messages: len(messages) - len(self.messages)  # noqa: E731
    short, long = replay_work(monkeypatch, Linker, "feed", fed, window)
    assert long <= 5 * short  # 4x the trace, 4x the messages paired (quadratic: 16x)


def measured_result(self: Any, block: Any) -> int:
    return 1 if isinstance(block, ToolResult) else 0


@pytest.mark.parametrize("window", [100_000, 1000])
def test_a_replay_measures_each_result_a_few_times_not_at_every_request(
    monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """The per-tool figures of each request walked and measured every result of the whole
    request, as parsed and as sent: a replay's work grew with the square of the trace,
    a quarter to a half of a long trace's replay (review s49-5, finding 5)."""
    short, long = replay_work(monkeypatch, TokenMeter, "block", measured_result, window)
    assert long <= 5 * short  # 4x the trace, 4x the results measured (quadratic: 16x)


@pytest.mark.parametrize("window", [100_000, 1000])
def test_a_replay_reads_the_tokens_of_each_message_a_few_times_not_at_every_request(
    monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """Each side of the replay read the tokens of every message of every request again
    (the meter's per-message reads, then the prefix both requests share compared from the
    first message): quadratic in the trace (review s49-5, finding 5)."""
    short, long = replay_work(monkeypatch, TokenMeter, "message", lambda self, msg: 1, window)
    assert long <= 5 * short  # 4x the trace, 4x the messages read (quadratic: 16x)
