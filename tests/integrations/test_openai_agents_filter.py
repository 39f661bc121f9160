"""The OpenAI Agents SDK filter at steady state and on programmatic tool calling: what it
reads of a growing history at each model call, the tools it hands the policy, and a run
whose history holds a program's items (on the SDK's own ``agents.testing.ScriptedModel``)."""

from __future__ import annotations

import asyncio
import copy
import json
import os
from typing import Any

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool
from agents.run_config import CallModelData, ModelInputData
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import ctxwin
from ctxwin.formats.openai_responses import OpenAIResponsesAdapter
from ctxwin.integrations.openai_agents import input_filter
from ctxwin.tokens import _meter

PROGRAM = {"type": "program", "caller_id": "prog_1"}


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return path


def history(rounds: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "fix it"}]
    for n in range(rounds):
        args = json.dumps({"path": f"f{n}.py"})
        items += [
            {"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": args},
            {"type": "function_call_output", "call_id": f"c{n}", "output": f"x = {n}\n" * 20},
        ]
    return items


def call(filt: Any, agent: Agent[Any], items: list[dict[str, Any]]) -> ModelInputData:
    data = CallModelData(
        model_data=ModelInputData(input=list(items), instructions="Code."),
        agent=agent,
        context=None,
    )
    out: ModelInputData = asyncio.run(filt(data))
    return out


