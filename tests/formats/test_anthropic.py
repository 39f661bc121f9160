"""Anthropic Messages adapter: parse, render, check and repair on hand-written cases."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError, Opaque, PairingError, Text, ToolCall, ToolResult
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin.formats import get_adapter
from ctxwin.formats._rendered import Rendered
from tests.conftest import corpus_params, load

FMT = "anthropic"
INTERRUPTED = "tool result missing: the call was interrupted"


def tool_use(cid: str, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": args or {}}


def result(cid: str, content: object = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": content, **extra}


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": t, **extra}


def asst(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def carrier(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def user(t: str) -> dict[str, Any]:
    return {"role": "user", "content": t}


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are an airline agent.",
        "messages": list(messages),
        "tools": [],
    }


def codes(b: object) -> list[str]:
    return [p.code for p in ctxwin.check(b, format=FMT) if p.severity == "error"]


def msgs(b: object) -> list[Any]:
    assert isinstance(b, dict)
    out: list[Any] = b["messages"]
    return out


THINKING = {
    "type": "thinking",
    "thinking": "Look it up first.",
    "signature": "EqEECkYICxgCKkAo3U==",
}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}


# ------------------------------------------------------------------------------ parse


def test_parse_makes_blocks_for_text_calls_results_and_opaque_parts() -> None:
    b = body(
        user("Where is my order?"),
        asst(THINKING, text("Checking."), tool_use("c1", "get_order", {"id": "A1"})),
        carrier(result("c1", '{"status":"shipped"}')),
    )
    conv = ctxwin.parse(b)
    assert conv.format == FMT
    assert [m.role for m in conv.messages] == ["user", "assistant", "user"]
    assert conv.messages[0].blocks == (Text("Where is my order?"),)
    assert conv.messages[1].blocks == (
        Opaque("thinking"),
        Text("Checking."),
        ToolCall("c1", "get_order", '{"id":"A1"}'),
    )
    (res,) = conv.messages[2].blocks
    assert isinstance(res, ToolResult)
    assert (res.call_id, res.text, res.is_error) == ("c1", '{"status":"shipped"}', False)


def test_result_tool_name_is_resolved_from_its_call() -> None:
    b = body(user("hi"), asst(tool_use("c1", "lookup")), carrier(result("c1")))
    (ref,) = ctxwin.parse(b).results()
    assert (ref.tool, ref.round, ref.loc) == ("lookup", 0, (2, 0))


def test_tool_result_content_as_string_list_or_absent() -> None:
    b = body(
        user("go"),
        asst(tool_use("a", "f"), tool_use("b", "g"), tool_use("c", "h")),
        carrier(
            result("a", "plain"),
            result("b", [text("see"), IMAGE], is_error=True),
            {"type": "tool_result", "tool_use_id": "c"},
        ),
    )
    a, b_, c = ctxwin.parse(b).messages[2].blocks
    assert isinstance(a, ToolResult)
    assert isinstance(b_, ToolResult)
    assert isinstance(c, ToolResult)
    assert a.content == (Text("plain"),)
    assert (b_.content, b_.is_error) == ((Text("see"), Opaque("image")), True)
    assert c.content == ()


def test_system_role_message_is_a_system_message_with_opaque_blocks() -> None:
    """Tool-search traces add tools with a role "system" message mid-conversation."""
    addition = {"type": "tool_addition", "tool": {"name": "refund", "type": "tool_reference"}}
    b = body(user("go"), {"role": "system", "content": [addition]}, asst(text("ok")))
    conv = ctxwin.parse(b)
    assert conv.messages[1].role == "system"
    assert conv.messages[1].blocks == (Opaque("tool_addition"),)


def test_server_tools_are_opaque_and_not_paired_by_the_client() -> None:
    b = body(
        user("news?"),
        asst(
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            text("Here is the news."),
        ),
    )
    conv = ctxwin.parse(b)
    assert [b.kind for b in conv.messages[1].blocks if isinstance(b, Opaque)] == [
        "server_tool_use",
        "web_search_tool_result",
    ]
    assert list(conv.calls()) == []
    assert ctxwin.check(b) == []


# ------------------------------------------------------------------------------ round trip


def test_every_block_shape_round_trips_exactly() -> None:
    b = body(
        user("注文はどこ?"),
        carrier(text("look"), IMAGE, text("cached", cache_control={"type": "ephemeral"})),
        asst(
            THINKING,
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"},
            text("Checking."),
            tool_use("c1", "get_order", {"id": "A1", "note": "東京"}),
        ),
        carrier(
            result(
                "c1", [text("here"), IMAGE], is_error=False, cache_control={"type": "ephemeral"}
            ),
            text("and hurry"),
        ),
    )
    conv = ctxwin.parse(b)
    out = ctxwin.render(conv)
    assert out == b
    assert all(x is y for x, y in zip(msgs(out), b["messages"], strict=True))


def test_bare_message_list_round_trips() -> None:
    items = [user("go"), asst(tool_use("a", "f")), carrier(result("a"))]
    conv = ctxwin.parse(items)
    assert conv.format == FMT
    assert ctxwin.render(conv) == items


# ------------------------------------------------------------------------------ detection


def test_system_key_makes_a_body_surely_anthropic() -> None:
    assert get_adapter(FMT).detect({"system": "be brief", "messages": [user("hi")]}) == 2
    assert ctxwin.detect({"system": "be brief", "messages": [user("hi")]}) == FMT


def test_anthropic_tool_definitions_make_a_text_only_body_anthropic() -> None:
    tools = [{"name": "get_order", "description": "", "input_schema": {"type": "object"}}]
    assert ctxwin.detect({"messages": [user("hi")], "tools": tools}) == FMT
    assert (
        ctxwin.detect({"messages": [user("hi")], "tools": [{"type": "web_search_20250305"}]}) == FMT
    )


def test_text_only_body_is_ambiguous_with_openai_chat() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse({"messages": [user("hi"), {"role": "assistant", "content": "hello"}]})
    assert info.value.candidates == ("openai-chat", "anthropic")
    assert str(info.value) == (
        "the wire format is ambiguous: the body could be openai-chat or anthropic; "
        "pass format='openai-chat' (or another) to say which"
    )


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(
            {"messages": [{"role": "tool", "tool_call_id": "a", "content": "1"}]}, id="tool"
        ),
        pytest.param({"messages": [{"role": "developer", "content": "x"}]}, id="developer"),
        pytest.param(
            {"messages": [{"role": "assistant", "content": None, "tool_calls": []}]},
            id="tool_calls",
        ),
        pytest.param(
            {"messages": [carrier({"type": "image_url", "image_url": {"url": "data:x"}})]},
            id="image_url",
        ),
        pytest.param(
            {"messages": [{"role": "system", "content": "be brief"}]}, id="system-message"
        ),
        pytest.param({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, id="contents"),
        pytest.param([{"role": "user", "parts": [{"text": "hi"}]}], id="parts"),
        pytest.param({"input": [user("hi")]}, id="input"),
        pytest.param([], id="empty"),
    ],
)
def test_shapes_of_other_formats_rule_anthropic_out(other: object) -> None:
    assert get_adapter(FMT).detect(other) == 0


def test_detection_is_not_fooled_by_odd_values() -> None:
    """Unhashable roles and block types rule nothing in and raise nothing."""
    adapter = get_adapter(FMT)
    assert adapter.detect({"messages": [{"role": ["user"], "content": "x"}]}) == 0
    assert adapter.detect({"messages": [carrier({"type": ["text"]})]}) == 1


# ------------------------------------------------------------------------------ check


def test_parallel_calls_answered_out_of_order_check_clean() -> None:
    b = body(
        user("go"), asst(tool_use("a", "f"), tool_use("b", "g")), carrier(result("b"), result("a"))
    )
    assert ctxwin.check(b) == []


def test_ids_reused_across_turns_pair_by_position() -> None:
    """Reused ids pair by position; the API still refuses them ("`tool_use` ids must be
    unique", request-wide): the later call is a duplicate_call_id."""
    b = body(
        user("a"),
        asst(tool_use("toolu_X", "first")),
        carrier(result("toolu_X", "one")),
        asst(tool_use("toolu_X", "second")),
        carrier(result("toolu_X", "two")),
    )
    refs = list(ctxwin.parse(b).results())
    assert [(r.tool, r.round, r.result.text) for r in refs] == [
        ("first", 0, "one"),
        ("second", 1, "two"),
    ]
    (p,) = ctxwin.check(b)
    assert (p.code, p.path, p.call_id, p.tool, p.message_index) == (
        "duplicate_call_id",
        "messages[3].content[0]",
        "toolu_X",
        "second",
        3,
    )
    assert p.message == "messages.3: `tool_use` ids must be unique"


def test_interrupted_call_is_missing_result_with_provider_text() -> None:
    b = body(user("go"), asst(text("Let me look."), tool_use("toolu_a", "f")))
    (p,) = ctxwin.check(b)
    assert (p.code, p.call_id, p.tool) == ("missing_result", "toolu_a", "f")
    assert p.path == "messages[1].content[1]"
    assert (p.message_index, p.block_index) == (1, 1)
    assert p.message == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message."
    )


