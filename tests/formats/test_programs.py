"""Programmatic tool calling and server tools: what ties their blocks across messages, as
the adapters read it, and what the check says of a block whose call is gone."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin import Policy
from ctxwin._core.model import Opaque, ToolCall

CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
PROGRAM = {"type": "program", "caller_id": "prog_1"}


def _anthropic_program() -> list[dict[str, Any]]:
    """A program run in code execution: it calls ``query`` twice, the second time after a
    pause (the client's result), then its result comes with a direct call."""
    return [
        {"role": "user", "content": "sum the sales"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "code_execution",
                    "input": {"code": "await query('x')"},
                },
                {"type": "tool_use", "id": "c1", "name": "query", "input": {}, "caller": CALLER},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "1"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "code_execution_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {"type": "code_execution_result", "stdout": "1", "return_code": 0},
                },
                {"type": "tool_use", "id": "c2", "name": "query", "input": {}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "2"}]},
    ]


def _responses_program() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "sum the sales"},
        {"type": "program", "id": "pg_1", "call_id": "prog_1", "code": "x", "fingerprint": "f"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "q",
            "arguments": "{}",
            "caller": PROGRAM,
        },
        {"type": "function_call_output", "call_id": "c1", "output": "1", "caller": PROGRAM},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "caller": PROGRAM},
        {
            "type": "program_output",
            "id": "po_1",
            "call_id": "prog_1",
            "result": "1",
            "status": "completed",
        },
    ]


# ------------------------------------------------------------------------- Anthropic


def test_anthropic_server_tool_use_opens_its_id() -> None:
    block = ctxwin.parse({"messages": _anthropic_program()}).messages[1].blocks[0]
    assert isinstance(block, Opaque)
    assert (block.opens, block.tie) == ("srvtoolu_1", None)


def test_anthropic_call_made_by_a_program_is_tied_to_it() -> None:
    block = ctxwin.parse({"messages": _anthropic_program()}).messages[1].blocks[1]
    assert isinstance(block, ToolCall)
    assert block.tie == "srvtoolu_1"


def test_anthropic_direct_call_is_tied_to_nothing() -> None:
    msgs = _anthropic_program()
    msgs[3]["content"][1]["caller"] = {"type": "direct"}
    block = ctxwin.parse({"messages": msgs}).messages[3].blocks[1]
    assert isinstance(block, ToolCall)
    assert block.tie is None


def test_anthropic_server_tool_result_is_tied_to_its_use() -> None:
    block = ctxwin.parse({"messages": _anthropic_program()}).messages[3].blocks[0]
    assert isinstance(block, Opaque)
    assert (block.opens, block.tie) == (None, "srvtoolu_1")


def test_anthropic_server_tool_use_made_by_a_program_opens_and_is_tied() -> None:
    msgs = _anthropic_program()
    search = {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {}}
    msgs[1]["content"].append({**search, "caller": CALLER})
    block = ctxwin.parse({"messages": msgs}).messages[1].blocks[2]
    assert isinstance(block, Opaque)
    assert (block.opens, block.tie) == ("srvtoolu_2", "srvtoolu_1")


def test_anthropic_program_round_trips_unchanged() -> None:
    body = {"messages": _anthropic_program()}
    assert Policy({}, format="anthropic").apply(body).request == body


def test_anthropic_check_accepts_a_program_across_messages() -> None:
    assert ctxwin.check({"messages": _anthropic_program()}) == []


def test_anthropic_check_names_a_server_tool_result_without_its_use() -> None:
    """What the API answers (anthropics/claude-code#62577): the result's server_tool_use
    must come before it, in this message or an earlier one."""
    msgs = [
        {"role": "user", "content": "ask"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "advisor_tool_result",
                    "tool_use_id": "srvtoolu_9",
                    "content": {"type": "advisor_result", "text": "x"},
                },
                {"type": "text", "text": "ok"},
            ],
        },
    ]
    problems = ctxwin.check({"messages": msgs})
    assert [(p.code, p.path, p.call_id) for p in problems] == [
        ("orphan_result", "messages[1].content[0]", "srvtoolu_9")
    ]
    assert problems[0].message == (
        "messages.1.content.0: unexpected `tool_use_id` found in `advisor_tool_result` "
        "blocks: srvtoolu_9. Each `advisor_tool_result` block must have a corresponding "
        "`server_tool_use` block before it."
    )


