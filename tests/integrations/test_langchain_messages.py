"""LangChain messages to an OpenAI Chat body and back: the cases an agent run does not
reach (Anthropic-shaped AI messages, mutated messages, synthetic results, cache markers,
messages ctxwin cannot read, a missing framework)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

import ctxwin
from ctxwin.formats._lc_calls import CALL_BLOCKS
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
    assert converter.body([msg]).body["messages"][0]["status"] == "error"


def test_a_long_history_converted_again_gives_the_very_same_dicts() -> None:
    """The converter's memo kept 64 messages: ``ENTRIES`` of memo.py was rebound to the
    prefix caches' 64 before this module imported it (review s50-5), so a history past 64
    messages was turned into new dicts at every request and every identity memo of the
    engine missed (557 ms an apply at 600 messages, 9 ms with the memo kept)."""
    converter = LangChainMessages()
    messages = rounds(150, size=20)  # 301 messages
    first = converter.body(messages).body["messages"]
    again = converter.body(messages).body["messages"]
    assert len(again) == 301
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_a_call_or_content_block_edited_inside_is_read_again() -> None:
    """Lists and dicts a message holds are mutable too: an argument edited in place, or a
    content block changed, converts the message again (a reused converter sent the old
    arguments, counted as they were, over the window)."""
    converter = LangChainMessages()
    msg = AIMessage(
        [{"type": "text", "text": "reading"}],
        tool_calls=[{"name": "read_file", "args": {"path": "a.py"}, "id": "c1"}],
    )
    first = converter.body([msg]).body["messages"][0]
    assert converter.body([msg]).body["messages"][0] is first  # unchanged: the memo hits
    msg.tool_calls[0]["args"]["path"] = "x" * 50
    again = converter.body([msg]).body["messages"][0]
    assert again["tool_calls"][0]["function"]["arguments"] == '{"path": "' + "x" * 50 + '"}'
    msg.content[0]["text"] = "reading on"
    assert converter.body([msg]).body["messages"][0]["content"][0]["text"] == "reading on"


def test_a_grown_argument_in_an_old_round_is_counted_by_a_reused_run() -> None:
    policy = make_policy()
    run = LangChainRun(policy)
    messages = rounds(3, size=50)
    before = run.apply(run.body(messages)).report.tokens_before
    messages[1].tool_calls[0]["args"]["content"] = words(5_000)
    grown = run.apply(run.body(messages)).report.tokens_before
    assert (
        grown
        == LangChainRun(policy).apply(LangChainRun(policy).body(messages)).report.tokens_before
    )
    assert grown > before + 4_000


def invalid_call_history() -> list[Any]:
    """The model wrote malformed arguments once; LangChain's agent answered that call with
    an error ToolMessage, and its chat models send the call with the rest."""
    bad = AIMessage(
        "",
        id="a-bad",
        invalid_tool_calls=[
            {
                "name": "read_file",
                "args": "{bad",
                "id": "c9",
                "error": "bad json",
                "type": "invalid_tool_call",
            }
        ],
    )
    error = ToolMessage(
        "could not be executed: bad json", tool_call_id="c9", status="error", id="t9"
    )
    return [HumanMessage("hi", id="h0"), bad, error, HumanMessage("again", id="h1")]


def test_an_invalid_tool_call_is_a_call_its_error_result_answers() -> None:
    """Not an orphan to drop: the chat model sends the call, so the result must go too."""
    messages = invalid_call_history()
    chat = LangChainMessages().body(messages)
    call = chat.body["messages"][1]["tool_calls"][0]
    assert call == {
        "id": "c9",
        "type": "function",
        "function": {"name": "read_file", "arguments": "{bad"},
    }
    assert ctxwin.check(chat.body) == []
    run = LangChainRun(make_policy())
    result = run.apply(chat)
    assert result.fixes == ()
    assert run.back(chat, result).messages == messages
    assert all(a is b for a, b in zip(run.back(chat, result).messages, messages, strict=True))


def test_an_invalid_call_stays_invalid_when_its_message_is_edited() -> None:
    """The window clears the valid call's long input (clear_tool_inputs): the message comes
    back with that call edited in tool_calls, and the invalid call, whose error result is
    never cleared, still in invalid_tool_calls as it was."""
    bad = AIMessage(
        "",
        id="a-bad",
        tool_calls=[{"name": "write_file", "args": {"content": words(300)}, "id": "c8"}],
        invalid_tool_calls=[
            {
                "name": "ls",
                "args": "{bad",
                "id": "c9",
                "error": "bad json",
                "type": "invalid_tool_call",
            }
        ],
    )
    results = [
        ToolMessage(words(3_000), tool_call_id="c8", id="t8"),
        ToolMessage("could not be executed: bad json", tool_call_id="c9", status="error", id="t9"),
    ]
    messages = [HumanMessage("go", id="h0"), bad, *results, *rounds(6)[1:]]
    out = edited(make_policy(), messages)
    first = out[1]
    assert first is not bad
    assert first.tool_calls[0]["args"] == {"content": "[cleared]"}
    assert first.invalid_tool_calls == bad.invalid_tool_calls
    assert first.invalid_tool_calls[0] is bad.invalid_tool_calls[0]
    assert out[3] is results[1]  # its error result goes with it
    assert bad.tool_calls[0]["args"] == {"content": words(300)}  # the input is untouched


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


def renamed_once(messages: list[Any]) -> tuple[LangChainRun, Any, ctxwin.Result]:
    """The run, its Chat body and the result of ``messages``, whose one repair is a rename."""
    run = LangChainRun(make_policy())
    chat = run.body(messages)
    result = run.apply(chat)
    assert [f.code for f in result.fixes] == ["renamed_duplicate_call_id"]
    return run, chat, result


def test_a_call_id_repeated_in_one_turn_goes_renamed_on_its_call_and_result() -> None:
    """Repair renames the second ``call_0`` of one turn (a server numbering parallel calls
    alike) on the ``tool_calls`` entry and its ``ToolMessage`` both, as the middleware and
    LangGraph's hook and repair node send it."""
    from ctxwin.integrations.langgraph import pre_model_hook, repaired_messages

    calls = [
        {"name": "lookup", "args": {"q": q}, "id": "call_0", "type": "tool_call"} for q in "ab"
    ]
    messages = [
        HumanMessage("go", id="h"),
        AIMessage("", tool_calls=calls, id="a"),
        ToolMessage("ra", tool_call_id="call_0", id="t1"),
        ToolMessage("rb", tool_call_id="call_0", id="t2"),
    ]
    run, chat, result = renamed_once(messages)
    hook = pre_model_hook(make_policy())
    for sent in (
        run.back(chat, result).messages,
        hook.invoke({"messages": messages})["llm_input_messages"],
        repaired_messages(make_policy(), messages),
    ):
        assert [c["id"] for c in sent[1].tool_calls] == ["call_0", "call_0_2"]
        assert [m.tool_call_id for m in sent[2:]] == ["call_0", "call_0_2"]
        assert [m.text for m in sent[2:]] == ["ra", "rb"]


