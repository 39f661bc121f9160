"""The reasoning items ``window.clear_reasoning`` drops (OpenAI Responses): those of a round,
which go with its results, and those of an answer (a turn without calls), which go with the
round before it. Items the provider ties to the call or message after them stay."""

from __future__ import annotations

from bisect import bisect_left

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, is_reasoning_item
from ctxwin.steps._base import Context

__all__ = [
    "NOTE_SHARE",
    "answer_reasoning",
    "clearable_reasoning",
    "reasoning_note",
    "round_tied",
]

NOTE_SHARE = 0.25
"""The share of a request its clearable reasoning items must reach for :func:`reasoning_note`."""


def _tied(msg: Message) -> bool:
    """Whether the provider requires ``msg`` to come with the reasoning item before it."""
    return msg.tied_reasoning or any(c.tied_reasoning for c in msg.tool_calls)


def round_tied(conv: Conversation, r: int) -> bool:
    """Whether round ``r``'s turn holds a call or message tied to its reasoning items (an
    item id), which then stay with it."""
    rnd = conv.pairing.rounds[r]
    return any(_tied(conv.messages[i]) for i in range(rnd.start, rnd.end + 1))


def answer_reasoning(conv: Conversation, end: int) -> list[int]:
    """The reasoning items ``window.clear_reasoning`` may drop of the answer that ends before
    message ``end``: the turn of the model's messages just before it, when that turn made no
    call (an answer, not a round) and none of its messages is tied to its reasoning. Such
    items join the round before them: the window drops them when it clears that round."""
    messages = conv.messages
    j = end
    while j > 0 and messages[j - 1].role == "assistant":
        j -= 1
        if messages[j].tool_calls or _tied(messages[j]):
            return []
    return [i for i in range(j, end) if is_reasoning_item(messages[i])]


def clearable_reasoning(conv: Conversation) -> list[tuple[int, int]]:
    """Every reasoning item of ``conv`` that ``clear_reasoning`` clears, with the round it
    goes with, as ``(round, message)``: those of untied rounds, and those of the answers
    after a round (:func:`answer_reasoning`), as the window's fold takes them one message at
    a time."""
    messages = conv.messages
    rounds = conv.pairing.rounds
    out = [
        (rnd.index, mi)
        for rnd in rounds
        if not round_tied(conv, rnd.index)
        for mi in range(rnd.start, rnd.end + 1)
        if is_reasoning_item(messages[mi])
    ]
    calls = [min((c[0] for c in r.calls), default=r.start) for r in rounds]
    for k in range(1, len(messages)):
        if messages[k].role != "assistant" and messages[k - 1].role == "assistant":
            before = bisect_left(calls, k) - 1  # the round the answer came after
            out += [(before, mi) for mi in answer_reasoning(conv, k)] if before >= 0 else []
    return out


def reasoning_note(ctx: Context, conv: Conversation) -> str | None:
    """A note for the report of a request the window had to drop old messages from, while
    reasoning items ``window.clear_reasoning`` would clear (:func:`clearable_reasoning`) make
    up :data:`NOTE_SHARE` or more of it: with it off they are never
    cleared, only dropped with their round, and whole rounds go instead (on Codex-style
    Responses traces, often most of what is sent)."""
    if ctx.config.window.clear_reasoning or not any(e.step == "drop" for e in ctx.edits):
        return None
    messages = conv.messages
    reasoning = sum(ctx.message_tokens(messages[mi]) for _, mi in clearable_reasoning(conv))
    total = ctx.conversation_tokens(conv)
    if not total or reasoning < NOTE_SHARE * total:
        return None
    return (
        f"the window dropped old messages to fit the context window while reasoning items "
        f"make up {reasoning / total:.0%} of the request: they are only dropped with their "
        "round unless window.clear_reasoning is true, which clears those of old rounds "
        "instead"
    )
