"""The sliding window and the overflow budget, as one fold over the history.

Which results are cleared (and which old rounds are dropped) is a pure function of the
history and the policy: the history is replayed message by message, and each time the
running total goes over ``window.trigger`` the oldest clearable results (outside the newest
``keep_rounds`` rounds, not ``window: keep``) are replaced by their placeholder until the
total is under ``window.target`` — in one jump, so the boundary moves rarely. If the total
is still over ``context_window``, whole units (a round with its results, or a plain message)
are dropped from the oldest, down to ``target`` again (``overflow: drop_oldest_rounds``).

Because the decision at each point depends only on the history up to it, a cleared result
stays cleared in every later request, and two consecutive requests share their whole prefix
up to the first newly cleared result: what a provider's prompt cache needs. The fold's state
is memoized and resumed when the next request extends the same history, so a steady-state
request only processes its new messages.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field

from ctxwin._model import Block, Conversation, Message, Opaque, ToolCall, ToolResult
from ctxwin.formats import compact_json
from ctxwin.steps._base import Context, Edit

SHORT_ARGUMENT = 48
"""With ``clear_tool_inputs``, argument values longer than this (characters of JSON) are
replaced by ``"[cleared]"``; short ones (ids, paths, flags) are kept so the call still says
what it did."""


def _is_reasoning_item(msg: Message) -> bool:
    """A message that is nothing but a reasoning item (OpenAI Responses)."""
    blocks = msg.blocks
    return len(blocks) == 1 and isinstance(blocks[0], Opaque) and blocks[0].kind == "reasoning"


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
class Cleared:
    loc: tuple[int, int]
    tool: str
    call_id: str | None
    tokens_before: int
    tokens_after: int
    placeholder: str
    call_loc: tuple[int, int] | None
    call_saved: int
    chars_before: int = 0


@dataclass(slots=True)
class Dropped:
    start: int
    end: int
    tokens: int
    tools: tuple[str, ...]


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
    cleared: dict[tuple[int, int], Cleared] = field(default_factory=dict)
    edits_at: dict[int, list[Cleared]] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)
    dropped_set: set[int] = field(default_factory=set)
    head_end: int = -1
    drop_ptr: int = 0
    last_user_text: int = -1
    events: int = 0
    reasoning: list[tuple[int, int]] = field(default_factory=list)
    """Reasoning items dropped by the window: (position, tokens)."""
    next_trigger: int = -1
    """Where the next clearing starts: the trigger, or higher after a jump that could not
    reach the target (see ``_advance``)."""


class Window:
    """Clear old tool results past the trigger, and drop old rounds past the window.

    See the module docstring. Never touches the newest ``keep_rounds`` rounds, never splits
    a call from its result, keeps the leading system messages and the first user message.
    """

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        state = self.fold(conversation, context)
        # The state only ever grows (dicts keep insertion order), so these counts pin what
        # this request saw even after later requests resume the same state.
        context.fold = (
            conversation,
            state,
            len(state.cleared),
            len(state.dropped),
            state.events,
            len(state.reasoning),
        )
        out = self.apply_state(conversation, state, context)
        context.window_output = (out, state.total)
        return out

    # --------------------------------------------------------------------- fold

    def fold(self, conv: Conversation, ctx: Context) -> FoldState:
        messages = conv.messages
        envelope = ctx.envelope_tokens(conv.source)
        key = (envelope, conv.format)
        found = ctx.memo.folds.take(messages, key)
        state = found[1] if found is not None else FoldState(cache_key=key, total=envelope)
        self._advance(state, conv, ctx)
        ctx.memo.folds.put(messages, state)
        return state

    def _advance(self, st: FoldState, conv: Conversation, ctx: Context) -> None:
        cfg = ctx.config
        w = cfg.window
        trigger = w.tokens(w.trigger, cfg.context_window)
        target = w.tokens(w.target, cfg.context_window)
        drop = cfg.overflow == "drop_oldest_rounds"
        messages = conv.messages
        pairing = conv.pairing
        round_of = pairing.round_of_message
        call_of = pairing.call_of
        for k in range(len(st.messages), len(messages)):
            msg = messages[k]
            t = ctx.message_tokens(msg)
            st.out.append(msg)
            st.cur.append(t)
            st.total += t
            r = round_of.get(k)
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
                    call = call_of.get((k, bi))
                    rr = round_of.get(call[0]) if call is not None else None
                    if rr is not None:
                        heapq.heappush(st.pending, (rr, k, bi))
            if w.clear_reasoning and r is not None and _is_reasoning_item(msg):
                heapq.heappush(st.pending, (r, k, -1))  # -1: the whole item
            boundary = len(st.round_start) - w.keep_rounds
            while st.pending and st.pending[0][0] < boundary:
                heapq.heappush(st.eligible, heapq.heappop(st.pending))
            if st.next_trigger < 0:
                st.next_trigger = trigger
            if st.total > st.next_trigger and st.eligible:
                before = st.total
                while st.total > target and st.eligible:
                    rr, mi, bi = heapq.heappop(st.eligible)
                    if mi in st.dropped_set:
                        continue
                    if bi < 0:
                        self._clear_reasoning(st, conv, rr, mi, ctx)
                    else:
                        self._clear(st, conv, mi, bi, ctx)
                if st.total < before:
                    st.events += 1
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
                self._drop(st, conv, k, target, ctx)
                if st.total <= target:
                    st.next_trigger = trigger
        st.messages = messages

    def _clear(self, st: FoldState, conv: Conversation, mi: int, bi: int, ctx: Context) -> None:
        messages = conv.messages
        result = messages[mi].blocks[bi]
        assert isinstance(result, ToolResult)
        call_loc = conv.pairing.call_of.get((mi, bi))
        call = messages[call_loc[0]].blocks[call_loc[1]] if call_loc else None
        tool = call.name if isinstance(call, ToolCall) else (result.name or "?")
        rules = ctx.policy.rules_for(tool)
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
        if ctx.config.window.clear_tool_inputs and isinstance(call, ToolCall) and call_loc:
            short = shorten_arguments(call.arguments)
            if short != call.arguments:
                call_saved = max(ctx.count(call.arguments) - ctx.count(short), 0)
            st.cur[call_loc[0]] -= call_saved
        chars = len(result.text)
        cleared = Cleared(
            (mi, bi), tool, result.call_id, before, after, text, call_loc, call_saved, chars
        )
        st.cleared[(mi, bi)] = cleared
        index = messages[mi].index
        ctx.record(self._window_edit(cleared, index))
        if call_saved:
            ctx.record(
                Edit("clear_input", tool, result.call_id, call_saved, 0, message_index=index)
            )
        st.edits_at.setdefault(mi, []).append(cleared)
        self._rebuild(st, conv, mi, ctx)
        if call_saved and call_loc is not None:
            if call_loc[0] != mi:
                st.edits_at.setdefault(call_loc[0], []).append(cleared)
            self._rebuild(st, conv, call_loc[0], ctx)
        st.cur[mi] -= before - after
        st.total -= before - after + call_saved

    def _clear_reasoning(
        self, st: FoldState, conv: Conversation, r: int, mi: int, ctx: Context
    ) -> None:
        """Drop a reasoning item of an old round (unless its calls carry item ids, which tie
        them to their reasoning item on the provider's side)."""
        rnd = conv.pairing.rounds[r]
        for c in rnd.calls:
            call = conv.messages[c[0]].blocks[c[1]]
            if isinstance(call, ToolCall) and ctx.adapter.ties_reasoning(call):
                return
        tokens = st.cur[mi]
        st.cur[mi] = 0
        st.out[mi] = None
        st.dropped_set.add(mi)
        st.total -= tokens
        st.reasoning.append((mi, tokens))
        ctx.record(
            Edit("window", "(reasoning)", None, tokens, 0, message_index=conv.messages[mi].index)
        )

    def _rebuild(self, st: FoldState, conv: Conversation, mi: int, ctx: Context) -> None:
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
        hit = ctx.memo.rebuilt.get(msg, salt)
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
        ctx.memo.rebuilt.put(msg, new, salt)
        st.out[mi] = new

    def _drop(self, st: FoldState, conv: Conversation, k: int, target: int, ctx: Context) -> None:
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
            st.dropped.append(Dropped(start, end, tokens, tools))
            ctx.record(
                Edit(
                    "drop",
                    ",".join(sorted(set(tools))) or "(no tool)",
                    None,
                    tokens,
                    0,
                    message_index=messages[start].index,
                )
            )
            i = end + 1
        while st.drop_ptr in st.dropped_set:
            st.drop_ptr += 1

    # --------------------------------------------------------------------- output

    def apply_state(self, conv: Conversation, st: FoldState, ctx: Context) -> Conversation:
        if not st.cleared and not st.dropped_set:
            return conv
        if st.dropped_set:
            return conv.with_messages(tuple(m for m in st.out if m is not None))
        return conv.with_messages(tuple(st.out), same_structure=True)  # type: ignore[arg-type]

    @staticmethod
    def _window_edit(c: Cleared, index: int | None) -> Edit:
        return Edit(
            "window",
            c.tool,
            c.call_id,
            c.tokens_before,
            c.tokens_after,
            message_index=index,
            chars_before=c.chars_before,
            chars_after=len(c.placeholder),
        )

    @staticmethod
    def edits(
        conv: Conversation,
        st: FoldState,
        n_cleared: int,
        n_dropped: int,
        events: int = 0,
        n_reasoning: int = 0,
    ) -> list[Edit]:
        """The report's records of what the fold had done after its first ``n_*`` events."""
        out: list[Edit] = []
        cleared = list(st.cleared.values())[:n_cleared]
        for c in sorted(cleared, key=lambda c: c.loc):
            idx = conv.messages[c.loc[0]].index
            out.append(Window._window_edit(c, idx))
            if c.call_saved:
                out.append(
                    Edit("clear_input", c.tool, c.call_id, c.call_saved, 0, message_index=idx)
                )
        for mi, tokens in st.reasoning[:n_reasoning]:
            out.append(
                Edit(
                    "window",
                    "(reasoning)",
                    None,
                    tokens,
                    0,
                    message_index=conv.messages[mi].index,
                    note="reasoning item of an old round dropped",
                )
            )
        for d in st.dropped[:n_dropped]:
            tools = ",".join(sorted(set(d.tools))) or "(no tool)"
            idx = conv.messages[d.start].index
            out.append(
                Edit(
                    "drop",
                    tools,
                    None,
                    d.tokens,
                    0,
                    message_index=idx,
                    note=f"dropped messages {d.start}..{d.end}",
                )
            )
        return out


__all__ = ["Cleared", "Dropped", "FoldState", "Window", "shorten_arguments"]
