"""Gemini in depth: bodies as google-genai and Vertex users really send them (nulls, bytes,
SDK objects, the SDK's ``config``), error responses, and what must survive every edit."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError, Opaque, Text, ToolCall
from ctxwin.formats import get_adapter
from tests.formats.test_gemini import fc, fr

FMT = "gemini"


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


GO = user({"text": "go"})
CAP = ctxwin.Policy({"tools": {"*": {"max_tokens": 40}}})
"""Caps every result: the latest round's too, so an apply edits it."""
WINDOW = {"strategy": "threshold", "trigger": 0.3, "target": 0.1, "keep_rounds": 1}
CLEAR = ctxwin.Policy({"context_window": 2000, "window": WINDOW})
"""Clears every result outside the newest round."""


def sdk_types() -> Any:
    return pytest.importorskip("google.genai.types")


def sdk_history(types: Any) -> list[Any]:
    """A user turn with an image, a signed parallel call, and its two responses."""
    return [
        types.Content(
            role="user",
            parts=[
                types.Part(text="what is on it?"),
                types.Part.from_bytes(data=b"\x89PNG\r\n\x1a\n\x00", mime_type="image/png"),
            ],
        ),
        types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(id="a", name="ocr", args={"page": 1}),
                    thought_signature=b"\x00\xffsig\xfe",
                ),
                types.Part(function_call=types.FunctionCall(id="b", name="ocr", args={"page": 2})),
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="a", name="ocr", response={"output": "word " * 200}
                    )
                ),
                types.Part(
                    function_response=types.FunctionResponse(
                        id="b", name="ocr", response={"output": "two"}
                    )
                ),
            ],
        ),
    ]


# ------------------------------------------------------------------------------ nulls


@pytest.mark.parametrize("by_alias", [False, True])
def test_a_model_dump_with_its_null_fields_is_read_as_the_sdk_reads_it(by_alias: bool) -> None:
    """``content.model_dump(mode="json")`` sets every unset field of a part to null; ctxwin
    refused each part as holding 7 kinds of data."""
    types = sdk_types()
    dumped = [c.model_dump(mode="json", by_alias=by_alias) for c in sdk_history(types)]
    conv = ctxwin.parse({"contents": dumped}, format=FMT)
    assert conv.messages[0].blocks == (Text("what is on it?"), Opaque("inlineData"))
    assert conv.messages[0].blocks[1].category == "media"  # type: ignore[union-attr]
    assert conv.messages[1].blocks == (
        ToolCall("a", "ocr", '{"page":1}'),
        ToolCall("b", "ocr", '{"page":2}'),
    )
    assert ctxwin.render(conv) == {"contents": dumped}
    assert ctxwin.check({"contents": dumped}, format=FMT) == []


def test_a_null_data_field_beside_text_leaves_a_text_part() -> None:
    """proto3 JSON reads ``null`` as unset: ``{"text": ..., "functionCall": null}`` is text."""
    part = {"text": "hello", "functionCall": None, "inlineData": None}
    (block,) = ctxwin.parse({"contents": [user(part)]}, format=FMT).messages[0].blocks
    assert block == Text("hello")


def unparsed_turn(types: Any) -> list[Any]:
    """A model turn of parts ctxwin carries unread: a signed thought, code and its result."""
    part = types.Part
    return [
        types.Content(role="user", parts=[part(text="run it")]),
        types.Content(
            role="model",
            parts=[
                part(text="thinking it over", thought=True, thought_signature=b"s" * 32),
                part(executable_code=types.ExecutableCode(code="print(1)", language="PYTHON")),
                part(
                    code_execution_result=types.CodeExecutionResult(
                        outcome="OUTCOME_OK", output="1\n"
                    )
                ),
                part(text="done"),
            ],
        ),
    ]


@pytest.mark.parametrize("mode", ["python", "json"])
def test_the_null_fields_of_a_model_dump_s_unread_parts_count_nothing(mode: str) -> None:
    """A null field is unset: thoughts and code parts of a ``model_dump()`` counted their
    ~80 null fields each as JSON (3.5x the count of the same objects); they still go out
    exactly as they came."""
    types = sdk_types()
    history = unparsed_turn(types)
    dumped = [c.model_dump(mode=mode) for c in history]
    assert tokens({"contents": dumped}) == tokens({"contents": history})
    assert tokens({"contents": dumped}) == tokens(
        {"contents": [c.model_dump(mode=mode, exclude_none=True) for c in history]}
    )
    if mode == "json":
        assert ctxwin.Policy({}).apply({"contents": dumped}, format=FMT).request == {
            "contents": dumped
        }


