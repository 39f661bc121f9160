"""Gemini generateContent adapter: parse, render, check and repair on hand-written cases."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError, Opaque, PairingError, Text, ToolCall, ToolResult
from ctxwin.formats import get_adapter
from tests.conftest import corpus_params, load

FMT = "gemini"
MISSING = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
ORPHAN = "Please ensure that function response turn comes immediately after a function call turn."
INTERRUPTED = "tool result missing: the call was interrupted"


def fc(cid: str | None, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {} if cid is None else {"id": cid}
    call.update(name=name, args=args or {})
    return {"functionCall": call}


def fr(cid: str | None, name: str, response: object) -> dict[str, Any]:
    res: dict[str, Any] = {} if cid is None else {"id": cid}
    res.update(name=name, response=response)
    return {"functionResponse": res}


def out(cid: str | None, name: str, text: str) -> dict[str, Any]:
    return fr(cid, name, {"output": text})


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def results(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def body(*contents: dict[str, Any]) -> dict[str, Any]:
    return {
        "contents": list(contents),
        "systemInstruction": {"parts": [{"text": "You are an airline agent."}]},
        "tools": [{"functionDeclarations": [{"name": "get_order"}]}],
    }


_SNAKE = {
    "functionCall": "function_call",
    "functionResponse": "function_response",
    "thoughtSignature": "thought_signature",
    "systemInstruction": "system_instruction",
    "functionDeclarations": "function_declarations",
    "inlineData": "inline_data",
    "mimeType": "mime_type",
}


def snake(value: Any) -> Any:
    """The same body with the SDK's snake_case field names."""
    if isinstance(value, dict):
        return {_SNAKE.get(k, k): snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake(v) for v in value]
    return value


def codes(b: object) -> list[str]:
    return [p.code for p in ctxwin.check(b, format=FMT) if p.severity == "error"]


def edit_result(b: dict[str, Any], pos: int, part: int, text: str) -> Any:
    """Render ``b`` with one result's text replaced."""
    conv = ctxwin.parse(b)
    msgs = list(conv.messages)
    blocks = list(msgs[pos].blocks)
    res = blocks[part]
    assert isinstance(res, ToolResult)
    blocks[part] = res.with_text(text)
    msgs[pos] = msgs[pos].with_blocks(tuple(blocks))
    return get_adapter(FMT).render(conv.with_messages(tuple(msgs)))


SIGNED = {**fc("c1", "get_order", {"id": "A1"}), "thoughtSignature": "c2lnbmVk"}


# ------------------------------------------------------------------------------ parse


def test_camel_case_body_round_trips_exactly() -> None:
    b = body(
        user("Where is my order?"),
        model({"text": "Checking."}, SIGNED),
        results(out("c1", "get_order", "shipped")),
    )
    assert ctxwin.render(ctxwin.parse(b)) == b


def test_snake_case_body_round_trips_exactly() -> None:
    b = snake(body(user("Where?"), model(SIGNED), results(out("c1", "get_order", "shipped"))))
    conv = ctxwin.parse(b)
    assert (conv.format, conv.dialect) == (FMT, "snake")
    assert ctxwin.render(conv) == b


def test_bare_list_of_contents_is_detected_and_round_trips() -> None:
    items = [user("hi"), model({"text": "hello"})]
    assert ctxwin.detect(items) == FMT
    assert ctxwin.render(ctxwin.parse(items)) == items


def test_parse_maps_roles_and_makes_blocks() -> None:
    b = body(
        {"parts": [{"text": "look"}, {"inlineData": {"mimeType": "image/png", "data": "AA=="}}]},
        model({"text": "hmm", "thought": True}, {"text": "Checking."}, SIGNED),
        results(out("c1", "get_order", "shipped")),
    )
    conv = ctxwin.parse(b)
    assert [m.role for m in conv.messages] == ["user", "assistant", "user"]
    assert conv.messages[0].blocks == (Text("look"), Opaque("inlineData"))
    assert conv.messages[1].blocks == (
        Opaque("thought"),
        Text("Checking."),
        ToolCall("c1", "get_order", '{"id":"A1"}'),
    )
    (res,) = conv.messages[2].blocks
    assert isinstance(res, ToolResult)
    assert (res.call_id, res.name, res.text, res.is_error) == ("c1", "get_order", "shipped", False)


