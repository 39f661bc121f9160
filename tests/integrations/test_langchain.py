"""CtxwinMiddleware on a real LangChain ``create_agent``, offline, on a recording fake model:
ten tool turns with 5-20k-token results, a parallel turn, a failing tool, an image."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

import ctxwin
from ctxwin.integrations.langchain import CtxwinMiddleware
from tests.integrations.lc_kit import (
    FILES,
    IMAGE,
    LONG_TEXT,
    SYSTEM,
    TOOLS,
    RecordingModel,
    as_body,
    by_id,
    make_policy,
    prefix_breaks,
    script,
)

QUESTION = {"messages": [{"role": "user", "content": "fix the parser"}]}


def run(policy: ctxwin.Policy | None = None, **model_options: Any) -> Any:
    model = RecordingModel(messages=iter(script()), **model_options)
    middleware = CtxwinMiddleware(policy or make_policy())
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM, middleware=[middleware])
    state = agent.invoke(QUESTION)
    return model, middleware, state["messages"]


@pytest.fixture(scope="module")
def agent_run() -> Any:
    return run()


def tool_message(messages: list[BaseMessage], call_id: str) -> ToolMessage:
    found = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id]
    assert len(found) == 1, call_id
    return found[0]


def test_the_model_receives_the_edited_request(agent_run: Any) -> None:
    model, middleware, _ = agent_run
    assert len(model.received) == 11
    last = model.received[-1]
    cleared = tool_message(last, "call_3_0")  # a.py, an old round
    assert "read_file result cleared" in cleared.text
    latest = tool_message(last, "call_10_0")  # e.py: 5k tokens, capped to 3k
    assert len(latest.text.split()) <= 3_000
    assert "of 5000 tokens of read_file output truncated" in latest.text
    assert middleware.last_result.report.tokens_after <= 24_000


def test_every_request_the_model_receives_pairs(agent_run: Any) -> None:
    model, _, _ = agent_run
    for request in model.received:
        assert ctxwin.check(as_body(request), "openai-chat") == []


def test_the_graph_state_keeps_the_full_results(agent_run: Any) -> None:
    _, _, state = agent_run
    assert len(tool_message(state, "call_3_0").text.split()) == FILES["a.py"]
    assert len(tool_message(state, "call_10_0").text.split()) == FILES["e.py"]
    assert tool_message(state, "call_2_0").content.startswith("wrote 200 characters")
    writes = next(m for m in state if m.id == "ai-2")
    assert isinstance(writes, AIMessage)
    assert writes.tool_calls[0]["args"]["content"] == LONG_TEXT


def test_unchanged_messages_are_the_very_objects_of_the_state(agent_run: Any) -> None:
    model, _, state = agent_run
    held = by_id(state)
    same = 0
    for request in model.received:
        assert request[0] is SYSTEM
        for m in request[1:]:
            original = held[m.id]
            if m == original:
                assert m is original
                same += 1
    assert same > 50


def test_an_edited_message_changes_its_content_only(agent_run: Any) -> None:
    model, _, state = agent_run
    held = by_id(state)
    edited = [m for r in model.received for m in r[1:] if m != held[m.id]]
    assert edited
    for m in edited:
        original = held[m.id]
        assert type(m) is type(original)
        keep = m.model_dump(exclude={"content", "tool_calls"})
        assert keep == original.model_dump(exclude={"content", "tool_calls"})


def test_artifacts_ids_and_names_survive_an_edit(agent_run: Any) -> None:
    model, _, state = agent_run
    capped = tool_message(model.received[3], "call_3_0")
    original = tool_message(state, "call_3_0")
    assert capped is not original
    assert capped.text != original.text
    assert capped.id == original.id
    assert capped.artifact == {"path": "a.py", "size": FILES["a.py"]}
    assert capped.name == "read_file"


def test_a_cleared_call_keeps_its_message_metadata(agent_run: Any) -> None:
    model, _, state = agent_run
    sent = next(m for m in model.received[-1] if m.id == "ai-2")
    original = next(m for m in state if m.id == "ai-2")
    assert isinstance(sent, AIMessage)
    assert sent is not original
    assert sent.tool_calls[0]["args"] == {"path": "notes.md", "content": "[cleared]"}
    assert sent.tool_calls[0]["id"] == "call_2_0"
    assert sent.response_metadata == {"model_name": "fake", "turn": 2}
    assert sent.name == "coder"


def test_a_failing_tool_stays_an_error_result(agent_run: Any) -> None:
    model, middleware, state = agent_run
    original = tool_message(state, "call_5_0")
    assert original.status == "error"
    sent = tool_message(model.received[5], "call_5_0")  # the round right after it ran
    assert sent.status == "error"
    assert sent.id == original.id
    assert len(sent.text.split()) < len(original.text.split())  # capped, never selected
    edits = [e for e in middleware.last_result.report.edits if e.call_id == "call_5_0"]
    assert {e.step for e in edits} <= {"cap", "window"}


def test_an_image_result_keeps_its_image_block(agent_run: Any) -> None:
    model, _, state = agent_run
    original = tool_message(state, "call_6_0")
    sent = tool_message(model.received[6], "call_6_0")
    assert isinstance(original.content, list)
    assert isinstance(sent.content, list)
    assert sent is not original
    assert sent.content[0]["type"] == "text"
    assert len(sent.content[0]["text"].split()) < len(original.content[0]["text"].split())
    assert sent.content[1] is original.content[1]
    assert sent.content[1] == IMAGE


def test_the_prefix_breaks_at_most_once_per_window_jump(agent_run: Any) -> None:
    model, middleware, _ = agent_run
    jumps = middleware.last_result.report.window_events
    assert jumps >= 1
    assert prefix_breaks(model.received) <= jumps


def test_the_async_agent_sends_the_same_requests(agent_run: Any) -> None:
    sync_model, _, _ = agent_run
    model = RecordingModel(messages=iter(script()))
    agent = create_agent(
        model, TOOLS, system_prompt=SYSTEM, middleware=[CtxwinMiddleware(make_policy())]
    )
    asyncio.run(agent.ainvoke(QUESTION))
    assert len(model.received) == len(sync_model.received)
    for a, b in zip(model.received, sync_model.received, strict=True):
        assert [(m.type, m.content) for m in a] == [(m.type, m.content) for m in b]
    assert "read_file result cleared" in tool_message(model.received[-1], "call_3_0").text


def test_the_system_message_counts_toward_the_budget() -> None:
    big = SYSTEM.model_copy(update={"content": "rules " * 3_000})
    model = RecordingModel(messages=iter(script()))
    middleware = CtxwinMiddleware(make_policy())
    agent = create_agent(model, TOOLS, system_prompt=big, middleware=[middleware])
    agent.invoke(QUESTION)
    result = middleware.last_result
    assert result.conversation.messages[0].role == "system"
    assert result.prefix_tokens(1) >= 3_000
    assert model.received[-1][0] is big


def test_reported_usage_is_observed() -> None:
    policy = make_policy()
    run(policy, usage_factor=2.0)
    assert policy.calibration.of(None).estimate > 1.2


def test_a_request_ctxwin_leaves_alone_is_passed_on_as_it_is() -> None:
    seen: list[Any] = []
    middleware = CtxwinMiddleware(make_policy())

    class Request:
        def __init__(self) -> None:
            self.messages = [HumanMessage("hi", id="h")]
            self.system_message = None
            self.tools: list[Any] = []
            self.model = None

        def override(self, **kw: Any) -> Any:
            raise AssertionError("nothing to edit")

    request = Request()
    middleware.wrap_model_call(request, lambda r: seen.append(r) or AIMessage("ok"))
    assert seen == [request]


def test_a_langchain_message_usage_is_read_with_its_cache() -> None:
    """``policy.observe(result, ai_message)`` (or its ``usage_metadata``) reads the cache
    reads and writes LangChain keeps in ``input_token_details``; it once read none."""
    usage = {
        "input_tokens": 5000,
        "output_tokens": 20,
        "total_tokens": 5020,
        "input_token_details": {"cache_read": 4000, "cache_creation": 500},
    }
    message = AIMessage("done", usage_metadata=usage)
    assert ctxwin.read_usage(message) == ctxwin.Usage(5000, 4000, 500, 20)


class Incident(BaseModel):
    """A detailed incident report."""

    title: str = Field(description="A one-line title of the incident, in the imperative mood")
    severity: int = Field(description="Severity from 1 (cosmetic) to 5 (outage for all)")
    root_cause: str = Field(description="The root cause, with file paths and line numbers")
    remediation_steps: list[str] = Field(description="Ordered steps, each naming its owner")


INCIDENT = {"title": "t", "severity": 1, "root_cause": "r", "remediation_steps": []}
ASK = [HumanMessage("write the incident report")]


class GPT(RecordingModel):
    """A fake chat model named as one LangChain knows has native structured output."""

    model_name: str = "gpt-4.1"


def counted(response_format: Any, model_class: type[RecordingModel] = RecordingModel) -> int:
    """The tokens ctxwin counts for the first request of an agent with ``response_format``."""
    call = {"name": "Incident", "args": INCIDENT, "id": "c1"}
    native = isinstance(response_format, ProviderStrategy) or model_class is GPT
    answer = AIMessage(json.dumps(INCIDENT), tool_calls=[] if native else [call])
    model = model_class(messages=iter([answer]))
    middleware = CtxwinMiddleware(ctxwin.load_policy({}))
    create_agent(model, [], response_format=response_format, middleware=[middleware]).invoke(
        {"messages": ASK}
    )
    assert middleware.last_result is not None
    return middleware.last_result.report.tokens_before


def chat_tokens(**body: Any) -> int:
    """The tokens of the same request as the OpenAI Chat body the provider receives."""
    messages = [{"role": "user", "content": ASK[0].text}]
    policy = ctxwin.load_policy({})
    return policy.apply({"messages": messages, **body}, "openai-chat").report.tokens_before


def incident_tool() -> dict[str, Any]:
    described = StructuredTool(
        args_schema=Incident.model_json_schema(), name="Incident", description=Incident.__doc__
    )
    return convert_to_openai_tool(described)


def test_a_tool_strategy_counts_the_tool_the_model_is_bound() -> None:
    assert counted(ToolStrategy(Incident)) == chat_tokens(tools=[incident_tool()])


def test_a_provider_strategy_counts_its_response_format() -> None:
    response_format = ProviderStrategy(Incident).to_model_kwargs()["response_format"]
    assert counted(ProviderStrategy(Incident)) == chat_tokens(response_format=response_format)


def test_a_bare_schema_counts_as_the_strategy_the_agent_picks_for_its_model() -> None:
    """LangChain sends a bare schema as a response_format to a model it knows has native
    structured output, as a tool to any other."""
    response_format = ProviderStrategy(Incident).to_model_kwargs()["response_format"]
    assert counted(Incident, GPT) == chat_tokens(response_format=response_format)
    assert counted(Incident) == chat_tokens(tools=[incident_tool()])
