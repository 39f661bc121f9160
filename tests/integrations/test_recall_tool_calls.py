"""The recall tool inside each framework: what the model may send comes back as a tool
result, never an exception out of the tool call, and a tool of the user's named ``recall``
is never silently put in ctxwin's place."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

import ctxwin
from tests.integrations.recall_kit import make_policy

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

HUGE = "1" * 5000
"""A line number ``int`` refuses to read (over 4,300 digits)."""


def kept(policy: ctxwin.Policy) -> str:
    handle = policy.shelf.keep("a\nb\nc\n")
    assert handle is not None
    return handle


def test_the_langchain_tool_answers_a_huge_line_number_with_an_error_message() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import ToolMessage

    from ctxwin.integrations.langchain import recall_tool

    policy = make_policy()
    call = {
        "name": "recall",
        "args": {"handle": kept(policy), "lines": HUGE},
        "id": "c1",
        "type": "tool_call",
    }
    answer = recall_tool(policy).invoke(call)
    assert isinstance(answer, ToolMessage)
    assert answer.status == "error"
    assert "past the end" in answer.text


def test_the_agents_sdk_tool_answers_a_huge_line_number_with_error_text() -> None:
    pytest.importorskip("agents")
    from ctxwin.integrations.openai_agents import recall_tool

    policy = make_policy()
    arguments = json.dumps({"handle": kept(policy), "lines": HUGE})
    text = asyncio.run(recall_tool(policy).on_invoke_tool(None, arguments))
    assert "past the end" in text


def test_the_pydantic_ai_tool_answers_a_huge_line_number_with_a_failed_return() -> None:
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from ctxwin.integrations.pydantic_ai import recall_tool

    policy = make_policy()
    tool = recall_tool(policy)
    with pytest.raises(pydantic_ai.ToolFailed, match="past the end"):
        tool.function(handle=kept(policy), lines=HUGE)


def test_a_langchain_agent_with_its_own_recall_tool_is_told_so() -> None:
    """LangChain runs one tool of a name (the agent's over the middleware's): without the
    check, the model's recall calls reached the user's tool with ctxwin's arguments."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from ctxwin.integrations.langchain import CtxwinMiddleware
    from tests.integrations.test_recall_langchain import QUESTION, RecallingModel, read_file

    @tool
    def recall(query: str) -> str:
        """Search the user's notes."""
        return "notes: " + query

    agent = create_agent(
        RecallingModel(), [read_file, recall], middleware=[CtxwinMiddleware(make_policy())]
    )
    with pytest.raises(ctxwin.InputError, match="tool named 'recall' of its own") as caught:
        agent.invoke(QUESTION)
    assert caught.value.path == "tools"


def test_a_langchain_agent_may_keep_its_own_recall_tool_with_register_recall_off() -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from ctxwin.integrations.langchain import CtxwinMiddleware
    from tests.integrations.test_recall_langchain import QUESTION, RecallingModel, read_file

    @tool
    def recall(query: str) -> str:
        """Search the user's notes."""
        return "notes: " + query

    model = RecallingModel()
    middleware = CtxwinMiddleware(make_policy(), register_recall=False)
    create_agent(model, [read_file, recall], middleware=[middleware]).invoke(QUESTION)
    assert sorted(model.bound) == ["read_file", "recall"]


def test_a_pydantic_ai_agent_with_its_own_recall_tool_is_told_so() -> None:
    """pydantic-ai refuses two tools of a name itself, naming ctxwin's toolset."""
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.function import FunctionModel

    from ctxwin.integrations.pydantic_ai import ContextWindow

    def never(messages: Any, info: Any) -> Any:
        raise AssertionError("the model is not called")

    agent: Any = pydantic_ai.Agent(
        FunctionModel(never), capabilities=[ContextWindow(make_policy())]
    )

    @agent.tool_plain
    def recall(query: str) -> str:
        """Search the user's notes."""
        return query

    with pytest.raises(pydantic_ai.UserError, match=r"ctxwin_recall.*'recall'"):
        asyncio.run(agent.run("hi"))
