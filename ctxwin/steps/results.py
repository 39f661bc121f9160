"""The per-result chain: select, summarize, cap — run once per result, memoized."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

from ctxwin._model import Block, Conversation, Message, ToolCall, ToolResult
from ctxwin.steps._base import Context, Edit, ResultInfo, ResultStep
from ctxwin.steps.cap import Cap
from ctxwin.steps.select import Select
from ctxwin.steps.summarize import Pending, Summarize


def default_result_steps() -> tuple[ResultStep, ...]:
    return (Select(), Summarize(), Cap())


class EditResults:
    """Run result steps on every tool result, where it enters the history.

    Each result is edited once, deterministically from its own content and its tool's rules,
    and the outcome is memoized: the same result reads the same in every later request, so
    the provider's prompt cache stays warm. Results of the latest round are edited too,
    unless the tool's ``edit_latest`` is false.
    """

    def __init__(self, steps: Sequence[ResultStep] | None = None) -> None:
        self.steps = tuple(steps) if steps is not None else default_result_steps()

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        pairing = conversation.pairing
        messages = conversation.messages
        latest = len(pairing.rounds) - 1
        # Resume where the previous request of this history stopped; only its latest round
        # (which may be edited differently now that it is not the latest) is looked at again.
        found = context.memo.result_prefix.take(messages, id(self))
        if found is not None:
            n, prev = found
            start = n
            if prev.latest != latest and prev.latest_from is not None:
                start = min(start, prev.latest_from)
            out, edits = prev.out[:start], prev.edits[:start]
        else:
            start, out, edits = 0, [], []
        latest_from: int | None = None
        for mi in range(start, len(messages)):
            msg = messages[mi]
            new, msg_edits, in_latest = self._message(msg, mi, conversation, latest, context)
            out.append(new)
            edits.append(msg_edits)
            if in_latest and latest_from is None:
                latest_from = mi
        if found is not None and latest_from is None and prev.latest == latest:
            latest_from = prev.latest_from
        if not context.summaries.pending:  # a result waiting for its summary is not final
            state = _EditState(id(self), out, edits, latest, latest_from)
            context.memo.result_prefix.put(messages, state)
        context.result_edit_lists = (edits, len(edits))
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
        messages = conv.messages
        memo = context.memo.results
        new_blocks: list[Block] | None = None
        all_edits: list[Edit] = []
        in_latest = False
        for bi, block in enumerate(msg.blocks):
            if not isinstance(block, ToolResult):
                continue
            call_loc = pairing.call_of.get((mi, bi))
            rnd = pairing.round_of_message.get(call_loc[0]) if call_loc else None
            call = messages[call_loc[0]].blocks[call_loc[1]] if call_loc else None
            tool = call.name if isinstance(call, ToolCall) else (block.name or "?")
            is_latest = rnd is not None and rnd == latest
            in_latest = in_latest or is_latest
            rules = context.policy.rules_for(tool)
            raw = is_latest and rules is not None and not rules.rules.edit_latest
            key = (tool, raw)
            hit = memo.get(block, hash(key))
            if hit is not None and hit[0] == key:  # type: ignore[index]
                edited, edits = hit[1]  # type: ignore[index]
            else:
                try:
                    edited, edits = self._edit(block, tool, raw, msg.index, context)
                except Pending:
                    continue  # a summary is being fetched; this result waits for it
                memo.put(block, (key, (edited, edits)), hash(key))
                for e in edits:
                    context.record(e)
            all_edits.extend(edits)
            if edited is not block:
                if new_blocks is None:
                    new_blocks = list(msg.blocks)
                new_blocks[bi] = edited
        if new_blocks is None:
            return msg, tuple(all_edits), in_latest
        return _rebuilt(msg, new_blocks, context), tuple(all_edits), in_latest

    def _edit(
        self, result: ToolResult, tool: str, raw: bool, index: int | None, ctx: Context
    ) -> tuple[ToolResult, tuple[Edit, ...]]:
        if raw:  # latest round of a tool with edit_latest: false
            return result, ()
        rules = ctx.policy.rules_for(tool)
        info = ResultInfo(tool, result.call_id, rules, False, index)
        sink: list[Edit] = []
        ctx.sink = sink
        try:
            for step in self.steps:
                result = step(result, info, ctx)
        finally:
            ctx.sink = None
        return result, tuple(sink)


@dataclass
class _EditState:
    cache_key: object
    out: list[Message]
    edits: list[tuple[Edit, ...]]
    latest: int
    latest_from: int | None


def _rebuilt(msg: Message, blocks: list[Block], ctx: Context) -> Message:
    """``msg`` with new blocks — the same object as last time when the blocks are the same,
    so later steps and the renderer find it in their memos."""
    memo = ctx.memo.rebuilt
    prev = memo.get(msg, 1)
    if (
        isinstance(prev, Message)
        and len(prev.blocks) == len(blocks)
        and all(a is b for a, b in zip(prev.blocks, blocks, strict=True))
    ):
        return prev
    new = msg.with_blocks(tuple(blocks))
    memo.put(msg, new, 1)
    return new
