"""A pydantic-ai message as ctxwin sends it when it edited the message: the parts of the
original with the edited ones replaced (:func:`edited`), those whose thinking the window
removed left out (:func:`thinking_gone`), and the messages ctxwin adds (:func:`added`).
See :mod:`ctxwin.integrations._pydantic_ai_map`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ctxwin._core.model import Opaque, Text, ToolCall, ToolResult
from ctxwin._result import Result
from ctxwin.formats._binding import THINKING_KINDS
from ctxwin.integrations._lazy import require
from ctxwin.integrations._pydantic_ai_parts import is_tool_call, is_tool_return, result_text

if TYPE_CHECKING:
    from ctxwin.integrations._pydantic_ai_map import Wire

__all__ = ["added", "edited", "thinking_gone"]


def edited(
    msg: Any, wire: Wire, blocks: Sequence[Any], changed: Sequence[int], mi: int, result: Result
) -> Any:
    """A copy of ``msg`` as ``blocks`` (its blocks after the policy; ``changed``: those it
    edited) say: edited parts replaced, and where blocks came or went, tool parts matched by
    call id and thinking whose block the window removed left out."""
    parts = list(msg.parts)
    if len(blocks) == len(wire.parts):
        for k in changed:
            j = wire.parts[k]
            if j is not None:
                parts[j] = _edited_part(parts[j], blocks[k])
        return dataclasses.replace(msg, parts=parts)
    # blocks came or went (a repair, thinking removed): tool parts are matched by call id
    tools = [b for b in blocks if isinstance(b, (ToolResult, ToolCall))]
    by_id = {b.call_id if isinstance(b, ToolResult) else b.id: b for b in tools}
    unbound = thinking_gone(wire, blocks)
    kept: list[Any] = []
    for j, part in enumerate(parts):
        if is_tool_return(part) or is_tool_call(part):
            block = by_id.pop(part.tool_call_id, None)
            if block is None:
                continue  # ctxwin dropped it (an orphan result, a duplicate)
            kept.append(part if block.pristine else _edited_part(part, block))
        elif j not in unbound:
            kept.append(part)
    new = [_new_result(b, mi, blocks, result) for b in by_id.values() if isinstance(b, ToolResult)]
    return dataclasses.replace(msg, parts=[*new, *kept])


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
    if isinstance(block, ToolResult):
        text = block.text
        if getattr(part, "part_kind", None) == "retry-prompt":
            return dataclasses.replace(part, content=text)
        keep_files = any(isinstance(p, Opaque) for p in block.content)
        files = list(getattr(part, "files", ()) or ()) if keep_files else []
        if not files and text == result_text(part) and not part.files:
            return part
        return dataclasses.replace(part, content=[text, *files] if files else text)
    if isinstance(block, ToolCall) and is_tool_call(part):
        return dataclasses.replace(part, args=block.arguments)
    return part


def _new_result(block: ToolResult, mi: int, blocks: Sequence[Any], result: Result) -> Any:
    messages = require("pydantic_ai.messages", "pydantic-ai")
    bi = list(blocks).index(block)
    return messages.ToolReturnPart(
        tool_name=result.conversation.tool_of((mi, bi)) or block.name or "",
        content=block.text,
        tool_call_id=block.call_id or "",
    )


def added(neutral: Any, mi: int, result: Result) -> Any:
    """A message ctxwin made (a result for a call that had none, a first user message)."""
    messages = require("pydantic_ai.messages", "pydantic-ai")
    texts = [b.text for b in neutral.blocks if isinstance(b, Text)]
    if neutral.role == "assistant":
        return messages.ModelResponse(parts=[messages.TextPart(t) for t in texts])
    parts: list[Any] = [
        _new_result(b, mi, neutral.blocks, result)
        for b in neutral.blocks
        if isinstance(b, ToolResult)
    ]
    parts += [messages.UserPromptPart(t) for t in texts]
    return messages.ModelRequest(parts=parts)
