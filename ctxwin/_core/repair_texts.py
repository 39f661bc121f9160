"""The texts repair writes where a request lacks something (``repair:`` in a policy)."""

from __future__ import annotations

from dataclasses import dataclass

from ctxwin._core.model import ToolCall

__all__ = [
    "EMPTY_RESULT_TEXT",
    "FIRST_USER_TEXT",
    "LAST_USER_TEXT",
    "MISSING_RESULT_TEXT",
    "RepairTexts",
]

EMPTY_RESULT_TEXT = "(empty result)"
MISSING_RESULT_TEXT = "tool result missing: the call was interrupted"
FIRST_USER_TEXT = "(the conversation so far)"
"""The user message repair puts first where a format wants a user message first."""
LAST_USER_TEXT = "(continue)"
"""The user message repair puts last where what ended the request went."""


@dataclass(frozen=True, slots=True)
class RepairTexts:
    """The texts repair writes. ``missing_result`` may name the call's ``{tool}``."""

    missing_result: str = MISSING_RESULT_TEXT
    empty_result: str = EMPTY_RESULT_TEXT
    first_user: str = FIRST_USER_TEXT
    last_user: str = LAST_USER_TEXT

    def missing(self, call: ToolCall) -> str:
        return self.missing_result.format(tool=call.name)
