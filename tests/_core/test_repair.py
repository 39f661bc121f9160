"""Repair on the neutral model: minimal, valid under the conversation's own rules."""

from __future__ import annotations

from ctxwin._core.check import has_errors
from ctxwin._core.model import Message, Text, ToolResult
from ctxwin._core.repair import RepairTexts, repair_conversation
from tests._core.neutral import (
    ADJACENT,
    GROUPED,
    Describer,
    calls,
    conv,
    result,
    results,
    user,
)


def test_a_valid_conversation_is_left_as_it_is() -> None:
    c = conv(ADJACENT, user("go"), calls("a"), results("a"))
    fixed, fixes = repair_conversation(c, Describer())
    assert fixes == []
    assert all(a is b for a, b in zip(fixed.messages, c.messages, strict=True))


def test_a_missing_result_gets_an_error_result_in_the_words_asked_for() -> None:
    c = conv(ADJACENT, user("go"), calls("a"), user("stop"))
    texts = RepairTexts(missing_result="{tool} was declined by the user")
    fixed, fixes = repair_conversation(c, Describer(), texts=texts)
    assert [f.code for f in fixes] == ["added_missing_result"]
    added = fixed.messages[2].blocks[0]
    assert isinstance(added, ToolResult)
    assert added.is_error
    assert added.text == "tool_a was declined by the user"
    assert not has_errors(fixed)


def test_results_behind_a_message_move_up_and_orphans_go() -> None:
    c = conv(GROUPED, user("go"), calls("a"), user("hm"), results("a", "x", role="user"))
    fixed, fixes = repair_conversation(c, Describer())
    assert sorted(f.code for f in fixes) == ["dropped_orphan_result", "moved_result"]
    assert [m.role for m in fixed.messages] == ["user", "assistant", "user", "user"]
    assert fixed.messages[2].blocks == (result("a"),)
    assert not has_errors(fixed)


def test_a_reused_carrier_puts_its_results_first() -> None:
    carrier = Message("user", (Text("and also"), result("a")))
    c = conv(GROUPED, user("go"), calls("a"), carrier)
    fixed, fixes = repair_conversation(c, Describer())
    assert [f.code for f in fixes] == ["reordered_results"]
    assert [type(b).__name__ for b in fixed.messages[2].blocks] == ["ToolResult", "Text"]


def test_duplicate_call_ids_in_one_turn_are_renamed_with_their_results() -> None:
    c = conv(ADJACENT, user("go"), calls("a", "a"), results("a"), results("a"))
    fixed, fixes = repair_conversation(c, Describer())
    assert [f.code for f in fixes] == ["renamed_duplicate_call_id"]
    assert [b.call_id for m in fixed.messages[2:] for b in m.tool_results] == ["a", "a_2"]
    assert not has_errors(fixed)


def test_a_renamed_call_s_fix_names_its_tool() -> None:
    """Like every fix about a call, a rename says whose call it renamed (a report read its
    missing tool as '(no tool)', the name kept for results that answer no call)."""
    c = conv(ADJACENT, user("go"), calls("a", "a"), results("a"), results("a"))
    _, [fix] = repair_conversation(c, Describer())
    assert (fix.code, fix.call_id, fix.tool) == ("renamed_duplicate_call_id", "a", "tool_a")
