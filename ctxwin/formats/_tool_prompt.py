"""The system prompt Anthropic adds to a request that offers tools, in tokens.

Anthropic's "Tool use pricing and tokens": with tools, "we also automatically include a
special system prompt for the model which enables tool use", 346 tokens where the model may
answer without a tool (``tool_choice`` auto or none, or not given) and 313 where it must
call one (any, tool), for its current models (the Claude 3 models' differ, 159 to 530).
Without it, a small first request came out some 20% over what ctxwin counted, and usage
calibration learned that as the tokenizer's gap.

A body in OpenAI Chat's or Responses' shape bound for a Claude model (LiteLLM, OpenRouter,
the Agents SDK on LitellmModel) reaches Anthropic with its tools as theirs: ``tool_choice``
``"required"`` or a named function is Anthropic's any or tool. Such a body is held to
Anthropic's rule on call ids too (:func:`claude_rules`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ctxwin._core.conversation import Conversation

__all__ = [
    "REASONING_ITEM",
    "TOOL_PROMPT",
    "TOOL_PROMPT_FORCED",
    "claude_bound",
    "claude_rules",
    "claude_thinking",
    "tool_prompt",
]

TOOL_PROMPT = 346
"""With ``tool_choice`` auto or none (or none given)."""
TOOL_PROMPT_FORCED = 313
"""With ``tool_choice`` any or tool (Chat: ``required`` or a named function)."""
_FORCED = frozenset({"any", "tool", "required", "function"})


def tool_prompt(body: object) -> int:
    """The tokens of the tool-use system prompt Anthropic adds to an Anthropic Messages,
    OpenAI Chat or Responses body (0: it offers no tools)."""
    if not isinstance(body, Mapping):
        return 0
    tools, choice = body.get("tools"), body.get("tool_choice")
    if not tools or not isinstance(tools, list):
        return 0
    kind = choice.get("type") if isinstance(choice, Mapping) else choice
    return TOOL_PROMPT_FORCED if kind in _FORCED else TOOL_PROMPT


def claude_bound(format: str, model: str | None) -> bool:
    """Whether a body in ``format`` reaches a Claude model: its model says so (LiteLLM's
    ``anthropic/claude-...``, OpenRouter's, Bedrock's), or, no model named, it is an
    Anthropic body; never a Gemini one. Not where the Anthropic format stands in for
    another provider's model (pydantic-ai's)."""
    if format == "gemini":
        return False
    return "claude" in model.lower() if model is not None else format == "anthropic"


def claude_rules(conv: Conversation, model: str | None) -> Conversation:
    """``conv`` held to Anthropic's rules when it reaches a Claude model
    (:func:`claude_bound`): call ids unique in the whole request ("``tool_use`` ids must be
    unique"), which OpenAI's formats ask only within a turn (a GPT history with ``call_0`` in
    two turns, handed to Claude through LiteLLM, is refused)."""
    if conv.rules.unique_ids or not claude_bound(conv.format, model):
        return conv
    return _with_rules(conv, unique_ids=True)


REASONING_ITEM = frozenset({"reasoning"})
"""The kind of an OpenAI Responses reasoning item (the block it parses to)."""


def claude_thinking(conv: Conversation, model: str | None) -> Conversation:
    """A Responses body for a Claude model (:func:`claude_bound`; the Agents SDK on
    ``LitellmModel``, LiteLLM's Responses bridge): its reasoning items are Claude's thinking
    blocks, which the SDK and LiteLLM send back as the next assistant message's thinking. So
    they open their turn as thinking does
    (:attr:`~ctxwin._core.model.PairingRules.turn_openers`): with thinking on, Anthropic
    refuses a turn whose first assistant message does not start with it ("a final
    assistant message must start with a thinking block"), and drops keep it. On a model
    that checks their prefix (``thinking_binding: prefix``), they are also the blocks the
    window removes once a change before them invalidates them, as it removes a chat's
    ``thinking_blocks`` (``steps/_binding.py``): sent as they were, Anthropic refuses the
    request ("The block is bound to a different conversation")."""
    if conv.format != "openai-responses" or conv.rules.turn_openers:
        return conv
    if not claude_bound(conv.format, model):
        return conv
    return _with_rules(conv, turn_openers=REASONING_ITEM)


def _with_rules(conv: Conversation, **changes: object) -> Conversation:
    """``conv`` under other pairing rules (its pairing and ties worked out again)."""
    rules = dataclasses.replace(conv.rules, **changes)  # type: ignore[arg-type]
    return dataclasses.replace(conv, rules=rules, _pairing=[], _ties=[])