def test_each_call_reads_only_the_items_the_history_grew_by(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The filter read the whole history afresh at every model call, before the policy
    (which reads only what is new): 15 ms a call at 1,000 items, twenty times the apply."""
    agent = Agent(name="coder", tools=[read_file])
    filt = input_filter(ctxwin.Policy({}))
    items = history(200)
    call(filt, agent, items[:-2])
    read: list[int] = []
    parse = OpenAIResponsesAdapter.parse_message

    def counted(self: Any, raw: Any, index: int) -> Any:
        read.append(index)
        return parse(self, raw, index)

    monkeypatch.setattr(OpenAIResponsesAdapter, "parse_message", counted)
    out = call(filt, agent, items)
    assert sorted(set(read)) == [len(items) - 2, len(items) - 1]
    assert len(read) <= 4  # the filter's look and the policy's, at most
    assert len(out.input) == len(items)


def test_the_outputs_seen_before_keep_their_error_flags() -> None:
    """What the filter found of the outputs so far (the SDK's error text, a test of the
    user's) holds for the calls after, read once each."""
    asked: list[str] = []

    def is_error(call_id: str, text: str) -> bool:
        asked.append(call_id)
        return call_id == "c1"

    agent = Agent(name="coder", tools=[read_file])
    filt = input_filter(ctxwin.Policy({}), is_error=is_error)
    items = history(5)
    call(filt, agent, items[:-2])
    call(filt, agent, items)
    assert asked == ["c0", "c1", "c2", "c3", "c4"]
    assert filt.last_result is not None
    flagged = [
        r.result.call_id for r in filt.last_result.conversation.results() if r.result.is_error
    ]
    assert flagged == ["c1"]


def test_unchanged_tools_are_handed_over_as_the_list_the_policy_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tools were converted into a new list at each call, which the policy wrote out as
    JSON again to count it; the same tools are now the same list."""
    agent = Agent(name="coder", tools=[read_file])
    filt = input_filter(ctxwin.Policy({}))
    items = history(3)
    call(filt, agent, items[:-2])
    dumped: list[object] = []
    dump = _meter._envelope_json

    def counted(value: object) -> str:
        dumped.append(value)
        return dump(value)

    monkeypatch.setattr(_meter, "_envelope_json", counted)
    call(filt, agent, items)
    assert dumped == []
    agent.tools.append(function_tool(lambda path: path, name_override="write_file"))
    call(filt, agent, items)
    assert len(dumped) == 1  # a new tool: counted again


def _text(body: str, n: int) -> ResponseOutputMessage:
    part = ResponseOutputText(text=body, type="output_text", annotations=[])
    return ResponseOutputMessage(
        id=f"msg_{n}", content=[part], role="assistant", status="completed", type="message"
    )


def test_a_history_with_a_program_s_output_without_call_id_runs() -> None:
    """A history holding the output a program's call got without a ``call_id`` (the API
    types it optional) stopped the run: the filter raised FormatError."""
    from agents import ProgrammaticToolCallingTool
    from agents.testing import ScriptedModel

    @function_tool(allowed_callers=["programmatic"])
    def lookup(sku: str) -> str:
        """Units in stock."""
        return "1"

    items = [
        {"role": "user", "content": "sum the sales"},
        {"type": "program", "id": "pg_1", "call_id": "prog_1", "code": "x", "fingerprint": "f"},
        {"type": "function_call_output", "id": "fco_1", "output": "12", "caller": PROGRAM},
        {
            "type": "program_output",
            "id": "po_1",
            "call_id": "prog_1",
            "result": "12",
            "status": "completed",
        },
        {"role": "user", "content": "and last year?"},
    ]
    model = ScriptedModel([[_text("10", 2)]])
    agent = Agent(name="inv", model=model, tools=[ProgrammaticToolCallingTool(), lookup])
    config = RunConfig(call_model_input_filter=input_filter(ctxwin.Policy({})))
    result = asyncio.run(Runner.run(agent, items, run_config=config))
    assert result.final_output == "10"
    (sent,) = model.calls
    assert sent.input == items


def test_the_sdk_s_error_for_a_program_s_call_is_an_error() -> None:
    """A tool with an output schema that a program called gets the SDK's error text as a
    JSON object (``function_tool_error_output``): it was read as an ordinary output."""
    from agents.run_internal.items import function_tool_error_output

    from ctxwin.integrations.openai_agents import SDK_ERROR_TEXT

    fc = {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"}
    call_item = {**fc, "caller": PROGRAM}
    text = function_tool_error_output(call_item, SDK_ERROR_TEXT, output_json_schema={})
    items = [
        {"role": "user", "content": "sum"},
        {"type": "program", "id": "pg_1", "call_id": "prog_1", "code": "x", "fingerprint": "f"},
        call_item,
        {"type": "function_call_output", "call_id": "c1", "output": text, "caller": PROGRAM},
    ]
    filt = input_filter(ctxwin.Policy({}))
    call(filt, Agent(name="inv"), items)
    assert filt.last_result is not None
    (ref,) = filt.last_result.conversation.results()
    assert (ref.result.text, ref.result.is_error) == (text, True)


def test_a_run_whose_items_the_sdk_rebuilds_asks_is_error_once_per_output() -> None:
    """openai-agents 0.24 makes every input item a new dict at each turn: the filter and
    the policy read the whole history again at every call, ``is_error`` asked of every
    output each time (125,250 times for 500 outputs)."""
    from agents.testing import ScriptedModel

    turns = 30
    script = [[_call(n)] for n in range(turns)] + [[_text("done", turns)]]
    asked: list[str] = []
    filt = input_filter(ctxwin.Policy({}), is_error=lambda cid, _: asked.append(cid) is None)
    agent = Agent(name="coder", model=ScriptedModel(script), tools=[read_file])
    config = RunConfig(call_model_input_filter=filt)
    result = asyncio.run(Runner.run(agent, "fix it", run_config=config, max_turns=turns + 2))
    assert result.final_output == "done"
    assert sorted(asked) == sorted(f"c{n}" for n in range(turns))


def test_equal_items_the_sdk_rebuilt_reach_the_policy_as_the_earlier_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The policy is given the objects of the call before where the new items equal them
    (its memos know those), and the SDK gets back its own new items, unmodified."""
    agent = Agent(name="coder", tools=[read_file])
    policy = ctxwin.Policy({})
    filt = input_filter(policy)
    handed: list[list[Any]] = []
    aapply = policy.aapply

    async def recorded(body: Any, **kwargs: Any) -> Any:
        handed.append(list(body["input"]))
        return await aapply(body, **kwargs)

    monkeypatch.setattr(policy, "aapply", recorded)
    items = history(4)
    call(filt, agent, items[:-2])
    rebuilt = copy.deepcopy(items)
    out = call(filt, agent, rebuilt)
    seen = len(handed[0])
    assert all(a is b for a, b in zip(handed[1][:seen], handed[0], strict=True))
    assert all(a is b for a, b in zip(handed[1][seen:], rebuilt[seen:], strict=True))
    assert all(a is b for a, b in zip(out.input, rebuilt, strict=True))
    assert rebuilt == items


def _call(n: int) -> ResponseFunctionToolCall:
    args = json.dumps({"path": f"f{n}.py"})
    return ResponseFunctionToolCall(
        call_id=f"c{n}", name="read_file", arguments=args, type="function_call"
    )


def test_the_output_schema_the_sdk_sends_is_counted_once_per_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Agent(output_type=...)`` sends its schema as ``text.format`` on every call: it was
    never counted. It is built once per agent; the filter's output is unchanged."""
    import pydantic
    from agents.agent_output import AgentOutputSchema
    from agents.models.openai_responses import Converter

    class Invoice(pydantic.BaseModel):
        number: str = pydantic.Field(description="The invoice number, as printed on it")
        lines: list[str] = pydantic.Field(description="Each line of the invoice, in order")

    items = history(2)
    typed = Agent(name="coder", output_type=Invoice)
    filt = input_filter(ctxwin.Policy({}))
    out = call(filt, typed, items)
    assert out.input == items
    assert out.instructions == "Code."
    assert filt.last_result is not None
    with_schema = filt.last_result.tokens
    call(filt, Agent(name="coder"), items)
    text = Converter.get_response_format(AgentOutputSchema(Invoice))
    body = {"input": items, "instructions": "Code."}
    policy = ctxwin.Policy({})
    expected = policy.apply({**body, "text": text}, format="openai-responses").tokens
    expected -= policy.apply(body, format="openai-responses").tokens
    assert with_schema - filt.last_result.tokens == expected > 40
    dumped: list[object] = []
    dump = _meter._envelope_json
    monkeypatch.setattr(_meter, "_envelope_json", lambda v: dumped.append(v) or dump(v))
    call(filt, typed, items)
    assert dumped == []  # the same agent's schema: the value the policy counted before
