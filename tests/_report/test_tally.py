"""The per-tool figures a replay keeps from request to request (``ToolTally``) are those of
each request's report: for a history that grows, one the window clears or drops rounds of,
one that forks or is sent damaged (repaired), results before their calls."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.pairing import Linker
from ctxwin._report.build import tool_stats
from ctxwin._report.tally import ToolTally
from ctxwin._result import figures
from ctxwin.formats import get_adapter
from ctxwin.testing import FakeCounter, agent_body
from ctxwin.tokens._meter import TokenMeter
from tests.strategies import damage, scripts

FORMATS = ["openai_chat", "anthropic", "openai_responses", "gemini"]
POLICY = {
    "context_window": 400,
    "tools": {"*": {"max_tokens": 24}},
    "window": {"keep_rounds": 1, "clear_tool_inputs": True, "clear_reasoning": True},
    "overflow": "drop_oldest_rounds",
}


class Requests:
    """One policy's requests, with the per-tool figures counted as a replay counts them."""

    def __init__(self, fmt: str, server_state: bool | None = None) -> None:
        self.policy = ctxwin.load_policy(POLICY)
        self.fmt = fmt
        self.server_state = server_state
        self.links: PrefixCache[Linker] = PrefixCache()
        self.tally = ToolTally()
        self.sent = 0

    def send(self, body: object) -> None:
        """Apply the policy to ``body``: the tools counted are those of its report."""
        try:
            result = self.policy.apply(body, format=self.fmt, server_state=self.server_state)
        except ctxwin.InputError:
            return  # nothing to send once repaired
        got = figures(result, self.links, self.tally).tools
        assert got == result.report.tools
        self.sent += 1


def test_a_growing_history_the_window_clears_counts_as_each_report() -> None:
    body = agent_body(
        [[("read", {"p": i}, f"line {i} " * 30), ("grep", {}, "x " * i)] for i in range(40)]
    )
    requests = Requests("openai-chat")
    for t in range(2, len(body["messages"]) + 1):
        requests.send({**body, "messages": body["messages"][:t]})
    assert requests.sent == len(body["messages"]) - 1


def test_a_result_paired_forward_counts_for_the_tool_its_pairing_names_at_each_request() -> None:
    """An output standing before its call counts as ``?`` while no call answers it, for
    the call's tool once the call comes after it (pairing forward), as ``?`` again once a
    later output answers that call: a result the requests before counted is counted again
    when its pairing changed (the tally as given, without the repair a policy makes)."""
    adapter = get_adapter("openai-responses")
    meter = TokenMeter(FakeCounter(), adapter.overheads)
    out = {"type": "function_call_output", "call_id": "c0", "output": "o " * 9}
    items: list[object] = [
        {"role": "user", "content": "go"},
        out,
        {"type": "function_call", "call_id": "c0", "name": "run", "arguments": ""},
        {**out, "output": "again"},
        {"role": "assistant", "content": "done"},
    ]
    memo, prefix, tally = Memo(), PrefixCache(), ToolTally()
    tools = []
    for t in range(1, len(items) + 1):
        conv = adapter.parse({"input": items[:t]}, memo, prefix)
        total = meter.conversation(conv)
        got = tally.tools(conv, conv, conv, [], meter, total)
        assert got == tool_stats(conv, conv, conv, [], meter, total)
        tools.append({s.tool: s.tokens_before for s in got})
    assert tools[1:4] == [{"?": 9}, {"run": 9}, {"?": 9, "run": 1}]


def test_results_before_their_calls_count_as_each_report_once_repaired() -> None:
    """A policy repairs an output standing before its call (moves it): the request is
    counted whole, as its report counts it."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(6):
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "o " * 9})
        items.append({"type": "function_call", "call_id": f"c{i}", "name": "run", "arguments": ""})
        items.append({"role": "assistant", "content": f"step {i}"})
    requests = Requests("openai-responses", server_state=True)
    for t in range(1, len(items) + 1):
        requests.send({"input": items[:t]})
    assert requests.sent == len(items)


@pytest.mark.parametrize("name", FORMATS)
@settings(
    max_examples=int(os.environ.get("CTXWIN_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data(), server_state=st.sampled_from([None, True]))
def test_requests_that_grow_fork_and_come_damaged_count_as_each_report(
    name: str, data: st.DataObject, server_state: bool | None
) -> None:
    b = importlib.import_module(f"tests.formats.builders.{name}")
    body: dict[str, Any] = b.build(data.draw(scripts()))
    whole = body[b.CONTAINER]
    damaged, _ = data.draw(damage(whole, b.user))
    requests = Requests(b.FORMAT, server_state)
    for items in (damaged, whole, damaged[: len(damaged) // 2], whole):
        for t in range(1, len(items) + 1):
            requests.send({**body, b.CONTAINER: items[:t]})
