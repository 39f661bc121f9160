"""The OpenAI Chat adapter as LangChain's messages need it (:mod:`ctxwin.formats.langchain`).

A LangChain history goes through ctxwin as a Chat body, but its AI messages hold the
reasoning of the provider behind the chat model, which reads it back as that provider does:

- ChatAnthropic's ``thinking`` and ``redacted_thinking`` blocks (``reasoning`` in LangChain's
  v1 standard blocks, ``reasoning_content`` in ChatBedrockConverse's): with thinking on,
  Anthropic refuses a turn whose first assistant message does not begin with its thinking
  ("a final assistant message must start with a thinking block"), so drops keep that
  message, as the Anthropic adapter has them do (:attr:`PairingRules.turn_openers`);
- ChatOpenAI's Responses ``reasoning`` blocks, which it sends back as reasoning items: one
  carrying its ``encrypted_content`` (at the top, or in the ``extras`` of a v1 standard
  block) counts what OpenAI reads of it, as the Responses adapter counts the item
  (:data:`~ctxwin.formats._responses_items.ENCRYPTED_REASONING`), not its JSON text;
- ChatOpenAI's ``output_version="v0"`` keeps the reasoning item in ``additional_kwargs``:
  :mod:`~ctxwin.formats.langchain` puts it in the message's ``reasoning`` field, which the
  Chat adapter counts with its message.

Its media blocks too are counted as the provider behind the chat model bills them
(:func:`media_tokens`): ChatAnthropic's own ``image`` and ``document`` blocks, LangChain's
standard ``image`` and ``file`` blocks (v1: ``base64``, or a ``data:`` URL as ``url``; v0:
``source_type`` ``"base64"`` and ``data``) as the Anthropic block a chat model makes of them,
and Chat ``image_url`` and ``file`` parts as the Chat adapter counts them: images by
OpenAI's tiles and PDFs at OpenAI's figure a page
(:data:`~ctxwin.formats._openai_images.OPENAI_PDF_PAGE_TOKENS`), or for a Claude model
(:func:`claude_media_tokens`, which :func:`~ctxwin._feedback.limits.overheads_for` puts in
place) by Claude's rules.

A ``tool_result`` block (ChatAnthropic's result, in a ``HumanMessage``) is refused, a
:class:`~ctxwin.FormatError` at the block: ctxwin reads a LangChain history's results from
its ``ToolMessage``s, and read as opaque content it left its call unanswered (repair then
added a second, invented result). Pairing such blocks would need a result carried inside a
user message, next to its text, which the Chat shape the history goes through has no
place for; LangChain's own messages answer a call with a ``ToolMessage``.

A tool message that carries ``"status": "error"`` (a ``ToolMessage`` with
``status="error"``, see :mod:`~ctxwin.formats.langchain`) is an error result: the flag is
that message's, whatever other results answer a call of the same id.

OpenAI drops the reasoning of earlier turns (before the user's latest message); ctxwin
counts those blocks all the same (an upper bound: they sit in messages with calls, not in
reasoning items of their own).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ctxwin._core.model import Message, OpaqueCategory, PairingRules, Part, ToolResult
from ctxwin._exceptions import FormatError
from ctxwin.formats._anthropic_media import SizeRule, media_part_tokens
from ctxwin.formats._openai_images import (
    OPENAI_PDF_PAGE_TOKENS,
    claude_part_tokens,
    openai_part_tokens,
)
from ctxwin.formats._responses_items import ENCRYPTED_REASONING
from ctxwin.formats.openai_chat import OpenAIChatAdapter
from ctxwin.tokens._images import CLAUDE_IMAGES, OPENAI_IMAGES
from ctxwin.tokens._meter import Sealed

__all__ = [
    "ERROR",
    "REASONING",
    "STATUS",
    "TURN_OPENERS",
    "LangChainChatAdapter",
    "claude_media_tokens",
    "media_tokens",
]

STATUS = "status"
"""The key of a Chat tool message that says a ``ToolMessage``'s status."""
ERROR = "error"
"""The status of a ``ToolMessage`` whose result is an error."""
REASONING = "reasoning"
"""The block type of a Responses reasoning item, and of LangChain's v1 reasoning block."""
_RESULT_BLOCK = "tool_result"
"""ChatAnthropic's result block, refused in a LangChain message (see the module)."""
TURN_OPENERS = frozenset({"thinking", "redacted_thinking", REASONING, "reasoning_content"})
"""Blocks that open a turn with thinking on: Anthropic's, LangChain's v1 standard block
(ChatAnthropic's ``output_version="v1"``), ChatBedrockConverse's ``reasoning_content``."""


