"""Recall with LiteLLM: ``CtxwinHook(policy, add_recall_tool=True)`` in ``litellm.callbacks``
adds the ``recall`` tool to each request, the loop answers recall calls with
``policy.recall_result``, and a mock model that finds a handle in a cleared read's
placeholder gets the exact lines back."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
pytest.importorskip("litellm")

import litellm
import litellm.main

import ctxwin
from ctxwin.integrations.litellm import CtxwinHook
from tests.integrations.recall_kit import (
    ANSWER,
    PATHS,
    RECALLED,
    UNKNOWN_TEXT,
    Plan,
    file_text,
    lines_of,
    make_policy,
)

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

READ_FILE = {
    "type": "function",
    "function": {"name": "read_file", "description": "Read a file.", "parameters": {}},
}


def as_dict(message: Any) -> dict[str, Any]:
    return message if isinstance(message, dict) else message.model_dump()


def results(messages: list[Any]) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"] for m in map(as_dict, messages) if m.get("role") == "tool"
    }


def call_names(messages: list[Any]) -> dict[str, str]:
    return {
        c["id"]: c["function"]["name"]
        for m in map(as_dict, messages)
        for c in m.get("tool_calls") or ()
    }


class MockModel:
    """Spies on LiteLLM's mock completion and answers by the recall :class:`Plan`, from the
    messages it receives; records them and the tools each request carried."""

    def __init__(self) -> None:
        self.seen: list[list[Any]] = []
        self.tools: list[list[str]] = []
        self.plan = Plan()
        self._original = litellm.main.mock_completion

    def __call__(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        params = getattr(kwargs.get("logging"), "optional_params", {}) or {}
        self.tools.append(sorted(t["function"]["name"] for t in params.get("tools") or ()))
        names = call_names(messages)
        done = results(messages)
        reads = [(k, v) for k, v in done.items() if names.get(k) == "read_file"]
        call = self.plan.next(reads, sum(1 for k in done if names.get(k) == "recall"))
        if call is None:
            kwargs.update(mock_response=ANSWER, mock_tool_calls=None)
        else:
            n = len(self.seen)
            tool_call = {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": call[0], "arguments": json.dumps(call[1])},
            }
            kwargs.update(mock_response="", mock_tool_calls=[tool_call])
        return self._original(model, messages, *args, **kwargs)


async def agent(policy: ctxwin.Policy, history: list[Any]) -> None:
    """The loop: read files, answer recall calls with ``policy.recall_result``."""
    for _ in range(20):
        response = await litellm.acompletion(
            model="gpt-4o", messages=history, tools=[READ_FILE], mock_response="x"
        )
        message = response.choices[0].message
        history.append(message)
        if not message.tool_calls:
            return
        for call in message.tool_calls:
            if call.function.name == "recall":
                history.append(
                    policy.recall_result(call.id, call.function.arguments, "openai-chat")
                )
            else:
                path = json.loads(call.function.arguments)["path"]
                history.append(
                    {"role": "tool", "tool_call_id": call.id, "content": file_text(path)}
                )


def run(policy: ctxwin.Policy, monkeypatch: pytest.MonkeyPatch) -> tuple[MockModel, list[Any]]:
    model = MockModel()
    monkeypatch.setattr(litellm.main, "mock_completion", model)
    monkeypatch.setattr(litellm, "callbacks", [CtxwinHook(policy, add_recall_tool=True)])
    history: list[Any] = [{"role": "user", "content": "what is setting 10 of m0?"}]
    asyncio.run(agent(policy, history))
    return model, history


def test_the_hook_adds_the_tool_and_the_loop_recalls_the_exact_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, history = run(make_policy(), monkeypatch)
    assert all(tools == ["read_file", "recall"] for tools in model.tools)
    ((handle, call_id),) = model.plan.recalled.items()
    names, done = call_names(history), results(history)
    recalls = [v for k, v in done.items() if names[k] == "recall"]
    assert recalls == [lines_of(done[call_id], 10, 20), UNKNOWN_TEXT]
    assert recalls[0] == RECALLED
    assert as_dict(history[-1])["content"] == ANSWER
    asked = [json.loads(c.function.arguments) for m in history for c in _calls(m)]
    assert {"handle": handle, "lines": "10-20"} in asked
    # pairing valid in every request; the loop's history keeps every read whole
    assert len(model.seen) >= 11
    for messages in model.seen:
        assert ctxwin.check({"messages": messages}, format="openai-chat") == []
    reads = [v for k, v in done.items() if names[k] == "read_file"]
    assert reads == [file_text(p) for p in PATHS]


def _calls(message: Any) -> list[Any]:
    return list(getattr(message, "tool_calls", None) or ())


def test_recall_off_adds_no_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    model, _ = run(make_policy(recall=False), monkeypatch)
    assert all(tools == ["read_file"] for tools in model.tools)
    assert not model.plan.recalled


def test_a_request_with_the_tool_already_is_left_as_it_is() -> None:
    policy = make_policy()
    tools = [READ_FILE, policy.recall_tool("openai-chat")]
    data = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    out = CtxwinHook(policy, add_recall_tool=True).edit(data)
    assert out["tools"] is tools
    bare = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    added = CtxwinHook(policy, add_recall_tool=True).edit(bare)
    assert added["tools"] == [policy.recall_tool("openai-chat")]
    assert "tools" not in bare  # the data given is untouched
    assert "tools" not in CtxwinHook(policy).edit(bare)  # off by default


def test_a_tool_of_the_user_s_own_named_recall_is_refused() -> None:
    """The hook left the request as it was: the model's recall calls reached the user's
    tool, with no word."""
    policy = make_policy()
    theirs = {"type": "function", "function": {"name": "recall", "parameters": {}}}
    data = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ctxwin.InputError, match="named 'recall' of its own") as e:
        CtxwinHook(policy, add_recall_tool=True).edit({**data, "tools": [READ_FILE, theirs]})
    assert e.value.path == "tools"
    kept = CtxwinHook(policy).edit({**data, "tools": [theirs]})  # recall not added: theirs
    assert kept["tools"] == [theirs]
