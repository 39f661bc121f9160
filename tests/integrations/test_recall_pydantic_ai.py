"""Recall in pydantic-ai: ``ContextWindow`` gives the agent the ``recall`` tool when the
policy has recall on, and a ``FunctionModel`` that finds a handle in a cleared read's
placeholder gets the exact lines back; an unknown handle is a failed tool return."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
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
from ctxwin.integrations.pydantic_ai import ContextWindow, process_history, recall_tool
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


class Script:
    """The fake model: follows the recall :class:`Plan` on the tool returns it receives;
    records each request and the names of the tools it was offered."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []
        self.tools: list[list[str]] = []
        self.plan = Plan()

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.tools.append(sorted(t.name for t in info.function_tools))
        done = list(returns(messages).values())
        reads = [(p.tool_call_id, str(p.content)) for p in done if p.tool_name == "read_file"]
        call = self.plan.next(reads, sum(1 for p in done if p.tool_name == "recall"))
        if call is None:
            return ModelResponse(parts=[TextPart(ANSWER)])
        return ModelResponse(parts=[ToolCallPart(call[0], call[1])])


def returns(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    return {
        p.tool_call_id: p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }


def make_agent(script: Script, **kwargs: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(script), **kwargs)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return file_text(path)

    return agent


def run(agent: Agent[None, str]) -> Any:
    return asyncio.run(agent.run("what is setting 10 of m0?"))


@pytest.fixture(scope="module")
def recall_run() -> tuple[Script, Any]:
    script = Script()
    result = run(make_agent(script, capabilities=[ContextWindow(make_policy())]))
    return script, result


def recall_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for p in returns(messages).values() if p.tool_name == "recall"]


def test_the_capability_gives_the_agent_the_recall_tool(recall_run: Any) -> None:
    script, _ = recall_run
    assert script.tools[0] == ["read_file", "recall"]


def test_recall_answers_the_exact_lines_of_the_cleared_read(recall_run: Any) -> None:
    script, result = recall_run
    history = result.all_messages()
    ((handle, call_id),) = script.plan.recalled.items()
    original = returns(history)[call_id]
    answer = recall_returns(history)[0]
    assert answer.outcome == "success"
    assert answer.content == lines_of(original.content, 10, 20) == RECALLED
    asked = [p.args for m in history if isinstance(m, ModelResponse) for p in m.tool_calls]
    assert {"handle": handle, "lines": "10-20"} in asked


def test_an_unknown_handle_is_a_failed_return_and_the_run_goes_on(recall_run: Any) -> None:
    _, result = recall_run
    error = recall_returns(result.all_messages())[1]
    assert error.outcome == "failed"
    assert error.content == UNKNOWN_TEXT
    assert result.output == ANSWER


def test_every_request_pairs_and_the_history_stays_whole(recall_run: Any) -> None:
    script, result = recall_run
    assert len(script.seen) >= 11  # eight reads, two recalls, the answer
    for seen in script.seen:
        assert ctxwin.check(Mapper().request(seen).body, "anthropic") == []
    history = result.all_messages()
    reads = [p for p in returns(history).values() if p.tool_name == "read_file"]
    assert [p.content for p in reads] == [file_text(path) for path in PATHS]
    assert ctxwin.check(Mapper().request(history).body, "anthropic") == []


def test_recall_off_gives_no_tool() -> None:
    script = Script()
    result = run(make_agent(script, capabilities=[ContextWindow(make_policy(recall=False))]))
    assert script.tools[0] == ["read_file"]
    assert not script.plan.recalled
    assert recall_returns(result.all_messages()) == []
    no_register = ContextWindow(make_policy(), register_recall=False)
    assert no_register.get_toolset() is None


def test_recall_tool_serves_a_history_processor_agent() -> None:
    """With ``process_history`` (no capability), ``tools=[recall_tool(policy)]``."""
    script = Script()
    policy = make_policy()
    capability = ProcessHistory(process_history(policy))
    run(make_agent(script, capabilities=[capability], tools=[recall_tool(policy)]))
    assert script.tools[0] == ["read_file", "recall"]
    # what the model received (the window may clear the answer itself later on)
    answers = [r.content for seen in script.seen for r in recall_returns(seen)]
    assert answers
    assert answers[0] == RECALLED
