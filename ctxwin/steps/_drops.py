"""The window's drops: over ``context_window`` with ``overflow: drop_oldest_rounds``, whole
units (a round with its results, or a plain message, each with the messages of any call the
server runs that it holds a part of: :func:`~._units.unit`) go from the oldest, the system
prompt, the first and the latest user message staying (see :func:`~._fold.advance`), and the
user's latest words where they came after a round's results in their message (Anthropic,
Gemini: the round goes, the words stay, :mod:`~._words`, the latest user message from then
on); without a
user message, the text message right after the system prompt stays (it holds the task);
with Anthropic's thinking, so does the round of the first assistant message after the
latest user message (the provider requires its thinking first in the turn), except on a
model that checks its thinking's prefix (:mod:`~ctxwin.steps._binding`) once something
before that message changed since its thinking was produced (a drop, a clearing): that
thinking is invalid and removed, so keeping the round for it would only keep its tokens
(:func:`opener`)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import pairwise

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Loc, Opaque, ToolCall, ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._base import Change, Context, Limits
from ctxwin.steps._foldstate import FoldState
from ctxwin.steps._runs import newest_answered, pinned
from ctxwin.steps._units import running, spread_unit, unit
from ctxwin.steps._words import keep_words, speak_alone, words_note

__all__ = ["NONE", "drop", "late", "late_blocks", "overflow"]

NONE: frozenset[int] = frozenset()
"""No block of a message dropped as it came (:func:`late`)."""


def overflow(
    st: FoldState, conv: Conversation, k: int, limits: Limits, ctx: Context, cost: bool
) -> None:
    """Over ``context_window``, drop whole units from the oldest (:func:`drop`). Under
    ``strategy: cost`` a drop goes on through the rest of its request: what leaves the kept
    rounds later in it goes too. A drop met at a turn's first item (a reasoning item before
    its call) kept the round that the call then pushes out of the kept ones, which stayed,
    re-read by every request until the next drop; the request re-writes everything after
    the head anyway, so dropping it there costs nothing more."""
    going = cost and st.drop_request == st.requests
    window = limits.context_window
    if (st.total > window or going) and drop(st, conv, k, limits.drop_target, ctx, window):
        st.drop_request = st.requests


def drop(st: FoldState, conv: Conversation, k: int, target: int, ctx: Context, window: int) -> bool:
    """Drop whole units from the oldest until the total is under ``target``; whether any
    went.

    The newest ``keep_rounds`` rounds, and all that follows the oldest of them, stay. When
    that is still over ``window`` (a request must fit it, or the provider refuses it), the
    oldest of them goes too, one round at a time, down to the newest round, which always
    stays with all that follows it. A chat that seldom calls tools can hold most of its
    length after its third newest round. Where results may stand anywhere after their call
    (Responses), an old round answered late, its output among the kept rounds or still to
    come, stays while the units around it go (:func:`~._units.spread_unit`); when even the
    newest round alone is over ``window``, such a round goes too, its late output with it."""
    before = len(st.dropped)
    keep = min(ctx.config.window.keep_rounds, max(len(st.round_start), 1))  # all there are
    _drop_before(st, conv, k, target, keep, "", ctx)
    while st.total > window and keep > 1:
        keep -= 1
        kept = "only the newest round" if keep == 1 else f"the newest {keep} rounds"
        _drop_before(st, conv, k, target, keep, f" (to fit the window: {kept} kept)", ctx)
    if st.total > window and conv.rules.placement == "anywhere_after":
        why = " (to fit the window: only the newest round kept, an old round with its late output)"
        _drop_before(st, conv, k, target, 1, why, ctx, late_outputs=True)
    while st.drop_ptr in st.dropped_set:
        st.drop_ptr += 1
    return len(st.dropped) > before


def _drop_before(
    st: FoldState,
    conv: Conversation,
    k: int,
    target: int,
    keep: int,
    why: str,
    ctx: Context,
    late_outputs: bool = False,
) -> None:
    """Drop units from the oldest, before the newest ``keep`` rounds, down to ``target``.

    Where results may stand anywhere after their call, a unit is the set of its messages
    (:func:`~._units.spread_unit`), and one that reaches the kept rounds only by its results
    stays while those after it go; ``late_outputs``: it goes, those results with it. A unit
    whose results carry the user's latest words after them goes without those
    (:mod:`~._words`). A unit holding a result whose call is on the provider's side stays
    (:func:`~._runs.pinned`); with no round in the request, so does the newest run of the
    model's items that outputs answer, and all after it (:func:`~._runs.newest_answered`)."""
    messages = conv.messages
    protected = k + 1
    while protected > 0 and messages[protected - 1].role == "assistant":
        protected -= 1  # the open turn: later messages may still join it to a round
    if st.round_start:
        oldest_kept = st.round_start[max(len(st.round_start) - keep, 0)]
        protected = min(protected, oldest_kept)
    spread = conv.rules.placement == "anywhere_after"
    if spread and not st.round_start:  # no round: the newest run answered stands for it
        newest = newest_answered(conv, k, st.drop_ptr)
        protected = min(protected, newest) if newest >= 0 else protected
    stays: set[int] = set()  # the messages of spread units that stay
    changed = ctx.changed
    opener = _opener(st, changed)
    i = st.drop_ptr
    while st.total > target and i < protected:
        if i in st.dropped_set or i in (st.last_user_text, st.last_words, opener) or i in stays:
            i += 1  # the latest instruction stays, and what its turn must open with
            continue
        group: Sequence[int]
        if spread:
            group, holds = spread_unit(conv, i, k, st.cut)
        else:  # a run of messages: while it stays, so does all after it
            start, end = unit(conv, i, k, st.cut)
            group, holds = range(start, end + 1), True
        if group[-1] >= protected and (
            holds or not _late_results(conv, group, protected, k, late_outputs)
        ):
            if holds:
                break
            stays.update(group)  # an old round answered late: the units around it may go
            i += 1
            continue
        back = any(j not in st.dropped_set for j in group[: bisect_left(group, i)])
        server = any(pinned(conv, j, spread) for j in group)  # answers a call on the server
        if back or server or st.last_user_text in group or opener in group:
            if spread:  # it reaches what must stay: not droppable
                stays.update(group)
            i = i + 1 if spread else group[-1] + 1
            continue
        words = st.last_words if st.last_words in group else -1
        _take(st, conv, group[bisect_left(group, i) :], why, words, ctx)
        if words >= 0:  # now the latest user message: what the one before held may go
            speak_alone(st, conv, words, k)
            opener = _opener(st, changed)
            i = st.drop_ptr
            continue
        if opener >= 0:
            opener = _opener(st, changed)  # a drop before it invalidates its thinking
        i = i + 1 if spread else group[-1] + 1


