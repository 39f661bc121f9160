"""Reasoning in LangChain's AI messages, in the shapes the chat models produce it
(ChatAnthropic's thinking blocks, ChatOpenAI's Responses reasoning in ``responses/v1``,
``v0`` and the v1 standard blocks, ChatGoogleGenerativeAI's thought signatures): sent back
as it came, counted as its provider reads it, kept where the provider needs it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import ctxwin
from ctxwin.formats._responses_items import ENCRYPTED_REASONING
from ctxwin.formats.openai_responses import OpenAIResponsesAdapter
from ctxwin.integrations._lc import LangChainRun
from ctxwin.integrations.langchain import CtxwinMiddleware
from ctxwin.integrations.langgraph import pre_model_hook
from ctxwin.testing import FakeCounter
from tests.integrations.lc_kit import TOOLS, RecordingModel, as_body, make_policy, words

ENCRYPTED = "gAAAAB" + "q" * 3_000  # an encrypted_content: ASCII without spaces
SIGNATURE = "EqQBCkgIARABGAIiQL" + "s" * 600


def call(i: int) -> dict[str, Any]:
    args = {"path": f"f{i}.py", "content": words(300)}
    return {"name": "write_file", "args": args, "id": f"call_{i}", "type": "tool_call"}


# ------------------------------------------------------------- the chat models' shapes


def anthropic(i: int, thinking: bool = True) -> AIMessage:
    """ChatAnthropic: thinking, redacted thinking, text and the call's ``tool_use``."""
    c = call(i)
    opening = [
        {"type": "thinking", "thinking": words(80, "plan"), "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": "R" * 400},
    ]
    use = {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
    text = {"type": "text", "text": f"writing f{i}.py"}
    return AIMessage([*(opening if thinking else []), text, use], tool_calls=[c], id=f"a{i}")


def responses(i: int) -> AIMessage:
    """ChatOpenAI on the Responses API, ``output_version="responses/v1"`` (its default)."""
    c = call(i)
    reasoning = {
        "type": "reasoning",
        "id": f"rs_{i}",
        "summary": [{"type": "summary_text", "text": words(60, "sum")}],
        "encrypted_content": ENCRYPTED,
    }
    fc = {
        "type": "function_call",
        "name": c["name"],
        "arguments": json.dumps(c["args"]),
        "call_id": c["id"],
        "id": f"fc_{i}",
        "status": "completed",
    }
    return AIMessage([reasoning, fc], tool_calls=[c], id=f"resp_{i}")


def responses_v0(i: int) -> AIMessage:
    """ChatOpenAI, ``output_version="v0"``: the reasoning item in ``additional_kwargs``,
    which langchain-core's ``_convert_from_v03_ai_message`` sends back first."""
    c = call(i)
    kwargs = {
        "reasoning": {
            "type": "reasoning",
            "id": f"rs_{i}",
            "summary": [{"type": "summary_text", "text": words(60, "sum")}],
            "encrypted_content": ENCRYPTED,
        },
        "__openai_function_call_ids__": {c["id"]: f"fc_{i}"},
    }
    return AIMessage(
        [],
        additional_kwargs=kwargs,
        tool_calls=[c],
        response_metadata={"id": f"resp_{i}"},
        id=f"msg_{i}",
    )


def standard(i: int) -> AIMessage:
    """LangChain's v1 standard blocks (``output_version="v1"``) of a Responses answer: one
    block per summary part, the encrypted content in the first one's ``extras``."""
    c = call(i)
    first = {
        "type": "reasoning",
        "reasoning": words(30, "sum"),
        "id": f"rs_{i}",
        "extras": {"encrypted_content": ENCRYPTED},
    }
    second = {"type": "reasoning", "reasoning": words(30, "more"), "id": f"rs_{i}"}
    block = {"type": "tool_call", "id": c["id"], "name": c["name"], "args": c["args"]}
    return AIMessage([first, second, block], tool_calls=[c], id=f"lc_run-{i}")


def gemini(i: int) -> AIMessage:
    """ChatGoogleGenerativeAI: a thought with its signature, and the calls' signatures in
    ``additional_kwargs`` by call id (with the legacy ``function_call`` it also sets)."""
    c = call(i)
    kwargs = {
        "function_call": {"name": c["name"], "arguments": json.dumps(c["args"])},
        "__gemini_function_call_thought_signatures__": {c["id"]: SIGNATURE},
    }
    thought = {"type": "thinking", "thinking": words(80, "plan"), "signature": SIGNATURE}
    return AIMessage([thought], additional_kwargs=kwargs, tool_calls=[c], id=f"g{i}")


SHAPES: dict[str, Callable[[int], AIMessage]] = {
    "anthropic": anthropic,
    "responses/v1": responses,
    "v0": responses_v0,
    "v1": standard,
    "gemini": gemini,
}


def history(shape: str, n: int = 6, result: int = 3_000) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("go", id="h0")]
    for i in range(n):
        out += [SHAPES[shape](i), ToolMessage(words(result), tool_call_id=f"call_{i}", id=f"t{i}")]
    return out


