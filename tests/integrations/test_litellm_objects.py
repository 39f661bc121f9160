"""LiteLLM: ``Message`` objects (what ``response.choices[0].message`` is) in a history the
hook edits again and again. One changed in place between two requests is read as it is now,
as a fresh hook reads it; one unchanged goes out as the same dict each time."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
pytest.importorskip("litellm")

from litellm.types.utils import Message

import ctxwin
from ctxwin.integrations.litellm import CtxwinHook

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

POLICY = {
    "context_window": 4000,
    "tokenizer": "o200k_base",
    "window": {"strategy": "threshold", "trigger": 0.6, "target": 0.4, "keep_rounds": 2},
    "tools": {"*": {"max_tokens": 600}},
}


def history() -> list[Any]:
    out: list[Any] = [{"role": "user", "content": "fix it"}]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        out.append(Message(content=f"reading {i}", role="assistant", tool_calls=[call]))
        text = "\n".join(f"read#{i} line {k}: value_{k} = compute(order_{i})" for k in range(200))
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": text})
    return out


def sent(hook: Any, messages: list[Any]) -> tuple[str, int]:
    out = hook.edit({"model": "gpt-4o", "messages": messages})
    return json.dumps(out["messages"]), hook.last_result.report.tokens_before


def fresh(messages: list[Any]) -> tuple[str, int]:
    return sent(CtxwinHook(ctxwin.Policy(POLICY)), messages)


def changed_content(messages: list[Any]) -> None:
    messages[-2].content = "now a long thought: " + "because " * 2000


def changed_arguments(messages: list[Any]) -> None:
    messages[1].tool_calls[0].function.arguments = json.dumps({"path": "p" * 3000})


def changed_call_id(messages: list[Any]) -> None:
    messages[3].tool_calls[0].id = "elsewhere"  # its result is an orphan now


@pytest.mark.parametrize("change", [changed_content, changed_arguments, changed_call_id])
def test_a_message_object_changed_in_place_is_sent_as_a_fresh_hook_sends_it(change: Any) -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    messages = history()
    before = sent(hook, messages)
    change(messages)
    after = sent(hook, messages)
    assert after == fresh(messages)
    assert after != before


def test_an_unchanged_message_object_goes_out_as_the_same_dict() -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    messages = history()
    grown = [*messages, {"role": "user", "content": "go on"}]
    first = hook.edit({"model": "gpt-4o", "messages": messages})["messages"]
    again = hook.edit({"model": "gpt-4o", "messages": grown})["messages"]
    latest = [m for m in first if m.get("content") == "reading 5"]
    assert latest == [m for m in again if m.get("content") == "reading 5"]
    assert type(latest[0]) is dict
    assert latest[0] is next(m for m in again if m.get("content") == "reading 5")
