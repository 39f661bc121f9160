"""Recall in LangChain and LangGraph agents: the middleware registers the ``recall`` tool
when the policy has recall on, ``recall_tool(policy)`` gives it to a prebuilt agent, and a
fake model that finds a handle in a cleared result's placeholder gets the exact lines back."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain.agents")
pytest.importorskip("langgraph.prebuilt")

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import Field

import ctxwin
from ctxwin.integrations import langgraph
from ctxwin.integrations.langchain import CtxwinMiddleware, recall_tool
from tests.integrations.lc_kit import as_body
from tests.integrations.recall_kit import (
    ANSWER,
    PATHS,
    RECALLED,
    UNKNOWN,
    UNKNOWN_TEXT,
    Plan,
    file_text,
    lines_of,
    make_policy,
)

QUESTION = {"messages": [{"role": "user", "content": "what is setting 10 of m0?"}]}


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return file_text(path)


class RecallingModel(BaseChatModel):
    """A chat model that follows the recall :class:`Plan` on what it receives; records
    the requests and the names of the tools it was bound to."""

    received: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[str] = Field(default_factory=list)
    plan: Plan = Field(default_factory=Plan)

    @property
    def _llm_type(self) -> str:
        return "recalling-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecallingModel:
        self.bound[:] = [getattr(t, "name", "") for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.received.append(list(messages))
        n = len(self.received)
        call = self._next(messages)
        if call is None:
            reply = AIMessage(content=ANSWER, id=f"ai-{n}")
        else:
            name, args_ = call
            reply = AIMessage(
                content="",
                id=f"ai-{n}",
                tool_calls=[{"name": name, "args": args_, "id": f"call_{n}", "type": "tool_call"}],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _next(self, messages: list[BaseMessage]) -> tuple[str, dict[str, Any]] | None:
        done = [m for m in messages if isinstance(m, ToolMessage)]
        reads = [(m.tool_call_id, m.text) for m in done if m.name == "read_file"]
        return self.plan.next(reads, sum(1 for m in done if m.name == "recall"))


def langchain_agent(model: RecallingModel, policy: ctxwin.Policy) -> Any:
    return create_agent(model, [read_file], middleware=[CtxwinMiddleware(policy)])


def langgraph_agent(model: RecallingModel, policy: ctxwin.Policy) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(
            model,
            [read_file, langgraph.recall_tool(policy)],
            pre_model_hook=langgraph.pre_model_hook(policy),
        )


AGENTS = {"langchain": langchain_agent, "langgraph": langgraph_agent}


@pytest.fixture(scope="module", params=sorted(AGENTS))
def recall_run(request: pytest.FixtureRequest) -> tuple[RecallingModel, list[BaseMessage]]:
    model = RecallingModel()
    state = AGENTS[request.param](model, make_policy()).invoke(QUESTION)
    return model, state["messages"]


def tool_messages(messages: Sequence[BaseMessage], name: str) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == name]


def test_the_agent_is_given_the_recall_tool(recall_run: Any) -> None:
    model, _ = recall_run
    assert sorted(model.bound) == ["read_file", "recall"]


def test_recall_answers_the_exact_lines_of_the_cleared_result(recall_run: Any) -> None:
    model, state = recall_run
    assert len(model.plan.recalled) == 1
    ((handle, call_id),) = model.plan.recalled.items()
    (original,) = [m for m in tool_messages(state, "read_file") if m.tool_call_id == call_id]
    answer = tool_messages(state, "recall")[0]
    assert answer.status == "success"
    assert answer.text == lines_of(original.text, 10, 20)
    assert answer.text.startswith(f"{PATHS[0]}:10: value_10 = 70\n")
    calls = [c for m in state if isinstance(m, AIMessage) for c in m.tool_calls]
    assert {"handle": handle, "lines": "10-20"} in [c["args"] for c in calls]


def test_an_unknown_handle_is_an_error_result_and_the_run_goes_on(recall_run: Any) -> None:
    _, state = recall_run
    error = tool_messages(state, "recall")[1]
    assert error.status == "error"
    assert error.text == UNKNOWN_TEXT
    assert len(tool_messages(state, "read_file")) == len(PATHS)
    assert state[-1].text == ANSWER


def test_every_request_pairs_and_the_history_stays_whole(recall_run: Any) -> None:
    model, state = recall_run
    assert len(model.received) >= 10  # eight reads, two recalls, the answer
    for request in model.received:
        assert ctxwin.check(as_body(request), "openai-chat") == []
    for m in tool_messages(state, "read_file"):
        assert m.text == file_text(PATHS[tool_messages(state, "read_file").index(m)])
    assert ctxwin.check(as_body(state), "openai-chat") == []


def test_the_async_agent_recalls_the_same_lines() -> None:
    model = RecallingModel()
    agent = langchain_agent(model, make_policy())
    state = asyncio.run(agent.ainvoke(QUESTION))["messages"]
    answer = tool_messages(state, "recall")[0]
    assert answer.text == RECALLED
    assert tool_messages(state, "recall")[1].status == "error"


def test_recall_off_registers_no_tool() -> None:
    middleware = CtxwinMiddleware(make_policy(recall=False))
    assert middleware.tools == []
    model = RecallingModel()
    state = langchain_agent(model, make_policy(recall=False)).invoke(QUESTION)
    assert model.bound == ["read_file"]
    assert not model.plan.recalled
    assert not tool_messages(state, "recall")


def test_recall_on_for_one_tool_registers_the_tool() -> None:
    policy = make_policy(recall=False, tools={"read_file": {"recall": True}})
    assert [t.name for t in CtxwinMiddleware(policy).tools] == ["recall"]
    assert CtxwinMiddleware(policy, register_recall=False).tools == []


def test_passing_the_tool_too_gives_the_model_one_recall_tool() -> None:
    """``create_agent`` merges the middleware's tools with the agent's by name: passing
    ``recall_tool(policy)`` as well, with ``register_recall`` left on, binds one tool."""
    model, policy = RecallingModel(), make_policy()
    agent = create_agent(
        model, [read_file, recall_tool(policy)], middleware=[CtxwinMiddleware(policy)]
    )
    state = agent.invoke(QUESTION)
    assert sorted(model.bound) == ["read_file", "recall"]
    assert model.plan.recalled
    assert tool_messages(state["messages"], "recall")[0].text == RECALLED


def test_the_tool_takes_bad_arguments_as_error_results() -> None:
    recall = recall_tool(make_policy())
    for args in ({"handle": "nope"}, {"handle": UNKNOWN, "lines": "9-1"}, {"grep": "x"}):
        call = {"name": "recall", "args": args, "id": "c1", "type": "tool_call"}
        answer = recall.invoke(call)
        assert isinstance(answer, ToolMessage)
        assert answer.status == "error", args
        assert answer.text.startswith("recall:"), args