def test_human_message_between_call_and_results_is_misplaced() -> None:
    b = body(user("go"), asst(tool_use("a", "f")), user("are you there?"), carrier(result("a")))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path) == ("misplaced_result", "messages[3].content[0]")
    assert p.message == (
        "messages.3.content.0: unexpected `tool_use_id` found in `tool_result` blocks: a. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
        "message."
    )


def test_results_after_text_are_results_not_first() -> None:
    b = body(
        user("go"),
        asst(tool_use("a", "f"), tool_use("b", "g")),
        carrier(result("a"), text("also:"), result("b")),
    )
    (p,) = ctxwin.check(b)
    assert (p.code, p.path, p.call_id) == ("results_not_first", "messages[2].content[2]", "b")
    assert p.message == (
        "messages.2: Did not find 2 `tool_result` block(s) at the beginning of this message. "
        "Messages following `tool_use` blocks must begin with a matching number of "
        "`tool_result` blocks."
    )


def test_result_without_call_is_orphan() -> None:
    b = body(user("go"), carrier(text("x"), result("zzz")))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path) == ("orphan_result", "messages[1].content[1]")
    assert p.message.startswith(
        "messages.1.content.1: unexpected `tool_use_id` found in `tool_result` blocks: zzz."
    )


def test_second_result_for_one_call_is_duplicate() -> None:
    b = body(user("go"), asst(tool_use("a", "f")), carrier(result("a"), result("a", "again")))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path) == ("duplicate_result", "messages[2].content[1]")
    assert (
        p.message == "a second `tool_result` block for tool_use_id a: the call was already answered"
    )


