"""OpenAI Agents SDK runs as users make them, on a fake ``Model`` and a policy whose window
forces drops: handoffs, agents as tools, sessions, streaming, reasoning and hosted-tool
items. Every request the model gets must be a valid Responses input."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
pytest.importorskip("agents")

from agents import (
    Agent,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    SQLiteSession,
    Usage,
    function_tool,
    handoff,
)
from agents.extensions import handoff_filters
from agents.run_config import CallModelData, ModelInputData
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFileSearchToolCall,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_function_web_search import ActionSearch
from openai.types.responses.response_output_item import McpCall

import ctxwin
from ctxwin.integrations.openai_agents import input_filter

TIGHT = {
    "context_window": 3000,
    "window": {
        "strategy": "threshold",
        "trigger": 0.6,
        "target": 0.3,
        "keep_rounds": 1,
        "clear_reasoning": True,
    },
    "tools": {"*": {"max_tokens": 800}},
}
Script = Callable[[int], list[Any]]


def text(body: str, n: int) -> ResponseOutputMessage:
    part = ResponseOutputText(text=body, type="output_text", annotations=[])
    return ResponseOutputMessage(
        id=f"msg_{n}", content=[part], role="assistant", status="completed", type="message"
    )


def call(name: str, n: int, **args: Any) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        call_id=f"call_{n}", name=name, arguments=json.dumps(args), type="function_call"
    )


def reasoning(n: int) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id=f"rs_{n}", summary=[], type="reasoning", encrypted_content=f"enc{n}" * 50
    )


def hosted(n: int) -> list[Any]:
    search = ActionSearch(type="search", query="q")
    return [
        ResponseFunctionWebSearch(
            id=f"ws_{n}", status="completed", type="web_search_call", action=search
        ),
        ResponseFileSearchToolCall(
            id=f"fs_{n}", queries=["q"], status="completed", type="file_search_call"
        ),
        McpCall(
            id=f"mcp_{n}", arguments="{}", name="t", server_label="s", type="mcp_call", output="m "
        ),
    ]


class Fake(Model):
    """Answers from ``script(n)`` for the n-th call (from 1); records every request."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.seen: list[dict[str, Any]] = []

    def _answer(self, instructions: Any, input: Any, **state: Any) -> tuple[list[Any], str]:
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        self.seen.append({"input": list(items), "instructions": instructions, **state})
        return self.script(len(self.seen)), f"resp_{len(self.seen)}"

    async def get_response(  # type: ignore[override]
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        out, rid = self._answer(system_instructions, input, prev=kwargs.get("previous_response_id"))
        return ModelResponse(output=out, usage=Usage(), response_id=rid)

    async def stream_response(  # type: ignore[override]
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        out, rid = self._answer(system_instructions, input, prev=kwargs.get("previous_response_id"))
        response = Response(
            id=rid,
            created_at=0,
            model="fake",
            object="response",
            output=out,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return "\n".join(f"{path}:{i}: x = compute({i})" for i in range(300))


def assert_valid(model: Fake) -> None:
    for req in model.seen:
        assert req["input"]
        assert all(isinstance(item, dict) for item in req["input"])
        body = {"input": req["input"], "instructions": req["instructions"]}
        assert ctxwin.check(body, format="openai-responses") == []


def tool_rounds(n: int) -> list[Any]:
    """Every fifth call answers; the others read a file, with reasoning and hosted items."""
    if n % 5 == 0:
        return [text(f"done {n}", n)]
    extra = hosted(n) if n % 3 == 1 else []
    return [reasoning(n), *extra, call("read_file", n, path=f"f{n}.py")]


def coder(model: Fake) -> tuple[Agent[Any], RunConfig]:
    agent = Agent(name="coder", instructions="Code.", model=model, tools=[read_file])
    config = RunConfig(call_model_input_filter=input_filter(ctxwin.Policy(TIGHT)))
    return agent, config


def outputs(items: list[dict[str, Any]]) -> list[str]:
    return [i["output"] for i in items if i.get("type") == "function_call_output"]


@pytest.mark.parametrize("mode", ["run", "streamed"])
def test_session_runs_send_valid_requests_and_keep_the_session_whole(mode: str) -> None:
    model = Fake(tool_rounds)
    agent, config = coder(model)
    session = SQLiteSession(f"s-{mode}")
    for k in range(3):
        if mode == "streamed":

            async def go(k: int = k) -> None:
                run = Runner.run_streamed(agent, f"task {k}", run_config=config, session=session)
                async for _ in run.stream_events():
                    pass

            asyncio.run(go())
        else:
            asyncio.run(Runner.run(agent, f"task {k}", run_config=config, session=session))
    assert_valid(model)
    assert any(o.startswith("[read_file result cleared") for o in outputs(model.seen[-1]["input"]))
    stored = asyncio.run(session.get_items())
    kept = outputs(stored)  # type: ignore[arg-type]
    assert len(kept) == 12
    assert all(o.endswith("x = compute(299)") for o in kept)
    assert sum(i.get("type") == "reasoning" for i in stored) == 12  # type: ignore[union-attr]


@pytest.mark.parametrize("server", ["auto", "conversation"])
def test_server_state_runs_send_every_new_output(server: str) -> None:
    model = Fake(tool_rounds)
    agent, config = coder(model)
    state: dict[str, Any] = (
        {"auto_previous_response_id": True} if server == "auto" else {"conversation_id": "c1"}
    )
    for k in range(2):
        asyncio.run(Runner.run(agent, f"task {k}", run_config=config, **state))
    for n, req in enumerate(model.seen, start=1):
        if n % 5 != 1:
            assert [i["call_id"] for i in req["input"]] == [f"call_{n - 1}"]


def handoff_script(n: int) -> list[Any]:
    if n == 1:
        return [call("read_file", n, path="a")]
    if n == 2:
        return [call("helper", n, input="go")]
    if n in (3, 4):
        return [call("read_file", n, path="b")]
    if n == 5:
        return [text("helper done", n)]
    if n == 6:
        return [call("transfer_to_coder", n)]
    if n in (7, 8, 9):
        return [reasoning(n), call("read_file", n, path="d")]
    return [text("done", n)]


@pytest.mark.parametrize("how", ["plain", "nest", "remove_all_tools"])
def test_handoffs_and_agents_as_tools_send_valid_requests(how: str) -> None:
    model = Fake(handoff_script)
    helper = Agent(name="helper", instructions="Help.", model=model, tools=[read_file])
    target = Agent(name="coder", instructions="Code.", model=model, tools=[read_file])
    to_coder = handoff(target, input_filter=handoff_filters.remove_all_tools)
    main = Agent(
        name="main",
        instructions="Main.",
        model=model,
        tools=[read_file, helper.as_tool(tool_name="helper", tool_description="Helps.")],
        handoffs=[to_coder if how == "remove_all_tools" else target],
    )
    filt = input_filter(ctxwin.Policy(TIGHT))
    config = RunConfig(call_model_input_filter=filt, nest_handoff_history=how == "nest")
    user = [{"role": "user", "content": "start"}]
    result = asyncio.run(Runner.run(main, user, run_config=config))
    assert result.final_output == "done"
    assert user == [{"role": "user", "content": "start"}]
    assert len(model.seen) == 10
    assert_valid(model)
    for req in model.seen:  # the task reaches every request, nested in history or not
        first = req["input"][0]
        assert first.get("role") in ("user", "assistant")
        assert first.get("type", "message") == "message"
        assert "start" in json.dumps(first) or first == {"role": "user", "content": "go"}


def test_a_session_trimmed_between_a_call_and_its_output_sends_no_orphan() -> None:
    """A ``session_input_callback`` keeping the latest items cut a call from its output:
    the filter took the orphan output for one answering a call on the server and kept it,
    and OpenAI refused the request ("No tool call found for function call output")."""
    model = Fake(lambda n: [text("done", n)] if n % 3 == 0 else [call("read_file", n, path="a")])
    agent = Agent(name="coder", instructions="Code.", model=model, tools=[read_file])
    filt = input_filter(ctxwin.Policy({}))
    given: list[list[Any]] = []

    async def recorded(data: CallModelData[Any]) -> ModelInputData:
        given.append(list(data.model_data.input))
        out: ModelInputData = await filt(data)
        return out

    config = RunConfig(
        call_model_input_filter=recorded,
        session_input_callback=lambda history, new: history[-4:] + new,
    )
    session = SQLiteSession("trimmed")
    for task in ("first task", "second task"):
        asyncio.run(Runner.run(agent, task, run_config=config, session=session))
    assert given[3][0]["type"] == "function_call_output", "nothing cut: the test tests nothing"
    assert_valid(model)


def test_outputs_alone_are_still_taken_for_answers_to_calls_on_the_server() -> None:
    """An input of outputs only, as the SDK sends under ``previous_response_id``: kept."""
    filt = input_filter(ctxwin.Policy({}))
    only = [{"type": "function_call_output", "call_id": "call_1", "output": "x"}]
    data = CallModelData(
        model_data=ModelInputData(input=only, instructions=None),
        agent=Agent(name="a"),
        context=None,
    )
    assert asyncio.run(filt(data)).input == only
