"""The OpenAI Chat adapter for a chat LiteLLM sends on to a Claude model (Anthropic,
Bedrock, Vertex AI, Azure AI).

LiteLLM carries Claude's thinking in an assistant message's ``thinking_blocks`` field, and
its Anthropic transformation sends those entries back as the message's first content blocks
(before its text and its ``tool_use`` blocks); it does not send ``reasoning_content``
(litellm 1.110.2 ``prompt_templates/factory.py``, ``anthropic_messages_pt``: "ADD THIS
FIRST, ELSE ANTHROPIC WILL RAISE AN ERROR"; Bedrock Converse takes them as
``reasoningContent`` blocks the same way). So this adapter reads each entry as a block of
its message, first, as ctxwin's Anthropic adapter reads the block LiteLLM sends (counted as
it counts it), and writes the ones left back into the field. With thinking on, the turn's
first assistant message must begin with its thinking
(:attr:`~ctxwin._core.model.PairingRules.turn_openers`, as in the Anthropic adapter): drops
keep it. On a model that checks the prefix of the thinking sent back (preserved thinking:
``thinking_binding: prefix``), the window removes the thinking its own changes invalidated
here as it does in an Anthropic body; on the others it removes none.

The reasoning keys the plain Chat adapter counts with the message (``reasoning_content``,
``reasoning``, ``reasoning_details``, ``thinking_blocks``: the largest) count as the blocks
LiteLLM sends instead; ``name``, ``provider_specific_fields``, ``refusal`` and ``audio``
count as in the plain adapter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, Opaque, PairingRules
from ctxwin.formats._base import Adapter, json_type, require
from ctxwin.formats._binding import THINKING_KINDS
from ctxwin.formats._openai_images import claude_part_tokens
from ctxwin.formats._tool_prompt import claude_bound
from ctxwin.formats.openai_chat import OpenAIChatAdapter

__all__ = ["FIELD", "ClaudeThinkingChatAdapter", "for_claude"]

FIELD = "thinking_blocks"
"""LiteLLM's field of an assistant message holding Claude's thinking blocks."""
_REASONING_KEYS = frozenset({"reasoning_content", "reasoning", "reasoning_details", FIELD})


class ClaudeThinkingChatAdapter(OpenAIChatAdapter):
    """OpenAI Chat with LiteLLM's ``thinking_blocks`` read as blocks (see the module)."""

    variant: ClassVar[str] = "claude-thinking"
    rules: ClassVar[PairingRules] = dataclasses.replace(
        OpenAIChatAdapter.rules, turn_openers=THINKING_KINDS
    )
    overheads = dataclasses.replace(
        OpenAIChatAdapter.overheads,
        unparsed=tuple(
            u for u in OpenAIChatAdapter.overheads.unparsed if _REASONING_KEYS.isdisjoint(u.keys)
        ),
        images=claude_part_tokens,  # it goes to Claude: images and PDFs as Claude bills them
    )

    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        msg = super().parse_message(raw, index)
        field = raw.get(FIELD)
        if msg.role != "assistant" or field is None:
            return msg
        path = f"{self.path(index)}.{FIELD}"
        require(
            isinstance(field, list),
            f"'{FIELD}' must be a list of thinking blocks, not {json_type(field)}",
            path=path,
            format=self.name,
        )
        thinking = self.parts(field, path, text_types=(), what="a thinking block")
        if not thinking:
            return msg
        return dataclasses.replace(msg, blocks=(*thinking, *msg.blocks))

    def render_message(self, msg: Message, conv: Conversation) -> object:
        field = _field(msg)
        if not field:
            return super().render_message(msg, conv)
        ids = {id(e) for e in field}
        kept = [b for b in msg.blocks if isinstance(b, Opaque) and id(b.raw) in ids]
        rest = tuple(b for b in msg.blocks if not (isinstance(b, Opaque) and id(b.raw) in ids))
        out = super().render_message(dataclasses.replace(msg, blocks=rest), conv)
        if len(kept) == len(field) or not isinstance(out, Mapping):
            return out
        out = dict(out)
        if kept:
            out[FIELD] = [b.raw for b in kept]
        else:
            del out[FIELD]  # none left: the message as one without thinking
        return out

    def block_path(self, msg: Message, block: int) -> str:
        field = _field(msg)
        if field:
            at = {id(e): k for k, e in enumerate(field)}
            n = 0
            for b in msg.blocks:
                if not (isinstance(b, Opaque) and id(b.raw) in at):
                    break
                if n == block:
                    return f"{self.path(msg.index)}.{FIELD}[{at[id(b.raw)]}]"
                n += 1
            block -= n
        return super().block_path(msg, block)


def _field(msg: Message) -> list[Any] | None:
    """The ``thinking_blocks`` of an assistant message as it came (None: none)."""
    raw = msg.raw
    if msg.role != "assistant" or not isinstance(raw, Mapping):
        return None
    field = raw.get(FIELD)
    return field if isinstance(field, list) and field else None


_FOR_CLAUDE: dict[bool, ClaudeThinkingChatAdapter] = {}


def for_claude(adapter: Adapter, body: object, model: str | None) -> Adapter:
    """The adapter of a Chat body: this module's where it is bound for Claude (its model
    says so: LiteLLM's ``anthropic/claude-...``) and an assistant message of it carries
    LiteLLM's ``thinking_blocks``, which LiteLLM sends as the message's first blocks. Read by
    the plain adapter, a drop could take the message whose thinking opens its turn, and
    Anthropic refuses the request. Any other body (OpenRouter's ``reasoning_details``, a
    model that is not Claude) keeps ``adapter``."""
    plain = isinstance(adapter, OpenAIChatAdapter) and not adapter.variant
    if not plain or not isinstance(body, Mapping) or not claude_bound(adapter.name, model):
        return adapter
    messages = body.get("messages")
    if not isinstance(messages, list):
        return adapter
    # newest first: with thinking on, the latest turns carry it, so the look is short
    if not any(isinstance(m, Mapping) and m.get(FIELD) for m in reversed(messages)):
        return adapter
    marks = getattr(adapter, "cache_control", False)
    found = _FOR_CLAUDE.get(marks)
    if found is None:
        found = _FOR_CLAUDE[marks] = ClaudeThinkingChatAdapter(cache_control=marks)
    return found
