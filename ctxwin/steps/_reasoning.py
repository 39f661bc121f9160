"""The reasoning items ``window.clear_reasoning`` drops (OpenAI Responses): those of a round,
which go with its results, and those of an answer (a turn without calls), which go with the
round before it. Items the provider ties to the call or message after them stay."""

from __future__ import annotations

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message

__all__ = ["answer_reasoning", "is_reasoning_item"]


def is_reasoning_item(msg: Message) -> bool:
    """A message that is nothing but a reasoning item (OpenAI Responses)."""
    blocks = msg.blocks
    return len(blocks) == 1 and getattr(blocks[0], "category", None) == "reasoning"


def answer_reasoning(conv: Conversation, end: int) -> list[int]:
    """The reasoning items ``window.clear_reasoning`` may drop of the answer that ends before
    message ``end``: the turn of the model's messages just before it, when that turn made no
    call (an answer, not a round) and none of its messages is tied to its reasoning. Such
    items join the round before them: the window drops them when it clears that round."""
    messages = conv.messages
    j = end
    while j > 0 and messages[j - 1].role == "assistant":
        j -= 1
        if messages[j].tool_calls or messages[j].tied_reasoning:
            return []
    return [i for i in range(j, end) if is_reasoning_item(messages[i])]
