"""Gemini: an edited result goes out as the call it was, a success or a failure. A
response's ``error`` that holds something is Gemini's failed call, so a success whose new
text is an object with an ``error`` goes as ``{"output": text}``, and a failure whose new
text lost its ``error`` as ``{"error": text}``; either reads back as the same text. A new
text goes as the object it spells only when that object is valid JSON and reads back as that
very text; else as ``{"output": text}``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin import ToolResult
from ctxwin.formats import get_adapter
from ctxwin.testing import agent_body
from tests.formats.test_gemini import fc, fr, model, results, user

FMT = "gemini"


def with_response(response: object) -> dict[str, Any]:
    return {"contents": [user("go"), model(fc("a", "f")), results(fr("a", "f", response))]}


def edited(body: dict[str, Any], text: str) -> tuple[object, ToolResult]:
    """The response sent for the result with ``text`` as its new text, and the result
    read back from it."""
    conv = ctxwin.parse(body, format=FMT)
    msgs = list(conv.messages)
    (res,) = msgs[2].blocks
    assert isinstance(res, ToolResult)
    msgs[2] = msgs[2].with_blocks((res.with_text(text),))
    sent = get_adapter(FMT).render(conv.with_messages(tuple(msgs)))
    (ref,) = ctxwin.parse(sent, format=FMT).results()
    return sent["contents"][2]["parts"][0]["functionResponse"]["response"], ref.result


def test_a_selection_holding_an_error_member_stays_a_successful_call() -> None:
    """``select: body`` of ``{"status": 404, "body": {"error": ...}}`` went out as the
    response ``{"error": ...}``: Gemini read a failed call, and so did ctxwin's parse."""
    policy = ctxwin.load_policy({"tools": {"http_get": {"select": "body"}}})
    body = agent_body([[("http_get", {"url": "/user/9"}, "x")], [("o", {}, "ok")]], format=FMT)
    part = body["contents"][2]["parts"][0]["functionResponse"]
    part["response"] = {"status": 404, "body": {"error": "no such user", "hint": "try /users"}}
    result = policy.apply(body, format=FMT)
    response = result.request["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert response == {"output": '{"error":"no such user","hint":"try /users"}'}
    ref, _ = ctxwin.parse(result.request, format=FMT).results()
    assert (ref.result.is_error, ref.result.text) == (False, response["output"])
    again = policy.apply(result.request, format=FMT)
    assert (again.request, again.report.edits) == (result.request, ())


def test_a_selected_object_whose_error_holds_nothing_is_sent_as_the_object() -> None:
    response, res = edited(with_response({"rows": [1, 2], "n": 2}), '{"error":null,"n":2}')
    assert response == {"error": None, "n": 2}
    assert res.is_error is False


def test_an_error_still_goes_as_an_error() -> None:
    body = with_response({"error": {"code": 404, "message": "no order A1"}, "trace": "t"})
    response, res = edited(body, '{"error":{"code":404}}')
    assert response == {"error": {"code": 404}}
    assert (res.is_error, res.text) == (True, '{"error":{"code":404}}')
    response, res = edited(with_response({"error": "no order A1"}), "no order")
    assert response == {"error": "no order"}
    assert res.is_error is True


def test_an_error_whose_new_object_has_no_error_stays_an_error() -> None:
    """An error's object without its ``error`` (a step that kept only ``trace``) went out
    as that object: a successful call."""
    body = with_response({"error": "boom", "trace": ["frame 1", "frame 2"]})
    response, res = edited(body, '{"trace":["frame 1"]}')
    assert response == {"error": '{"trace":["frame 1"]}'}
    assert (res.is_error, res.text) == (True, '{"trace":["frame 1"]}')


def test_a_success_whose_error_string_was_empty_does_not_become_an_error() -> None:
    """``{"error": ""}`` is no error; its new text went out in that ``error``."""
    response, res = edited(with_response({"error": ""}), "[f result cleared]")
    assert response == {"output": "[f result cleared]"}
    assert res.is_error is False


@pytest.mark.parametrize(
    "text",
    [
        '{\n  "a": 1,\n  "b": [1, 2]\n}',  # indented: re-serialized compact, counted as not sent
        '{"id":1,"id":2}',  # a key twice: the object keeps the second
        '{"size":1e5}',  # the object writes 100000.0
        '{"size":1e400,"n":1}',  # Infinity on the wire: no JSON
        '{"ratio":NaN,"n":1}',  # NaN on the wire: no JSON
        '{"status":"shipped"}',  # one string: reads back as shipped
        '{"output":"hello"}',  # one string: reads back as hello
        '{"result":{"a":1}}',  # a wrapped object: reads back as {"a":1}
        '{"output":[1]}',  # a wrapped array: reads back as [1]
    ],
)
def test_a_new_text_goes_as_its_object_only_when_that_reads_back_as_the_text(text: str) -> None:
    response, res = edited(with_response({"rows": [1, 2], "n": 2}), text)
    assert response == {"output": text}
    assert (res.text, res.is_error) == (text, False)
    json.dumps(response, allow_nan=False)  # valid JSON on the wire


def test_a_new_text_of_one_string_for_an_error_goes_as_its_error() -> None:
    body = with_response({"error": {"code": 507, "message": "disk full"}})
    response, res = edited(body, '{"error":"disk full"}')
    assert response == {"error": '{"error":"disk full"}'}
    assert (res.text, res.is_error) == ('{"error":"disk full"}', True)


def test_a_selection_of_one_string_field_is_a_fixed_point_of_its_policy() -> None:
    """``select: {status: status}`` wrote ``{"status":"shipped"}``, sent as that object and
    read back as ``shipped``: the report counted a text the next request does not hold, and
    the policy applied to its own output noted ``shipped`` as not JSON."""
    policy = ctxwin.load_policy({"tools": {"get_order": {"select": "{status: status}"}}})
    body = agent_body([[("get_order", {"id": "A1"}, "x")], [("o", {}, "ok")]], format=FMT)
    part = body["contents"][2]["parts"][0]["functionResponse"]
    part["response"] = {"status": "shipped", "items": ["book"] * 40}
    result = policy.apply(body, format=FMT)
    response = result.request["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert response == {"output": '{"status":"shipped"}'}
    ref, _ = ctxwin.parse(result.request, format=FMT).results()
    assert ref.result.text == '{"status":"shipped"}'
    again = policy.apply(result.request, format=FMT)
    assert (again.request, again.report.edits) == (result.request, ())


OBJECTS = st.dictionaries(
    st.sampled_from(["error", "output", "a", "b"]),
    st.none() | st.booleans() | st.integers(0, 2) | st.sampled_from(["", "x", [], [1], {}]),
    max_size=3,
)


TEXTS = (
    OBJECTS.map(lambda o: json.dumps(o, separators=(",", ":")))
    | OBJECTS.map(lambda o: json.dumps(o, indent=1))
    | st.sampled_from(["x", "[1]", '"s"', "2", '{"a":NaN}', '{"a":1e400}', '{"a":1,"a":2}'])
)
"""New texts: objects (of one string too), compact or not, and texts that are no object or
no JSON at all."""
RESPONSES = [
    {"result": {"rows": [1]}},
    {"output": [1, {"a": "x"}]},
    {"output": "ok"},
    {"status": 200, "rows": [1]},
    {"error": None, "rows": [1]},
    {"error": "boom"},
    {"error": {"code": 1}, "trace": "t"},
]


@settings(max_examples=300, deadline=None)
@given(response=st.sampled_from(RESPONSES), text=TEXTS)
def test_an_edited_result_reads_back_as_its_text_and_the_same_kind_of_call(
    response: dict[str, Any], text: str
) -> None:
    body = with_response(response)
    (before,) = ctxwin.parse(body, format=FMT).results()
    response, res = edited(body, text)
    assert (res.text, res.is_error) == (text, before.result.is_error)
    json.dumps(response, allow_nan=False)


HITS = {
    "matches": [
        {"path": f"src/f{i}.py", "line": i, "text": "def foo(): pass " * 5} for i in range(4)
    ]
}


@pytest.mark.parametrize("key", ["result", "output"])
def test_select_runs_on_the_object_a_result_or_output_key_wraps(key: str) -> None:
    """google-genai's automatic function calling sends a function's dict as
    ``{"result": {...}}``: the expression ran on the wrapper, matched nothing and the
    result went whole, where the same policy selects in every other format."""
    policy = ctxwin.load_policy({"tools": {"f": {"select": "matches[].{path: path, line: line}"}}})
    result = policy.apply(with_response({key: HITS}), format=FMT)
    response = result.request["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert response == {key: [{"path": f"src/f{i}.py", "line": i} for i in range(4)]}
    ((edit,),) = [[e for e in result.report.edits if e.step == "select"]]
    assert (edit.note, edit.tokens_after < edit.tokens_before) == (None, True)
    again = policy.apply(result.request, format=FMT)
    assert (again.request, again.report.edits) == (result.request, ())


def test_select_runs_on_the_array_a_result_key_wraps() -> None:
    """A function returning a list goes as ``{"result": [...]}`` (google-genai's AFC)."""
    policy = ctxwin.load_policy({"tools": {"f": {"select": "[].path"}}})
    result = policy.apply(with_response({"result": HITS["matches"]}), format=FMT)
    response = result.request["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert response == {"result": [f"src/f{i}.py" for i in range(4)]}
    again = policy.apply(result.request, format=FMT)
    assert (again.request, again.report.edits) == (result.request, ())


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ('{"matches":[]}', {"matches": []}),  # compact JSON: its object, under the key
        ('{"status":"ok"}', {"status": "ok"}),  # one string field: reads back as the object
        ("[1,2]", [1, 2]),
        ('{\n "matches": []\n}', '{\n "matches": []\n}'),  # indented: as its text
        ('{"a":NaN}', '{"a":NaN}'),  # no JSON on the wire: as its text
        ('"quoted"', '"quoted"'),  # a JSON string: as its text, which reads back as itself
        ("[f result cleared (90 tokens)]", "[f result cleared (90 tokens)]"),
        ('{"matches": [{"path": "src/f0.py",\n[... 40 tokens truncated ...]', None),
    ],
)
def test_a_new_text_of_a_wrapped_result_goes_under_the_same_key(text: str, sent: object) -> None:
    """A placeholder, a cap or a summary of ``{"result": {...}}`` stays a ``result`` (a
    response is an object), and reads back as the text written."""
    for key in ("result", "output"):
        response, res = edited(with_response({key: HITS}), text)
        assert response == {key: text if sent is None else sent}
        assert (res.text, res.is_error) == (text, False)
        json.dumps(response, allow_nan=False)


@pytest.mark.parametrize(
    "response",
    [
        {"result": HITS, "error": None},  # other keys: the whole response, as before
        {"error": HITS},  # an error: the whole response
        {"result": 7},  # a number: the whole response
        {"data": HITS},  # another key: the whole response
    ],
)
def test_a_response_other_than_one_wrapped_object_is_read_whole(response: object) -> None:
    (ref,) = ctxwin.parse(with_response(response), format=FMT).results()
    assert ref.result.text == json.dumps(response, separators=(",", ":"))
