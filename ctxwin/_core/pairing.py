"""Pairing: which result answers which call, and the rounds of a conversation.

Everything here works on neutral messages (:mod:`ctxwin._core.model`); what
differs between providers is stated by each adapter as
:class:`~ctxwin._core.model.PairingRules` (where results must stand), carried by the
conversation. Checking is in ``check.py``, repair in ``repair.py``.

Results pair **by position**, never by a global id lookup: real traces reuse call ids across
turns. A result answers the first unanswered call with its id in the latest turn that has
one (or, without ids, the first unanswered call of the same name in the nearest turn before
it). Linking is a left fold over the messages, so it can resume where the previous request
of the same history stopped (:class:`Linker`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxwin._core.model import (
    Loc,
    Message,
    PairingRules,
    ToolCall,
    ToolResult,
    call_at,
    result_at,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Linker", "Pairing", "Round", "link"]


@dataclass(frozen=True, slots=True)
class Round:
    """One assistant turn with tool calls, and where their results are.

    ``start``/``end`` are the turn's first and last message positions (inclusive);
    ``results`` maps each answered call to its (first) result.
    """

    index: int
    start: int
    end: int
    calls: tuple[Loc, ...]
    results: dict[Loc, Loc] = field(default_factory=dict)

    @property
    def messages(self) -> range:
        return range(self.start, self.end + 1)


@dataclass(frozen=True, slots=True)
class Pairing:
    """The pairing of a conversation, as found (possibly with problems)."""

    rounds: tuple[Round, ...]
    call_of: dict[Loc, Loc]
    """result location -> call location, for every result that answers a call."""
    round_of_message: dict[int, int]
    """message position -> round index, for the messages of each turn with calls."""
    orphans: tuple[Loc, ...]
    duplicates: tuple[tuple[Loc, Loc], ...]
    """(result, call) for results answering a call that an earlier result already answered."""


class Linker:
    """The linking fold: feed messages in order, ask for the pairing at any point.

    Feeding is resumable: a linker that has seen ``messages[:n]`` continues with
    ``messages[n:]`` when the next request extends the same history (the engine keeps
    linkers in a memo keyed by message identity). :meth:`pairing` never changes the fold's
    state, and what it returns shares nothing mutable with it.
    """

    def __init__(self, rules: PairingRules, server_state: bool = False) -> None:
        self.rules = rules
        self.server_state = server_state
        self.messages: tuple[Message, ...] = ()
        self.turns: list[list[int]] = []  # [start, end] of each round's turn
        self.turn_at: dict[int, int] = {}
        self.round_calls: list[list[Loc]] = []
        self.answered: dict[Loc, Loc] = {}
        self.call_of: dict[Loc, Loc] = {}
        self.calls_by_id: dict[str, list[Loc]] = {}
        self.orphans: list[Loc] = []
        self.duplicates: list[tuple[Loc, Loc]] = []
        self.last_round_before: int | None = None
        self.open_start: int | None = None  # start of the assistant turn being read
        self.open_round: int | None = None
        self.closed: dict[int, Round] = {}  # rounds that can no longer change
        self.verdicts: dict[int, tuple[Round, bool]] = {}  # has_errors' memo for them
        self.cache_key: object = None

    def feed(self, messages: Sequence[Message]) -> None:
        """Read ``messages[len(self.messages):]`` (``messages`` extends what was fed)."""
        consecutive = self.rules.turn == "consecutive"
        for mi in range(len(self.messages), len(messages)):
            msg = messages[mi]
            if msg.role == "assistant":
                if not (consecutive and self.open_start is not None and self.open_end == mi - 1):
                    self._close()
                    self.open_start = mi
                self.open_end = mi
                if self.open_round is not None:
                    self.turns[self.open_round][1] = mi
                    self.turn_at[mi] = self.open_round
            else:
                self._close()
            for bi, block in enumerate(msg.blocks):
                if isinstance(block, ToolCall) and msg.role == "assistant":
                    r = self._round_for(mi)
                    self.round_calls[r].append((mi, bi))
                    if block.id is not None:
                        self.calls_by_id.setdefault(block.id, []).append((mi, bi))
                elif isinstance(block, ToolResult):
                    self._link_result(messages, mi, bi, block)
        self.messages = tuple(messages)

    open_end: int = -1

    def _round_for(self, mi: int) -> int:
        if self.open_round is None:
            assert self.open_start is not None
            r = len(self.turns)
            self.turns.append([self.open_start, mi])
            self.round_calls.append([])
            for k in range(self.open_start, mi + 1):
                self.turn_at[k] = r
            self.open_round = r
        return self.open_round

    def _close(self) -> None:
        if self.open_round is not None:
            self.last_round_before = self.open_round
        self.open_start = None
        self.open_round = None

    def _link_result(
        self, messages: Sequence[Message], mi: int, bi: int, block: ToolResult
    ) -> None:
        loc = (mi, bi)
        answered = self.answered
        pick: Loc | None = None
        dup_of: Loc | None = None
        cid = block.call_id
        by_id = self.calls_by_id.get(cid) if cid is not None else None
        if by_id:
            # the latest turn with an unanswered call of this id, then its first such call
            latest = next((c for c in reversed(by_id) if c not in answered), None)
            if latest is None:
                dup_of = by_id[-1]
            else:
                r_latest = self.turn_at[latest[0]]
                pick = next(
                    c for c in by_id if c not in answered and self.turn_at[c[0]] == r_latest
                )
        elif (cid is None or self.rules.ids_optional) and self.last_round_before is not None:
            named = [
                c
                for c in self.round_calls[self.last_round_before]
                if (block.name is None or call_at(messages, c).name == block.name)
                and (cid is None or call_at(messages, c).id in (None, cid))
            ]
            pick = next((c for c in named if c not in answered), None)
            if pick is None and named:
                dup_of = named[-1]
        if pick is not None:
            answered[pick] = loc
            self.call_of[loc] = pick
        elif dup_of is not None:
            self.duplicates.append((loc, dup_of))
        else:
            self.orphans.append(loc)

    def pairing(self) -> Pairing:
        """The pairing of what was fed so far."""
        messages = self.messages
        answered = self.answered
        call_of = self.call_of
        forward: dict[Loc, Loc] = {}  # result -> call, for results standing before their call
        still_orphan: list[Loc] = []
        for loc in self.orphans:
            res = result_at(messages, loc)
            taken = set(forward.values())
            later = [
                c
                for c in self.calls_by_id.get(res.call_id or "", [])
                if c[0] > loc[0] and c not in answered and c not in taken
            ]
            if later:
                forward[loc] = later[0]
            elif not self.server_state:  # else its call lives on the provider's side
                still_orphan.append(loc)
        if forward:
            answered = {**answered, **{c: r for r, c in forward.items()}}
            call_of = {**call_of, **forward}
        else:
            call_of = dict(call_of)
        rounds: list[Round] = []
        for r, (s, e) in enumerate(self.turns):
            rnd = self.closed.get(r)
            if rnd is None:
                calls = self.round_calls[r]
                rnd = Round(r, s, e, tuple(calls), {c: answered[c] for c in calls if c in answered})
                open_turn = r == self.open_round
                if not open_turn and not forward and len(rnd.results) == len(calls):
                    self.closed[r] = rnd  # every call answered in order: final
            rounds.append(rnd)
        return Pairing(
            rounds=tuple(rounds),
            call_of=call_of,
            round_of_message=dict(self.turn_at),
            orphans=tuple(still_orphan),
            duplicates=tuple(self.duplicates),
        )


def link(messages: Sequence[Message], rules: PairingRules, server_state: bool = False) -> Pairing:
    """Pair every result with its call, by position, under a format's rules."""
    linker = Linker(rules, server_state)
    linker.feed(messages)
    return linker.pairing()
