"""pydantic-ai: a call id repair renames (an earlier turn's call has it: Anthropic refuses a
request whose ``tool_use`` ids repeat) reaches the model, on the call and its return alike.
The fix was reported while the model was sent the duplicate."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("httpx2")
pytest.importorskip("anthropic")
pytest.importorskip("openai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import ctxwin
from ctxwin.integrations.pydantic_ai import ContextWindow, process_history
from tests.integrations.pai_wire_kit import ANTHROPIC_REPLY, Capture, anthropic_model

POLICY = {"context_window": 200_000}


def ids(messages: list[ModelMessage], kind: type) -> list[str]:
    return [p.tool_call_id for m in messages for p in m.parts if isinstance(p, kind)]


def lookup_agent(model: Any, capability: Any) -> Agent:
    agent = Agent(model, capabilities=[capability], model_settings={"max_tokens": 1024})

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look a thing up."""
        return f"result for {q}"

    return agent


def test_a_call_id_reused_across_turns_reaches_the_model_renamed() -> None:
    """A backend that numbers its calls ``call_0`` every turn: the second turn's call and
    its return go to the model as ``call_0_2``, as the report says (they went as
    ``call_0`` twice)."""
    received: list[list[ModelMessage]] = []

    def backend(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(messages)
        calls = len(ids(messages, ToolCallPart))
        if calls < 2:
            call = ToolCallPart("lookup", {"q": f"x{calls}"}, tool_call_id="call_0")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("done")])

    capability = ContextWindow(ctxwin.Policy(POLICY))
    run = asyncio.run(lookup_agent(FunctionModel(backend), capability).run("go"))
    last = received[-1]
    assert ids(last, ToolCallPart) == ["call_0", "call_0_2"]
    assert ids(last, ToolReturnPart) == ["call_0", "call_0_2"]
    assert [f.code for f in capability.last_result.fixes] == ["renamed_duplicate_call_id"]
    assert ids(run.all_messages(), ToolCallPart) == ["call_0", "call_0"]  # the run's own


class _Turns(Capture):
    """Anthropic answering with a ``tool_use`` of id ``call_0`` ``calls`` times, then text."""

    def __init__(self, calls: int) -> None:
        super().__init__(ANTHROPIC_REPLY)
        self.calls = calls

    def __call__(self, request: Any) -> Any:
        if len(self.bodies) < self.calls:
            use = {"type": "tool_use", "id": "call_0", "name": "lookup", "input": {"q": "x"}}
            self.reply = {**ANTHROPIC_REPLY, "content": [use], "stop_reason": "tool_use"}
        else:
            self.reply = ANTHROPIC_REPLY
        return super().__call__(request)


def test_the_body_anthropic_model_sends_has_unique_tool_use_ids() -> None:
    """What Anthropic is sent: each ``tool_use`` id once, each ``tool_result`` answering its
    own call (it refuses "tool_use ids must be unique")."""
    capture = _Turns(calls=3)
    capability = ContextWindow(ctxwin.Policy(POLICY), observe=False)
    asyncio.run(lookup_agent(anthropic_model(capture), capability).run("go"))
    blocks = [
        b
        for m in capture.bodies[-1]["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    ]
    uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    assert uses == ["call_0", "call_0_2", "call_0_3"]
    assert results == uses


def _history(last_request: list[Any]) -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart("go")]),
        ModelResponse(parts=[ToolCallPart("lookup", {"q": "a"}, tool_call_id="call_0")]),
        ModelRequest(parts=[ToolReturnPart("lookup", "ra", tool_call_id="call_0")]),
        ModelResponse(parts=[ToolCallPart("lookup", {"q": "b"}, tool_call_id="call_0")]),
        ModelRequest(parts=last_request),
    ]


def processed(messages: list[ModelMessage]) -> tuple[list[ModelMessage], Any]:
    processor = process_history(ctxwin.Policy(POLICY))
    return asyncio.run(processor(messages)), processor.last_result


def test_a_renamed_return_keeps_its_id_where_repair_also_dropped_a_part() -> None:
    """The return's message also held an orphan return, which repair drops: the parts are
    matched to the blocks read from them, not by call id (the renamed return was lost, its
    call sent without it)."""
    orphan = ToolReturnPart("lookup", "orphan", tool_call_id="zzz")
    out, result = processed(_history([ToolReturnPart("lookup", "rb", "call_0"), orphan]))
    assert {f.code for f in result.fixes} == {"renamed_duplicate_call_id", "dropped_orphan_result"}
    assert ids(out, ToolCallPart) == ["call_0", "call_0_2"]
    assert ids(out, ToolReturnPart) == ["call_0", "call_0_2"]
    assert out[-1].parts[0].content == "rb"


def test_a_retry_prompt_for_a_renamed_call_gets_its_id_and_keeps_its_text() -> None:
    """A ``RetryPromptPart`` answering the renamed call (deprecated, in histories saved
    before) is renamed with it, its content left as it was (pydantic-ai writes the 'Fix the
    errors' line around it: not twice)."""
    with pytest.warns(UserWarning, match="RetryPromptPart. is deprecated"):
        retry = RetryPromptPart("q must be a string", tool_name="lookup", tool_call_id="call_0")
    out, _ = processed(_history([retry]))
    sent = out[-1].parts[0]
    assert isinstance(sent, RetryPromptPart)
    assert sent.tool_call_id == "call_0_2"
    assert sent.content == "q must be a string"
    assert ids(out, ToolCallPart) == ["call_0", "call_0_2"]


def test_a_renamed_call_keeps_its_arguments_as_pydantic_ai_holds_them() -> None:
    """Only the id of a call renamed and not otherwise edited changes (its ``args`` stay the
    dict pydantic-ai holds, not ctxwin's JSON text of them)."""
    out, _ = processed(_history([ToolReturnPart("lookup", "rb", "call_0")]))
    call = out[3].parts[0]
    assert call.tool_call_id == "call_0_2"
    assert call.args == {"q": "b"}
    assert json.loads(json.dumps(call.args_as_dict())) == {"q": "b"}


def test_the_history_with_renamed_ids_is_its_own_fixed_point() -> None:
    """``process_history`` persists its output: the next request, from the renamed history,
    edits nothing more and sends the same messages."""
    processor = process_history(ctxwin.Policy(POLICY))
    first = asyncio.run(processor(_history([ToolReturnPart("lookup", "rb", "call_0")])))
    again = asyncio.run(processor(first))
    assert again == first
    assert ids(again, ToolReturnPart) == ["call_0", "call_0_2"]