class _Sealed(Sealed):
    """:data:`ENCRYPTED_REASONING` of a block that carries its ``encrypted_content`` at the
    top (``responses/v1``) or in its ``extras`` (v1 standard blocks, which ChatOpenAI puts
    back at the top of the item it sends)."""

    __slots__ = ()

    def tokens(self, raw: object) -> int | None:
        if isinstance(raw, Mapping) and self.key not in raw:
            extras = raw.get("extras")
            if isinstance(extras, Mapping):
                return Sealed.tokens(self, extras)
        return Sealed.tokens(self, raw)


_STANDARD = {"image": "image", "file": "document"}
"""LangChain's standard media blocks, and the Anthropic block a chat model makes of each."""


def _as_anthropic(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A media block as the Anthropic block it stands for (ChatAnthropic's own ``image`` or
    ``document``, or a standard block with its data inline); None for anything else (a Chat
    part, a URL, a file id)."""
    kind = raw.get("type")
    if isinstance(raw.get("source"), Mapping):
        return raw if kind in ("image", "document") else None
    block = _STANDARD.get(kind) if isinstance(kind, str) else None
    if block is None:
        return None
    data, mime = raw.get("base64"), raw.get("mime_type")
    if data is None and raw.get("source_type") == "base64":
        data = raw.get("data")
    url = raw.get("url")
    if data is None and isinstance(url, str) and url.startswith("data:"):
        data, mime = url, mime or url[5:300].partition(";")[0]
    if not isinstance(data, str):
        return None
    return {"type": block, "source": {"type": "base64", "media_type": mime, "data": data}}


def media_tokens(raw: object, rule: SizeRule = OPENAI_IMAGES) -> int | None:
    """The tokens of an inline image or PDF in a LangChain message, images by ``rule``
    (OpenAI's tiles by default), PDFs at OpenAI's figure a page
    (:data:`~ctxwin.formats._openai_images.OPENAI_PDF_PAGE_TOKENS`), Chat parts as the Chat
    adapter counts them; None for anything else (its flat estimate)."""
    block = _as_anthropic(raw) if isinstance(raw, Mapping) else None
    if block is not None:
        return media_part_tokens(block, rule, OPENAI_PDF_PAGE_TOKENS)
    return openai_part_tokens(raw)


def claude_media_tokens(raw: object) -> int | None:
    """:func:`media_tokens` for a Claude model: images by Claude's area rule, and Chat
    parts as :func:`~ctxwin.formats._openai_images.claude_part_tokens` counts them."""
    block = _as_anthropic(raw) if isinstance(raw, Mapping) else None
    if block is not None:
        return media_part_tokens(block, CLAUDE_IMAGES)
    return claude_part_tokens(raw)


class LangChainChatAdapter(OpenAIChatAdapter):
    """The OpenAI Chat adapter for LangChain's messages (see the module)."""

    variant: ClassVar[str] = "langchain"

    rules: ClassVar[PairingRules] = dataclasses.replace(
        OpenAIChatAdapter.rules, turn_openers=TURN_OPENERS
    )
    overheads = dataclasses.replace(
        OpenAIChatAdapter.overheads,
        encrypted_reasoning=_Sealed(
            ENCRYPTED_REASONING.key, ENCRYPTED_REASONING.fixed, ENCRYPTED_REASONING.per
        ),
        images=media_tokens,
    )

    def category(self, kind: str) -> OpaqueCategory:
        return "reasoning" if kind == REASONING else super().category(kind)

    def parts(self, parts: list[Any], path: str, **options: Any) -> tuple[Part, ...]:
        for k, part in enumerate(parts):
            if isinstance(part, Mapping) and part.get("type") == _RESULT_BLOCK:
                raise FormatError(
                    f"an Anthropic result block ({_RESULT_BLOCK!r}) in a LangChain message: "
                    "ctxwin reads a LangChain history's tool results from its ToolMessages; "
                    "answer the call with ToolMessage(content, tool_call_id=...) instead",
                    path=f"{path}[{k}]",
                    format=self.name,
                )
        return super().parts(parts, path, **options)

    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        msg = super().parse_message(raw, index)
        if raw.get(STATUS) != ERROR or msg.role != "tool":
            return msg
        blocks = tuple(
            dataclasses.replace(b, is_error=True) if isinstance(b, ToolResult) else b
            for b in msg.blocks
        )
        return dataclasses.replace(msg, blocks=blocks)
