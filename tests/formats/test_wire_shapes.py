"""Shapes the providers document, sent as a user would: what each adapter must keep, count
and write so the provider accepts the request."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin import Opaque

SHOT = "data:image/png;base64," + "iVBOR" * 40_000
"""A screenshot as a data URL (200,000 characters of base64)."""


def computer_body(*items: dict[str, Any]) -> dict[str, Any]:
    first = [
        {"role": "user", "content": "open the settings"},
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "C1",
            "action": {"type": "screenshot"},
            "pending_safety_checks": [],
            "status": "completed",
        },
    ]
    return {"model": "computer-use-preview", "input": [*first, *items]}


def screenshot_output(call_id: str = "C1") -> dict[str, Any]:
    return {
        "type": "computer_call_output",
        "call_id": call_id,
        "output": {"type": "computer_screenshot", "image_url": SHOT},
        "acknowledged_safety_checks": [],
    }


def test_a_cleared_screenshot_is_still_a_screenshot() -> None:
    """A computer_call_output takes only a screenshot: a placeholder string is refused."""
    body = computer_body(screenshot_output())
    conv = ctxwin.parse(body, format="openai-responses")
    msg = conv.messages[2]
    (res,) = msg.tool_results
    cleared = res.with_text("[computer result cleared]", keep_opaque=False)
    out = ctxwin.render(conv.with_messages((*conv.messages[:2], msg.with_blocks((cleared,)))))
    item = out["input"][2]  # type: ignore[index]
    assert item["output"]["type"] == "computer_screenshot"
    assert item["output"]["image_url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert len(item["output"]["image_url"]) < 200
    assert item["acknowledged_safety_checks"] == []
    assert ctxwin.check(out) == []


def test_a_capped_screenshot_output_keeps_its_screenshot() -> None:
    body = computer_body(screenshot_output())
    conv = ctxwin.parse(body, format="openai-responses")
    msg = conv.messages[2]
    (res,) = msg.tool_results
    out = ctxwin.render(
        conv.with_messages((*conv.messages[:2], msg.with_blocks((res.with_text("x"),))))
    )
    assert out["input"][2]["output"] is body["input"][2]["output"]  # type: ignore[index]


def test_an_interrupted_computer_call_is_answered_with_a_screenshot() -> None:
    body = computer_body({"role": "user", "content": "stop"})
    fixed, fixes = ctxwin.repair(body)
    assert [f.code for f in fixes] == ["added_missing_result"]
    added = fixed["input"][2]  # type: ignore[index]
    assert added["type"] == "computer_call_output"
    assert added["call_id"] == "C1"
    assert added["output"]["type"] == "computer_screenshot"


def test_a_screenshot_output_counts_as_an_image_not_as_its_base64() -> None:
    conv = ctxwin.parse(computer_body(screenshot_output()), format="openai-responses")
    (res,) = conv.messages[2].tool_results
    assert [p.category for p in res.content if isinstance(p, Opaque)] == ["media"]


def test_audio_parts_count_as_media() -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "UklGR" * 10_000, "format": "wav"}}
    chat = ctxwin.parse({"messages": [{"role": "user", "content": [audio]}]}, format="openai-chat")
    responses = ctxwin.parse(
        {"input": [{"role": "user", "content": [{**audio, "type": "input_audio"}]}]},
        format="openai-responses",
    )
    for conv in (chat, responses):
        (part,) = conv.messages[0].blocks
        assert isinstance(part, Opaque)
        assert part.category == "media"


def test_a_file_search_call_is_not_media() -> None:
    """Its results are text the model reads, not a file of fixed price."""
    item = {"type": "file_search_call", "id": "fs_1", "queries": ["q"], "status": "completed"}
    conv = ctxwin.parse({"input": [{"role": "user", "content": "q"}, item]})
    (part,) = conv.messages[1].blocks
    assert isinstance(part, Opaque)
    assert part.category == "other"


def test_a_legacy_function_call_without_its_answer_is_named_by_its_function() -> None:
    """The legacy ``function_call`` has no id: the problem names the function, not ``None``."""
    body = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": None, "function_call": {"name": "weather"}},
            {"role": "user", "content": "hello?"},
        ]
    }
    (problem,) = ctxwin.check(body, format="openai-chat")
    assert problem.code == "missing_result"
    assert problem.path == "messages[1].function_call"
    assert problem.message == (
        "An assistant message with a 'function_call' must be followed by a 'function' "
        "message answering it: the call to weather has none"
    )


def test_an_item_reference_may_leave_out_its_type() -> None:
    """``{"id": "msg_..."}`` is an item_reference (its ``type`` is optional): the item it
    names lives on the server, so an output after it may answer a call the request lacks."""
    reference = {"id": "fc_1"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    body = {"model": "gpt-5", "input": [{"role": "user", "content": "go"}, reference, output]}
    conv = ctxwin.parse(body, format="openai-responses")
    assert conv.messages[1].blocks == (Opaque("item_reference"),)
    assert conv.server_state
    assert ctxwin.check(body, format="openai-responses") == []
    assert ctxwin.render(conv) == body


def test_items_that_add_tools_or_settings_are_system_items() -> None:
    """``additional_tools`` and ``configuration_update`` set up what follows, as a developer
    message does: not the model's items, which old rounds drop."""
    tools = {
        "type": "additional_tools",
        "role": "developer",
        "tools": [{"type": "function", "name": "f", "parameters": {}}],
    }
    update = {"type": "configuration_update", "reasoning": {"effort": "low"}}
    body = {"input": [{"role": "user", "content": "go"}, tools, update]}
    conv = ctxwin.parse(body, format="openai-responses")
    assert [m.role for m in conv.messages] == ["user", "system", "system"]
    assert ctxwin.render(conv) == body


@pytest.mark.parametrize(
    ("part", "where"),
    [
        ({"functionCall": {"name": "f", "args": "x=1"}}, "contents[1].parts[0].functionCall.args"),
        (
            {"function_response": {"name": "f", "response": "it rained"}},
            "contents[2].parts[0].function_response.response",
        ),
    ],
)
def test_gemini_args_and_responses_must_be_objects(part: dict[str, Any], where: str) -> None:
    """Gemini takes both as a Struct: a string was accepted, and an edit then wrote it back
    as ``{"output": "\\"it rained\\""}`` with JSON quotes in the text."""
    call = {"functionCall": {"name": "f", "args": {}}}
    turns = [{"role": "user", "parts": [{"text": "go"}]}]
    if "functionCall" in part:
        turns.append({"role": "model", "parts": [part]})
    else:
        turns += [{"role": "model", "parts": [call]}, {"role": "user", "parts": [part]}]
    with pytest.raises(ctxwin.FormatError, match="must be an object, not string") as e:
        ctxwin.parse({"contents": turns}, format="gemini")
    assert e.value.path == where


def test_an_anthropic_tool_use_input_must_be_an_object() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": [1]}],
            },
        ]
    }
    with pytest.raises(ctxwin.FormatError, match="'input' must be an object, not array") as e:
        ctxwin.parse(body, format="anthropic")
    assert e.value.path == "messages[1].content[0].input"


def test_a_message_without_a_role_is_named_as_such() -> None:
    with pytest.raises(ctxwin.FormatError) as e:
        ctxwin.parse({"messages": [{"content": "hi"}]}, format="openai-chat")
    assert e.value.path == "messages[0].role"
    assert e.value.reason.startswith("a message needs a 'role' (expected one of system,")