def test_a_renamed_call_goes_renamed_in_the_content_blocks_repeating_it() -> None:
    """ChatAnthropic sends an AI message's ``tool_use`` content blocks and adds the
    ``tool_calls`` they do not name: after repair renamed the second ``call_0`` of a turn,
    a block left with the old id sent that call twice (``call_0`` again, and ``call_0_2``
    added), which Anthropic refuses. The n-th block with an id is the n-th call with it,
    and each call keeps its own dict (its name) whatever id it shares."""
    calls = [
        {"name": name, "args": {"q": q}, "id": "call_0", "type": "tool_call"}
        for name, q in (("lookup", "a"), ("search", "b"))
    ]
    content = [{"type": "text", "text": "looking"}] + [
        {"type": "tool_use", "id": "call_0", "name": c["name"], "input": c["args"]} for c in calls
    ]
    messages = [
        HumanMessage("go", id="h"),
        AIMessage(content, tool_calls=calls, id="a"),
        ToolMessage("ra", tool_call_id="call_0", id="t1"),
        ToolMessage("rb", tool_call_id="call_0", id="t2"),
    ]
    run, chat, result = renamed_once(messages)
    ai = run.back(chat, result).messages[1]
    assert [(c["id"], c["name"], c["args"]) for c in ai.tool_calls] == [
        ("call_0", "lookup", {"q": "a"}),
        ("call_0_2", "search", {"q": "b"}),
    ]
    blocks = [b for b in ai.content if b["type"] == "tool_use"]
    assert [(b["id"], b["name"], b["input"]) for b in blocks] == [
        ("call_0", "lookup", {"q": "a"}),
        ("call_0_2", "search", {"q": "b"}),
    ]
    assert ai.content[0] == {"type": "text", "text": "looking"}


