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
before the provider's minimum cacheable prefix is not placed. A message the format's
adapter puts no marker on (no block that takes one: thinking, empty texts, Anthropic's
``fallback``; an OpenAI Chat legacy ``function`` message, whose content stays a string; a
Responses output that is no list of parts) is passed over for the markable one before it.
Under ``keep`` (the default) the request's markers are left where they are, kept on edited
blocks.

The breakpoints are of the kind the model's profile names (Anthropic's ``cache_control``,
OpenAI's ``prompt_cache_breakpoint``), and only where the format's adapter writes that kind
in this request: a request whose adapter writes another (an OpenAI Chat body for a Claude
model, which OpenAI-compatible endpoints would refuse; an Anthropic body for an OpenAI
model) is left as it is. An OpenAI Chat body that LiteLLM sends to Anthropic is written with
``cache_control`` (its adapter's dialect, set by the LiteLLM hook).
"""

from __future__ import annotations

from collections.abc import Mapping

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, Text, ToolResult, call_at
from ctxwin.formats import get_adapter
from ctxwin.formats._markers import MARKERS, Marker
from ctxwin.steps._base import Context, Limits

__all__ = ["CacheBreakpoints"]

_PROBE = Message("user", (Text("."),))
"""A plain user text: every format with breakpoints puts one on it, of the kind it writes."""


class CacheBreakpoints:
    """Place the request's cache breakpoints (see the module docstring)."""

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        limits = context.limits()
        marker = MARKERS.get(limits.breakpoint)
        if context.config.cache_breakpoints != "auto" or marker is None:
            return conversation
        if not _Takes(conversation, context.format, marker).writes(_PROBE):
            return conversation  # the adapter writes another kind of breakpoint here
        wanted = self.targets(conversation, context, limits)
        messages = conversation.messages
        cached = {i for i, m in enumerate(messages) if m.cache}
        if cached == wanted:
            return conversation
        out = list(messages)
        for i in cached | wanted:
            out[i] = messages[i].with_cache(i in wanted)
        return conversation.with_messages(tuple(out), same_structure=True)

    def targets(self, conv: Conversation, ctx: Context, limits: Limits) -> set[int]:
        """The positions of the messages to mark."""
        messages = conv.messages
        marker = MARKERS.get(limits.breakpoint)
        if marker is None:
            return set()
        marks = _Marks(messages, marker)
        # a system prompt sent as a message (OpenAI) keeps its markers, as an envelope's do
        system = {i for i, m in enumerate(messages) if m.role == "system" and m.cache}
        budget = limits.breakpoints - conv.envelope_marks  # what the messages may carry
        if budget <= sum(map(marks.count, system)):
            return system
        takes = _Takes(conv, ctx.format, marker)
        last = takes.last(len(messages))
        if last is None:
            return system
        first = _first_cacheable(conv, ctx, limits.min_prefix)
        if first is None or last < first:
            return system
        out: set[int] = {*system, last}
        if sum(map(marks.count, out)) > budget:
            out.discard(last)  # the user's own markers there are more than the provider takes
        frontier = _frontier(conv, ctx)
        if frontier is not None:
            i = takes.last(frontier)
            if i is not None and i >= first:
                fits = marks.count(i) + sum(marks.count(j) for j in out) <= budget
                if fits and (messages[i].cache or not marks.long_after(i, out)):
                    out.add(i)
        return out


class _Marks:
    """The breakpoints a marked message carries: the request's own where it has them (one
    per block that carries one), else ctxwin's one."""

    def __init__(self, messages: tuple[Message, ...], marker: Marker) -> None:
        self.messages = messages
        self.marker = marker

    def values(self, i: int) -> list[object]:
        msg = self.messages[i]
        if not msg.cache:
            return [self.marker.value]
        return list(self.marker.values(msg.raw)) or [self.marker.value]

    def count(self, i: int) -> int:
        return len(self.values(i))

    def long_after(self, i: int, marked: set[int]) -> bool:
        """Whether a marked message after ``i`` keeps a 1-hour breakpoint of the user's."""
        return any(
            isinstance(v, Mapping) and v.get("ttl") == "1h"
            for j in marked
            if j > i
            for v in self.values(j)
        )


class _Takes:
    """Which messages take a breakpoint of the marker's kind: first the neutral test
    (:func:`_markable`), then, as it cannot see every wire rule, the format's adapter, asked
    to render the message marked, as the render will send it (the adapter picks the kind of
    marker the request's dialect takes). Only the few messages that would be marked are
    tried, from the end."""

    def __init__(self, conv: Conversation, format: str, marker: Marker) -> None:
        self.conv = conv
        self.adapter = get_adapter(format)
        self.marker = marker

    def __call__(self, i: int) -> bool:
        msg = self.conv.messages[i]
        return _markable(msg) and self.writes(msg)

    def writes(self, msg: Message) -> bool:
        """Whether the message, marked, goes out with a breakpoint of the marker's kind."""
        adapter = self.adapter
        if not msg.cache:  # msg.with_cache(True), built directly: replace() is slow
            msg = Message(msg.role, msg.blocks, msg.raw, False, msg.index, True, msg.tied_reasoning)
        data = adapter.render_message(msg, self.conv)
        if not isinstance(data, Mapping):
            return False
        if not adapter.marker_of(data):
            data = adapter.set_marker(dict(data), True)
        return adapter.marker_of(data) and bool(self.marker.values(data))

    def last(self, end: int) -> int | None:
        """The last message before position ``end`` that takes a breakpoint, if any."""
        return next((i for i in range(end - 1, -1, -1) if self(i)), None)


def _markable(msg: Message) -> bool:
    """Whether a breakpoint may sit on the message as far as the neutral model tells (a
    message with blocks, not the system prompt, which keeps its own markers); the format's
    adapter has the last word (:class:`_Takes`: which blocks and roles take one)."""
    return bool(msg.blocks) and msg.role != "system"


def _first_cacheable(conv: Conversation, ctx: Context, min_prefix: int) -> int | None:
    """The first message at which the request, as the provider reads it, reaches its minimum
    cacheable prefix (None: it never does). A breakpoint there or later is worth placing;
    summed from the start, so only up to that message."""
    total = ctx.envelope_tokens(conv)
    messages = conv.messages
    unread = ctx.meter.unread(messages)
    skip = set(unread) if unread else ()
    for k, msg in enumerate(messages):
        if k not in skip:
            total += ctx.meter.message(msg)
        if total >= min_prefix:
            return k
    return None


def _frontier(conv: Conversation, ctx: Context) -> int | None:
    """Where the first result the window would clear next stands (its message), if any:
    the oldest result of a round that is not cleared and whose tool the window clears.
    (The results the window cleared, most of a long history, are passed over first, before
    their call and round are looked up.)"""
    cleared = {(e.message_index, e.call_id) for e in ctx.edits if e.step == "window"}
    messages, pairing = conv.messages, conv.pairing
    best: tuple[int, int] | None = None
    for mi, msg in enumerate(messages):
        for bi, block in enumerate(msg.blocks):
            if not isinstance(block, ToolResult) or (msg.index, block.call_id) in cleared:
                continue
            call_loc = pairing.call_of.get((mi, bi))
            if call_loc is None:
                continue  # no call: no round
            rnd = pairing.round_of_message.get(call_loc[0])
            if rnd is None or (best is not None and rnd >= best[0]):
                continue
            rules = ctx.rules_for(call_at(messages, call_loc).name)
            if rules is not None and rules.rules.window == "keep":
                continue
            best = (rnd, mi)
    return None if best is None else best[1]
