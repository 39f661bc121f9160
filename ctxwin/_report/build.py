"""Building the report of an apply from the conversations before and after the policy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import ToolCall
from ctxwin._core.pairing import Round
from ctxwin._core.records import Edit, Fix
from ctxwin._report.data import RoundStats, ToolStats
from ctxwin._report.repaired import repair_edits
from ctxwin._report.report import Report
from ctxwin.tokens._meter import TokenMeter

__all__ = ["build_report", "tool_stats", "window_events"]


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
    envelopes: tuple[int, int, int] | None = None,
) -> Report:
    """The report of one apply: ``before`` as parsed, ``repaired`` as repair left it (the
    policy's steps started from it; None: ``before``, nothing repaired), ``after`` as sent.

    What repair added or took away is reported as ``repair`` edits (first, as it ran first)
    and in the ``repaired`` figures of tools and rounds, never as what the steps saved.
    ``envelopes``: the tokens of the three's envelopes as counted when they were made (None:
    counted now)."""
    fixed = before if repaired is None else repaired
    if envelopes is None:
        envelopes = (meter.envelope(before), meter.envelope(fixed), meter.envelope(after))
    tokens_before = meter.conversation(before, envelopes[0])
    tokens_after = meter.conversation(after, envelopes[2])
    read_before = meter.read(before.messages)
    read_fixed = read_before if fixed is before else meter.read(fixed.messages)
    read_after = read_fixed if after is fixed else meter.read(after.messages)
    reads = _Reads(read_before, read_fixed, read_after)
    return Report(
        format=before.format,
        counter=meter.counter.name,
        exact=meter.counter.exact,
        context_window=context_window,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        messages_before=len(before.messages),
        messages_after=len(after.messages),
        tools=tool_stats(before, fixed, after, fixes, meter, tokens_after),
        rounds=_round_stats(before, fixed, after, reads, meter),
        edits=(
            *repair_edits(before, fixed, fixes, meter, reads.before, reads.fixed, envelopes[:2]),
            *edits,
        ),
        fixes=tuple(fixes),
        window_events=window_events(edits),
        over_budget=tokens_after * ratio > context_window,
        notes=tuple(notes),
        calibration=ratio,
        breakpoints=_breakpoints(after, envelopes[2], reads.after),
    )


def window_events(edits: Sequence[Edit]) -> int:
    """How many times the window cleared: the jumps its ``edits`` name."""
    return len({e.jump for e in edits if e.jump is not None})


def tool_stats(
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
    for msg in before.messages:
        for b in msg.blocks:
            if isinstance(b, ToolCall):
                per_tool.setdefault(b.name, [0, 0, 0, 0])[0] += 1
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


@dataclass(frozen=True, slots=True)
class _Reads:
    """The tokens of each message as the provider reads it, of the request as parsed, as
    repaired and as sent: read once for the whole report."""

    before: list[int]
    fixed: list[int]
    after: list[int]


class _Side:
    """A conversation's messages by parse index (positions); and those ctxwin made (no parse
    index: a result repair wrote) per round, with the round of each turn message's index."""

    __slots__ = ("at", "made", "messages", "more", "read", "round_of")

    def __init__(self, conv: Conversation, read: list[int]) -> None:
        self.messages = messages = conv.messages
        self.read = read
        self.at: dict[int, int] = {}  # parse index -> position of its first message
        self.more: dict[int, list[int]] = {}  # parse index -> its positions, where several
        self.made: dict[int, list[int]] = {}  # round -> positions of those ctxwin made
        self.round_of: dict[int, int] = {}
        made_at: list[int] = []
        for k, msg in enumerate(messages):
            if msg.index is None:
                made_at.append(k)
            elif (first := self.at.setdefault(msg.index, k)) != k:
                self.more.setdefault(msg.index, [first]).append(k)
        if made_at:
            self._place(conv, made_at)

    def _place(self, conv: Conversation, made_at: list[int]) -> None:
        pairing = conv.pairing
        messages = conv.messages
        for k in made_at:
            r = pairing.round_of_message.get(k)
            for bi in range(len(messages[k].blocks)) if r is None else ():
                if (c := pairing.call_of.get((k, bi))) is not None:
                    r = pairing.round_of_message.get(c[0])
                    break
            if r is None:  # not in a round (a first user message repair wrote)
                continue
            self.made.setdefault(r, []).append(k)
            for j in pairing.rounds[r].messages:
                if (i := messages[j].index) is not None:
                    self.round_of.setdefault(i, r)

    def take(self, indexes: Sequence[int], ids: list[int]) -> int:
        """A round's messages on this side (their ids into ``ids``) and their tokens: those
        parsed as its members (``indexes``), and those ctxwin made for the round holding its
        turn here (taken: rounds this side joined into one count them once)."""
        messages, read, at, more = self.messages, self.read, self.at, self.more
        total = 0
        for i in indexes:
            if (first := at.get(i)) is not None:
                for k in more.get(i) or (first,):
                    ids.append(id(messages[k]))
                    total += read[k]
        round_of = self.round_of
        for i in indexes if round_of else ():
            if (r := round_of.get(i)) is not None:
                for k in self.made.pop(r, ()):
                    ids.append(id(messages[k]))
                    total += read[k]
                break
        return total