def test_same_id_twice_in_one_message_is_duplicate_call_id() -> None:
    b = body(
        user("go"), asst(tool_use("a", "f"), tool_use("a", "g")), carrier(result("a"), result("a"))
    )
    (p,) = ctxwin.check(b)
    assert (p.code, p.path, p.message) == (
        "duplicate_call_id",
        "messages[1].content[1]",
        "messages.1: `tool_use` ids must be unique",
    )


def test_empty_result_is_a_warning_not_an_error() -> None:
    b = body(
        user("go"), asst(tool_use("a", "f")), carrier({"type": "tool_result", "tool_use_id": "a"})
    )
    assert ctxwin.check(b) == []
    (p,) = ctxwin.check(b, warnings=True)
    assert (p.code, p.severity, p.tool) == ("empty_result", "warning", "f")
    assert p.message == "the `tool_result` block's content is empty"


def test_block_path_of_a_string_content_is_the_content_itself() -> None:
    conv = ctxwin.parse(body(user("hi"), asst(text("hello"))))
    adapter = get_adapter(FMT)
    assert adapter.block_path(conv.messages[0], 0) == "messages[0].content"
    assert adapter.block_path(conv.messages[1], 0) == "messages[1].content[0]"


# ------------------------------------------------------------------------------ repair