def sent(messages: list[BaseMessage], policy: ctxwin.Policy, model: str | None = None) -> Any:
    run = LangChainRun(policy)
    chat = run.body(messages)
    return run.back(chat, run.apply(chat, model)).messages


def reasoning_of(msg: BaseMessage) -> list[Any]:
    """Everything of ``msg`` that is not its calls: its blocks but the call blocks, its
    ``additional_kwargs``."""
    calls = ("tool_use", "function_call", "tool_call")
    blocks = [b for b in msg.content if isinstance(b, dict) and b.get("type") not in calls]
    return [*blocks, msg.additional_kwargs]


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("shape", SHAPES)
def test_an_unedited_history_reaches_the_model_as_the_same_objects(shape: str) -> None:
    messages = history(shape, n=2, result=50)
    model = RecordingModel(messages=iter([AIMessage("done", id="end")]))
    agent = create_agent(model, TOOLS, middleware=[CtxwinMiddleware(make_policy())])
    agent.invoke({"messages": messages})
    (received,) = model.received
    assert all(a is b for a, b in zip(received, messages, strict=True))


@pytest.mark.parametrize("shape", SHAPES)
def test_an_edited_message_keeps_its_reasoning_in_place(shape: str) -> None:
    """The window clears the first round and shortens its call's arguments: the message
    is a copy with new arguments, every reasoning block the very dict, in its place, and
    ``additional_kwargs`` (v0 reasoning, Gemini's signatures) the very dict."""
    messages = history(shape)
    dumps = [m.model_dump() for m in messages]
    first = sent(messages, make_policy())[1]
    given = messages[1]
    assert first is not given
    assert first.tool_calls[0]["args"] == {"path": "f0.py", "content": "[cleared]"}
    assert first.id == given.id
    assert [b.get("type") for b in first.content] == [b.get("type") for b in given.content]
    assert all(a is b for a, b in zip(reasoning_of(first), reasoning_of(given), strict=True))
    assert [m.model_dump() for m in messages] == dumps


def test_call_blocks_carry_the_cleared_arguments_next_to_their_reasoning() -> None:
    """What each chat model sends for the call (the ``tool_use`` input, the Responses
    ``function_call`` arguments) is cleared as its tool call is."""
    cleared = {"path": "f0.py", "content": "[cleared]"}
    assert sent(history("anthropic"), make_policy())[1].content[3]["input"] == cleared
    block = sent(history("responses/v1"), make_policy())[1].content[1]
    assert json.loads(block["arguments"]) == cleared
    assert block["id"] == "fc_0"


@pytest.mark.parametrize("shape", SHAPES)
def test_the_hook_sends_an_unedited_history_as_it_is(shape: str) -> None:
    messages = history(shape, n=2, result=50)
    out = pre_model_hook(make_policy()).invoke({"messages": messages})["llm_input_messages"]
    assert all(a is b for a, b in zip(out, messages, strict=True))


