"""What repair did to a request's tokens, for its report: one ``repair`` edit per fix that
added or took tokens, so that the edits' savings add up to what the request saved.

Repair runs before the policy's steps, on the request as parsed; the steps' edits count from
the repaired request. The tokens repair added (a result written for an interrupted call, a
first user message) or took away (an orphan or duplicate result) are the difference between
the two, message by message: each message as parsed against what stands for it once
repaired (the messages with its parse index), and each message repair wrote on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, ToolCall, ToolResult
from ctxwin._core.records import Edit, Fix
from ctxwin.tokens._meter import TokenMeter

__all__ = ["repair_edits"]

_Key = int | tuple[str, int]
"""A message's parse index; for one ctxwin made, ``("made", id(message))``."""


def _key(msg: Message) -> _Key:
    return ("made", id(msg)) if msg.index is None else msg.index


def _by_key(conv: Conversation, meter: TokenMeter) -> dict[_Key, list[tuple[Message, int]]]:
    """The messages of ``conv`` (with their tokens as the provider reads them) per key."""
    out: dict[_Key, list[tuple[Message, int]]] = {}
    for msg, tokens in zip(conv.messages, meter.read(conv.messages), strict=True):
        out.setdefault(_key(msg), []).append((msg, tokens))
    return out


def _changed_ids(was: Sequence[Message], now: Sequence[Message]) -> list[str | None]:
    """The call ids of the calls and results in one side and not (the very block) in the
    other: what repair added, dropped or rewrote there."""
    old = {id(b): b for m in was for b in m.blocks}
    new = {id(b): b for m in now for b in m.blocks}
    return [
        b.call_id if isinstance(b, ToolResult) else b.id
        for side, other in ((old, new), (new, old))
        for k, b in side.items()
        if k not in other and isinstance(b, ToolResult | ToolCall)
    ]


def _common(
    was: Sequence[tuple[Message, int]], now: Sequence[tuple[Message, int]], meter: TokenMeter
) -> int:
    """Tokens both sides share (the blocks repair left as they were, and the message's own
    overhead where it is still there), so that an edit counts only what changed."""
    if not was or not now:
        return 0
    kept = {id(b) for m, _ in now for b in m.blocks}
    tokens = sum(t for _, t in was)
    dropped = sum(meter.block(b) for m, _ in was for b in m.blocks if id(b) not in kept)
    return max(0, min(tokens - dropped, sum(t for _, t in now)))


def _fix_of(fixes: Sequence[Fix], key: _Key, ids: Sequence[str | None], made: bool) -> int:
    """The fix that made a change: the one for a call whose block changed there, else the
    one located at the message, else (a message repair wrote with no call or result in it)
    the first user message it added, else the first fix."""
    for i, f in enumerate(fixes):
        if f.call_id is not None and f.call_id in ids:
            return i
    for i, f in enumerate(fixes):
        if not made and f.message_index == key:
            return i
    for i, f in enumerate(fixes):
        if made and f.code == "added_first_user_message":
            return i
    return 0


def repair_edits(
    before: Conversation, repaired: Conversation, fixes: Sequence[Fix], meter: TokenMeter
) -> tuple[Edit, ...]:
    """One ``repair`` edit per fix that changed the request's tokens (in the order of the
    fixes), and one for the request around the messages should repair have changed it:
    their savings add up to ``before``'s tokens less ``repaired``'s."""
    if repaired is before or not fixes:
        return ()
    was, now = _by_key(before, meter), _by_key(repaired, meter)
    sums = [[0, 0] for _ in fixes]
    for key in dict.fromkeys([*was, *now]):
        old, new = was.get(key, []), now.get(key, [])
        if old == new:  # the same messages (or equal ones), read alike: no token changed
            continue
        common = _common(old, new, meter)
        ids = _changed_ids([m for m, _ in old], [m for m, _ in new])
        s = sums[_fix_of(fixes, key, ids, made=not isinstance(key, int))]
        s[0] += sum(t for _, t in old) - common
        s[1] += sum(t for _, t in new) - common
    edits = [
        Edit(
            "repair",
            f.tool or "(no tool)",
            f.call_id,
            tb,
            ta,
            message_index=f.message_index,
            note=f.code,
        )
        for f, (tb, ta) in zip(fixes, sums, strict=True)
        if tb != ta
    ]
    around = meter.envelope(before), meter.envelope(repaired)
    if around[0] != around[1]:
        edits.append(Edit("repair", "(request)", None, *around, note="the request's envelope"))
    return tuple(edits)
