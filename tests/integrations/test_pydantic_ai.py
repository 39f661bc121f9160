"""pydantic-ai: an offline agent on ``FunctionModel`` with ten tool turns of large results."""

from __future__ import annotations

import asyncio
import json
import operator
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, ModelRetry, ToolFailed
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    BinaryImage,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import ctxwin
from ctxwin.integrations._pydantic_ai_map import Mapper
from ctxwin.integrations.pydantic_ai import ContextWindow, process_history

POLICY = {
    "context_window": 16_000,
    "tokenizer": "o200k_base",
    "window": {"strategy": "threshold", "trigger": 0.6, "target": 0.3, "keep_rounds": 2},
    "tools": {
        "search": {"select": "hits[].{path: path, line: line}", "max_tokens": 2000},
        "*": {"max_tokens": 1500},
    },
}
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
# Turn by turn: the calls the fake model makes (two turns with parallel calls).
PLAN: list[list[tuple[str, dict[str, Any]]]] = [
    [("search", {"query": "alpha"})],
    [("read_file", {"path": "a.py"})],
    [("search", {"query": "beta"}), ("read_file", {"path": "b.py"})],
    [("flaky", {})],
    [("broken", {})],
    [("read_file", {"path": "c.py"})],
    [("search", {"query": "gamma"}), ("search", {"query": "delta"})],
    [("read_file", {"path": "d.py"})],
    [("search", {"query": "epsilon"})],
    [("screenshot", {})],
]


def big_search(query: str) -> dict[str, Any]:
    hits = [
        {"path": f"src/{query}/{i}.py", "line": i, "snippet": f"def {query}_{i}(x): " * 12}
        for i in range(120)
    ]
    return {"query": query, "hits": hits}


def big_file(path: str) -> str:
    return "\n".join(f"{path}:{i}: value_{i} = compute(alpha, beta, gamma)" for i in range(1100))


def make_agent(model: FunctionModel, **kwargs: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model, instructions="You are a code agent.", **kwargs)
    tries = {"flaky": 0}

    @agent.tool_plain
    def search(query: str) -> dict[str, Any]:
        """Search the code."""
        return big_search(query)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return big_file(path)

    @agent.tool_plain(retries=3)
    def flaky() -> str:
        """Fails once, then works."""
        tries["flaky"] += 1
        if tries["flaky"] == 1:
            raise ModelRetry("try again, with feeling")
        return "flaky is fine now"

    @agent.tool_plain
    def broken() -> str:
        """Always fails."""
        raise ToolFailed("the disk is on fire")

    @agent.tool_plain
    def screenshot() -> list[Any]:
        """A screenshot and its caption."""
        return ["the login page", BinaryImage(data=PNG, media_type="image/png")]

    return agent


