"""Prompt-cache breakpoints, placed where the next request's prefix ends.

Under ``cache_breakpoints: auto`` the request gets, within what the provider allows (its
limit less the breakpoints the system prompt and the tools carry):

- one at the end of the prefix the window keeps until its next jump — the last message
  before the first result it would clear next — so a jump re-writes only what follows it;
- one on the last message the next request sends as it is, so that request reads
  everything before its new messages: the last message, unless the latest round holds a
  result of a tool with ``edit_latest: false`` (sent whole while its round is the latest,
  edited from the next round on, :class:`~ctxwin.EditResults`: an entry written at it or
  after it is never read). Then it goes on the last message that takes one before the
  first message holding such a result (the round's calls; earlier when they take none or
  the result shares their message; none when nothing before does), and the frontier's
  does not go past it either. When an answer or a message of the user's own follows those
  results (a chat after the round), the last message gets one too, where the limit leaves
  room: a next request that starts no round reads all of it. Whether the edit changes the
  result is not known here (the result steps are the chain's): one it leaves as it is
  costs the next request the write of that result, where a marker on one it cuts cost the
  write of all after the frontier.

The request's own message-level breakpoints go (system and tools keep theirs, a system
prompt sent as a message too: they count against the limit), but those on a
message ctxwin marks stay as they are: they count against the limit block by block, and a
breakpoint of ctxwin's (default TTL, 5 minutes) is not placed before one of theirs with
``ttl: "1h"`` (Anthropic refuses a 1-hour breakpoint after a 5-minute one). Under
automatic caching for an hour (a top-level ``cache_control`` with ``ttl: "1h"``, a 1-hour
breakpoint on the request's last block) ctxwin's take ``ttl: "1h"`` (the adapter's
``default_marker``), which costs nothing more: every token up to the last 1-hour
breakpoint is written at the hour's price. A breakpoint
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

What the step reads of the messages (their markers, the results the frontier may stand at)
is memoized by their identity, as the window's fold is: a request that grew by a round is
read for that round only, and the results the window cleared are known from what it tells
(``Context.window_cleared``), not looked for among every edit. A result that reads as the
policy's placeholder already (its own output sent back: the window clears it no more, and
tells no edit of it) is no frontier either, so the output keeps its breakpoints.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import PrefixCache
from ctxwin._core.model import (
    Loc,
    Message,
    Text,
    ToolResult,
    call_at,
    is_reasoning_item,
    is_user_text,
    result_at,
)
from ctxwin.formats import adapter_of
from ctxwin.formats._markers import MARKERS, Marker
from ctxwin.steps._base import Context, Limits
from ctxwin.steps._clearing import reads_cleared

__all__ = ["CacheBreakpoints"]

_PROBE = Message("user", (Text("."),))
"""A plain user text: every format with breakpoints puts one on it, of the kind it writes."""

_Key = tuple[int | None, str | None]
"""A result as the window's edits name it: (message index, call id)."""

_NONE: frozenset[_Key] = frozenset()


