"""OpenAI Chat Completions adapter: parse, render, check and repair on hand-written cases."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError, PairingError, Text, ToolCall, ToolResult
from ctxwin.formats import get_adapter
from tests.builders import asst, call, tool, user

FMT = "openai-chat"


SYSTEM = {"role": "system", "content": "You are an airline agent."}


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": list(messages), "tools": []}


def codes(b: object) -> list[str]:
    return [p.code for p in ctxwin.check(b, format=FMT) if p.severity == "error"]


# ------------------------------------------------------------------------------ parse


def test_parse_makes_blocks_for_text_calls_and_results() -> None:
    b = body(
        SYSTEM,
        user("Where is my order?"),
        asst(call("c1", "get_order", '{"id":"A1"}'), content="Checking."),
        tool("c1", '{"status":"shipped"}', name="get_order"),
    )
    conv = ctxwin.parse(b)
    assert conv.format == FMT
    roles = [m.role for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    a = conv.messages[2]
    assert a.blocks == (Text("Checking."), ToolCall("c1", "get_order", '{"id":"A1"}'))
    (res,) = conv.messages[3].blocks
    assert isinstance(res, ToolResult)
    assert (res.call_id, res.text, res.name) == ("c1", '{"status":"shipped"}', "get_order")


def test_result_tool_name_is_resolved_from_its_call() -> None:
    b = body(user("hi"), asst(call("c1", "lookup")), tool("c1", "ok"))
    (ref,) = ctxwin.parse(b).results()
    assert ref.tool == "lookup"
    assert ref.round == 0


def test_null_content_and_parts_round_trip_exactly() -> None:
    b = body(
        {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:x"}},
            ],
        },
        asst(call("c1", "f")),
        tool("c1", "done"),
    )
    assert ctxwin.render(ctxwin.parse(b)) == b


def test_ids_reused_across_turns_pair_by_position() -> None:
    """tau-bench reuses call ids in later turns; each result answers the call of its own turn."""
    b = body(
        user("a"),
        asst(call("call_X", "first")),
        tool("call_X", "one"),
        user("b"),
        asst(call("call_X", "second")),
        tool("call_X", "two"),
    )
    refs = list(ctxwin.parse(b).results())
    assert [(r.tool, r.round) for r in refs] == [("first", 0), ("second", 1)]
    assert ctxwin.check(b) == []


def test_cjk_text_stays_unescaped_after_an_edit() -> None:
    b = body(user("注文"), asst(call("c1", "f")), tool("c1", ""))
    fixed = ctxwin.repair(b, normalize=True).body
    text = json.dumps(fixed, ensure_ascii=False)
    assert "注文" in text
    assert "\\u" not in json.dumps(fixed["messages"][1], ensure_ascii=False)  # type: ignore[index]


# ------------------------------------------------------------------------------ check


def test_valid_parallel_calls_answered_out_of_order_check_clean() -> None:
    b = body(user("go"), asst(call("a", "f"), call("b", "g")), tool("b", "2"), tool("a", "1"))
    assert ctxwin.check(b) == []


def test_interrupted_call_is_missing_result_with_provider_text() -> None:
    b = body(user("go"), asst(call("a", "f")))
    (p,) = ctxwin.check(b)
    assert p.code == "missing_result"
    assert p.call_id == "a"
    assert p.path == "messages[1].tool_calls[0]"
    assert (p.message_index, p.block_index) == (1, 0)
    assert "did not have response messages: a" in p.message


def test_human_message_between_call_and_results_is_misplaced() -> None:
    b = body(user("go"), asst(call("a", "f")), user("are you there?"), tool("a", "1"))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path) == ("misplaced_result", "messages[3]")
    assert "must be a response to a preceeding message with 'tool_calls'" in p.message


def test_result_without_call_is_orphan() -> None:
    b = body(user("go"), tool("zzz", "1"))
    assert codes(b) == ["orphan_result"]


def test_second_result_for_one_call_is_duplicate() -> None:
    b = body(user("go"), asst(call("a", "f")), tool("a", "1"), tool("a", "1 again"))
    assert codes(b) == ["duplicate_result"]


def test_empty_result_is_a_warning_not_an_error() -> None:
    b = body(user("go"), asst(call("a", "f")), tool("a", ""))
    assert ctxwin.check(b) == []
    (p,) = ctxwin.check(b, warnings=True)
    assert (p.code, p.severity) == ("empty_result", "warning")


# ------------------------------------------------------------------------------ repair


def test_repair_adds_error_result_for_interrupted_call() -> None:
    b = body(user("go"), asst(call("a", "f"), call("b", "g")), tool("a", "1"))
    before = copy.deepcopy(b)
    fixed, fixes = ctxwin.repair(b)
    assert b == before
    assert [f.code for f in fixes] == ["added_missing_result"]
    msgs = fixed["messages"]  # type: ignore[index]
    assert msgs[3] == {
        "role": "tool",
        "tool_call_id": "b",
        "content": "tool result missing: the call was interrupted",
    }
    assert msgs[2] is b["messages"][2]
    assert ctxwin.check(fixed) == []


def test_repair_moves_injected_human_message_after_results() -> None:
    b = body(user("go"), asst(call("a", "f")), user("hello?"), tool("a", "1"), asst(content="done"))
    fixed, fixes = ctxwin.repair(b)
    msgs = fixed["messages"]  # type: ignore[index]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "user", "assistant"]
    assert msgs[2] is b["messages"][3]
    assert [f.code for f in fixes] == ["moved_result"]
    assert ctxwin.check(fixed) == []


def test_repair_drops_orphan_and_duplicate_results() -> None:
    b = body(user("go"), tool("nope", "x"), asst(call("a", "f")), tool("a", "1"), tool("a", "2"))
    fixed, fixes = ctxwin.repair(b)
    assert sorted(f.code for f in fixes) == ["dropped_duplicate_result", "dropped_orphan_result"]
    assert [m.get("content") for m in fixed["messages"]] == ["go", None, "1"]  # type: ignore[index]


def test_repair_leaves_valid_out_of_order_results_alone() -> None:
    b = body(user("go"), asst(call("a", "f"), call("b", "g")), tool("b", "2"), tool("a", "1"))
    fixed, fixes = ctxwin.repair(b)
    assert fixes == []
    assert fixed == b
    assert all(x is y for x, y in zip(fixed["messages"], b["messages"], strict=True))  # type: ignore[index]


def test_repair_normalize_puts_results_in_call_order() -> None:
    b = body(user("go"), asst(call("a", "f"), call("b", "g")), tool("b", "2"), tool("a", "1"))
    fixed, fixes = ctxwin.repair(b, normalize=True)
    assert [m.get("tool_call_id") for m in fixed["messages"][2:]] == ["a", "b"]  # type: ignore[index]
    assert [f.code for f in fixes] == ["reordered_results"]


def test_strict_repair_raises_with_every_problem() -> None:
    b = body(user("go"), asst(call("a", "f"), call("b", "g")), tool("zzz", "1"))
    with pytest.raises(PairingError) as info:
        ctxwin.repair(b, strict=True)
    assert [p.code for p in info.value.problems] == [
        "missing_result",
        "missing_result",
        "orphan_result",
    ]
    assert "3 pairing problems" in str(info.value)


def test_editing_one_result_changes_only_its_content() -> None:
    b = body(user("go"), asst(call("a", "f")), tool("a", "long output", name="f"))
    conv = ctxwin.parse(b)
    msgs = list(conv.messages)
    (res,) = msgs[2].blocks
    assert isinstance(res, ToolResult)
    msgs[2] = msgs[2].with_blocks((res.with_text("short"),))
    out = get_adapter(FMT).render(conv.with_messages(tuple(msgs)))
    assert out["messages"][2] == {
        "role": "tool",
        "tool_call_id": "a",
        "content": "short",
        "name": "f",
    }  # type: ignore[index]
    assert out["messages"][1] is b["messages"][1]  # type: ignore[index]
    assert out["model"] == "gpt-4o"  # type: ignore[index]


def test_legacy_function_call_pairs_by_name() -> None:
    b = body(
        user("go"),
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "function", "name": "f", "content": "ok"},
    )
    assert ctxwin.check(b) == []
    (ref,) = ctxwin.parse(b).results()
    assert ref.tool == "f"


def test_an_edited_legacy_function_call_keeps_tool_calls_null() -> None:
    """ChatCompletionMessage.model_dump() writes "tool_calls": None beside a function_call;
    shortening the call's arguments must not turn it into [] (OpenAI: "empty array")."""
    legacy = {
        "role": "assistant",
        "content": None,
        "tool_calls": None,
        "function_call": {"name": "f", "arguments": '{"text": "long"}'},
    }
    b = body(user("go"), legacy, {"role": "function", "name": "f", "content": "ok"})
    before = copy.deepcopy(b)
    conv = ctxwin.parse(b)
    msgs = list(conv.messages)
    (fc,) = msgs[1].blocks
    assert isinstance(fc, ToolCall)
    msgs[1] = msgs[1].with_blocks((fc.with_arguments("{}"),))
    out = get_adapter(FMT).render(conv.with_messages(tuple(msgs)))
    assert out["messages"][1] == {  # type: ignore[index]
        "role": "assistant",
        "content": None,
        "tool_calls": None,
        "function_call": {"name": "f", "arguments": "{}"},
    }
    assert b == before


