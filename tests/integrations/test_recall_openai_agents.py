"""Recall in the OpenAI Agents SDK: ``recall_tool(policy)`` in ``Agent(tools=[...])``, and a
fake ``Model`` that finds a handle in a cleared output's placeholder gets the exact lines
back; an unknown handle is an error text and the run goes on."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
pytest.importorskip("agents")

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import ctxwin
from ctxwin.integrations.openai_agents import input_filter, recall_tool
from ctxwin.stores import MemoryStore
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


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return file_text(path)


def as_dict(item: Any) -> dict[str, Any]:
    return item if isinstance(item, dict) else item.model_dump(exclude_unset=True)


def calls_and_outputs(items: list[Any]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The function calls by call id, and the outputs by call id."""
    dicts = [as_dict(i) for i in items]
    calls = {d["call_id"]: d for d in dicts if d.get("type") == "function_call"}
    outs = {d["call_id"]: d["output"] for d in dicts if d.get("type") == "function_call_output"}
    return calls, outs


class RecallingModel(Model):
    """Follows the recall :class:`Plan` on the outputs it receives; records each input and
    the names of the tools it was offered."""

    def __init__(self) -> None:
        self.seen: list[list[Any]] = []
        self.tools: list[list[str]] = []
        self.plan = Plan()

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.seen.append(list(input))
        self.tools.append(sorted(t.name for t in kwargs["tools"]))
        n = len(self.seen)
        calls, outs = calls_and_outputs(list(input))
        names = {k: calls[k]["name"] for k in outs if k in calls}
        reads = [(k, v) for k, v in outs.items() if names.get(k) == "read_file"]
        call = self.plan.next(reads, sum(1 for k in outs if names.get(k) == "recall"))
        if call is None:
            text = ResponseOutputText(text=ANSWER, type="output_text", annotations=[])
            done = ResponseOutputMessage(
                id=f"msg_{n}", content=[text], role="assistant", status="completed", type="message"
            )
            return ModelResponse(output=[done], usage=Usage(), response_id=f"resp_{n}")
        item = ResponseFunctionToolCall(
            call_id=f"call_{n}", name=call[0], arguments=json.dumps(call[1]), type="function_call"
        )
        return ModelResponse(output=[item], usage=Usage(), response_id=f"resp_{n}")

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def run(policy: ctxwin.Policy, tools: list[Any]) -> tuple[RecallingModel, Any]:
    model = RecallingModel()
    agent = Agent(name="reader", instructions="Answer from the files.", model=model, tools=tools)
    config = RunConfig(call_model_input_filter=input_filter(policy), tracing_disabled=True)
    result = asyncio.run(
        Runner.run(agent, "what is setting 10 of m0?", run_config=config, max_turns=20)
    )
    return model, result


@pytest.fixture(scope="module")
def recall_run() -> tuple[RecallingModel, Any]:
    policy = make_policy()
    return run(policy, [read_file, recall_tool(policy)])


def recall_outputs(items: list[Any]) -> list[str]:
    calls, outs = calls_and_outputs(items)
    return [v for k, v in outs.items() if calls[k]["name"] == "recall"]


def test_the_agent_offers_the_recall_tool(recall_run: Any) -> None:
    model, _ = recall_run
    assert model.tools[0] == ["read_file", "recall"]


def test_recall_answers_the_exact_lines_of_the_cleared_output(recall_run: Any) -> None:
    model, result = recall_run
    items = result.to_input_list()
    ((handle, call_id),) = model.plan.recalled.items()
    calls, outs = calls_and_outputs(items)
    assert recall_outputs(items)[0] == lines_of(outs[call_id], 10, 20) == RECALLED
    asked = [json.loads(c["arguments"]) for c in calls.values() if c["name"] == "recall"]
    assert asked[0] == {"handle": handle, "lines": "10-20"}


def test_an_unknown_handle_is_an_error_text_and_the_run_goes_on(recall_run: Any) -> None:
    _, result = recall_run
    assert recall_outputs(result.to_input_list())[1] == UNKNOWN_TEXT
    assert result.final_output == ANSWER


def test_every_input_pairs_and_the_items_stay_whole(recall_run: Any) -> None:
    model, result = recall_run
    assert len(model.seen) >= 11  # eight reads, two recalls, the answer
    for items in model.seen:
        assert ctxwin.check({"input": items}, format="openai-responses") == []
    items = result.to_input_list()
    calls, outs = calls_and_outputs(items)
    reads = [v for k, v in outs.items() if calls[k]["name"] == "read_file"]
    assert reads == [file_text(path) for path in PATHS]


def test_without_the_tool_no_recall_happens() -> None:
    model, result = run(make_policy(recall=False), [read_file])
    assert model.tools[0] == ["read_file"]
    assert not model.plan.recalled
    assert recall_outputs(result.to_input_list()) == []


def test_the_tool_answers_bad_arguments_with_error_text() -> None:
    tool = recall_tool(make_policy())
    assert tool.params_json_schema["required"] == ["handle"]
    deep = '{"handle": "r-0000000000000000", "lines": ' + "[" * 100_000 + "]" * 100_000 + "}"
    for arguments in ('{"handle": "nope"}', "not json", '{"lines": "1-2"}', deep):
        text = asyncio.run(tool.on_invoke_tool(None, arguments))
        assert text.startswith("recall:"), arguments[:60]


def test_the_tool_looks_up_a_store_that_waits_on_io_off_the_event_loop() -> None:
    on_loop: list[bool] = []

    class Remote:
        url = "remote://"

        def __init__(self) -> None:
            self.inner = MemoryStore()

        def get(self, key: str) -> bytes | None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                on_loop.append(False)
            else:
                on_loop.append(True)
            return self.inner.get(key)

        def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
            self.inner.put(key, value, ttl=ttl)

        def close(self) -> None:
            pass

    policy = ctxwin.Policy(make_policy().compiled, store=Remote())
    handle = policy.shelf.keep(file_text("a.py"))
    assert handle is not None
    text = asyncio.run(recall_tool(policy).on_invoke_tool(None, json.dumps({"handle": handle})))
    assert text == file_text("a.py")
    assert on_loop == [False]
