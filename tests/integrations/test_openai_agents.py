"""OpenAI Agents SDK: an offline agent on a fake ``Model`` with ten tool turns of large
results, with the whole history sent and with ``auto_previous_response_id=True``."""

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
from agents.run_config import CallModelData, ModelInputData
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import ctxwin
from ctxwin.integrations.openai_agents import SDK_ERROR_TEXT, input_filter

POLICY = {
    "context_window": 16_000,
    "window": {"strategy": "threshold", "trigger": 0.6, "target": 0.3, "keep_rounds": 2},
    "tools": {
        "search": {"select": "hits[].{path: path, line: line}", "max_tokens": 2000},
        "*": {"max_tokens": 1500},
    },
}
PLAN: list[list[tuple[str, dict[str, Any]]]] = [
    [("search", {"query": "alpha"})],
    [("read_file", {"path": "a.py"})],
    [("search", {"query": "beta"}), ("read_file", {"path": "b.py"})],
    [("broken", {})],
    [("read_file", {"path": "c.py"})],
    [("search", {"query": "gamma"}), ("search", {"query": "delta"})],
    [("read_file", {"path": "d.py"})],
    [("search", {"query": "epsilon"})],
    [("read_file", {"path": "e.py"})],
    [("search", {"query": "zeta"})],
]
USER = {
    "role": "user",
    "content": [
        {"type": "input_text", "text": "Fix the login bug; here is the mockup."},
        {"type": "input_image", "image_url": "https://x.test/m.png", "detail": "auto"},
    ],
}


def big_search(query: str) -> str:
    hits = [
        {"path": f"src/{query}/{i}.py", "line": i, "snippet": f"def {query}_{i}(x): " * 12}
        for i in range(120)
    ]
    return json.dumps({"query": query, "hits": hits})


def big_file(path: str) -> str:
    return "\n".join(f"{path}:{i}: value_{i} = compute(alpha, beta, gamma)" for i in range(1100))


@function_tool
def search(query: str) -> str:
    """Search the code."""
    return big_search(query)


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return big_file(path)


@function_tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("the disk is on fire")


