"""The window's fold: which results are cleared and which old rounds dropped, message by
message, resumable.

The history is replayed message by message, and each time the running total goes over
``window.trigger`` the oldest clearable results (outside the newest ``keep_rounds`` rounds,
not ``window: keep``) are replaced by their placeholder until the total is under
``window.target`` — in one jump, so the boundary moves rarely. If the total is still over
``context_window``, whole units (a round with its results, or a plain message) are dropped
from the oldest, down to ``target`` again (``overflow: drop_oldest_rounds``).

Each edit is made once, as an :class:`~ctxwin._core.records.Edit` kept in the state: the
window logs it when it is new and lists it in every request's report.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field

from ctxwin._core.conversation import Conversation
from ctxwin._core.jsontext import compact_json
from ctxwin._core.memo import Memo
from ctxwin._core.model import (
    Block,
    Loc,
    Message,
    ToolCall,
    ToolResult,
    result_at,
)
from ctxwin._core.records import Edit
from ctxwin.steps._base import Context

__all__ = ["SHORT_ARGUMENT", "FoldState", "advance", "shorten_arguments"]

SHORT_ARGUMENT = 48
"""With ``clear_tool_inputs``, argument values longer than this (characters of JSON) are
replaced by ``"[cleared]"``; short ones (ids, paths, flags) are kept so the call still says
what it did."""


def shorten_arguments(arguments: str) -> str:
    """Arguments with long values replaced by a marker."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments if len(arguments) <= SHORT_ARGUMENT else "[cleared]"
    if not isinstance(value, dict):
        return arguments if len(arguments) <= SHORT_ARGUMENT else '"[cleared]"'
    long = {k for k, v in value.items() if len(compact_json(v)) > SHORT_ARGUMENT}
    if not long:
        return arguments  # nothing worth shortening: leave the call exactly as it was
    return compact_json({k: ("[cleared]" if k in long else v) for k, v in value.items()})


@dataclass(slots=True)
class _Cleared:
    """A result the window cleared (and the call whose arguments it shortened)."""

    loc: Loc
    placeholder: str
    call_loc: Loc | None
    call_saved: int
    edits: tuple[Edit, ...]


@dataclass
class FoldState:
    """Where the fold stands after ``len(messages)`` messages (resumable)."""

    cache_key: object = None
    messages: tuple[Message, ...] = ()
    out: list[Message | None] = field(default_factory=list)
    """The output message at each position (``None``: dropped)."""
    total: int = 0
    cur: list[int] = field(default_factory=list)
    round_start: list[int] = field(default_factory=list)
    pending: list[tuple[int, int, int]] = field(default_factory=list)  # (round, mi, bi)
    eligible: list[tuple[int, int, int]] = field(default_factory=list)
    cleared: dict[Loc, _Cleared] = field(default_factory=dict)
    edits_at: dict[int, list[_Cleared]] = field(default_factory=dict)
    dropped: list[Edit] = field(default_factory=list)
    dropped_set: set[int] = field(default_factory=set)
    reasoning: list[Edit] = field(default_factory=list)
    """Reasoning items dropped by the window."""
    head_end: int = -1
    drop_ptr: int = 0
    last_user_text: int = -1
    events: int = 0
    next_trigger: int = -1
    """Where the next clearing starts: the trigger, or higher after a jump that could not
    reach the target (see :func:`advance`)."""
    fresh: list[Edit] = field(default_factory=list)
    """Edits made by the latest :func:`advance` (the window logs them, then empties this)."""
    listed: list[Edit] | None = None
    """Every edit, in report order (rebuilt when something new was done)."""

    def edits(self) -> list[Edit]:
        """Every edit of the fold in report order: clearings by place, reasoning, drops."""
        if self.listed is None:
            cleared = sorted(self.cleared.values(), key=lambda c: c.loc)
            self.listed = [e for c in cleared for e in c.edits] + self.reasoning + self.dropped
        return self.listed


def _is_reasoning_item(msg: Message) -> bool:
    """A message that is nothing but a reasoning item (OpenAI Responses)."""
    blocks = msg.blocks
    return len(blocks) == 1 and getattr(blocks[0], "category", None) == "reasoning"