def test_snake_case_parts_parse_like_camel_case_ones() -> None:
    b = snake(body(user("x"), model({"inlineData": {"data": "AA=="}}, SIGNED)))
    blocks = ctxwin.parse(b).messages[1].blocks
    assert blocks == (Opaque("inlineData"), ToolCall("c1", "get_order", '{"id":"A1"}'))


def test_legacy_function_role_carries_results_as_a_user_content() -> None:
    b = body(
        user("go"), model(fc(None, "f")), {"role": "function", "parts": [out(None, "f", "ok")]}
    )
    conv = ctxwin.parse(b)
    assert conv.messages[2].role == "user"
    assert ctxwin.check(b) == []
    assert ctxwin.render(conv) == b


def test_result_text_is_the_single_string_value_else_the_json() -> None:
    b = body(
        user("go"),
        model(fc("a", "f"), fc("b", "g"), fc("c", "h")),
        results(
            fr("a", "f", {"return_value": "cars"}),
            fr("b", "g", {"status": "ok", "n": 2}),
            fr("c", "h", {"result": 3}),
        ),
    )
    texts = [r.result.text for r in ctxwin.parse(b).results()]
    assert texts == ["cars", '{"status":"ok","n":2}', '{"result":3}']


def test_error_response_sets_is_error() -> None:
    b = body(user("go"), model(fc("a", "f")), results(fr("a", "f", {"error": "no such country"})))
    (ref,) = ctxwin.parse(b).results()
    assert ref.result.is_error
    assert ref.result.text == "no such country"


def test_result_tool_name_is_resolved_from_its_call() -> None:
    b = body(user("hi"), model(fc("c1", "lookup")), results(out("c1", "lookup", "ok")))
    (ref,) = ctxwin.parse(b).results()
    assert (ref.tool, ref.round) == ("lookup", 0)
    assert ref.call == ToolCall("c1", "lookup", "{}")


def test_multimodal_response_parts_are_kept_as_opaque() -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": "AA=="}}
    response = fr("a", "shot", {"output": "taken"})
    response["functionResponse"]["parts"] = [image]
    b = body(user("go"), model(fc("a", "shot")), results(response))
    (ref,) = ctxwin.parse(b).results()
    assert ref.result.content == (Text("taken"), Opaque("inlineData"))
    fixed = edit_result(b, 2, 0, "ok")
    assert fixed["contents"][2]["parts"][0]["functionResponse"]["parts"][0] is image


# ------------------------------------------------------------------------------ pairing


def test_results_with_ids_pair_by_id() -> None:
    b = body(
        user("go"),
        model(fc("a", "f"), fc("b", "f")),
        results(out("b", "f", "2"), out("a", "f", "1")),
    )
    pairing = ctxwin.parse(b).pairing
    assert pairing.call_of == {(2, 0): (1, 1), (2, 1): (1, 0)}


def test_results_without_ids_pair_by_order_and_name() -> None:
    b = body(
        user("go"),
        model(fc(None, "f"), fc(None, "g"), fc(None, "f")),
        results(out(None, "g", "G"), out(None, "f", "F1"), out(None, "f", "F2")),
    )
    pairing = ctxwin.parse(b).pairing
    assert pairing.call_of == {(2, 0): (1, 1), (2, 1): (1, 0), (2, 2): (1, 2)}
    assert ctxwin.check(b) == []


def test_results_without_ids_pair_within_their_own_turn() -> None:
    b = body(
        user("go"),
        model(fc(None, "f")),
        results(out(None, "f", "first")),
        model(fc(None, "f")),
        results(out(None, "f", "second")),
    )
    refs = list(ctxwin.parse(b).results())
    assert [(r.result.text, r.round) for r in refs] == [("first", 0), ("second", 1)]
    assert ctxwin.check(b) == []


# ------------------------------------------------------------------------------ check


def test_valid_parallel_results_out_of_order_check_clean() -> None:
    b = body(
        user("go"),
        model(fc("a", "f"), fc("b", "g")),
        results(out("b", "g", "2"), out("a", "f", "1")),
    )
    assert ctxwin.check(b) == []