def _opener(st: FoldState, changed: Sequence[Change]) -> int:
    """The message whose thinking opens the current turn, which drops keep (the provider
    requires the turn to open with its thinking), or -1. On a model that checks the prefix
    (:mod:`~ctxwin.steps._binding`), once something before it changed after its thinking
    was produced (a drop while folding this message, or a change an earlier request sent: a
    drop, a clearing, a step's late edit), that thinking is invalid and removed: kept, the
    round would keep only its tokens. While nothing has, it stays, its thinking valid."""
    t = st.turn_open
    if t < 0 or not st.binds:
        return t
    if any(j < t for j in st.dropped_set - st.drops_seen):
        return -1
    for c in reversed(st.changes):  # in fold order: those sent before ``t`` end the look
        if c.sent_with < t:
            break
        if c.loc[0] < t:
            return -1
    return -1 if any(c.loc[0] < t <= c.sent_with for c in changed) else t


def _late_results(
    conv: Conversation, group: Sequence[int], protected: int, k: int, late_outputs: bool
) -> bool:
    """Whether, under ``late_outputs``, the messages of ``group`` from ``protected`` on
    are results only, all in (an old round's outputs sent late): it may go with them."""
    if not late_outputs:
        return False
    return all(
        j <= k and all(isinstance(b, ToolResult) for b in conv.messages[j].blocks)
        for j in group
        if j >= protected
    )


def _take(
    st: FoldState, conv: Conversation, group: Sequence[int], why: str, words: int, ctx: Context
) -> None:
    """Drop the messages of ``group`` (ascending), recorded as one drop; of message
    ``words`` (-1: none), only what is not the user's words (:func:`keep_words`)."""
    messages = conv.messages
    turn = set(st.turn_reasoning)  # the reasoning items read until the user's next message
    tools = tuple(c.name for j in group for c in messages[j].blocks if isinstance(c, ToolCall))
    group, tokens = keep_words(st, conv, group, words, ctx)
    tokens += sum(st.cur[j] for j in group)
    for j in group:
        st.gone.update(b.opens for b in messages[j].blocks if isinstance(b, Opaque) and b.opens)
        if j in turn and st.cur[j]:
            st.dropped_at[j] = (len(st.dropped), st.cur[j])
        st.lower_reads(j, st.cur[j])
        st.cur[j] = 0
        st.out[j] = None
        st.dropped_set.add(j)
        for loc in [loc for loc in st.plans if loc[0] == j]:
            st.savings -= st.plans.pop(loc).saves
            st.since.pop(loc, None)
    st.total -= tokens
    edit = Edit(
        "drop",
        ",".join(sorted(set(tools))) or "(no tool)",
        None,
        tokens,
        0,
        message_index=messages[group[0]].index,
        note=f"dropped messages {_runs(group)}{words_note(words)}{why}",
    )
    st.dropped.append(edit)
    st.fresh.append(edit)
    st.listed = None


def _runs(group: Sequence[int]) -> str:
    """``1..2, 9..9`` for messages 1, 2 and 9."""
    runs: list[list[int]] = []
    for j in group:
        if runs and runs[-1][1] == j - 1:
            runs[-1][1] = j
        else:
            runs.append([j, j])
    return ", ".join(f"{a}..{b}" for a, b in runs)


