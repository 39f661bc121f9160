"""LangGraph: the prebuilt agent's ``pre_model_hook``, and a human-in-the-loop
``StateGraph`` whose messages ``repair_messages`` mends after ``interrupt()``."""

from __future__ import annotations

import asyncio
import sys
import warnings
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.prebuilt")

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.types import Command, interrupt
from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import BaseModel

import ctxwin
from ctxwin.formats.langchain import LangChainChatAdapter, LangChainMessages
from ctxwin.integrations.langgraph import (
    pre_model_hook,
    recall_tool,
    repair_messages,
    repaired_messages,
)
from tests.integrations.lc_kit import (
    FILES,
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
DECLINED = "{tool} was declined by the user"


def react_agent(model: RecordingModel, policy: ctxwin.Policy) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(
            model, TOOLS, prompt=SYSTEM, pre_model_hook=pre_model_hook(policy, system=SYSTEM)
        )


def result_of(messages: list[Any], call_id: str) -> ToolMessage:
    (found,) = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id]
    return found


# ------------------------------------------------------------------ prebuilt agent


@pytest.fixture(scope="module")
def react_run() -> Any:
    model = RecordingModel(messages=iter(script()))
    state = react_agent(model, make_policy()).invoke(QUESTION)
    return model, state["messages"]


def test_the_hook_edits_what_the_model_receives(react_run: Any) -> None:
    model, _ = react_run
    assert len(model.received) == 11
    last = model.received[-1]
    assert last[0] is SYSTEM
    assert "read_file result cleared" in result_of(last, "call_3_0").text
    assert "of 5000 tokens of read_file output truncated" in result_of(last, "call_10_0").text
    for request in model.received:
        assert ctxwin.check(as_body(request), "openai-chat") == []


def test_the_hook_leaves_the_state_whole(react_run: Any) -> None:
    _, state = react_run
    assert len(result_of(state, "call_3_0").text.split()) == FILES["a.py"]
    assert result_of(state, "call_5_0").status == "error"
    writes = next(m for m in state if m.id == "ai-2")
    assert writes.tool_calls[0]["args"]["content"] == LONG_TEXT


def test_the_hook_hands_on_unchanged_messages_as_they_are(react_run: Any) -> None:
    model, state = react_run
    held = by_id(state)
    for request in model.received:
        for m in request[1:]:
            if m == held[m.id]:
                assert m is held[m.id]
            else:
                keep = {"content", "tool_calls"}
                assert m.model_dump(exclude=keep) == held[m.id].model_dump(exclude=keep)
    chat = LangChainMessages().body(state[:-1], SYSTEM)
    jumps = make_policy().apply(chat.body, LangChainChatAdapter()).report.window_events
    assert jumps >= 1
    assert prefix_breaks(model.received) <= jumps


def test_the_hook_runs_async() -> None:
    model = RecordingModel(messages=iter(script()))
    asyncio.run(react_agent(model, make_policy()).ainvoke(QUESTION))
    assert "read_file result cleared" in result_of(model.received[-1], "call_3_0").text


class Answer(BaseModel):
    text: str


