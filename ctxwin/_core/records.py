"""What ctxwin reports about a request: problems found, fixes made, edits made.

Plain frozen records, located in the request as it came in (``message_index`` is the
position in the wire list, ``path`` a JSON path into the body).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "ERROR_CODES",
    "Edit",
    "Fix",
    "FixCode",
    "Problem",
    "ProblemCode",
    "Severity",
    "StepName",
]

ProblemCode: TypeAlias = Literal[
    "missing_result",
    "misplaced_result",
    "orphan_result",
    "duplicate_result",
    "results_not_first",
    "duplicate_call_id",
    "duplicate_item_id",
    "first_not_user",
    "empty_request",
    "missing_content",
    "empty_result",
]
"""What is wrong. Every code but ``empty_result`` is one a provider rejects
(``empty_request``: no messages at all; ``missing_content``: a result with no content where
the format requires some, such as an OpenAI Chat tool message with ``content: null``)."""

ERROR_CODES: frozenset[ProblemCode] = frozenset(
    {
        "missing_result",
        "misplaced_result",
        "orphan_result",
        "duplicate_result",
        "results_not_first",
        "duplicate_call_id",
        "duplicate_item_id",
        "first_not_user",
        "empty_request",
        "missing_content",
    }
)

FixCode: TypeAlias = Literal[
    "added_missing_result",
    "moved_result",
    "dropped_orphan_result",
    "dropped_duplicate_result",
    "reordered_results",
    "filled_empty_result",
    "renamed_duplicate_call_id",
    "added_first_user_message",
    "added_last_user_message",
    "merged_split_turn",
    "dropped_duplicate_item",
    "removed_duplicate_item_id",
]

Severity: TypeAlias = Literal["error", "warning"]

StepName: TypeAlias = Literal[
    "select", "summarize", "cap", "window", "clear_input", "drop", "repair"
]
"""The steps ctxwin names in edits (a user's step may use a name of its own)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing a provider would reject (severity ``error``) or that looks wrong (``warning``).

    ``message_index`` is the position in the request's message/item/content list,
    ``block_index`` the block within it (neutral order), ``path`` the JSON path of the
    offending part (``messages[7].tool_calls[0]``), ``message`` what the provider would say.
    """

    code: ProblemCode
    message: str
    message_index: int | None
    block_index: int | None
    path: str
    call_id: str | None = None
    tool: str | None = None
    severity: Severity = "error"

    def __str__(self) -> str:
        cid = f" [{self.call_id}]" if self.call_id else ""
        return f"{self.path}: {self.code}{cid}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message_index": self.message_index,
            "block_index": self.block_index,
            "path": self.path,
            "call_id": self.call_id,
            "tool": self.tool,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Fix:
    """One change made by :func:`ctxwin.repair`, located in the request as it came in."""

    code: FixCode
    description: str
    message_index: int | None
    path: str
    call_id: str | None = None
    tool: str | None = None

    def __str__(self) -> str:
        cid = f" [{self.call_id}]" if self.call_id else ""
        return f"{self.path}: {self.code}{cid}: {self.description}"

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "message_index": self.message_index,
            "path": self.path,
            "call_id": self.call_id,
            "tool": self.tool,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class Edit:
    """One change a step made to the request.

    ``tokens_before``/``tokens_after`` are the tokens of the edited content (a result's
    text, a call's arguments, a dropped message); ``fallback`` names what went wrong when a
    step could not do what the policy asked (e.g. ``summarizer_timeout``) and fell back.
    ``jump`` numbers the window's jumps (edits made together share it; ``None`` outside
    the window).
    """

    step: StepName | str
    tool: str
    call_id: str | None
    tokens_before: int
    tokens_after: int
    fallback: str | None = None
    note: str | None = None
    message_index: int | None = None
    chars_before: int = 0
    chars_after: int = 0
    jump: int | None = None

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def in_jump(self, jump: int) -> Edit:
        """The same edit, numbered as made in window jump ``jump`` (built directly:
        ``dataclasses.replace`` is slow on the window's first, cold pass)."""
        return Edit(
            self.step,
            self.tool,
            self.call_id,
            self.tokens_before,
            self.tokens_after,
            self.fallback,
            self.note,
            self.message_index,
            self.chars_before,
            self.chars_after,
            jump,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "step": self.step,
            "tool": self.tool,
            "call_id": self.call_id,
            "message_index": self.message_index,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "saved": self.saved,
            "fallback": self.fallback,
            "note": self.note,
        }
