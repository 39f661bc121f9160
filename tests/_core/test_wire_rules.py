"""Pairing, check and repair under the rules a provider states beyond placement: ids that
must match, results that must carry content, ids of a fixed shape."""

from __future__ import annotations

import dataclasses
import re

from ctxwin._core.check import find, has_errors
from ctxwin._core.model import Message, Text, ToolCall, ToolResult
from ctxwin._core.pairing import Linker
from ctxwin._core.repair import RepairTexts, repair_conversation
from tests._core.neutral import (
    ADJACENT,
    ANYWHERE,
    GROUPED,
    Describer,
    calls,
    conv,
    result,
    user,
)

STRICT = dataclasses.replace(ADJACENT, strict_ids=True, results_need_content=True)
"""OpenAI Chat's rules: an id-less result answers an id-less call only; content required."""
BY_NAME = dataclasses.replace(GROUPED, ids_optional=True)
"""Gemini's rules: an id-less result answers a call of its name, with an id or not."""


def codes(c: object) -> list[str]:
    return [f.code for f in find(c, warnings=False).found]  # type: ignore[arg-type]


def legacy_result(name: str, text: str = "x") -> Message:
    return Message("tool", (ToolResult(None, (Text(text),), name=name),))


def bare(cid: str) -> Message:
    """A result message with no content at all (OpenAI Chat: ``content: null``)."""
    return Message("tool", (ToolResult(cid, ()),))


def test_an_id_less_result_does_not_answer_a_call_with_an_id_under_strict_ids() -> None:
    c = conv(STRICT, user("go"), calls("c1"), legacy_result("tool_c1"))
    assert codes(c) == ["missing_result", "orphan_result"]


def test_an_id_less_result_still_answers_an_id_less_call_under_strict_ids() -> None:
    legacy = Message("assistant", (ToolCall(None, "f", "{}"),))
    c = conv(STRICT, user("go"), legacy, legacy_result("f"))
    assert codes(c) == []


def test_an_id_less_result_answers_a_call_of_its_name_with_an_id_by_default() -> None:
    """Gemini pairs a functionResponse without id with the functionCall of its name."""
    answer = Message("user", (ToolResult(None, (Text("x"),), name="tool_c1"),))
    c = conv(BY_NAME, user("go"), calls("c1"), answer)
    assert codes(c) == []


def test_a_result_without_content_is_an_error_where_content_is_required() -> None:
    c = conv(STRICT, user("go"), calls("a"), bare("a"))
    assert codes(c) == ["missing_content"]
    assert has_errors(c)


def test_a_result_without_content_is_no_error_where_it_is_not_required() -> None:
    c = conv(ADJACENT, user("go"), calls("a"), bare("a"))
    assert codes(c) == []
    assert [f.code for f in find(c).found] == ["empty_result"]


def test_a_result_of_empty_text_is_only_a_warning_where_content_is_required() -> None:
    c = conv(STRICT, user("go"), calls("a"), Message("tool", (result("a", ""),)))
    assert codes(c) == []
    assert [f.code for f in find(c).found] == ["empty_result"]


def test_a_result_without_content_is_reported_once() -> None:
    c = conv(STRICT, user("go"), calls("a"), bare("a"))
    assert [f.code for f in find(c).found] == ["missing_content"]


def test_repair_fills_a_result_without_content_with_the_text_asked_for() -> None:
    c = conv(STRICT, user("go"), calls("a"), bare("a"), user("next"))
    fixed, fixes = repair_conversation(c, Describer(), texts=RepairTexts(empty_result="(none)"))
    assert [(f.code, f.path) for f in fixes] == [("filled_empty_result", "m2.b0")]
    assert fixed.messages[2].tool_results[0].text == "(none)"
    assert not has_errors(fixed)


def test_a_filled_result_names_the_tool_of_its_call() -> None:
    """The fix said tool=None for a result whose wire carries no name (OpenAI Chat)."""
    c = conv(STRICT, user("go"), calls("a"), bare("a"))
    (fix,) = repair_conversation(c, Describer())[1]
    assert (fix.code, fix.tool) == ("filled_empty_result", "tool_a")


# ------------------------------------------------------------------------------ renamed ids

MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")


def renamed_id(c: object) -> str:
    fixed, fixes = repair_conversation(c, Describer())  # type: ignore[arg-type]
    assert [f.code for f in fixes] == ["renamed_duplicate_call_id"]
    return fixed.messages[1].tool_calls[1].id or ""


def repeated(cid: str, *before: Message) -> object:
    twice = Message("assistant", (ToolCall(cid, "f", "{}"), ToolCall(cid, "f", "{}")))
    answers = [Message("tool", (result(cid),)), Message("tool", (result(cid),))]
    return conv(ADJACENT, *before, user("go"), twice, *answers)


def test_a_repeated_nine_character_id_is_renamed_to_another_of_that_shape() -> None:
    """Mistral takes only ids of 9 letters and digits: call_0_2 was refused."""
    new = renamed_id(repeated("abcDEF123"))
    assert MISTRAL_ID.fullmatch(new)
    assert new != "abcDEF123"


def test_a_nine_character_rename_is_the_same_at_every_request() -> None:
    assert renamed_id(repeated("abcDEF123")) == renamed_id(repeated("abcDEF123"))