# ---------------------------------------------------------------------- counting


def policy() -> ctxwin.Policy:
    return ctxwin.Policy({"context_window": 1_000_000}, counter=FakeCounter())


def lc_tokens(messages: list[BaseMessage]) -> int:
    run = LangChainRun(policy())
    return run.apply(run.body(messages)).report.tokens_before


def direct_tokens(body: dict[str, Any], fmt: str) -> int:
    return policy().apply(body, fmt).report.tokens_before


def without_reasoning(msg: AIMessage) -> AIMessage:
    blocks = [b for b in msg.content if b.get("type") not in ("thinking", "redacted_thinking")]
    blocks = [b for b in blocks if b.get("type") != "reasoning"]
    return msg.model_copy(update={"content": blocks, "additional_kwargs": {}})


def reasoning_tokens(msg: AIMessage) -> int:
    """The tokens the reasoning of ``msg`` adds to a request, on the LangChain path."""
    rest = [HumanMessage("go"), ToolMessage("ok", tool_call_id=msg.tool_calls[0]["id"])]
    return lc_tokens([rest[0], msg, rest[1]]) - lc_tokens(
        [rest[0], without_reasoning(msg), rest[1]]
    )


def test_thinking_counts_as_the_anthropic_adapter_counts_it() -> None:
    msg = anthropic(0)
    blocks = [b for b in msg.content if b["type"] != "tool_use"]
    use = msg.content[-1]

    def body(reasoning: bool) -> dict[str, Any]:
        content = [b for b in blocks if reasoning or b["type"] == "text"] + [use]
        result = {"type": "tool_result", "tool_use_id": "call_0", "content": "ok"}
        return {
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": content},
                {"role": "user", "content": [result]},
            ]
        }

    direct = direct_tokens(body(True), "anthropic") - direct_tokens(body(False), "anthropic")
    assert reasoning_tokens(msg) == direct > 0


def responses_body(reasoning: bool) -> dict[str, Any]:
    """The Responses input ChatOpenAI sends for ``responses(0)``."""
    msg = responses(0)
    items = [b for b in msg.content if reasoning or b["type"] != "reasoning"]
    output = {"type": "function_call_output", "call_id": "call_0", "output": "ok"}
    return {"input": [{"role": "user", "content": "go"}, *items, output]}


def test_encrypted_reasoning_counts_as_the_responses_adapter_counts_its_item() -> None:
    """What OpenAI reads of an encrypted reasoning item (``ENCRYPTED_REASONING``), not its
    JSON text with the summary: 2.6 times as much was counted."""
    fmt = "openai-responses"
    direct = direct_tokens(responses_body(True), fmt) - direct_tokens(responses_body(False), fmt)
    item = OpenAIResponsesAdapter.overheads.message  # the reasoning item is a message there
    assert reasoning_tokens(responses(0)) == direct - item
    assert reasoning_tokens(responses(0)) == ENCRYPTED_REASONING.tokens(responses(0).content[0])


def test_encrypted_reasoning_in_a_standard_block_counts_as_the_item_it_is_sent_as() -> None:
    """ChatOpenAI merges the v1 blocks of one id into one item, ``extras`` at its top."""
    msg = standard(0)
    item = {"encrypted_content": ENCRYPTED}
    second = lc_tokens([HumanMessage("go"), msg.model_copy(update={"content": msg.content[1:]})])
    assert lc_tokens([HumanMessage("go"), msg]) - second == ENCRYPTED_REASONING.tokens(item)


def test_a_v0_reasoning_item_in_additional_kwargs_is_counted() -> None:
    """ChatOpenAI sends it back as the turn's first item: it counted nothing."""
    msg = responses_v0(0)
    fmt = "openai-responses"
    direct = direct_tokens(responses_body(True), fmt) - direct_tokens(responses_body(False), fmt)
    assert reasoning_tokens(msg) >= direct > 0  # its JSON text: an upper bound


