"""What repair did to a request's tokens, for its report: one ``repair`` edit per fix that
added or took tokens, so that the edits' savings add up to what the request saved.

Repair runs before the policy's steps, on the request as parsed; the steps' edits count from
the repaired request. The tokens repair added (a result written for an interrupted call, a
first user message) or took away (an orphan or duplicate result) are the difference between
the two, message by message: each message as parsed against what stands for it once
repaired (the messages with its parse index), and each message repair wrote on its own.

Each block repair added, dropped, moved or rewrote is booked on the fix that made it, found
by where it stood (its message's parse index and its call id: two fixes for one call id in
different turns are told apart) and by what became of it (a block gone is a drop's, a
rename's or a fill's; one moved, a move's or a merge's; one written, an addition's, a
rename's or a fill's): parallel calls interrupted together are one addition each. What the
message around them changed (its overhead: a message taken or written) goes to one fix, by a
fixed rule (:meth:`_Book.key`). The fixes are indexed once: the work is linear in the
messages and the blocks repair changed, however many fixes there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Block, Text, ToolCall, ToolResult
from ctxwin._core.records import Edit, Fix, FixCode
from ctxwin.tokens._meter import TokenMeter

__all__ = ["repair_edits"]

_GONE: frozenset[FixCode] = frozenset(
    {
        "dropped_orphan_result",
        "dropped_duplicate_result",
        "dropped_duplicate_item",
        "removed_duplicate_item_id",
        "renamed_duplicate_call_id",
        "filled_empty_result",
    }
)
"""The fixes that take a block out of the request (or out for a rewritten one)."""
_MOVED: frozenset[FixCode] = frozenset({"moved_result", "merged_split_turn", "reordered_results"})
"""The fixes that put a block of the request elsewhere."""
_NEW: frozenset[FixCode] = frozenset(
    {
        "added_missing_result",
        "added_first_user_message",
        "added_last_user_message",
        "removed_duplicate_item_id",
        "renamed_duplicate_call_id",
        "filled_empty_result",
    }
)
"""The fixes that write a block the request did not hold (or a rewritten one)."""
_ADDED_USER: frozenset[FixCode] = frozenset({"added_first_user_message", "added_last_user_message"})
"""The fixes that write a user message of their own."""
_ANY = _GONE | _MOVED | _NEW
_NOWHERE: dict[str | None, list[int]] = {}
"""No fixes (never written to)."""
_NOTHING: frozenset[int] = frozenset()


class _Side:
    """One side's messages by key: a message's parse index, or for one ctxwin made (no parse
    index) a negative key of its own (``~(2 * position + side)``: apart on the two sides)."""

    __slots__ = ("first", "messages", "more", "read")

    def __init__(self, conv: Conversation, read: Sequence[int], side: int) -> None:
        self.messages = conv.messages
        self.read = read
        self.first: dict[int, int] = {}  # key -> position of its first message
        self.more: dict[int, list[int]] = {}  # key -> the positions, where several
        first = self.first
        for k, msg in enumerate(self.messages):
            key = ~(2 * k + side) if msg.index is None else msg.index
            at = first.setdefault(key, k)
            if at != k:
                self.more.setdefault(key, [at]).append(k)

    def positions(self, key: int) -> Sequence[int]:
        """The positions of the messages of ``key``."""
        at = self.first.get(key)
        return () if at is None else self.more.get(key) or (at,)

    def blocks(self, key: int) -> AbstractSet[int]:
        """The ids of the blocks of the messages of ``key``."""
        at = self.first.get(key)
        if at is None:
            return _NOTHING
        more = self.more.get(key)
        if more is None:
            return {id(b) for b in self.messages[at].blocks}
        return {id(b) for k in more for b in self.messages[k].blocks}


def _call_id(block: Block) -> str | None:
    if isinstance(block, ToolCall):
        return block.id
    return block.call_id if isinstance(block, ToolResult) else None


class _Fixes:
    """The fixes indexed once (by location, message and call id), and the fix of a block
    that changed: found in time linear in the blocks, however many fixes there are."""

    def __init__(self, fixes: Sequence[Fix], before: Conversation, repaired: Conversation):
        self.codes = [f.code for f in fixes]
        self.at: dict[int | None, dict[str | None, list[int]]] = {}
        self.of_call: dict[str, list[int]] = {}
        self.first_user = [i for i, f in enumerate(fixes) if f.code in _ADDED_USER]
        for i, f in enumerate(fixes):
            self.at.setdefault(f.message_index, {}).setdefault(f.call_id, []).append(i)
            if f.call_id is not None:
                self.of_call.setdefault(f.call_id, []).append(i)
        self._taken: tuple[set[int], set[int]] = (set(), set())
        """The fixes blocks took, on the side as parsed and as repaired: a rename takes its
        fix on both (the block gone, the block written), in the same order on each."""
        self.taken = self._taken[0]
        self.came_from: int | None = None
        """The parse index of the message the block :meth:`of_new` last placed came from."""
        self.before, self.repaired = before, repaired
        self._kept: set[int] | None = None
        self._where: dict[int, int] | None = None
        self._raws: dict[int, int] | None = None
        self._more_raws: dict[int, list[int]] = {}

    def kept(self) -> set[int]:
        """The blocks repair kept (anywhere): worked out on first need."""
        if self._kept is None:
            self._kept = {id(b) for m in self.repaired.messages for b in m.blocks}
        return self._kept

    def where(self) -> dict[int, int]:
        """The position of the message of each block of the request as parsed: worked out on
        first need."""
        if self._where is None:
            self._where = {id(b): mi for mi, m in enumerate(self.before.messages) for b in m.blocks}
        return self._where

    def origins(self, raw: object) -> Sequence[int]:
        """The positions of the messages whose call or result was read from wire dict ``raw``
        (a block repair renamed or filled keeps its dict): indexed on first need."""
        if self._raws is None:
            self._raws = first = dict[int, int]()
            more = self._more_raws
            for mi, msg in enumerate(self.before.messages):
                for b in msg.blocks:
                    if not isinstance(b, ToolCall | ToolResult) or b.raw is None:
                        continue
                    if (at := first.setdefault(id(b.raw), mi)) != mi:
                        more.setdefault(id(b.raw), [at]).append(mi)
        found = self._raws.get(id(raw))
        return () if found is None else self._more_raws.get(id(raw)) or (found,)

    def of_old(self, mi: int, bi: int, block: Block) -> int:
        """The fix of a block of the request as parsed that its message no longer holds."""
        fate = _MOVED if id(block) in self.kept() else _GONE
        self.taken = self._taken[0]
        return self._find(self.before, mi, bi, block, fate)

    def of_new(self, mi: int, bi: int, block: Block) -> int:
        """The fix of a block of the repaired request its message did not hold as parsed:
        one moved there (located where it stood), one rewritten (where its original stood:
        the one in the same message first), or one written anew (at its call; a first user
        message's, if that is what it is)."""
        was = self.where().get(id(block))
        before = self.before.messages
        self.taken = self._taken[1]
        self.came_from = None if was is None else before[was].index
        if was is not None:
            at = next(bi for bi, b in enumerate(before[was].blocks) if b is block)
            return self._find(self.before, was, at, block, _MOVED)
        origin = self._original(block, self.repaired.messages[mi].index)
        if origin is not None:  # located as the block it was
            k, at = origin
            self.came_from = before[k].index
            return self._find(self.before, k, at, before[k].blocks[at], _NEW)
        made = isinstance(block, Text) and self.repaired.messages[mi].index is None
        return self._find(self.repaired, mi, bi, block, _NEW, self.first_user if made else None)

    def _original(self, block: Block, index: int | None) -> tuple[int, int] | None:
        """Where the call or result repair rewrote into ``block`` (renamed, filled) stood in
        the request as parsed, found by its wire dict: in the message of parse index
        ``index`` if one there has it, else the first that has it; None for a block written
        anew."""
        if not isinstance(block, ToolCall | ToolResult) or block.raw is None:
            return None
        before = self.before.messages
        origins = [
            (k, bi)
            for k in dict.fromkeys(self.origins(block.raw))
            for bi, b in enumerate(before[k].blocks)
            if type(b) is type(block) and b.raw is block.raw
        ]
        return next((o for o in origins if before[o[0]].index == index), None) or next(
            iter(origins), None
        )

    def of_message(self, key: int, fate: frozenset[FixCode]) -> int | None:
        """The first fix located in the message of parse index ``key`` whose code fits what
        became of the message (None for a message ctxwin made)."""
        fixes = self.at.get(key, _NOWHERE) if key >= 0 else _NOWHERE
        return min((i for f in fixes.values() for i in f if self.codes[i] in fate), default=None)

    def _find(
        self,
        conv: Conversation,
        mi: int,
        bi: int,
        block: Block,
        fate: frozenset[FixCode],
        last: list[int] | None = None,
    ) -> int:
        """The fix of ``block`` at ``(mi, bi)`` in ``conv``: one whose code fits its fate,
        located at it, else at its call, else in its message, else for its call id, else
        in ``last``; failing all, the first fix located at any of these; else the first."""
        messages = conv.messages
        index = messages[mi].index
        cid = _call_id(block)
        in_msg = _NOWHERE if index is None else self.at.get(index, _NOWHERE)
        at_call = renamed = None
        if isinstance(block, ToolResult) and (c := conv.pairing.call_of.get((mi, bi))):
            call_index = messages[c[0]].index
            call = messages[c[0]].blocks[c[1]]
            located = _NOWHERE if call_index is None else self.at.get(call_index, _NOWHERE)
            at_call = located.get(_call_id(call))
            if conv is self.repaired and id(call) not in self.where():  # renamed: its old id
                origin = self._original(call, call_index)
                if origin is not None:
                    old = self.before.messages[origin[0]].blocks[origin[1]]
                    renamed = located.get(_call_id(old))
        own = in_msg.get(cid)
        for fixes in (own, at_call, renamed):
            if (found := self._pick(fixes, fate)) is not None:
                return found
        of_call = None if cid is None else self.of_call.get(cid)
        places = (*in_msg.values(), of_call, last)
        for fixes in places:
            if (found := self._pick(fixes, fate)) is not None:
                return found
        return next((fixes[0] for fixes in (own, at_call, renamed, *places) if fixes), 0)

    def _pick(self, fixes: list[int] | None, fate: frozenset[FixCode]) -> int | None:
        """The first fix of ``fixes`` whose code fits what became of the block (one no block
        took yet first: two duplicates dropped from one message are two fixes)."""
        fit = None
        for i in fixes or ():
            if self.codes[i] in fate:
                if i not in self.taken:
                    self.taken.add(i)
                    return i
                fit = i if fit is None else fit
        return fit


class _Book:
    """What changed, booked on the fixes: ``sums`` holds the fixes' tokens before, and
    after."""

    def __init__(self, found: _Fixes, meter: TokenMeter, n: int) -> None:
        self.found = found
        self.meter = meter
        self.sums = ([0] * n, [0] * n)
        self.rest: dict[int, int] = {}  # parse index -> the fix its message's rest went to
        self.first: int | None = None  # the fix of the key's first changed block
        self.first_from: int | None = None  # the parse index of the message it came from

    def key(self, key: int, was: _Side, now: _Side) -> None:
        """Book what changed in the messages of one key on the fixes of its changed blocks:
        each block's tokens (at most what is left of its message as read: the provider reads
        some messages as nothing), and what differs of the rest of the messages' tokens
        (their overhead) on the first fix located in the message that fits what became of it
        (a message gone: a drop's, a move's or a merge's); for a message ctxwin wrote, on
        the fix that took the rest of the message its first block came from, if its rest
        changed (a result moved and renamed: its move's or its rename's, both ways); else on
        the fix of its first changed block (a result moved out of a message that keeps the
        rest, beside a copy dropped from it: the move's, not the drop's)."""
        self.first = self.first_from = None
        old, new = was.positions(key), now.positions(key)
        rest_was = self._side(0, was, old, now.blocks(key) if old else _NOTHING)
        rest_now = self._side(1, now, new, was.blocks(key) if new else _NOTHING)
        if key >= 0:
            fate = _ANY if old and new else _GONE | _MOVED if old else _NEW
            f = self.found.of_message(key, fate)
        else:
            f = None if self.first_from is None else self.rest.get(self.first_from)
        if f is None:
            f = self.first if self.first is not None else next(iter(self.found.first_user), 0)
        if key >= 0 and rest_was != rest_now:  # a fix took the rest only if it changed
            self.rest[key] = f
        common = min(rest_was, rest_now)
        self.sums[0][f] += rest_was - common
        self.sums[1][f] += rest_now - common

    def _side(
        self, side: int, this: _Side, positions: Sequence[int], there: AbstractSet[int]
    ) -> int:
        """Book the blocks of ``this`` side's messages at ``positions`` not ``there``; the
        tokens left of the messages."""
        found, sums = self.found, self.sums
        rest = 0
        for k in positions:
            left = this.read[k]
            blocks = this.messages[k].blocks
            for bi in range(len(blocks)):
                block = blocks[bi]
                if id(block) in there:
                    continue
                f = found.of_old(k, bi, block) if side == 0 else found.of_new(k, bi, block)
                tokens = min(self.meter.block(block), left)
                left -= tokens
                sums[side][f] += tokens
                if self.first is None:
                    self.first = f
                    self.first_from = found.came_from if side else None
            rest += left
        return rest


def _changed(was: _Side, now: _Side) -> list[int]:
    """The keys whose messages repair changed (or their tokens as read), in request order,
    then those of the messages ctxwin made."""
    out = []
    for key, k in was.first.items():
        p = now.first.get(key)
        if (
            p is None
            or key in was.more
            or key in now.more
            or was.read[k] != now.read[p]
            or (was.messages[k] is not now.messages[p] and was.messages[k] != now.messages[p])
        ):
            out.append(key)
    out.extend(key for key in now.first if key not in was.first)
    return out


def repair_edits(
    before: Conversation,
    repaired: Conversation,
    fixes: Sequence[Fix],
    meter: TokenMeter,
    read_before: Sequence[int],
    read_repaired: Sequence[int],
    around: tuple[int, int] | None = None,
) -> tuple[Edit, ...]:
    """One ``repair`` edit per fix that changed the request's tokens (in the order of the
    fixes), and one for the request around the messages should repair have changed it:
    their savings add up to ``before``'s tokens less ``repaired``'s (``read_before``,
    ``read_repaired``: the tokens of their messages as the provider reads them; ``around``:
    their envelopes' tokens, as counted when they were made, None: counted now)."""
    if repaired is before or not fixes:
        return ()
    was, now = _Side(before, read_before, 0), _Side(repaired, read_repaired, 1)
    book = _Book(_Fixes(fixes, before, repaired), meter, len(fixes))
    for key in _changed(was, now):
        book.key(key, was, now)
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
        for f, tb, ta in zip(fixes, *book.sums, strict=True)
        if tb != ta
    ]
    if around is None:
        around = meter.envelope(before), meter.envelope(repaired)
    if around[0] != around[1]:
        edits.append(Edit("repair", "(request)", None, *around, note="the request's envelope"))
    return tuple(edits)
