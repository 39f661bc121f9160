"""One summary loop for the process: a summarizer that blocks it (a sync call inside
``async def``) must not starve the calls of other threads, policies and summarizers.
A call the blocked loop has not started runs on a loop of its own where its summarizer
has run on the summary loop already; elsewhere it waits, and is reported as
``summarizer_loop_busy`` naming what held the loop, as is a call starved after it started."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

import ctxwin.summarizers
from ctxwin import Policy, Result
from ctxwin.steps._loop import summary_loop
from ctxwin.testing import FakeCounter
from tests.builders import asst, call, tool
from tests.steps.conftest import body_with_result, result_text
from tests.summarizers.test_event_loop import LoopBound, output
from tests.summarizers.test_event_loop import local_openai as local_openai  # a fixture

GUARD = 60.0
"""How long anything here may take at all (far beyond every timeout)."""
HOLDER = "tests.summarizers.test_loop_busy.Blocker summarizing run_tests (call c1)"
"""How the loop_busy fallbacks name the blocking call's task."""


def config(timeout: float) -> dict[str, Any]:
    rule = {"over_tokens": 50, "max_tokens": 40, "timeout": timeout}
    return {"tools": {"run_tests": {"summarize": rule}}}


def policy(summarizer: Any, timeout: float = 10) -> Policy:
    return Policy(
        config(timeout), summarizer=summarizer, counter=FakeCounter(), format="openai-chat"
    )


class Blocker:
    """An async summarizer calling a sync client: a text starting with "block" blocks the
    thread it runs on (the summary loop's) until :meth:`release`; others answer at once."""

    def __init__(self) -> None:
        self.blocking = threading.Event()
        self.released = threading.Event()
        self.calls: list[tuple[str, asyncio.AbstractEventLoop]] = []

    async def __call__(self, text: str, **_: Any) -> str:
        self.calls.append((text, asyncio.get_running_loop()))
        if text.startswith("block"):
            self.blocking.set()
            self.released.wait(GUARD)  # a sync call: the loop is held
        return "summary: 100 failed"

    def release(self) -> None:
        self.released.set()


def in_thread(fn: Callable[[], Result]) -> Callable[[], Result]:
    """Run ``fn`` on a thread now; the returned function joins it and gives its result."""
    box: list[Result] = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()

    def join() -> Result:
        thread.join(GUARD)
        assert box, "apply did not return"
        return box[0]

    return join


def settled() -> None:
    """Return once the summary loop has run everything queued on it before."""
    asyncio.run_coroutine_threadsafe(asyncio.sleep(0), summary_loop().loop).result(GUARD)


@contextlib.contextmanager
def loop_held() -> Iterator[Blocker]:
    """A blocker's call holding the summary loop; released and settled after the block."""
    blocker = Blocker()
    pol = policy(blocker, timeout=0.5)
    done = in_thread(lambda: pol.apply(body_with_result("block " + output(0), "run_tests")))
    try:
        assert blocker.blocking.wait(GUARD)
        yield blocker
    finally:
        blocker.release()
        done()
        settled()


@pytest.fixture
def blocked() -> Iterator[Blocker]:
    with loop_held() as blocker:
        yield blocker


def fallback(result: Result) -> str | None:
    (edit,) = result.report.edits
    return edit.fallback


def test_blocking_calls_of_other_threads_run_on_loops_of_their_own(blocked: Blocker) -> None:
    """They waited behind the blocked loop and timed out, memoized; each apply used to run
    its calls on a loop of its own. Each is made once: the loop, freed, does not make it again."""
    pol = policy(blocked, timeout=2)
    results = [pol.apply(body_with_result(output(i), "run_tests")) for i in (1, 2)]
    assert [fallback(r) for r in results] == [None, None]
    assert {result_text(r) for r in results} == {
        "[summary of run_tests output (202 tokens)]\nsummary: 100 failed"
    }
    blocked.release()
    settled()
    loops = [loop for text, loop in blocked.calls if not text.startswith("block")]
    assert len(loops) == 2
    assert summary_loop().loop not in loops


