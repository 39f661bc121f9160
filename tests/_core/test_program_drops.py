"""What a repair takes with a block whose program is not in the request, and what it leaves:
the reasoning the dropped block came with goes, unless a block of its turn that stays needs
it (OpenAI Responses reasoning items; Anthropic thinking blocks)."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin import Policy

PROGRAM = {"type": "program", "caller_id": "prog_1"}
CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}

# ------------------------------------------------------------------------- OpenAI Responses

USER = {"role": "user", "content": "sum the sales"}
RS = {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "e"}
BY_PROGRAM = {
    "type": "function_call",
    "id": "fc_p",
    "call_id": "cp",
    "name": "q",
    "arguments": "{}",
    "caller": PROGRAM,
}
DIRECT = {"type": "function_call", "id": "fc_d", "call_id": "cd", "name": "q", "arguments": "{}"}
PROGRAM_OUT = {"type": "function_call_output", "call_id": "cp", "output": "1", "caller": PROGRAM}
DIRECT_OUT = {"type": "function_call_output", "call_id": "cd", "output": "2"}


def _repaired(items: list[dict[str, Any]]) -> tuple[list[Any], list[tuple[str, str | None]]]:
    """The repaired input and its fixes (path, call id); apply sends the same, and the check
    finds nothing in it."""
    body = {"input": items}
    fixed, fixes = ctxwin.repair(body, "openai-responses")
    assert Policy({}, format="openai-responses").apply(body).request == fixed
    assert ctxwin.check(fixed, "openai-responses") == []
    return fixed["input"], [(f.path, f.call_id) for f in fixes]  # type: ignore[index]


def test_reasoning_a_direct_call_of_its_turn_needs_stays() -> None:
    """The turn made a program's call and a direct call: the reasoning before them went with
    the program's call, and the direct call (an ``fc_`` id) was left without it, which the API
    refuses ("Item 'fc_d' of type 'function_call' was provided without its required
    'reasoning' item: 'rs_2'")."""
    out, fixes = _repaired([USER, RS, BY_PROGRAM, DIRECT, PROGRAM_OUT, DIRECT_OUT])
    assert out == [USER, RS, DIRECT, DIRECT_OUT]
    assert fixes == [("input[2]", "cp"), ("input[4]", "cp")]


def test_reasoning_an_answer_of_its_turn_needs_stays() -> None:
    """An output message with an item id (``msg_``) needs its reasoning as a call does."""
    answer = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "working on it"}],
    }
    out, _ = _repaired([USER, RS, BY_PROGRAM, answer, PROGRAM_OUT])
    # the request ended with the program's output, not the model's message: a user's goes
    # last in its place (repair's last_user phase)
    assert out == [USER, RS, answer, {"type": "message", "role": "user", "content": "(continue)"}]


def test_reasoning_stays_for_a_direct_call_after_two_calls_of_a_gone_program() -> None:
    """The first of the program's calls took the reasoning before the second was known to go
    too and the direct call to stay."""
    second = {**BY_PROGRAM, "id": "fc_p2", "call_id": "cp2"}
    items = [USER, RS, BY_PROGRAM, second, DIRECT, PROGRAM_OUT, {**PROGRAM_OUT, "call_id": "cp2"}]
    out, _ = _repaired([*items, DIRECT_OUT])
    assert out == [USER, RS, DIRECT, DIRECT_OUT]


def test_reasoning_goes_when_what_stays_of_its_turn_has_no_item_id() -> None:
    """A call without an id needs no reasoning: the reasoning, whose item is gone, goes."""
    direct = {k: v for k, v in DIRECT.items() if k != "id"}
    out, fixes = _repaired([USER, RS, BY_PROGRAM, direct, PROGRAM_OUT, DIRECT_OUT])
    assert out == [USER, direct, DIRECT_OUT]
    assert fixes == [("input[2]", "cp"), ("input[4]", "cp"), ("input[1]", "cp")]


def test_reasoning_goes_with_a_server_item_of_a_gone_program() -> None:
    """A web search the gone program made went alone, its reasoning left before an answer it
    did not come with (the API: "Item 'rs_2' of type 'reasoning' was provided without its
    required following item")."""
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "caller": PROGRAM}
    answer = {"role": "assistant", "content": "the sum is 3"}
    body = {"input": [USER, RS, search, answer]}
    fixed, fixes = ctxwin.repair(body, "openai-responses")
    assert fixed == {"input": [USER, answer]}
    assert [(f.path, f.call_id, f.description) for f in fixes] == [
        (
            "input[2]",
            "prog_1",
            "an item made by a program that is not in the request (prog_1); dropped",
        ),
        (
            "input[1]",
            "prog_1",
            "the reasoning of an item made by a program that is not in the request (prog_1); "
            "dropped",
        ),
    ]
    assert Policy({}, format="openai-responses").apply(body).request == fixed


def test_reasoning_stays_for_a_call_after_a_stray_output_repair_drops() -> None:
    """A stray output (it answers no call) between the gone program's search and the direct
    call goes too: it does not end the turn, and the direct call (an ``fc_`` id) keeps its
    reasoning (it went with the search, and the call was sent without it)."""
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "caller": PROGRAM}
    stray = {"type": "function_call_output", "call_id": "zz", "output": "?"}
    out, fixes = _repaired([USER, RS, search, stray, DIRECT, DIRECT_OUT])
    assert out == [USER, RS, DIRECT, DIRECT_OUT]
    assert fixes == [("input[2]", "prog_1"), ("input[3]", "zz")]