def test_interrupted_call_is_missing_result_with_provider_text() -> None:
    b = body(user("go"), model(fc("a", "f"), fc("b", "g")), results(out("a", "f", "1")))
    (p,) = ctxwin.check(b)
    assert (p.code, p.call_id, p.tool) == ("missing_result", "b", "g")
    assert p.path == "contents[1].parts[1]"
    assert (p.message_index, p.block_index) == (1, 1)
    assert p.message == MISSING


def test_user_message_between_call_and_response_turns_is_misplaced() -> None:
    b = body(user("go"), model(fc("a", "f")), user("are you there?"), results(out("a", "f", "1")))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path, p.message) == ("misplaced_result", "contents[3].parts[0]", MISSING)


def test_response_without_call_is_orphan() -> None:
    b = body(user("go"), model({"text": "hi"}), results(out("zzz", "f", "1")))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path, p.message) == ("orphan_result", "contents[2].parts[0]", ORPHAN)


def test_response_without_id_naming_no_call_of_its_turn_is_orphan() -> None:
    b = body(user("go"), model(fc(None, "f")), results(out(None, "f", "1"), out(None, "g", "?")))
    assert codes(b) == ["orphan_result"]


def test_second_response_for_one_call_is_duplicate() -> None:
    b = body(user("go"), model(fc("a", "f")), results(out("a", "f", "1"), out("a", "f", "1 again")))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path) == ("duplicate_result", "contents[2].parts[1]")
    assert p.message == "a second function response for the call with id a: it was already answered"


def test_repeated_call_id_in_one_turn_is_reported() -> None:
    b = body(
        user("go"),
        model(fc("a", "f"), fc("a", "g")),
        results(out("a", "f", "1"), out("a", "g", "2")),
    )
    problems = [p for p in ctxwin.check(b) if p.code == "duplicate_call_id"]
    assert [p.message for p in problems] == [
        "function call id a appears twice in contents[1].parts"
    ]


def test_empty_response_is_a_warning_not_an_error() -> None:
    b = body(user("go"), model(fc("a", "f")), results(out("a", "f", "")))
    assert ctxwin.check(b) == []
    (p,) = ctxwin.check(b, warnings=True)
    assert (p.code, p.severity, p.message) == (
        "empty_result",
        "warning",
        "the function response is empty",
    )


# ------------------------------------------------------------------------------ repair


def test_repair_adds_error_response_for_interrupted_call() -> None:
    b = body(user("go"), model(fc("a", "f"), fc("b", "g")), results(out("a", "f", "1")))
    before = copy.deepcopy(b)
    fixed, fixes = ctxwin.repair(b)
    assert b == before
    assert [f.code for f in fixes] == ["added_missing_result"]
    parts = fixed["contents"][2]["parts"]  # type: ignore[index]
    assert parts[0] is b["contents"][2]["parts"][0]
    assert parts[1] == {
        "functionResponse": {"id": "b", "name": "g", "response": {"error": INTERRUPTED}}
    }
    assert fixed["contents"][1] is b["contents"][1]  # type: ignore[index]
    assert ctxwin.check(fixed) == []


def test_repair_writes_new_content_in_the_bodys_snake_case() -> None:
    b = snake(body(user("go"), model(fc(None, "f"))))
    fixed, _ = ctxwin.repair(b)
    assert fixed["contents"][2] == {  # type: ignore[index]
        "role": "user",
        "parts": [{"function_response": {"name": "f", "response": {"error": INTERRUPTED}}}],
    }
    assert ctxwin.check(fixed) == []


def test_repair_moves_injected_user_message_after_the_responses() -> None:
    b = body(
        user("go"),
        model(fc("a", "f")),
        user("hello?"),
        results(out("a", "f", "1")),
        model({"text": "done"}),
    )
    fixed, fixes = ctxwin.repair(b)
    contents = fixed["contents"]  # type: ignore[index]
    assert [f.code for f in fixes] == ["moved_result"]
    assert contents[2] == {"role": "user", "parts": [b["contents"][3]["parts"][0]]}
    assert contents[3] is b["contents"][2]
    assert contents[4] is b["contents"][4]
    assert ctxwin.check(fixed) == []