def test_repair_drops_a_server_tool_result_without_its_use() -> None:
    """A history cut by hand before a server tool's use: repair left the request as the API
    refuses it; the result goes, the rest of the message stays."""
    orphan = {
        "type": "advisor_tool_result",
        "tool_use_id": "srvtoolu_9",
        "content": {"type": "advisor_result", "text": "x"},
    }
    msgs = [
        {"role": "user", "content": "ask"},
        {"role": "assistant", "content": [orphan, {"type": "text", "text": "ok"}]},
    ]
    fixed, fixes = ctxwin.repair({"messages": msgs}, "anthropic")
    assert fixed["messages"][1]["content"] == [{"type": "text", "text": "ok"}]  # type: ignore[index]
    assert [(f.code, f.path, f.call_id) for f in fixes] == [
        ("dropped_orphan_result", "messages[1].content[0]", "srvtoolu_9")
    ]
    assert ctxwin.check(fixed, "anthropic") == []
    kept, none = ctxwin.repair({"messages": msgs}, "anthropic", server_state=True)
    assert (kept, none) == ({"messages": msgs}, [])


def test_anthropic_check_names_a_server_tool_result_before_its_use() -> None:
    msgs = _anthropic_program()
    use, call = msgs[1]["content"]
    result = msgs[3]["content"][0]
    msgs[1]["content"] = [result, use, call]
    msgs[3]["content"] = msgs[3]["content"][1:]
    problems = ctxwin.check({"messages": msgs})
    assert [(p.code, p.message_index, p.block_index) for p in problems] == [("orphan_result", 1, 0)]


def test_anthropic_check_names_an_mcp_result_without_its_use() -> None:
    msgs = [
        {"role": "user", "content": "ask"},
        {
            "role": "assistant",
            "content": [{"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": []}],
        },
    ]
    (problem,) = ctxwin.check({"messages": msgs})
    assert problem.message.endswith(
        "Each `mcp_tool_result` block must have a corresponding `mcp_tool_use` block before it."
    )


# -------------------------------------------------------------------- OpenAI Responses


def test_responses_program_opens_its_call_id() -> None:
    block = ctxwin.parse({"input": _responses_program()}).messages[1].blocks[0]
    assert isinstance(block, Opaque)
    assert (block.opens, block.tie) == ("prog_1", None)


def test_responses_program_output_is_tied_to_its_program() -> None:
    block = ctxwin.parse({"input": _responses_program()}).messages[5].blocks[0]
    assert isinstance(block, Opaque)
    assert (block.opens, block.tie) == (None, "prog_1")


def test_responses_call_made_by_a_program_is_tied_to_it() -> None:
    block = ctxwin.parse({"input": _responses_program()}).messages[2].blocks[0]
    assert isinstance(block, ToolCall)
    assert block.tie == "prog_1"


def test_responses_server_tool_item_made_by_a_program_is_tied_to_it() -> None:
    block = ctxwin.parse({"input": _responses_program()}).messages[4].blocks[0]
    assert isinstance(block, Opaque)
    assert block.tie == "prog_1"


def test_responses_program_round_trips_unchanged() -> None:
    body = {"input": _responses_program()}
    assert Policy({}, format="openai-responses").apply(body).request == body


def test_responses_check_accepts_a_program_with_its_items() -> None:
    assert ctxwin.check({"input": _responses_program()}) == []


