"""The per-result chain: select, summarize, cap — run once per result, memoized."""

from __future__ import annotations

import dataclasses
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import Block, Message, ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._base import Context, ResultInfo, ResultStep, log_edit
from ctxwin.steps._cut import cap_result
from ctxwin.steps._jsoncut import with_note
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


class EditResults:
    """Run result steps on every tool result, where it enters the history.

    Each result is edited once, deterministically from its own content and its tool's rules,
    and the outcome is memoized: the same result reads the same in every later request, so
    the provider's prompt cache stays warm. Results of the latest round are edited too,
    unless the tool's ``edit_latest`` is false.
    """

    def __init__(self, steps: Sequence[ResultStep] | None = None) -> None:
        self.steps = tuple(steps) if steps is not None else default_result_steps()
        self.clear_memo()

    def clear_memo(self) -> None:
        """Forget every memoized edit (what the step returns does not change)."""
        self._results = Memo()
        self._prefix: PrefixCache[_State] = PrefixCache()
        self._rebuilt = Memo()

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        messages = conversation.messages
        latest = len(conversation.pairing.rounds) - 1
        key = (id(context.policy), context.format, id(context.counter.inner))
        # Resume where the previous request of this history stopped; only its latest round
        # (which may be edited differently now that it is not the latest) is looked at again.
        found = self._prefix.take(messages, key)
        if found is not None:
            n, prev = found
            start = n
            if prev.latest != latest and prev.latest_from is not None:
                start = min(start, prev.latest_from)
            out, edits = prev.out[:start], prev.edits[:start]
        else:
            prev, start, out, edits = None, 0, [], []
        latest_from: int | None = None
        for mi in range(start, len(messages)):
            new, msg_edits, in_latest = self._message(
                messages[mi], mi, conversation, latest, context
            )
            out.append(new)
            edits.append(msg_edits)
            if in_latest and latest_from is None:
                latest_from = mi
        if prev is not None and latest_from is None and prev.latest == latest:
            latest_from = prev.latest_from
        if not context.summaries.pending:  # a result waiting for its summary is not final
            self._prefix.put(messages, _State(key, out, edits, latest, latest_from))
        context.add_edits(itertools.chain.from_iterable(edits))
        if all(map(operator.is_, out, messages)):
            return conversation
        return conversation.with_messages(tuple(out), same_structure=True)

    def _message(
        self, msg: Message, mi: int, conv: Conversation, latest: int, context: Context
    ) -> tuple[Message, tuple[Edit, ...], bool]:
        """The message with its results edited, the edits, and whether it is in the latest
        round."""
        if msg.role == "assistant" and not any(isinstance(b, ToolResult) for b in msg.blocks):
            return msg, (), False
        pairing = conv.pairing
        new_blocks: list[Block] | None = None
        all_edits: list[Edit] = []
        in_latest = False
        for bi, block in enumerate(msg.blocks):
            if not isinstance(block, ToolResult):
                continue
            call_loc = pairing.call_of.get((mi, bi))
            rnd = pairing.round_of_message.get(call_loc[0]) if call_loc else None
            tool = conv.tool_of((mi, bi))
            is_latest = rnd is not None and rnd == latest
            in_latest = in_latest or is_latest
            rules = context.rules_for(tool)
            raw = is_latest and rules is not None and not rules.rules.edit_latest
            found = self._edited(block, tool, raw, msg.index, context)
            if found is None:
                continue  # a summary is being fetched; this result waits for it
            edited, edits = found
            all_edits.extend(edits)
            if edited is not block:
                if new_blocks is None:
                    new_blocks = list(msg.blocks)
                new_blocks[bi] = edited
        if new_blocks is None:
            return msg, tuple(all_edits), in_latest
        return self._rebuild(msg, new_blocks), tuple(all_edits), in_latest

    def _edited(
        self, block: ToolResult, tool: str, raw: bool, index: int | None, ctx: Context
    ) -> tuple[ToolResult, tuple[Edit, ...]] | None:
        """The result edited by the steps (memoized), or None while a summary is pending."""
        # the counter too: a policy's models may count with their own (model_counters)
        key = (id(ctx.policy), tool, raw, id(ctx.counter.inner))
        salt = hash(key)
        hit = self._results.get(block, salt)
        if hit is not None and hit[0] == key:  # type: ignore[index]
            return hit[1]  # type: ignore[index, no-any-return]
        try:
            edited = self._edit(block, tool, raw, index, ctx)
        except Pending:
            return None
        self._results.put(block, (key, edited), salt)
        for e in edited[1]:
            log_edit(e)  # made now, listed with the message's edits
        return edited

    def _edit(
        self, result: ToolResult, tool: str, raw: bool, index: int | None, ctx: Context
    ) -> tuple[ToolResult, tuple[Edit, ...]]:
        if raw:  # latest round of a tool with edit_latest: false
            return result, ()
        info = ResultInfo(tool, result.call_id, ctx.rules_for(tool), False, index)
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
            down = "store_down: kept without a recall handle"
            edits = tuple(dataclasses.replace(e, fallback=e.fallback or down) for e in edits)
            return dataclasses.replace(edited, origin=""), edits  # "": shortened, not kept
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
        text = with_note(edited.text, note) or f"{edited.text}\n{note}"  # JSON stays JSON
        noted = edited.with_text(text)
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
        if (
            isinstance(prev, Message)
            and len(prev.blocks) == len(blocks)
            and all(a is b for a, b in zip(prev.blocks, blocks, strict=True))
        ):
            return prev
        new = msg.with_blocks(tuple(blocks))
        self._rebuilt.put(msg, new)
        return new
