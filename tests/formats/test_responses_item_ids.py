"""Item ids unique in a Responses input: the API refuses an id twice ("Duplicate item found
with id rs_... Remove duplicate items from your input and try again."), met when a client
appends a response's output twice (a retry). ``check`` names the later item; repair and
``apply`` drop it, keeping the first, and what answered a call that went with it is then a
duplicate result, dropped as one."""

from __future__ import annotations

import copy
from typing import Any

import ctxwin
from ctxwin import Policy

FMT = "openai-responses"
USER = {"role": "user", "content": "list the files"}
RS = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
FC = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "ls",
    "arguments": "{}",
    "status": "completed",
}
OUT = {"type": "function_call_output", "call_id": "call_1", "output": "a.py b.py"}


def ids(body: Any) -> list[str]:
    return [it["id"] for it in body["input"] if isinstance(it, dict) and "id" in it]


def test_a_turn_appended_twice_is_refused_and_repaired_to_one() -> None:
    body = {"model": "gpt-5", "input": [USER, RS, FC, OUT, dict(RS), dict(FC), dict(OUT)]}
    before = copy.deepcopy(body)
    problems = ctxwin.check(body)
    assert [(p.code, p.path) for p in problems] == [
        ("duplicate_item_id", "input[4]"),
        ("duplicate_item_id", "input[5]"),
    ]
    assert problems[0].message.startswith("Duplicate item found with id rs_1.")
    assert problems[1].call_id == "call_1"
    fixed, fixes = ctxwin.repair(body)
    assert [(f.code, f.path) for f in fixes] == [
        ("dropped_duplicate_item", "input[4]"),
        ("dropped_duplicate_item", "input[5]"),
        ("dropped_duplicate_result", "input[6]"),
    ]
    assert "first at input[1]" in fixes[0].description
    assert fixed["input"] == [USER, RS, FC, OUT]
    assert ctxwin.check(fixed) == []
    result = Policy({}, format=FMT).apply(body)
    assert result.request == fixed
    assert body == before


def test_the_model_s_items_appended_twice_before_the_tool_ran_are_not_renamed() -> None:
    """Not a second call to answer: no new call id, no "interrupted" output invented."""
    body = {"model": "gpt-5", "input": [USER, RS, FC, dict(RS), dict(FC), OUT]}
    fixed, fixes = ctxwin.repair(body)
    assert [f.code for f in fixes] == ["dropped_duplicate_item", "dropped_duplicate_item"]
    assert fixed["input"] == [USER, RS, FC, OUT]
    assert ids(fixed) == ["rs_1", "fc_1"]


def test_an_item_reference_is_no_duplicate_of_an_item() -> None:
    """A reference names an item on the server; its id is not an item of the input's."""
    body = {"model": "gpt-5", "input": [{"type": "item_reference", "id": "rs_1"}, USER, RS]}
    assert [p.code for p in ctxwin.check(body) if p.code == "duplicate_item_id"] == []


def test_a_client_sending_back_the_output_keeps_the_ids_unique() -> None:
    """The window's output, sent back with a new turn, has no item twice."""
    policy = Policy({"window": {"keep_rounds": 1}}, format=FMT)
    first = policy.apply({"model": "gpt-5", "input": [USER, RS, FC, OUT]})
    rs2 = {**RS, "id": "rs_2"}
    fc2 = {**FC, "id": "fc_2", "call_id": "call_2"}
    out2 = {**OUT, "call_id": "call_2"}
    again = policy.apply({"model": "gpt-5", "input": [*first.request["input"], rs2, fc2, out2]})
    assert ctxwin.check(again.request) == []
    assert len(set(ids(again.request))) == len(ids(again.request))


def test_a_repeated_item_that_ended_the_request_leaves_a_user_message_last() -> None:
    """Repair's last_user phase judges by the request as it came, not as the repeated item
    left it: a request that ended with the user's item ends with one still."""
    u1 = {"type": "message", "role": "user", "id": "msg_u1", "content": "Summarize it."}
    a1 = {"type": "message", "role": "assistant", "id": "msg_a1", "content": "Which one?"}
    fixed, fixes = ctxwin.repair({"model": "gpt-5", "input": [u1, a1, dict(u1)]}, FMT)
    assert [f.code for f in fixes] == ["dropped_duplicate_item", "added_last_user_message"]
    assert fixed["input"][-1] == {"type": "message", "role": "user", "content": "(continue)"}


def test_a_repeated_item_of_no_content_parts_is_named_where_it_is() -> None:
    empty = {"type": "message", "role": "assistant", "id": "msg_a1", "content": []}
    body = {"model": "gpt-5", "input": [USER, empty, {"role": "user", "content": "again"}]}
    body["input"] += [dict(empty), {"role": "user", "content": "?"}]
    assert [(p.code, p.path) for p in ctxwin.check(body)] == [("duplicate_item_id", "input[3]")]
    _, fixes = ctxwin.repair(body)
    assert [(f.code, f.path) for f in fixes] == [("dropped_duplicate_item", "input[3]")]


def test_a_repeated_output_is_named_by_its_call() -> None:
    out = {**OUT, "id": "fco_1"}
    result = Policy({}, format=FMT).apply({"model": "gpt-5", "input": [USER, FC, out, dict(out)]})
    assert [(f.code, f.call_id, f.tool) for f in result.fixes] == [
        ("dropped_duplicate_item", "call_1", "ls")
    ]


def test_another_item_under_a_repeated_id_keeps_its_content_and_loses_the_id() -> None:
    """A client that writes one made-up id on several items: the later one is another call
    with its own output, which stays; only the id it may go without goes."""
    fc2 = {**FC, "call_id": "call_2", "name": "search", "arguments": '{"q": "NYC"}'}
    out2 = {**OUT, "call_id": "call_2", "output": "flight AA100 at 9am"}
    body = {"model": "gpt-5", "input": [USER, FC, OUT, fc2, out2]}
    fixed, fixes = ctxwin.repair(body)
    assert [(f.code, f.path, f.call_id) for f in fixes] == [
        ("removed_duplicate_item_id", "input[3]", "call_2")
    ]
    assert fixed["input"] == [USER, FC, OUT, {k: v for k, v in fc2.items() if k != "id"}, out2]
    assert ctxwin.check(fixed) == []
    assert Policy({}, format=FMT).apply(body).request == fixed


def test_another_reasoning_item_under_a_repeated_id_goes() -> None:
    """A reasoning item cannot go without its id: one under another's id is dropped."""
    rs2 = {**RS, "encrypted_content": "other"}
    fc2 = {**FC, "id": "fc_2", "call_id": "call_2"}
    out2 = {**OUT, "call_id": "call_2"}
    fixed, fixes = ctxwin.repair({"model": "gpt-5", "input": [USER, RS, FC, OUT, rs2, fc2, out2]})
    assert [f.code for f in fixes] == ["dropped_duplicate_item"]
    assert fixed["input"] == [USER, RS, FC, OUT, fc2, out2]
    assert ctxwin.check(fixed) == []