def test_responses_check_names_a_program_output_without_its_program() -> None:
    items = [_responses_program()[0], _responses_program()[5]]
    problems = ctxwin.check({"input": items})
    assert [(p.code, p.path, p.call_id) for p in problems] == [
        ("orphan_result", "input[1]", "prog_1")
    ]
    assert problems[0].message == "program_output with call_id prog_1 has no program item before it"


def test_responses_check_names_a_program_item_without_its_program() -> None:
    items = [_responses_program()[0], _responses_program()[4]]
    (problem,) = ctxwin.check({"input": items})
    assert problem.message == (
        "web_search_call with caller.caller_id prog_1 has no program item before it"
    )


def test_responses_program_on_the_server_is_no_problem() -> None:
    """With previous_response_id the program may live on the server."""
    items = [_responses_program()[0], _responses_program()[5]]
    assert ctxwin.check({"input": items, "previous_response_id": "resp_1"}) == []


def test_responses_output_without_call_id_goes_with_its_program() -> None:
    """The SDK types a function_call_output's call_id as optional (openai 3.57.0): one a
    program made names its program in ``caller`` instead. It was a FormatError; it is read
    as the program's item, tied to it, and round-trips as it came. The program's call it
    answers counts as answered (the program went on past it): apply sends the history as
    it came, with no made-up "interrupted" output."""
    items = [
        *_responses_program()[:3],
        {"type": "function_call_output", "output": "1", "caller": PROGRAM},
    ]
    conv = ctxwin.parse({"input": items})
    block = conv.messages[3].blocks[0]
    assert isinstance(block, Opaque)
    assert (conv.messages[3].role, block.kind, block.tie) == (
        "assistant",
        "function_call_output",
        "prog_1",
    )
    assert ctxwin.render(conv) == {"input": items}
    assert ctxwin.check({"input": items}) == []
    done = [
        *items,
        _responses_program()[5],
        {"type": "message", "role": "assistant", "content": "the sum is 1"},
        {"role": "user", "content": "thanks"},
    ]
    result = ctxwin.Policy({}).apply({"input": done})
    assert result.request == {"input": done}
    assert not result.report.fixes


def test_responses_program_call_not_answered_yet_is_still_missing() -> None:
    """A program's call with nothing of its program after it is waiting for its output:
    sent so, the API refuses it, and repair answers it."""
    items = _responses_program()[:3]
    assert [(p.code, p.call_id) for p in ctxwin.check({"input": items})] == [
        ("missing_result", "c1")
    ]


def test_anthropic_check_names_a_server_tool_use_whose_program_is_gone() -> None:
    search = {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {}}
    msgs = [
        {"role": "user", "content": "ask"},
        {"role": "assistant", "content": [{**search, "caller": CALLER}]},
    ]
    (problem,) = ctxwin.check({"messages": msgs})
    assert (problem.code, problem.call_id) == ("orphan_result", "srvtoolu_1")
    assert problem.message == (
        "messages.1.content.0: the `server_tool_use` block names `caller.tool_id` srvtoolu_1, "
        "but no `server_tool_use` block before it has that id"
    )


# ------------------------------------------------- blocks whose program is not in the request


def _cut_program() -> list[dict[str, Any]]:
    """:func:`_anthropic_program` cut (by hand, or by a framework's trimming) before the
    program's server_tool_use: its first call and that call's result went with it."""
    msgs = _anthropic_program()
    second = {"type": "tool_use", "id": "c1b", "name": "query", "input": {}, "caller": CALLER}
    return [
        msgs[0],
        {"role": "assistant", "content": [second]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1b", "content": "2"}],
        },
        *msgs[3:],
    ]


def test_anthropic_check_names_a_call_whose_program_is_gone() -> None:
    """A client tool_use whose caller names a server_tool_use the request does not hold: the
    check said nothing, and repair left it."""
    problems = ctxwin.check({"messages": _cut_program()})
    assert [(p.code, p.message_index, p.path, p.call_id, p.tool) for p in problems] == [
        ("orphan_result", 1, "messages[1].content[0]", "c1b", "query"),
        ("orphan_result", 3, "messages[3].content[0]", "srvtoolu_1", None),
    ]
    assert problems[0].message == (
        "messages.1.content.0: the `tool_use` block c1b names `caller.tool_id` srvtoolu_1, "
        "but no `server_tool_use` block before it has that id"
    )