class StructuredModel(RecordingModel):
    """A recording model whose structured output (what ``create_react_agent``'s last step
    asks for) records the messages it is given too."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        def answer(messages: list[Any]) -> Answer:
            self.received.append(list(messages))
            return Answer(text="done")

        return RunnableLambda(answer)


def test_a_prebuilt_agent_s_structured_response_call_gets_the_state_unedited() -> None:
    """What the docs warn of: with a ``response_format``, the last call reads the state's
    messages, not the hook's ``llm_input_messages`` (LangGraph's doing: if this changes,
    the docs of ``pre_model_hook`` change with it)."""
    model = StructuredModel(messages=iter(script()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        agent = create_react_agent(
            model,
            TOOLS,
            prompt=SYSTEM,
            pre_model_hook=pre_model_hook(make_policy()),
            response_format=Answer,
        )
    state = agent.invoke(QUESTION)
    assert state["structured_response"] == Answer(text="done")
    *loop, last = model.received
    assert "read_file result cleared" in result_of(loop[-1], "call_3_0").text
    assert result_of(last, "call_3_0") is result_of(state["messages"], "call_3_0")


def test_the_docs_say_the_structured_response_call_is_not_edited() -> None:
    """The docs said the model gets the edited messages, and the structured-response call
    got the whole history (a context-length error at the end of a long run)."""
    from pathlib import Path

    import ctxwin.integrations.langgraph as module

    page = (Path(__file__).parents[2] / "docs" / "integrations_langchain.md").read_text()
    for text in (" ".join(str(module.__doc__).split()), " ".join(page.split())):
        assert "generate_structured_response" in text
        assert "unedited" in text
        assert "CtxwinMiddleware" in text.split("generate_structured_response", 1)[1]


def test_create_agent_s_structured_response_call_gets_the_edited_messages() -> None:
    """Where the docs send structured output: ``create_agent`` makes its structured response
    in a model call, through ``CtxwinMiddleware``."""
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ToolStrategy

    from ctxwin.integrations.langchain import CtxwinMiddleware

    final = AIMessage("", tool_calls=[{"name": "Answer", "args": {"text": "x"}, "id": "fin"}])
    model = RecordingModel(messages=iter([*script()[:-1], final]))
    agent = create_agent(
        model,
        TOOLS,
        system_prompt=SYSTEM,
        response_format=ToolStrategy(Answer),
        middleware=[CtxwinMiddleware(make_policy())],
    )
    state = agent.invoke(QUESTION)
    assert state["structured_response"] == Answer(text="x")
    assert "read_file result cleared" in result_of(model.received[-1], "call_3_0").text


# ------------------------------------------------------------------ human in the loop


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def hitl_graph(model: RecordingModel, policy: ctxwin.Policy, *, repair: bool = True) -> Any:
    """agent -> approve (interrupt) -> tools, or a human message when the call is declined;
    every way into the agent goes through the repair node."""

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: State) -> str:
        last = state["messages"][-1]
        return "approve" if isinstance(last, AIMessage) and last.tool_calls else END

    def approve(state: State) -> Command[Any]:
        answer = interrupt({"calls": state["messages"][-1].tool_calls})
        if answer == "yes":
            return Command(goto="tools")
        return Command(goto="repair", update={"messages": [HumanMessage(answer, id="h-no")]})

    builder = StateGraph(State)
    builder.add_node("repair", repair_messages(policy) if repair else (lambda s: {}))
    builder.add_node("agent", agent)
    builder.add_node("approve", approve, destinations=("tools", "repair"))
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "repair")
    builder.add_edge("repair", "agent")
    builder.add_conditional_edges("agent", route, ["approve", END])
    builder.add_edge("tools", "repair")
    return builder.compile(checkpointer=InMemorySaver())


def hitl_script() -> list[AIMessage]:
    turns = script()
    return [turns[2], turns[1], AIMessage("I left notes.md alone.", id="ai-end")]


def run_hitl(repair: bool = True) -> tuple[RecordingModel, list[Any]]:
    model = RecordingModel(messages=iter(hitl_script()))
    graph = hitl_graph(model, make_policy(repair={"missing_result": DECLINED}), repair=repair)
    config = {"configurable": {"thread_id": "t1"}}
    graph.invoke(QUESTION, config)  # read_file: asks
    graph.invoke(Command(resume="yes"), config)  # runs it; write_file: asks
    state = graph.invoke(Command(resume="no, do not touch notes.md"), config)
    return model, state["messages"]


def test_a_declined_call_gets_the_policys_result_before_the_human_message() -> None:
    model, state = run_hitl()
    kinds = [(m.type, getattr(m, "tool_call_id", None)) for m in state]
    assert kinds == [
        ("human", None),
        ("ai", None),
        ("tool", "call_3_0"),
        ("ai", None),
        ("tool", "call_2_0"),
        ("human", None),
        ("ai", None),
    ]
    declined = state[4]
    assert declined.content == "write_file was declined by the user"
    assert declined.status == "error"
    assert declined.name == "write_file"
    assert ctxwin.check(as_body(model.received[-1]), "openai-chat") == []
    assert [m.content for m in model.received[-1]] == [m.content for m in state[:-1]]


def test_repair_keeps_every_other_message_and_its_id() -> None:
    _, state = run_hitl()
    ids = [m.id for m in state]
    assert ids[1] == "ai-3"
    assert ids[3] == "ai-2"
    assert ids[5] == "h-no"
    assert len(result_of(state, "call_3_0").text.split()) == FILES["a.py"]
    assert result_of(state, "call_3_0").artifact == {"path": "a.py", "size": FILES["a.py"]}


def test_without_repair_the_model_would_get_an_invalid_request() -> None:
    model, _ = run_hitl(repair=False)
    problems = ctxwin.check(as_body(model.received[-1]), "openai-chat")
    assert [p.code for p in problems] == ["missing_result"]


def test_valid_messages_are_returned_as_they_are() -> None:
    messages = [HumanMessage("hi", id="1"), AIMessage("hello", id="2")]
    fixed = repaired_messages(make_policy(), messages)
    assert all(a is b for a, b in zip(fixed, messages, strict=True))
    assert repair_messages(make_policy())({"messages": messages}) == {}


def _call_0_twice() -> list[Any]:
    """Two turns each calling ``call_0``, as a GPT-style server numbers calls per turn."""
    out: list[Any] = [HumanMessage("go", id="h")]
    for turn in "ab":
        call = {"name": "lookup", "args": {"q": turn}, "id": "call_0", "type": "tool_call"}
        out += [
            AIMessage("", tool_calls=[call], id=f"ai-{turn}"),
            ToolMessage(f"r{turn}", tool_call_id="call_0", id=f"t-{turn}"),
        ]
    return out


def test_repair_for_a_claude_model_makes_call_ids_unique() -> None:
    """The repair node checked every history under OpenAI's rules: ``call_0`` in two turns
    passed, and ChatAnthropic's request was refused ("tool_use ids must be unique")."""
    messages = _call_0_twice()
    assert repaired_messages(make_policy(), messages) == messages  # GPT accepts it
    fixed = repaired_messages(make_policy(), messages, model="claude-sonnet-4-5")
    assert [m.id for m in fixed] == [m.id for m in messages]
    assert [c["id"] for c in fixed[3].tool_calls] == ["call_0_2"]
    assert fixed[4].tool_call_id == "call_0_2"
    assert fixed[:3] == messages[:3]
    update = repair_messages(make_policy(), model="anthropic/claude-opus-4")({"messages": messages})
    assert update["messages"][1:] == fixed
    for_claude = {**as_body(messages), "model": "claude-sonnet-4-5"}
    assert [p.code for p in ctxwin.check(for_claude, "openai-chat")] != []
    assert ctxwin.check({**as_body(fixed), "model": "claude-sonnet-4-5"}, "openai-chat") == []


