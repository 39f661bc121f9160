"""summarize: the user's callback, memoized; every failure falls back to the cap."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import pytest

import ctxwin
from ctxwin import Policy, SummarizerError
from ctxwin.testing import AsyncFakeSummarizer, FakeCounter, FakeSummarizer
from tests.builders import asst, call, tool, user
from tests.steps.conftest import body_with_result, result_text

T = TypeVar("T")
How = Literal["apply", "aapply"]

LONG = " ".join(f"word{i}" for i in range(400))
CONFIG = {
    "tools": {
        "search": {
            "max_tokens": 100,
            "summarize": {
                "over_tokens": 200,
                "max_tokens": 50,
                "instructions": "Keep ids.",
                "timeout": 0.3,
            },
        }
    }
}


def run(
    summarizer: Any, content: str = LONG, config: dict[str, Any] = CONFIG
) -> tuple[ctxwin.Result, str]:
    pol = Policy(config, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")
    result = pol.apply(body_with_result(content, "search"))
    return result, result_text(result)


def test_long_results_are_summarized_with_the_policy_arguments() -> None:
    fake = FakeSummarizer()
    result, text = run(fake)
    (call,) = fake.calls
    assert (call.text, call.tool, call.call_id, call.max_tokens, call.instructions) == (
        LONG,
        "search",
        "c1",
        50,
        "Keep ids.",
    )
    assert text == "[summary of search output (400 tokens)]\nsummary: " + " ".join(
        LONG.split()[:25]
    )
    (edit,) = result.report.edits
    assert (edit.step, edit.tokens_before, edit.fallback) == ("summarize", 400, None)


def test_short_results_are_not_summarized() -> None:
    fake = FakeSummarizer()
    _, text = run(fake, content="only a few words")
    assert fake.calls == []
    assert text == "only a few words"


def test_summaries_are_memoized_by_content() -> None:
    fake = FakeSummarizer()
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    first = pol.apply(body_with_result(LONG, "search")).request
    again = pol.apply(body_with_result(LONG, "search")).request
    assert first == again
    assert len(fake.calls) == 1


def test_the_memo_holds_no_original_and_forgets_the_oldest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server's policy outlives its conversations: keyed by the text, the memo held every
    long original it ever summarized (7 MB after 300 conversations), and grew for good."""
    monkeypatch.setattr("ctxwin.steps._verdict.SUMMARY_ENTRIES", 8)
    fake = FakeSummarizer()
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    texts = [f"conversation{i} {LONG}" for i in range(20)]
    for text in texts:
        pol.apply(body_with_result(text, "search"))
    memo = pol._caches.summaries
    assert 0 < len(memo) <= 8
    assert not any(text in repr(key) for key in memo for text in texts)
    pol.apply(body_with_result(texts[-1], "search"))  # the newest are still remembered
    assert len(fake.calls) == 20


@pytest.mark.parametrize("how", ["apply", "aapply"])
def test_a_plain_function_returning_a_coroutine_is_told_to_be_async_def(
    how: How, recwarn: pytest.WarningsRecorder
) -> None:
    """Taken for a sync summarizer: the coroutine it returned was never awaited (a
    RuntimeWarning) and the fallback said only ``returned coroutine``."""

    async def summarize(text: str) -> str:
        return "summary"

    def plain(text: str, **kw: object) -> Any:
        return summarize(text)

    pol = Policy(CONFIG, summarizer=plain, counter=FakeCounter(), format="openai-chat")
    body = body_with_result(LONG, "search")
    result = pol.apply(body) if how == "apply" else asyncio.run(pol.aapply(body))
    (edit,) = result.report.edits
    assert edit.fallback == (
        "summarizer_bad_type: returned coroutine: define an async summarizer with async def "
        "(a function returning an awaitable is called as a sync one)"
    )
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


