"""Pairing: which result answers which call, and the rounds of a conversation.

Everything here works on neutral messages (:mod:`ctxwin._core.model`); what
differs between providers is stated by each adapter as
:class:`~ctxwin._core.model.PairingRules` (where results must stand), carried by the
conversation. Checking is in ``check.py``, repair in ``repair.py``.

Results pair **by position**, never by a global id lookup: real traces reuse call ids across
turns. A result answers the first unanswered call with its id in the latest turn that has
one (or, without ids, the first unanswered call of the same name in the nearest turn before
it that no result of its message names by id: those pair first; under
:attr:`~ctxwin._core.model.PairingRules.strict_ids`, of those without an id),
among the calls of a kind it answers (:attr:`~ctxwin._core.model.PairingRules.answers`: a
Responses ``custom_tool_call_output`` answers no ``function_call``, whatever its id).
Linking is a left fold over the messages, so it can resume where the previous request of
the same history stopped (:class:`Linker`); a result finds its call in constant time on
average, however many calls share its id (:mod:`ctxwin._core.waiting`). The same fold notes
the blocks tied to a call the server runs whose opening block has not come before them
(:attr:`Pairing.unopened`): reading them costs nothing more than the blocks each new message
brings, and so does noting the calls whose id an earlier turn's call has where the format
wants ids unique in the request (:attr:`Pairing.reused_ids`) and the blocks that want an
item of their turn after them and have none (:attr:`Pairing.unfollowed`), judged on the
request as repair leaves it: another role's message repair takes away (an orphan or
duplicate result) is not the item after them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxwin._core.model import (
    Loc,
    Message,
    Opaque,
    PairingRules,
    ToolCall,
    ToolResult,
    call_at,
    result_at,
)
from ctxwin._core.views import IndexView, LocView
from ctxwin._core.waiting import Waiting

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Linker", "Pairing", "Round", "Verdicts", "link"]


@dataclass(frozen=True, slots=True)
class Round:
    """One assistant turn with tool calls, and where their results are.

    ``start``/``end`` are the turn's first and last message positions (inclusive);
    ``results`` maps each answered call to its (first) result; ``more`` lists the further
    results of its calls, in request order, where the format allows them
    (:attr:`~ctxwin._core.model.PairingRules.repeat_results`; ``call_of`` says whose).
    """

    index: int
    start: int
    end: int
    calls: tuple[Loc, ...]
    results: dict[Loc, Loc] = field(default_factory=dict)
    more: tuple[Loc, ...] = ()

    @property
    def messages(self) -> range:
        return range(self.start, self.end + 1)

    @property
    def outputs(self) -> tuple[Loc, ...]:
        """Every result of the round: the first of each call, then the further ones."""
        firsts = tuple(self.results.values())
        return firsts + self.more if self.more else firsts


@dataclass(frozen=True, slots=True)
class Pairing:
    """The pairing of a conversation, as found (possibly with problems)."""

    rounds: tuple[Round, ...]
    call_of: Mapping[Loc, Loc]
    """result location -> call location, for every result that answers a call (a call's
    further results too: :attr:`Round.more`)."""
    round_of_message: Mapping[int, int]
    """message position -> round index, for the messages of each turn with calls."""
    orphans: tuple[Loc, ...]
    duplicates: tuple[tuple[Loc, Loc], ...]
    """(result, call) for results answering a call that an earlier result already answered,
    where the format allows no further result (:attr:`Round.more`)."""
    unopened: tuple[Loc, ...] = ()
    """Blocks tied to a call the server runs (:attr:`~ctxwin._core.model.Opaque.tie`,
    :attr:`~ctxwin._core.model.ToolCall.tie`: a server tool's result, a call a program made)
    with no block opening that call before them, in request order; a block so tied opens
    nothing (what it opens goes with it). Empty with server state: the opening block may live
    on the provider's side."""
    reused_ids: tuple[Loc, ...] = ()
    """Calls whose id a call of an earlier turn has, where the format wants call ids unique
    in the request (:attr:`~ctxwin._core.model.PairingRules.unique_ids`), in request order;
    each the first of its id in its turn (a second one there is the turn's own duplicate)."""
    unfollowed: tuple[Loc, ...] = ()
    """Blocks that need an item of their model turn right after them
    (:attr:`~ctxwin._core.model.Opaque.needs_next`: a Responses reasoning item with an id)
    with none, in request order: the next item that is not reasoning, once another role's
    messages repair takes away are gone (every block of them an orphan, a duplicate or
    unopened), is not the model's, or there is none."""
    resumed: tuple[tuple[Loc, int], ...] = ()
    """Of :attr:`unfollowed`, those whose turn the model's items go on after messages of
    another role (a user or developer message inserted into the turn), where the first of
    those items needs its reasoning (:attr:`~ctxwin._core.model.Message.tied_reasoning`):
    (block, the position of that model message), in request order. Repair moves them right
    before it."""
    repeated_items: tuple[int, ...] = ()
    """Messages whose item id (:attr:`~ctxwin._core.model.Message.item_id`) an earlier
    message has, in request order: the provider refuses them ("Duplicate item found with id
    rs_..."; a client that appended a response's output twice)."""

    def further(self, loc: Loc) -> bool:
        """Whether the result at ``loc`` is a further result of its call (:attr:`Round.more`),
        not its first: what its call's first result does once (shortening the call's
        arguments) it does not do again."""
        call = self.call_of.get(loc)
        r = self.round_of_message.get(call[0]) if call is not None else None
        more = self.rounds[r].more if r is not None else ()
        return bool(more) and loc in more


@dataclass
class Verdicts:
    """What checking found of rounds that can no longer change (kept by their linker)."""

    rounds: dict[int, tuple[Round, bool]] = field(default_factory=dict)
    """round index -> (the round object, whether a provider accepts it)."""
    ok_upto: int = 0
    """Rounds before this index are final and accepted: not looked at again."""


class Linker:
    """The linking fold: feed messages in order, ask for the pairing at any point.

    Feeding is resumable: a linker that has seen ``messages[:n]`` continues with
    ``messages[n:]`` when the next request extends the same history (the engine keeps
    linkers in a memo keyed by message identity). :meth:`pairing` never changes the fold's
    state, and what it returns shares nothing mutable with it.
    """

    def __init__(self, rules: PairingRules, server_state: bool = False) -> None:
        self.rules = rules
        self.answers = rules.answers
        self.server_state = server_state
        self.messages: tuple[Message, ...] = ()
        self.turns: list[list[int]] = []  # [start, end] of each round's turn
        self.turn_at: dict[int, int] = {}
        self.round_calls: list[list[Loc]] = []
        self.answered: dict[Loc, Loc] = {}
        self.call_of: dict[Loc, Loc] = {}
        self.calls_by_id: dict[str, list[Loc]] = {}
        self.waiting = Waiting(rules.answers)  # the calls each result may answer
        self.orphans: list[Loc] = []
        self.duplicates: list[tuple[Loc, Loc]] = []
        self.more: dict[int, list[Loc]] = {}  # round -> further results of its calls
        self.opened: set[str] = set()  # ids of the server's calls opened so far
        self.unopened: list[Loc] = []
        self.reused_ids: list[Loc] = []
        self.unfollowed: list[Loc] = []
        self.leading: list[Loc] = []  # the trailing run's blocks waiting for an item after
        self.cut: list[Loc] = []  # blocks whose next item is not the model's: waiting for one
        self.resumed: dict[Loc, int] = {}
        self.item_ids: set[str] = set()
        self.repeated_items: list[int] = []
        self.last_round_before: int | None = None
        self.open_start: int | None = None  # start of the assistant turn being read
        self.open_round: int | None = None
        self.closed: dict[int, Round] = {}  # rounds that can no longer change
        self._round_cache: list[Round] = []  # the leading run of closed rounds, in order
        self._stable = 0
        self.verdicts = Verdicts()  # has_errors' memo for them
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
            if msg.item_id is not None:
                if msg.item_id in self.item_ids:
                    self.repeated_items.append(mi)
                self.item_ids.add(msg.item_id)
            noted = self._strays() if self.leading or self.cut else 0
            later: list[tuple[int, ToolResult]] = []  # results that find no call by its id
            for bi, block in enumerate(msg.blocks):
                if isinstance(block, ToolCall):
                    if block.tie is not None and block.tie not in self.opened:
                        self.unopened.append((mi, bi))
                    if msg.role == "assistant":
                        r = self._round_for(mi)
                        self.round_calls[r].append((mi, bi))
                        if block.id is not None:
                            self._note_id(block.id, (mi, bi), r)
                            self.waiting.add(
                                block.id, block.kind, (mi, bi), self.turn_at, self.answered
                            )
                elif isinstance(block, ToolResult):
                    if not self._by_id((mi, bi), block):
                        later.append((bi, block))
                elif isinstance(block, Opaque):
                    tie = block.tie
                    if tie is not None and tie not in self.opened:
                        self.unopened.append((mi, bi))  # and what it opens goes with it
                    elif block.opens is not None:
                        self.opened.add(block.opens)
            for bi, res in later:
                self._link_result(messages, mi, bi, res)
            self._follow(msg, mi, noted)
        self.messages = messages if isinstance(messages, tuple) else tuple(messages)

    open_end: int = -1

    def _note_id(self, cid: str, loc: Loc, r: int) -> None:
        """Index a call by its id; where ids are to be unique in the request, note a call
        whose id a call of an earlier turn has (the first of its id in its own turn)."""
        same = self.calls_by_id.get(cid)
        if same is None:
            self.calls_by_id[cid] = [loc]
            return
        if self.rules.unique_ids and self.turn_at[same[-1][0]] != r:
            self.reused_ids.append(loc)
        same.append(loc)

    def _follow(self, msg: Message, mi: int, noted: int) -> None:
        """Follow the run of reasoning items: a block of it that needs an item after it
        (:attr:`~ctxwin._core.model.Opaque.needs_next`) waits for the next item that is not
        reasoning, nor another role's item repair takes away (``noted``: the strays noted
        before ``msg``'s blocks), and has none unless that item is the model's (a model's
        item repair takes away takes its reasoning with it: :mod:`ctxwin._core.leftovers`).
        Another role's item cuts the run: the model's next item resumes it if that item
        needs its reasoning; a new run of reasoning ends it."""
        blocks = msg.blocks
        if len(blocks) == 1 and isinstance(blocks[0], Opaque) and blocks[0].category == "reasoning":
            if self.cut:  # a new turn's reasoning: the cut run's turn has nothing after it
                self.unfollowed.extend(self.cut)
                self.cut = []
            if blocks[0].needs_next:
                self.leading.append((mi, 0))
            return
        if not (self.leading or self.cut):
            return
        if msg.role != "assistant":
            if not blocks or self._strays() - noted != len(blocks):
                self.cut.extend(self.leading)
                self.leading = []
            return
        if self.cut:
            tied = msg.tied_reasoning or any(
                isinstance(b, ToolCall) and b.tied_reasoning for b in blocks
            )
            if tied:
                self.resumed.update((loc, mi) for loc in self.cut)
            else:
                self.unfollowed.extend(self.cut)
            self.cut = []
        self.leading = []

    def _strays(self) -> int:
        """How many blocks were noted that repair takes away: duplicates, and without server
        state orphans (dropped, or moved after their call) and unopened blocks."""
        if self.server_state:
            return len(self.duplicates)
        return len(self.orphans) + len(self.duplicates) + len(self.unopened)

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

    def _by_id(self, loc: Loc, block: ToolResult) -> bool:
        """Pair a result with the waiting call its id names, if there is one. The results of
        a message that name their call so pair first; the others then, in order
        (:meth:`_link_result`): an id-less one takes a call of its name that none of them
        names, not the call a later result of its message answers by id."""
        cid = block.call_id
        pick = None if cid is None else self.waiting.find(cid, block.kind, self.answered)[0]
        if pick is None:
            return False
        self.answered[pick] = loc
        self.call_of[loc] = pick
        return True

    def _link_result(
        self, messages: Sequence[Message], mi: int, bi: int, block: ToolResult
    ) -> None:
        loc = (mi, bi)
        answered = self.answered
        pick: Loc | None = None
        dup_of: Loc | None = None
        cid = block.call_id
        answers = self.answers
        if cid is not None:  # the first unanswered call of its id in the latest turn with
            # one, of a kind it answers; else it repeats the last of them (if any)
            pick, last = self.waiting.find(cid, block.kind, answered)
            dup_of = last if pick is None else None
        if (
            pick is None
            and dup_of is None
            and (cid is None or self.rules.ids_optional)
            and self.last_round_before is not None
        ):
            # an id-less result answers a call of its name; under strict ids, an id-less one
            # only (an OpenAI function message never answers a tool call of its name)
            strict = cid is None and self.rules.strict_ids
            named = [
                c
                for c in self.round_calls[self.last_round_before]
                if (block.name is None or call_at(messages, c).name == block.name)
                and (
                    call_at(messages, c).id is None
                    if strict
                    else cid is None or call_at(messages, c).id in (None, cid)
                )
                and (answers is None or (block.kind, call_at(messages, c).kind) in answers)
            ]
            pick = next((c for c in named if c not in answered), None)
            if pick is None and named:
                dup_of = named[-1]
        if pick is not None:
            answered[pick] = loc
            self.call_of[loc] = pick
        elif dup_of is not None and call_at(messages, dup_of).kind in self.rules.repeat_results:
            self._more(loc, dup_of)
        elif dup_of is not None:
            self.duplicates.append((loc, dup_of))
        else:
            self.orphans.append(loc)

    def _more(self, loc: Loc, call: Loc) -> None:
        """A further result for the answered call at ``call``: its round changes again."""
        self.call_of[loc] = call
        r = self.turn_at[call[0]]
        self.more.setdefault(r, []).append(loc)
        if self.closed.pop(r, None) is not None and r < self._stable:
            self._stable = r
            del self._round_cache[r:]

    def pairing(self) -> Pairing:
        """The pairing of what was fed so far.

        Incremental: rounds that can no longer change are reused, and the maps are views of
        the linker's own (whose existing entries never change) limited to what was fed, so a
        request that grew by a round costs that round, not the whole history.
        """
        messages = self.messages
        n = len(messages)
        forward, still_orphan = self._forward()
        if forward:
            answered: Mapping[Loc, Loc] = {**self.answered, **{c: r for r, c in forward.items()}}
            call_of: Mapping[Loc, Loc] = {**self.call_of, **forward}
            round_of: Mapping[int, int] = dict(self.turn_at)
        else:
            answered = self.answered
            call_of = LocView(self.call_of, n)
            unrounded = (
                self.open_start if self.open_round is None and self.open_start is not None else n
            )
            round_of = IndexView(self.turn_at, n, unrounded)
        return Pairing(
            rounds=self._rounds(answered, bool(forward)),
            call_of=call_of,
            round_of_message=round_of,
            orphans=tuple(still_orphan),
            duplicates=tuple(self.duplicates),
            unopened=() if self.server_state or not self.unopened else tuple(self.unopened),
            reused_ids=tuple(self.reused_ids) if self.reused_ids else (),
            unfollowed=self._unfollowed(),
            resumed=tuple(self.resumed.items()) if self.resumed else (),
            repeated_items=tuple(self.repeated_items) if self.repeated_items else (),
        )

    def _unfollowed(self) -> tuple[Loc, ...]:
        if not (self.unfollowed or self.resumed or self.cut or self.leading):
            return ()
        return tuple(sorted([*self.unfollowed, *self.resumed, *self.cut, *self.leading]))

    def _forward(self) -> tuple[dict[Loc, Loc], list[Loc]]:
        """Results standing before their call (paired forward), and the true orphans."""
        forward: dict[Loc, Loc] = {}
        taken: set[Loc] = set()  # the calls ``forward`` already pairs, kept with it
        still_orphan: list[Loc] = []
        for loc in self.orphans:
            res = result_at(self.messages, loc)
            later = next(
                (
                    c
                    for c in self.calls_by_id.get(res.call_id or "", [])
                    if c[0] > loc[0]
                    and c not in self.answered
                    and c not in taken
                    and self.rules.kind_answers(res.kind, call_at(self.messages, c).kind)
                ),
                None,
            )
            if later is not None:
                forward[loc] = later
                taken.add(later)
            elif not self.server_state:  # else its call lives on the provider's side
                still_orphan.append(loc)
        return forward, still_orphan

    def _rounds(self, answered: Mapping[Loc, Loc], forward: bool) -> tuple[Round, ...]:
        """Every round; the leading run of final rounds comes from the cache."""
        stable = self._stable
        rounds = self._round_cache[:stable]
        for r in range(stable, len(self.turns)):
            rnd = self.closed.get(r)
            if rnd is None:
                s, e = self.turns[r]
                calls = self.round_calls[r]
                more = self.more.get(r)
                results = {c: answered[c] for c in calls if c in answered}
                rnd = Round(r, s, e, tuple(calls), results, tuple(more) if more else ())
                final = r != self.open_round and not forward and len(rnd.results) == len(calls)
                if final:
                    self.closed[r] = rnd  # every call answered in order: final
            rounds.append(rnd)
        while self._stable < len(rounds) and self._stable in self.closed:
            if self._stable == len(self._round_cache):
                self._round_cache.append(rounds[self._stable])
            self._stable += 1
        return tuple(rounds)


def link(messages: Sequence[Message], rules: PairingRules, server_state: bool = False) -> Pairing:
    """Pair every result with its call, by position, under a format's rules."""
    linker = Linker(rules, server_state)
    linker.feed(messages)
    return linker.pairing()