def test_a_v0_reasoning_item_replaced_is_counted_again() -> None:
    """The converted message is remembered: replacing the item, in place or by a new one
    (as streaming chunks are merged), converts it again."""
    run = LangChainRun(policy())
    msg = responses_v0(0)
    messages = [HumanMessage("go"), msg, ToolMessage("ok", tool_call_id="call_0")]
    before = run.apply(run.body(messages)).report.tokens_before
    msg.additional_kwargs["reasoning"]["summary"][0]["text"] += " " + words(100, "x")
    assert run.apply(run.body(messages)).report.tokens_before == before + 100
    item = msg.additional_kwargs["reasoning"]
    msg.additional_kwargs["reasoning"] = {**item, "summary": []}
    assert run.apply(run.body(messages)).report.tokens_before < before


# ------------------------------------------------------------------ drops


def thinking_turn(shape: str, rounds: int = 12) -> list[BaseMessage]:
    """An agent turn with thinking on: only the first model message thinks (as without
    interleaved thinking), in ChatAnthropic's blocks or in v1 standard ones."""
    out: list[BaseMessage] = [HumanMessage("do the task", id="h0")]
    for i in range(rounds):
        msg = anthropic(i, thinking=i == 0)
        if shape == "v1" and i == 0:
            opening = {"type": "reasoning", "reasoning": words(80), "extras": {"signature": "s"}}
            msg = msg.model_copy(update={"content": [opening, *msg.content[2:]]})
        out += [msg, ToolMessage(words(20), tool_call_id=f"call_{i}", id=f"t{i}")]
    return out


DROPPING: dict[str, Any] = {"context_window": 1_200, "overflow": "drop_oldest_rounds"}


def assert_valid(out: list[BaseMessage]) -> None:
    """No AI message left empty, every tool message right after the call it answers."""
    for k, m in enumerate(out):
        if isinstance(m, AIMessage):
            assert m.content or m.tool_calls
        if isinstance(m, ToolMessage):
            j = k - 1
            while isinstance(out[j], ToolMessage):
                j -= 1
            assert m.tool_call_id in {c["id"] for c in out[j].tool_calls}
    assert ctxwin.check(as_body(out), "openai-chat") == []


@pytest.mark.parametrize("shape", ["anthropic", "v1"])
@pytest.mark.parametrize("strategy", ["cost", "threshold"])
def test_a_drop_keeps_the_thinking_that_opens_the_turn(shape: str, strategy: str) -> None:
    """With thinking on, Anthropic refuses a turn whose first assistant message does not
    start with its thinking ("a final assistant message must start with a thinking
    block"): the drop took that round and ChatAnthropic sent the next, starting with text."""
    messages = thinking_turn(shape)
    dumps = [m.model_dump() for m in messages]
    pol = ctxwin.Policy({**DROPPING, "window": {"strategy": strategy}}, counter=FakeCounter())
    out = sent(messages, pol, "claude-sonnet-4-5")
    assert len(out) < len(messages)
    assert out[1] is messages[1]  # the turn's opening message, its thinking first
    assert out[2].tool_call_id == "call_0"
    assert_valid(out)
    assert [m.model_dump() for m in messages] == dumps


def test_the_middleware_keeps_the_thinking_that_opens_the_turn() -> None:
    messages = thinking_turn("anthropic")
    model = RecordingModel(messages=iter([AIMessage("done", id="end")]))
    middleware = CtxwinMiddleware(ctxwin.Policy(DROPPING, counter=FakeCounter()))
    create_agent(model, TOOLS, middleware=[middleware]).invoke({"messages": messages})
    (out,) = model.received
    assert len(out) < len(messages)
    assert out[1] is messages[1]
    assert_valid(out)


