"""Preserved thinking: the thinking blocks later changes (the window's own, and the steps'
before it) invalidated.

Some Claude models (``thinking_binding: prefix`` in ``models.yaml``) check each thinking
block a request sends back against its prefix: the system prompt, the tools, and every
block before it, as they were in the request that produced it. Where they differ, that block
and every later one are invalid, and the API refuses the request (a 400, "The block is bound
to a different conversation") unless the body asks it to drop them. Anthropic's advice for
code that trims older turns: "remove the thinking in the turns you keep".

The window's output is a pure function of the history, so what each earlier request sent is
known: the fold records each change it makes to what it had let through
(:attr:`~ctxwin.steps._foldstate.FoldState.changes`: the first block changed, and the
message being folded then). A change at block ``(p, b)`` made while folding message ``k``
first reached the request with the messages up to ``k``; the thinking blocks after ``(p, b)``
in messages up to ``k`` were produced before it, against the old prefix: they are removed
(with the change itself, in the same request), so every later request sends the prefix the
kept ones were produced with. Thinking produced afterwards stays. Capping and selecting at
entry change nothing a model saw: the result was edited before any model read it.

The fold takes its own changes in as it makes them (:func:`unbind`): the thinking they
invalidated comes off the message's count, the total and the requests sent since, and a
turn whose opening thinking goes is held for it no more. So it weighs every later jump on
the requests as they are sent, and the policy applied to its own output, where that
thinking is missing, decides as it did (it counted the thinking it removed, and could make
a jump there the first pass had not: review s50-9, finding 1).

The steps before the window tell it their own such changes, by the same measure
(:attr:`~ctxwin.steps._base.Context.changed`): :class:`~ctxwin.EditResults` under
``edit_latest: false`` sends a result whole while its round is the latest and edits it
(cap, select, summary) once the next round starts, the change the requests from that
round's first message on carry. Nothing after the window changes content (the cache
breakpoints step moves markers only, the budget guard raises). A summary depends on when
the summarizer answered, not on the history alone: within one policy an answer after
``summarize.timeout`` is refused and the cap memoized for good, so a result never reads
otherwise than it was first sent; a policy without that memo (another process, or after
``clear_memo``) asks again, and a summary then is a change no one can know of.

For the current turn (a tool loop since the user's latest message), whose first assistant
message must open with its thinking while thinking is on, a jump the cost strategy makes by
choice waits for the user's next message when it would invalidate that thinking
(:func:`holds_turn`); the ceiling and overflow drops do not wait.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, Opaque, Text
from ctxwin._core.records import Edit
from ctxwin._policy.tables import binds_thinking
from ctxwin.formats._binding import THINKING_KINDS, drops_unbound_thinking
from ctxwin.steps._base import Change, Context, log_edit
from ctxwin.steps._foldstate import FoldState

__all__ = ["Unbound", "binds", "held", "holds_turn", "unbind"]

NOTE = "thinking bound to a prefix changed since (preserved thinking): removed"


def binds(conv: Conversation, ctx: Context) -> bool:
    """Whether the request's model checks its thinking blocks' prefix and the request does
    not ask the API to drop the blocks that fail."""
    return binds_thinking(ctx.limits().model) and not drops_unbound_thinking(conv.source)


def holds_turn(st: FoldState, first: int) -> bool:
    """Whether a jump changing message ``first`` on would invalidate the thinking that
    opens the current turn, on a model that checks it: it then waits (see the module)."""
    return st.binds and st.turn_open >= 0 and first < st.turn_open


def held(st: FoldState) -> bool:
    """Whether the oldest eligible item alone already makes a jump by choice wait for the
    user's next message (:func:`holds_turn`): found without working out the span of every
    eligible item, which grows while the jump waits (the fold would go quadratic)."""
    if not st.binds or st.turn_open < 0 or not st.eligible:
        return False
    _, mi, bi = st.eligible[0]
    plan = st.plans.get((mi, bi))
    return plan is not None and plan.loc[0] < st.turn_open and holds_turn(st, mi)


def kinds_of(conv: Conversation) -> frozenset[str]:
    """The kinds of the blocks whose prefix is checked: the thinking that opens a turn
    (a Responses body's reasoning items, for a Claude model), else Anthropic's."""
    return conv.rules.turn_openers or THINKING_KINDS


def _thinking(msg: Message, kinds: frozenset[str]) -> bool:
    return msg.role == "assistant" and any(
        isinstance(b, Opaque) and b.kind in kinds for b in msg.blocks
    )


def _invalidated(
    messages: Sequence[Message], change: Change, kinds: frozenset[str]
) -> Iterator[tuple[int, frozenset[int]]]:
    """A change at block ``b`` of message ``p`` (-1: the whole message), first sent by
    the request whose last message is ``k``: the thinking after it, up to ``k`` (by message
    position, the indices of its blocks)."""
    (p, b), k = change.loc, change.sent_with
    for m in range(p, min(k, len(messages) - 1) + 1):
        msg = messages[m]
        if not _thinking(msg, kinds):
            continue
        after = b if m == p else -1
        gone = frozenset(
            j
            for j, blk in enumerate(msg.blocks)
            if j > after and isinstance(blk, Opaque) and blk.kind in kinds
        )
        if gone:
            yield m, gone


def unbind(st: FoldState, conv: Conversation, ctx: Context) -> None:
    """Take in the fold's changes made since last time, as the fold goes: the thinking they
    invalidated leaves every request from the one carrying the change on, so its tokens
    come off the message, the total and the requests sent since it joined (the history as
    it now stands, as for a clearing), and a turn whose opening thinking goes is held for it
    no more (:func:`holds_turn`). The policy applied to its own output, where that thinking
    is missing, then counts and decides as the fold did (review s50-9, finding 1)."""
    if not st.binds or st.unbound_seen == len(st.changes):
        return
    kinds, messages = kinds_of(conv), conv.messages
    for change in st.changes[st.unbound_seen :]:
        for m, gone in _invalidated(messages, change, kinds):
            new = gone - st.unbound.get(m, frozenset()) - st.cut.get(m, frozenset())
            if not new:
                continue
            st.unbound[m] = st.unbound.get(m, frozenset()) | new
            st.unbound_log.append((m, new))
            if m in st.dropped_set:
                continue  # its drop took its tokens
            tokens = sum(ctx.block_tokens(messages[m].blocks[j]) for j in new)
            st.cur[m] -= tokens
            st.total -= tokens
            st.lower_reads(m, tokens)
            st.unbound_off[m] = st.unbound_off.get(m, 0) + tokens
            if m == st.turn_open and 0 in new:
                st.turn_open = -1  # the turn opens with its thinking no more
    st.unbound_seen = len(st.changes)


@dataclass(eq=False)
class Unbound:
    """The thinking blocks removed so far (memoized with the fold: they only grow)."""

    seen: int = 0
    """Entries of the fold's :attr:`~ctxwin.steps._foldstate.FoldState.unbound_log` taken
    so far."""
    strip: dict[int, frozenset[int]] = field(default_factory=dict)
    """Per message position, the indices (in the message as it came) of thinking removed."""
    built: dict[int, tuple[Message, Message | None, int, Edit | None]] = field(default_factory=dict)
    """Per message: the fold's output message, it without the thinking, the tokens that
    took off, and the edit (made once, logged when made)."""

    grown: set[int] = field(default_factory=set)
    """The messages whose thinking removed grew since they were built."""
    taken: set[Change] = field(default_factory=set)
    """The changes of the steps before the window (``Context.changed``) taken so far."""
    read: tuple[Sequence[Change] | None, int] = (None, 0)
    """The list of such changes last read, and how many of it: it only grows while the
    history is resumed, so only what follows is looked at next time."""

    def take(self, st: FoldState, conv: Conversation, before: Sequence[Change]) -> None:
        """Take the thinking not taken yet: that the fold's changes invalidated (found as
        it went: :func:`unbind`), and that of the changes of the steps ``before`` it (the
        same rule: they are changes to what an earlier request sent)."""
        for m, gone in st.unbound_log[self.seen :]:
            self._strip(m, gone)
        self.seen = len(st.unbound_log)
        kinds = kinds_of(conv)
        known, n = self.read
        start = n if known is before and n <= len(before) else 0
        for change in before[start:]:
            if change not in self.taken:
                self.taken.add(change)
                for m, gone in _invalidated(conv.messages, change, kinds):
                    self._strip(m, gone)
        self.read = (before, len(before))

    def _strip(self, m: int, gone: frozenset[int]) -> None:
        had = self.strip.get(m, frozenset())
        if not gone <= had:
            self.strip[m] = had | gone
            self.grown.add(m)  # its message is built again (its thinking removed grew)

    def output(
        self, conv: Conversation, st: FoldState, out: Conversation, ctx: Context
    ) -> tuple[Conversation, int, list[Edit]]:
        """``out`` (the fold's output) without the invalidated thinking, the tokens that
        took off beyond those the fold took off its total already (:func:`unbind`), and the
        edits saying so (in message order)."""
        self.take(st, conv, ctx.changed)
        if not self.strip:
            return out, 0, []
        messages = list(st.out)
        saved, edits = 0, []
        for m in sorted(self.strip):
            now = messages[m]
            if now is None:
                continue  # dropped since: its drop says so
            found = self.built.get(m)
            if found is None or found[0] is not now or m in self.grown:
                found = self._build(conv, m, now, ctx, found)
            messages[m] = found[1]
            saved += found[2] - st.unbound_off.get(m, 0)
            if found[3] is not None:
                edits.append(found[3])
        kept = tuple(msg for msg in messages if msg is not None)
        return out.with_messages(kept), saved, edits

    def _build(
        self,
        conv: Conversation,
        m: int,
        now: Message,
        ctx: Context,
        old: tuple[Message, Message | None, int, Edit | None] | None,
    ) -> tuple[Message, Message | None, int, Edit | None]:
        """Message ``m`` (``now``, as the fold sends it) without its invalidated thinking;
        None when nothing else is in it (thinking sent in an assistant message of its own,
        which the API joins to the next): it goes whole, as invalid as its thinking."""
        gone = {id(conv.messages[m].blocks[j]) for j in self.strip[m]}
        kept = tuple(b for b in now.blocks if id(b) not in gone)
        removed = [b for b in now.blocks if id(b) in gone]
        whole = bool(removed) and all(isinstance(b, Text) and not b.text for b in kept)
        tokens = ctx.message_tokens(now) if whole else sum(ctx.block_tokens(b) for b in removed)
        edit = old[3] if old is not None and old[2] == tokens else None
        if edit is None and removed:
            edit = Edit("window", "(thinking)", None, tokens, 0, message_index=now.index, note=NOTE)
            log_edit(edit)
        new = None if whole else now.with_blocks(kept) if removed else now
        found = (now, new, tokens, edit)
        self.built[m] = found
        self.grown.discard(m)
        return found