def _members(rnd: Round) -> Sequence[int]:
    """A round's message positions: its turn's, then its results' (in order)."""
    members = list(rnd.messages)
    last = rnd.end
    for mi, _ in rnd.outputs:
        if mi > last:
            members.append(mi)
            last = mi
        elif mi != last:  # a result inside its turn or before it, or out of order
            return sorted(set(rnd.messages) | {loc[0] for loc in rnd.outputs})
    return members


@dataclass(frozen=True, slots=True)
class _Strays:
    """The duplicate results (repaired away) of no round's messages, by the round of the
    call each repeats: messages holding only such results (``whole``, positions: in the
    round of the first one's call), and the tokens of those beside other blocks or
    repeating another round's call (``tokens``: taken from the round holding them whole)."""

    whole: dict[int, list[int]]
    tokens: dict[int, int]


def _strays(
    before: Conversation, rounds: list[Sequence[int]], meter: TokenMeter, read: list[int]
) -> _Strays:
    """The :class:`_Strays` of ``before``, whose rounds' messages are ``rounds``: a result
    sent twice is its call's round's, as it is where both stand in one message (Anthropic,
    Gemini), also where each result is a message of its own (OpenAI Chat, Responses)."""
    strays = _Strays({}, {})
    pairing = before.pairing
    if not pairing.duplicates:
        return strays
    members = {mi for m in rounds for mi in m}
    dups: dict[int, dict[int, int]] = {}  # message -> block -> the round of its call
    for (mi, bi), call in pairing.duplicates:
        r = pairing.round_of_message.get(call[0])
        if r is not None and mi not in members:
            dups.setdefault(mi, {})[bi] = r
    for mi, blocks in dups.items():
        first = blocks[min(blocks)]
        whole = len(blocks) == len(before.messages[mi].blocks)
        if whole:  # the first duplicate's round's, as repair's edits book its overhead
            strays.whole.setdefault(first, []).append(mi)
        left = read[mi]
        for bi in sorted(blocks):
            tokens = min(meter.block(before.messages[mi].blocks[bi]), left)
            left -= tokens
            r = blocks[bi]
            if whole and r == first:
                continue  # counted with its message
            strays.tokens[r] = strays.tokens.get(r, 0) + tokens
            if whole:  # a duplicate of another round's call: that round's, not the first's
                strays.tokens[first] = strays.tokens.get(first, 0) - tokens
    return strays


def _round_stats(
    before: Conversation,
    fixed: Conversation,
    after: Conversation,
    reads: _Reads,
    meter: TokenMeter,
) -> tuple[RoundStats, ...]:
    """Per round of the request as parsed: its tokens as parsed, as repaired and as sent
    (as the provider reads them: what it drops, earlier turns' reasoning, counts nothing);
    its state is what the policy did to it as repaired (a round repair joined to the one
    before it, calls split across messages, is kept: in that round). A duplicate result
    repair dropped counts as parsed in the round of the call it repeats (:func:`_strays`)."""
    read_before = reads.before
    was_side = _Side(fixed, reads.fixed)
    now_side = None if after is fixed else _Side(after, reads.after)  # None: the steps kept all
    messages = before.messages
    rounds = before.pairing.rounds
    members = [_members(rnd) for rnd in rounds]
    strays = _strays(before, members, meter, read_before)
    stats = []
    for rnd, own in zip(rounds, members, strict=True):
        tb = strays.tokens.get(rnd.index, 0)
        indexes = []
        for mi in (*own, *strays.whole.get(rnd.index, ())):
            tb += read_before[mi]
            if (i := messages[mi].index) is not None:
                indexes.append(i)
        was: list[int] = []
        tf = was_side.take(indexes, was)
        now: list[int] = was if now_side is None else []
        ta = tf if now_side is None else now_side.take(indexes, now)
        tools = [
            b.name for mi in rnd.messages for b in messages[mi].blocks if isinstance(b, ToolCall)
        ]
        state = "dropped" if was and not now else ("edited" if was != now or tf != ta else "kept")
        turn = messages[rnd.start].index
        stats.append(RoundStats(rnd.index, turn, tuple(tools), tb, ta, state, tf - tb))
    return tuple(stats)


def _breakpoints(conv: Conversation, envelope: int, read: list[int]) -> tuple[tuple[int, int], ...]:
    if not any(m.cache for m in conv.messages):
        return ()
    total = envelope
    out = []
    for i, (msg, tokens) in enumerate(zip(conv.messages, read, strict=True)):
        total += tokens
        if msg.cache:
            out.append((i, total))
    return tuple(out)
