"""The per-result chain: select, summarize, cap — run once per result, memoized."""

from __future__ import annotations

import dataclasses
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import Block, Message, ToolCall, ToolResult, is_user_text, opens_turn
from ctxwin._core.pairing import Pairing
from ctxwin._core.records import Edit
from ctxwin._policy.compile import RECALL_TOOL
from ctxwin.steps._base import Change, Context, ResultInfo, ResultStep, log_edit
from ctxwin.steps._binding import binds
from ctxwin.steps._cut import cap_result
from ctxwin.steps._fallbacks import fallback_of
from ctxwin.steps._recall import paged
from ctxwin.steps._selected import noted as noted_text
from ctxwin.steps._shelf import handle_of
from ctxwin.steps._summaries import Pending
from ctxwin.steps.cap import Cap
from ctxwin.steps.select import Select
from ctxwin.steps.summarize import Summarize

__all__ = ["EditResults", "default_result_steps"]


def default_result_steps() -> tuple[ResultStep, ...]:
    """The built-in result steps, in order: select, summarize, cap."""
    return (Select(), Summarize(), Cap())


@dataclass
class _State:
    """Where the chain stood after a request's messages (resumed by the next request)."""

    cache_key: object
    out: list[Message]
    edits: list[tuple[Edit, ...]]
    latest: int
    latest_from: int | None
    last_user: int
    """The latest message of the user's own (-1: none)."""
    changes: list[Change] = field(default_factory=list)
    """What :attr:`Context.changed` says: each result of ``edit_latest: false`` edited
    after a request sent it whole. Only added to while the history is resumed (the steps
    after may memoize what they read of it by its identity and length)."""
    changed_at: set[int] = field(default_factory=set)
    """The messages ``changes`` names."""
    held: tuple[int, ...] = ()
    """The messages with a result held whole past the latest round (see
    :meth:`_Turns.left`): looked at again by the next request."""


def _cut(state: _State, k: int, messages: Sequence[Message]) -> _State:
    """``state`` cut to its first ``k`` messages (those a new request shares with its
    own): what was worked out of the messages after is dropped, and a result before them
    whose edit a request past ``k`` first carried is looked at again (as held)."""
    again = {c.loc[0] for c in state.changes if c.loc[0] < k <= c.sent_with}
    changes = [c for c in state.changes if c.loc[0] < k and c.loc[0] not in again]
    last_user = state.last_user
    if last_user >= k:
        last_user = next((j for j in range(k - 1, -1, -1) if is_user_text(messages[j])), -1)
    return _State(
        state.cache_key,
        state.out[:k],
        state.edits[:k],
        state.latest,
        state.latest_from if state.latest_from is not None and state.latest_from < k else None,
        last_user,
        changes,
        {c.loc[0] for c in changes},
        tuple(sorted({*(m for m in state.held if m < k), *again})),
    )


class _Turns:
    """Where the user's own messages are, looked up as needed, and whether the model checks
    the prefix of the thinking sent back: what a result of ``edit_latest: false`` leaving
    the latest round needs (:meth:`left`)."""

    def __init__(self, conv: Conversation, ctx: Context, changes: list[Change]) -> None:
        self.conv, self.ctx = conv, ctx
        self.changes = changes
        """The changes made to results a request sent whole (:attr:`Context.changed`)."""
        self.last_user = -1
        """The latest message of the user's own (-1: none)."""

    @cached_property
    def bound(self) -> bool:
        return binds(self.conv, self.ctx)

    def left(self, mi: int, rnd: int, pairing: Pairing) -> tuple[bool, int | None]:
        """For a result at message ``mi`` of round ``rnd``, now not the latest round: whether
        it stays whole still, and else the last message of the request that first sent it
        edited (None: no request sent it whole).

        It left the latest round at the next round's first message ``k``: a change the
        requests from ``k`` on carry (the window takes it in there, :mod:`~._late`), which
        invalidates the thinking produced after it on a model that checks its prefix
        (:mod:`~ctxwin.steps._binding`). There, when a message of the user's own came
        between it and ``k``, the thinking it would invalidate opens the current turn: the
        edit then waits for the user's next message, as the window's jumps by choice do."""
        k = pairing.rounds[rnd + 1].start
        if k <= mi:
            return False, None
        if not self.bound:
            return False, k
        messages = self.conv.messages
        user = next((j for j in range(k - 1, mi, -1) if is_user_text(messages[j])), None)
        if user is None:
            return False, k
        opener = next(j for j in range(user + 1, k + 1) if messages[j].role == "assistant")
        if not opens_turn(messages[opener], self.conv.rules):
            return False, k  # no thinking opens it: nothing to keep valid
        if self.last_user <= k:
            return True, None
        return False, next(j for j in range(k + 1, len(messages)) if is_user_text(messages[j]))