def advance(st: FoldState, conv: Conversation, ctx: Context, rebuilt: Memo) -> None:
    """Fold ``conv.messages[len(st.messages):]`` into ``st``."""
    cfg = ctx.config
    w = cfg.window
    trigger = w.tokens(w.trigger, cfg.context_window)
    target = w.tokens(w.target, cfg.context_window)
    drop = cfg.overflow == "drop_oldest_rounds"
    messages = conv.messages
    for k in range(len(st.messages), len(messages)):
        _enter(st, conv, k, ctx)
        boundary = len(st.round_start) - w.keep_rounds
        while st.pending and st.pending[0][0] < boundary:
            heapq.heappush(st.eligible, heapq.heappop(st.pending))
        if st.next_trigger < 0:
            st.next_trigger = trigger
        if st.total > st.next_trigger and st.eligible:
            _jump(st, conv, target, ctx, rebuilt)
            # When what cannot be cleared (texts, calls, the newest rounds) is itself over
            # the target, clearing again at the trigger would clear one result per request:
            # masking, which breaks the cache every turn. Keep the same hysteresis band
            # above where this jump ended instead, so the next jump is as big.
            band = trigger - target
            st.next_trigger = (
                trigger
                if st.total <= target
                else min(max(trigger, st.total + band), cfg.context_window)
            )
        if drop and st.total > cfg.context_window:
            _drop(st, conv, k, target, ctx)
            if st.total <= target:
                st.next_trigger = trigger
    st.messages = messages


def _enter(st: FoldState, conv: Conversation, k: int, ctx: Context) -> None:
    """Message ``k`` joins the fold: counted, and its results queued by round."""
    msg = conv.messages[k]
    pairing = conv.pairing
    t = ctx.message_tokens(msg)
    st.out.append(msg)
    st.cur.append(t)
    st.total += t
    r = pairing.round_of_message.get(k)
    if r is not None and r == len(st.round_start):
        st.round_start.append(k)
    if msg.role == "user" and not any(isinstance(b, ToolResult) for b in msg.blocks):
        if st.head_end < 0:
            st.head_end = k
            st.drop_ptr = k + 1
        st.last_user_text = k
    elif msg.role == "system" and st.head_end < 0:
        st.drop_ptr = k + 1
    for bi, block in enumerate(msg.blocks):
        if isinstance(block, ToolResult):
            call = pairing.call_of.get((k, bi))
            rr = pairing.round_of_message.get(call[0]) if call is not None else None
            if rr is not None:
                heapq.heappush(st.pending, (rr, k, bi))
    if ctx.config.window.clear_reasoning and r is not None and _is_reasoning_item(msg):
        heapq.heappush(st.pending, (r, k, -1))  # -1: the whole item


def _jump(st: FoldState, conv: Conversation, target: int, ctx: Context, rebuilt: Memo) -> None:
    """Clear the oldest eligible results until the total is under ``target``: one jump."""
    before = st.total
    jump = st.events
    while st.total > target and st.eligible:
        rr, mi, bi = heapq.heappop(st.eligible)
        if mi in st.dropped_set:
            continue
        if bi < 0:
            _clear_reasoning(st, conv, rr, mi, ctx, jump)
        else:
            _clear(st, conv, mi, bi, ctx, rebuilt, jump)
    if st.total < before:
        st.events += 1


def _clear(
    st: FoldState, conv: Conversation, mi: int, bi: int, ctx: Context, rebuilt: Memo, jump: int
) -> None:
    messages = conv.messages
    result = result_at(messages, (mi, bi))
    call_loc = conv.pairing.call_of.get((mi, bi))
    call = conv.call_of((mi, bi))
    tool = conv.tool_of((mi, bi))
    rules = ctx.rules_for(tool)
    if rules is not None and rules.rules.window == "keep":
        return
    template = (rules.rules.placeholder if rules is not None else None) or (
        ctx.config.window.placeholder
    )
    before = ctx.block_tokens(result)
    text = template.format(tool=tool, call_id=result.call_id or "", tokens=before)
    after = ctx.count(text)
    if after >= before:
        return
    call_saved = 0
    if ctx.config.window.clear_tool_inputs and call is not None and call_loc is not None:
        short = shorten_arguments(call.arguments)
        if short != call.arguments:
            call_saved = max(ctx.count(call.arguments) - ctx.count(short), 0)
        st.cur[call_loc[0]] -= call_saved
    index = messages[mi].index
    edits = [
        Edit(
            "window",
            tool,
            result.call_id,
            before,
            after,
            message_index=index,
            chars_before=len(result.text),
            chars_after=len(text),
            jump=jump,
        )
    ]
    if call_saved:
        edits.append(
            Edit("clear_input", tool, result.call_id, call_saved, 0, message_index=index, jump=jump)
        )
    cleared = _Cleared((mi, bi), text, call_loc, call_saved, tuple(edits))
    st.cleared[(mi, bi)] = cleared
    st.fresh.extend(edits)
    st.listed = None
    st.edits_at.setdefault(mi, []).append(cleared)
    _rebuild(st, conv, mi, rebuilt)
    if call_saved and call_loc is not None:
        if call_loc[0] != mi:
            st.edits_at.setdefault(call_loc[0], []).append(cleared)
        _rebuild(st, conv, call_loc[0], rebuilt)
    st.cur[mi] -= before - after
    st.total -= before - after + call_saved


