"""The ``role`` of OpenAI Responses items, against the openai 3.57.0 types: messages carry
one (user, assistant, system, developer), ``additional_tools`` one of its own; every other
item the API knows has none, and refuses one as an unknown parameter."""

from __future__ import annotations

import typing
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError
from ctxwin.formats._responses_items import ITEM_ROLES, ROLELESS, ROLES

FMT = "openai-responses"
CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}


def body(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-5", "input": [{"role": "user", "content": "go"}, *items]}


def format_error(request: dict[str, Any]) -> FormatError:
    with pytest.raises(FormatError) as info:
        ctxwin.check(request, format=FMT)
    return info.value


def test_a_function_call_with_a_role_is_refused_at_its_role() -> None:
    err = format_error(body({**CALL, "role": "user"}, OUTPUT))
    assert err.path == "input[1].role"
    assert str(err) == (
        "input[1].role: an item of type 'function_call' takes no 'role' (got 'user'): "
        "a message does"
    )


@pytest.mark.parametrize(
    ("item", "role"),
    [
        (OUTPUT, "assistant"),
        (OUTPUT, None),
        ({"type": "reasoning", "id": "rs_1", "summary": []}, "assistant"),
        ({"type": "custom_tool_call", "call_id": "c2", "name": "g", "input": "x"}, "assistant"),
        ({"type": "web_search_call", "id": "ws_1", "status": "completed"}, "assistant"),
        ({"type": "item_reference", "id": "msg_1"}, "user"),
        ({"type": "program_output", "id": "po_1", "call_id": "p1", "result": "1"}, "tool"),
    ],
)
def test_any_role_on_an_item_that_has_none_is_refused(item: dict[str, Any], role: object) -> None:
    """A null one too: the API refuses a null unknown parameter (agents-python#1883)."""
    request = body(CALL, OUTPUT)
    request["input"].append({**item, "role": role})
    err = format_error(request)
    assert err.path == "input[3].role"
    assert f"an item of type {item['type']!r} takes no 'role'" in err.reason


def test_additional_tools_takes_the_roles_of_its_types_only() -> None:
    for role in ("developer", "tool", "unknown"):  # the output type's roles, echoed back
        item = {"type": "additional_tools", "id": "at_1", "role": role, "tools": []}
        assert ctxwin.check(body(item), format=FMT) == []
    err = format_error(body({"type": "additional_tools", "role": "boss", "tools": []}))
    assert (err.path, err.reason) == (
        "input[1].role",
        "unknown role 'boss' for an item of type 'additional_tools' (expected one of "
        "developer, unknown, user, assistant, system, critic, discriminator, tool)",
    )


@pytest.mark.parametrize("role", ["user", "assistant", "system", "developer"])
@pytest.mark.parametrize("typed", [True, False])
def test_messages_keep_every_role_the_api_takes(role: str, typed: bool) -> None:
    item: dict[str, Any] = {"role": role, "content": "hi"}
    if typed:
        item["type"] = "message"
    request = body(item)
    result = ctxwin.Policy({}, format=FMT).apply(request)
    assert result.request == request


def test_a_message_with_a_tool_role_is_refused() -> None:
    err = format_error(body({"type": "message", "role": "tool", "content": "x"}))
    assert err.path == "input[1].role"
    assert err.reason.startswith("unknown role 'tool'")


def test_an_item_type_ctxwin_does_not_know_keeps_its_role() -> None:
    """The API's to judge: a type newer than ctxwin's tables is carried as it came."""
    request = body({"type": "brand_new_item", "id": "bn_1", "role": "critic"})
    assert ctxwin.Policy({}, format=FMT).apply(request).request == request


def test_output_items_echoed_back_from_a_response_are_taken() -> None:
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
    )

    output = [
        ResponseReasoningItem(id="rs_1", type="reasoning", summary=[]),
        ResponseFunctionToolCall(
            id="fc_1", call_id="c1", name="f", arguments="{}", type="function_call"
        ),
        ResponseOutputMessage(
            id="msg_1",
            role="assistant",
            status="completed",
            type="message",
            content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
        ),
    ]
    items = [o.model_dump(exclude_unset=True) for o in output]
    request = body(items[0], items[1], OUTPUT, items[2])
    assert ctxwin.check(request, format=FMT) == []


def _union_members(union: object) -> list[type]:
    out: list[type] = []
    for member in typing.get_args(union):
        if typing.get_origin(member) in (typing.Annotated, typing.Union):
            out += _union_members(member)
        elif isinstance(member, type):
            out.append(member)
    return out


def test_the_role_tables_agree_with_the_openai_types() -> None:
    """Every item type the SDK knows is in ctxwin's tables, with the roles it types."""
    pytest.importorskip("openai")
    from openai.types.responses import ResponseItem, ResponseOutputItem
    from openai.types.responses.response_input_item_param import ResponseInputItemParam

    roles: dict[str, set[str]] = {}
    for model in _union_members(ResponseOutputItem) + _union_members(ResponseItem):
        kind = typing.get_args(model.model_fields["type"].annotation)[0]
        field = model.model_fields.get("role")
        roles.setdefault(kind, set()).update(typing.get_args(field.annotation) if field else ())
    for param in _union_members(ResponseInputItemParam):
        hints = typing.get_type_hints(param)
        kind = typing.get_args(hints["type"])[0]
        while typing.get_origin(kind) is not None:  # Required[Literal[...]]
            kind = typing.get_args(kind)[0]
        role = hints.get("role")
        while role is not None and typing.get_origin(role) is not typing.Literal:
            role = typing.get_args(role)[0]
        roles.setdefault(kind, set()).update(typing.get_args(role) if role else ())
    assert roles.pop("message") == set(ROLES)
    assert {k for k, v in roles.items() if not v} == ROLELESS
    assert {k: v for k, v in roles.items() if v} == {k: set(v) for k, v in ITEM_ROLES.items()}