@pytest.mark.parametrize("error", [None, False])
def test_a_response_whose_error_is_null_is_not_an_error(error: object) -> None:
    """Tools often return ``{"result": ..., "error": None}``: that is a success, which
    ``select`` may narrow (errors are only capped)."""
    response = {"rows": [{"id": 1, "body": "x" * 50}], "error": error}
    b = {"contents": [GO, model(fc("a", "q")), user(fr("a", "q", response))]}
    (ref,) = ctxwin.parse(b, format=FMT).results()
    assert ref.result.is_error is False
    policy = ctxwin.Policy({"tools": {"q": {"select": "rows[].id"}}})
    sent = policy.apply(b, format=FMT).request["contents"]
    assert sent[2]["parts"][0]["functionResponse"]["response"] == {"output": "[1]"}


def test_parts_given_as_contents_are_refused_not_read_as_empty_contents() -> None:
    """The SDK takes ``contents=[image, "Caption this."]`` as one user content; ctxwin read
    each part as an empty content (its text uncounted) and sent dicts the SDK refuses."""
    types = sdk_types()
    b = {"contents": [types.Part(text="Caption this image."), types.Part(text="Briefly.")]}
    with pytest.raises(FormatError) as info:
        CAP.apply(b, format=FMT)
    assert info.value.path == "contents[0].text"
    assert info.value.reason == (
        "a content holds 'role' and 'parts', not a part's 'text': put the parts in "
        '{"role": "user", "parts": [...]} (the SDK\'s list of parts is not read)'
    )


# ------------------------------------------------------------------------------ bytes


def test_a_python_model_dump_with_bytes_is_read_and_sent_as_the_sdk_sends_bytes() -> None:
    """``model_dump()`` (python mode) keeps ``thought_signature`` and ``inline_data.data``
    as bytes; ctxwin refused them ("pass ... its .model_dump()"). They go out as the SDK's
    URL-safe base64, which it reads back as the very same bytes."""
    types = sdk_types()
    history = sdk_history(types)
    dumped = [c.model_dump(exclude_none=True) for c in history]
    before = copy.deepcopy(dumped)
    sent = CAP.apply({"contents": dumped}, format=FMT).request["contents"]
    assert dumped == before
    signed = sent[1]["parts"][0]
    assert signed["thought_signature"] == base64.urlsafe_b64encode(b"\x00\xffsig\xfe").decode()
    back = [types.Content.model_validate(c) for c in sent]
    assert back[0].parts[1].inline_data.data == b"\x89PNG\r\n\x1a\n\x00"
    assert back[1].parts[0].thought_signature == b"\x00\xffsig\xfe"
    assert back[1].parts[0].function_call == history[1].parts[0].function_call
    assert "truncated" in back[2].parts[0].function_response.response["output"]


def test_bytes_changed_in_place_are_read_again() -> None:
    contents = [GO, model({**fc("a", "f"), "thought_signature": b"\x01"}), user(fr("a", "f", {}))]
    b = {"contents": contents}
    CAP.apply(b, format=FMT)
    contents[1]["parts"][0]["thought_signature"] = b"\x02"
    sent = CAP.apply(b, format=FMT).request["contents"]
    assert sent[1]["parts"][0]["thought_signature"] == "Ag=="


# ------------------------------------------------------------------------------ envelope


def tokens(body: dict[str, Any]) -> int:
    return ctxwin.Policy({}).apply(body, format=FMT).report.tokens_before


SYSTEM = "You are a careful airline agent. " * 40
DECLARATIONS = [{"name": "get_order", "description": "Look an order up by its id. " * 20}]


def test_the_sdk_config_s_system_instruction_and_tools_are_counted() -> None:
    """``generate_content(model=, contents=, config=)``: the system prompt and the tools
    live in ``config``, and the request pays for them as at the top of a REST body."""
    rest = {
        "contents": [GO],
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "tools": [{"functionDeclarations": DECLARATIONS}],
    }
    sdk = {
        "contents": [GO],
        "config": {
            "system_instruction": {"parts": [{"text": SYSTEM}]},
            "tools": [{"functionDeclarations": DECLARATIONS}],
        },
    }
    assert tokens(sdk) == tokens(rest) > tokens({"contents": [GO]}) + 400