def test_a_summarizer_new_to_the_blocked_loop_waits_and_says_who_held_it(
    blocked: Blocker,
) -> None:
    """Started on a loop of its own, its client would be bound to that loop, closed after,
    and fail on the summary loop from then on: it waits, and is never made once too late."""
    newcomer = LoopBound()
    result = policy(newcomer, timeout=0.3).apply(body_with_result(output(1), "run_tests"))
    assert (
        fallback(result)
        == f"summarizer_loop_busy: not started in 0.3s, the summary loop held by {HOLDER}"
    )
    blocked.release()
    settled()
    assert newcomer.loops == []


def test_a_call_starved_after_it_started_says_who_held_the_loop() -> None:
    """The call holding the loop past its own deadline is a plain timeout."""
    started = threading.Event()

    async def slow(text: str, **_: Any) -> str:
        started.set()
        await asyncio.sleep(GUARD)  # well-behaved, but the loop is held meanwhile
        return "summary: 100 failed"

    blocker = Blocker()
    waiting = in_thread(
        lambda: policy(slow, timeout=1).apply(body_with_result(output(1), "run_tests"))
    )
    assert started.wait(GUARD)
    blocking = policy(blocker, timeout=0.1)
    done = in_thread(lambda: blocking.apply(body_with_result("block " + output(0), "run_tests")))
    try:
        assert fallback(waiting()) == (
            f"summarizer_loop_busy: no answer in 1s, the summary loop held by {HOLDER}"
        )
    finally:
        blocker.release()
        assert fallback(done()) == "summarizer_timeout: no answer in 0.1s"  # its own doing
        settled()


def test_a_call_its_own_loop_never_started_says_who_held_that_loop() -> None:
    """Three calls of one apply, each blocking its loop: the first holds the summary loop,
    the others move to a loop of their own, where the second holds it. The third said
    "not started in 0.5s (at most 32 calls at a time)": the limit had nothing to do with
    it. It names the call that held its loop, and is never made."""
    blocker = Blocker()
    msgs: list[dict[str, Any]] = body_with_result("block 0 " + output(0), "run_tests")["messages"]
    for i in (1, 2):
        msgs += [
            asst(call(f"c{i + 1}", "run_tests")),
            tool(f"c{i + 1}", f"block {i} " + output(i)),
        ]
    try:
        result = policy(blocker, timeout=0.5).apply({"messages": msgs})
    finally:
        blocker.release()
        for thread in threading.enumerate():  # the one-shot loop, done with the calls
            if thread.name == "ctxwin-summarize-own-loop":
                thread.join(GUARD)
        settled()
    own = " (on a loop of its own: the summary loop was busy)"
    assert [e.fallback for e in result.report.edits] == [
        "summarizer_timeout: no answer in 0.5s",
        "summarizer_timeout: no answer in 0.5s" + own,
        "summarizer_loop_busy: not started in 0.5s, the loop held by "
        + HOLDER.replace("(call c1)", "(call c2)")
        + own,
    ]
    assert [text.split(" ")[1] for text, _ in blocker.calls] == ["0", "1"]


def test_a_client_bound_to_the_summary_loop_fails_on_its_own_and_says_where() -> None:
    """It has run on the summary loop, so its state is bound there: it fails elsewhere, and
    keeps working on the summary loop once it is free."""
    client = LoopBound()
    pol = policy(client)
    assert fallback(pol.apply(body_with_result(output(1), "run_tests"))) is None
    with loop_held():
        result = pol.apply(body_with_result(output(2), "run_tests"))
    assert fallback(result) == (
        "summarizer_error: RuntimeError: bound to a different event loop "
        "(on a loop of its own: the summary loop was busy)"
    )
    assert fallback(pol.apply(body_with_result(output(3), "run_tests"))) is None


def test_a_ready_async_summarizer_waits_for_the_summary_loop(
    local_openai: openai.AsyncOpenAI,
) -> None:
    """Its client is bound to the summary loop: on another it could only fail."""
    summarizer = ctxwin.summarizers.openai(local_openai, model="gpt-4.1-mini")
    pol = policy(summarizer, timeout=1)
    assert fallback(pol.apply(body_with_result(output(1), "run_tests"))) is None
    with loop_held():
        result = pol.apply(body_with_result(output(2), "run_tests"))
    assert fallback(result) == (
        f"summarizer_loop_busy: not started in 1s, the summary loop held by {HOLDER}"
    )
    assert fallback(pol.apply(body_with_result(output(3), "run_tests"))) is None
