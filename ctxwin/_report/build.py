"""Building the report of an apply from the conversations before and after the policy."""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, ToolCall
from ctxwin._core.pairing import Round
from ctxwin._core.records import Edit, Fix
from ctxwin._report.data import RoundStats, ToolStats
from ctxwin._report.repaired import repair_edits
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
    repaired: Conversation | None = None,
) -> Report:
    """The report of one apply: ``before`` as parsed, ``repaired`` as repair left it (the
    policy's steps started from it; None: ``before``, nothing repaired), ``after`` as sent.

    What repair added or took away is reported as ``repair`` edits (first, as it ran first)
    and in the ``repaired`` figures of tools and rounds, never as what the steps saved."""
    fixed = before if repaired is None else repaired
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
        tools=_tool_stats(before, fixed, after, fixes, meter, tokens_after),
        rounds=_round_stats(before, fixed, after, meter),
        edits=(*repair_edits(before, fixed, fixes, meter), *edits),
        fixes=tuple(fixes),
        window_events=len({e.jump for e in edits if e.jump is not None}),
        over_budget=tokens_after * ratio > context_window,
        notes=tuple(notes),
        calibration=ratio,
        breakpoints=_breakpoints(after, meter),
    )


def _tool_stats(
    before: Conversation,
    fixed: Conversation,
    after: Conversation,
    fixes: Sequence[Fix],
    meter: TokenMeter,
    tokens_after: int,
) -> tuple[ToolStats, ...]:
    """Per tool: its calls in the request, and the tokens of its results as parsed, as
    repaired and as sent. A result repair dropped counts for the tool its fix names (a
    duplicate's), or for none (an orphan: it answers no call)."""
    per_tool: dict[str, list[int]] = {}  # calls, before, repaired, after
    for _, call in before.calls():
        per_tool.setdefault(call.name, [0, 0, 0, 0])[0] += 1
    repaired = None if fixed is before else list(fixed.results())
    kept = None if repaired is None else {id(ref.result) for ref in repaired}
    named = {(f.message_index, f.call_id): f.tool for f in fixes if f.code.startswith("dropped_")}
    for ref in before.results():
        if ref.call is not None or kept is None or id(ref.result) in kept:
            name: str | None = ref.tool  # without a call: its call on the provider's side
        else:
            name = named.get((before.messages[ref.loc[0]].index, ref.result.call_id))
        if name is not None:
            s = per_tool.setdefault(name, [0, 0, 0, 0])
            tokens = meter.block(ref.result)
            s[1] += tokens
            s[2] += tokens if kept is None else 0
    for k, refs in ((2, repaired), (3, after.results())):
        for ref in refs or ():
            per_tool.setdefault(ref.tool, [0, 0, 0, 0])[k] += meter.block(ref.result)
    return tuple(
        sorted(
            (
                ToolStats(name, c, b, a, a / tokens_after if tokens_after else 0.0, f - b)
                for name, (c, b, f, a) in per_tool.items()
            ),
            key=lambda t: (-t.tokens_before, t.tool),
        )
    )


_Counted = list[tuple[Message, int]]
_Side = tuple[dict[int, _Counted], dict[int, int], dict[int, _Counted]]
"""A conversation's messages with their tokens per parse index; and those ctxwin made (no
parse index: a result repair wrote) per round, with the round of each turn message's index."""


def _side(conv: Conversation, read: list[int]) -> _Side:
    by_index: dict[int, _Counted] = {}
    made_at: list[int] = []
    for k, (msg, tokens) in enumerate(zip(conv.messages, read, strict=True)):
        if msg.index is None:
            made_at.append(k)
        else:
            by_index.setdefault(msg.index, []).append((msg, tokens))
    round_of: dict[int, int] = {}
    made: dict[int, _Counted] = {}
    if not made_at:
        return by_index, round_of, made
    pairing = conv.pairing
    for k in made_at:
        calls = (pairing.call_of.get((k, bi)) for bi in range(len(conv.messages[k].blocks)))
        r = pairing.round_of_message.get(k)
        r = next((pairing.round_of_message.get(c[0]) for c in calls if c), None) if r is None else r
        if r is None:  # not in a round (a first user message repair wrote)
            continue
        made.setdefault(r, []).append((conv.messages[k], read[k]))
        for j in pairing.rounds[r].messages:
            if (i := conv.messages[j].index) is not None:
                round_of.setdefault(i, r)
    return by_index, round_of, made


def _members(rnd: Round) -> list[int]:
    return sorted(set(rnd.messages) | {loc[0] for loc in rnd.outputs})


def _in_round(side: _Side, indexes: Sequence[int]) -> _Counted:
    """A round's messages on one side: those parsed as its members (``indexes``), and those
    ctxwin made for the round holding its turn there (taken: rounds the side joined into
    one count them once)."""
    by_index, round_of, made = side
    found = [m for i in indexes for m in by_index.get(i, ())]
    r = next((round_of[i] for i in indexes if i in round_of), None) if round_of else None
    return found + made.pop(r, []) if r is not None else found


def _round_stats(
    before: Conversation, fixed: Conversation, after: Conversation, meter: TokenMeter
) -> tuple[RoundStats, ...]:
    """Per round of the request as parsed: its tokens as parsed, as repaired and as sent
    (as the provider reads them: what it drops, earlier turns' reasoning, counts nothing);
    its state is what the policy did to it as repaired (a round repair joined to the one
    before it, calls split across messages, is kept: in that round)."""
    read_before = meter.read(before.messages)
    was_side = _side(fixed, read_before if fixed is before else meter.read(fixed.messages))
    sides = was_side, _side(after, meter.read(after.messages))
    stats = []
    for rnd in before.pairing.rounds:
        members = _members(rnd)
        indexes = [i for mi in members if (i := before.messages[mi].index) is not None]
        turn = before.messages[rnd.start].index
        was, now = (_in_round(s, indexes) for s in sides)
        tf, ta = sum(t for _, t in was), sum(t for _, t in now)
        tb = sum(read_before[mi] for mi in members)
        tools = tuple(
            b.name
            for mi in rnd.messages
            for b in before.messages[mi].blocks
            if isinstance(b, ToolCall)
        )
        edited = [id(m) for m, _ in was] != [id(m) for m, _ in now] or tf != ta
        state = "dropped" if was and not now else ("edited" if edited else "kept")
        stats.append(RoundStats(rnd.index, turn, tools, tb, ta, state, tf - tb))
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