def test_repair_leaves_valid_out_of_order_results_alone() -> None:
    b = body(
        user("go"), asst(tool_use("a", "f"), tool_use("b", "g")), carrier(result("b"), result("a"))
    )
    fixed, fixes = ctxwin.repair(b)
    assert fixes == []
    assert fixed == b
    assert all(x is y for x, y in zip(msgs(fixed), b["messages"], strict=True))


def test_repair_adds_error_result_for_interrupted_call() -> None:
    b = body(user("go"), asst(tool_use("a", "f")))
    before = copy.deepcopy(b)
    fixed, fixes = ctxwin.repair(b)
    assert b == before
    assert [(f.code, f.path) for f in fixes] == [("added_missing_result", "messages[1].content[0]")]
    assert msgs(fixed)[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": INTERRUPTED, "is_error": True}
        ],
    }
    assert msgs(fixed)[1] is b["messages"][1]
    assert ctxwin.check(fixed) == []


def test_repair_completes_a_partly_answered_turn_in_its_own_message() -> None:
    b = body(user("go"), asst(tool_use("a", "f"), tool_use("b", "g")), carrier(result("a", "1")))
    fixed, fixes = ctxwin.repair(b)
    assert [f.code for f in fixes] == ["added_missing_result"]
    assert msgs(fixed)[2]["content"] == [
        b["messages"][2]["content"][0],
        {"type": "tool_result", "tool_use_id": "b", "content": INTERRUPTED, "is_error": True},
    ]
    assert len(msgs(fixed)) == 3


def test_repair_moves_injected_human_message_after_results() -> None:
    """A resumed session can put the human's words between a tool_use and its result."""
    b = body(
        user("go"),
        asst(tool_use("a", "f")),
        user("hello?"),
        carrier(result("a")),
        asst(text("done")),
    )
    fixed, fixes = ctxwin.repair(b)
    out = msgs(fixed)
    assert [m["content"] for m in out[2:4]] == [[b["messages"][3]["content"][0]], "hello?"]
    assert out[3] is b["messages"][2]
    assert [(f.code, f.path) for f in fixes] == [("moved_result", "messages[3].content[0]")]
    assert ctxwin.check(fixed) == []


def test_repair_puts_results_first_in_the_same_message() -> None:
    b = body(user("go"), asst(tool_use("a", "f")), carrier(text("here you go"), result("a")))
    fixed, fixes = ctxwin.repair(b)
    assert msgs(fixed)[2]["content"] == [b["messages"][2]["content"][1], text("here you go")]
    assert len(msgs(fixed)) == 3
    assert [(f.code, f.path) for f in fixes] == [("reordered_results", "messages[2].content[0]")]
    assert ctxwin.check(fixed) == []


def test_repair_drops_orphan_and_duplicate_results() -> None:
    b = body(
        user("go"),
        carrier(text("first"), result("nope")),
        asst(tool_use("a", "f")),
        carrier(result("a", "1"), result("a", "2")),
    )
    fixed, fixes = ctxwin.repair(b)
    assert sorted(f.code for f in fixes) == ["dropped_duplicate_result", "dropped_orphan_result"]
    assert msgs(fixed)[1]["content"] == [text("first")]
    assert msgs(fixed)[3]["content"] == [result("a", "1")]
    assert ctxwin.check(fixed) == []


def test_repair_leaves_empty_result_alone_unless_normalizing() -> None:
    b = body(
        user("go"),
        asst(tool_use("a", "f"), tool_use("b", "g")),
        carrier({"type": "tool_result", "tool_use_id": "a"}, result("b", [])),
    )
    assert ctxwin.repair(b) == (b, [])
    fixed, fixes = ctxwin.repair(b, normalize=True)
    assert [f.code for f in fixes] == ["filled_empty_result", "filled_empty_result"]
    assert msgs(fixed)[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "(empty result)"},
        result("b", [text("(empty result)")]),
    ]


