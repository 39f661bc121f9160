"""OpenAI Responses tool search: a search the client runs (``execution: "client"``) is a call
the client answers with a ``tool_search_output`` of the same ``call_id``, as it answers a
function call; the server's own search is carried opaque, as other server tools are."""

from __future__ import annotations

import copy
from typing import Any

from openai.types.responses.response_tool_search_output_item_param import (
    ResponseToolSearchOutputItemParam,
)

import ctxwin
from ctxwin import Opaque, Policy, ToolCall, ToolResult
from ctxwin.testing import FakeCounter
from tests.builders import words

LOADED = [
    {
        "type": "namespace",
        "name": "crm",
        "description": "Customer records.",
        "tools": [
            {
                "type": "function",
                "name": "get_customer",
                "description": "Look a customer up. " + words(200, "schema"),
                "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        ],
    }
]


def search_call(call_id: str = "ts1", query: str = "customer records") -> dict[str, Any]:
    return {
        "type": "tool_search_call",
        "id": f"tsc_{call_id}",
        "call_id": call_id,
        "execution": "client",
        "arguments": {"query": query},
        "status": "completed",
    }


def search_output(call_id: str = "ts1", tools: list[Any] | None = None) -> dict[str, Any]:
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": LOADED if tools is None else tools,
    }


SERVER_SEARCH = [
    {
        "type": "tool_search_call",
        "id": "tsc_server",
        "call_id": None,
        "execution": "server",
        "arguments": {"paths": ["crm"]},
        "status": "completed",
    },
    {
        "type": "tool_search_output",
        "id": "tso_server",
        "call_id": None,
        "execution": "server",
        "status": "completed",
        "tools": LOADED,
    },
]


def body(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-5.4", "input": [{"role": "user", "content": "find the crm"}, *items]}


def test_a_client_tool_search_is_a_call_and_its_output_the_result() -> None:
    request = body(search_call(), search_output())
    conv = ctxwin.parse(request, format="openai-responses")
    (call,) = conv.messages[1].blocks
    (result,) = conv.messages[2].blocks
    assert isinstance(call, ToolCall)
    assert (call.id, call.name, call.arguments) == (
        "ts1",
        "tool_search",
        '{"query":"customer records"}',
    )
    assert isinstance(result, ToolResult)
    assert conv.pairing.call_of == {(2, 0): (1, 0)}
    assert ctxwin.check(request) == []
    assert ctxwin.render(conv) == request


def test_a_client_tool_search_without_its_output_is_reported() -> None:
    (problem,) = ctxwin.check(body(search_call(), {"role": "user", "content": "and?"}))
    assert problem.code == "missing_result"
    assert problem.path == "input[1]"
    assert problem.message == "No tool output found for tool_search_call ts1."


def test_a_client_tool_search_output_without_its_call_is_an_orphan() -> None:
    (problem,) = ctxwin.check(body(search_output("ts9")))
    assert problem.code == "orphan_result"
    assert problem.path == "input[1]"


def test_an_interrupted_tool_search_is_answered_with_no_tools() -> None:
    """No tools found: a valid output (``tools`` is required) that loads nothing."""
    fixed, fixes = ctxwin.repair(body(search_call(), {"role": "user", "content": "stop"}))
    assert [f.code for f in fixes] == ["added_missing_result"]
    added = fixed["input"][2]  # type: ignore[index]
    assert added == {
        "type": "tool_search_output",
        "call_id": "ts1",
        "execution": "client",
        "status": "completed",
        "tools": [],
    }
    ResponseToolSearchOutputItemParam.model_validate(added)  # the SDK's own type takes it
    assert ctxwin.check(fixed) == []


def test_the_server_s_tool_search_stays_opaque_beside_a_client_one() -> None:
    """Only the client's search is paired: the server's, with no call_id, needs no output
    from the client."""
    request = body(*SERVER_SEARCH, search_call())
    conv = ctxwin.parse(request, format="openai-responses")
    assert [type(m.blocks[0]) for m in conv.messages[1:]] == [Opaque, Opaque, ToolCall]
    assert [p.code for p in ctxwin.check(request)] == ["missing_result"]
    assert ctxwin.render(conv) == request


def test_an_edited_tool_search_result_keeps_its_tools() -> None:
    """What a step writes into the result (a placeholder) never replaces the tools: they are
    definitions the model needs, and the output has no room for text."""
    request = body(search_call(), search_output())
    conv = ctxwin.parse(request, format="openai-responses")
    msg = conv.messages[2]
    (res,) = msg.tool_results
    assert res.content == (Opaque("tool_search_output"),)  # no text a step could cap
    assert res.content[0].category == "fixed"  # and the window may not clear it
    edited = conv.with_messages((*conv.messages[:2], msg.with_blocks((res.with_text("x"),))))
    out = ctxwin.render(edited)
    assert out["input"][2] == request["input"][2]  # type: ignore[index]


def test_the_window_never_clears_a_tool_search_output() -> None:
    rounds: list[dict[str, Any]] = [search_call(), search_output()]
    for r in range(8):
        rounds.append(
            {"type": "function_call", "call_id": f"c{r}", "name": "read", "arguments": "{}"}
        )
        rounds.append({"type": "function_call_output", "call_id": f"c{r}", "output": words(150)})
    request = body(*rounds)
    config = {"context_window": 1000, "window": {"trigger": 0.6, "target": 0.4, "keep_rounds": 2}}
    pol = Policy(config, counter=FakeCounter(), format="openai-responses")
    result = pol.apply(copy.deepcopy(request))
    out = result.request["input"]  # type: ignore[index]
    assert any("cleared" in str(item.get("output")) for item in out)  # the window worked
    assert out[2] == request["input"][2]
    assert "ts1" not in [e.call_id for e in result.report.edits]  # nor claimed it did
    assert ctxwin.check(result.request) == []


def test_dropping_old_rounds_takes_a_tool_search_with_its_output() -> None:
    """A drop that reaches its target after the call took the output with it: left alone, the
    output answers no call."""
    rounds: list[dict[str, Any]] = [
        search_call(query=words(400, "long")),
        search_output(tools=[]),
    ]
    for r in range(4):
        rounds.append(
            {"type": "function_call", "call_id": f"c{r}", "name": "read", "arguments": "{}"}
        )
        rounds.append({"type": "function_call_output", "call_id": f"c{r}", "output": words(150)})
    request = body(*rounds)
    config = {"context_window": 1000, "window": {"keep_rounds": 4}}
    pol = Policy(
        {**config, "overflow": "drop_oldest_rounds"},
        counter=FakeCounter(),
        format="openai-responses",
    )
    result = pol.apply(request)
    out = result.request["input"]  # type: ignore[index]
    assert result.report.tokens_before > 1000
    assert [item.get("type") for item in out[:2]] == [None, "function_call"]
    assert ctxwin.check(result.request) == []


def test_the_tools_a_search_loaded_are_counted() -> None:
    """They are sent with every request, so they count against the window (as JSON)."""
    pol = Policy({}, counter=FakeCounter(), format="openai-responses")
    loaded = pol.apply(body(search_call(), search_output())).report.tokens_before
    empty = pol.apply(body(search_call(), search_output(tools=[]))).report.tokens_before
    assert loaded - empty > 200  # the 200-word description and the rest of the schema


def test_items_the_server_wrote_are_on_the_model_s_side() -> None:
    """The server's tool search output and a program's output are not the user speaking
    (which the window reads as the start of a new turn)."""
    program = {"type": "program", "id": "pg_1", "call_id": "p1", "code": "1", "fingerprint": "f"}
    output = {"type": "program_output", "id": "po_1", "call_id": "p1", "result": "1"}
    request = body(*SERVER_SEARCH, program, output)
    conv = ctxwin.parse(request, format="openai-responses")
    assert [m.role for m in conv.messages] == ["user", *["assistant"] * 4]
    assert ctxwin.render(conv) == request