def test_repair_drops_orphan_and_duplicate_responses() -> None:
    b = body(
        user("go"),
        results(out("nope", "f", "x")),
        model(fc("a", "f")),
        results(out("a", "f", "1"), out("a", "f", "2")),
    )
    fixed, fixes = ctxwin.repair(b)
    assert sorted(f.code for f in fixes) == ["dropped_duplicate_result", "dropped_orphan_result"]
    assert fixed["contents"][1:] == [b["contents"][2], results(out("a", "f", "1"))]  # type: ignore[index]


def test_repair_leaves_valid_out_of_order_results_alone() -> None:
    b = body(
        user("go"),
        model(fc("a", "f"), fc("b", "g")),
        results(out("b", "g", "2"), out("a", "f", "1")),
    )
    fixed, fixes = ctxwin.repair(b)
    assert fixes == []
    assert fixed == b
    assert all(x is y for x, y in zip(fixed["contents"], b["contents"], strict=True))  # type: ignore[index]


def test_strict_repair_raises_with_every_problem() -> None:
    b = body(user("go"), model(fc("a", "f"), fc("b", "g")), results(out("zzz", "f", "1")))
    with pytest.raises(PairingError) as info:
        ctxwin.repair(b, strict=True)
    assert [p.code for p in info.value.problems] == [
        "missing_result",
        "missing_result",
        "orphan_result",
    ]
    assert "3 pairing problems" in str(info.value)


# ------------------------------------------------------------------------------ edits


def test_editing_one_result_changes_only_that_part() -> None:
    b = body(
        user("go"),
        model(fc("a", "f"), fc("b", "g")),
        results(fr("a", "f", {"return_value": "x" * 500}), out("b", "g", "keep")),
    )
    fixed = edit_result(b, 2, 0, "short")
    parts = fixed["contents"][2]["parts"]
    assert parts[0] == {
        "functionResponse": {"id": "a", "name": "f", "response": {"return_value": "short"}}
    }
    assert parts[1] is b["contents"][2]["parts"][1]
    assert fixed["contents"][1] is b["contents"][1]
    assert fixed["systemInstruction"] is b["systemInstruction"]