def _clear_reasoning(
    st: FoldState, conv: Conversation, r: int, mi: int, ctx: Context, jump: int
) -> None:
    """Drop a reasoning item of an old round (unless its calls carry item ids, which tie
    them to their reasoning item on the provider's side)."""
    rnd = conv.pairing.rounds[r]
    for c in rnd.calls:
        call = conv.messages[c[0]].blocks[c[1]]
        if isinstance(call, ToolCall) and call.tied_reasoning:
            return
    tokens = st.cur[mi]
    st.cur[mi] = 0
    st.out[mi] = None
    st.dropped_set.add(mi)
    st.total -= tokens
    edit = Edit(
        "window",
        "(reasoning)",
        None,
        tokens,
        0,
        message_index=conv.messages[mi].index,
        note="reasoning item of an old round dropped",
        jump=jump,
    )
    st.reasoning.append(edit)
    st.fresh.append(edit)
    st.listed = None


def _rebuild(st: FoldState, conv: Conversation, mi: int, rebuilt: Memo) -> None:
    """The output message at ``mi`` with every clearing made there so far."""
    if mi in st.dropped_set:
        return
    msg = conv.messages[mi]
    edits = st.edits_at[mi]
    salt = hash(
        tuple(
            (c.loc, bool(c.call_saved) and c.call_loc is not None and c.call_loc[0] == mi)
            for c in edits
        )
    )
    hit = rebuilt.get(msg, salt)
    if isinstance(hit, Message):
        st.out[mi] = hit
        return
    blocks: list[Block] = list(msg.blocks)
    for c in edits:
        if c.loc[0] == mi:
            res = blocks[c.loc[1]]
            assert isinstance(res, ToolResult)
            blocks[c.loc[1]] = res.with_text(c.placeholder, keep_opaque=False)
        if c.call_saved and c.call_loc is not None and c.call_loc[0] == mi:
            call = blocks[c.call_loc[1]]
            assert isinstance(call, ToolCall)
            blocks[c.call_loc[1]] = call.with_arguments(shorten_arguments(call.arguments))
    new = msg.with_blocks(tuple(blocks))
    rebuilt.put(msg, new, salt)
    st.out[mi] = new


def _drop(st: FoldState, conv: Conversation, k: int, target: int, ctx: Context) -> None:
    """Drop whole units from the oldest until the total is under ``target``."""
    pairing = conv.pairing
    keep = ctx.config.window.keep_rounds
    protected = k + 1
    if st.round_start:
        oldest_kept = st.round_start[max(len(st.round_start) - keep, 0)]
        protected = min(protected, oldest_kept)
    messages = conv.messages
    i = st.drop_ptr
    while st.total > target and i < protected:
        if i in st.dropped_set or i == st.last_user_text:  # the latest instruction stays
            i += 1
            continue
        start = end = i
        r = pairing.round_of_message.get(start)
        if r is not None:
            rnd = pairing.rounds[r]
            end = max([rnd.end, *(loc[0] for loc in rnd.results.values())])
        if end >= protected:
            break
        tokens = sum(st.cur[j] for j in range(start, end + 1))
        tools = tuple(
            c.name
            for j in range(start, end + 1)
            for c in messages[j].blocks
            if isinstance(c, ToolCall)
        )
        for j in range(start, end + 1):
            st.cur[j] = 0
            st.out[j] = None
            st.dropped_set.add(j)
        st.total -= tokens
        edit = Edit(
            "drop",
            ",".join(sorted(set(tools))) or "(no tool)",
            None,
            tokens,
            0,
            message_index=messages[start].index,
            note=f"dropped messages {start}..{end}",
        )
        st.dropped.append(edit)
        st.fresh.append(edit)
        st.listed = None
        i = end + 1
    while st.drop_ptr in st.dropped_set:
        st.drop_ptr += 1
