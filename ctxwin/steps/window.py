"""The sliding window and the overflow budget, as one fold over the history.

Which results are cleared (and which old rounds are dropped) is a pure function of the
history and the policy (see :mod:`ctxwin.steps._fold` for how): the decision at each point
depends only on the history up to it, so a cleared result stays cleared in every later
request, and two consecutive requests share their whole prefix up to the first newly
cleared result: what a provider's prompt cache needs. The fold's state is memoized and
resumed when the next request extends the same history, so a steady-state request only
processes its new messages.

On a model that checks the prefix of the thinking blocks sent back (preserved thinking),
the thinking a later change of the window, or of a step before it
(``Context.changed``), invalidated is removed (see :mod:`ctxwin.steps._binding`).

The window tells the steps after it what it cleared (``Context.window_cleared``): the cache
breakpoints step finds from it, without reading every edit, the first result the window
would clear next.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import Message
from ctxwin.steps._base import Context, log_edit
from ctxwin.steps._binding import Unbound, binds
from ctxwin.steps._fold import FoldState, advance
from ctxwin.steps._late import Late

__all__ = ["Window"]


class Window:
    """Clear old tool results past the trigger, and drop old rounds past the window.

    See the module docstring. Never touches the newest ``keep_rounds`` rounds, never splits
    a call from its result, keeps the leading system messages and the first user message.
    """

    def __init__(self) -> None:
        self.clear_memo()

    def clear_memo(self) -> None:
        """Forget the memoized folds (what the step returns does not change)."""
        self._folds: PrefixCache[_Fold] = PrefixCache()
        self._marks: PrefixCache[_Fold] = PrefixCache(MARKS)
        self._marking = False
        self._extended = 0  # requests in a row that extended a history folded before
        self._rebuilt = Memo()
        self._late: Late | None = None  # the late edits last read (Late.of)

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        fold = self._fold(conversation, context)
        state = fold.state
        for edit in state.fresh:
            log_edit(edit)
            if edit.step == "window":
                fold.cleared.add((edit.message_index, edit.call_id))
        state.fresh.clear()
        out, total = _output(conversation, state), state.total
        if binds(conversation, context):  # thinking the window's changes invalidated goes
            out, saved, unbound = fold.unbound.output(conversation, state, out, context)
            context.add_edits([*state.edits(), *unbound])
            total -= saved
        else:
            context.add_edits(state.edits())
        context.meter.remember(out, total)
        told = context.window_cleared  # by a window step before this one: theirs too
        context.window_cleared = fold.cleared if told is None else {*told, *fold.cleared}
        return out

    def _fold(self, conv: Conversation, ctx: Context) -> _Fold:
        messages = conv.messages
        envelope = ctx.envelope_tokens(conv)
        drops = ctx.meter.overheads.drops_earlier_reasoning  # the request may say
        bound = binds(conv, ctx)  # decides jumps too (_binding.holds_turn)
        limits = ctx.limits(0).fold_key()  # not the ratio: see Limits.fold_key
        key = (ctx.policy.serial, envelope, conv.format, conv.rules, limits, drops, bound)
        late = self._late = Late.of(ctx.changed, self._late) if ctx.changed else None
        if late:  # kept by the messages as first sent: an edit coming in does not change them
            messages = late.first_sent(messages)
        found = self._folds.take(messages, key)
        self._extended = self._extended + 1 if found is not None else 0
        if self._extended > PLAIN and self._marking:  # histories grow as sent: no checkpoints
            self._marking = False
            self._marks = PrefixCache(MARKS)
        if found is None and not bound:
            # a history that parts from the last one: a client sending back ctxwin's
            # output (its newest edits differ from what it was given), or one edited
            self._marking = self._marking or self._folds.shared(messages, key) > len(messages) // 2
            found = self._marks.take(messages, key)
        fold = (
            found[1]
            if found is not None and (not late or late.taken_by(found[1].state))
            else _Fold(FoldState(cache_key=key, total=envelope, envelope=envelope, binds=bound))
        )
        marks = None
        if self._marking and not bound:
            rounds = ctx.config.window.keep_rounds + 3
            at = _round_starts(messages, len(fold.state.messages), rounds)

            def mark(k: int) -> None:
                head = messages[:k]
                self._marks.put(head, fold.fork(head))

            marks = (at, mark)
        advance(fold.state, conv, ctx, self._rebuilt, late, marks)
        self._folds.put(messages, fold)
        return fold


@dataclass(eq=False)
class _Fold:
    """A memoized fold, and the ``(message_index, call_id)`` of its edits of step
    ``window`` so far (only added to: its edits are made once and kept)."""

    state: FoldState
    cleared: set[tuple[int | None, str | None]] = field(default_factory=set)
    unbound: Unbound = field(default_factory=Unbound)
    """The thinking blocks the fold's changes invalidated (:mod:`~._binding`)."""

    @property
    def cache_key(self) -> object:
        """The fold's key (:meth:`PrefixCache.take` compares it)."""
        return self.state.cache_key

    def fork(self, messages: tuple[Message, ...]) -> _Fold:
        """This fold as it stands after ``messages`` (mid-fold: see :data:`MARKS`), with
        the clearings made so far counted as told (this fold's request tells them)."""
        st = self.state
        told = {(e.message_index, e.call_id) for e in st.fresh if e.step == "window"}
        return _Fold(st.fork(messages), {*self.cleared, *told})


PLAIN = 8
"""Requests in a row that extend a history the window folded before, after which it stops
keeping checkpoints (:data:`MARKS`) until a history parts from the last again: a client
that retried once, or edited its history, goes back to the plain flow's cost."""

MARKS = 16
"""Checkpoints of a fold the window keeps, for a client that sends back ctxwin's output as
its history. Such a request parts from the last one where the last one's output first
differs from its input: where its window newly cleared (the round that left the kept
rounds) or where its results were newly capped (the newest round). The fold resumes from
the latest checkpoint before that: the state before each of the newest rounds (the kept
rounds and three more) is kept, as folded, once a history has parted from the last. (A
jump that cleared rounds further back makes the next request fold from the start.) Not
for a model that checks the prefix of the thinking sent back, whose fold keeps more."""


def _round_starts(messages: tuple[Message, ...], start: int, rounds: int) -> frozenset[int]:
    """The first messages of the newest ``rounds`` model turns, from ``start`` on."""
    out = []
    for k in range(len(messages) - 1, max(start, 1) - 1, -1):
        if messages[k].role == "assistant" and messages[k - 1].role != "assistant":
            out.append(k)
            if len(out) == rounds:
                break
    return frozenset(out)


def _output(conv: Conversation, st: FoldState) -> Conversation:
    if not st.cleared and not st.dropped_set:
        return conv
    if st.dropped_set:
        return conv.with_messages(tuple(filter(None, st.out)))
    return conv.with_messages(tuple(st.out), same_structure=True)  # type: ignore[arg-type]