class Peak:
    """Counts the summarizer calls running at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = self.peak = self.calls = 0

    def enter(self) -> None:
        with self.lock:
            self.active += 1
            self.calls += 1
            self.peak = max(self.peak, self.active)

    def leave(self) -> None:
        with self.lock:
            self.active -= 1


def many_results(n: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [user("go")]
    for i in range(n):
        messages += [asst(call(f"c{i}", "search")), tool(f"c{i}", f"result{i} {LONG}")]
    return {"messages": [*messages, asst(content="done"), user("next")]}


def test_a_request_makes_at_most_parallel_calls_at_a_time() -> None:
    """A hundred long results made a hundred calls at once; a provider's rate limit failed
    most of them, each kept as a fallback for good."""
    limit = ctxwin.steps._summaries.PARALLEL_CALLS
    peak, together = Peak(), threading.Barrier(limit, timeout=20)

    def summarize(text: str, **kw: object) -> str:
        peak.enter()
        try:
            together.wait()  # returns once `limit` calls run at once
            return "short summary"
        finally:
            peak.leave()

    pol = Policy(CONFIG, summarizer=summarize, counter=FakeCounter(), format="openai-chat")
    result = pol.apply(many_results(4 * limit))
    assert (peak.calls, peak.peak) == (4 * limit, limit)
    assert [e.fallback for e in result.report.edits] == [None] * (4 * limit)


def test_an_async_summarizer_is_held_to_parallel_calls_too() -> None:
    limit = ctxwin.steps._summaries.PARALLEL_CALLS
    peak = Peak()

    async def summarize(text: str, **kw: object) -> str:
        peak.enter()
        try:
            for _ in range(3):  # every task started meanwhile runs to here
                await asyncio.sleep(0)
            return "short summary"
        finally:
            peak.leave()

    pol = Policy(CONFIG, summarizer=summarize, counter=FakeCounter(), format="openai-chat")
    result = asyncio.run(pol.aapply(many_results(3 * limit)))
    assert (peak.calls, peak.peak) == (3 * limit, limit)
    assert [e.fallback for e in result.report.edits] == [None] * (3 * limit)


def test_a_result_a_live_conversation_sends_keeps_its_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The memo forgot its oldest entries, hit or not: a fallback a live conversation kept
    sending (as a server gets it: fresh JSON, read afresh) was forgotten, and the result
    the model had read came back summarized."""
    monkeypatch.setattr("ctxwin.steps._verdict.SUMMARY_ENTRIES", 8)
    state = {"fail": True}

    def summarize(text: str, **kw: object) -> str:
        if state["fail"] and text.startswith("A"):
            raise ConnectionError("provider hiccup")
        return "a summary"

    pol = Policy(CONFIG, summarizer=summarize, counter=FakeCounter(), format="openai-chat")
    conv = [user("go"), asst(call("a1", "search")), tool("a1", f"A {LONG}")]
    first = result_text(pol.apply({"messages": conv}))
    state["fail"] = False
    for i in range(12):  # other conversations served meanwhile
        pol.apply(body_with_result(f"B{i} {LONG}", "search"))
        conv = [*conv, asst(content="ok"), user(f"turn {i}")]
        assert result_text(pol.apply({"messages": json.loads(json.dumps(conv))})) == first


