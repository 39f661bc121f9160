"""The per-tool figures of a replay's requests, kept from one request to the next.

At every request a replay adds up each tool's calls and the tokens of its results as
parsed and as sent (the figures of :func:`~ctxwin._report.build.tool_stats`). Counted
afresh, that walked and measured every result of the whole request at every request: work
quadratic in the trace, a quarter to a half of a long trace's replay. :class:`ToolTally`
keeps the sums of the request before and counts only what changed: the messages after the
longest run both requests share (the same objects: the new messages, and those the policy
made anew, such as a result the window cleared at this request), and the few results whose
tool pairing may still change (one no call answers yet, or one paired with a call after
it). A request repair changed is counted whole, as its report counts it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import shared_prefix
from ctxwin._core.model import Loc, Message, ToolCall, ToolResult, call_at
from ctxwin._core.records import Fix
from ctxwin._report.build import tool_stats
from ctxwin._report.data import ToolStats
from ctxwin.tokens._meter import TokenMeter

__all__ = ["ToolTally"]

Part = tuple[tuple[str, int, int], ...]
"""What one message adds: (tool, calls, result tokens) for each call or result it holds."""


class _Side:
    """One side of the requests (as parsed, or as sent): per tool, the calls and results it
    holds (``entries``: the tool is in the request while it has one), its calls and its
    results' tokens; with the messages they were counted from and what each one added."""

    def __init__(self, calls: bool) -> None:
        self.calls = calls  # count the calls too (the side as parsed)
        self.key: object = None
        self._reset()

    def _reset(self) -> None:
        self.messages: tuple[Message, ...] = ()
        self.parts: list[Part] = []
        self.waiting: list[int] = []  # messages holding a result whose tool may change
        self.sums: dict[str, list[int]] = {}  # tool -> [entries, calls, tokens]

    def count(self, conv: Conversation, meter: TokenMeter) -> Mapping[str, list[int]]:
        """The sums of ``conv`` (paired), from those of the conversation counted before."""
        key = (meter, conv.format, conv.server_state, conv.rules)
        if key != self.key:  # counted otherwise: from scratch
            self._reset()
            self.key = key
        messages, parts = conv.messages, self.parts
        k = shared_prefix(self.messages, messages)
        for part in parts[k:]:
            self._add(part, -1)
        del parts[k:]
        call_of = conv.pairing.call_of
        waiting = []
        for i in self.waiting:
            if i >= k:
                continue
            part, waits = self._part(messages, i, call_of, meter)
            if part != parts[i]:
                self._add(parts[i], -1)
                self._add(part, 1)
                parts[i] = part
            if waits:
                waiting.append(i)
        for i in range(k, len(messages)):
            part, waits = self._part(messages, i, call_of, meter)
            parts.append(part)
            self._add(part, 1)
            if waits:
                waiting.append(i)
        self.waiting = waiting
        self.messages = messages
        return self.sums

    def _part(
        self, messages: Sequence[Message], i: int, call_of: Mapping[Loc, Loc], meter: TokenMeter
    ) -> tuple[Part, bool]:
        """What message ``i`` adds, and whether the tool of a result it holds may change
        with later messages: one without a call yet, or paired with a call after it (a
        result standing before its call pairs forward only while no result after the call
        answers it)."""
        out = []
        waits = False
        for bi, block in enumerate(messages[i].blocks):
            if isinstance(block, ToolCall):
                if self.calls:
                    out.append((block.name, 1, 0))
            elif isinstance(block, ToolResult):
                loc = call_of.get((i, bi))
                if loc is None:
                    name = block.name or "?"  # as ResultRef.tool names it
                    waits = True
                else:
                    name = call_at(messages, loc).name
                    waits = waits or loc[0] > i
                out.append((name, 0, meter.block(block)))
        return tuple(out), waits

    def _add(self, part: Part, sign: int) -> None:
        sums = self.sums
        for tool, calls, tokens in part:
            s = sums.get(tool)
            if s is None:
                s = sums[tool] = [0, 0, 0]
            s[0] += sign
            s[1] += sign * calls
            s[2] += sign * tokens
            if not s[0]:
                del sums[tool]


class ToolTally:
    """The per-tool figures of the requests of one history, sent one after another (a
    replay's): each request counts what it does not share with the one before it."""

    def __init__(self) -> None:
        self._before = _Side(calls=True)
        self._after = _Side(calls=False)

    def tools(
        self,
        before: Conversation,
        fixed: Conversation,
        after: Conversation,
        fixes: Sequence[Fix],
        meter: TokenMeter,
        tokens_after: int,
    ) -> tuple[ToolStats, ...]:
        """:func:`~ctxwin._report.build.tool_stats` of the request (``after`` paired)."""
        if fixed is not before:  # repaired: results counted for the tool their fix names
            return tool_stats(before, fixed, after, fixes, meter, tokens_after)
        was = self._before.count(before, meter)
        now = self._after.count(after, meter)
        out = []
        for tool in was.keys() | now.keys():
            calls, tokens_before = was[tool][1:] if tool in was else (0, 0)
            tokens = now[tool][2] if tool in now else 0
            share = tokens / tokens_after if tokens_after else 0.0
            out.append(ToolStats(tool, calls, tokens_before, tokens, share))
        return tuple(sorted(out, key=lambda t: (-t.tokens_before, t.tool)))