class CacheBreakpoints:
    """Place the request's cache breakpoints (see the module docstring)."""

    def __init__(self) -> None:
        self.clear_memo()

    def clear_memo(self) -> None:
        """Forget what was read of earlier requests (what the step returns does not change)."""
        self._scans: PrefixCache[_Scan] = PrefixCache()

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        limits = context.limits()
        marker = MARKERS.get(limits.breakpoint)
        if context.config.cache_breakpoints != "auto" or marker is None:
            return conversation
        if not _Takes(conversation, marker).writes(_PROBE):
            return conversation  # the adapter writes another kind of breakpoint here
        cleared = _Cleared.of(context)
        scan = self._read(conversation, context, cleared)
        wanted = self._targets(conversation, context, limits, scan, cleared)
        messages = conversation.messages
        cached = set(scan.marked)
        if cached == wanted:
            return conversation
        out = list(messages)
        for i in cached | wanted:
            out[i] = messages[i].with_cache(i in wanted)
        return conversation.with_messages(tuple(out), same_structure=True)

    def targets(self, conv: Conversation, ctx: Context, limits: Limits) -> set[int]:
        """The positions of the messages to mark."""
        cleared = _Cleared.of(ctx)
        return self._targets(conv, ctx, limits, self._read(conv, ctx, cleared), cleared)

    def _targets(
        self, conv: Conversation, ctx: Context, limits: Limits, scan: _Scan, cleared: _Cleared
    ) -> set[int]:
        messages = conv.messages
        marker = MARKERS.get(limits.breakpoint)
        if marker is None:
            return set()
        marks = _Marks(messages, marker, adapter_of(conv).default_marker(conv))
        # a system prompt sent as a message (OpenAI) keeps its markers, as an envelope's do
        system = set(scan.system)
        budget = limits.breakpoints - conv.envelope_marks  # what the messages may carry
        if budget <= sum(map(marks.count, system)):
            return system
        takes = _Takes(conv, marker)
        # what the next request sends as it is ends before a result it will edit late
        end = _sent_whole(conv, ctx, cleared) if scan.late else len(messages)
        last = takes.last(end)
        if last is None:
            return system
        first = _first_cacheable(conv, ctx, limits.min_prefix, scan.latest_user())
        if first is None or last < first:
            return system
        out: set[int] = {*system, last}
        if sum(map(marks.count, out)) > budget:
            out.discard(last)  # the user's own markers there are more than the provider takes
        frontier = scan.frontier(conv, ctx, cleared)
        if frontier is not None:
            i = takes.last(min(frontier, end))
            if i is not None and i >= first:
                fits = marks.count(i) + sum(marks.count(j) for j in out) <= budget
                if fits and (messages[i].cache or not marks.long_after(i, out)):
                    out.add(i)
        if end < len(messages) and _chat_after(conv, end):
            tail = takes.last(len(messages))  # read by a next request that starts no round
            if (
                tail is not None
                and tail > last
                and marks.count(tail) + sum(marks.count(j) for j in out) <= budget
                # not a 1-hour one of the user's after ctxwin's 5-minute ones (refused)
                and all(messages[j].cache or not marks.long_after(j, {tail}) for j in out)
            ):
                out.add(tail)
        return out

    def _read(self, conv: Conversation, ctx: Context, cleared: _Cleared) -> _Scan:
        """What is read of ``conv``'s messages: resumed from the memoized read of the longest
        prefix they share with an earlier request, when it still holds for this one."""
        messages = conv.messages
        key = (ctx.policy.serial, conv.format, conv.rules, conv.server_state)
        found = self._scans.common(messages)
        scan = None
        if found is not None:
            n, old = found
            if old.cache_key == key and old.policy is ctx.policy and old.holds(cleared):
                scan = old.cut(n)
        if scan is None:
            scan = _Scan(key, ctx.policy, ctx.policy.holds_latest)
        scan.read(conv, ctx, cleared)
        self._scans.put(messages, scan)
        return scan


@dataclass(frozen=True, slots=True)
class _Cleared:
    """The results the window cleared, by :data:`_Key`: as the window step tells them
    (``line``: a set that only grows along a history), else from the edits of step
    ``window`` (a chain without the window step)."""

    keys: Set[_Key]
    line: bool

    @staticmethod
    def of(ctx: Context) -> _Cleared:
        told = ctx.window_cleared
        if told is not None:
            return _Cleared(told, True)
        keys = {(e.message_index, e.call_id) for e in ctx.edits if e.step == "window"}
        return _Cleared(keys or _NONE, False)