def test_repair_writes_a_renamed_duplicate_id_back_to_call_and_result() -> None:
    b = body(
        user("go"),
        asst(tool_use("a", "f"), tool_use("a", "g")),
        carrier(result("a", "1"), result("a", "2")),
    )
    fixed, fixes = ctxwin.repair(b)
    assert [f.code for f in fixes] == ["renamed_duplicate_call_id"]
    assert [blk["id"] for blk in msgs(fixed)[1]["content"]] == ["a", "a_2"]
    assert [blk["tool_use_id"] for blk in msgs(fixed)[2]["content"]] == ["a", "a_2"]
    assert ctxwin.check(fixed) == []


def test_strict_repair_raises_with_every_problem() -> None:
    b = body(user("go"), asst(tool_use("a", "f"), tool_use("b", "g")), carrier(result("zzz")))
    with pytest.raises(PairingError) as info:
        ctxwin.repair(b, strict=True)
    assert [p.code for p in info.value.problems] == [
        "missing_result",
        "missing_result",
        "orphan_result",
    ]
    assert "3 pairing problems" in str(info.value)


# ------------------------------------------------------------------------------ edits


def test_editing_one_result_changes_only_that_block() -> None:
    b = body(
        user("go"),
        asst(tool_use("a", "f"), tool_use("b", "g")),
        carrier(
            result("a", "long output", is_error=False, cache_control={"type": "ephemeral"}),
            result("b", "other"),
        ),
    )
    conv = ctxwin.parse(b)
    messages = list(conv.messages)
    first, second = messages[2].blocks
    assert isinstance(first, ToolResult)
    messages[2] = messages[2].with_blocks((first.with_text("short"), second))
    out = msgs(get_adapter(FMT).render(conv.with_messages(tuple(messages))))
    assert out[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": "short",
        "is_error": False,
        "cache_control": {"type": "ephemeral"},
    }
    assert out[2]["content"][1] is b["messages"][2]["content"][1]
    assert all(out[k] is b["messages"][k] for k in (0, 1))


def test_edited_list_result_keeps_its_list_shape_and_images() -> None:
    b = body(user("go"), asst(tool_use("a", "f")), carrier(result("a", [text("big"), IMAGE])))
    conv = ctxwin.parse(b)
    (res,) = conv.messages[2].blocks
    assert isinstance(res, ToolResult)
    edited = conv.with_messages(
        (*conv.messages[:2], conv.messages[2].with_blocks((res.with_text("small"),)))
    )
    out = msgs(ctxwin.render(edited))
    assert out[2]["content"] == [result("a", [text("small"), IMAGE])]


def test_edited_arguments_are_written_as_an_input_object() -> None:
    b = body(
        user("go"), asst(tool_use("a", "f", {"q": "x"}), tool_use("b", "g"), tool_use("c", "h"))
    )
    conv = ctxwin.parse(b)
    a, b_, c = conv.messages[1].blocks
    assert isinstance(a, ToolCall)
    assert isinstance(b_, ToolCall)
    assert isinstance(c, ToolCall)
    edited = conv.messages[1].with_blocks(
        (a.with_arguments('{"q":"y"}'), b_.with_arguments("[1, 2]"), c.with_arguments("not json"))
    )
    out = msgs(ctxwin.render(conv.with_messages((conv.messages[0], edited))))
    assert [blk["input"] for blk in out[1]["content"]] == [
        {"q": "y"},
        {"input": [1, 2]},
        {"input": "not json"},
    ]


def test_cjk_text_stays_unescaped_after_an_edit() -> None:
    b = body(user("注文"), asst(tool_use("a", "f", {"q": "注文"})), carrier(result("a", "")))
    conv = ctxwin.parse(b)
    (call,) = conv.messages[1].blocks
    assert isinstance(call, ToolCall)
    assert call.arguments == '{"q":"注文"}'
    fixed = ctxwin.repair(b, normalize=True).body
    assert "\\u" not in json.dumps(fixed, ensure_ascii=False)
    edited = conv.messages[1].with_blocks((call.with_arguments('{"q":"東京"}'),))
    out = msgs(ctxwin.render(conv.with_messages((conv.messages[0], edited, conv.messages[2]))))
    assert out[1]["content"][0]["input"] == {"q": "東京"}


