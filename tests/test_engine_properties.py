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
from ctxwin.testing import FakeCounter
from tests.strategies import scripts

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