@dataclass(eq=False)
class _Scan:
    """What the step read of the first ``n`` messages of a request (resumable, and valid
    for any request whose messages begin with the same objects, cut to a shorter prefix):

    - the positions of the messages with markers (``marked``; ``system``, those of system
      messages) and of the user's own messages (``users``: which reasoning items the
      provider drops, :meth:`~ctxwin.tokens._meter.TokenMeter.unread`);
    - ``results``: the results the frontier may stand at, as ``(round, position, block,
      key)`` in order (a result's round, call and tool do not change as the request grows);
      those the window cleared are left out (``pruned``: by its set of cleared results,
      which only grows; None: none left out). ``loose``: results with no call before them
      (a call that comes later may pair with them), looked at again in every request.
    """

    cache_key: object
    policy: object
    late: bool = False
    """Whether a tool of the policy has ``edit_latest: false`` (:func:`_sent_whole`)."""
    n: int = 0
    marked: list[int] = field(default_factory=list)
    system: list[int] = field(default_factory=list)
    users: list[int] = field(default_factory=list)
    results: list[tuple[int, int, int, _Key]] = field(default_factory=list)
    loose: list[Loc] = field(default_factory=list)
    pruned: Set[_Key] | None = None

    def holds(self, cleared: _Cleared) -> bool:
        """Whether the results left out as cleared are cleared still."""
        return self.pruned is None or self.pruned is cleared.keys

    def cut(self, n: int) -> _Scan:
        """The read of the first ``n`` messages only."""
        if n < self.n:
            for positions in (self.marked, self.system, self.users):
                del positions[bisect.bisect_left(positions, n) :]
            self.loose = [loc for loc in self.loose if loc[0] < n]
            self.results = [r for r in self.results if r[1] < n]
            self.n = n
        return self

    def read(self, conv: Conversation, ctx: Context, cleared: _Cleared) -> None:
        """Read the messages after the first ``n``."""
        messages, pairing = conv.messages, conv.pairing
        keys = cleared.keys if cleared.line else _NONE
        for mi in range(self.n, len(messages)):
            msg = messages[mi]
            if msg.cache:
                self.marked.append(mi)
                if msg.role == "system":
                    self.system.append(mi)
            if is_user_text(msg):
                self.users.append(mi)
            for bi, block in enumerate(msg.blocks):
                if not isinstance(block, ToolResult):
                    continue
                call_loc = pairing.call_of.get((mi, bi))
                if call_loc is None or call_loc[0] > mi:
                    self.loose.append((mi, bi))
                    continue
                key = (msg.index, block.call_id)
                if key in keys:
                    self.pruned = keys
                    continue
                rnd = _candidate(conv, ctx, call_loc, (mi, bi))
                if rnd is not None:
                    bisect.insort(self.results, (rnd, mi, bi, key))
        self.n = len(messages)

    def latest_user(self) -> int:
        """The position of the latest message of the user's own (-1: none)."""
        return self.users[-1] if self.users else -1

    def frontier(self, conv: Conversation, ctx: Context, cleared: _Cleared) -> int | None:
        """Where the first result the window would clear next stands (its message), if any:
        the oldest result of a round that is not cleared and whose tool the window clears."""
        keys, results = cleared.keys, self.results
        best: tuple[int, int, int] | None = None
        skip = 0
        for rnd, mi, bi, key in results:
            if key not in keys:
                best = (rnd, mi, bi)
                break
            skip += 1
        if skip and cleared.line:  # cleared for good along this history
            del results[:skip]
            self.pruned = cleared.keys
        messages, pairing = conv.messages, conv.pairing
        for mi, bi in self.loose:
            call_loc = pairing.call_of.get((mi, bi))
            block = messages[mi].blocks[bi]
            assert isinstance(block, ToolResult)
            if call_loc is None or (messages[mi].index, block.call_id) in keys:
                continue
            loose = _candidate(conv, ctx, call_loc, (mi, bi))
            if loose is not None and (best is None or (loose, mi, bi) < best):
                best = (loose, mi, bi)
        return None if best is None else best[1]


def _sent_whole(conv: Conversation, ctx: Context, cleared: _Cleared) -> int:
    """The first message holding a result of the latest round that goes whole now, to be
    edited from the next round on (its tool's ``edit_latest: false``,
    :class:`~ctxwin.EditResults`), or the number of messages when none does. A result the
    window cleared keeps its placeholder."""
    messages, rounds = conv.messages, conv.pairing.rounds
    end = len(messages)
    for mi, bi in rounds[-1].outputs if rounds else ():
        rules = ctx.rules_for(conv.tool_of((mi, bi)))
        if mi >= end or rules is None or rules.rules.edit_latest:
            continue
        block = messages[mi].blocks[bi]
        if not (
            isinstance(block, ToolResult) and (messages[mi].index, block.call_id) in cleared.keys
        ):
            end = mi
    return end