def test_a_later_reasoning_item_goes_with_the_items_after_it() -> None:
    """The direct call after a second reasoning item needs that one, not the first."""
    rs3 = {**RS, "id": "rs_3"}
    out, _ = _repaired([USER, RS, BY_PROGRAM, rs3, DIRECT, PROGRAM_OUT, DIRECT_OUT])
    assert out == [USER, rs3, DIRECT, DIRECT_OUT]


def test_a_call_after_an_output_is_not_of_the_turn_of_the_reasoning() -> None:
    """Items of one turn come together: a call after an output is not the reasoning's (the API
    refuses it so placed), and does not keep it."""
    out, _ = _repaired([USER, RS, BY_PROGRAM, PROGRAM_OUT, DIRECT, DIRECT_OUT])
    assert out == [USER, DIRECT, DIRECT_OUT]


# ------------------------------------------------------------------------------- Anthropic

THINKING = {"type": "thinking", "thinking": "query it", "signature": "sig"}
REDACTED = {"type": "redacted_thinking", "data": "xx"}
GONE_CALL = {"type": "tool_use", "id": "c9", "name": "query", "input": {}, "caller": CALLER}
GONE_RESULT = {"type": "tool_result", "tool_use_id": "c9", "content": "9"}
GO = {"role": "user", "content": "go"}


def _anthropic(msgs: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """The repaired messages and their fixes; apply sends the same, and the check finds
    nothing in it."""
    body = {"messages": msgs}
    fixed, fixes = ctxwin.repair(body, "anthropic")
    assert Policy({}, format="anthropic").apply(body).request == fixed
    assert ctxwin.check(fixed, "anthropic") == []
    return fixed["messages"], list(fixes)  # type: ignore[index]


def test_thinking_left_alone_at_the_end_goes_with_its_message() -> None:
    """The gone program's call was all the message held besides its thinking: the request
    ended on an assistant message of thinking alone, which the API refuses ("messages.1: The
    final block in an assistant message cannot be `thinking`")."""
    out, fixes = _anthropic(
        [
            GO,
            {"role": "assistant", "content": [THINKING, GONE_CALL]},
            {"role": "user", "content": [GONE_RESULT]},
        ]
    )
    assert out == [GO]
    assert [(f.code, f.path, f.call_id) for f in fixes] == [
        ("dropped_orphan_result", "messages[1].content[1]", "c9"),
        ("dropped_orphan_result", "messages[2].content[0]", "c9"),
        ("dropped_orphan_result", "messages[1].content[0]", None),
    ]
    assert fixes[2].description == (
        "thinking left alone in its message by the drops before; dropped with its message"
    )


def test_thinking_and_redacted_thinking_of_a_pending_call_go() -> None:
    out, _ = _anthropic([GO, {"role": "assistant", "content": [THINKING, REDACTED, GONE_CALL]}])
    assert out == [GO]


def test_thinking_left_alone_before_the_users_text_goes() -> None:
    """The user wrote with the gone call's result: what is left is the user's two messages,
    which the API joins into one turn."""
    more = {"type": "text", "text": "and last year's too"}
    out, _ = _anthropic(
        [
            GO,
            {"role": "assistant", "content": [THINKING, GONE_CALL]},
            {"role": "user", "content": [GONE_RESULT, more]},
        ]
    )
    assert out == [GO, {"role": "user", "content": [more]}]


def test_thinking_that_opens_the_turn_stays_before_the_assistant_message_after_it() -> None:
    """The API joins consecutive assistant messages: the thinking still opens the turn that
    goes on with a direct call (without it: "a final `assistant` message must start with a
    thinking block")."""
    direct = {"type": "tool_use", "id": "d2", "name": "query", "input": {}}
    later = {"role": "assistant", "content": [{"type": "text", "text": "now"}, direct]}
    answer = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "d2", "content": "2"}],
    }
    out, fixes = _anthropic(
        [
            GO,
            {"role": "assistant", "content": [THINKING, GONE_CALL]},
            {"role": "user", "content": [GONE_RESULT]},
            later,
            answer,
        ]
    )
    assert out == [GO, {"role": "assistant", "content": [THINKING]}, later, answer]
    assert len(fixes) == 2


def test_thinking_goes_before_an_assistant_message_with_thinking_of_its_own() -> None:
    """Joined, the turn would hold two runs of thinking from two responses: the next message
    opens the turn with its own."""
    direct = {"type": "tool_use", "id": "d2", "name": "query", "input": {}}
    later = {"role": "assistant", "content": [{**THINKING, "signature": "sig2"}, direct]}
    answer = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "d2", "content": "2"}],
    }
    out, _ = _anthropic(
        [
            GO,
            {"role": "assistant", "content": [THINKING, GONE_CALL]},
            {"role": "user", "content": [GONE_RESULT]},
            later,
            answer,
        ]
    )
    assert out == [GO, later, answer]


def test_a_message_with_text_besides_its_thinking_stays() -> None:
    said = {"type": "text", "text": "let me query"}
    out, _ = _anthropic(
        [
            GO,
            {"role": "assistant", "content": [THINKING, said, GONE_CALL]},
            {"role": "user", "content": [GONE_RESULT]},
        ]
    )
    assert out == [
        GO,
        {"role": "assistant", "content": [THINKING, said]},
        {"role": "user", "content": [{"type": "text", "text": "(continue)"}]},  # last_user
    ]


def test_a_message_of_thinking_alone_the_request_sent_is_left_as_it_is() -> None:
    """Only what a repair trimmed is looked at: the rest of the request stays as it came."""
    alone = {"role": "assistant", "content": [THINKING]}
    msgs = [
        GO,
        alone,
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": [GONE_CALL]},
    ]
    out, _ = _anthropic(msgs)
    assert out[:3] == msgs[:3]
    assert out[1] is alone
