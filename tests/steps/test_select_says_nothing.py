"""select: a selection that says nothing at any depth keeps the result whole; a selection
the expression would select from again is not written; select stays its own fixed point
(also on what the cap wrote after it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin.testing import agent_body
from tests.steps.conftest import body_with_result

NOTHING = "selection matched nothing: result kept whole"
AGAIN = "selection would be selected again from its own output: result kept whole"
HITS = {
    "matches": [
        {"file": "src/rates.py", "lineno": 42, "text": "Decimal(str(rates[k]))"},
        {"file": "src/fx.py", "lineno": 7, "text": "Decimal(str(rates))"},
    ]
}


def select(expression: str, **rules: Any) -> dict[str, Any]:
    return {"tools": {"get_order": {"select": expression, **rules}}}


def twice(config: dict[str, Any], content: str) -> tuple[ctxwin.Result, ctxwin.Result]:
    """The policy applied, then a fresh policy applied to its output."""
    first = ctxwin.Policy(config, format="openai-chat").apply(body_with_result(content))
    again = ctxwin.Policy(config, format="openai-chat").apply(first.request)
    return first, again


def test_the_readme_select_on_hits_naming_their_fields_otherwise_keeps_them_whole() -> None:
    """``matches[].{path: path, line: line}`` on hits with ``file``/``lineno`` sent
    ``[{"path":null,"line":null},...]``: hits without location, reported as a select."""
    root = Path(__file__).resolve().parents[2]
    policy = ctxwin.load_policy(root / "examples" / "policy")
    content = json.dumps(HITS)
    body = agent_body(
        [[("search_code", {"query": "Decimal"}, content)], [("read_file", {"path": "x"}, "ok")]]
    )
    result = policy.apply(body)
    assert result.request["messages"][3]["content"] == content
    assert [(e.tool, e.note, e.saved) for e in result.report.edits] == [("search_code", NOTHING, 0)]


@pytest.mark.parametrize(
    ("expression", "content"),
    [
        ("matches[].{path: path, line: line}", json.dumps(HITS)),  # objects of nulls
        ("matches[].[path, line]", json.dumps(HITS)),  # lists of nulls
        ("matches[].meta", '{"matches": [{"meta": {}}, {"meta": {}}]}'),  # empty objects
        ("{tags: tags, name: name}", '{"tags": [], "name": "", "id": 1}'),  # [] and ""
        ("{hit: matches[0].{path: path}}", json.dumps(HITS)),  # nested
    ],
)
def test_a_selection_of_only_nulls_and_empties_at_any_depth_says_nothing(
    apply_one: Any, expression: str, content: str
) -> None:
    result, text = apply_one(select(expression), content)
    assert text == content
    assert [e.note for e in result.report.edits] == [NOTHING]


@pytest.mark.parametrize(
    ("content", "written"),
    [
        ('{"matches": [{"path": null, "line": 0}]}', '[{"path":null,"line":0}]'),
        ('{"matches": [{"path": null, "line": false}]}', '[{"path":null,"line":false}]'),
        (
            '{"matches": [{"line": null}, {"path": "a.py"}]}',
            '[{"path":null,"line":null},{"path":"a.py","line":null}]',
        ),
    ],
)
def test_a_zero_a_false_or_a_string_among_nulls_says_something(
    apply_one: Any, content: str, written: str
) -> None:
    result, text = apply_one(select("matches[].{path: path, line: line}"), content)
    assert text == written
    assert [e.note for e in result.report.edits] == [None]


def test_a_selection_that_says_nothing_is_noted_the_same_when_applied_again() -> None:
    first, again = twice(select("matches[].{path: path, line: line}"), json.dumps(HITS))
    assert again.request == first.request
    assert again.report.edits == first.report.edits
    assert [e.note for e in first.report.edits] == [NOTHING]


# ------------------------------------------------------------------ selected again


@pytest.mark.parametrize(
    ("expression", "content"),
    [
        ("result", '{"result": {"result": "ok", "logs": ["built", "2 warnings"]}, "t": 3.2}'),
        ("a || b", '{"a": {"a": 1, "x": 2}, "b": 3}'),
        ("not_null(z, a)", '{"a": {"z": "q", "k": 2}}'),
        ("to_string(a)", '{"a": {"x": 1}, "b": 2}'),
        ("a", '{"a": "{\\"a\\": 1, \\"b\\": 2}", "c": 3}'),  # a string holding JSON
    ],
)
def test_a_selection_the_expression_would_select_from_again_is_not_written(
    expression: str, content: str
) -> None:
    """Applied to its own output, ``result`` selected the inner ``result`` and the logs
    went, one level more per request."""
    first, again = twice(select(expression), content)
    assert first.request["messages"][2]["content"] == content
    assert [(e.note, e.fallback) for e in first.report.edits] == [(AGAIN, "select_failed")]
    assert again.request == first.request
    assert again.report.edits == first.report.edits


@pytest.mark.parametrize(
    ("expression", "content", "written"),
    [
        ("a || b", '{"b": {"c": 1}, "d": 2}', '{"c":1}'),
        ("not_null(z, a)", '{"a": "plain text", "b": 1}', "plain text"),
        ("to_string(a)", '{"a": "done", "b": 1}', "done"),
        ("@", '"a JSON string"', "a JSON string"),
        ("join(', ', items[].name)", '{"items": [{"name": "x"}, {"name": "y"}]}', "x, y"),
    ],
)
def test_a_selection_it_can_tell_as_its_own_is_written_and_passes_again_unnoted(
    expression: str, content: str, written: str
) -> None:
    """A string these expressions wrote was noted "not JSON" when applied again."""
    first, again = twice(select(expression), content)
    assert first.request["messages"][2]["content"] == written
    assert again.request == first.request
    assert again.report.edits == ()


# ------------------------------------------------------------------ after the cap


def test_a_string_the_cap_cut_passes_select_again_without_a_note() -> None:
    """The notice inside a cut string was not seen: the capped text was noted anew (its
    own token figures), so the output's report was not the input's."""
    content = json.dumps({"a": {"log": "line of output " * 400}})
    first, again = twice(select("orders[0]", max_tokens=60), content)
    assert "tokens of get_order output truncated" in first.request["messages"][2]["content"]
    assert again.request == first.request
    assert set(again.report.edits) <= set(first.report.edits)


def test_a_notice_item_as_deep_as_the_cap_writes_it_passes_select_again() -> None:
    """A cut three levels down writes ``{"...": notice}`` five levels down."""
    content = json.dumps({"items": [{"name": [{"v": "x" * 40} for _ in range(60)]}]})
    first, again = twice(select("orders[0]", max_tokens=60), content)
    sent = json.loads(first.request["messages"][2]["content"])
    assert any("..." in item for item in sent["items"][0]["name"])
    assert again.request == first.request
    assert set(again.report.edits) <= set(first.report.edits)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from(["", "s", '{"a":1}', '{"a":{"a":2}}', "[1,2]", "x" * 30]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "z", "items", "name"]), inner, max_size=4)
    ),
    max_leaves=16,
)
EXPRESSIONS = [
    "a",
    "a.b",
    "items[0]",
    "a || b",
    "not_null(z, a)",
    "to_string(a)",
    "@",
    "items[].name",
    "join(', ', items[].name)",
    "{x: a, y: items[].name}",
]


@settings(max_examples=300, deadline=None)
@given(
    data=JSON,
    expression=st.sampled_from(EXPRESSIONS),
    cap=st.sampled_from([None, 30, 60]),
    spaced=st.booleans(),
)
def test_select_and_cap_on_their_own_output_change_nothing_and_note_nothing_new(
    data: object, expression: str, cap: int | None, spaced: bool
) -> None:
    """No ``assume``: every selection is its own fixed point, the nested ones included.
    (Strings hold compact JSON only: a string selection holding spaced JSON the expression
    selects nothing from is noted when applied again, as a raw result of that text is.)"""
    text = json.dumps(data, separators=None if spaced else (",", ":"))
    rules = {} if cap is None else {"max_tokens": cap}
    first, again = twice(select(expression, **rules), text)
    assert again.request == first.request
    assert set(again.report.edits) <= set(first.report.edits)
    assert all(e.saved == 0 and e.note for e in again.report.edits)
