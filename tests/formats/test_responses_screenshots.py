"""A computer call's output is its screenshot and nothing else: ctxwin counts it as the
image it sends (by its size), and a cleared one as the blank screenshot written in its
place, the same when it is about to write it and when it reads it back."""

from __future__ import annotations

import copy
from typing import Any

import ctxwin
from ctxwin import ToolResult
from ctxwin.formats.openai_responses import OpenAIResponsesAdapter
from ctxwin.testing import FakeCounter
from ctxwin.tokens._meter import TokenMeter
from tests.tokens.images import data_url, png

SHOT = data_url(png(1280, 800))
"""A screenshot: scaled to 1229 x 768, 6 tiles of 512 px: 85 + 6 x 170 = 1,105 tokens."""
SHOT_TOKENS = 1105
BLANK_TOKENS = 255
"""The blank 1x1 screenshot a cleared output is sent as: the base and one tile."""
PLACEHOLDER = "[computer result cleared]"


def computer_body(rounds: int, shot: str = SHOT) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "do it"}]
    for r in range(rounds):
        action = {"type": "click", "x": r, "y": 2, "button": "left"}
        items.append(
            {
                "type": "computer_call",
                "call_id": f"cc{r}",
                "status": "completed",
                "action": action,
                "pending_safety_checks": [],
            }
        )
        output = {"type": "computer_screenshot", "image_url": shot}
        items.append({"type": "computer_call_output", "call_id": f"cc{r}", "output": output})
    return {"model": "computer-use-preview", "input": items}


def meter() -> TokenMeter:
    return TokenMeter(FakeCounter(), OpenAIResponsesAdapter.overheads)


def first_result(conv: ctxwin.Conversation) -> tuple[int, ToolResult]:
    for k, msg in enumerate(conv.messages):
        if msg.tool_results:
            return k, msg.tool_results[0]
    raise AssertionError("no result")


def cleared_request(body: dict[str, Any]) -> tuple[ToolResult, object]:
    """The first screenshot cleared as the window clears it, and the request it renders."""
    conv = ctxwin.parse(body, format="openai-responses")
    k, res = first_result(conv)
    cleared = res.with_text(PLACEHOLDER, keep_opaque=False)
    messages = list(conv.messages)
    messages[k] = messages[k].with_blocks((cleared,))
    return cleared, ctxwin.render(conv.with_messages(tuple(messages)))


def tokens(body: object) -> int:
    """ctxwin's own count of a request as it is given."""
    policy = ctxwin.Policy({"context_window": 10**9}, counter=FakeCounter())
    return policy.apply(copy.deepcopy(body), format="openai-responses").report.tokens_before


# ------------------------------------------------------------------------------ the meter


def test_a_screenshot_counts_by_its_size() -> None:
    _, res = first_result(ctxwin.parse(computer_body(1), format="openai-responses"))
    assert meter().block(res) == SHOT_TOKENS


def test_a_cleared_screenshot_counts_as_the_blank_one_it_is_sent_as() -> None:
    """Its placeholder never reaches the model: the blank screenshot does, counted the same
    before ctxwin writes it and when it reads it back."""
    cleared, request = cleared_request(computer_body(2))
    _, sent = first_result(ctxwin.parse(request, format="openai-responses"))
    m = meter()
    assert m.block(cleared) == m.block(sent) == BLANK_TOKENS
    assert m.replaced(cleared, PLACEHOLDER) == BLANK_TOKENS


def test_a_text_beside_a_screenshot_is_not_counted() -> None:
    """An output written with its screenshot only (a text a step put beside it is not
    sent) counts as that screenshot."""
    conv = ctxwin.parse(computer_body(1), format="openai-responses")
    _, res = first_result(conv)
    assert meter().block(res.with_text("x " * 500)) == SHOT_TOKENS


def test_an_output_as_it_came_counts_as_it_came() -> None:
    """A text in a computer call's output (the API refuses it) is sent as it came while no
    step edits it: it counts as its text."""
    body = computer_body(1)
    body["input"][2]["output"] = "w " * 300
    _, res = first_result(ctxwin.parse(body, format="openai-responses"))
    m = meter()
    assert m.block(res) == m.count("w " * 300)


def test_a_function_output_replaced_counts_as_its_text() -> None:
    body = {
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "f1", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "f1", "output": "a b c " * 50},
        ]
    }
    _, res = first_result(ctxwin.parse(body, format="openai-responses"))
    m = meter()
    assert m.replaced(res, PLACEHOLDER) == m.count(PLACEHOLDER)


def test_an_interrupted_computer_call_counts_as_the_blank_screenshot_answering_it() -> None:
    body = computer_body(1)
    body["input"].append({"role": "user", "content": "stop, do something else"})
    body["input"].append({**body["input"][1], "call_id": "cc9"})  # no output: interrupted
    result = ctxwin.Policy({"context_window": 10**9}, counter=FakeCounter()).apply(body)
    assert [f.code for f in result.fixes] == ["added_missing_result"]
    assert result.tokens == tokens(result.request)
    sent = ctxwin.parse(result.request, format="openai-responses")
    (added,) = [r for m in sent.messages for r in m.tool_results if r.call_id == "cc9"]
    assert meter().block(added) == BLANK_TOKENS


# ------------------------------------------------------------------------------ the window
# (these need the window to weigh a cleared result by the meter: ctxwin/steps/_clearing.py,
# ``after = ctx.meter.replaced(result, text)``)


def window_policy() -> ctxwin.Policy:
    config = {"context_window": 6000, "window": {"keep_rounds": 1, "strategy": "threshold"}}
    return ctxwin.Policy(config, counter=FakeCounter())


def test_the_report_counts_the_request_it_returns() -> None:
    result = window_policy().apply(computer_body(8))
    assert any(e.step == "window" for e in result.report.edits)
    assert result.report.tokens_after == tokens(result.request)
    assert not result.report.over_budget


def test_a_policy_applied_to_its_own_output_makes_no_edit() -> None:
    """The blank screenshots it wrote are not cleared again (nor reported as saved)."""
    policy = window_policy()
    first = policy.apply(computer_body(8))
    again = policy.apply(copy.deepcopy(first.request))
    assert again.report.edits == ()
    assert again.request == first.request
    assert again.report.tokens_after == first.report.tokens_after
