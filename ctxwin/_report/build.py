"""Building the report of an apply from the conversations before and after the policy."""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import ToolCall
from ctxwin._core.records import Edit, Fix
from ctxwin._report.data import RoundStats, ToolStats
from ctxwin._report.report import Report
from ctxwin.tokens._meter import TokenMeter

__all__ = ["build_report"]


def build_report(
    before: Conversation,
    after: Conversation,
    *,
    meter: TokenMeter,
    context_window: int,
    fixes: Sequence[Fix],
    ratio: float = 1.0,
    edits: Sequence[Edit],
    notes: Sequence[str] = (),
) -> Report:
    """The report of one apply: ``before`` as parsed, ``after`` as sent."""
    tokens_before = meter.conversation(before)
    tokens_after = meter.conversation(after)
    return Report(
        format=before.format,
        counter=meter.counter.name,
        exact=meter.counter.exact,
        context_window=context_window,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        messages_before=len(before.messages),
        messages_after=len(after.messages),
        tools=_tool_stats(before, after, meter, tokens_after),
        rounds=_round_stats(before, after, meter),
        edits=tuple(edits),
        fixes=tuple(fixes),
        window_events=len({e.jump for e in edits if e.jump is not None}),
        over_budget=tokens_after * ratio > context_window,
        notes=tuple(notes),
        calibration=ratio,
        breakpoints=_breakpoints(after, meter),
    )


def _tool_stats(
    before: Conversation, after: Conversation, meter: TokenMeter, tokens_after: int
) -> tuple[ToolStats, ...]:
    per_tool: dict[str, list[int]] = {}
    for ref in before.results():
        s = per_tool.setdefault(ref.tool, [0, 0, 0])
        s[0] += 1
        s[1] += meter.block(ref.result)
    for ref in after.results():
        s = per_tool.setdefault(ref.tool, [0, 0, 0])
        s[2] += meter.block(ref.result)
    return tuple(
        sorted(
            (
                ToolStats(name, c, b, a, a / tokens_after if tokens_after else 0.0)
                for name, (c, b, a) in per_tool.items()
            ),
            key=lambda t: (-t.tokens_before, t.tool),
        )
    )


def _round_stats(
    before: Conversation, after: Conversation, meter: TokenMeter
) -> tuple[RoundStats, ...]:
    # as the provider reads them: what it drops (earlier turns' reasoning) counts nothing
    read_before = meter.read(before.messages)
    read_after = meter.read(after.messages)
    out_by_index = {
        msg.index: (msg, read_after[k])
        for k, msg in enumerate(after.messages)
        if msg.index is not None
    }
    stats = []
    for rnd in before.pairing.rounds:
        members = set(rnd.messages) | {loc[0] for loc in rnd.outputs}
        tb = ta = 0
        present = 0
        edited = False
        for mi in sorted(members):
            m = before.messages[mi]
            tb += read_before[mi]
            found = out_by_index.get(m.index) if m.index is not None else None
            if found is None:  # a member gone (a reasoning item cleared): edited, or dropped
                edited = True
                continue
            present += 1
            ta += found[1]
            edited = edited or found[0] is not m
        tools = tuple(
            b.name
            for mi in rnd.messages
            for b in before.messages[mi].blocks
            if isinstance(b, ToolCall)
        )
        state = "dropped" if present == 0 else ("edited" if edited else "kept")
        stats.append(RoundStats(rnd.index, before.messages[rnd.start].index, tools, tb, ta, state))
    return tuple(stats)


def _breakpoints(conv: Conversation, meter: TokenMeter) -> tuple[tuple[int, int], ...]:
    if not any(m.cache for m in conv.messages):
        return ()
    total = meter.envelope(conv)
    out = []
    for i, (msg, tokens) in enumerate(zip(conv.messages, meter.read(conv.messages), strict=True)):
        total += tokens
        if msg.cache:
            out.append((i, total))
    return tuple(out)
