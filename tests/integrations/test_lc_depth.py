"""LangChain and LangGraph in depth: the message shapes real chat models produce (OpenAI
Responses blocks, Anthropic server tools, v1 standard blocks), agents with other
middleware, checkpointers, interrupts and resumes, and the places ctxwin's output must stay
valid and the user's state untouched."""

from __future__ import annotations

import json
import pickle
from datetime import datetime
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    SummarizationMiddleware,
)
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import ctxwin
from ctxwin.formats.langchain import LangChainMessages
from ctxwin.integrations._lc import LangChainRun
from ctxwin.integrations.langchain import CtxwinMiddleware
from ctxwin.integrations.langgraph import pre_model_hook
from tests.integrations.lc_kit import TOOLS, RecordingModel, as_body, make_policy, script, words


def edited(messages: list[Any], policy: ctxwin.Policy | None = None) -> list[Any]:
    run = LangChainRun(policy or make_policy())
    chat = run.body(messages)
    return run.back(chat, run.apply(chat)).messages


# ------------------------------------------------------- OpenAI Responses API messages


def responses_turn(i: int, content: str) -> AIMessage:
    """An AIMessage as langchain-openai builds it from a Responses API answer (its default
    ``output_version="responses/v1"``): the call is a ``function_call`` block of the content
    as well as a tool call, and langchain-openai sends the block, not the tool call."""
    args = {"path": f"f{i}.py", "content": content}
    return AIMessage(
        content=[
            {"type": "reasoning", "id": f"rs_{i}", "summary": []},
            {
                "type": "function_call",
                "name": "write_file",
                "arguments": json.dumps(args),
                "call_id": f"call_{i}",
                "id": f"fc_{i}",
                "status": "completed",
            },
        ],
        tool_calls=[{"name": "write_file", "args": args, "id": f"call_{i}", "type": "tool_call"}],
        id=f"resp_{i}",
    )


def responses_history(n: int = 6) -> list[Any]:
    out: list[Any] = [HumanMessage("go", id="h0")]
    for i in range(n):
        out.append(responses_turn(i, words(300)))
        out.append(ToolMessage(words(3_000), tool_call_id=f"call_{i}", id=f"t{i}"))
    return out


def test_a_responses_function_call_block_is_counted_once() -> None:
    """The block repeats the tool call: counted with it, not a second time."""
    messages = responses_history()
    without = [
        m.model_copy(update={"content": m.content[:1]}) if isinstance(m, AIMessage) else m
        for m in messages
    ]
    policy = make_policy()
    run = LangChainRun(policy)
    tokens = run.apply(run.body(messages)).report.tokens_before
    assert tokens == run.apply(run.body(without)).report.tokens_before


def test_a_cleared_call_is_cleared_in_its_responses_function_call_block() -> None:
    """langchain-openai sends the block in place of the tool call: the block's arguments
    were sent whole while the report counted them cleared."""
    messages = responses_history()
    first = edited(messages)[1]
    assert first.tool_calls[0]["args"] == {"path": "f0.py", "content": "[cleared]"}
    block = first.content[1]
    assert json.loads(block["arguments"]) == {"path": "f0.py", "content": "[cleared]"}
    assert {k: v for k, v in block.items() if k != "arguments"} == {
        k: v for k, v in messages[1].content[1].items() if k != "arguments"
    }
    assert first.content[0] is messages[1].content[0]
    assert json.loads(messages[1].content[1]["arguments"])["content"] == words(300)


def test_a_cleared_call_is_cleared_in_its_responses_custom_tool_call_block() -> None:
    """A custom (free-form) tool's call: langchain-openai keeps its input in the block and
    as the tool call's ``__arg1``."""
    messages: list[Any] = [HumanMessage("go", id="h0")]
    for i in range(6):
        patch = words(300)
        messages.append(
            AIMessage(
                content=[
                    {
                        "type": "custom_tool_call",
                        "name": "apply_patch",
                        "input": patch,
                        "call_id": f"call_{i}",
                        "id": f"ctc_{i}",
                    }
                ],
                tool_calls=[{"name": "apply_patch", "args": {"__arg1": patch}, "id": f"call_{i}"}],
                id=f"resp_{i}",
            )
        )
        messages.append(ToolMessage(words(3_000), tool_call_id=f"call_{i}", id=f"t{i}"))
    first = edited(messages)[1]
    assert first.tool_calls[0]["args"] == {"__arg1": "[cleared]"}
    assert first.content[0]["input"] == "[cleared]"
    assert first.content[0]["call_id"] == "call_0"
    assert messages[1].content[0]["input"] == words(300)


