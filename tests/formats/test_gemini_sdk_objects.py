"""Gemini histories holding google-genai objects as users build them wrongly or oddly: the
response appended in place of its content, their own objects inside a result, values the
SDK cannot serialize."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError

FMT = "gemini"


def sdk_types() -> Any:
    return pytest.importorskip("google.genai.types")


def read_call(types: Any) -> list[Any]:
    """A user turn, the model's turn calling ``read``, and the user's turn answering it."""
    return [
        types.Content(role="user", parts=[types.Part(text="read a.py")]),
        types.Content(
            role="model",
            parts=[
                types.Part(text="I will read it."),
                types.Part(function_call=types.FunctionCall(name="read", args={}, id="c1")),
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        name="read", id="c1", response={"output": "print('hi')"}
                    )
                )
            ],
        ),
    ]


@pytest.mark.parametrize("what", ["response", "candidate"])
def test_a_response_appended_in_place_of_its_content_is_refused_with_the_fix(what: str) -> None:
    """Read as an empty user content, it lost the model's call, and repair dropped the
    user's result as an orphan; the SDK then failed with a pydantic error."""
    types = sdk_types()
    contents = read_call(types)
    candidate = types.Candidate(content=contents[1], finish_reason="STOP")
    contents[1] = (
        types.GenerateContentResponse(candidates=[candidate]) if what == "response" else candidate
    )
    with pytest.raises(FormatError) as info:
        ctxwin.Policy({}).apply({"contents": contents}, format=FMT)
    assert info.value.path == "contents[1]"
    assert "append the model's content, response.candidates[0].content" in info.value.reason


def test_a_content_with_a_field_the_api_does_not_have_is_refused() -> None:
    contents = [{"role": "user", "parts": [{"text": "hi"}], "name": "ann"}]
    with pytest.raises(FormatError) as info:
        ctxwin.parse({"contents": contents}, format=FMT)
    assert info.value.path == "contents[0].name"
    assert info.value.reason == "a content holds 'role' and 'parts' only, not 'name'"


def test_a_model_of_the_user_s_in_a_response_goes_out_as_the_sdk_sends_it() -> None:
    """The SDK sends it as its ``model_dump(exclude_none=True)``: by field name, without
    nulls; ctxwin sent it by alias with its nulls, a result the model never gets without
    ctxwin. genai's own fields keep their alias."""
    types = sdk_types()
    pydantic = pytest.importorskip("pydantic")

    class Weather(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(populate_by_name=True)
        temperature_c: float = pydantic.Field(alias="temperatureCelsius")
        station_name: str | None = None

    contents = read_call(types)
    answer = contents[2].parts[0].function_response
    answer.response = {"output": Weather(temperature_c=21.5, station_name=None)}
    contents[1].parts[1].function_call.args = {"where": Weather(temperature_c=3)}
    sent = ctxwin.Policy({}).apply({"contents": contents}, format=FMT).request["contents"]
    assert sent[2]["parts"][0]["functionResponse"]["response"] == {
        "output": {"temperature_c": 21.5}
    }
    assert sent[1]["parts"][1]["functionCall"]["args"] == {"where": {"temperature_c": 3.0}}
    assert answer.response["output"].station_name is None  # the user's objects untouched


class Row:
    """What a tool might return: an object of the user's, neither JSON nor pydantic."""


def deep(levels: int) -> dict[str, object]:
    value: dict[str, object] = {"a": "x"}
    for _ in range(levels):
        value = {"a": value}
    return value


def cyclic() -> dict[str, object]:
    value: dict[str, object] = {"output": "x"}
    value["self"] = value
    return value


@pytest.mark.parametrize("fmt", [FMT, None])
def test_a_value_pydantic_cannot_write_in_an_sdk_object_is_named_where_it_is(
    fmt: str | None,
) -> None:
    """pydantic's PydanticSerializationError escaped bare; as dicts, the same data gets the
    FormatError naming the value and where it is."""
    types = sdk_types()
    contents = read_call(types)
    contents[2].parts[0].function_response.response = {"output": Row()}
    with pytest.raises(FormatError) as info:
        ctxwin.Policy({}).apply({"contents": contents}, format=fmt)
    assert info.value.path == "contents[2].parts[0].functionResponse.response.output"
    assert "Row is not something ctxwin can read" in info.value.reason


@pytest.mark.parametrize("fmt", [FMT, None])
@pytest.mark.parametrize("value", [deep(3000), cyclic()], ids=["deep", "cyclic"])
def test_sdk_objects_too_deep_or_cyclic_are_refused_as_too_deep(
    value: object, fmt: str | None
) -> None:
    """pydantic's ValueError ("Maximum serialization depth exceeded", "Circular reference
    detected") escaped bare."""
    types = sdk_types()
    contents = read_call(types)
    contents[2].parts[0].function_response.response = value
    with pytest.raises(FormatError) as info:
        ctxwin.Policy({}).apply({"contents": contents}, format=fmt)
    assert info.value.path == "contents[2]"
    assert "nested more than 200 levels deep" in info.value.reason
