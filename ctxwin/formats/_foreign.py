"""Another format's calls and results inside a message's content (an Anthropic body given
``format="openai-chat"`` or ``"openai-responses"``): read there they are opaque parts, so
the calls they pair are not seen, and a round dropped or cleared leaves a ``tool_result``
whose ``tool_use`` is gone. The chat-like adapters refuse them at the part."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ctxwin._core.model import Opaque, Part
from ctxwin._exceptions import FormatError

__all__ = ["foreign_call_part", "refuse_foreign"]

_CALL_PARTS = {
    "tool_use": "an Anthropic call block",
    "tool_result": "an Anthropic result block",
    "functionCall": "a Gemini call part",
    "functionResponse": "a Gemini result part",
}
"""Calls and results of another format, which neither a Chat server nor OpenAI Responses
takes as content. OpenAI Chat knows ``text``, ``image_url``, ``input_audio``, ``file`` and
``refusal``; vLLM refuses a type it does not know ("Unsupported chat content part type") and
an untyped part that is none of its media shortcuts ("Missing 'type' field"); LiteLLM refuses
a user message holding a type not its own (``validate_chat_completion_user_messages``, "to
prevent users from accidentally sending anthropic messages") and passes on to Claude, of an
assistant's parts, only text, thinking and the server tools' (``server_tool_use``,
``*_tool_result``). A Responses message holds ``input_text``, ``input_image``,
``input_file``, ``input_audio``, ``output_text`` and ``refusal``; its calls and outputs are
items of their own. Thinking (``thinking``, ``redacted_thinking``), Anthropic's server tools
and ``tool_reference`` are not here: LiteLLM and vLLM take them in a chat."""


def foreign_call_part(part: Mapping[str, object]) -> str | None:
    """What a content part of a message is when it is another format's call or result
    (``"an Anthropic call block ('tool_use')"``), else None."""
    kind = part.get("type")
    if not isinstance(kind, str):  # Gemini's parts have none
        kind = next((k for k in ("functionCall", "functionResponse") if k in part), None)
    elif kind not in ("tool_use", "tool_result"):
        return None
    return None if kind is None else f"{_CALL_PARTS[kind]} ({kind!r})"


def refuse_foreign(parts: Sequence[Part], path: str, fmt: str, instead: str) -> None:
    """Raise :class:`FormatError` at the first of a message's ``parts`` (its content list at
    JSON ``path``) that is another format's call or result; ``instead`` says, after
    "which", where ``fmt`` keeps its calls and results."""
    for k, part in enumerate(parts):
        if isinstance(part, Opaque) and isinstance(part.raw, Mapping):
            what = foreign_call_part(part.raw)
            if what is not None:
                raise FormatError(f"{what}, which {instead}", path=f"{path}[{k}]", format=fmt)