def test_requests_settling_summaries_in_threads_share_the_memo_safely(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Summaries settle outside the policy's lock; the eviction raised KeyError or
    'dictionary changed size during iteration' in one of the threads."""
    monkeypatch.setattr("ctxwin.steps._verdict.SUMMARY_ENTRIES", 16)
    pol = Policy(CONFIG, summarizer=FakeSummarizer(), counter=FakeCounter(), format="openai-chat")
    errors: list[BaseException] = []

    def serve(worker: int) -> None:
        try:
            for i in range(40):
                pol.apply(body_with_result(f"w{worker} r{i} {LONG}", "search"))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=serve, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(pol._caches.summaries) <= 16


@pytest.mark.parametrize("how", ["apply", "aapply"])
def test_a_call_never_started_by_its_deadline_says_so(
    how: How, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ctxwin.steps._summaries.PARALLEL_CALLS", 2)
    never = threading.Event()

    def stuck(text: str, **kw: object) -> str:
        never.wait(5)
        return "late"

    async def astuck(text: str, **kw: object) -> str:
        await asyncio.sleep(5)
        return "late"

    rule = {"summarize": {"over_tokens": 200, "max_tokens": 50, "timeout": 0.3}}
    summarizer = stuck if how == "apply" else astuck
    pol = Policy({"tools": {"search": rule}}, summarizer=summarizer, counter=FakeCounter())
    body = many_results(5)
    result = pol.apply(body) if how == "apply" else asyncio.run(pol.aapply(body))
    never.set()
    fallbacks = sorted(str(e.fallback) for e in result.report.edits)
    assert fallbacks == [
        *["summarizer_timeout: no answer in 0.3s"] * 2,
        *["summarizer_timeout: not started in 0.3s (at most 2 calls at a time)"] * 3,
    ]


def test_without_a_summarizer_the_cap_applies() -> None:
    """As when the summarizer fails: the summarize step caps it, and its edit says why."""
    with pytest.warns(ctxwin.PolicyWarning, match="summarize rules of"):
        result, text = run(None)
    (edit,) = result.report.edits
    assert (edit.step, edit.fallback) == (
        "summarize",
        "summarizer_missing: none was passed to the policy",
    )
    assert len(text.split()) <= 100


@pytest.mark.parametrize(
    ("behaviour", "fallback"),
    [
        ("raise", "summarizer_error: RuntimeError: model unavailable"),
        ("hang", "summarizer_timeout: no answer in 0.3s"),
        ("empty", "summarizer_empty"),
        ("too_long", "summarizer_too_long: 800 > 50 tokens"),
        ("not_str", "summarizer_bad_type: returned NoneType"),
    ],
)
def test_a_failing_summarizer_falls_back_to_the_cap(behaviour: str, fallback: str) -> None:
    fake = FakeSummarizer(behaviour=behaviour, hang_for=3.0)  # type: ignore[arg-type]
    result, text = run(fake)
    (edit,) = result.report.edits
    assert (edit.step, edit.fallback) == ("summarize", fallback)
    assert len(text.split()) <= 100
    assert "tokens of search output truncated" in text
    assert [e.fallback for e in result.report.fallbacks] == [fallback]


def test_a_summary_too_long_is_said_with_separators() -> None:
    summarize = {"over_tokens": 2000, "max_tokens": 1000}
    config = {"tools": {"search": {"max_tokens": 2000, "summarize": summarize}}}
    content = " ".join(f"word{i}" for i in range(3000))
    result, _ = run(FakeSummarizer(behaviour="too_long"), content, config)
    (edit,) = result.report.edits
    assert edit.fallback == "summarizer_too_long: 6,000 > 1,000 tokens"


def triple(text: str) -> int:
    """A model's own counter (``model_counters``): three tokens a word."""
    return 3 * len(text.split())


TOO_LONG_FOR_CLAUDE = "summarizer_too_long: 78 > 50 tokens"
"""The fake's summary (26 words) by :func:`triple`, over 1.1 x its budget of 50."""


@pytest.mark.parametrize("how", ["apply", "aapply"])
def test_a_summary_is_judged_with_the_counter_of_the_model_that_asked(how: How) -> None:
    """It was judged with the policy's counter (26 tokens): 78 tokens of the model's own
    were sent for a budget of 50, where ``counter=triple`` refused them."""
    pol = Policy(
        CONFIG,
        summarizer=FakeSummarizer(),
        counter=FakeCounter(),
        model_counters={"claude": triple},
    )
    body = body_with_result(LONG, "search")
    if how == "apply":
        result = pol.apply(body, model="claude-x")
    else:
        result = asyncio.run(pol.aapply(body, model="claude-x"))
    assert [e.fallback for e in result.report.edits] == [TOO_LONG_FOR_CLAUDE]
    assert "tokens of search output truncated" in result_text(result)


@pytest.mark.parametrize("first", ["gpt-x", "claude-x"])
def test_a_memoized_summary_is_judged_again_with_each_models_counter(first: str) -> None:
    """The memo is the policy's: the verdict of the model that asked first was every
    model's. Each model has its own, from one summarizer call."""
    fake = FakeSummarizer()
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), model_counters={"claude": triple})
    body = body_with_result(LONG, "search")
    models = [first, *({"gpt-x", "claude-x"} - {first})]
    fallbacks = {m: [e.fallback for e in pol.apply(body, model=m).report.edits] for m in models}
    assert fallbacks == {"gpt-x": [None], "claude-x": [TOO_LONG_FOR_CLAUDE]}
    assert len(fake.calls) == 1


def test_a_failure_is_not_retried_for_the_same_content() -> None:
    fake = FakeSummarizer(behaviour="raise")
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    pol.apply(body_with_result(LONG, "search"))
    pol.apply(body_with_result(LONG, "search"))
    assert len(fake.calls) == 1


def test_errors_are_never_summarized() -> None:
    fake = FakeSummarizer()
    body = {
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": LONG},
        ]
    }
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter())
    pol.apply(body)
    assert len(fake.calls) == 1  # a Responses output carries no error flag: summarized
    gem = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "search", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "search", "response": {"error": LONG}}}],
            },
        ]
    }
    fake2 = FakeSummarizer()
    result = Policy(CONFIG, summarizer=fake2, counter=FakeCounter()).apply(gem)
    assert fake2.calls == []
    assert [e.step for e in result.report.edits] == ["cap"]


