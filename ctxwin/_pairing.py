"""Pairing: which result answers which call, and the rounds of a conversation.

Everything here works on the neutral :class:`~ctxwin._model.Conversation`; what differs
between providers is stated by each adapter as :class:`PairingRules` (where results must
stand). Checking is in ``_problems.py``, repair in ``_repair.py``.

Results pair **by position**, never by a global id lookup: real traces reuse call ids across
turns. A result answers the first unanswered call with its id in the latest turn that has
one (or, without ids, the first unanswered call of the same name in the nearest turn before
it). Linking is a left fold over the messages, so it can resume where the previous request
of the same history stopped (:class:`Linker`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from ctxwin._model import Conversation, Loc, Message, Role, ToolCall, ToolResult

if TYPE_CHECKING:
    from collections.abc import Sequence

ProblemCode: TypeAlias = Literal[
    "missing_result",
    "misplaced_result",
    "orphan_result",
    "duplicate_result",
    "results_not_first",
    "duplicate_call_id",
    "empty_result",
]
FixCode: TypeAlias = Literal[
    "added_missing_result",
    "moved_result",
    "dropped_orphan_result",
    "dropped_duplicate_result",
    "reordered_results",
    "filled_empty_result",
    "renamed_duplicate_call_id",
]

EMPTY_RESULT_TEXT = "(empty result)"
MISSING_RESULT_TEXT = "tool result missing: the call was interrupted"


@dataclass(frozen=True, slots=True)
class PairingRules:
    """Where a format wants tool results, stated neutrally by its adapter.

    - ``turn``: ``"message"`` when each assistant message with calls is its own round
      (chat messages, Anthropic, Gemini), ``"consecutive"`` when a run of assistant items is
      one turn (Responses items: reasoning, function_call, function_call...).
    - ``placement``: ``"adjacent"`` — result messages directly after the turn, nothing
      between (OpenAI Chat); ``"next_message"`` — all results in the one message right after
      the turn (Anthropic, Gemini); ``"anywhere_after"`` — anywhere later (Responses).
    - ``carrier``: results travel one per message, or grouped in one message.
    - ``carrier_role``: the neutral role of a message that carries results.
    - ``results_first``: results must come before any other block in their message.
    - ``ids_optional``: calls may have no id (Gemini); results then pair by order and name.
    """

    turn: Literal["message", "consecutive"]
    placement: Literal["adjacent", "next_message", "anywhere_after"]
    carrier: Literal["one_per_message", "grouped"]
    carrier_role: Role
    results_first: bool = False
    ids_optional: bool = False


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
    server_side: tuple[Loc, ...]
    """results whose call lives on the provider's side (``previous_response_id``)."""

    def round_of_result(self, loc: Loc) -> int | None:
        call = self.call_of.get(loc)
        return None if call is None else self.round_of_message.get(call[0])


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

            def call_at(c: Loc) -> ToolCall:
                b = messages[c[0]].blocks[c[1]]
                assert isinstance(b, ToolCall)
                return b

            named = [
                c
                for c in self.round_calls[self.last_round_before]
                if (block.name is None or call_at(c).name == block.name)
                and (cid is None or call_at(c).id in (None, cid))
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
        server: list[Loc] = []
        for loc in self.orphans:
            res = messages[loc[0]].blocks[loc[1]]
            assert isinstance(res, ToolResult)
            taken = set(forward.values())
            later = [
                c
                for c in self.calls_by_id.get(res.call_id or "", [])
                if c[0] > loc[0] and c not in answered and c not in taken
            ]
            if later:
                forward[loc] = later[0]
            elif self.server_state:
                server.append(loc)
            else:
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
            server_side=tuple(server),
        )


def link(conv: Conversation) -> Pairing:
    """Pair every result with its call, by position."""
    from ctxwin.formats import get_adapter

    linker = Linker(get_adapter(conv.format).rules, conv.server_state)
    linker.feed(conv.messages)
    return linker.pairing()
