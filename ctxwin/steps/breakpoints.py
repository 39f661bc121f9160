"""Prompt-cache breakpoints, placed where the next request's prefix ends.

Under ``cache_breakpoints: auto`` the request gets, within what the provider allows (its
limit less the breakpoints the system prompt and the tools carry):

- one at the end of the prefix the window keeps until its next jump — the last message
  before the first result it would clear next — so a jump re-writes only what follows it;
- one on the last message, so the next request reads everything before its new messages.

The request's own message-level breakpoints go (system and tools keep theirs, a system
prompt sent as a message too: they count against the limit), but those on a
message ctxwin marks stay as they are: they count against the limit block by block, and a
breakpoint of ctxwin's (default TTL, 5 minutes) is not placed before one of theirs with
``ttl: "1h"`` (Anthropic refuses a 1-hour breakpoint after a 5-minute one). A breakpoint
before the provider's minimum cacheable prefix is not placed, nor one on a message with no
block that takes it (thinking blocks, empty texts). Under ``keep`` (the default)
the request's markers are left where they are, kept on edited blocks.
"""

from __future__ import annotations

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, Opaque, Text
from ctxwin.formats._markers import MARKERS
from ctxwin.steps._base import Context, Limits

__all__ = ["CacheBreakpoints"]

_FORMATS = {"anthropic": ("anthropic",), "openai": ("openai-chat", "openai-responses")}


class CacheBreakpoints:
    """Place the request's cache breakpoints (see the module docstring)."""

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        limits = context.limits()
        if context.config.cache_breakpoints != "auto" or context.format not in _FORMATS.get(
            limits.breakpoint, ()
        ):
            return conversation
        wanted = self.targets(conversation, context, limits)
        messages = conversation.messages
        if all(m.cache == (i in wanted) for i, m in enumerate(messages)):
            return conversation
        out = tuple(m.with_cache(i in wanted) for i, m in enumerate(messages))
        return conversation.with_messages(out, same_structure=True)

    def targets(self, conv: Conversation, ctx: Context, limits: Limits) -> set[int]:
        """The positions of the messages to mark."""
        messages = conv.messages
        marks = _Marks(messages, limits.breakpoint)
        # a system prompt sent as a message (OpenAI) keeps its markers, as an envelope's do
        system = {i for i, m in enumerate(messages) if m.role == "system" and m.cache}
        budget = limits.breakpoints - conv.envelope_marks  # what the messages may carry
        markable = [i for i, m in enumerate(messages) if _markable(m, limits.breakpoint)]
        if budget <= sum(map(marks.count, system)) or not markable:
            return system
        tokens = _prefix_tokens(conv, ctx)
        out: set[int] = set(system)
        last = markable[-1]
        if tokens[last] >= limits.min_prefix:
            out.add(last)
        if last in out and sum(map(marks.count, out)) > budget:
            out.discard(last)  # the user's own markers there are more than the provider takes
        frontier = _frontier(conv, ctx)
        if frontier is not None:
            before = [i for i in markable if i < frontier]
            if before and tokens[before[-1]] >= limits.min_prefix:
                i = before[-1]
                fits = marks.count(i) + sum(marks.count(j) for j in out) <= budget
                if fits and (messages[i].cache or not marks.long_after(i, out)):
                    out.add(i)
        return out


class _Marks:
    """The breakpoints a marked message carries: the request's own where it has them (one
    per block that carries one), else ctxwin's one."""

    def __init__(self, messages: tuple[Message, ...], kind: str) -> None:
        self.messages = messages
        self.marker = MARKERS.get(kind)

    def values(self, i: int) -> list[object]:
        msg = self.messages[i]
        if not msg.cache or self.marker is None:
            return [self.marker.value if self.marker else {}]
        return list(self.marker.values(msg.raw)) or [self.marker.value]

    def count(self, i: int) -> int:
        return len(self.values(i))

    def long_after(self, i: int, marked: set[int]) -> bool:
        """Whether a marked message after ``i`` keeps a 1-hour breakpoint of the user's."""
        return any(
            isinstance(v, dict) and v.get("ttl") == "1h"
            for j in marked
            if j > i
            for v in self.values(j)
        )


def _markable(msg: Message, kind: str) -> bool:
    """Whether a breakpoint can sit on the message (OpenAI: not on assistant output;
    Anthropic: not on a message of thinking blocks and empty texts only)."""
    if not msg.blocks or msg.role == "system":
        return False
    if kind == "openai" and msg.role == "assistant":
        return False
    return any(
        not (isinstance(b, Opaque) and "thinking" in b.kind)
        and not (isinstance(b, Text) and not b.text.strip())
        for b in msg.blocks
    )


def _prefix_tokens(conv: Conversation, ctx: Context) -> list[int]:
    """Tokens of the request up to and including each message, as the provider reads it."""
    total = ctx.envelope_tokens(conv)
    out = []
    for tokens in ctx.meter.read(conv.messages):
        total += tokens
        out.append(total)
    return out


def _frontier(conv: Conversation, ctx: Context) -> int | None:
    """Where the first result the window would clear next stands (its message), if any:
    the oldest result of a round that is not cleared and whose tool the window clears."""
    cleared = {(e.message_index, e.call_id) for e in ctx.edits if e.step == "window"}
    best: tuple[int, int] | None = None
    for ref in conv.results():
        if ref.round is None or (best is not None and ref.round >= best[0]):
            continue
        rules = ctx.rules_for(ref.tool)
        if rules is not None and rules.rules.window == "keep":
            continue
        if (conv.messages[ref.loc[0]].index, ref.result.call_id) in cleared:
            continue
        best = (ref.round, ref.loc[0])
    return None if best is None else best[1]
