"""What the OpenAI Responses API answers for a pairing problem, in its words (or a plain
statement of it), naming the item of another type that holds the call id, where one does."""

from __future__ import annotations

from collections.abc import Mapping

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Block, Loc, Opaque, ToolCall, ToolResult
from ctxwin._core.records import ProblemCode
from ctxwin.formats._responses_items import CALL_TYPE, OUTPUT_TYPE, call_words, output_words

__all__ = ["problem_words"]


def problem_words(code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None) -> str:
    """What the API answers for a problem at ``loc`` (or a plain statement of it)."""
    if code == "duplicate_item_id":  # an item of no content parts has no block
        found = conv.messages[loc[0]].item_id
        return f"Duplicate item found with id {found}. Remove duplicate items from your input."
    block = conv.messages[loc[0]].blocks[loc[1]]
    kind = block.kind if isinstance(block, ToolCall | ToolResult) else "function"
    if code == "missing_result":
        note = _kind_mismatch(conv, block)
        return f"No tool output found for {call_words(kind)} {call_id}.{note}"
    if code == "orphan_result" and isinstance(block, ToolCall):  # its program is gone
        item = CALL_TYPE.get(kind, kind)
        return f"{item} {call_id} with caller.caller_id {block.tie} has no program item before it"
    if code == "orphan_result" and isinstance(block, Opaque) and block.needs_next:
        raw = block.raw if isinstance(block.raw, Mapping) else {}
        return (
            f"Item '{raw.get('id')}' of type '{block.kind}' was provided without its required "
            "following item."
        )
    if code == "orphan_result" and isinstance(block, Opaque):  # a program's item
        field = "call_id" if block.kind == "program_output" else "caller.caller_id"
        return f"{block.kind} with {field} {call_id} has no program item before it"
    if code in ("misplaced_result", "orphan_result"):
        note = _kind_mismatch(conv, block)
        return f"No tool call found for {output_words(kind)} with call_id {call_id}.{note}"
    if code == "duplicate_result":
        return f"a second output for call_id {call_id}: the call was already answered"
    if code == "duplicate_call_id":
        idx = conv.messages[loc[0]].index
        return f"call_id {call_id} is used twice in one turn (again at input[{idx}])"
    if code == "empty_result":
        return "the tool output is empty"
    return code


def _kind_mismatch(conv: Conversation, block: Block) -> str:
    """For a call without output or an output without call: the item of another type that
    has its ``call_id`` and does not pair with it (:data:`ANSWERS`), as a sentence to add to
    the problem's text; "" when there is none."""
    if isinstance(block, ToolCall) and block.id is not None:
        found = _other_kind(conv, ToolResult, block.id, block.kind)
        if found is not None:
            at, b = found
            return (
                f" input[{at}] has its call_id but is a {OUTPUT_TYPE.get(b.kind, b.kind)}, the"
                f" output of a {CALL_TYPE.get(b.kind, b.kind)}, not of a"
                f" {CALL_TYPE.get(block.kind, block.kind)}."
            )
    elif isinstance(block, ToolResult) and block.call_id is not None:
        found = _other_kind(conv, ToolCall, block.call_id, block.kind)
        if found is not None:
            at, b = found
            return (
                f" input[{at}] with this call_id is a {CALL_TYPE.get(b.kind, b.kind)}, answered"
                f" by a {OUTPUT_TYPE.get(b.kind, 'function_call_output')}, not by a"
                f" {OUTPUT_TYPE.get(block.kind, block.kind)}."
            )
    return ""


def _other_kind(
    conv: Conversation, want: type[ToolCall] | type[ToolResult], call_id: str, kind: str
) -> tuple[int | None, ToolCall | ToolResult] | None:
    """The first call (``want``: or output) with ``call_id`` that does not pair with a block
    of ``kind`` (its input index, and it): the first of its kinds that do not, looked up
    (:attr:`~ctxwin._core.conversation.Conversation.id_kinds`), not searched for."""
    calls = want is ToolCall
    answers = conv.rules.kind_answers
    found = [
        loc
        for (is_call, other), loc in conv.id_kinds.get(call_id, {}).items()
        if is_call == calls and not (answers(kind, other) if calls else answers(other, kind))
    ]
    if not found:
        return None
    mi, bi = min(found)
    msg = conv.messages[mi]
    block = msg.blocks[bi]
    assert isinstance(block, ToolCall | ToolResult)
    return msg.index, block