def test_a_valid_and_an_invalid_call_sharing_an_id_each_keep_their_own_dict() -> None:
    """A turn with a valid ``call_0`` and an invalid one (arguments that are no JSON):
    repair renames the second, and the message came back with no valid call and the invalid
    one twice (the valid ``lookup`` gone, its result answering ``search``). Each call is
    written back from the dict it was read from, by position."""
    valid = {"name": "lookup", "args": {"q": "a"}, "id": "call_0", "type": "tool_call"}
    bad = {"name": "search", "args": '{"q": "b"', "id": "call_0", "error": "bad json"}
    messages = [
        HumanMessage("go", id="h"),
        AIMessage(
            "", tool_calls=[valid], invalid_tool_calls=[{**bad, "type": "invalid_tool_call"}]
        ),
        ToolMessage("ra", tool_call_id="call_0", id="t1"),
        ToolMessage("error: bad json", tool_call_id="call_0", status="error", id="t2"),
    ]
    run, chat, result = renamed_once(messages)
    sent = run.back(chat, result).messages
    ai = sent[1]
    assert [(c["id"], c["name"], c["args"]) for c in ai.tool_calls] == [
        ("call_0", "lookup", {"q": "a"})
    ]
    assert [(c["id"], c["name"], c["args"]) for c in ai.invalid_tool_calls] == [
        ("call_0_2", "search", '{"q": "b"')
    ]
    assert [m.tool_call_id for m in sent[2:]] == ["call_0", "call_0_2"]


def test_only_the_tool_message_marked_error_is_an_error_when_call_ids_repeat() -> None:
    """Backends behind a proxy number their calls call_0 every turn: a later failing call of
    that id leaves the earlier successful result a success, summarized the same way in
    every request (flagged by id, it was capped once the error came, and the cached prefix
    broke)."""
    policy = ctxwin.load_policy(
        {"tools": {"run_tests": {"summarize": {"over_tokens": 20, "max_tokens": 30}}}},
        summarizer=lambda text, **kw: "60 tests failed",
    )

    def turn(content: str, status: str = "success") -> list[Any]:
        call = {"name": "run_tests", "args": {}, "id": "call_0"}
        return [
            AIMessage("", tool_calls=[call]),
            ToolMessage(content, tool_call_id="call_0", status=status),
        ]

    history = [HumanMessage("run the tests"), *turn(words(800))]
    first = edited(policy, history, "gpt-4.1")
    history += [*turn("Error: tool crashed", status="error"), HumanMessage("try again")]
    run = LangChainRun(policy)
    chat = run.body(history)
    result = run.apply(chat, "gpt-4.1")
    second = run.back(chat, result).messages
    assert first[2].content.startswith("[summary of run_tests output")
    assert second[2].content == first[2].content
    flags = [r.is_error for m in result.conversation.messages for r in m.tool_results]
    assert flags == [False, True]


def anthropic_result_history() -> list[Any]:
    """A call ChatAnthropic made, answered by a ``tool_result`` block in a HumanMessage
    (langchain-anthropic sends it as it is)."""
    call = {"name": "read_file", "args": {"path": "config.yaml"}, "id": "toolu_1"}
    use = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": call["args"]}
    answer = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "port: 8080"}
    return [
        HumanMessage("what is in config.yaml?"),
        AIMessage([use], tool_calls=[call]),
        HumanMessage([answer]),
    ]


def test_a_tool_result_block_in_a_human_message_is_refused_where_it_is() -> None:
    """ctxwin reads a LangChain history's results from its ToolMessages: a tool_result block
    it read as opaque content left the call unanswered, and repair added a second, invented
    result to a history that was valid."""
    with pytest.raises(ctxwin.FormatError) as info:
        edited(ctxwin.load_policy({}), anthropic_result_history(), "claude-sonnet-4-5")
    assert info.value.path == "messages[2].content[0]"
    assert str(info.value) == (
        "messages[2].content[0]: an Anthropic result block ('tool_result') in a LangChain "
        "message: ctxwin reads a LangChain history's tool results from its ToolMessages; "
        "answer the call with ToolMessage(content, tool_call_id=...) instead"
    )