def test_edited_structured_response_becomes_json_object_or_output() -> None:
    """An object of one string goes as ``output`` too: sent as itself it would read back as
    its bare string (``{"status": "ok"}`` as ``ok``), not as the text the report counted."""
    b = body(
        user("go"), model(fc("a", "f")), results(fr("a", "f", {"status": "ok", "rows": [1, 2]}))
    )
    as_json = edit_result(b, 2, 0, '{"status":"ok","rows":[1]}')
    response = as_json["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert response == {"status": "ok", "rows": [1]}
    one_string = edit_result(b, 2, 0, '{"status":"ok"}')
    assert one_string["contents"][2]["parts"][0]["functionResponse"]["response"] == {
        "output": '{"status":"ok"}'
    }
    as_text = edit_result(b, 2, 0, "2 rows, cleared")
    assert as_text["contents"][2]["parts"][0]["functionResponse"]["response"] == {
        "output": "2 rows, cleared"
    }


def test_cjk_text_stays_unescaped_after_an_edit() -> None:
    b = body(user("注文"), model(fc("a", "f")), results(fr("a", "f", {"注文": "発送済み", "n": 1})))
    (ref,) = ctxwin.parse(b).results()
    assert ref.result.text == '{"注文":"発送済み","n":1}'
    fixed = edit_result(b, 2, 0, '{"注文":"済","n":1}')
    response = fixed["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert response == {"注文": "済", "n": 1}
    assert "\\u" not in json.dumps(fixed, ensure_ascii=False)
    one_string = edit_result(b, 2, 0, '{"注文":"済"}')  # goes as output: see the test above
    assert one_string["contents"][2]["parts"][0]["functionResponse"]["response"] == {
        "output": '{"注文":"済"}'
    }
    assert "\\u" not in json.dumps(one_string, ensure_ascii=False)


def test_thought_signature_survives_an_edit_of_its_call() -> None:
    b = body(user("go"), model(SIGNED), results(out("c1", "get_order", "ok")))
    conv = ctxwin.parse(b)
    msgs = list(conv.messages)
    (call,) = msgs[1].blocks
    assert isinstance(call, ToolCall)
    msgs[1] = msgs[1].with_blocks((call.with_arguments('{"id":"B2"}'),))
    rendered = get_adapter(FMT).render(conv.with_messages(tuple(msgs)))
    assert rendered["contents"][1] == model(  # type: ignore[index]
        {
            "functionCall": {"id": "c1", "name": "get_order", "args": {"id": "B2"}},
            "thoughtSignature": "c2lnbmVk",
        }
    )


# ------------------------------------------------------------------------------ errors


def test_parts_that_are_not_a_list_are_a_format_error() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body({"role": "user", "parts": "hello"}))
    assert info.value.path == "contents[0].parts"
    assert str(info.value) == "contents[0].parts: 'parts' must be a list, not string"


def test_function_call_without_name_is_a_format_error() -> None:
    b = body(user("go"), model({"functionCall": {"args": {}}}))
    with pytest.raises(FormatError) as info:
        ctxwin.parse(b)
    assert (
        str(info.value)
        == "contents[1].parts[0].functionCall: a functionCall part needs a string 'name'"
    )


def test_snake_case_function_response_without_name_names_its_path() -> None:
    b = snake(body(user("go"), results({"functionResponse": {"response": {}}})))
    with pytest.raises(FormatError) as info:
        ctxwin.parse(b)
    assert info.value.path == "contents[1].parts[0].function_response"
    assert info.value.reason == "a function_response part needs a string 'name'"


def test_unknown_role_is_a_format_error() -> None:
    with pytest.raises(FormatError, match=r"contents\[0\].role: unknown role 'system'"):
        ctxwin.parse({"contents": [{"role": "system", "parts": []}]})


# ------------------------------------------------------------------------------ corpora


@pytest.mark.corpora
@pytest.mark.parametrize("path", corpus_params(FMT))
def test_recorded_request_round_trips_checks_clean_and_repairs_to_itself(path: Path) -> None:
    b = load(path)
    assert ctxwin.detect(b) == FMT
    assert ctxwin.render(ctxwin.parse(b)) == b
    assert [p for p in ctxwin.check(b) if p.severity == "error"] == []
    fixed, fixes = ctxwin.repair(b)
    assert fixes == []
    assert fixed == b


def test_a_part_holding_two_kinds_of_data_is_refused() -> None:
    """The API takes one data field per part; ctxwin used to read the call and not count the
    text."""
    part = {"text": "I will look it up. " * 100, "functionCall": {"name": "f", "args": {}}}
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body(user("go"), model(part)))
    assert info.value.path == "contents[1].parts[0]"
    assert "one kind of data, not 2 (text, functionCall)" in info.value.reason


# ------------------------------------------------------------------------------ the first turn


FIRST_CALL = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)


def test_a_history_that_starts_with_a_call_turn_is_refused_and_repaired() -> None:
    """A history cut from the front: its first content held responses whose calls were cut
    off. Repair drops them, and the model's call turn would come first, which Gemini refuses
    (google-gemini/gemini-cli#11814): a user content goes first."""
    b = body(
        results(out("a", "get_order", "x")),
        model(fc("b", "get_order")),
        results(out("b", "get_order", "y")),
    )
    fixed, fixes = ctxwin.repair(b)
    assert [f.code for f in fixes] == ["dropped_orphan_result", "added_first_user_message"]
    assert fixed["contents"][0] == user("(the conversation so far)")
    assert ctxwin.check(fixed) == []
    started = body(model(fc("b", "get_order")), results(out("b", "get_order", "y")))
    (problem,) = ctxwin.check(started)
    assert (problem.code, problem.path, problem.message) == (
        "first_not_user",
        "contents[0].parts[0]",
        FIRST_CALL,
    )


def test_a_history_that_starts_with_the_models_text_is_left_as_it_is() -> None:
    b = body(model({"text": "Hello, how can I help?"}), user("my order"))
    assert ctxwin.check(b) == []
    assert ctxwin.repair(b) == (b, [])


def test_a_call_turn_first_under_cached_content_is_left_as_it_is() -> None:
    """The cached content holds what comes before it."""
    b = {
        **body(model(fc("b", "get_order")), results(out("b", "get_order", "y"))),
        "cachedContent": "c/1",
    }
    assert codes(b) == []
