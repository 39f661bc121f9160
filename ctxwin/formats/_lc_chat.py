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

OpenAI drops the reasoning of earlier turns (before the user's latest message); ctxwin
counts those blocks all the same (an upper bound: they sit in messages with calls, not in
reasoning items of their own).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

from ctxwin._core.model import OpaqueCategory, PairingRules
from ctxwin.formats._responses_items import ENCRYPTED_REASONING
from ctxwin.formats.openai_chat import OpenAIChatAdapter
from ctxwin.tokens._meter import Sealed

__all__ = ["REASONING", "TURN_OPENERS", "LangChainChatAdapter"]

REASONING = "reasoning"
"""The block type of a Responses reasoning item, and of LangChain's v1 reasoning block."""
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
    )

    def category(self, kind: str) -> OpaqueCategory:
        return "reasoning" if kind == REASONING else super().category(kind)