def late(st: FoldState, conv: Conversation, k: int, ctx: Context) -> frozenset[int]:
    """Drop the blocks of message ``k``, just in, tied to a call the server runs whose
    opening block a drop has taken (:attr:`FoldState.gone`): a server tool's result, a
    program's output, a call the program made, and a result answering a call so dropped;
    the whole message when nothing else is in it. Returns their indices.

    A call the model has left goes with its unit (:func:`~._units.running`), and a drop is
    never undone (the window is monotone, a function of the history). A history may still
    bring a block of it later (a late ``web_search_tool_result``, ``program_output`` or program
    call), which providers do not produce but a client could send: kept, it would come
    with nothing before it, and the provider refuses the request (400). It goes as it
    comes, as part of the unit it would have belonged to, each message's blocks as a drop
    of their own; what such a block opens (a server tool a program called, a call's
    result) goes when it comes too. A client's result never comes after a drop took its
    call: a round goes only with all its results, and while one is to come it stays
    (:func:`~._units.unit`); Anthropic's repair moves a ``tool_result`` sent late to right
    after its call's turn before the window sees it."""
    msg = conv.messages[k]
    call_of = conv.pairing.call_of
    cut: set[int] = set()
    for bi, b in enumerate(msg.blocks):
        if isinstance(b, ToolResult):
            call = call_of.get((k, bi))
            if call is None:
                continue
            at = call[0]
            gone = at in st.dropped_set or call[1] in (cut if at == k else st.cut.get(at, ()))
        elif isinstance(b, Opaque | ToolCall):
            gone = b.tie is not None and b.tie in st.gone
        else:
            continue
        if gone:
            cut.add(bi)
            if isinstance(b, Opaque) and b.opens is not None:
                st.gone.add(b.opens)
    if not cut:
        return NONE
    dropped = frozenset(cut)
    _cut(st, conv, k, dropped, ctx)
    return dropped


def _cut(st: FoldState, conv: Conversation, k: int, cut: frozenset[int], ctx: Context) -> None:
    """Message ``k`` without the blocks ``cut`` (none left: dropped), recorded as a drop."""
    msg = conv.messages[k]
    before = st.cur[k]
    kept = tuple(b for bi, b in enumerate(msg.blocks) if bi not in cut)
    if kept:
        out = msg.with_blocks(kept)
        after = ctx.message_tokens(out)
        st.out[k] = out
        blocks = ", ".join(map(str, sorted(cut)))
        what = (
            f"block {blocks} of message {k}" if len(cut) == 1 else f"blocks {blocks} of message {k}"
        )
    else:
        after = 0
        st.out[k] = None
        st.dropped_set.add(k)
        what = f"messages {k}..{k}"
    st.cut[k] = cut
    st.cur[k] = after
    st.total -= before - after
    names = sorted(
        {
            b.name if isinstance(b, ToolCall) else conv.tool_of((k, bi))
            for bi, b in enumerate(msg.blocks)
            if bi in cut and isinstance(b, ToolCall | ToolResult)
        }
    )
    edit = Edit(
        "drop",
        ",".join(names) or "(no tool)",
        None,
        before - after,
        0,
        message_index=msg.index,
        note=f"dropped {what} (tied to a call the window dropped before it came)",
    )
    st.dropped.append(edit)
    st.fresh.append(edit)
    st.listed = None


def late_blocks(conv: Conversation) -> dict[int, frozenset[int]]:
    """The blocks of the whole history that the window may drop as they come (:func:`late`),
    by message: each block of a server's call that comes once the call is left or closed
    (:func:`~._units.running`: by then a drop may have taken its opening block), and what
    such blocks open or answer. Whether the window drops them depends on what it dropped before;
    the optimum's family (``_layout``) counts them as nothing (not a lower bound in every
    such history: see ``_layout._tokens``)."""
    messages = conv.messages
    late_from: dict[str, int] = {}
    for t, members in conv.ties.items():
        for last, m in pairwise(members):
            if not running(conv, t, last, m - 1):
                late_from[t] = m
                break
    out: dict[int, frozenset[int]] = {}
    if not late_from:
        return out
    opened: set[str] = set()
    calls: set[Loc] = set()
    call_of = conv.pairing.call_of
    for k, msg in enumerate(messages):
        cut: set[int] = set()
        for bi, b in enumerate(msg.blocks):
            if isinstance(b, ToolResult):
                gone = call_of.get((k, bi)) in calls
            elif isinstance(b, Opaque | ToolCall) and b.tie is not None:
                gone = b.tie in opened or k >= late_from.get(b.tie, len(messages))
            else:
                continue
            if gone:
                cut.add(bi)
                if isinstance(b, Opaque) and b.opens is not None:
                    opened.add(b.opens)
                elif isinstance(b, ToolCall):
                    calls.add((k, bi))
        if cut:
            out[k] = frozenset(cut)
    return out
