"""select on real tool outputs: what the agent reads is never empty, never unsendable, never
another number than the tool wrote."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxwin
from tests.steps.conftest import body_with_result

NOTHING = "selection matched nothing: result kept whole"
INEXACT = "selection holds a number a float cannot hold exactly: result kept whole"


def select(expression: str) -> dict[str, Any]:
    return {"tools": {"get_order": {"select": expression}}}


@pytest.mark.parametrize(
    ("expression", "content"),
    [
        ("items[?qty > `5`]", '{"items": [{"qty": 1}]}'),  # a filter: []
        ("matches[].path", '{"matches": [{"file": "a.py"}]}'),  # a renamed field: []
        ("meta", '{"meta": {}, "id": 1}'),  # {}
        ("{id: order_id}", '[{"order_id": "A1"}]'),  # only nulls
        ("[id, name]", '{"order_id": "A1"}'),  # only nulls
    ],
)
def test_an_empty_selection_keeps_the_result_whole_and_says_so(
    apply_one: Any, expression: str, content: str
) -> None:
    """The agent would read ``[]`` as "there is none" when the expression missed."""
    result, text = apply_one(select(expression), content)
    assert text == content
    assert [e.note for e in result.report.edits] == [NOTHING]


def test_a_selection_with_some_values_is_still_written(apply_one: Any) -> None:
    _, text = apply_one(select("{id: order_id, n: name}"), '{"order_id": "A1", "x": 2}')
    assert text == '{"id":"A1","n":null}'


def test_a_lone_surrogate_escape_stays_escaped_in_a_json_selection(apply_one: Any) -> None:
    """``"\\ud83d"`` in the result is a lone surrogate once parsed; written raw, the request
    cannot be encoded as UTF-8 (httpx raises)."""
    content = '{"s": "x\\ud83d y", "id": 1}'
    _, text = apply_one(select("{s: s}"), content)
    text.encode("utf-8")
    assert json.loads(text) == {"s": "x\ud83d y"}


def test_a_lone_surrogate_in_a_string_selection_becomes_a_replacement_character(
    apply_one: Any,
) -> None:
    _, text = apply_one(select("s"), '{"s": "x\\ud83d y", "id": 1}')
    assert text == "x\ufffd y"


def test_a_selected_lone_surrogate_is_left_alone_when_applied_again() -> None:
    policy = ctxwin.Policy(select("{s: s}"), format="openai-chat")
    first = policy.apply(body_with_result('{"s": "x\\ud83d y", "id": 1}'))
    again = policy.apply(first.request)
    assert again.request == first.request
    assert again.report.edits == ()


@pytest.mark.parametrize(
    "number", ["1e400", "-1e400", "1e-400", "3.14159265358979323846264338327950288"]
)
def test_a_number_a_float_cannot_hold_is_never_rewritten(apply_one: Any, number: str) -> None:
    content = f'{{"n": {number}, "id": 1}}'
    result, text = apply_one(select("{n: n}"), content)
    assert text == content
    assert [(e.note, e.fallback) for e in result.report.edits] == [(INEXACT, "select_failed")]


def test_a_selection_without_the_inexact_number_is_still_made(apply_one: Any) -> None:
    _, text = apply_one(select("{id: id}"), '{"n": 1e400, "id": 1.5, "x": 0.1}')
    assert text == '{"id":1.5}'


def test_json_with_a_byte_order_mark_is_selected(apply_one: Any) -> None:
    _, text = apply_one(select("{id: id}"), '\ufeff{"id": 1, "x": 2}')
    assert text == '{"id":1}'
