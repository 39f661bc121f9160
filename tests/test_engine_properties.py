"""Properties of Policy.apply over generated conversations and generated policies.

For every format: the request checks clean, the input is unchanged, applying twice changes
nothing more, the latest round goes out untouched under a window-only policy, and two
consecutive requests share their prefix unless the window cleared or dropped something new.
"""

from __future__ import annotations

import copy
import importlib
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin import Policy
from ctxwin.replay import request_points
from ctxwin.steps.window import Window
from ctxwin.testing import FakeCounter
from tests.strategies import Script, scripts

FORMATS = ["openai_chat", "anthropic", "openai_responses", "gemini"]
SETTINGS = settings(
    max_examples=int(os.environ.get("CTXWIN_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def policies(draw: st.DrawFn, *, window_only: bool = False) -> dict[str, Any]:
    trigger = draw(st.integers(20, 120))
    config: dict[str, Any] = {
        "context_window": draw(st.integers(trigger + 1, 200)),
        "window": {
            "trigger": trigger,
            "target": draw(st.integers(5, trigger - 1)),
            "keep_rounds": draw(st.integers(1, 3)),
            "clear_tool_inputs": draw(st.booleans()),
            "clear_reasoning": draw(st.booleans()),
        },
        "overflow": "drop_oldest_rounds",
    }
    if not window_only and draw(st.booleans()):
        config["tools"] = {
            "*": {
                "max_tokens": draw(st.integers(24, 30)),
                "truncate": draw(st.sampled_from(["head", "tail", "head_tail"])),
            }
        }
    return config


def build(name: str, data: st.DataObject) -> tuple[Any, dict[str, Any]]:
    b = importlib.import_module(f"tests.formats.builders.{name}")
    reuse = not getattr(b, "UNIQUE_IDS", False)  # Anthropic refuses ids repeated across turns
    return b, b.build(data.draw(scripts(reuse_ids=reuse, max_turns=10)))


def new_policy(config: dict[str, Any], fmt: str) -> Policy:
    return Policy(config, counter=FakeCounter(), format=fmt)


@pytest.mark.parametrize("name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_requests_check_clean_and_inputs_are_untouched(name: str, data: st.DataObject) -> None:
    b, body = build(name, data)
    config = data.draw(policies())
    before = copy.deepcopy(body)
    result = new_policy(config, b.FORMAT).apply(body)
    assert body == before
    assert [p for p in ctxwin.check(result.request, format=b.FORMAT) if p.severity == "error"] == []
    again = new_policy(config, b.FORMAT).apply(result.request)
    assert again.request == result.request


@pytest.mark.parametrize("name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_the_latest_round_goes_out_untouched_under_a_window_only_policy(
    name: str, data: st.DataObject
) -> None:
    b, body = build(name, data)
    conv = ctxwin.parse(body, format=b.FORMAT)
    rounds = conv.pairing.rounds
    if not rounds:
        return
    last = rounds[-1]
    tail = [m.raw for m in conv.messages[last.start :]]
    result = new_policy(data.draw(policies(window_only=True)), b.FORMAT).apply(body)
    out = result.request[b.CONTAINER]
    assert out[len(out) - len(tail) :] == tail


def window_state(result: ctxwin.Result) -> list[tuple[str, str | None, int | None]]:
    return sorted(
        (e.step, e.call_id, e.message_index)
        for e in result.report.edits
        if e.step in ("window", "drop", "clear_input")
    )


@pytest.mark.parametrize("name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_consecutive_requests_share_their_prefix_until_something_new_is_cleared(
    name: str, data: st.DataObject
) -> None:
    b, body = build(name, data)
    config = data.draw(policies())
    pol = new_policy(config, b.FORMAT)
    items = body[b.CONTAINER]
    previous: tuple[list[Any], Any] | None = None
    for t in request_points(body, b.FORMAT):
        result = pol.apply({**body, b.CONTAINER: items[:t]})
        # the same as a fresh policy would say: no hidden state decides the output
        assert (
            result.request
            == new_policy(config, b.FORMAT).apply({**body, b.CONTAINER: items[:t]}).request
        )
        out = result.request[b.CONTAINER]
        if previous is not None:
            prev_out, prev_state = previous
            if window_state(result) == prev_state:
                assert out[: len(prev_out)] == prev_out
            else:
                assert set(prev_state) <= set(window_state(result))  # clearing only grows
        previous = (out, window_state(result))


def long_results(script: Script, data: st.DataObject) -> Script:
    """``script`` with each result's text repeated (1 to 40 times): results the policy caps."""
    for turn in script:
        turn.results = [
            (i, " ".join([text] * data.draw(st.integers(1, 40))), err)
            for i, text, err in turn.results
        ]
    return script


@pytest.mark.parametrize("name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_a_client_that_sends_back_the_output_gets_what_a_fresh_policy_gives(
    name: str, data: st.DataObject
) -> None:
    """A client that keeps ctxwin's output as its history (pydantic-ai's history
    processors, a loop that sends back ``result.request``): each request is the last
    output and the new messages. The policy resumes its parse, pairing, edits and window
    from where such a request parts from the last (the window from a checkpoint:
    ``window.MARKS``); what it returns is what a fresh policy returns for the same body."""
    b = importlib.import_module(f"tests.formats.builders.{name}")
    reuse = not getattr(b, "UNIQUE_IDS", False)
    script = scripts(reuse_ids=reuse, max_turns=data.draw(st.sampled_from([10, 24])))
    body = b.build(long_results(data.draw(script), data))
    config = data.draw(policies())
    if data.draw(st.booleans()):  # a window results seldom reach: it clears the newest
        scale = data.draw(st.integers(4, 12))
        config["window"]["trigger"] *= scale
        config["window"]["target"] *= scale
        config["context_window"] *= scale
    if data.draw(st.booleans()):
        config.setdefault("tools", {}).setdefault("*", {})["edit_latest"] = False
    if data.draw(st.booleans()):
        config["window"]["strategy"] = "threshold"
    if data.draw(st.booleans()):
        config["cache_breakpoints"] = "auto"
    pol = new_policy(config, b.FORMAT)
    if data.draw(st.booleans()):  # the window keeps checkpoints from the first request on
        for step in pol.steps:
            if isinstance(step, Window):
                step._marking = True
    items = body[b.CONTAINER]
    sent: list[Any] = []
    before = 0
    last: tuple[dict[str, Any], ctxwin.Result] | None = None
    for t in request_points(body, b.FORMAT):
        request = {**body, b.CONTAINER: [*sent, *items[before:t]]}
        kept = copy.deepcopy(request)
        result = pol.apply(request)
        assert request == kept  # the input is untouched
        fresh = new_policy(config, b.FORMAT).apply(kept)
        assert result.request == fresh.request
        assert result.report.edits == fresh.report.edits
        assert result.report.tokens_after == fresh.report.tokens_after
        if last is not None and data.draw(st.booleans()):  # the last request sent again
            again = pol.apply(last[0])
            assert again.request == last[1].request
            assert again.report.edits == last[1].report.edits
        last = (request, result)
        sent, before = list(result.request[b.CONTAINER]), t