def test_repair_drops_a_call_whose_program_is_gone_with_its_result() -> None:
    """The program's calls fed the program, not the model: without the program they go with
    their results (made direct, they would be calls the model never made)."""
    fixed, fixes = ctxwin.repair({"messages": _cut_program()}, "anthropic")
    msgs = _cut_program()
    assert fixed == {"messages": [msgs[0], {**msgs[3], "content": msgs[3]["content"][1:]}, msgs[4]]}
    assert [(f.code, f.path, f.call_id) for f in fixes] == [
        ("dropped_orphan_result", "messages[1].content[0]", "c1b"),
        ("dropped_orphan_result", "messages[2].content[0]", "c1b"),
        ("dropped_orphan_result", "messages[3].content[0]", "srvtoolu_1"),
    ]
    assert ctxwin.check(fixed, "anthropic") == []


def test_repair_drops_a_pending_call_whose_program_is_gone_without_adding_a_result() -> None:
    """A call of a gone program with no result yet: no synthetic result is made for it, the
    rest of its round stays as it was."""
    direct = {"type": "tool_use", "id": "d1", "name": "query", "input": {}}
    orphan = {"type": "tool_use", "id": "c9", "name": "query", "input": {}, "caller": CALLER}
    answer = {"type": "tool_result", "tool_use_id": "d1", "content": "1"}
    msgs = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [direct, orphan]},
        {"role": "user", "content": [answer]},
    ]
    fixed, fixes = ctxwin.repair({"messages": msgs}, "anthropic")
    assert fixed["messages"][1] == {"role": "assistant", "content": [direct]}  # type: ignore[index]
    assert fixed["messages"][2] is msgs[2]  # type: ignore[index]
    assert [(f.code, f.call_id) for f in fixes] == [("dropped_orphan_result", "c9")]


def test_repair_drops_what_a_server_tool_use_of_a_gone_program_opened() -> None:
    """A web search the gone program made: its server_tool_use went, and its result, then
    with nothing before it, stayed (the API's 400)."""
    search = {
        "type": "server_tool_use",
        "id": "srvtoolu_2",
        "name": "web_search",
        "input": {},
        "caller": CALLER,
    }
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_2", "content": []}
    msgs = [
        {"role": "user", "content": "ask"},
        {"role": "assistant", "content": [search, found, {"type": "text", "text": "ok"}]},
    ]
    problems = ctxwin.check({"messages": msgs})
    assert [(p.path, p.call_id) for p in problems] == [
        ("messages[1].content[0]", "srvtoolu_1"),
        ("messages[1].content[1]", "srvtoolu_2"),
    ]
    fixed, fixes = ctxwin.repair({"messages": msgs}, "anthropic")
    assert fixed["messages"][1]["content"] == [{"type": "text", "text": "ok"}]  # type: ignore[index]
    assert [f.description for f in fixes] == [
        "a server tool's call made by a program that is not in the request; dropped",
        "a server tool's result whose call is not in the request; dropped",
    ]
    assert ctxwin.check(fixed, "anthropic") == []


def test_a_call_whose_program_lives_on_the_server_is_no_problem() -> None:
    body = {"messages": _cut_program()}
    assert ctxwin.check(body, server_state=True) == []
    assert ctxwin.repair(body, "anthropic", server_state=True) == (body, [])