def server_tool_history(style: str) -> list[Any]:
    """Rounds whose AI message holds reasoning and a server tool's call and result besides
    its own call, as ChatAnthropic builds it (``anthropic``) or in LangChain's standard
    blocks (``v1``)."""
    out: list[Any] = [HumanMessage("go", id="h0")]
    for i in range(6):
        args = {"path": f"f{i}.py", "content": words(300)}
        if style == "anthropic":
            blocks = [
                {"type": "thinking", "thinking": "plan", "signature": f"sig{i}"},
                {"type": "server_tool_use", "id": f"srv{i}", "name": "web_search", "input": {}},
                {"type": "web_search_tool_result", "tool_use_id": f"srv{i}", "content": []},
                {"type": "tool_use", "id": f"c{i}", "name": "write_file", "input": args},
            ]
        else:
            blocks = [
                {"type": "reasoning", "reasoning": "plan"},
                {"type": "server_tool_call", "id": f"srv{i}", "name": "web_search", "args": {}},
                {"type": "server_tool_result", "tool_call_id": f"srv{i}", "status": "success"},
                {"type": "tool_call", "id": f"c{i}", "name": "write_file", "args": args},
            ]
        call = {"name": "write_file", "args": args, "id": f"c{i}", "type": "tool_call"}
        out.append(AIMessage(blocks, tool_calls=[call], id=f"a{i}"))
        out.append(ToolMessage(words(3_000), tool_call_id=f"c{i}", id=f"t{i}"))
    return out


@pytest.mark.parametrize("style", ["anthropic", "v1"])
def test_reasoning_and_server_tool_blocks_stay_as_they_are(style: str) -> None:
    messages = server_tool_history(style)
    first = edited(messages)[1]
    assert first.tool_calls[0]["args"] == {"path": "f0.py", "content": "[cleared]"}
    assert all(a is b for a, b in zip(first.content[:3], messages[1].content[:3], strict=True))
    key = "input" if style == "anthropic" else "args"
    assert first.content[3][key] == {"path": "f0.py", "content": "[cleared]"}


# ------------------------------------------------------- results after a human message


@tool
def note_file(path: str) -> str:
    """Write a short note to a file."""
    return f"noted {path}"


def test_results_put_after_a_human_message_reach_the_model_after_their_call() -> None:
    """While an approval waits, the app adds the user's message to the thread; the call's
    result then comes after it. The repair moved it back, and nothing else changed: the
    middleware handed the model the messages in their old order (a 400 from OpenAI)."""
    script = [
        AIMessage(
            "",
            id="ai-1",
            tool_calls=[{"name": "note_file", "args": {"path": "n.md"}, "id": "w1"}],
        ),
        AIMessage("noted", id="ai-2"),
    ]
    model = RecordingModel(messages=iter(script))
    agent = create_agent(
        model,
        [note_file],
        middleware=[
            CtxwinMiddleware(make_policy()),
            HumanInTheLoopMiddleware(interrupt_on={"note_file": True}),
        ],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "1"}}
    agent.invoke({"messages": [HumanMessage("go", id="h0")]}, config)
    agent.update_state(config, {"messages": [HumanMessage("keep it short", id="note")]})
    state = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert [m.id for m in state["messages"]][:3] == ["h0", "ai-1", "note"]
    sent = model.received[-1]
    assert [m.type for m in sent] == ["human", "ai", "tool", "human"]
    assert ctxwin.check(as_body(sent), "openai-chat") == []


