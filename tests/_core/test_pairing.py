"""Pairing on the neutral model: by position, under the rules a conversation carries."""

from __future__ import annotations

from ctxwin._core.model import Message, Opaque, ToolCall, ToolResult
from ctxwin._core.pairing import Linker, link
from tests._core.neutral import ADJACENT, ANYWHERE, GROUPED, calls, conv, result, results, user


def test_each_result_answers_the_call_with_its_id_in_the_latest_turn() -> None:
    """Ids reused across turns pair with the nearest turn, not the first one."""
    c = conv(ADJACENT, user("go"), calls("a"), results("a"), calls("a"), results("a"))
    p = c.pairing
    assert p.call_of == {(2, 0): (1, 0), (4, 0): (3, 0)}
    assert [r.calls for r in p.rounds] == [((1, 0),), ((3, 0),)]
    assert p.orphans == ()
    assert p.duplicates == ()


def test_a_second_result_for_an_answered_call_is_a_duplicate() -> None:
    c = conv(ADJACENT, user("go"), calls("a"), results("a"), results("a"))
    assert c.pairing.duplicates == (((3, 0), (1, 0)),)


def test_a_result_for_no_call_is_an_orphan_unless_the_calls_live_on_the_server() -> None:
    msgs = (user("go"), results("x"))
    assert conv(ADJACENT, *msgs).pairing.orphans == ((1, 0),)
    assert link(msgs, ADJACENT, server_state=True).orphans == ()


def test_calls_without_ids_pair_by_order_and_name() -> None:
    asked = Message("assistant", (ToolCall(None, "f", "{}"), ToolCall(None, "g", "{}")))
    answers = Message(
        "user",
        (
            ToolResult(None, (), name="g"),
            ToolResult(None, (), name="f"),
        ),
    )
    c = conv(GROUPED, user("go"), asked, answers)
    assert c.pairing.call_of == {(2, 0): (1, 1), (2, 1): (1, 0)}


def test_consecutive_assistant_items_are_one_turn_when_the_rules_say_so() -> None:
    msgs = (user("go"), calls("a"), calls("b"), results("a"), results("b"))
    assert len(conv(ANYWHERE, *msgs).pairing.rounds) == 1
    assert len(conv(ADJACENT, *msgs).pairing.rounds) == 2


def test_linking_resumes_where_the_previous_request_stopped() -> None:
    msgs = [user("go"), calls("a"), results("a"), calls("b"), Message("tool", (result("b"),))]
    linker = Linker(ADJACENT)
    linker.feed(msgs[:3])
    first = linker.pairing()
    linker.feed(msgs)
    assert first.call_of == {(2, 0): (1, 0)}
    assert linker.pairing() == link(msgs, ADJACENT)


def test_blocks_tied_to_a_call_never_opened_are_noted_in_request_order() -> None:
    """A server's result or a program's call with no opening block before it; what such a
    block opens is not opened (its own blocks go with it), what another block opens is."""
    opener = Message("assistant", (Opaque("server_tool_use", opens="p1"),))
    stray = Message(
        "assistant",
        (
            Opaque("server_tool_use", opens="s2", tie="gone"),  # made by a gone program
            Opaque("web_search_tool_result", tie="s2", closes=True),
            ToolCall("c1", "f", "{}", tie="p1"),
            ToolCall("c2", "f", "{}", tie="gone"),
        ),
    )
    msgs = (user("go"), opener, stray, Message("user", (result("c1"), result("c2"))))
    assert link(msgs, GROUPED).unopened == ((2, 0), (2, 1), (2, 3))
    assert link(msgs, GROUPED, server_state=True).unopened == ()
    linker = Linker(GROUPED)
    linker.feed(msgs[:2])
    assert linker.pairing().unopened == ()
    linker.feed(msgs)
    assert linker.pairing() == link(msgs, GROUPED)