def _chat_after(conv: Conversation, end: int) -> bool:
    """Whether the request goes on after the latest round's results (from ``end``): an
    answer, a message of the user's own. The next request may then start no round (a
    chat), and sends all of it as it is: worth a breakpoint of its own at the end."""
    outputs = conv.pairing.rounds[-1].outputs
    return max((mi for mi, _ in outputs), default=end) < len(conv.messages) - 1


def _candidate(conv: Conversation, ctx: Context, call_loc: Loc, loc: Loc) -> int | None:
    """The round of the result at ``loc``, answering the call at ``call_loc``, when the
    window would clear it (None: its call is in no round, its tool keeps its results, or
    it reads as the policy's placeholder already: the policy's own output sent back, where
    the window, which clears it no more, tells no edit of it)."""
    rnd = conv.pairing.round_of_message.get(call_loc[0])
    if rnd is None:
        return None
    tool = call_at(conv.messages, call_loc).name
    rules = ctx.rules_for(tool)
    if rules is not None and rules.rules.window == "keep":
        return None
    return None if reads_cleared(result_at(conv.messages, loc), tool, ctx) else rnd


class _Marks:
    """The breakpoints a marked message carries: the request's own where it has them (one
    per block that carries one), else ctxwin's one (``default``: the one the adapter
    writes, None: the marker's own; an hour's under automatic caching for an hour)."""

    def __init__(
        self, messages: tuple[Message, ...], marker: Marker, default: Mapping[str, Any] | None
    ) -> None:
        self.messages = messages
        self.marker = marker
        self.default = marker.value if default is None else default

    def values(self, i: int) -> list[object]:
        msg = self.messages[i]
        if not msg.cache:
            return [self.default]
        return list(self.marker.values(msg.raw)) or [self.default]

    def count(self, i: int) -> int:
        return len(self.values(i))

    def long_after(self, i: int, marked: set[int]) -> bool:
        """Whether a marked message after ``i`` keeps a 1-hour breakpoint of the user's,
        which one of ctxwin's may not come before (never where ctxwin's last an hour)."""
        if self.default.get("ttl") == "1h":
            return False
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

    def __init__(self, conv: Conversation, marker: Marker) -> None:
        self.conv = conv
        self.adapter = adapter_of(conv)  # a variant's own (LiteLLM's cache_control chat)
        self.marker = marker

    def __call__(self, i: int) -> bool:
        msg = self.conv.messages[i]
        return _markable(msg) and self.writes(msg)

    def writes(self, msg: Message) -> bool:
        """Whether the message, marked, goes out with a breakpoint of the marker's kind."""
        adapter = self.adapter
        if not msg.cache:  # msg.with_cache(True), built directly: replace() is slow
            msg = Message(
                *(msg.role, msg.blocks, msg.raw, False, msg.index, True, msg.tied_reasoning),
                msg.item_id,
            )
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


def _first_cacheable(conv: Conversation, ctx: Context, min_prefix: int, latest: int) -> int | None:
    """The first message at which the request, as the provider reads it, reaches its minimum
    cacheable prefix (None: it never does). A breakpoint there or later is worth placing;
    summed from the start, so only up to that message. The provider drops the reasoning
    items before the user's latest message (``latest``) when the meter says so
    (:meth:`~ctxwin.tokens._meter.TokenMeter.unread`)."""
    total = ctx.envelope_tokens(conv)
    drops = ctx.meter.overheads.drops_earlier_reasoning
    for k, msg in enumerate(conv.messages):
        if not (drops and k < latest and is_reasoning_item(msg)):
            total += ctx.meter.message(msg)
        if total >= min_prefix:
            return k
    return None
