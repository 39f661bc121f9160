"""Results the steps before the window edited after requests had sent them whole, as the
window's fold takes them in.

A result of a tool with ``edit_latest: false`` goes whole while its round is the latest, and
edited (selected, summarized, capped) from the next round's first message on (on a model
that checks the prefix of its thinking, from the user's next message:
:class:`~ctxwin.EditResults`). The requests before that carried it whole, and the window
decided on them as they were: a jump made because the whole result took a request over
``trigger`` was sent. So the fold takes each such message in as those requests sent it
(:attr:`~ctxwin.steps._base.Change.before`), and the edit at its ``sent_with`` message,
before deciding there. Every request then decides as the request it is, whether the fold
starts over or resumes: what a jump cleared stays cleared, and the fold resumes from the
previous request instead of starting over at every one (its memo is keyed by the messages
as first sent, which do not change).

Taking an edit in changes the message's tokens and, when the result waits to be cleared,
its plan (what clearing it would save); a result already cleared keeps its placeholder,
which the model read. What the edit saved counts with the steps' edits from then on
(``FoldState.edited``); the requests before it are not recounted: they sent it whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import Memo
from ctxwin._core.model import Message, ToolResult
from ctxwin.steps._base import Change, Context
from ctxwin.steps._clearing import plan_result, rebuild
from ctxwin.steps._foldstate import FoldState

__all__ = ["Late"]


class Late:
    """The changes of the steps before the window that have a ``before`` message: where
    each message was first sent otherwise, and where its edit comes in."""

    def __init__(self, changed: Sequence[Change]) -> None:
        self.before: dict[int, Message] = {}
        """Per position, the message as the requests before its edit sent it."""
        self.since: dict[int, int] = {}
        """Per position, the message whose request first carried the edit (the first of
        its blocks' when they differ: the message is edited whole there)."""
        self._blocks: dict[int, list[int]] = {}
        self.at: dict[int, list[int]] = {}
        """Per message, the positions whose edit comes in there."""
        self.saved: dict[int, int] = {}
        """Per position, what its changed results' edits saved (:meth:`count_saved`)."""
        self.changed = changed
        """The changes read (:meth:`of`)."""
        self.read = 0
        """How many of them."""
        self.extend(changed)

    @classmethod
    def of(cls, changed: Sequence[Change], known: Late | None) -> Late:
        """The changes of ``changed``: ``known`` extended by those it has not read when it
        read that same list (which only grows while a history is resumed:
        :attr:`~ctxwin.steps._base.Context.changed`), else read anew."""
        if known is None or known.changed is not changed or len(changed) < known.read:
            return cls(changed)
        known.extend(changed)
        return known

    def extend(self, changed: Sequence[Change]) -> None:
        """Read the changes of ``changed`` after the first :attr:`read`."""
        before, since, blocks, at = self.before, self.since, self._blocks, self.at
        for change in changed[self.read :]:
            if change.before is None:
                continue
            p, b = change.loc
            before[p] = change.before
            k, was = change.sent_with, since.get(p)
            if was is None or k < was:
                if was is not None:
                    at[was].remove(p)
                since[p] = k
                at.setdefault(k, []).append(p)
            blocks.setdefault(p, []).append(b)
        self.read = len(changed)

    @property
    def blocks(self) -> Mapping[int, Sequence[int]]:
        """Per position, its blocks the edit changed."""
        return self._blocks

    def __bool__(self) -> bool:
        return bool(self.before)

    def taken_by(self, st: FoldState) -> bool:
        """Whether the fold ``st`` took in every edit that came within what it folded (one
        folded before an edit was known, a request's first pass while a summary is still
        pending, cannot be resumed: it starts over)."""
        n = len(st.messages)
        return all(p in st.took for p, k in self.since.items() if k < n)

    def first_sent(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        """``messages`` as each was first sent: the window's memo key (it does not change
        when an edit comes in)."""
        seq = list(messages)
        for p, msg in self.before.items():
            seq[p] = msg
        return tuple(seq)

    def view(self, conv: Conversation, k: int) -> Conversation:
        """``conv`` as the request with its messages up to ``k`` (not included) sent it:
        the messages whose edit comes in at ``k`` or later as they were before it."""
        pending = [p for p, s in self.since.items() if s >= k]
        if not pending:
            return conv
        seq = list(conv.messages)
        for p in pending:
            seq[p] = self.before[p]
        return conv.with_messages(tuple(seq), same_structure=True)

    def count_saved(self, ctx: Context, conv: Conversation, start: int) -> None:
        """Find what the steps' edits of the changed results saved (:attr:`saved`), for
        the messages the fold takes in or enters from ``start`` on: their edits, in
        :attr:`Context.edits` by message index, call id and tool (in message order: only
        the newest are looked at; the tool tells apart results without ids in one message,
        Gemini's, of which only those of tools with ``edit_latest: false`` come late)."""
        wanted: dict[tuple[int, str | None, str], int] = {}
        for p, k in self.since.items():
            if k < start:
                continue
            msg = conv.messages[p]
            if msg.index is None:
                continue
            for b in self.blocks[p]:
                blk = msg.blocks[b]
                if isinstance(blk, ToolResult):
                    wanted[(msg.index, blk.call_id, conv.tool_of((p, b)))] = p
        saved: dict[int, int] = {}
        low = min((key[0] for key in wanted), default=0)
        for edit in reversed(ctx.edits) if wanted else ():
            index = edit.message_index
            if index is None:
                continue
            if index < low:
                break
            p = wanted.get((index, edit.call_id, edit.tool), -1)
            if p >= 0:
                saved[p] = saved.get(p, 0) + edit.saved
        self.saved = saved


def take_in(
    st: FoldState, late: Late, conv: Conversation, k: int, ctx: Context, rebuilt: Memo
) -> Conversation:
    """Take in the edits that come at message ``k`` (before the fold decides there), and
    return ``conv`` (the window's, as it came) as the requests from ``k`` on send it."""
    now = late.view(conv, k + 1)
    for p in late.at.get(k, ()):
        st.took.add(p)
        if p >= len(st.out) or p in st.dropped_set or st.out[p] is None:
            continue  # not folded yet (cannot be), or dropped: nothing to take in
        _take(st, late, now, p, ctx, rebuilt)
    return now


def _take(
    st: FoldState, late: Late, now: Conversation, p: int, ctx: Context, rebuilt: Memo
) -> None:
    was, msg = late.before[p], now.messages[p]
    cut = st.cut.get(p, frozenset())
    delta = 0
    for b in late.blocks[p]:
        if (p, b) in st.cleared or b in cut:
            continue  # its placeholder stays, as sent; or it is not sent at all
        delta += ctx.block_tokens(was.blocks[b]) - ctx.block_tokens(msg.blocks[b])
        plan = st.plans.get((p, b))
        if plan is not None:  # waiting to be cleared: what that saves is worked out again
            st.savings -= plan.saves
            new = plan_result(now, p, b, ctx)
            if new is None:
                del st.plans[(p, b)]
            else:
                st.plans[(p, b)] = new
                st.savings += new.saves
    if any(item[1] == p for item in st.planned):
        st.planned = {item: plan for item, plan in st.planned.items() if item[1] != p}
        st.next_round = (-1, 0, 0, 0)  # the round next to leave: worked out again
    st.cur[p] -= delta
    st.total -= delta
    st.edited += late.saved.get(p, 0)
    if st.edits_at.get(p) or cut:
        rebuild(st, now, p, rebuilt)
    else:
        st.out[p] = msg
