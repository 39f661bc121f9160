"""PLACEHOLDER — being written. Detects nothing yet."""

from __future__ import annotations

from typing import Any, ClassVar

from ctxwin._model import Conversation, Loc, Message
from ctxwin._pairing import PairingRules, ProblemCode
from ctxwin.formats._base import Adapter


class AnthropicAdapter(Adapter):
    name = "anthropic"
    container = "messages"
    rules: ClassVar[PairingRules] = PairingRules(
        turn="message", placement="next_message", carrier="grouped", carrier_role="user"
    )

    def detect(self, body: object) -> int:
        return 0

    def parse_message(self, raw: Any, index: int) -> Message:
        raise NotImplementedError

    def render_message(self, msg: Message, conv: Conversation) -> object:
        raise NotImplementedError

    def block_path(self, msg: Message, block: int) -> str:
        raise NotImplementedError

    def problem_text(self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None) -> str:
        raise NotImplementedError
