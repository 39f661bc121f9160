"""A pydantic-ai message as ctxwin sends it when it edited the message: the parts of the
original with the edited ones replaced (:func:`edited`), those whose thinking the window
removed left out (:func:`thinking_gone`), and the messages ctxwin adds (:func:`added`).
See :mod:`ctxwin.integrations._pydantic_ai_map`."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ctxwin._core.model import Opaque, Text, ToolCall, ToolResult
from ctxwin._result import Result
from ctxwin.formats._binding import THINKING_KINDS
from ctxwin.integrations._lazy import require
from ctxwin.integrations._pydantic_ai_parts import is_tool_call, result_text, sendable

if TYPE_CHECKING:
    from ctxwin.integrations._pydantic_ai_map import Request, Wire

__all__ = ["added", "edited", "parts_of", "thinking_gone"]


def edited(
    msg: Any,
    wire: Wire,
    blocks: Sequence[Any],
    changed: Sequence[int],
    mi: int,
    result: Result,
    elsewhere: Callable[[object], Any] | None = None,
) -> Any:
    """A copy of ``msg`` as ``blocks`` (its blocks after the policy; ``changed``: those it
    edited) say: edited parts replaced (a call id repair renamed included), and where blocks
    came or went, each tool part with the block read from it, those whose block went left
    out, and thinking whose block the window removed left out. A result repair moved here
    from another message is that message's part (``elsewhere``: the part a wire block of
    the request was read from), with its edits: its outcome, files and metadata kept."""
    parts = list(msg.parts)
    if len(blocks) == len(wire.parts):
        for k in changed:
            j = wire.parts[k]
            if j is not None:
                parts[j] = _edited_part(parts[j], blocks[k])
        return dataclasses.replace(msg, parts=parts)
    # blocks came or went (a repair, thinking removed)
    sources = _sources(wire, blocks)
    content = wire.message["content"]
    tool_parts = {j for b, j in zip(content, wire.parts, strict=True) if b.get("type") in _TOOLS}
    sent = {
        wire.parts[k]: b
        for b, k in zip(blocks, sources, strict=True)
        if k is not None and isinstance(b, (ToolResult, ToolCall))
    }
    unbound = thinking_gone(wire, blocks)
    kept: list[Any] = []
    for j, part in enumerate(parts):
        if j in tool_parts:
            block = sent.get(j)
            if block is not None:  # else ctxwin dropped it (an orphan result, a duplicate)
                kept.append(part if block.pristine else _edited_part(part, block))
        elif j not in unbound:
            kept.append(part)
    new = [
        _result_part(b, mi, blocks, result, elsewhere)
        for b, at in zip(blocks, sources, strict=True)
        if at is None and isinstance(b, ToolResult)
    ]
    return dataclasses.replace(msg, parts=[*new, *kept])


_TOOLS = frozenset({"tool_use", "tool_result"})
"""The wire blocks of a tool part: a call, a return (a retry prompt tied to a call too)."""


def _sources(wire: Wire, blocks: Sequence[Any]) -> list[int | None]:
    """For each of ``blocks`` (a message as sent), the wire block it was read from, or None
    (a block ctxwin made, or moved here from another message). A block keeps the wire dict it
    was read from (``raw``) whatever ctxwin changed of it since (a call id renamed, content
    cut), so it is found by that dict whatever its id is now; the very dict first, else an
    equal one not taken yet, in order."""
    content = wire.message["content"]
    at = {id(b): k for k, b in enumerate(content)}
    taken: set[int] = set()
    out: list[int | None] = []
    for block in blocks:
        raw = getattr(block, "raw", None)
        k = at.get(id(raw))
        if k is None or k in taken or content[k] is not raw:
            k = next((i for i, b in enumerate(content) if i not in taken and b == raw), None)
        if k is not None:
            taken.add(k)
        out.append(k)
    return out


def thinking_gone(wire: Wire, blocks: Sequence[Any]) -> frozenset[int]:
    """The parts whose thinking block the window removed (preserved thinking: bound to a
    prefix it changed since): the wire's thinking blocks that ``blocks``, the message as
    sent, no longer holds, in order (a removal keeps the order of the rest)."""
    left = [b.raw for b in blocks if isinstance(b, Opaque) and b.kind in THINKING_KINDS]
    gone: set[int] = set()
    at = 0
    for block, j in zip(wire.message["content"], wire.parts, strict=True):
        if block.get("type") not in THINKING_KINDS:
            continue
        if at < len(left) and (left[at] is block or left[at] == block):
            at += 1
        elif j is not None:
            gone.add(j)
    return frozenset(gone)


def _edited_part(part: Any, block: Any) -> Any:
    """``part`` as ``block`` says: its content (a result) or arguments (a call) where ctxwin
    edited them, and its call id where repair renamed it (a call and its result alike: a
    duplicate id, which Anthropic refuses)."""
    if isinstance(block, ToolResult):
        return _with_id(_result_content(part, block), block.call_id)
    if isinstance(block, ToolCall) and is_tool_call(part):
        if not _same_arguments(block):
            part = dataclasses.replace(part, args=block.arguments)
        return _with_id(part, block.id)
    return part


def _result_content(part: Any, block: ToolResult) -> Any:
    text = block.text
    if getattr(part, "part_kind", None) == "retry-prompt":
        if text == sendable(part, part.model_response):
            return part
        return _replaced(part, content=text)
    keep_files = any(isinstance(p, Opaque) for p in block.content)
    files = list(getattr(part, "files", ()) or ()) if keep_files else []
    if not files and text == result_text(part) and not part.files:
        return part
    return dataclasses.replace(part, content=[text, *files] if files else text)


def _same_arguments(block: ToolCall) -> bool:
    """Whether ``block``'s arguments are still those of the wire block it was read from (a
    call only renamed keeps its ``args`` as pydantic-ai holds them)."""
    raw = block.raw
    try:
        return isinstance(raw, dict) and bool(json.loads(block.arguments) == raw.get("input"))
    except ValueError:  # text that is not JSON: edited
        return False


def _with_id(part: Any, call_id: str | None) -> Any:
    if call_id is None or call_id == getattr(part, "tool_call_id", call_id):
        return part
    return _replaced(part, tool_call_id=call_id)


def _replaced(part: Any, **changes: Any) -> Any:
    """``dataclasses.replace(part, **changes)``; a ``RetryPromptPart`` is copied without
    building one anew, which pydantic-ai deprecated and warns of (the part is the caller's,
    their own code built it: ctxwin's copy is no new use of it)."""
    if getattr(part, "part_kind", None) != "retry-prompt" or not hasattr(part, "__dict__"):
        return dataclasses.replace(part, **changes)
    copy = object.__new__(type(part))
    copy.__dict__.update(part.__dict__, **changes)
    return copy


def _result_part(
    block: ToolResult,
    mi: int,
    blocks: Sequence[Any],
    result: Result,
    elsewhere: Callable[[object], Any] | None,
) -> Any:
    """The part of a result ctxwin put in a message it was not read from: the part it was
    read from, with its edits, where repair moved it (its outcome, files and metadata
    kept); else a new return (one repair wrote: an interrupted call's)."""
    moved = elsewhere(block.raw) if elsewhere is not None else None
    return _new_result(block, mi, blocks, result) if moved is None else _edited_part(moved, block)


def _new_result(block: ToolResult, mi: int, blocks: Sequence[Any], result: Result) -> Any:
    messages = require("pydantic_ai.messages", "pydantic-ai")
    bi = list(blocks).index(block)
    return messages.ToolReturnPart(
        tool_name=result.conversation.tool_of((mi, bi)) or block.name or "",
        content=block.text,
        tool_call_id=block.call_id or "",
        outcome="interrupted" if block.is_error else "success",  # repair's: an interrupted call
    )


def added(
    neutral: Any, mi: int, result: Result, elsewhere: Callable[[object], Any] | None = None
) -> Any:
    """A message ctxwin made (a result for a call that had none, a first user message, the
    carrier of results repair moved: ``elsewhere``, see :func:`edited`)."""
    messages = require("pydantic_ai.messages", "pydantic-ai")
    texts = [b.text for b in neutral.blocks if isinstance(b, Text)]
    if neutral.role == "assistant":
        return messages.ModelResponse(parts=[messages.TextPart(t) for t in texts])
    parts: list[Any] = [
        _result_part(b, mi, neutral.blocks, result, elsewhere)
        for b in neutral.blocks
        if isinstance(b, ToolResult)
    ]
    parts += [messages.UserPromptPart(t) for t in texts]
    return messages.ModelRequest(parts=parts)


def parts_of(request: Request) -> Callable[[object], Any]:
    """The part each wire block of the request was read from (by the block's identity),
    indexed on first need: where repair moved a result to another message."""
    index: dict[int, tuple[object, Any]] = {}

    def part(raw: object) -> Any:
        if not index:
            for wire, source in zip(request.wires, request.sources, strict=True):
                for block, j in zip(wire.message["content"], wire.parts, strict=True):
                    if j is not None:
                        index[id(block)] = (block, source.parts[j])
        hit = index.get(id(raw))
        return hit[1] if hit is not None and hit[0] is raw else None

    return part