def test_the_repair_model_must_be_a_name() -> None:
    with pytest.raises(ctxwin.InputError, match="model= takes the model's name") as err:
        repair_messages(make_policy(), model=123)  # type: ignore[arg-type]
    assert err.value.path == "model"


# ------------------------------------------------------------------ install hints, arguments


@pytest.mark.parametrize(
    ("missing", "call"),
    [
        ("langchain_core.messages", lambda p: repaired_messages(p, [])),
        ("langchain_core.messages", lambda p: repair_messages(p)),
        ("langchain_core.tools", lambda p: recall_tool(p)),
        ("langchain_core.runnables", lambda p: pre_model_hook(p)),
    ],
)
def test_a_missing_framework_names_this_modules_extra(
    monkeypatch: pytest.MonkeyPatch, missing: str, call: Any
) -> None:
    """``repaired_messages`` and ``recall_tool`` said ``pip install 'ctxwin[langchain]'``:
    a LangGraph user installs ``ctxwin[langgraph]`` (which brings ``langchain-core``)."""
    policy = make_policy()
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(ImportError, match=r"pip install 'ctxwin\[langgraph\]'"):
        call(policy)


def test_the_recall_tool_is_the_langchain_one() -> None:
    tool = recall_tool(make_policy())
    assert tool.name == "recall"
    assert tool.metadata == {"ctxwin": "recall"}


@pytest.mark.parametrize("model", [123, ["gpt-4o"], ""])
def test_the_hook_refuses_a_model_that_is_no_name(model: object) -> None:
    """Refused where it is passed, not at the first model call as a bare AttributeError."""
    with pytest.raises(ctxwin.InputError, match=r"^model: model= takes the model's name"):
        pre_model_hook(make_policy(), model=model)  # type: ignore[arg-type]


def test_repair_keeps_a_tool_message_answering_a_call_held_in_a_content_block() -> None:
    """An AI message holding its call as an Anthropic ``tool_use`` block only (no
    ``tool_calls``): the repair node took its ToolMessage for an orphan and replaced the
    state's messages without it, deleting the result for good."""
    use = {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a"}}
    messages = [
        HumanMessage("what is in a.py?", id="h1"),
        AIMessage([use], id="a1"),
        ToolMessage("print('hello')", tool_call_id="toolu_01", id="t1"),
        HumanMessage("thanks", id="h2"),
    ]
    node = repair_messages(make_policy(), model="claude-sonnet-4-5")
    assert node({"messages": messages}) == {}
    fixed = repaired_messages(make_policy(), messages, model="claude-sonnet-4-5")
    assert all(a is b for a, b in zip(fixed, messages, strict=True))