def test_string_content_stays_a_string_while_it_is_one_text() -> None:
    conv = ctxwin.parse(body(user("hello")))
    (msg,) = conv.messages
    one = msg.with_blocks((Text("hi"),))
    two = msg.with_blocks((Text("hi"), Text("there")))
    assert msgs(ctxwin.render(conv.with_messages((one,))))[0] == user("hi")
    assert msgs(ctxwin.render(conv.with_messages((two,))))[0] == carrier(text("hi"), text("there"))


# ------------------------------------------------------------------------------ errors


def test_tool_use_without_id_names_its_path() -> None:
    b = body(user("go"), asst(text("ok"), {"type": "tool_use", "name": "f", "input": {}}))
    with pytest.raises(FormatError) as info:
        ctxwin.parse(b)
    assert info.value.path == "messages[1].content[1].id"
    assert str(info.value) == "messages[1].content[1].id: a tool_use block needs a string 'id'"


def test_content_of_wrong_type_is_a_format_error() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body(user("go"), {"role": "assistant", "content": 42}))
    assert str(info.value) == (
        "messages[1].content: 'content' must be a string or a list of blocks, not number"
    )


def test_missing_content_is_a_format_error() -> None:
    with pytest.raises(FormatError, match=r"^messages\[0\].content: .* blocks, and is missing$"):
        ctxwin.parse(body({"role": "user"}))


def test_tool_result_content_of_wrong_type_names_its_path() -> None:
    b = body(user("go"), asst(tool_use("a", "f")), carrier(result("a", {"text": "x"})))
    with pytest.raises(FormatError) as info:
        ctxwin.parse(b)
    assert str(info.value) == (
        "messages[2].content[0].content: a tool_result's 'content' must be a string or a list "
        "of blocks, not object"
    )


def test_tool_result_without_tool_use_id_names_its_path() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body(carrier({"type": "tool_result", "content": "x"})))
    assert info.value.path == "messages[0].content[0].tool_use_id"


def test_block_that_is_not_an_object_is_a_format_error() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body(carrier(text("a")) | {"content": [text("a"), "b"]}))
    assert str(info.value) == "messages[0].content[1]: a content block must be an object"


def test_unknown_role_is_a_format_error() -> None:
    with pytest.raises(FormatError, match=r"messages\[0\].role: unknown role 'robot'"):
        ctxwin.parse({"messages": [{"role": "robot", "content": "x"}]}, format=FMT)


# ------------------------------------------------------------------------------ corpora


@pytest.mark.corpora
@pytest.mark.parametrize("path", corpus_params("anthropic"))
def test_corpus_round_trips_checks_clean_and_repairs_to_itself(path: Path) -> None:
    b = load(path)
    before = copy.deepcopy(b)
    assert ctxwin.detect(b) == FMT
    assert ctxwin.render(ctxwin.parse(b)) == b
    assert [p for p in ctxwin.check(b) if p.severity == "error"] == []
    assert ctxwin.repair(b) == (b, [])
    assert b == before


# ------------------------------------------------------------------------------ the first role


def test_a_body_that_starts_with_an_assistant_is_refused_and_repaired() -> None:
    b = body(asst(text("Earlier I said hello.")), user("go on"))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path) == ("first_not_user", "messages[0].content[0]")
    assert p.message == 'messages: first message must use the "user" role'
    fixed, fixes = ctxwin.repair(b)
    assert [f.code for f in fixes] == ["added_first_user_message"]
    assert msgs(fixed)[0] == {"role": "user", "content": [text("(the conversation so far)")]}
    assert ctxwin.check(fixed) == []