def test_a_generate_content_config_object_is_counted_as_its_dict() -> None:
    types = sdk_types()
    config = {"system_instruction": SYSTEM, "tools": [{"function_declarations": DECLARATIONS}]}
    body = {"contents": [GO], "config": types.GenerateContentConfig(**config)}
    sent = ctxwin.Policy({}).apply(body, format=FMT).request
    assert sent["config"] is body["config"]
    as_dict = body["config"].model_dump(mode="json", by_alias=True, exclude_none=True)
    assert tokens(body) == tokens({"contents": [GO], "config": as_dict})
    assert tokens(body) > tokens({"contents": [GO]}) + 400


def test_sdk_objects_as_system_instruction_or_tools_are_counted_not_a_type_error() -> None:
    """``json.dumps`` of a ``types.Content`` raised a bare TypeError out of ``apply``."""
    types = sdk_types()
    body = {
        "contents": [GO],
        "system_instruction": types.Content(parts=[types.Part(text=SYSTEM)]),
        "tools": [types.Tool(function_declarations=DECLARATIONS)],
    }
    plain = {
        "contents": [GO],
        "system_instruction": {"parts": [{"text": SYSTEM}]},
        "tools": [{"functionDeclarations": DECLARATIONS}],
    }
    assert tokens(body) == tokens(plain)


def get_order(order_id: str, verbose: bool = False) -> str:
    """Look an order up by its id, with its items and where it is when verbose."""
    return "shipped"


def test_a_python_function_among_the_sdk_s_tools_counts_as_the_declaration_the_sdk_sends() -> None:
    """The SDK sends a Python function given as a tool as the declaration it builds of it
    (python-genai's ``t_tool``); ctxwin counted it as nothing, ~100 tokens a tool short."""
    types = sdk_types()
    declaration = types.FunctionDeclaration.from_callable_with_api_option(
        callable=get_order, api_option="GEMINI_API", use_json_schema=True
    )
    declared = types.Tool(function_declarations=[declaration])
    as_function = {"contents": [GO], "config": types.GenerateContentConfig(tools=[get_order])}
    as_declared = {"contents": [GO], "config": types.GenerateContentConfig(tools=[declared])}
    assert tokens(as_function) == tokens(as_declared) > tokens({"contents": [GO]}) + 30


def test_a_python_functions_declaration_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """About 0.3 ms a function, at every request: built once, by the function's identity."""
    types = sdk_types()
    built = types.FunctionDeclaration.from_callable_with_api_option
    calls: list[object] = []

    def counted(**kw: Any) -> Any:
        calls.append(kw["callable"])
        return built(**kw)

    monkeypatch.setattr(types.FunctionDeclaration, "from_callable_with_api_option", counted)

    def lookup(order_id: str) -> str:
        """Look an order up."""
        return ""

    body = {"contents": [GO], "config": types.GenerateContentConfig(tools=[lookup])}
    assert tokens(body) == tokens(body) > tokens({"contents": [GO]})
    assert calls == [lookup]

    class Agent:
        def search(self, query: str) -> str:
            """Search the docs."""
            return ""

    agent = Agent()
    for _ in range(3):  # each agent.search a new object, the config built per request
        tokens({"contents": [GO], "config": types.GenerateContentConfig(tools=[agent.search])})
    assert len(calls) == 2


def test_a_function_the_sdk_cannot_declare_counts_its_name_docstring_and_signature() -> None:
    """A parameter type the SDK cannot read (it fails as it sends): an estimate, not 0."""
    types = sdk_types()

    class Order:
        pass

    def find(order: Order, deep: bool = False) -> str:
        """Find where an order stands, with every item in it and when it ships."""
        return ""

    body = {"contents": [GO], "config": types.GenerateContentConfig(tools=[find])}
    assert tokens(body) > tokens({"contents": [GO]}) + 20


@pytest.mark.parametrize("key", ["tools", "system_instruction"])
def test_a_config_value_ctxwin_cannot_read_is_refused_not_counted_as_nothing(key: str) -> None:
    value = [object()] if key == "tools" else object()
    with pytest.raises(ctxwin.InputError, match="a value of type object"):
        tokens({"contents": [GO], "config": {key: value}})


# ------------------------------------------------------------------------------ edits


