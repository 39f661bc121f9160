"""Async summarizers under a sync ``apply`` run on one event loop kept for the process: an
async client's pooled connections are bound to the loop that opened them, and a loop per
``apply`` (``asyncio.run``) broke every other summary ("Event loop is closed")."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openai
import pytest

import ctxwin.summarizers
from ctxwin import Policy, SummarizerError
from ctxwin.steps._loop import SummaryLoop, summary_loop
from ctxwin.testing import FakeCounter
from tests.steps.conftest import body_with_result, result_text

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {
    "tools": {"run_tests": {"summarize": {"over_tokens": 50, "max_tokens": 40, "timeout": 10}}}
}
GUARD = 60.0
"""How long a child process may take at all (far beyond anything it waits for)."""


def output(i: int) -> str:
    return f"run {i} " + "FAILED test_x " * 100


class LoopBound:
    """An async summarizer holding what an async client holds: state bound to the event
    loop of its first call (an ``httpx.AsyncClient``'s connection pool), unusable from
    any other loop."""

    def __init__(self) -> None:
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def __call__(self, text: str, **_: Any) -> str:
        loop = asyncio.get_running_loop()
        if self.loops and loop is not self.loops[0]:
            raise RuntimeError("bound to a different event loop")
        self.loops.append(loop)
        await asyncio.sleep(0)
        return "summary: 100 failed"


def test_an_async_client_bound_to_its_loop_serves_every_apply() -> None:
    client = LoopBound()
    pol = Policy(CONFIG, summarizer=client, counter=FakeCounter(), format="openai-chat")
    results = [pol.apply(body_with_result(output(i), "run_tests")) for i in range(4)]
    assert [e.fallback for r in results for e in r.report.edits] == [None] * 4
    assert len(client.loops) == 4


def test_policies_and_threads_share_the_one_loop() -> None:
    """The same client often serves two summarizers (two models) or two policies."""
    client = LoopBound()

    async def other_model(text: str, **kw: Any) -> str:
        return await client(text, **kw)

    policies = [
        Policy(CONFIG, summarizer=s, counter=FakeCounter(), format="openai-chat")
        for s in (client, other_model)
    ]
    results: list[ctxwin.Result] = []

    def work(i: int) -> None:
        results.append(policies[i % 2].apply(body_with_result(output(i), "run_tests")))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GUARD)
    assert [e.fallback for r in results for e in r.report.edits] == [None] * 4
    loops = [t for t in threading.enumerate() if t.name == "ctxwin-summarize-loop"]
    assert len(loops) == 1


def test_aapply_runs_an_async_summarizer_on_the_callers_loop() -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def summarizer(text: str, **_: Any) -> str:
        seen.append(asyncio.get_running_loop())
        return "summary: 100 failed"

    pol = Policy(CONFIG, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")

    async def main() -> asyncio.AbstractEventLoop:
        await pol.aapply(body_with_result(output(0), "run_tests"))
        return asyncio.get_running_loop()

    assert seen == [asyncio.run(main())]
    assert seen[0] is not summary_loop().loop


def test_a_stopped_loop_is_replaced() -> None:
    stopped = summary_loop()
    stopped.stop()
    pol = Policy(CONFIG, summarizer=LoopBound(), counter=FakeCounter(), format="openai-chat")
    (edit,) = pol.apply(body_with_result(output(0), "run_tests")).report.edits
    assert edit.fallback is None
    assert summary_loop() is not stopped
    assert stopped.loop.is_closed()


def test_a_loop_closed_under_apply_is_a_summarizer_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """It closes between the check and the call only while the interpreter exits."""

    def closed(*args: Any, **kw: Any) -> None:
        raise RuntimeError("Event loop is closed")

    monkeypatch.setattr(SummaryLoop, "submit", closed)
    pol = Policy(CONFIG, summarizer=LoopBound(), counter=FakeCounter(), format="openai-chat")
    with pytest.raises(SummarizerError) as raised:
        pol.apply(body_with_result(output(0), "run_tests"))
    assert str(raised.value) == (
        "no event loop to run the async summarizer on: Event loop is closed"
    )


def test_apply_from_a_summary_on_the_loop_raises_instead_of_waiting_for_itself() -> None:
    """A summarizer calling a sync ``apply`` with an async summarizer: no deadlock."""
    inner = Policy(CONFIG, summarizer=LoopBound(), counter=FakeCounter(), format="openai-chat")

    async def nested(text: str, **_: Any) -> str:
        return result_text(inner.apply(body_with_result(text, "run_tests")))

    pol = Policy(CONFIG, summarizer=nested, counter=FakeCounter(), format="openai-chat")
    (edit,) = pol.apply(body_with_result(output(0), "run_tests")).report.edits
    assert edit.fallback == (
        "summarizer_error: SummarizerError: the summarizer is async and an event loop is "
        "running: use `await policy.aapply(...)`"
    )


# ------------------------------------------------------------ a real client, for real


def chat_completion(content: str) -> bytes:
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "finish_reason": "stop", "message": message}
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
    return json.dumps({**body, "choices": [choice]}).encode()


class KeepAlive(BaseHTTPRequestHandler):
    """OpenAI's chat completions over HTTP/1.1 keep-alive: the client pools the connection."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        answer = chat_completion("12 tests failed")
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def local_openai() -> Iterator[openai.AsyncOpenAI]:
    """An ``AsyncOpenAI`` talking to a server on 127.0.0.1 (no network), closed after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), KeepAlive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=url, max_retries=0)
    try:
        yield client
    finally:
        asyncio.run_coroutine_threadsafe(client.close(), summary_loop().loop).result(GUARD)
        server.shutdown()
        server.server_close()


def test_an_async_openai_client_summarizes_under_every_apply(
    local_openai: openai.AsyncOpenAI,
) -> None:
    """Every other summary failed: "... is bound to a different event loop", then "Event
    loop is closed", each failure memoized."""
    summarizer = ctxwin.summarizers.openai(local_openai, model="gpt-4.1-mini")
    pol = Policy(CONFIG, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")
    results = [pol.apply(body_with_result(output(i), "run_tests")) for i in range(4)]
    assert [e.fallback for r in results for e in r.report.edits] == [None] * 4
    assert {result_text(r) for r in results} == {
        "[summary of run_tests output (202 tokens)]\n12 tests failed"
    }


# ------------------------------------------------------------ processes


def run_child(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter (ctxwin of this checkout), warnings as errors."""
    prelude = textwrap.dedent(
        """
        import asyncio, os, sys
        import ctxwin
        from ctxwin.testing import FakeCounter, agent_body

        def body(i):
            return agent_body([[("t", {}, f"run {i} " + "x " * 50)]])

        RULE = {"over_tokens": 50, "max_tokens": 24, "timeout": 0.2}
        CONFIG = {"tools": {"t": {"summarize": RULE}}}
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=GUARD,
        cwd=ROOT,
        env=env,
        check=False,
    )


def test_the_loop_winds_down_at_interpreter_exit() -> None:
    """An abandoned call still running at exit is cancelled and its cleanup runs."""
    child = run_child(
        """
        import threading

        swallowed = threading.Event()

        async def summarizer(text, **_):
            try:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:  # its deadline's: swallowed
                    swallowed.set()
                    await asyncio.sleep(3600)
            finally:
                print("cleaned up", flush=True)
            return "never"

        pol = ctxwin.Policy(CONFIG, summarizer=summarizer, counter=FakeCounter())
        print(pol.apply(body(0)).report.edits[0].fallback, flush=True)
        swallowed.wait(60)  # still running, abandoned, when the interpreter exits
        """
    )
    timed_out = "summarizer_timeout: no answer in 0.2s"  # logged as a warning: nothing else
    assert (child.returncode, child.stderr) == (
        0,
        f"ctxwin summarize t call_1 failed, capped instead for good: {timed_out}\n",
    )
    assert child.stdout == "summarizer_timeout: no answer in 0.2s\ncleaned up\n"


def test_a_forked_child_starts_a_loop_of_its_own() -> None:
    """The child has no copy of the loop's thread: its summaries would never start."""
    child = run_child(
        """
        async def summarizer(text, **_):
            return "summary: ok"

        pol = ctxwin.Policy(CONFIG, summarizer=summarizer, counter=FakeCounter())
        print("parent", pol.apply(body(0)).report.edits[0].fallback, flush=True)
        pid = os.fork()
        if pid == 0:
            print("child", pol.apply(body(1)).report.edits[0].fallback, flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        """
    )
    assert (child.returncode, child.stderr) == (0, "")
    assert child.stdout == "parent None\nchild None\n"