def test_a_nine_character_rename_avoids_the_ids_of_the_request() -> None:
    first = renamed_id(repeated("abcDEF123"))
    earlier = (user("before"), calls(first), Message("tool", (result(first),)))
    c = repeated("abcDEF123", *earlier)
    fixed, _ = repair_conversation(c, Describer())  # type: ignore[arg-type]
    new = fixed.messages[4].tool_calls[1].id or ""
    assert MISTRAL_ID.fullmatch(new)
    assert new not in (first, "abcDEF123")


def test_a_repeated_id_of_another_shape_gets_a_suffix() -> None:
    assert renamed_id(repeated("call_0")) == "call_0_2"


# ------------------------------------------------------------------------------ split turns

SPLIT = dataclasses.replace(GROUPED, results_first=False, ids_optional=True, merge_split_turns=True)
"""Gemini's rules, with calls made together kept in one message."""


def named_calls(*names: str) -> Message:
    return Message("assistant", tuple(ToolCall(None, n, "{}") for n in names))


def named_results(*names: str) -> Message:
    return Message("user", tuple(ToolResult(None, (Text(n),), name=n) for n in names))


def test_parallel_calls_split_across_messages_are_merged_with_their_results_kept() -> None:
    """python-genai's streaming chat records each chunk as a model content: [fc a][fc b]
    [fr a, fr b]. Repair answered a with an error and dropped its real result."""
    c = conv(SPLIT, user("go"), named_calls("a"), named_calls("b"), named_results("a", "b"))
    fixed, fixes = repair_conversation(c, Describer())
    assert [(f.code, f.path) for f in fixes] == [("merged_split_turn", "m2.b0")]
    assert [m.blocks for m in fixed.messages] == [
        c.messages[0].blocks,
        c.messages[1].blocks + c.messages[2].blocks,
        c.messages[3].blocks,
    ]
    assert not has_errors(fixed)


def test_the_merged_message_keeps_its_first_part_first() -> None:
    """Gemini 3 wants the thought signature on the first call of each model content: the
    call that carried it stays first, the later ones follow it in one step."""
    c = conv(SPLIT, user("go"), named_calls("a"), named_calls("b", "c"), named_results("a"))
    fixed, _ = repair_conversation(c, Describer())
    assert [b.name for b in fixed.messages[1].tool_calls] == ["a", "b", "c"]
    assert [m.role for m in fixed.messages] == ["user", "assistant", "user"]
    assert not has_errors(fixed)


def test_a_text_message_before_calls_is_not_merged() -> None:
    c = conv(SPLIT, user("go"), Message("assistant", (Text("let me look"),)), named_calls("a"))
    fixed, fixes = repair_conversation(c, Describer())
    assert [f.code for f in fixes] == ["added_missing_result"]
    assert len(fixed.messages) == 4


def test_split_turns_stay_split_where_the_format_does_not_merge() -> None:
    rules = dataclasses.replace(SPLIT, merge_split_turns=False)
    c = conv(rules, user("go"), named_calls("a"), named_calls("b"), named_results("a", "b"))
    fixed, fixes = repair_conversation(c, Describer())
    assert "merged_split_turn" not in [f.code for f in fixes]
    assert len(fixed.messages) == 5


# ------------------------------------------------------------- kinds a result answers

KINDS = dataclasses.replace(
    ANYWHERE, answers=frozenset({("function", "function"), ("custom", "custom")})
)
"""Responses' rules: each output type answers its own call type."""


def kinded_call(cid: str, kind: str) -> Message:
    return Message("assistant", (ToolCall(cid, "t", "{}", kind=kind),))


def kinded_result(cid: str, kind: str) -> Message:
    return Message("tool", (ToolResult(cid, (Text("ok"),), kind=kind),))


def test_a_result_of_another_kind_answers_no_call_of_its_id_where_kinds_pair() -> None:
    c = conv(KINDS, user("go"), kinded_call("a", "function"), kinded_result("a", "custom"))
    assert codes(c) == ["missing_result", "orphan_result"]
    assert has_errors(c)


def test_a_result_of_another_kind_answers_a_call_of_its_id_where_kinds_do_not_pair() -> None:
    c = conv(ANYWHERE, user("go"), kinded_call("a", "function"), kinded_result("a", "custom"))
    assert codes(c) == []


def test_repair_drops_the_result_of_another_kind_and_answers_the_call_in_its_kind() -> None:
    c = conv(KINDS, user("go"), kinded_call("a", "function"), kinded_result("a", "custom"))
    fixed, fixes = repair_conversation(c, Describer())
    assert [f.code for f in fixes] == ["dropped_orphan_result", "added_missing_result"]
    (res,) = fixed.messages[2].tool_results
    assert (res.call_id, res.kind, res.is_error) == ("a", "function", True)
    assert codes(fixed) == []


def test_a_linker_fed_twice_pairs_by_kind_as_one_fed_once() -> None:
    """The fold resumes where the previous request of the same history stopped."""
    c = conv(
        KINDS,
        user("go"),
        kinded_call("a", "function"),
        kinded_result("a", "custom"),
        kinded_result("a", "function"),
    )
    linker = Linker(KINDS)
    linker.feed(c.messages[:3])
    linker.feed(c.messages)
    pairing = linker.pairing()
    assert pairing.orphans == ((2, 0),)
    assert dict(pairing.call_of) == {(3, 0): (1, 0)}