def test_a_cleared_error_response_stays_an_error() -> None:
    """The placeholder of an error whose ``error`` is an object went out as ``output``,
    and the result read back as a success."""
    error = {"error": {"code": 404, "message": "no order " + "A1 " * 300}}
    b = {
        "contents": [
            GO,
            model(fc("a", "get_order")),
            user(fr("a", "get_order", error)),
            model(fc("b", "get_order")),
            user(fr("b", "get_order", {"output": "ok"})),
        ]
    }
    sent = CLEAR.apply(b, format=FMT).request
    response = sent["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert list(response) == ["error"]
    assert "cleared" in response["error"]
    (ref, _) = ctxwin.parse(sent, format=FMT).results()
    assert ref.result.is_error


def test_a_call_whose_args_are_not_an_object_names_the_wrapper_calls_use() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse({"contents": [GO, model({"functionCall": {"name": "f", "args": [1]}})]})
    assert str(info.value) == (
        "contents[1].parts[0].functionCall.args: a call's 'args' must be an object, "
        'not array (wrap it: {"input": ...})'
    )


def test_an_uninterpreted_part_is_named_by_its_data_not_a_field_before_it() -> None:
    """A field about the media (``mediaProcessing``) written first made an image count as
    JSON text instead of as media."""
    image = {"mediaProcessing": {"mode": "X"}, "inlineData": {"mimeType": "image/png"}}
    (block,) = ctxwin.parse({"contents": [user(image)]}, format=FMT).messages[0].blocks
    assert block == Opaque("inlineData")
    assert isinstance(block, Opaque)
    assert block.category == "media"


# ------------------------------------------------------------------------------ sound, pinned


def parallel_body() -> dict[str, Any]:
    """Two signed steps of one turn; the first with two parallel calls answered out of
    order, a multimodal response, and user text after the responses."""
    shot = fr("a", "shot", {"output": "taken " * 300})
    shot["functionResponse"].update(
        parts=[{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}],
        willContinue=False,
        scheduling="SILENT",
    )
    return {
        "contents": [
            GO,
            model(
                {"text": "planning", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
                {**fc("a", "shot", {"path": "p" * 80}), "thoughtSignature": "c2lnMQ=="},
                fc("b", "ls"),
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
            ),
            user(fr("b", "ls", {"output": "a.txt"}), shot, {"text": "and hurry"}),
            model({**fc("c", "ls"), "thoughtSignature": "c2lnMg=="}),
            user(fr("c", "ls", {"output": "b.txt"})),
        ],
        "systemInstruction": {"parts": [{"text": "sys"}]},
        "tools": [{"functionDeclarations": [{"name": "shot"}, {"name": "ls"}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"temperature": 0},
        "cachedContent": "cachedContents/abc",
    }


def test_clearing_keeps_signatures_and_other_fields_and_leaves_the_rest_untouched() -> None:
    b = parallel_body()
    before = copy.deepcopy(b)
    policy = ctxwin.Policy(
        {"context_window": 2000, "window": {**WINDOW, "clear_tool_inputs": True}}
    )
    sent = policy.apply(b, format=FMT).request
    assert b == before
    for key in ("systemInstruction", "tools", "toolConfig", "generationConfig", "cachedContent"):
        assert sent[key] is b[key]
    call = sent["contents"][1]["parts"][1]
    assert call == {
        "functionCall": {"id": "a", "name": "shot", "args": {"path": "[cleared]"}},
        "thoughtSignature": "c2lnMQ==",
    }
    assert sent["contents"][1]["parts"][0] is b["contents"][1]["parts"][0]
    shot = sent["contents"][2]["parts"][1]["functionResponse"]
    assert set(shot) == {"id", "name", "response", "willContinue", "scheduling"}
    assert list(shot["response"]) == ["output"]
    assert sent["contents"][2]["parts"][2] is b["contents"][2]["parts"][2]
    assert sent["contents"][3:] == b["contents"][3:]
    assert ctxwin.check(sent, format=FMT) == []
    assert policy.apply(sent, format=FMT).request == sent


def test_responses_without_ids_pair_with_same_named_calls_in_order() -> None:
    b = {
        "contents": [
            GO,
            model(fc(None, "f", {"n": 1}), fc(None, "g"), fc(None, "f", {"n": 2})),
            user(fr(None, "f", {"output": "1"}), fr(None, "g", {}), fr(None, "f", {"output": "2"})),
        ]
    }
    conv = ctxwin.parse(b, format=FMT)
    assert {r.result.text: r.call.arguments for r in conv.results()} == {
        "1": '{"n":1}',
        "{}": "{}",
        "2": '{"n":2}',
    }
    assert get_adapter(FMT).render(conv) == b


def test_a_response_without_an_id_answers_the_call_no_response_names() -> None:
    """Calls x and y of one tool answered by an id-less response (y's) and one naming x:
    the id-less one took x, so check reported x answered twice and y missing, and repair
    dropped x's real response and answered y with an error."""
    b = {
        "contents": [
            GO,
            model(
                {**fc("x", "weather", {"city": "Paris"}), "thoughtSignature": "c2ln"},
                fc("y", "weather", {"city": "Rome"}),
            ),
            user(
                fr(None, "weather", {"output": "Rome: 21C"}),
                fr("x", "weather", {"output": "Paris: 18C"}),
            ),
        ]
    }
    conv = ctxwin.parse(b, format=FMT)
    assert {r.result.text: r.call.arguments for r in conv.results()} == {
        "Rome: 21C": '{"city":"Rome"}',
        "Paris: 18C": '{"city":"Paris"}',
    }
    assert ctxwin.check(b, format=FMT) == []
    assert ctxwin.repair(b, format=FMT) == (b, [])
    assert ctxwin.Policy({}).apply(b, format=FMT).request == b


@pytest.mark.parametrize("ids", [True, False])
def test_parallel_calls_split_across_model_contents_are_joined_with_their_signature_first(
    ids: bool,
) -> None:
    """Gemini 3 signs only the first of parallel calls, and each model content is a step
    whose first call needs its signature (python-genai's streaming chat records each chunk
    as a content of its own). Repair used to make two steps, the second unsigned, and
    without ids dropped a's real response as an orphan."""
    a, b = ("a", "b") if ids else (None, None)
    signed = {**fc(a, "read", {"path": "x"}), "thoughtSignature": "c2ln"}
    contents = [
        GO,
        model(signed),
        model(fc(b, "read", {"path": "y"})),
        user(fr(a, "read", {"output": "X"}), fr(b, "read", {"output": "Y"})),
    ]
    body = {"contents": contents}
    snapshot = copy.deepcopy(body)
    assert {p.severity for p in ctxwin.check(body)} == {"error"}
    fixed, fixes = ctxwin.repair(body)
    assert fixed["contents"] == [  # type: ignore[index]
        GO,
        model(signed, fc(b, "read", {"path": "y"})),
        contents[3],
    ]
    assert [(f.code, f.path) for f in fixes] == [("merged_split_turn", "contents[2].parts[0]")]
    assert ctxwin.check(fixed) == []
    assert ctxwin.Policy({}).apply(body).request == fixed
    assert body == snapshot


def test_split_contents_whose_signed_call_is_not_first_are_joined_as_they_stand() -> None:
    """README: the model's order cannot be told from such chunks, and without ids moving a
    call ahead would pair its response with the other call of its name."""
    signed = {**fc(None, "read", {"path": "b"}), "thoughtSignature": "c2ln"}
    answers = user(fr(None, "read", {"output": "A"}), fr(None, "read", {"output": "B"}))
    body = {"contents": [GO, model(fc(None, "read", {"path": "a"})), model(signed), answers]}
    fixed, fixes = ctxwin.repair(body)
    assert fixed["contents"] == [GO, model(fc(None, "read", {"path": "a"}), signed), answers]  # type: ignore[index]
    assert [f.code for f in fixes] == ["merged_split_turn"]
    conv = ctxwin.parse(fixed, format=FMT)
    assert {r.result.text: r.call.arguments for r in conv.results()} == {
        "A": '{"path":"a"}',
        "B": '{"path":"b"}',
    }


@pytest.mark.parametrize("where", ["body", "config"])
def test_a_response_whose_call_is_in_the_cached_content_is_kept(where: str) -> None:
    """With ``cachedContent`` the provider prepends contents that may hold the call: its
    response is no orphan (it was dropped, and the model lost the result)."""
    contents = [user(fr("a", "read", {"output": "X"}), {"text": "and now?"})]
    body: dict[str, Any] = {"contents": contents}
    if where == "body":
        body["cachedContent"] = "cachedContents/abc"
    else:
        body["config"] = {"cached_content": "cachedContents/abc"}
    assert ctxwin.check(body) == []
    assert ctxwin.Policy({}).apply(body).request == body
    (problem,) = ctxwin.check({"contents": contents})
    assert problem.code == "orphan_result"
