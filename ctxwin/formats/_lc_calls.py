"""How a LangChain AI message's calls go back after ctxwin edited them: its ``tool_calls``
(and ``invalid_tool_calls``) dicts and the content blocks repeating a call, each with the
arguments ctxwin edited and the id repair gave it, the rest of each dict as it was."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ctxwin._core.model import ToolCall

__all__ = ["CALL_BLOCKS", "args_of", "call_blocks", "given_id", "lc_calls", "lc_invalid", "repeats"]

CALL_BLOCKS: dict[str, tuple[str, str]] = {
    "tool_use": ("id", "input"),
    "tool_call": ("id", "args"),
    "function_call": ("call_id", "arguments"),
    "custom_tool_call": ("call_id", "input"),
}
"""Content blocks that repeat a call of the message (its id under the first key, its
arguments under the second): Anthropic's ``tool_use``, LangChain's standard ``tool_call``,
and the OpenAI Responses API's ``function_call`` and ``custom_tool_call``, which
langchain-openai keeps in the content and sends in place of the ``tool_calls`` of the same
id. Not sent to the counter twice, and updated with the call when its arguments are
edited."""


def repeats(block: object, ids: Collection[object]) -> bool:
    """Whether ``block`` is a content block repeating one of the calls ``ids``."""
    if not ids or not isinstance(block, Mapping) or not isinstance(kind := block.get("type"), str):
        return False
    keys = CALL_BLOCKS.get(kind)
    if keys is None:
        return False
    ident = block.get(keys[0])
    return isinstance(ident, str | None) and ident in ids  # an object is no id (nor hashable)


def given_id(call: ToolCall) -> str | None:
    """The id ``call`` had in the message it was read from (repair may have renamed it)."""
    raw = call.raw
    found = raw.get("id") if isinstance(raw, Mapping) else None
    return found if isinstance(found, str) else call.id


def args_of(call: ToolCall) -> object:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return {"input": call.arguments}


def lc_calls(calls: Sequence[tuple[ToolCall, Mapping[str, Any] | None]]) -> list[dict[str, Any]]:
    """The LangChain tool calls of ``calls``, each with the dict it was read from (None: a
    call ctxwin made): that dict, ``args`` replaced where ctxwin edited them and ``id`` where
    repair renamed it."""
    out = []
    for call, found in calls:
        if found is None:
            fresh = {"name": call.name, "args": args_of(call), "id": call.id, "type": "tool_call"}
            out.append(fresh)
        else:
            out.append(
                dict(found) if call.pristine else {**found, "args": args_of(call), "id": call.id}
            )
    return out


def lc_invalid(call: ToolCall, found: Mapping[str, Any]) -> Mapping[str, Any]:
    """The LangChain invalid tool call of ``call``, read from ``found``: that dict, its
    ``args`` (the model's text) replaced when ctxwin edited them, and its ``id`` where
    repair renamed it."""
    return found if call.pristine else {**found, "args": call.arguments, "id": call.id}


def call_blocks(content: list[Any], calls: Sequence[ToolCall]) -> list[Any]:
    """``content`` with each block repeating a call (see ``CALL_BLOCKS``) as its call now
    is: the n-th block with a given id is the n-th call read with that id (a turn may
    repeat one, which repair renames: ChatAnthropic sends the blocks, and adds the calls
    they do not name, so a block left with the old id would send the call twice)."""
    by_id: dict[str | None, list[ToolCall]] = {}
    for call in calls:
        by_id.setdefault(given_id(call), []).append(call)
    out = []
    for block in content:
        if repeats(block, by_id):
            assert isinstance(block, Mapping)
            queue = by_id[block[CALL_BLOCKS[block["type"]][0]]]
            block = _call_block(block, queue.pop(0)) if queue else block
        out.append(block)
    return out


def _call_block(block: Mapping[str, Any], call: ToolCall) -> object:
    """A content block repeating ``call`` with its edited arguments, in the block's own
    shape (an object, the JSON text of a Responses ``function_call``, the input text of a
    ``custom_tool_call``), and its id where repair renamed it."""
    if call.pristine:
        return block
    kind = block["type"]
    id_key, args_key = CALL_BLOCKS[kind]
    value: object = args_of(call)
    if kind == "function_call":
        value = call.arguments
    elif kind == "custom_tool_call":
        value = value.get("__arg1") if isinstance(value, Mapping) else None
        if not isinstance(value, str):
            return {**block, id_key: call.id}
    return {**block, id_key: call.id, args_key: value}
