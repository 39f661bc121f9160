"""The recall tool on the wire: its definition and its results, in each format."""

from __future__ import annotations

import copy
from typing import Any

from ctxwin._core.model import FORMATS, FormatName
from ctxwin._exceptions import InputError
from ctxwin.formats._base import json_type

__all__ = [
    "RECALL_DESCRIPTION",
    "RECALL_PARAMETERS",
    "check_call_id",
    "recall_definition",
    "recall_output",
]

RECALL_DESCRIPTION = (
    "Get back the exact original of a tool result that was cleared, cut or summarized to "
    "save context. Pass the handle its placeholder or notice quotes (r-...). Take only what "
    "you need: `lines` for a range, `grep` for the lines matching a pattern."
)
RECALL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "handle": {
            "type": "string",
            "description": "The handle quoted where the result was shortened, e.g. "
            "r-3f9a2c1b0d4e5a67.",
        },
        "lines": {
            "type": "string",
            "description": "Optional: a line range such as 10-20 (1-based, inclusive).",
        },
        "grep": {
            "type": "string",
            "description": "Optional: a regular expression (Python syntax; a search that "
            "runs over 2 seconds is stopped); only the matching lines, as N:line (a long "
            "line: the text around its matches, … where cut).",
        },
    },
    "required": ["handle"],
}


def _known(format: str) -> FormatName:
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r:.40}: use one of {', '.join(FORMATS)}")
    return format


def recall_definition(format: str, name: str = "recall") -> dict[str, Any]:
    """The entry to add to the request's ``tools`` for the recall tool."""
    params = copy.deepcopy(RECALL_PARAMETERS)
    fmt = _known(format)
    if fmt == "openai-chat":
        return {
            "type": "function",
            "function": {"name": name, "description": RECALL_DESCRIPTION, "parameters": params},
        }
    if fmt == "openai-responses":  # without strict, Responses makes every property required
        return {
            "type": "function",
            "name": name,
            "description": RECALL_DESCRIPTION,
            "parameters": params,
            "strict": False,
        }
    if fmt == "anthropic":
        return {"name": name, "description": RECALL_DESCRIPTION, "input_schema": params}
    return {
        "functionDeclarations": [
            {"name": name, "description": RECALL_DESCRIPTION, "parameters": params}
        ]
    }


def check_call_id(format: str, call_id: object) -> None:
    """Raise :class:`~ctxwin.InputError` at ``call_id`` unless it is a string, or None for
    Gemini (whose calls may have no id): the other providers refuse a null id."""
    if isinstance(call_id, str) or (call_id is None and format == "gemini"):
        return
    reason = f"the recall call's id must be a string, not {json_type(call_id)}"
    if format != "gemini":
        reason += f" (only Gemini's calls come without one; {format}'s have one)"
    raise InputError(reason, path="call_id")


def recall_output(
    format: str, call_id: str | None, text: str, *, is_error: bool, name: str = "recall"
) -> dict[str, Any]:
    """The result of one recall call, as the history holds it: an OpenAI Chat ``tool``
    message, a Responses ``function_call_output`` item, an Anthropic ``tool_result`` block
    (for the next user message's content), a Gemini ``functionResponse`` part (for the
    next user turn's parts). ``call_id`` is a string; None only for Gemini, whose calls
    may have no id (an :class:`~ctxwin.InputError` at ``call_id`` otherwise: the provider
    refuses a result whose id is null)."""
    fmt = _known(format)
    check_call_id(fmt, call_id)
    if fmt == "openai-chat":
        return {"role": "tool", "tool_call_id": call_id, "content": text}
    if fmt == "openai-responses":
        return {"type": "function_call_output", "call_id": call_id, "output": text}
    if fmt == "anthropic":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        if is_error:
            block["is_error"] = True
        return block
    response = {"error": text} if is_error else {"output": text}
    part: dict[str, Any] = {"name": name, "response": response}
    if call_id is not None:
        part["id"] = call_id
    return {"functionResponse": part}