@pytest.mark.parametrize("max_tokens", [None, 150])
def test_an_error_is_capped_at_where_a_summary_would_start(max_tokens: int | None) -> None:
    """A tool with a summarize rule and no max_tokens sent its errors whole, however long;
    with max_tokens of its own, the cap step caps them there, as before."""
    rules: dict[str, Any] = {"summarize": {"over_tokens": 200, "max_tokens": 50}}
    if max_tokens is not None:
        rules["max_tokens"] = max_tokens
    fake = FakeSummarizer()
    pol = Policy({"tools": {"search": rules}}, summarizer=fake, counter=FakeCounter())
    result = pol.apply(body_with_result(LONG, "search"), errors=["c1"])
    assert fake.calls == []
    (edit,) = result.report.edits
    limit = max_tokens or 200
    assert (edit.step, edit.tokens_before, edit.fallback) == ("cap", 400, None)
    assert limit - 10 < edit.tokens_after <= limit
    assert "tokens of search output truncated" in result_text(result)
    again = pol.apply(result.request, errors=["c1"])  # its own output: nothing more to do
    assert again.request == result.request


def test_an_error_is_capped_no_lower_than_the_least_cap() -> None:
    """``over_tokens`` only has to be positive: at 10, the notice alone stood for a
    25-word traceback."""
    rules = {"summarize": {"over_tokens": 10, "max_tokens": 24}}
    pol = Policy({"tools": {"search": rules}}, summarizer=FakeSummarizer(), counter=FakeCounter())
    result = pol.apply(body_with_result(LONG, "search"), errors=["c1"])
    (edit,) = result.report.edits
    assert (edit.step, edit.tokens_before) == ("cap", 400)
    assert 14 < edit.tokens_after <= 24
    assert any(not word.startswith("[") for word in result_text(result).split()[:3])


def test_aapply_awaits_an_async_summarizer() -> None:
    fake = AsyncFakeSummarizer()
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    result = asyncio.run(pol.aapply(body_with_result(LONG, "search")))
    assert result_text(result).startswith("[summary of search output (400 tokens)]\nsummary: word0")
    assert len(fake.calls) == 1


def test_aapply_times_out_a_hanging_async_summarizer() -> None:
    fake = AsyncFakeSummarizer(behaviour="hang", hang_for=5.0)
    pol = Policy(CONFIG, summarizer=fake, counter=FakeCounter(), format="openai-chat")
    result = asyncio.run(pol.aapply(body_with_result(LONG, "search")))
    assert result.report.edits[0].fallback == "summarizer_timeout: no answer in 0.3s"


def test_apply_runs_an_async_summarizer_when_no_loop_is_running() -> None:
    fake = AsyncFakeSummarizer()
    _, text = run(fake)
    assert text.startswith("[summary of search output")


def test_apply_inside_a_running_loop_with_an_async_summarizer_says_to_use_aapply() -> None:
    pol = Policy(
        CONFIG, summarizer=AsyncFakeSummarizer(), counter=FakeCounter(), format="openai-chat"
    )

    async def inside() -> None:
        pol.apply(body_with_result(LONG, "search"))

    with pytest.raises(SummarizerError, match=r"use `await policy.aapply\(...\)`"):
        asyncio.run(inside())


# ------------------------------------------------------------------ bounded calls

GUARD = 30.0
"""How long a test waits for apply to return at all (far beyond any timeout used here)."""

TIMEOUT = "summarizer_timeout: no answer in 0.3s"

PATIENT = {
    "tools": {
        k: {**v, "summarize": {**v["summarize"], "timeout": GUARD}}
        for k, v in CONFIG["tools"].items()
    }
}
"""CONFIG with a timeout no loaded machine reaches: for a summarizer that answers at once
(0.3 s passed on a busy CI machine before a raising summarizer had run)."""


