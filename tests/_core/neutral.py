"""Conversations written in the neutral model directly, with no adapter in sight."""

from __future__ import annotations

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Loc, Message, PairingRules, Text, ToolCall, ToolResult
from ctxwin._core.records import ProblemCode

ADJACENT = PairingRules(
    turn="message", placement="adjacent", carrier="one_per_message", carrier_role="tool"
)
"""Results one per message, right after their turn (OpenAI Chat's rules)."""
GROUPED = PairingRules(
    turn="message",
    placement="next_message",
    carrier="grouped",
    carrier_role="user",
    results_first=True,
)
"""All results in the next user message, before anything else (Anthropic's rules)."""
ANYWHERE = PairingRules(
    turn="consecutive", placement="anywhere_after", carrier="one_per_message", carrier_role="tool"
)
"""Each result anywhere after its call (OpenAI Responses' rules)."""


def user(text: str) -> Message:
    return Message("user", (Text(text),))


def calls(*ids: str) -> Message:
    return Message("assistant", tuple(ToolCall(i, f"tool_{i}", "{}") for i in ids))


def result(cid: str, text: str = "ok") -> ToolResult:
    return ToolResult(cid, (Text(text),))


def results(*ids: str, role: str = "tool") -> Message:
    return Message(role, tuple(result(i) for i in ids))  # type: ignore[arg-type]


def conv(rules: PairingRules, *messages: Message) -> Conversation:
    indexed = tuple(Message(m.role, m.blocks, raw=m.raw, index=i) for i, m in enumerate(messages))
    return Conversation(format="openai-chat", messages=indexed, rules=rules)


class Describer:
    """Paths and texts without any format: ``m3.b1``, and the code itself."""

    def block_path(self, msg: Message, block: int) -> str:
        return f"m{msg.index}.b{block}"

    def problem_text(
        self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None
    ) -> str:
        return f"{code} {call_id}"
