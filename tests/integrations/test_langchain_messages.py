"""LangChain messages to an OpenAI Chat body and back: the cases an agent run does not
reach (Anthropic-shaped AI messages, mutated messages, synthetic results, cache markers,
messages ctxwin cannot read, a missing framework)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

import ctxwin
from ctxwin.formats.langchain import LangChainMessages
from ctxwin.integrations._lazy import require
from ctxwin.integrations._lc import LangChainRun
from ctxwin.integrations.langchain import CtxwinMiddleware
from tests.integrations.lc_kit import make_policy, words


def rounds(n: int, size: int = 3_000) -> list[Any]:
    out: list[Any] = [HumanMessage("go", id="h0")]
    for i in range(n):
        args = {"path": f"f{i}.py", "content": "y" * 120}
        out.append(
            AIMessage(
                content=[
                    {"type": "text", "text": f"writing f{i}"},
                    {"type": "tool_use", "id": f"c{i}", "name": "write_file", "input": args},
                ],
                tool_calls=[{"name": "write_file", "args": args, "id": f"c{i}"}],
                id=f"a{i}",
            )
        )
        out.append(ToolMessage(words(size), tool_call_id=f"c{i}", id=f"t{i}"))
    return out


def edited(policy: ctxwin.Policy, messages: list[Any], model: str | None = None) -> list[Any]:
    run = LangChainRun(policy)
    chat = run.body(messages)
    return run.back(chat, run.apply(chat, model)).messages


def test_anthropic_tool_use_blocks_are_counted_once_and_follow_their_call() -> None:
    messages = rounds(8)
    chat = LangChainMessages().body(messages)
    assert chat.body["messages"][1]["content"] == [{"type": "text", "text": "writing f0"}]
    out = edited(make_policy(), messages)
    first = out[1]
    assert first is not messages[1]
    assert first.tool_calls[0]["args"] == {"path": "f0.py", "content": "[cleared]"}
    assert first.content[0] is messages[1].content[0]
    assert first.content[1]["input"] == {"path": "f0.py", "content": "[cleared]"}
    assert first.content[1]["id"] == "c0"
    assert messages[1].tool_calls[0]["args"]["content"] == "y" * 120  # the input is untouched


def test_a_message_changed_in_place_is_read_again() -> None:
    converter = LangChainMessages()
    msg = ToolMessage("short", tool_call_id="c1")
    first = converter.body([msg]).body["messages"][0]
    assert converter.body([msg]).body["messages"][0] is first
    msg.content = "longer now"
    assert converter.body([msg]).body["messages"][0]["content"] == "longer now"
    msg.status = "error"
    assert converter.body([msg]).errors == {"c1"}


def test_a_call_without_a_result_gets_one_in_the_request_only() -> None:
    policy = make_policy(repair={"missing_result": "{tool} never ran"})
    messages = [*rounds(1), AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "x"}])]
    messages.append(HumanMessage("stop", id="h1"))
    out = edited(policy, messages)
    assert [type(m).__name__ for m in out[-3:]] == ["AIMessage", "ToolMessage", "HumanMessage"]
    synthetic = out[-2]
    assert synthetic.content == "ls never ran"
    assert synthetic.status == "error"
    assert synthetic.name == "ls"
    assert out[-3] is messages[-2]
    assert out[-1] is messages[-1]
    assert len(messages) == 5  # the history is untouched


def test_ctxwin_cache_markers_stay_out_of_langchain_messages() -> None:
    """ctxwin's own breakpoints (``cache_breakpoints: auto``) are not carried over: a
    message that only got one is handed on as it is."""
    policy = make_policy(cache_breakpoints="auto")
    messages = rounds(6, size=400)
    run = LangChainRun(policy)
    chat = run.body(messages)
    result = run.apply(chat, "gpt-5.6")
    assert any(m.cache for m in result.conversation.messages)
    out = run.back(chat, result).messages
    assert all("prompt_cache_breakpoint" not in str(m.content) for m in out)
    assert all(m is o for m, o in zip(out, messages, strict=True))


def test_a_message_of_an_unknown_type_is_refused_with_its_place() -> None:
    with pytest.raises(ctxwin.FormatError, match="RemoveMessage") as info:
        LangChainMessages().body([HumanMessage("hi"), RemoveMessage(id="x")])
    assert info.value.path == "messages[1]"


def test_a_missing_framework_says_which_extra_to_install() -> None:
    with pytest.raises(ImportError, match=r"pip install 'ctxwin\[langchain\]'"):
        require("langchain_not_installed.agents", "langchain")


def test_the_middleware_is_an_agent_middleware() -> None:
    from langchain.agents.middleware import AgentMiddleware

    middleware = CtxwinMiddleware(make_policy())
    assert isinstance(middleware, AgentMiddleware)
    assert middleware.name == "CtxwinMiddleware"
    assert type(middleware).wrap_model_call is not AgentMiddleware.wrap_model_call
    assert type(middleware).awrap_model_call is not AgentMiddleware.awrap_model_call