def test_a_message_whose_calls_all_went_loses_its_tool_calls_key() -> None:
    """A step that takes every call out of a message leaves no 'tool_calls': [] behind."""
    b = body(user("go"), asst(call("a", "f"), content="Let me look."), tool("a", "ok"))
    conv = ctxwin.parse(b)
    msgs = list(conv.messages)
    text = msgs[1].blocks[0]
    msgs[1] = msgs[1].with_blocks((text,))
    out = get_adapter(FMT).render(conv.with_messages((msgs[0], msgs[1])))
    assert out["messages"][1] == {"role": "assistant", "content": "Let me look."}  # type: ignore[index]


# ------------------------------------------------------------------------------ errors


def test_tool_message_without_call_id_names_its_path() -> None:
    b = body(user("go"), {"role": "tool", "content": "x"})
    with pytest.raises(FormatError) as info:
        ctxwin.parse(b)
    assert info.value.path == "messages[1].tool_call_id"
    assert (
        str(info.value) == "messages[1].tool_call_id: a tool message needs a string 'tool_call_id'"
    )


def test_unknown_role_is_a_format_error() -> None:
    with pytest.raises(FormatError, match=r"messages\[0\].role: unknown role 'robot'"):
        ctxwin.parse({"messages": [{"role": "robot", "content": "x"}]}, format=FMT)


def test_an_empty_message_list_cannot_be_detected_and_says_so() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.detect({"messages": []})
    assert str(info.value) == (
        "cannot tell the wire format of this dict: its 'messages' is empty; "
        "pass format= to say which format it is"
    )
