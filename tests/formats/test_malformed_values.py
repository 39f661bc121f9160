"""Values of the wrong JSON type where the adapters look a value up in a set or a dict (an
object or an array for a part's ``type``, a call block's ``id``), and keys a Python dict
may have that JSON has not: read as the adapters read any odd value (an unknown part,
carried as it came; a response of no known shape, read as JSON), or refused with a
FormatError naming where. They escaped as a bare ``TypeError`` (unhashable type) or
``KeyError``."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError
from ctxwin.testing import agent_body

POLICY = ctxwin.load_policy({"context_window": 100_000})
TIGHT = ctxwin.load_policy(
    {
        "context_window": 1500,
        "cache_breakpoints": "auto",
        "window": {"strategy": "threshold", "keep_rounds": 1, "clear_tool_inputs": True},
    }
)


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


@pytest.mark.parametrize("kind", [{"x": 1}, ["input_text"]])
def test_a_responses_part_whose_type_is_not_a_string_is_carried_as_it_came(kind: Any) -> None:
    part = {"type": kind, "text": "hi"}
    body = {"input": [{"type": "message", "role": "user", "content": [part]}]}
    out = POLICY.apply(body, format="openai-responses").request
    assert out["input"][0]["content"][0] is part


def test_an_anthropic_document_whose_source_type_is_a_list_is_media() -> None:
    doc = {"type": "document", "source": {"type": ["text"], "data": "x"}}
    body = {"messages": [{"role": "user", "content": [doc, {"type": "text", "text": "sum up"}]}]}
    result = POLICY.apply(body, format="anthropic")
    assert result.request["messages"][0]["content"][0] is doc
    block = result.conversation.messages[0].blocks[0]
    assert isinstance(block, ctxwin.Opaque)
    assert block.category == "media"


def test_an_anthropic_part_whose_type_is_an_object_takes_no_breakpoint() -> None:
    """Placing breakpoints (``cache_breakpoints: auto``) asks each part whether it takes one."""
    rounds = [[("read", {}, _words(400))], [("read", {}, "ok")]]
    body = agent_body(rounds, format="anthropic")
    odd = {"type": {"x": 1}, "text": "and this"}
    body["messages"][-1]["content"].append(odd)
    out = TIGHT.apply(body, format="anthropic").request
    assert out["messages"][-1]["content"][-1] == odd


@pytest.mark.parametrize(
    ("response", "text"),
    [({1: "x"}, '{"1":"x"}'), ({1: "x", "b": 2}, '{"1":"x","b":2}'), ({"output": "x"}, "x")],
)
def test_a_gemini_response_with_a_key_that_is_not_a_string_reads_as_json(
    response: dict[Any, Any], text: str
) -> None:
    """A Python dict's int key, which JSON encoders write as a string."""
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": response}}]},
        ]
    }
    result = POLICY.apply(body, format="gemini")
    assert result.request["contents"][2]["parts"][0]["functionResponse"]["response"] is response
    assert result.conversation.messages[2].tool_results[0].text == text


@pytest.mark.parametrize("fmt", ctxwin.FORMATS)
def test_a_key_no_json_encoder_writes_is_a_format_error(fmt: ctxwin.FormatName) -> None:
    body = agent_body([[("read", {"a": 1}, "ok")]], format=fmt)
    key = {"openai-chat": "messages", "anthropic": "messages", "gemini": "contents"}.get(
        fmt, "input"
    )
    items = list(body[key])
    at = len(items) - 1
    items[at] = {**items[at], "extra": {(1, 2): "x"}}
    with pytest.raises(FormatError) as caught:
        POLICY.apply({**body, key: items}, format=fmt)
    assert caught.value.path == f"{key}[{at}].extra"
    assert "keys must be strings, not a tuple ((1, 2))" in str(caught.value)


def test_a_langchain_call_block_whose_id_is_an_object_repeats_no_call() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from ctxwin.integrations._lc import LangChainRun
    from tests.integrations.lc_kit import make_policy

    args = {"path": "f.py", "content": "y" * 120}
    block = {"type": "tool_use", "id": {"x": 1}, "name": "write_file", "input": args}
    messages: list[Any] = [HumanMessage("go", id="h0")]
    for i in range(8):
        messages += [
            AIMessage(
                content=[{"type": "text", "text": "w"}, block],
                tool_calls=[{"name": "write_file", "args": args, "id": f"c{i}"}],
                id=f"a{i}",
            ),
            ToolMessage(_words(3000), tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    run = LangChainRun(make_policy())
    chat = run.body(messages)
    out = run.back(chat, run.apply(chat, None)).messages
    assert out[1].tool_calls[0]["args"]["content"] == "[cleared]"
    assert out[1].content[1] == block  # not one of the call's: left as it came