class ScriptedModel(Model):
    """Follows PLAN, one response per call; records what each call received."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[Any], str | None]] = []
        self.turn = 0

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.seen.append((list(input), kwargs.get("previous_response_id")))
        n = len(self.seen)
        if self.turn == len(PLAN):
            text = ResponseOutputText(text="done", type="output_text", annotations=[])
            done = ResponseOutputMessage(
                id=f"msg_{n}", content=[text], role="assistant", status="completed", type="message"
            )
            return ModelResponse(output=[done], usage=Usage(), response_id=f"resp_{n}")
        calls = [
            ResponseFunctionToolCall(
                call_id=f"call_{n}_{k}", name=name, arguments=json.dumps(args), type="function_call"
            )
            for k, (name, args) in enumerate(PLAN[self.turn])
        ]
        self.turn += 1
        return ModelResponse(output=calls, usage=Usage(), response_id=f"resp_{n}")

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def outputs(items: list[Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def run(**kwargs: Any) -> tuple[ScriptedModel, Any, Any]:
    model = ScriptedModel()
    agent = Agent(
        name="coder", instructions="You fix code.", model=model, tools=[search, read_file, broken]
    )
    filt = input_filter(ctxwin.Policy(POLICY))
    config = RunConfig(call_model_input_filter=filt, tracing_disabled=True)
    result = asyncio.run(Runner.run(agent, [USER], run_config=config, max_turns=20, **kwargs))
    return model, filt, result


@pytest.fixture(scope="module")
def whole_run() -> tuple[ScriptedModel, Any, Any]:
    return run()


def test_the_model_receives_the_edited_input(whole_run: tuple[ScriptedModel, Any, Any]) -> None:
    model, filt, _ = whole_run
    assert len(model.seen) == len(PLAN) + 1
    last = outputs(model.seen[-1][0])
    assert any(v.startswith("[search result cleared") for v in last.values())
    selected = capped = 0
    for items, _ in model.seen:
        for output in outputs(items).values():
            if output.startswith("[{"):
                assert set(json.loads(output)[0]) == {"path", "line"}
                selected += 1
            elif "compute(alpha" in output:
                assert len(output) < len(big_file("a.py")) / 3
                capped += 1
    assert selected
    assert capped
    assert filt.last_result.tokens < POLICY["context_window"]


def test_the_runs_items_keep_every_output_whole(whole_run: tuple[ScriptedModel, Any, Any]) -> None:
    _, _, result = whole_run
    kept = outputs(result.to_input_list())
    assert len(kept) == 12
    assert sum(v == big_file(v.split(":")[0]) for v in kept.values()) == 5
    assert sum(v.startswith('{"query"') for v in kept.values()) == 6


def test_pairing_ids_errors_and_images_are_kept(whole_run: tuple[ScriptedModel, Any, Any]) -> None:
    model, filt, result = whole_run
    for items, _ in model.seen:
        assert ctxwin.check({"input": items}, format="openai-responses") == []
    last = model.seen[-1][0]
    assert set(outputs(last)) == set(outputs(result.to_input_list()))
    assert last[0] is not None
    assert last[0]["content"][1]["image_url"] == "https://x.test/m.png"
    failed = [k for k, v in outputs(last).items() if v == SDK_ERROR_TEXT]
    assert len(failed) == 1
    report_errors = [
        b
        for m in filt.last_result.conversation.messages
        for b in m.blocks
        if isinstance(b, ctxwin.ToolResult) and b.is_error
    ]
    assert [b.call_id for b in report_errors] == failed


def test_unchanged_items_are_the_sdks_objects(whole_run: tuple[ScriptedModel, Any, Any]) -> None:
    model, filt, _ = whole_run
    kept = [c for c in filt.last_result.edit_map.messages if c.change == "kept"]
    edited = [c for c in filt.last_result.edit_map.messages if c.change == "edited"]
    assert kept
    assert edited
    last = model.seen[-1][0]
    for change in edited:
        item = last[change.index]
        assert set(item) >= {"call_id", "output", "type"}


def test_at_most_one_prefix_break_per_window_jump(
    whole_run: tuple[ScriptedModel, Any, Any],
) -> None:
    model, _, _ = whole_run
    breaks = jumps = 0
    cleared: set[str] = set()
    for (prev, _), (cur, _) in zip(model.seen, model.seen[1:], strict=False):
        if cur[: len(prev)] != prev:
            breaks += 1
        now = {k for k, v in outputs(cur).items() if "cleared" in v}
        if now - cleared:
            jumps += 1
        cleared = now
    assert jumps >= 1
    assert breaks <= jumps


def test_with_auto_previous_response_id_the_new_outputs_are_kept() -> None:
    model, filt, _ = run(auto_previous_response_id=True)
    later = model.seen[1:]
    assert all(prev is not None for _, prev in later)
    for items, _ in later[:-1]:
        assert items
        assert outputs(items)  # the outputs of the calls on the server went out
        assert all(i.get("type") == "function_call_output" for i in items)
    assert filt.last_result.conversation.server_state


def test_an_input_left_with_nothing_raises_instead_of_going_out_empty() -> None:
    agent = Agent(name="a", model=ScriptedModel())
    only_outputs = [{"type": "function_call_output", "call_id": "call_1", "output": "x"}]
    strict = input_filter(ctxwin.Policy(POLICY), server_state=False)
    for filt, items in ((strict, only_outputs), (input_filter(ctxwin.Policy(POLICY)), [])):
        data = CallModelData(
            model_data=ModelInputData(input=items, instructions=None), agent=agent, context=None
        )
        with pytest.raises(ctxwin.InputError):
            asyncio.run(filt(data))


def test_an_error_test_flags_outputs_the_sdk_cannot() -> None:
    agent = Agent(name="a", model=ScriptedModel())
    items = [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "t", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ERROR: nope"},
    ]
    filt = input_filter(ctxwin.Policy(POLICY), is_error=lambda _id, text: text.startswith("ERROR"))
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions=None), agent=agent, context=None
    )
    out = asyncio.run(filt(data))
    assert out.input[2] is items[2]
    flags = [b.is_error for b in filt.last_result.conversation.messages[2].blocks]
    assert flags == [True]


def test_the_sdks_usage_is_read_with_its_cache() -> None:
    """The Agents SDK's ``Usage`` (a dataclass holding the OpenAI SDK's details object) and
    the ``ModelResponse`` carrying it are read with their cached tokens; the details were
    once skipped and the cache read as none."""
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    usage = Usage(
        requests=1,
        input_tokens=5000,
        input_tokens_details=InputTokensDetails(cached_tokens=4000, cache_write_tokens=0),
        output_tokens=20,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        total_tokens=5020,
    )
    expected = ctxwin.Usage(5000, 4000, 0, 20)
    assert ctxwin.read_usage(usage) == expected
    response = ModelResponse(output=[], usage=usage, response_id=None)
    assert ctxwin.read_usage(response) == expected


def test_handoffs_and_hosted_tools_are_counted_as_the_sdk_sends_them() -> None:
    """The ``transfer_to_*`` function of a handoff and a hosted tool are in the request the
    model gets, so the budget counts them (only function tools were counted)."""
    from agents import WebSearchTool, handoff
    from agents.models.openai_responses import Converter

    coder = Agent(name="coder", instructions="Code.", model=ScriptedModel())
    agent = Agent(
        name="main",
        model=ScriptedModel(),
        tools=[function_tool(big_search), WebSearchTool()],
        handoffs=[coder],
    )
    items: list[Any] = [{"role": "user", "content": "go"}]
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions="Be brief."), agent=agent, context=None
    )
    filt = input_filter(ctxwin.Policy(POLICY))
    asyncio.run(filt(data))
    sent = Converter.convert_tools(list(agent.tools), [handoff(coder)]).tools
    assert {t["type"] for t in sent} == {"function", "web_search"}
    body = {"input": items, "instructions": "Be brief.", "tools": [dict(t) for t in sent]}
    expected = ctxwin.Policy(POLICY).apply(body, format="openai-responses").report
    assert filt.last_result is not None
    assert filt.last_result.report.tokens_before == expected.tokens_before


@pytest.mark.parametrize(
    ("kwargs", "path", "message"),
    [
        (
            {"is_error": True},
            "is_error",
            "is_error: is_error= takes a function (call_id, text) -> bool saying whether an "
            "output is an error (or None), not bool",
        ),
        (
            {"server_state": "no"},
            "server_state",
            "server_state: server_state= takes True, False or None, not str",
        ),
    ],
)
def test_an_argument_of_another_kind_is_refused_where_given(
    kwargs: dict[str, Any], path: str, message: str
) -> None:
    """``is_error=True`` failed at the first output with a bare TypeError, mid-run, and
    ``server_state="no"`` at the first model call."""
    with pytest.raises(ctxwin.InputError) as info:
        input_filter(ctxwin.Policy(POLICY), **kwargs)
    assert info.value.path == path
    assert str(info.value) == message