def returns(fn: Callable[[], T]) -> T:
    """``fn()``, failing the test if it has not returned within :data:`GUARD` seconds."""
    box: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            box.append((True, fn()))
        except BaseException as e:
            box.append((False, e))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(GUARD)
    assert not thread.is_alive(), f"apply did not return within {GUARD:g}s"
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def apply_with(
    how: How, summarizer: Any, body: dict[str, Any] | None = None, config: dict[str, Any] = CONFIG
) -> ctxwin.Result:
    """One ``apply`` (or ``asyncio.run(aapply)``) of a body, by default LONG as search output."""
    pol = Policy(config, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")
    body = body if body is not None else body_with_result(LONG, "search")
    if how == "apply":
        return pol.apply(body)
    return asyncio.run(pol.aapply(body))


def fallbacks(result: ctxwin.Result) -> list[str | None]:
    return [e.fallback for e in result.report.edits]


def fake(kind: str, behaviour: Any = "ok", **kw: Any) -> FakeSummarizer:
    return (FakeSummarizer if kind == "sync" else AsyncFakeSummarizer)(behaviour, **kw)


HOWS = pytest.mark.parametrize("how", ["apply", "aapply"])
KINDS = pytest.mark.parametrize("kind", ["sync", "async"])


@HOWS
def test_a_sync_summarizer_that_never_returns_is_abandoned(how: How) -> None:
    """Under aapply too: its thread is ctxwin's own, not the executor asyncio.run waits for."""
    slow = FakeSummarizer("block", hang_for=10 * GUARD)
    try:
        result = returns(lambda: apply_with(how, slow))
        assert (fallbacks(result), slow.answers) == ([TIMEOUT], [])
    finally:
        slow.release()


def test_an_async_summarizer_that_blocks_its_loop_is_abandoned_by_apply() -> None:
    """Under a sync apply it runs in a loop of its own, on a thread the caller stops waiting for."""
    slow = AsyncFakeSummarizer("block", hang_for=10 * GUARD)
    try:
        result = returns(lambda: apply_with("apply", slow))
        assert (fallbacks(result), slow.answers) == ([TIMEOUT], [])
    finally:
        slow.release()


def test_a_late_answer_from_an_async_summarizer_blocking_the_loop_is_refused() -> None:
    """Under aapply it blocks the caller's loop (Python cannot preempt it): it answers, too late."""
    slow = AsyncFakeSummarizer("block", hang_for=0.6)
    result = returns(lambda: apply_with("aapply", slow))
    assert fallbacks(result) == [TIMEOUT]
    assert len(slow.answers) == 1


@HOWS
def test_an_async_summarizer_that_swallows_its_cancellation_is_abandoned(how: How) -> None:
    """Cancelled at its deadline and not awaited: its answer, given later, is never used."""
    slow = AsyncFakeSummarizer("swallow_cancel", hang_for=1.0)
    result = returns(lambda: apply_with(how, slow))
    assert (fallbacks(result), slow.answers) == ([TIMEOUT], [])


@HOWS
@KINDS
@pytest.mark.parametrize(
    "error", [KeyboardInterrupt(), SystemExit(3), GeneratorExit()], ids=lambda e: type(e).__name__
)
def test_base_exceptions_reach_the_caller(how: How, kind: str, error: BaseException) -> None:
    """Raised again in the caller's thread (or task), never reported as a timeout."""
    with pytest.raises(type(error)) as raised:
        apply_with(how, fake(kind, "raise", error=error))
    assert raised.value is error


def test_an_interrupted_request_memoizes_nothing() -> None:
    summarizer = FakeSummarizer("raise", error=KeyboardInterrupt())
    pol = Policy(CONFIG, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")
    with pytest.raises(KeyboardInterrupt):
        pol.apply(body_with_result(LONG, "search"))
    summarizer.behaviour = "ok"
    assert fallbacks(pol.apply(body_with_result(LONG, "search"))) == [None]


@HOWS
@KINDS
def test_an_exception_falls_back_to_the_cap(how: How, kind: str) -> None:
    result = apply_with(how, fake(kind, "raise", error=ValueError("bad key")), config=PATIENT)
    assert fallbacks(result) == ["summarizer_error: ValueError: bad key"]


@HOWS
def test_a_cancelled_error_of_the_summarizers_own_falls_back(how: How) -> None:
    """asyncio's signal to the task running the callback, not to the caller of aapply."""
    error = asyncio.CancelledError("gave up")
    result = apply_with(how, fake("async", "raise", error=error), config=PATIENT)
    assert fallbacks(result) == ["summarizer_error: CancelledError: gave up"]


def test_cancelling_aapply_propagates_and_cancels_its_summaries() -> None:
    slow = AsyncFakeSummarizer("hang", hang_for=GUARD)
    pol = Policy(CONFIG, summarizer=slow, counter=FakeCounter(), format="openai-chat")

    async def main() -> set[asyncio.Task[Any]]:
        task = asyncio.create_task(pol.aapply(body_with_result(LONG, "search")))
        while not slow.calls:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(10):  # a few turns for the summary task to end
            await asyncio.sleep(0)
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    assert asyncio.run(main()) == set()
    assert slow.answers == []


def two_results() -> dict[str, Any]:
    return {
        "messages": [
            user("go"),
            asst(call("c1", "search"), call("c2", "slow")),
            tool("c1", LONG),
            tool("c2", LONG),
        ]
    }


TWO_TOOLS = {"tools": {"search": CONFIG["tools"]["search"], "slow": CONFIG["tools"]["search"]}}


@HOWS
def test_a_summary_that_never_comes_does_not_spoil_the_others(how: How) -> None:
    released = threading.Event()

    def summarizer(text: str, *, tool: str, **_: Any) -> str:
        if tool == "slow":
            released.wait(10 * GUARD)
        return "summary: ok"

    try:
        result = returns(lambda: apply_with(how, summarizer, two_results(), TWO_TOOLS))
    finally:
        released.set()
    assert {e.tool: e.fallback for e in result.report.edits} == {"search": None, "slow": TIMEOUT}


@HOWS
@KINDS
def test_the_summaries_of_one_request_run_at_once(how: How, kind: str) -> None:
    """Each of the two calls waits for the other to start: they only answer side by side."""
    config = {
        "tools": {
            k: {**v, "summarize": {**v["summarize"], "timeout": GUARD}}
            for k, v in TWO_TOOLS["tools"].items()
        }
    }
    barrier = threading.Barrier(2, timeout=GUARD)
    started: list[str] = []

    def sync_summarizer(text: str, *, tool: str, **_: Any) -> str:
        barrier.wait()
        return "summary: ok"

    async def async_summarizer(text: str, *, tool: str, **_: Any) -> str:
        started.append(tool)
        while len(started) < 2:
            await asyncio.sleep(0.01)
        return "summary: ok"

    summarizer = sync_summarizer if kind == "sync" else async_summarizer
    result = returns(lambda: apply_with(how, summarizer, two_results(), config))
    assert fallbacks(result) == [None, None]


WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


@HOWS
@KINDS
def test_the_summarizer_sees_the_callers_context_variables(how: How, kind: str) -> None:
    """As with asyncio.to_thread: a request id or a tracing span set by the caller is seen."""
    seen: list[str] = []

    def sync_summarizer(text: str, **_: Any) -> str:
        seen.append(WHO.get())
        return "summary: ok"

    async def async_summarizer(text: str, **_: Any) -> str:
        return sync_summarizer(text)

    summarizer = sync_summarizer if kind == "sync" else async_summarizer
    pol = Policy(CONFIG, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")

    async def in_a_loop() -> ctxwin.Result:
        WHO.set("caller")
        return await pol.aapply(body_with_result(LONG, "search"))

    if how == "apply":
        token = WHO.set("caller")
        try:
            pol.apply(body_with_result(LONG, "search"))
        finally:
            WHO.reset(token)
    else:
        asyncio.run(in_a_loop())
    assert seen == ["caller"]


def test_a_summary_with_a_lone_surrogate_falls_back_to_the_cap() -> None:
    """It counts (as tiktoken counts it), but no provider takes it: a bad summary."""

    def surrogate(text: str, **kw: Any) -> str:
        return "summary \udcff of it"

    result, text = run(surrogate)
    assert fallbacks(result) == ["summarizer_bad_text: surrogates not allowed at character 8"]
    assert "\udcff" not in text
    assert "tokens of search output truncated" in text


def test_a_result_of_few_characters_but_many_tokens_is_summarized() -> None:
    """Length is no bound on tokens: the result is counted against ``over_tokens``."""

    def utf8_bytes(text: str) -> int:
        return len(text.encode("utf-8"))

    fake = FakeSummarizer()
    pol = Policy(CONFIG, summarizer=fake, counter=utf8_bytes, format="openai-chat")
    content = "日本" * 50  # 100 characters, 300 bytes: over 200
    result = pol.apply(body_with_result(content, "search"))
    (called,) = fake.calls
    assert called.text == content
    assert [e.step for e in result.report.edits] == ["summarize"]


def test_apply_inside_a_running_loop_with_an_async_summarizer_says_to_await_aapply() -> None:
    """Its clients may be bound to the running loop, which a sync apply would block."""

    async def inside() -> None:
        run(AsyncFakeSummarizer())

    with pytest.raises(SummarizerError, match=r"use `await policy.aapply\(...\)`"):
        asyncio.run(inside())
