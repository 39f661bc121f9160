"""select: JMESPath over JSON results."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxwin

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


# ------------------------------------------------------------------ run-time failures


def test_a_select_that_fails_at_run_time_keeps_the_result_and_says_why(apply_one: Any) -> None:
    """``abs(status)`` compiles and names a real function, but ``status`` is a string."""
    payload = json.dumps(ORDER)
    result, text = apply_one({"tools": {"get_order": {"select": "abs(status)"}}}, payload)
    assert text == payload
    (edit,) = result.report.edits
    assert (edit.step, edit.fallback, edit.saved) == ("select", "select_failed", 0)
    assert edit.note is not None
    assert edit.note.startswith("selection failed (In function abs(), invalid type for value")
    assert edit.note.endswith("): result kept whole")


def test_a_select_that_fails_on_one_result_still_selects_the_others() -> None:
    from tests.builders import asst, call, tool, user

    body = {
        "messages": [
            user("go"),
            asst(call("a", "get_order"), call("b", "get_order")),
            tool("a", json.dumps({"n": -3})),
            tool("b", json.dumps({"n": "three"})),
        ]
    }
    policy = ctxwin.Policy({"tools": {"get_order": {"select": "abs(n)"}}}, format="openai-chat")
    out = policy.apply(body).request["messages"]
    assert [m["content"] for m in out[2:]] == ["3", json.dumps({"n": "three"})]


# ------------------------------------------------------------------ its own output


def apply_twice(config: dict[str, Any], content: str) -> tuple[ctxwin.Result, ctxwin.Result]:
    from tests.steps.conftest import body_with_result

    first = ctxwin.Policy(config, format="openai-chat").apply(body_with_result(content))
    again = ctxwin.Policy(config, format="openai-chat").apply(first.request)
    return first, again


@pytest.mark.parametrize(
    "select",
    [
        "{order_id: order_id, status: status, items: items[].{name: name, qty: quantity}}",
        "{id: order_id, n: length(items)}",
        "items[].{name: name}",
        "items[].name",
        "[order_id, status]",
        "length(items)",
        "items[0]",
    ],
)
def test_a_selection_applied_again_is_left_alone_and_not_noted(select: str) -> None:
    first, again = apply_twice({"tools": {"get_order": {"select": select}}}, json.dumps(ORDER))
    assert first.report.edits[0].saved > 0
    assert again.request == first.request
    assert again.report.edits == ()


STRINGS = {
    "items": [{"path": "a.py"}, {"path": "b.py"}],
    "name": "report",
    "names": ["ab", "abcd"],
}


@pytest.mark.parametrize(
    ("select", "selected"),
    [
        ("max(items[].path)", "b.py"),
        ("min(items[].path)", "a.py"),
        ("max_by(names, &length(@))", "abcd"),
        ("min_by(names, &length(@))", "ab"),
        ("reverse(name)", "troper"),
        ("type(@)", "object"),
        ("items[0].type(@)", "object"),
        ("'fixed'", "fixed"),
        ("{n: reverse(name)}", '{"n":"troper"}'),
    ],
)
def test_a_string_a_function_wrote_applied_again_is_left_alone_and_not_noted(
    select: str, selected: str
) -> None:
    """max, min, max_by, min_by and reverse may write any string of the data, type one of
    its six words: their selection, which is not JSON, is ctxwin's own output, not a raw
    result to note as "not JSON"."""
    first, again = apply_twice({"tools": {"get_order": {"select": select}}}, json.dumps(STRINGS))
    assert first.request["messages"][2]["content"] == selected
    assert again.request == first.request
    assert again.report.edits == ()


def test_a_text_type_cannot_have_written_is_still_noted_as_not_json(apply_one: Any) -> None:
    config = {"tools": {"get_order": {"select": "type(@)"}}}
    for content, notes in (("object", []), ("Order A1 is shipped", ["not JSON"])):
        result, text = apply_one(config, content)
        assert text == content
        assert [e.note.split(":")[0] for e in result.report.edits if e.note] == notes


def test_a_placeholder_or_a_notice_ctxwin_wrote_is_not_noted_as_not_json(apply_one: Any) -> None:
    placeholder = (
        "[get_order result cleared to save context (812 tokens). "
        "Call get_order again if you need it.]"
    )
    capped = '{"a": [1, 2,\n[... 40 of 90 tokens of get_order output truncated ...]\n3]}'
    for content in (placeholder, capped):
        result, text = apply_one(SELECT, content)
        assert (text, result.report.edits) == (content, ())


JSON_PLACEHOLDER = '{{"status": "cleared", "note": "{tool} result cleared ({tokens} tokens)"}}'


def test_a_json_placeholder_ctxwin_wrote_is_not_selected_from(apply_one: Any) -> None:
    """A placeholder written as JSON parses, and was selected from on the policy's own
    output (``{"status":"cleared","rows":null}``: its words lost, a new edit each pass)."""
    config = {
        "tools": {"get_order": {"select": "{status: status, rows: rows[:3]}"}},
        "window": {"placeholder": JSON_PLACEHOLDER},
    }
    cleared = '{"status": "cleared", "note": "get_order result cleared (45 tokens)"}'
    for placeholder in (JSON_PLACEHOLDER, None):  # the tool's own, or the window's
        if placeholder:
            config["tools"]["get_order"]["placeholder"] = placeholder
            config["window"] = {}
        result, text = apply_one(config, cleared)
        assert (text, result.report.edits) == (cleared, ())
    result, text = apply_one(config, cleared.replace("get_order", "search"))
    assert text == '{"status":"cleared","rows":null}'  # another tool's: selected


def test_another_tools_placeholder_is_still_noted(apply_one: Any) -> None:
    other = (
        "[search result cleared to save context (812 tokens). Call search again if you need it.]"
    )
    result, _ = apply_one(SELECT, other)
    assert [e.note for e in result.report.edits] == ["not JSON: passed through unchanged"]


def test_compact_json_of_another_shape_is_still_selected_or_noted(apply_one: Any) -> None:
    """Only JSON of the expression's own shape counts as already selected."""
    config = {"tools": {"get_order": {"select": "{id: order_id}"}}}
    result, text = apply_one(config, '{"order_id":"A1","status":"shipped"}')
    assert text == '{"id":"A1"}'
    result, text = apply_one(config, '[{"order_id":"A1"}]')
    assert text == '[{"order_id":"A1"}]'  # a multi-select over a list: only nulls, kept whole
    assert [e.note for e in result.report.edits] == ["selection matched nothing: result kept whole"]
    projection = {"tools": {"get_order": {"select": "items[].{name: name}"}}}
    result, _ = apply_one(projection, '{"orders":[]}')
    assert [e.note for e in result.report.edits] == ["selection matched nothing: result kept whole"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "items", "name"]), inner, max_size=3)
    ),
    max_leaves=12,
)
EXPRESSIONS = [
    "{a: a, n: name}",
    "{a: b}",
    "items[].{name: name}",
    "items[].name",
    "[a, b]",
    "a",
    "items[0]",
    "length(items)",
    "join(',', [name, 'x'])",
    "items[?a].b",
]


