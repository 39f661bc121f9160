"""OpenAI Responses adapter: parse, render, check and repair on hand-written cases."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError, Opaque, PairingError, Text, ToolCall, ToolResult
from ctxwin.formats import get_adapter
from tests.conftest import CHAINED_WITHOUT_ID, corpus_params, load

FMT = "openai-responses"
ADAPTER = get_adapter(FMT)


def call(cid: str, name: str, args: str = "{}") -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": name, "arguments": args}


def out(cid: str, output: object) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": output}


def reasoning(n: int) -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": f"gAAAA{n}=="}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def body(*items: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {
        "model": "gpt-5",
        "instructions": "You help.",
        "input": list(items),
        "tools": [],
        **keys,
    }


def codes(b: object) -> list[str]:
    return [p.code for p in ctxwin.check(b, format=FMT) if p.severity == "error"]


def fixed_items(b: object, **kwargs: Any) -> tuple[list[Any], list[str]]:
    fixed, fixes = ctxwin.repair(b, **kwargs)
    assert isinstance(fixed, dict)
    return fixed["input"], [f.code for f in fixes]


# ------------------------------------------------------------------------------ parse


def test_parse_makes_one_message_per_item() -> None:
    b = body(
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Be brief."}],
        },
        user("Where is my order?"),
        reasoning(1),
        call("c1", "get_order", '{"id":"A1"}'),
        out("c1", '{"status":"shipped"}'),
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Shipped."}],
        },
    )
    conv = ctxwin.parse(b)
    assert conv.format == FMT
    assert [m.role for m in conv.messages] == [
        "system",
        "user",
        "assistant",
        "assistant",
        "tool",
        "assistant",
    ]
    assert [m.index for m in conv.messages] == [0, 1, 2, 3, 4, 5]
    assert conv.messages[0].blocks == (Text("Be brief."),)
    assert conv.messages[2].blocks == (Opaque("reasoning"),)
    assert conv.messages[3].blocks == (ToolCall("c1", "get_order", '{"id":"A1"}'),)
    (res,) = conv.messages[4].blocks
    assert isinstance(res, ToolResult)
    assert (res.call_id, res.text, res.kind) == ("c1", '{"status":"shipped"}', "function")


def test_message_parts_other_than_text_are_opaque() -> None:
    image = {"type": "input_image", "image_url": "data:x", "detail": "auto"}
    refusal = {"type": "refusal", "refusal": "no"}
    b = body({"role": "user", "content": [{"type": "input_text", "text": "look"}, image]})
    b["input"].append({"type": "message", "role": "assistant", "content": [refusal]})
    conv = ctxwin.parse(b)
    assert conv.messages[0].blocks == (Text("look"), Opaque("input_image"))
    assert conv.messages[1].blocks == (Opaque("refusal"),)


def test_result_tool_name_is_resolved_from_its_call() -> None:
    b = body(user("hi"), call("c1", "lookup"), out("c1", "ok"))
    (ref,) = ctxwin.parse(b).results()
    assert (ref.tool, ref.round) == ("lookup", 0)


def test_custom_tool_call_is_a_custom_call() -> None:
    b = body(
        user("patch it"),
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done"},
    )
    conv = ctxwin.parse(b)
    assert conv.messages[1].blocks == (ToolCall("c1", "apply_patch", "*** Begin", kind="custom"),)
    (res,) = conv.messages[2].blocks
    assert isinstance(res, ToolResult)
    assert (res.kind, res.text) == ("custom", "Done")
    assert ctxwin.render(conv) == b
    assert ctxwin.check(b) == []


def test_builtin_client_calls_pair_by_call_id() -> None:
    """local_shell, shell, apply_patch and computer calls: kind and name are the type stem."""
    shell_out = [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]
    screenshot = {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"}
    b = body(
        user("go"),
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "L", "status": "completed",
         "action": {"type": "exec", "command": ["ls"], "env": {}}},
        {"type": "local_shell_call_output", "id": "L", "output": '{"output":"a.txt"}'},
        {"type": "shell_call", "call_id": "S", "action": {"commands": ["ls"]}},
        {"type": "shell_call_output", "call_id": "S", "output": shell_out},
        {"type": "apply_patch_call", "call_id": "P", "status": "completed",
         "operation": {"type": "delete_file", "path": "a.txt"}},
        {"type": "apply_patch_call_output", "call_id": "P", "status": "completed"},
        {"type": "computer_call", "call_id": "C", "action": {"type": "screenshot"}},
        {"type": "computer_call_output", "call_id": "C", "output": screenshot},
    )  # fmt: skip
    conv = ctxwin.parse(b)
    calls = [c for _, c in conv.calls()]
    assert [(c.id, c.kind, c.name) for c in calls] == [
        ("L", "local_shell", "local_shell"),
        ("S", "shell", "shell"),
        ("P", "apply_patch", "apply_patch"),
        ("C", "computer", "computer"),
    ]
    assert calls[1].arguments == '{"commands":["ls"]}'
    assert [r.tool for r in conv.results()] == ["local_shell", "shell", "apply_patch", "computer"]
    assert ctxwin.render(conv) == b
    errors = [p for p in ctxwin.check(b) if p.severity == "error"]
    assert errors == []


def test_server_side_items_are_opaque_assistant_items() -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {}}
    approval = {"type": "mcp_approval_response", "approval_request_id": "a1", "approve": True}
    b = body(user("news?"), search, approval, {"type": "some_future_item", "x": 1})
    conv = ctxwin.parse(b)
    assert [(m.role, m.blocks) for m in conv.messages[1:]] == [
        ("assistant", (Opaque("web_search_call"),)),
        ("tool", (Opaque("mcp_approval_response"),)),  # an answer in the model's turn
        ("assistant", (Opaque("some_future_item"),)),
    ]
    assert ctxwin.render(conv) == b


def test_block_path_points_into_message_content() -> None:
    b = body(
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
        },
        user("c"),
        call("c1", "f"),
    )
    conv = ctxwin.parse(b)
    assert ADAPTER.block_path(conv.messages[0], 1) == "input[0].content[1]"
    assert ADAPTER.block_path(conv.messages[1], 0) == "input[1].content"
    assert ADAPTER.block_path(conv.messages[2], 0) == "input[2]"


# ------------------------------------------------------------------------------ round trip


def test_string_input_is_one_user_message_and_renders_back_as_the_string() -> None:
    b = {"model": "gpt-5", "input": "Hello 世界"}
    conv = ctxwin.parse(b)
    assert [(m.role, m.blocks) for m in conv.messages] == [("user", (Text("Hello 世界"),))]
    assert ADAPTER.block_path(conv.messages[0], 0) == "input"
    assert ctxwin.render(conv) == b


def test_edited_string_input_renders_the_list_form() -> None:
    conv = ctxwin.parse({"model": "gpt-5", "input": "Hello"})
    msg = conv.messages[0]
    edited = conv.with_messages((msg.with_blocks((Text("Hi"),)),))
    assert ctxwin.render(edited) == {
        "model": "gpt-5",
        "input": [{"type": "message", "role": "user", "content": "Hi"}],
    }


def test_string_input_with_a_message_added_renders_the_list_form() -> None:
    conv = ctxwin.parse({"input": "Hello"})
    extra = ctxwin.Message("assistant", (Text("Hi!"),))
    assert ctxwin.render(conv.with_messages((*conv.messages, extra))) == {
        "input": [
            {"type": "message", "role": "user", "content": "Hello"},
            {"type": "message", "role": "assistant", "content": "Hi!"},
        ]
    }


def test_short_form_messages_round_trip_exactly() -> None:
    b = body(
        {"role": "system", "content": "Answer in JSON."},
        user("What is the largest city?"),
        {"role": "assistant", "content": ""},
        call("c1", "get_country"),
        out("c1", "Mexico"),
    )
    assert ctxwin.render(ctxwin.parse(b)) == b


def test_reasoning_with_encrypted_content_passes_through_untouched() -> None:
    b = body(user("go"), reasoning(1), call("c1", "f"), out("c1", "ok"))
    rendered = ctxwin.render(ctxwin.parse(b))
    assert isinstance(rendered, dict)
    assert rendered["input"][1] is b["input"][1]


def test_list_outputs_round_trip_exactly() -> None:
    parts = [
        {"type": "input_text", "text": "chart:"},
        {"type": "input_image", "image_url": "data:x"},
    ]
    b = body(user("plot"), call("c1", "plot"), out("c1", parts))
    conv = ctxwin.parse(b)
    (res,) = conv.messages[2].blocks
    assert isinstance(res, ToolResult)
    assert res.content == (Text("chart:"), Opaque("input_image"))
    assert ctxwin.render(conv) == b


def test_bare_list_of_items_round_trips() -> None:
    items = [user("go"), call("c1", "f"), out("c1", "ok")]
    assert ctxwin.render(ctxwin.parse(items)) == items


# ------------------------------------------------------------------------------ detection


def test_detects_responses_by_body_keys_and_item_types() -> None:
    assert ctxwin.detect({"input": "hi"}) == FMT
    assert ctxwin.detect({"input": [user("hi")]}) == FMT
    assert ADAPTER.detect({"input": [user("hi")], "instructions": "x"}) == 2
    assert ADAPTER.detect({"input": [out("c1", "x")], "previous_response_id": "resp_1"}) == 2
    assert ADAPTER.detect({"input": [{"type": "message", "role": "user", "content": "x"}]}) == 2


def test_bare_list_of_role_content_items_is_ambiguous_with_openai_chat() -> None:
    items = [user("hi"), {"role": "assistant", "content": "hello"}]
    assert ADAPTER.detect(items) == 1
    assert get_adapter("openai-chat").detect(items) == 1
    with pytest.raises(FormatError) as info:
        ctxwin.detect(items)
    assert {"openai-chat", FMT} <= set(info.value.candidates)


def test_bare_list_with_function_call_items_is_responses() -> None:
    items = [user("hi"), call("c1", "f"), out("c1", "ok")]
    assert ADAPTER.detect(items) == 2
    assert ctxwin.detect(items) == FMT


def test_bare_list_with_input_text_parts_is_responses() -> None:
    items = [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    assert ctxwin.detect(items) == FMT


@pytest.mark.parametrize(
    "b",
    [
        {"messages": [], "input": []},
        {"input": [user("hi"), {"role": "tool", "tool_call_id": "c1", "content": "x"}]},
        [user("hi"), {"role": "assistant", "content": None, "tool_calls": []}],
        [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
            }
        ],
        [{"role": "model", "parts": [{"text": "hi"}]}],
        [],
        "hi",
    ],
    ids=["messages-key", "tool-role", "tool-calls", "anthropic-part", "gemini", "empty", "string"],
)
def test_other_formats_are_ruled_out(b: object) -> None:
    assert ADAPTER.detect(b) == 0


# ------------------------------------------------------------------------------ check


PARALLEL = body(
    user("go"),
    reasoning(1),
    call("a", "f"),
    reasoning(2),
    call("b", "g"),
    out("b", "2"),
    out("a", "1"),
)


def test_parallel_calls_with_reasoning_between_answered_out_of_order_check_clean() -> None:
    conv = ctxwin.parse(PARALLEL)
    assert [(r.tool, r.round) for r in conv.results()] == [("g", 0), ("f", 0)]
    assert ctxwin.check(PARALLEL) == []


def test_interrupted_call_is_missing_result_with_provider_text() -> None:
    b = body(user("go"), reasoning(1), call("a", "f"))
    (p,) = ctxwin.check(b)
    assert (p.code, p.call_id, p.tool) == ("missing_result", "a", "f")
    assert p.path == "input[2]"
    assert (p.message_index, p.block_index) == (2, 0)
    assert p.message == "No tool output found for function call a."


def test_output_before_its_call_is_misplaced() -> None:
    b = body(user("go"), out("a", "1"), call("a", "f"))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path, p.call_id) == ("misplaced_result", "input[1]", "a")
    assert p.message == "No tool call found for function call output with call_id a."


def test_user_message_between_call_and_output_is_legal() -> None:
    b = body(user("go"), call("a", "f"), user("are you there?"), out("a", "1"))
    assert ctxwin.check(b) == []


def test_output_without_call_in_a_chained_request_is_legal() -> None:
    """With previous_response_id the call lives on the server."""
    b = body(out("call_1", "Sunny"), previous_response_id="resp_123")
    assert ctxwin.parse(b).server_state
    assert ctxwin.check(b) == []


def test_conversation_key_also_puts_calls_on_the_server() -> None:
    b = body(out("call_1", "Sunny"), conversation="conv_123")
    assert ctxwin.check(b) == []


def test_item_reference_puts_calls_on_the_server() -> None:
    """An item_reference can stand for a call the request does not show."""
    b = body({"type": "item_reference", "id": "fc_1"}, out("call_1", "Sunny"))
    assert ctxwin.parse(b).server_state
    assert ctxwin.check(b) == []


def test_output_without_call_and_without_previous_response_id_is_orphan() -> None:
    b = body(out("call_1", "Sunny"))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path) == ("orphan_result", "input[0]")
    assert p.message == "No tool call found for function call output with call_id call_1."


def test_ids_reused_across_turns_pair_by_position() -> None:
    b = body(
        user("a"),
        call("call_X", "first"),
        out("call_X", "one"),
        user("b"),
        call("call_X", "second"),
        out("call_X", "two"),
    )
    refs = list(ctxwin.parse(b).results())
    assert [(r.tool, r.round) for r in refs] == [("first", 0), ("second", 1)]
    assert ctxwin.check(b) == []


def test_second_output_for_one_call_is_duplicate() -> None:
    b = body(user("go"), call("a", "f"), out("a", "1"), out("a", "1 again"))
    (p,) = ctxwin.check(b)
    assert (p.code, p.path) == ("duplicate_result", "input[3]")
    assert p.message == "a second output for call_id a: the call was already answered"


def test_call_id_twice_in_one_turn_is_duplicate_call_id() -> None:
    b = body(user("go"), call("a", "f"), call("a", "g"), out("a", "1"), out("a", "2"))
    problems = ctxwin.check(b)
    assert [(p.code, p.path) for p in problems] == [("duplicate_call_id", "input[2]")]
    assert problems[0].message == "call_id a is used twice in one turn (again at input[2])"


def test_empty_output_is_a_warning_not_an_error() -> None:
    b = body(user("go"), call("a", "f"), out("a", ""))
    assert ctxwin.check(b) == []
    (p,) = ctxwin.check(b, warnings=True)
    assert (p.code, p.severity, p.message) == (
        "empty_result",
        "warning",
        "the tool output is empty",
    )


# ------------------------------------------------------------------------------ repair


def test_repair_leaves_valid_parallel_out_of_order_outputs_alone() -> None:
    fixed, fixes = ctxwin.repair(PARALLEL)
    assert fixes == []
    assert fixed == PARALLEL
    assert isinstance(fixed, dict)
    assert all(x is y for x, y in zip(fixed["input"], PARALLEL["input"], strict=True))


def test_repair_adds_function_call_output_for_interrupted_call() -> None:
    b = body(user("go"), reasoning(1), call("a", "f"), call("b", "g"), out("a", "1"))
    before = copy.deepcopy(b)
    items, fixes = fixed_items(b)
    assert b == before
    assert fixes == ["added_missing_result"]
    assert items[5] == {
        "type": "function_call_output",
        "call_id": "b",
        "output": "tool result missing: the call was interrupted",
    }
    assert items[3] is b["input"][3]
    assert ctxwin.check({**b, "input": items}) == []


def test_repair_adds_custom_tool_call_output_for_interrupted_custom_call() -> None:
    b = body(
        user("go"), {"type": "custom_tool_call", "call_id": "a", "name": "patch", "input": "x"}
    )
    items, _ = fixed_items(b)
    assert items[2] == {
        "type": "custom_tool_call_output",
        "call_id": "a",
        "output": "tool result missing: the call was interrupted",
    }


def test_repair_moves_output_after_its_call() -> None:
    b = body(user("go"), out("a", "1"), reasoning(1), call("a", "f"), user("thanks"))
    items, fixes = fixed_items(b)
    assert fixes == ["moved_result"]
    assert [x.get("type", "user") for x in items] == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "user",
    ]
    assert items[3] is b["input"][1]


def test_repair_leaves_user_message_between_call_and_output() -> None:
    b = body(user("go"), call("a", "f"), user("are you there?"), out("a", "1"))
    fixed, fixes = ctxwin.repair(b)
    assert fixes == []
    assert fixed == b


def test_repair_drops_orphan_output_without_previous_response_id() -> None:
    b = body(out("call_1", "Sunny"), user("and tomorrow?"))
    items, fixes = fixed_items(b)
    assert fixes == ["dropped_orphan_result"]
    assert items == [user("and tomorrow?")]


def test_repair_keeps_output_of_a_server_side_call() -> None:
    b = body(out("call_1", "Sunny"), previous_response_id="resp_123")
    fixed, fixes = ctxwin.repair(b)
    assert (fixed, fixes) == (b, [])


def test_repair_renames_duplicate_call_id_in_call_id_field() -> None:
    b = body(user("go"), call("a", "f"), call("a", "g"), out("a", "1"))
    items, fixes = fixed_items(b)
    assert fixes[0] == "renamed_duplicate_call_id"
    assert items[2] == {"type": "function_call", "call_id": "a_2", "name": "g", "arguments": "{}"}
    assert items[4]["call_id"] == "a_2"


def test_synthetic_outputs_of_builtin_calls_use_their_own_fields() -> None:
    """local_shell outputs carry the call id in "id"; shell outputs are chunks; apply_patch
    outputs need a status."""
    b = body(
        user("go"),
        {"type": "local_shell_call", "call_id": "L", "action": {"type": "exec", "command": ["ls"]}},
        {"type": "shell_call", "call_id": "S", "action": {"commands": ["ls"]}},
        {
            "type": "apply_patch_call",
            "call_id": "P",
            "operation": {"type": "delete_file", "path": "x"},
        },
    )
    items, fixes = fixed_items(b)
    assert fixes == ["added_missing_result"] * 3
    missing = "tool result missing: the call was interrupted"
    assert items[4:] == [
        {"type": "local_shell_call_output", "id": "L", "output": missing},
        {
            "type": "shell_call_output",
            "call_id": "S",
            "output": [
                {"stdout": "", "stderr": missing, "outcome": {"type": "exit", "exit_code": 1}}
            ],
        },
        {"type": "apply_patch_call_output", "call_id": "P", "status": "failed", "output": missing},
    ]
    assert ctxwin.check({**b, "input": items}) == []


def test_strict_repair_raises_with_every_problem() -> None:
    b = body(user("go"), call("a", "f"), call("b", "g"), out("zzz", "1"))
    with pytest.raises(PairingError) as info:
        ctxwin.repair(b, strict=True)
    assert [p.code for p in info.value.problems] == [
        "missing_result",
        "missing_result",
        "orphan_result",
    ]
    assert str(info.value).splitlines()[0] == "3 pairing problems:"


# ------------------------------------------------------------------------------ edits


def edit_result(b: dict[str, Any], position: int, text: str) -> Any:
    conv = ctxwin.parse(b)
    msgs = list(conv.messages)
    (res,) = msgs[position].blocks
    assert isinstance(res, ToolResult)
    msgs[position] = msgs[position].with_blocks((res.with_text(text),))
    return ADAPTER.render(conv.with_messages(tuple(msgs)))


def test_editing_one_output_changes_only_that_item() -> None:
    b = body(user("go"), call("a", "f"), {**out("a", "long output"), "id": "fco_1"}, user("next"))
    rendered = edit_result(b, 2, "short")
    assert rendered["input"][2] == {
        "type": "function_call_output",
        "call_id": "a",
        "output": "short",
        "id": "fco_1",
    }
    assert all(rendered["input"][k] is b["input"][k] for k in (0, 1, 3))
    assert {k: v for k, v in rendered.items() if k != "input"} == {
        k: v for k, v in b.items() if k != "input"
    }


def test_editing_a_list_output_keeps_the_list_shape() -> None:
    image = {"type": "input_image", "image_url": "data:x"}
    b = body(user("go"), call("a", "f"), out("a", [{"type": "input_text", "text": "long"}, image]))
    rendered = edit_result(b, 2, "short")
    assert rendered["input"][2]["output"] == [{"type": "input_text", "text": "short"}, image]


def test_edited_call_arguments_replace_only_arguments() -> None:
    b = body(user("go"), {**call("a", "f", '{"q":"long"}'), "id": "fc_1", "status": "completed"})
    conv = ctxwin.parse(b)
    (c,) = conv.messages[1].blocks
    assert isinstance(c, ToolCall)
    msgs = (conv.messages[0], conv.messages[1].with_blocks((c.with_arguments('{"q":"x"}'),)))
    rendered: Any = ADAPTER.render(conv.with_messages(msgs))
    assert rendered["input"][1] == {**b["input"][1], "arguments": '{"q":"x"}'}


def test_edited_builtin_call_arguments_are_written_back_as_json() -> None:
    action = {"type": "exec", "command": ["cat", "big.log"], "env": {}}
    b = body(
        user("go"), {"type": "local_shell_call", "id": "lsh_1", "call_id": "L", "action": action}
    )
    conv = ctxwin.parse(b)
    (c,) = conv.messages[1].blocks
    assert isinstance(c, ToolCall)
    edited = c.with_arguments('{"type":"exec","command":["head","big.log"],"env":{}}')
    msgs = (conv.messages[0], conv.messages[1].with_blocks((edited,)))
    rendered: Any = ADAPTER.render(conv.with_messages(msgs))
    assert rendered["input"][1]["action"] == {**action, "command": ["head", "big.log"]}
    assert rendered["input"][1]["id"] == "lsh_1"


def test_cjk_text_stays_unescaped_after_an_edit() -> None:
    b = body(user("注文"), call("c1", "f"), out("c1", ""))
    fixed, fixes = ctxwin.repair(b, normalize=True)
    assert [f.code for f in fixes] == ["filled_empty_result"]
    text = json.dumps(fixed, ensure_ascii=False)
    assert "注文" in text
    rendered = edit_result(b, 2, "発送済み")
    assert json.dumps(rendered["input"][2], ensure_ascii=False).count("発送済み") == 1


# ------------------------------------------------------------------------------ errors


def test_function_call_without_call_id_names_its_path() -> None:
    b = body(user("go"), {"type": "function_call", "name": "f", "arguments": "{}"})
    with pytest.raises(FormatError) as info:
        ctxwin.parse(b)
    assert info.value.path == "input[1].call_id"
    assert str(info.value) == "input[1].call_id: a function_call item needs a string 'call_id'"


def test_output_without_call_id_names_its_path() -> None:
    with pytest.raises(
        FormatError, match=r"^input\[0\].call_id: a function_call_output item needs"
    ):
        ctxwin.parse(body({"type": "function_call_output", "output": "x"}))


def test_item_without_type_or_role_is_a_format_error() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body(user("go"), {"content": "x"}))
    assert (
        str(info.value)
        == "input[1]: an input item needs a 'type' (or a 'role' and 'content' for a message)"
    )


def test_unknown_role_is_a_format_error() -> None:
    with pytest.raises(FormatError, match=r"^input\[0\].role: unknown role 'robot'"):
        ctxwin.parse(body({"role": "robot", "content": "x"}))


def test_message_without_content_is_a_format_error() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body({"type": "message", "role": "user"}))
    assert (
        str(info.value)
        == "input[0].content: 'content' must be a string or a list of parts, not null"
    )


def test_function_call_output_with_numeric_output_is_a_format_error() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body(user("go"), call("a", "f"), out("a", 42)))
    assert info.value.path == "input[2].output"
    assert (
        info.value.reason
        == "a function_call_output's 'output' must be a string or a list of content parts, "
        "not number"
    )


def test_input_that_is_neither_list_nor_string_is_a_format_error() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse({"input": {"role": "user"}})
    assert str(info.value) == "input: 'input' must be a list of items or a string, not object"


# ------------------------------------------------------------------------------ corpus


@pytest.mark.corpora
@pytest.mark.parametrize("path", corpus_params(FMT))
def test_corpus_trace_round_trips_checks_clean_and_repairs_to_itself(path: Path) -> None:
    b = load(path)
    assert ctxwin.detect(b) == FMT
    assert ctxwin.render(ctxwin.parse(b)) == b
    if path.stem in CHAINED_WITHOUT_ID:
        assert codes(b) == ["orphan_result"]
        assert isinstance(b, dict)
        b = {**b, "previous_response_id": "resp_recorded"}
    assert [p for p in ctxwin.check(b) if p.severity == "error"] == []
    fixed, fixes = ctxwin.repair(b)
    assert fixes == []
    assert fixed == b
