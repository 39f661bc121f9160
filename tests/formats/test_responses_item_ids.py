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