class EditResults:
    """Run result steps on every tool result, where it enters the history.

    Each result is edited once, deterministically from its own content and its tool's rules,
    and the outcome is memoized: the same result reads the same in every later request, so
    the provider's prompt cache stays warm. Results of the latest round are edited too,
    unless the tool's ``edit_latest`` is false: then they are edited once their round is
    not the latest, a change to what the model read, which the steps after learn of
    (``Context.changed``; see :mod:`ctxwin.steps._binding`). An answer of the ``recall``
    tool over its cap is paged by whole lines rather than cut (:mod:`ctxwin.steps._recall`).
    """

    def __init__(self, steps: Sequence[ResultStep] | None = None) -> None:
        self.steps = tuple(steps) if steps is not None else default_result_steps()
        self._pages = any(isinstance(s, Cap) for s in self.steps)
        """Whether a recall answer over its cap is paged (:mod:`~ctxwin.steps._recall`):
        the steps cap results."""
        self.clear_memo()

    def clear_memo(self) -> None:
        """Forget every memoized edit (what the step returns does not change)."""
        self._results = Memo()
        self._prefix: PrefixCache[_State] = PrefixCache()
        self._rebuilt = Memo()
        self._whole = Memo()  # message -> it as sent with its late results whole

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        messages = conversation.messages
        latest = len(conversation.pairing.rounds) - 1
        turns = _Turns(conversation, context, [])
        # whether the model checks thinking's prefix decides when results of edit_latest:
        # false are edited (_Turns.left): asked only of a policy that has such tools
        bound = context.policy.holds_latest and turns.bound
        key = (context.policy.serial, context.format, id(context.counter.inner), bound)
        # Resume where the previous request of this history stopped, or where this one parts
        # from it (a client sending back ctxwin's output: its newest edits differ from what
        # it was given); only its latest round (which may be edited differently now that it
        # is not the latest) and the results it held whole past it (_Turns.left) are looked
        # at again.
        found = self._prefix.common(messages, key=key)
        prev = found[1] if found is not None else None
        if found is not None and found[0] < len(found[1].out):
            prev = _cut(found[1], found[0], messages)
        if prev is not None:
            n = len(prev.out)
            again = set(prev.held)
            if prev.latest != latest and prev.latest_from is not None:
                again.update(range(prev.latest_from, n))
            out, edits = prev.out, prev.edits  # taken from the cache: extended in place
            changes, changed_at = prev.changes, prev.changed_at
            if not changed_at.isdisjoint(again):  # looked at again: a new list
                changes = [c for c in changes if c.loc[0] not in again]
                changed_at = {c.loc[0] for c in changes}
        else:
            n, again, out, edits, changes, changed_at = 0, set(), [], [], [], set()
        turns.changes, known = changes, len(changes)
        turns.last_user = next(
            (j for j in range(len(messages) - 1, n - 1, -1) if is_user_text(messages[j])),
            -1 if prev is None else prev.last_user,
        )
        # the latest round's first message with a result (its results may come over more
        # than one request)
        latest_from = prev.latest_from if prev is not None and prev.latest == latest else None
        held: list[int] = []
        for mi in (*sorted(again), *range(n, len(messages))):
            new, msg_edits, in_latest, holds = self._message(
                messages[mi], mi, conversation, latest, context, turns
            )
            if mi < n:
                out[mi], edits[mi] = new, msg_edits
            else:
                out.append(new)
                edits.append(msg_edits)
            if in_latest and (latest_from is None or mi < latest_from):
                latest_from = mi
            if holds:
                held.append(mi)
        changed_at.update(c.loc[0] for c in changes[known:])
        if not context.summaries.pending:  # a result waiting for its summary is not final
            where = (latest, latest_from, turns.last_user)
            state = _State(key, out, edits, *where, changes, changed_at, tuple(held))
            self._prefix.put(messages, state)
        context.add_edits(itertools.chain.from_iterable(edits))
        if changes:  # the list itself, when no step before said anything (see _State)
            context.changed = [*context.changed, *changes] if context.changed else changes
        if all(map(operator.is_, out, messages)):
            return conversation
        return conversation.with_messages(tuple(out), same_structure=True)

    def _message(
        self,
        msg: Message,
        mi: int,
        conv: Conversation,
        latest: int,
        context: Context,
        turns: _Turns,
    ) -> tuple[Message, tuple[Edit, ...], bool, bool]:
        """The message with its results edited, the edits, whether it is in the latest
        round, and whether a result of it is held whole past it (its changes go to
        ``turns``)."""
        if msg.role == "assistant" and not any(isinstance(b, ToolResult) for b in msg.blocks):
            return msg, (), False, False
        pairing = conv.pairing
        new_blocks: list[Block] | None = None
        all_edits: list[Edit] = []
        in_latest = held = False
        late: list[tuple[int, int]] = []  # (block, sent_with) of results edited after sent whole
        for bi, block in enumerate(msg.blocks):
            if not isinstance(block, ToolResult):
                continue
            call_loc = pairing.call_of.get((mi, bi))
            rnd = pairing.round_of_message.get(call_loc[0]) if call_loc else None
            tool = conv.tool_of((mi, bi))
            is_latest = rnd is not None and rnd == latest
            in_latest = in_latest or is_latest
            rules = context.rules_for(tool)
            raw, since = is_latest and rules is not None and not rules.rules.edit_latest, None
            if rules is not None and not rules.rules.edit_latest and rnd is not None and not raw:
                raw, since = turns.left(mi, rnd, pairing)  # left the latest round
                held = held or raw
            call = conv.call_of((mi, bi)) if tool == RECALL_TOOL else None  # its lines
            found = self._edited(block, tool, raw, msg.index, context, call)
            if found is None:
                continue  # a summary is being fetched; this result waits for it
            edited, edits = found
            all_edits.extend(edits)
            if edited is not block:
                if since is not None:  # a request sent it whole: the model read it so
                    late.append((bi, since))
                if new_blocks is None:
                    new_blocks = list(msg.blocks)
                new_blocks[bi] = edited
        if new_blocks is None:
            return msg, tuple(all_edits), in_latest, held
        if late:
            before = self._sent_whole(msg, new_blocks, [bi for bi, _ in late])
            turns.changes.extend(Change((mi, bi), since, before) for bi, since in late)
        return self._rebuild(msg, new_blocks), tuple(all_edits), in_latest, held

    def _sent_whole(self, msg: Message, blocks: list[Block], whole: list[int]) -> Message:
        """``msg`` as the requests that sent the results at ``whole`` whole sent it (its
        other results edited): the object those requests carried when one is known, so
        the window's memo finds it again (:attr:`Change.before`)."""
        sent = list(blocks)
        for bi in whole:
            sent[bi] = msg.blocks[bi]
        for known in (self._whole.get(msg), self._rebuilt.get(msg), msg):
            if isinstance(known, Message) and _same_blocks(known.blocks, sent):
                self._whole.put(msg, known)
                return known
        new = msg.with_blocks(tuple(sent))
        self._whole.put(msg, new)
        return new

    def _edited(
        self,
        block: ToolResult,
        tool: str,
        raw: bool,
        index: int | None,
        ctx: Context,
        call: ToolCall | None,
    ) -> tuple[ToolResult, tuple[Edit, ...]] | None:
        """The result edited by the steps (memoized), or None while a summary is pending;
        ``call``: the recall call a recall answer answers (its lines number the page)."""
        # the counter too: a policy's models may count with their own (model_counters)
        args = call.arguments if call is not None else None
        key = (ctx.policy.serial, tool, raw, id(ctx.counter.inner), args)
        salt = hash(key)
        hit = self._results.get(block, salt)
        if hit is not None and hit[0] == key:  # type: ignore[index]
            return hit[1]  # type: ignore[index, no-any-return]
        try:
            edited = self._edit(block, tool, raw, index, ctx, call)
        except Pending:
            return None
        self._results.put(block, (key, edited), salt)
        for e in edited[1]:
            log_edit(e)  # made now, listed with the message's edits
        return edited

    def _edit(
        self,
        result: ToolResult,
        tool: str,
        raw: bool,
        index: int | None,
        ctx: Context,
        call: ToolCall | None,
    ) -> tuple[ToolResult, tuple[Edit, ...]]:
        if raw or result.loads_tools:  # edit_latest: false; or tool definitions it loads
            return result, ()
        info = ResultInfo(tool, result.call_id, ctx.rules_for(tool), False, index)
        if tool == RECALL_TOOL and self._pages:  # whole lines, the notice names the next
            page = paged(result, info, call, ctx)
            if page is not None:
                return page
        if ctx.recall_on(tool) and ctx.shelf is not None:
            return self._recalled(result, info, ctx)
        return self._chain(result, info, ctx)

    def _chain(
        self, result: ToolResult, info: ResultInfo, ctx: Context
    ) -> tuple[ToolResult, tuple[Edit, ...]]:
        with ctx.collect() as made:
            for step in self.steps:
                result = step(result, info, ctx)
        return result, tuple(made)

    def _recalled(
        self, original: ToolResult, info: ResultInfo, ctx: Context
    ) -> tuple[ToolResult, tuple[Edit, ...]]:
        """The chain with recall on: a shortened result's original is kept in the store and
        its text quotes the handle (in the notice, or in the recall note after it). When the
        store fails, the chain runs again without a handle: nothing quotes what cannot be
        recalled."""
        assert ctx.shelf is not None
        text = original.text
        handle = original.origin or handle_of(text)
        edited, edits = self._chain(original, dataclasses.replace(info, handle=handle), ctx)
        if edited is original:
            return edited, edits
        if original.origin is None and ctx.shelf.keep(text) is None:
            edited, edits = self._chain(original, info, ctx)
            why = ctx.shelf.why_not_kept(handle)  # refused (over max_bytes, full) or down
            down = fallback_of(why)
            edits = tuple(dataclasses.replace(e, fallback=e.fallback or down) for e in edits)
            return dataclasses.replace(edited, origin="", not_kept=why), edits  # not kept
        if handle not in edited.text:
            edited = self._noted(edited, info, handle, ctx)
            if edits:  # the last edit made the text: it now ends with the note
                last = dataclasses.replace(
                    edits[-1], tokens_after=ctx.count(edited.text), chars_after=len(edited.text)
                )
                edits = (*edits[:-1], last)
        return dataclasses.replace(edited, origin=handle), edits

    def _noted(self, edited: ToolResult, info: ResultInfo, handle: str, ctx: Context) -> ToolResult:
        """A selected or summarized result followed by the recall note (inside it, where a
        JSON cut would put its notice, when it is a JSON array or object), still within the
        tool's cap (the cap then cuts it, quoting the handle in its notice)."""
        fields = {"tool": info.tool, "call_id": info.call_id or "", "handle": handle}
        note = ctx.config.recall.note.format(**fields)
        noted = edited.with_text(noted_text(edited.text, note))  # JSON stays JSON
        rules = info.rules.rules if info.rules is not None else None
        if rules is not None and rules.max_tokens is not None:
            with ctx.collect():  # the cap of the note itself is not an edit of its own
                noted = cap_result(
                    noted,
                    dataclasses.replace(info, handle=handle),
                    ctx,
                    rules.max_tokens,
                    rules.truncate,
                    rules.notice,
                    "cap",
                )
        return noted

    def _rebuild(self, msg: Message, blocks: list[Block]) -> Message:
        """``msg`` with new blocks — the same object as last time when the blocks are the
        same, so later steps and the renderer find it in their memos."""
        prev = self._rebuilt.get(msg)
        if isinstance(prev, Message) and _same_blocks(prev.blocks, blocks):
            return prev
        new = msg.with_blocks(tuple(blocks))
        self._rebuilt.put(msg, new)
        return new


def _same_blocks(a: Sequence[Block], b: Sequence[Block]) -> bool:
    """Whether two block lists hold the very same blocks."""
    return len(a) == len(b) and all(map(operator.is_, a, b))