def test_the_hook_keeps_the_thinking_that_opens_the_turn() -> None:
    messages = thinking_turn("anthropic")
    hook = pre_model_hook(ctxwin.Policy(DROPPING, counter=FakeCounter()))
    out = hook.invoke({"messages": messages})["llm_input_messages"]
    assert len(out) < len(messages)
    assert out[1] is messages[1]
    assert_valid(out)


@pytest.mark.parametrize("shape", SHAPES)
def test_dropped_rounds_go_whole_with_their_reasoning(shape: str) -> None:
    """Rounds of an earlier turn dropped: their messages go entirely (no AI message left
    without content, no tool message without its call); the rest are the given objects."""
    messages = [*history(shape, n=8, result=400), HumanMessage("next", id="h1")]
    messages += history(shape, n=2, result=20)[1:]
    dumps = [m.model_dump() for m in messages]
    out = sent(
        messages, ctxwin.Policy({**DROPPING, "context_window": 3_000}, counter=FakeCounter())
    )
    assert len(out) < len(messages)
    kept = [m for m in out if any(m is g for g in messages)]
    assert len(kept) >= len(out) - 2  # edited: at most a cleared call and its result
    assert_valid(out)
    assert [m.model_dump() for m in messages] == dumps


# ------------------------------------------------------------ clear_reasoning


@pytest.mark.parametrize("shape", SHAPES)
def test_clear_reasoning_leaves_reasoning_that_comes_with_its_calls(shape: str) -> None:
    """Reasoning in a message with calls is no reasoning item of its own: the window clears
    the old results and arguments and leaves each reasoning block where it is (ChatOpenAI
    sends the ``function_call`` with its ``fc_`` id, which OpenAI refuses without its
    reasoning item; Anthropic wants the turn's thinking)."""
    messages = history(shape)
    pol = make_policy(window={"trigger": 0.6, "target": 0.3, "clear_reasoning": True})
    out = sent(messages, pol)
    assert [m.id for m in out] == [m.id for m in messages]
    assert out[2].content != messages[2].content  # the first result was cleared
    for a, b in zip(out, messages, strict=True):
        if isinstance(b, AIMessage):
            assert all(x is y for x, y in zip(reasoning_of(a), reasoning_of(b), strict=True))


def test_clear_reasoning_drops_an_old_message_that_is_only_reasoning() -> None:
    """A Responses answer that is nothing but its reasoning item (its output cut short)
    is a reasoning item: cleared with the round before it, from that message only."""
    messages = history("responses/v1", n=4)
    only = AIMessage([dict(responses(9).content[0], id="rs_only")], id="resp_only")
    messages[3:3] = [only]  # after the first round's result
    messages.insert(4, HumanMessage("go on", id="h1"))
    window = {"strategy": "threshold", "target": 0.3, "clear_reasoning": True}
    out = sent(messages, make_policy(context_window=12_000, window=window))
    assert "resp_only" not in [m.id for m in out]
    assert [m.id for m in out] == [m.id for m in messages if m.id != "resp_only"]
    for a in out:
        b = next(m for m in messages if m.id == a.id)
        if isinstance(b, AIMessage):
            assert a.content[0] is b.content[0]
    assert_valid(out)


def test_one_policy_serving_chat_bodies_and_langchain_counts_each_as_its_own() -> None:
    """Parses, pairings and meters are kept per adapter variant: a policy that first read
    the same body as a plain Chat body (reasoning as JSON text) counts the LangChain
    request as a fresh policy does, and the other way round."""
    run = LangChainRun(policy())
    chat = run.body([HumanMessage("go"), responses(0), ToolMessage("ok", tool_call_id="call_0")])
    plain = policy().apply(chat.body, "openai-chat").report.tokens_before
    fresh = LangChainRun(policy()).apply(chat).report.tokens_before
    assert plain != fresh  # the two read the encrypted reasoning differently
    assert run.policy.apply(chat.body, "openai-chat").report.tokens_before == plain
    assert run.apply(chat).report.tokens_before == fresh
    assert run.policy.apply(chat.body, "openai-chat").report.tokens_before == plain