def test_apply_drops_a_server_tool_result_without_its_use() -> None:
    """apply repairs an orphaned server tool result as it does an orphaned tool_result: it
    sent the request as the API refuses it (only repair() dropped it)."""
    orphan = {
        "type": "advisor_tool_result",
        "tool_use_id": "srvtoolu_9",
        "content": {"type": "advisor_result", "text": "x"},
    }
    msgs = [
        {"role": "user", "content": "ask"},
        {"role": "assistant", "content": [orphan, {"type": "text", "text": "ok"}]},
    ]
    res = Policy({}, format="anthropic").apply({"messages": msgs})
    assert res.request["messages"][1]["content"] == [{"type": "text", "text": "ok"}]
    assert [(f.code, f.path, f.call_id) for f in res.fixes] == [
        ("dropped_orphan_result", "messages[1].content[0]", "srvtoolu_9")
    ]
    kept = Policy({}, format="anthropic").apply({"messages": msgs}, server_state=True)
    assert kept.request == {"messages": msgs}
    assert kept.fixes == ()


def test_apply_repairs_a_call_whose_program_is_gone() -> None:
    res = Policy({}, format="anthropic").apply({"messages": _cut_program()})
    assert ctxwin.check(res.request, "anthropic") == []
    assert [f.call_id for f in res.fixes] == ["c1b", "c1b", "srvtoolu_1"]


def test_apply_finds_a_server_tool_result_without_its_use_in_a_later_request() -> None:
    """The linker resumed from the previous request reads the new messages' blocks: the
    orphan they bring is found without reading the history again."""
    policy = Policy({}, format="anthropic")
    msgs = _anthropic_program()
    assert policy.apply({"messages": msgs}).fixes == ()
    stray = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_7", "content": {}}
    later = [
        *msgs,
        {"role": "assistant", "content": [stray, {"type": "text", "text": "done"}]},
    ]
    res = policy.apply({"messages": later})
    assert res.request["messages"][5] == {"role": "assistant", "content": [later[5]["content"][1]]}
    assert [(f.path, f.call_id) for f in res.fixes] == [("messages[5].content[0]", "srvtoolu_7")]


def test_a_round_rebuilt_for_another_call_leaves_out_a_call_whose_program_is_gone() -> None:
    """The round is rebuilt (a direct call lost its result): the gone program's call gets no
    synthetic result, its own result goes."""
    direct = {"type": "tool_use", "id": "d1", "name": "query", "input": {}}
    orphan = {"type": "tool_use", "id": "c9", "name": "query", "input": {}, "caller": CALLER}
    msgs = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [orphan, direct]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c9", "content": "9"}]},
    ]
    fixed, fixes = ctxwin.repair({"messages": msgs}, "anthropic")
    assert fixed["messages"][1:] == [  # type: ignore[index]
        {"role": "assistant", "content": [direct]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "d1",
                    "content": "tool result missing: the call was interrupted",
                    "is_error": True,
                }
            ],
        },
    ]
    assert [(f.code, f.call_id) for f in fixes] == [
        ("dropped_orphan_result", "c9"),
        ("dropped_orphan_result", "c9"),
        ("added_missing_result", "d1"),
    ]
    assert ctxwin.check(fixed, "anthropic") == []


def test_responses_repair_drops_a_call_whose_program_is_gone_with_its_reasoning() -> None:
    """A function_call a program made, its program item cut away: it goes with its output
    and the reasoning item it came with (the API refuses a reasoning item without its
    following item; the OpenAI Agents SDK's drop_orphan_function_calls drops them so)."""
    items = [
        {"role": "user", "content": "sum the sales"},
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "e"},
        {**_responses_program()[2], "id": "fc_2"},
        _responses_program()[3],
        {"role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    (problem,) = ctxwin.check({"input": items})
    assert (problem.call_id, problem.message) == (
        "c1",
        "function_call c1 with caller.caller_id prog_1 has no program item before it",
    )
    fixed, fixes = ctxwin.repair({"input": items}, "openai-responses")
    assert fixed == {"input": [items[0], items[4]]}
    assert [(f.path, f.call_id) for f in fixes] == [
        ("input[2]", "c1"),
        ("input[3]", "c1"),
        ("input[1]", "c1"),
    ]
