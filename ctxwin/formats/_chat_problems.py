"""What OpenAI answers for a problem of a Chat Completions request (or a plain statement of
it): tool messages and their calls, tool messages without content, and the legacy
``function`` messages (kept apart from ``openai_chat.py`` so each stays a size a reader can
hold)."""

from __future__ import annotations

from collections.abc import Mapping

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Loc, ToolResult
from ctxwin._core.records import ProblemCode

__all__ = ["problem_words"]


def problem_words(code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None) -> str:
    """What OpenAI answers for a problem at ``loc`` (or a plain statement of it)."""
    msg = conv.messages[loc[0]]
    idx = msg.index
    block = msg.blocks[loc[1]] if loc[1] < len(msg.blocks) else None
    if isinstance(block, ToolResult) and block.call_id is None:
        return _function_message_text(code, block.name)
    if code == "missing_result" and call_id is None:
        name = getattr(msg.blocks[loc[1]], "name", "?")
        return (
            "An assistant message with a 'function_call' must be followed by a "
            f"'function' message answering it: the call to {name} has none"
        )
    if code == "missing_result":
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {call_id}"
        )
    if code in ("misplaced_result", "orphan_result"):
        return (
            "Invalid parameter: messages with role 'tool' must be a response to a "
            "preceeding message with 'tool_calls'."
        )
    if code == "duplicate_result":
        return f"a second tool message for tool_call_id {call_id}: the call was already answered"
    if code == "duplicate_call_id":
        return f"tool_call_id {call_id} appears twice in messages[{idx}].tool_calls"
    if code == "empty_result":
        return "the tool message's content is empty"
    if code == "missing_content":
        return _no_content_text(msg.raw, idx)
    return code


def _no_content_text(raw: object, idx: int | None) -> str:
    """What OpenAI answers for a tool message without content (null, absent or ``[]``)."""
    if not isinstance(raw, Mapping) or "content" not in raw:
        return f"Missing required parameter: 'messages[{idx}].content'."
    if isinstance(raw["content"], list):
        return (
            f"Invalid 'messages[{idx}].content': empty array. Expected an array with minimum "
            "length 1, but got an empty array instead."
        )
    return "Invalid value for 'content': expected a string, got null."


def _function_message_text(code: ProblemCode, name: str | None) -> str:
    """What is wrong with a legacy ``function`` message (it has no tool_call_id to name)."""
    if code == "duplicate_result":
        return f"a second 'function' message for the call to {name}: it was already answered"
    if code == "empty_result":
        return "the function message's content is empty"
    return (
        f"a 'function' message (from {name}) must come right after the assistant message "
        "whose 'function_call' it answers"
    )