def test_a_tool_result_block_is_refused_by_the_repair_too() -> None:
    with pytest.raises(ctxwin.FormatError) as info:
        LangChainRun(ctxwin.load_policy({})).repaired(anthropic_result_history())
    assert info.value.path == "messages[2].content[0]"


# ------------------------------------------------- calls held only in a content block

BLOCK_CALLS = {
    "tool_use": {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}},
    "function_call": {
        "type": "function_call",
        "call_id": "c1",
        "name": "read_file",
        "arguments": '{"path": "a.py"}',
        "id": "fc_1",
    },
    "tool_call": {"type": "tool_call", "id": "c1", "name": "read_file", "args": {"path": "a.py"}},
}
SENT_ARGS: dict[str, object] = {kind: {"path": "a.py"} for kind in BLOCK_CALLS}
BLOCK_CALLS["custom_tool_call"] = {
    "type": "custom_tool_call",
    "call_id": "c1",
    "name": "apply_patch",
    "input": "*** Begin Patch",
    "id": "ctc_1",
}
SENT_ARGS["custom_tool_call"] = {"__arg1": "*** Begin Patch"}  # as langchain-openai reads it


def block_call_history(block: dict[str, Any]) -> list[Any]:
    """A call an AI message holds in its content only (``tool_calls=[]``): an AIMessage
    built from Anthropic's content blocks, an older stored history."""
    return [
        HumanMessage("what is in a.py?", id="h1"),
        AIMessage([{"type": "text", "text": "Let me read it."}, block], id="a1"),
        ToolMessage("print('hello')", tool_call_id="c1", id="t1"),
        HumanMessage("thanks, now summarize", id="h2"),
    ]