@settings(max_examples=200, deadline=None)
@given(data=JSON, select=st.sampled_from(EXPRESSIONS), compact=st.booleans())
def test_select_on_its_own_output_makes_no_new_edits(
    data: object, select: str, compact: bool
) -> None:
    """Applied to its own output, select notes at most what it noted the first time (a raw
    result it passed through), changes nothing, and selects nothing again."""
    from tests.steps.conftest import body_with_result

    text = json.dumps(data, separators=(",", ":") if compact else None)
    config = {"tools": {"get_order": {"select": select}}}
    first = ctxwin.Policy(config, format="openai-chat").apply(body_with_result(text))
    again = ctxwin.Policy(config, format="openai-chat").apply(first.request)
    assert again.request == first.request
    assert set(again.report.edits) <= set(first.report.edits)
    assert all(e.saved == 0 and e.note for e in again.report.edits)


@pytest.mark.parametrize(
    ("select", "content"),
    [("ceil(n)", '{"n": Infinity}'), ("floor(n)", '{"n": NaN}'), ("sort(@)", '[1, "a"]')],
)
def test_any_run_time_failure_of_a_select_is_a_noted_fallback(
    apply_one: Any, select: str, content: str
) -> None:
    result, text = apply_one({"tools": {"get_order": {"select": select}}}, content)
    assert text == content
    assert [e.fallback for e in result.report.edits] == ["select_failed"]


def test_json_too_deep_to_parse_passes_through_noted(apply_one: Any) -> None:
    deep = "[" * 5000 + "]" * 5000
    result, text = apply_one(SELECT, deep)
    assert text == deep
    assert [e.note for e in result.report.edits] == [
        "JSON nested too deeply to select from: passed through unchanged"
    ]


def test_a_summary_of_a_selection_passes_select_again_without_a_note() -> None:
    from ctxwin.testing import FakeSummarizer, agent_body

    words = " ".join(f"w{i}" for i in range(3000))
    body = agent_body([[("get", {}, json.dumps({"a": words}))]])
    rules = {"select": "{a: a}", "summarize": {"over_tokens": 500, "max_tokens": 400}}
    policy = ctxwin.load_policy({"tools": {"get": rules}}, summarizer=FakeSummarizer())
    first = policy.apply(body)
    assert [e.step for e in first.report.edits] == ["select", "summarize"]
    again = policy.apply(first.request)
    assert again.report.edits == ()
    assert again.request == first.request


def test_an_old_backtick_string_literal_warns_where_it_is_and_still_selects(
    apply_one: Any,
) -> None:
    config = {"tools": {"get_order": {"select": "items[?sku==`X`].name"}}}
    for _ in range(2):  # jmespath warns only the first time it compiles an expression
        with pytest.warns(ctxwin.PolicyWarning) as caught:
            _, text = apply_one(config, json.dumps(ORDER))
        assert text == '["ペン"]'
        (warning,) = [w.message for w in caught if isinstance(w.message, ctxwin.PolicyWarning)]
        assert str(warning) == (
            "<policy>: tools.get_order.select: deprecated JMESPath literal at column 13: "
            "write the string 'X' in single quotes ('...') or as JSON (`\"...\"`)\n"
            "    items[?sku==`X`].name\n"
            "                ^"
        )
        assert (warning.key, warning.column, warning.reason[:30]) == (
            "tools.get_order.select",
            13,
            "deprecated JMESPath literal at",
        )


def test_json_and_raw_string_literals_do_not_warn(apply_one: Any) -> None:
    for select in ('items[?sku==`"X"`].name', "items[?sku=='X'].name", "items[?qty==`2`]"):
        _, text = apply_one({"tools": {"get_order": {"select": select}}}, json.dumps(ORDER))
        assert text in ('["ペン"]', json.dumps(ORDER))  # the suite turns warnings into errors