def test_repair_that_empties_the_first_user_message_puts_a_user_message_first() -> None:
    """The first user message held only a misplaced result: moving it out would leave the
    body starting with the assistant."""
    b = body(carrier(result("a")), asst(tool_use("a", "f")), user("next"))
    fixed, fixes = ctxwin.repair(b)
    assert msgs(fixed)[0]["role"] == "user"
    assert ctxwin.check(fixed) == []
    assert "added_first_user_message" in [f.code for f in fixes]


# ------------------------------------------------------------------------------ the last role


def test_repair_that_takes_away_what_ended_the_request_puts_a_user_message_last() -> None:
    """A request that ended with the user's message (here only a result whose call a client
    trimmed away) ends with one after repair: ending with the model's message, it would ask
    for a prefill, which Claude models from 4.6 on refuse ("This model does not support
    assistant message prefill. The conversation must end with a user message")."""
    b = body(user("summarise the repo"), asst(text("Let me look.")), carrier(result("gone")))
    fixed, fixes = ctxwin.repair(b)
    assert [f.code for f in fixes] == ["dropped_orphan_result", "added_last_user_message"]
    assert fixes[1].path == "messages[2].content[0]"
    assert msgs(fixed)[-1] == {"role": "user", "content": [text("(continue)")]}
    assert ctxwin.check(fixed) == []
    result_ = ctxwin.Policy({"repair": {"last_user": "go on"}}).apply(b)
    assert msgs(result_.request)[-1] == {"role": "user", "content": [text("go on")]}
    assert "added_last_user_message" in [e.note for e in result_.report.edits if e.step == "repair"]


def test_repair_that_moves_up_a_late_result_puts_a_user_message_last() -> None:
    """A result that came after the user spoke again is moved right after its call: what
    ended the request went, so a user message goes last."""
    b = body(
        user("summarise the repo"),
        asst(tool_use("a", "ls")),
        user("are you stuck?"),
        asst(text("Still waiting for ls.")),
        carrier(result("a")),
    )
    fixed, fixes = ctxwin.repair(b)
    assert [f.code for f in fixes] == ["moved_result", "added_last_user_message"]
    assert msgs(fixed)[-1] == {"role": "user", "content": [text("(continue)")]}
    assert ctxwin.check(fixed) == []


def test_a_request_that_ended_with_the_models_message_still_does() -> None:
    """A prefill the user sent stays one: repair adds no user message after it."""
    b = body(user("go"), asst(text("Let me look.")), carrier(result("gone")), asst(text("{")))
    fixed, fixes = ctxwin.repair(b)
    assert "added_last_user_message" not in [f.code for f in fixes]
    assert msgs(fixed)[-1] == {"role": "assistant", "content": [text("{")]}


def test_is_error_must_be_a_boolean() -> None:
    b = body(user("go"), asst(tool_use("a", "f")), carrier(result("a", is_error="no")))
    with pytest.raises(FormatError) as info:
        ctxwin.parse(b)
    assert info.value.path == "messages[2].content[0].is_error"
    assert "'is_error' must be true or false, not string 'no'" in info.value.reason


@pytest.mark.parametrize("resume", [True, False], ids=["prefix", "memo"])
def test_a_marked_message_renders_with_the_hour_of_the_body_it_goes_in(resume: bool) -> None:
    """A message ctxwin marks takes ``ttl: "1h"`` from a body cached automatically for an
    hour: the render's memos, which know the message by identity, keep the two apart."""
    adapter = get_adapter("anthropic")
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "hello"}]}
    hour = {"type": "ephemeral", "ttl": "1h"}
    conv = adapter.parse(body)
    five = conv.with_messages((conv.messages[0].with_cache(True),))
    hours = dataclasses.replace(five, source={**body, "cache_control": hour})
    memo, prefix = Memo(), PrefixCache[Rendered]() if resume else None
    for c, want in [(five, {"type": "ephemeral"}), (hours, hour), (five, {"type": "ephemeral"})]:
        sent = adapter.render(c, memo, prefix)
        assert isinstance(sent, dict)
        assert sent["messages"][0]["content"][0]["cache_control"] == want