@pytest.mark.parametrize("kind", sorted(BLOCK_CALLS))
def test_a_call_held_only_in_a_content_block_keeps_its_tool_message(kind: str) -> None:
    """ctxwin read calls from ``tool_calls`` only: the ToolMessage answering a block's call
    was dropped as an orphan, and the chat model sent the block unanswered (Anthropic: 400),
    where the history was valid."""
    messages = block_call_history(BLOCK_CALLS[kind])
    run = LangChainRun(ctxwin.load_policy({}))
    chat = run.body(messages)
    result = run.apply(chat, "claude-sonnet-4-5")
    assert result.fixes == ()
    sent = run.back(chat, result).messages
    assert len(sent) == len(messages)
    assert all(a is b for a, b in zip(sent, messages, strict=True))
    assert run.repaired(messages, "claude-sonnet-4-5") == (messages, [])
    assert chat.body["messages"][1]["content"] == [{"type": "text", "text": "Let me read it."}]
    call = chat.body["messages"][1]["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("c1", BLOCK_CALLS[kind]["name"])
    assert json.loads(call["function"]["arguments"]) == SENT_ARGS[kind]


@pytest.mark.parametrize("kind", ["function_call", "tool_call", "tool_use"])
def test_a_cleared_call_held_only_in_a_block_is_cleared_in_that_block(kind: str) -> None:
    """The block is the call: its arguments go cleared in it, and no ``tool_calls`` entry
    is added to the message."""
    block = BLOCK_CALLS[kind]
    id_key, args_key = CALL_BLOCKS[kind]
    messages: list[Any] = [HumanMessage("go", id="h0")]
    for i in range(8):
        args = {"path": f"f{i}.py", "content": "y" * 120}
        value: object = json.dumps(args) if kind == "function_call" else args
        call = {**block, id_key: f"c{i}", args_key: value}
        messages.append(AIMessage([{"type": "text", "text": f"writing f{i}"}, call], id=f"a{i}"))
        messages.append(ToolMessage(words(3_000), tool_call_id=f"c{i}", id=f"t{i}"))
    out = edited(make_policy(), messages)
    assert len(out) == len(messages)
    first = out[1]
    assert first.tool_calls == []
    assert first.invalid_tool_calls == []
    assert first.content[0] is messages[1].content[0]
    cleared = first.content[1][args_key]
    cleared = json.loads(cleared) if isinstance(cleared, str) else cleared
    assert cleared == {"path": "f0.py", "content": "[cleared]"}
    assert first.content[1][id_key] == "c0"
    assert messages[1].content[1][args_key] == block_value(kind)  # the input is untouched


def test_a_block_call_beside_an_invalid_call_goes_back_in_its_block_only() -> None:
    """Calls are the message's ``tool_calls``, its invalid ones, then those of its blocks:
    a cleared block call written back by position stays out of ``invalid_tool_calls``."""
    messages: list[Any] = [HumanMessage("go", id="h0")]
    for i in range(8):
        bad = {"name": "read_file", "args": "{bad", "id": f"bad{i}", "error": "bad json"}
        args = {"path": f"f{i}.py", "content": "y" * 120}
        use = {"type": "tool_use", "id": f"c{i}", "name": "write_file", "input": args}
        messages += [
            AIMessage([use], invalid_tool_calls=[bad], id=f"a{i}"),
            ToolMessage("error: bad json", tool_call_id=f"bad{i}", status="error"),
            ToolMessage(words(3_000), tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    first = edited(make_policy(), messages)[1]
    assert first.tool_calls == []
    assert [c["id"] for c in first.invalid_tool_calls] == ["bad0"]
    assert [b["id"] for b in first.content] == ["c0"]
    assert first.content[0]["input"] == {"path": "f0.py", "content": "[cleared]"}


def block_value(kind: str) -> object:
    args = {"path": "f0.py", "content": "y" * 120}
    return json.dumps(args) if kind == "function_call" else args


@pytest.mark.parametrize(
    ("block", "where", "says"),
    [
        (
            {"type": "tool_use", "id": "c1", "name": "read_file", "input": ["a.py"]},
            "messages[1].content[0].input",
            "the input of the 'tool_use' block of call 'c1' is not an object (a list)",
        ),
        (
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": {}},
            "messages[1].content[0].arguments",
            "the arguments of the 'function_call' block of call 'c1' are not its JSON text "
            "(a dict)",
        ),
        (
            {"type": "tool_call", "id": "c1", "args": {}},
            "messages[1].content[0]",
            "a 'tool_call' block of call 'c1' with no tool name (its 'name')",
        ),
    ],
)
def test_a_call_block_ctxwin_cannot_read_is_refused_where_it_is(
    block: dict[str, Any], where: str, says: str
) -> None:
    """Rather than read the block as opaque content and drop the ToolMessage answering it."""
    messages = [
        HumanMessage("go", id="h0"),
        AIMessage([block], id="a1"),
        ToolMessage("r", tool_call_id="c1", id="t1"),
    ]
    for run in (
        lambda: edited(ctxwin.load_policy({}), messages),
        lambda: LangChainRun(ctxwin.load_policy({})).repaired(messages),
    ):
        with pytest.raises(ctxwin.FormatError) as info:
            run()
        assert info.value.path == where
        assert str(info.value) == f"{where}: {says}"


def test_a_tool_message_answering_an_id_only_an_unread_block_holds_is_refused() -> None:
    """A block ctxwin reads no call from (here a ``non_standard`` wrapper) may still be the
    call a ToolMessage answers: a FormatError at that block, never the ToolMessage dropped
    (repair_messages would delete it from the graph's state)."""
    wrapped = {"type": "non_standard", "value": BLOCK_CALLS["tool_use"]}
    messages = block_call_history(wrapped)
    where = "messages[1].content[1]"
    says = (
        "a ToolMessage after it answers call 'c1', which this 'non_standard' block "
        "holds, but ctxwin reads calls only from tool_calls, invalid_tool_calls and "
        "'tool_use', 'tool_call', 'function_call' and 'custom_tool_call' blocks; put the "
        "call in tool_calls"
    )
    for run in (
        lambda: edited(ctxwin.load_policy({}), messages),
        lambda: LangChainRun(ctxwin.load_policy({})).repaired(messages),
    ):
        with pytest.raises(ctxwin.FormatError) as info:
            run()
        assert info.value.path == where
        assert str(info.value) == f"{where}: {says}"