def test_the_hook_puts_results_after_a_human_message_back_after_their_call() -> None:
    call = AIMessage("", id="a1", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
    messages = [
        HumanMessage("go", id="h0"),
        call,
        HumanMessage("hurry", id="h1"),
        ToolMessage("a.py", tool_call_id="c1", id="t1"),
    ]
    sent = pre_model_hook(make_policy()).invoke({"messages": messages})["llm_input_messages"]
    assert [m.id for m in sent] == ["h0", "a1", "t1", "h1"]
    expected = [messages[0], call, messages[3], messages[2]]
    assert all(a is b for a, b in zip(sent, expected, strict=True))


# ------------------------------------------------------------------ errors


def test_tool_call_arguments_that_are_no_json_are_a_format_error_at_the_call() -> None:
    """A call edited by a human (HITL ``edit``) or built by hand may hold a ``datetime``:
    a bare TypeError from ``json.dumps`` escaped."""
    call = {"name": "remind", "args": {"when": datetime(2025, 1, 1)}, "id": "c1"}
    messages = [HumanMessage("hi"), AIMessage("", tool_calls=[call])]
    with pytest.raises(ctxwin.FormatError) as info:
        LangChainRun(make_policy()).body(messages)
    assert info.value.path == "messages[1].tool_calls[0].args"
    assert str(info.value) == (
        "messages[1].tool_calls[0].args: the arguments of tool call 'c1' are not JSON: "
        "Object of type datetime is not JSON serializable"
    )


def agent_error(messages: list[Any]) -> ctxwin.FormatError:
    model = RecordingModel(messages=iter([AIMessage("hi")]))
    agent = create_agent(
        model, [note_file], system_prompt="Be brief.", middleware=[CtxwinMiddleware(make_policy())]
    )
    with pytest.raises(ctxwin.FormatError) as info:
        agent.invoke({"messages": messages})
    return info.value


def test_a_message_ctxwin_cannot_read_is_named_by_its_place_in_the_state() -> None:
    """The system prompt goes first in the body ctxwin reads: errors named the message
    after the one at fault."""
    error = agent_error([HumanMessage("x"), ChatMessage(role="critic", content="c")])
    assert error.path == "messages[1]"
    assert str(error).startswith("messages[1]: a ChatMessage (type 'critic') is not")


def test_a_malformed_call_is_named_by_its_place_in_the_state() -> None:
    call = {"name": "note_file", "args": {}, "id": None}
    error = agent_error([HumanMessage("x"), AIMessage("", tool_calls=[call])])
    assert error.path == "messages[1].tool_calls[0].id"
    assert str(error) == "messages[1].tool_calls[0].id: a tool call needs a string 'id'"


# ------------------------------------------------------- legacy function calling


def legacy_turn(i: int) -> AIMessage:
    """An AIMessage of OpenAI's legacy function calling: the call in ``additional_kwargs``
    (ChatOpenAI sends it as ``function_call``), answered by a ``FunctionMessage``."""
    args = {"path": f"f{i}.py", "content": words(300)}
    call = {"name": "write_file", "arguments": json.dumps(args)}
    return AIMessage("", additional_kwargs={"function_call": call}, id=f"a{i}")


def legacy_history() -> list[Any]:
    out: list[Any] = [HumanMessage("go", id="h0")]
    for i in range(6):
        out += [legacy_turn(i), FunctionMessage(words(3_000), name="write_file", id=f"f{i}")]
    return out


def test_a_function_message_answering_a_legacy_call_is_kept() -> None:
    """The call was not read: its result was dropped as an orphan."""
    messages = legacy_history()
    out = edited(messages)
    assert [m.id for m in out] == [m.id for m in messages]
    assert len(out[-1].text.split()) == 2_000 - 2  # capped by the "*" rule, not dropped


def test_a_cleared_legacy_call_is_cleared_in_its_additional_kwargs() -> None:
    messages = legacy_history()
    first = edited(messages)[1]
    sent = json.loads(first.additional_kwargs["function_call"]["arguments"])
    assert sent == {"path": "f0.py", "content": "[cleared]"}
    assert first.tool_calls == []
    assert json.loads(messages[1].additional_kwargs["function_call"]["arguments"]) == {
        "path": "f0.py",
        "content": words(300),
    }


def test_a_legacy_call_without_its_result_gets_a_function_message() -> None:
    policy = make_policy(repair={"missing_result": "{tool} never ran"})
    out = edited([HumanMessage("go"), legacy_turn(0), HumanMessage("stop")], policy)
    assert [type(m) for m in out] == [HumanMessage, AIMessage, FunctionMessage, HumanMessage]
    assert (out[2].name, out[2].content) == ("write_file", "write_file never ran")


def test_a_legacy_call_changed_in_place_is_read_again() -> None:
    converter = LangChainMessages()
    msg = legacy_turn(0)
    converter.body([msg])
    msg.additional_kwargs["function_call"]["arguments"] = "{}"
    call = converter.body([msg]).body["messages"][0]["function_call"]
    assert call == {"name": "write_file", "arguments": "{}"}


# ------------------------------------------------------------------ checkpointers


def checkpointed(messages: list[Any]) -> list[Any]:
    """The messages as a checkpointer gives them back: equal copies, new objects."""
    copies: list[Any] = pickle.loads(pickle.dumps(messages))
    return copies


def test_a_checkpointed_copy_is_sent_as_the_dict_its_message_had() -> None:
    """Every run of a graph with a checkpointer reads fresh copies of the thread's messages:
    each converted to a new dict, the engine parsed, capped and folded the whole thread
    again at the first model call of every run (about seven times the work of a request
    on 1,000 messages)."""
    messages = [
        HumanMessage("go", id="h0"),
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}], id="a1"),
        ToolMessage(words(3_000), tool_call_id="c1", id="t1"),
    ]
    converter = LangChainMessages()
    first = converter.body(messages).body["messages"]
    again = converter.body(checkpointed(messages)).body["messages"]
    assert all(a is b for a, b in zip(again, first, strict=True))


