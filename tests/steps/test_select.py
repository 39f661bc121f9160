"""select: JMESPath over JSON results."""

from __future__ import annotations

import json
from typing import Any

ORDER = {
    "order_id": "A1",
    "status": "shipped",
    "address": "1 Main St",
    "items": [
        {"name": "ペン", "quantity": 2, "sku": "X"},
        {"name": "ink", "quantity": 1, "sku": "Y"},
    ],
}
SELECT = {
    "tools": {
        "get_order": {
            "select": "{order_id: order_id, status: status, "
            "items: items[].{name: name, qty: quantity}}"
        }
    }
}


def test_selection_is_compact_json_with_non_ascii_kept(apply_one: Any) -> None:
    result, text = apply_one(SELECT, json.dumps(ORDER))
    assert (
        text == '{"order_id":"A1","status":"shipped",'
        '"items":[{"name":"ペン","qty":2},{"name":"ink","qty":1}]}'
    )
    (edit,) = result.report.edits
    assert (edit.step, edit.tool, edit.call_id, edit.note) == ("select", "get_order", "c1", None)
    assert edit.tokens_after < edit.tokens_before


def test_a_string_selection_is_written_as_the_string(apply_one: Any) -> None:
    config = {"tools": {"shell": {"select": "output"}}}
    payload = json.dumps({"output": "line 1\nline 2", "metadata": {"exit_code": 0}})
    _, text = apply_one(config, payload, tool="shell")
    assert text == "line 1\nline 2"


def test_a_result_that_is_not_json_passes_and_the_report_says_so(apply_one: Any) -> None:
    result, text = apply_one(SELECT, "Order A1 is shipped")
    assert text == "Order A1 is shipped"
    (edit,) = result.report.edits
    assert edit.note == "not JSON: passed through unchanged"
    assert edit.saved == 0


def test_a_selection_of_nothing_keeps_the_result_whole(apply_one: Any) -> None:
    result, text = apply_one({"tools": {"get_order": {"select": "orders[0]"}}}, json.dumps(ORDER))
    assert text == json.dumps(ORDER)
    assert result.report.edits[0].note == "selection matched nothing: result kept whole"


def test_errors_are_never_selected_away() -> None:
    import ctxwin

    body = {
        "system": "s",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "get_order", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "is_error": True,
                        "content": json.dumps({"error": "not found", "order_id": "A1"}),
                    }
                ],
            },
        ],
    }
    result = ctxwin.Policy(SELECT).apply(body)
    assert result.request == body
    assert result.report.edits == ()
