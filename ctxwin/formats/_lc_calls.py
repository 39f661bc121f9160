"""A LangChain AI message's calls: those only its content blocks hold (read as its chat
model sends them), and how they go back after ctxwin edited them: its ``tool_calls`` (and
``invalid_tool_calls``) dicts and the content blocks repeating or holding a call, each with
the arguments ctxwin edited and the id repair gave it, the rest of each dict as it was."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from ctxwin._core.model import ToolCall
from ctxwin._core.records import Fix
from ctxwin._exceptions import FormatError

__all__ = [
    "CALL_BLOCKS",
    "args_of",
    "block_calls",
    "call_blocks",
    "given_id",
    "held_elsewhere",
    "lc_calls",
    "lc_invalid",
    "repeats",
]

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
edited. A block whose id no ``tool_calls`` entry has is a call of its own (see
:func:`block_calls`)."""


def block_calls(
    content: object, known: Collection[object], index: int
) -> list[tuple[int, dict[str, Any]]]:
    """The calls an AI message holds only in content blocks (``known``: the ids of its
    ``tool_calls`` and ``invalid_tool_calls``), each with its block's place: an
    ``AIMessage`` built from Anthropic's content, or an older stored history, has no
    ``tool_calls``, and its chat model sends the block as the call (ChatAnthropic sends a
    ``tool_use`` block as it is, and the ``ToolMessage`` answering it as its
    ``tool_result``). Each is a LangChain tool call dict (``id``, ``name``, ``args``: the
    JSON text of the arguments), read as LangChain's own block translators read the block;
    the first block of an id holds the call, later ones repeat it. A block of an id that
    cannot be read soundly (no name, arguments of the wrong kind) is a
    :class:`FormatError` at the block (``messages[index].content[j]``), rather than
    content that leaves its ``ToolMessage`` an orphan. A block with no id (none, or not a
    non-empty string) is no call a ``ToolMessage`` can answer: it stays content, as it
    came."""
    if not isinstance(content, list):
        return []
    seen = set(known)
    out: list[tuple[int, dict[str, Any]]] = []
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if not isinstance(kind, str) or kind not in CALL_BLOCKS or repeats(block, seen):
            continue
        assert isinstance(block, Mapping)
        ident = block.get(CALL_BLOCKS[kind][0])
        if not isinstance(ident, str) or not ident:
            continue
        call = _read_block(block, kind, f"messages[{index}].content[{j}]")
        seen.add(call["id"])
        out.append((j, call))
    return out


def _read_block(block: Mapping[str, Any], kind: str, at: str) -> dict[str, Any]:
    """The call a content block holds (see :func:`block_calls`)."""
    id_key, args_key = CALL_BLOCKS[kind]
    ident, name = block[id_key], block.get("name")
    if not isinstance(name, str) or not name:
        raise FormatError(
            f"a {kind!r} block of call {ident!r} with no tool name (its 'name')", path=at
        )
    value = block.get(args_key)
    verb = "is" if args_key == "input" else "are"
    partial = block.get("partial_json")
    if kind == "tool_use" and not value and isinstance(partial, str) and partial:
        return {"id": ident, "name": name, "args": partial}  # a streamed block's input
    if kind in ("function_call", "custom_tool_call"):
        if not isinstance(value, str):
            what = "its JSON text" if kind == "function_call" else "text"
            raise FormatError(
                f"the {args_key} of the {kind!r} block of call {ident!r} {verb} not {what} "
                f"(a {type(value).__name__})",
                path=f"{at}.{args_key}",
            )
        text = (
            value if kind == "function_call" else json.dumps({"__arg1": value}, ensure_ascii=False)
        )
        return {"id": ident, "name": name, "args": text}  # a custom tool's input: __arg1
    if not isinstance(value, Mapping):
        raise FormatError(
            f"the {args_key} of the {kind!r} block of call {ident!r} {verb} not an object "
            f"(a {type(value).__name__})",
            path=f"{at}.{args_key}",
        )
    return {"id": ident, "name": name, "args": _json(value, ident, f"{at}.{args_key}")}


def _json(value: object, ident: str, at: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise FormatError(
            f"the arguments of tool call {ident!r} are not JSON: {exc}", path=at
        ) from None


def held_elsewhere(
    sources: Sequence[object], fixes: Iterable[Fix], is_ai: Callable[[object, int], bool]
) -> None:
    """A :class:`FormatError` at the content block of an AI message holding the call id of
    a result repair dropped as an orphan (``fixes``; ``sources[i]``: the message of the
    body's ``messages[i]``, ``is_ai``: whether it is an AI message): a block ctxwin reads
    no call from (a ``non_standard`` wrapper...) may be the call that result answers, and
    the result is never dropped for it (``repair_messages`` would delete it from the
    graph's state)."""
    for fix in fixes:
        at = fix.message_index
        if fix.code != "dropped_orphan_result" or fix.call_id is None or at is None:
            continue
        for i in range(min(at, len(sources)) - 1, -1, -1):
            msg = sources[i]
            content = getattr(msg, "content", None)
            if not isinstance(content, list) or not is_ai(msg, i):
                continue
            for j, block in enumerate(content):
                if _holds(block, fix.call_id):
                    kind = block.get("type") if isinstance(block, Mapping) else None
                    raise FormatError(
                        f"a ToolMessage after it answers call {fix.call_id!r}, which this "
                        f"{kind!r} block holds, but ctxwin reads calls only from tool_calls, "
                        "invalid_tool_calls and 'tool_use', 'tool_call', 'function_call' and "
                        "'custom_tool_call' blocks; put the call in tool_calls",
                        path=f"messages[{i}].content[{j}]",
                    )


def _holds(block: object, call_id: str) -> bool:
    """Whether ``call_id`` is a value of ``block``, or of a mapping in it (a wrapper's
    ``value``, ``extras``); not for a call block, which was read as its call."""
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    if isinstance(kind, str) and kind in CALL_BLOCKS:
        return False
    values = list(block.values())
    values += [v for m in values if isinstance(m, Mapping) for v in m.values()]
    return any(v == call_id for v in values if isinstance(v, str))


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