def test_a_copy_changed_since_gets_a_dict_of_its_own() -> None:
    converter = LangChainMessages()
    msg = ToolMessage("old", tool_call_id="c1", id="t1")
    first = converter.body([msg]).body["messages"][0]
    copy = msg.model_copy(update={"content": "new"})
    assert converter.body([copy]).body["messages"][0] == {
        "role": "tool",
        "content": "new",
        "tool_call_id": "c1",
    }
    assert first["content"] == "old"


def test_a_copy_with_content_blocks_never_shares_its_blocks() -> None:
    """A dict with a content list holds the message's own blocks: an equal copy gets a dict
    of its own, so changing the first message's blocks in place cannot reach it."""
    converter = LangChainMessages()
    msg = HumanMessage([{"type": "text", "text": "hi"}], id="h1")
    first = converter.body([msg]).body["messages"][0]
    copy = checkpointed([msg])[0]
    second = converter.body([copy]).body["messages"][0]
    assert second is not first
    msg.content[0]["text"] = "changed"
    assert converter.body([copy]).body["messages"][0]["content"] == [{"type": "text", "text": "hi"}]


def test_a_thread_reloaded_from_its_checkpoint_gets_the_same_requests() -> None:
    """A cached dict changes the work done, never the request: the same run with and without
    a checkpointer sends the same messages."""
    requests = []
    for saver in (None, InMemorySaver()):
        model = RecordingModel(messages=iter(script()))
        agent = create_agent(
            model, TOOLS, middleware=[CtxwinMiddleware(make_policy())], checkpointer=saver
        )
        config: Any = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [HumanMessage("fix the parser", id="q")]}, config)
        requests.append([[(m.type, m.content) for m in r] for r in model.received])
    assert requests[0] == requests[1]


# ------------------------------------------------------------------ the user's state


class Spy(AgentMiddleware):
    """Outermost middleware: the state's messages as they were before each model call,
    and after it."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[list[Any], list[Any]]] = []

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        before = [m.model_dump() for m in request.messages]
        response = handler(request)
        self.pairs.append((before, [m.model_dump() for m in request.messages]))
        return response


def test_no_message_of_the_state_is_changed_by_a_run() -> None:
    """Ten turns with every kind of edit (select, cap, clear, clear_tool_inputs, an error
    result, an image result, parallel calls) next to LangChain's summarization."""
    spy = Spy()
    summarizer = FakeMessagesListChatModel(responses=[AIMessage("summary")] * 10)
    middleware = [
        spy,
        SummarizationMiddleware(summarizer, trigger=("messages", 16), keep=("messages", 8)),
        CtxwinMiddleware(make_policy()),
    ]
    model = RecordingModel(messages=iter(script()))
    create_agent(model, TOOLS, middleware=middleware).invoke({"messages": [HumanMessage("go")]})
    assert len(spy.pairs) == 11
    assert "summary" in model.received[-1][0].text  # the summarization ran
    for before, after in spy.pairs:
        assert before == after
    for request in model.received:
        assert ctxwin.check(as_body(request), "openai-chat") == []
