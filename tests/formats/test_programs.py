"""Programmatic tool calling and server tools: what ties their blocks across messages, as
the adapters read it, and what the check says of a block whose call is gone."""

from __future__ import annotations

from typing import Any

import pytest

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


def test_responses_output_without_call_id_stays_a_format_error_with_a_program_caller() -> None:
    """The SDK types a function_call_output's call_id as optional, but nothing says which
    call an output without one answers: ctxwin refuses it rather than guess (repair would
    add an output of its own for the call left unanswered)."""
    items = [
        *_responses_program()[:3],
        {"type": "function_call_output", "output": "1", "caller": PROGRAM},
    ]
    with pytest.raises(ctxwin.FormatError) as info:
        ctxwin.parse({"input": items})
    assert (
        str(info.value) == "input[3].call_id: a function_call_output item needs a string 'call_id'"
    )


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