class Script:
    """The fake model: follows PLAN (retrying the call the retry prompt asks for), records
    every request it receives."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []
        self.turn = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        last = messages[-1]
        retried = [
            p
            for p in getattr(last, "parts", ())
            if isinstance(p, ToolReturnPart) and p.outcome == "retried"
        ]
        if retried:
            return ModelResponse(parts=[ToolCallPart(retried[0].tool_name, {})])
        if self.turn == len(PLAN):
            return ModelResponse(parts=[TextPart("done")])
        calls = PLAN[self.turn]
        self.turn += 1
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])


def returns(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    return {
        p.tool_call_id: p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }


def calls(messages: list[ModelMessage]) -> list[str]:
    return [
        p.tool_call_id
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]


def run(agent: Agent[None, str]) -> Any:
    prompt = ["Fix the login bug; here is the mockup.", ImageUrl(url="https://x.test/m.png")]
    return asyncio.run(agent.run(prompt))


@pytest.fixture(scope="module")
def capability_run() -> tuple[Script, Any, Any]:
    script = Script()
    policy = ctxwin.Policy(POLICY)
    capability = ContextWindow(policy)
    result = run(make_agent(FunctionModel(script), capabilities=[capability]))
    return script, capability, result


def test_the_model_receives_the_edited_request(capability_run: tuple[Script, Any, Any]) -> None:
    script, capability, _ = capability_run
    assert len(script.seen) >= 12
    last = script.seen[-1]
    sent = returns(last)
    assert any("cleared" in str(p.content) for p in sent.values()), "old results were cleared"
    capped = selected = 0
    for seen in script.seen:
        for part in returns(seen).values():
            if "cleared" in str(part.content):
                continue
            if part.tool_name == "search":
                assert set(json.loads(str(part.content))[0]) == {"path", "line"}
                selected += 1
            if part.tool_name == "read_file":
                assert len(str(part.content)) < len(big_file("a.py")) / 3
                capped += 1
    assert capped
    assert selected
    assert capability.last_result.tokens < POLICY["context_window"]


def test_the_runs_history_keeps_every_result_whole(
    capability_run: tuple[Script, Any, Any],
) -> None:
    _, _, result = capability_run
    history = returns(result.all_messages())
    searches = [p for p in history.values() if p.tool_name == "search"]
    files = [p for p in history.values() if p.tool_name == "read_file"]
    assert len(searches) == 5
    assert len(files) == 4
    assert all(p.content == big_search(p.content["query"]) for p in searches)
    assert all(p.content.startswith(big_file("x")[:0]) and len(p.content) > 40_000 for p in files)


def test_pairing_ids_errors_and_images_are_kept(capability_run: tuple[Script, Any, Any]) -> None:
    script, _, result = capability_run
    history = result.all_messages()
    for seen in script.seen:
        body = Mapper().request(seen).body
        assert ctxwin.check(body) == []
        assert set(calls(seen)) <= set(returns(seen)) | set()
    last = script.seen[-1]
    sent, whole = returns(last), returns(history)
    assert set(sent) == set(whole)  # every call id kept
    outcomes = {p.tool_name: p.outcome for p in sent.values() if p.outcome != "success"}
    assert outcomes == {"flaky": "retried", "broken": "failed"}
    shot = next(p for p in sent.values() if p.tool_name == "screenshot")
    assert any(isinstance(f, BinaryImage) for f in shot.files)
    assert isinstance(last[0].parts[-1].content[1], ImageUrl)  # the user's image


def test_unchanged_messages_are_the_runs_objects_and_edits_copies(
    capability_run: tuple[Script, Any, Any],
) -> None:
    script, _, result = capability_run
    history = result.all_messages()
    by_id = {id(m) for m in history}
    last = script.seen[-1]
    same = [m for m in last if id(m) in by_id]
    copies = [m for m in last if id(m) not in by_id]
    assert same
    assert copies
    originals = {p.tool_call_id: p for p in returns(history).values()}
    for msg in copies:
        assert isinstance(msg, ModelRequest)
        for part in msg.parts:
            if isinstance(part, ToolReturnPart):
                orig = originals[part.tool_call_id]
                assert (part.tool_name, part.timestamp, part.outcome) == (
                    orig.tool_name,
                    orig.timestamp,
                    orig.outcome,
                )


def test_at_most_one_prefix_break_per_window_jump(
    capability_run: tuple[Script, Any, Any],
) -> None:
    script, _, _ = capability_run

    def shape(msgs: list[ModelMessage]) -> list[str]:
        return [
            repr([getattr(p, "content", getattr(p, "args", None)) for p in m.parts]) for m in msgs
        ]

    breaks = 0
    jumps = 0
    cleared: set[str] = set()
    for prev, cur in zip(script.seen, script.seen[1:], strict=False):
        a, b = shape(prev), shape(cur)
        if b[: len(a)] != a:
            breaks += 1
        now = {k for k, p in returns(cur).items() if "cleared" in str(p.content)}
        if now - cleared:
            jumps += 1
        cleared = now
    assert jumps >= 1
    assert breaks <= jumps


def test_process_history_persists_the_edit_and_is_idempotent() -> None:
    script = Script()
    processor = process_history(ctxwin.Policy(POLICY))
    result = run(make_agent(FunctionModel(script), capabilities=[ProcessHistory(processor)]))
    history = result.all_messages()
    assert any("cleared" in str(p.content) for p in returns(history).values())
    first = processor.last_result
    again = asyncio.run(processor(history))
    assert all(map(operator.is_, again, history))  # its own output comes back as is
    assert processor.last_result.report.edits == first.report.edits  # no new edits


def test_ctxwin_on_its_own_output_changes_nothing(capability_run: tuple[Script, Any, Any]) -> None:
    script, _, _ = capability_run
    again = ctxwin.Policy(POLICY).apply(Mapper().request(script.seen[-1]).body)
    assert again.edit_map.changed() == ()
    assert [e for e in again.report.edits if e.tokens_after != e.tokens_before] == []


def test_ctxwin_on_its_own_output_reports_no_edits(
    capability_run: tuple[Script, Any, Any],
) -> None:
    script, _, _ = capability_run
    again = ctxwin.Policy(POLICY).apply(Mapper().request(script.seen[-1]).body)
    assert again.report.edits == ()


def test_pydantic_ai_usage_is_read_from_its_own_objects() -> None:
    """``policy.observe(result, response)`` takes pydantic-ai's ``ModelResponse`` or its
    ``RequestUsage`` (dataclasses, whose ``input_tokens`` hold the cache reads and writes);
    ``read_usage`` once raised an internal error on them."""
    from pydantic_ai.usage import RequestUsage

    usage = RequestUsage(
        input_tokens=5000, cache_read_tokens=4000, cache_write_tokens=500, output_tokens=20
    )
    expected = ctxwin.Usage(5000, 4000, 500, 20)
    assert ctxwin.read_usage(usage) == expected
    response = ModelResponse(parts=[TextPart("done")], usage=usage)
    assert ctxwin.read_usage(response) == expected


@pytest.mark.parametrize(
    "policy",
    [
        {
            "context_window": 3000,
            "window": {"strategy": "threshold", "trigger": 0.5, "target": 0.2, "keep_rounds": 1},
        },
        {"context_window": 100_000, "tools": {"*": {"max_tokens": 24}}},
    ],
)
def test_a_tool_search_s_return_is_never_edited(policy: dict[str, Any]) -> None:
    """Deferred tools on a model without native tool search use pydantic-ai's own
    ``search_tools``, whose typed return pydantic-ai reads back to know the tools found.
    ctxwin's window cleared it (or a cap cut it) into a string, and the next request died
    with a bare TypeError (review)."""
    from pydantic_ai import Tool

    def fake(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = sum(isinstance(m, ModelResponse) for m in messages)
        if n == 0:
            return ModelResponse(parts=[ToolCallPart("search_tools", {"queries": ["weather"]})])
        if n < 5:
            return ModelResponse(parts=[ToolCallPart("get_weather", {"city": f"c{n}"})])
        return ModelResponse(parts=[TextPart("done")])

    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"weather in {city}: " + "sunny and warm " * 150

    others = [
        Tool(lambda city: "x", name=f"weather_tool_{i}", description="weather", defer_loading=True)
        for i in range(40)
    ]
    window = ContextWindow(ctxwin.load_policy(policy))
    tools = [Tool(get_weather, defer_loading=True), *others]
    agent = Agent(FunctionModel(fake), tools=tools, capabilities=[window])
    assert asyncio.run(agent.run("weather?")).output == "done"
    assert window.last_result is not None
    edits = window.last_result.report.edits
    assert edits  # the weather results were edited
    assert all(e.tool == "get_weather" for e in edits)
