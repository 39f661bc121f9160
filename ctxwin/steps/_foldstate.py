"""The fold's state (what the window has cleared and dropped so far, resumable) and the
shortening of a cleared call's arguments."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from copy import copy
from dataclasses import dataclass, field, fields, replace

from ctxwin._core.jsontext import NOT_JSON, compact_json, parse_json
from ctxwin._core.model import Loc, Message
from ctxwin._core.records import Edit
from ctxwin.steps._base import Change
from ctxwin.steps._sums import Sums

__all__ = ["SHORT_ARGUMENT", "FoldState", "Plan", "first_changed", "shorten_arguments"]

SHORT_ARGUMENT = 48
"""With ``clear_tool_inputs``, argument values longer than this (characters of JSON) are
replaced by ``"[cleared]"``; short ones (ids, paths, flags) are kept so the call still says
what it did. In a typed call's (:attr:`~ctxwin._core.model.ToolCall.typed`), only strings
are, in arrays and objects too."""


def shorten_arguments(arguments: str, typed: bool = False) -> str:
    """Arguments with long values replaced by a marker. ``typed`` (the provider checks them
    against a schema of its own: :attr:`~ctxwin._core.model.ToolCall.typed`): only long
    strings, wherever they stand, so that every value keeps its JSON type (a shell call's
    array of commands stays an array, with its long command ``"[cleared]"`` in it)."""
    value = parse_json(arguments)
    if typed:
        short = _strings_shortened(value)
        return arguments if short is value else compact_json(short)
    if value is NOT_JSON:
        return arguments if len(arguments) <= SHORT_ARGUMENT else "[cleared]"
    if not isinstance(value, dict):
        return arguments if len(arguments) <= SHORT_ARGUMENT else '"[cleared]"'
    long = {k for k, v in value.items() if _long(v)}
    if not long:
        return arguments  # nothing worth shortening: leave the call exactly as it was
    return compact_json({k: ("[cleared]" if k in long else v) for k, v in value.items()})


def _strings_shortened(value: object) -> object:
    """``value`` with each long string in it ``"[cleared]"`` (the very same object when
    there was none)."""
    if isinstance(value, str):
        return "[cleared]" if _long(value) else value
    if isinstance(value, dict):
        items = {k: _strings_shortened(v) for k, v in value.items()}
        same = all(items[k] is v for k, v in value.items())
        return value if same else items
    if isinstance(value, list):
        elements = [_strings_shortened(v) for v in value]
        return value if all(a is b for a, b in zip(elements, value, strict=True)) else elements
    return value  # a number, true, false, null (or text that is not JSON: left as it is)


def _long(value: object) -> bool:
    """Whether an argument value is longer than :data:`SHORT_ARGUMENT` as JSON (a string's
    JSON is at least its length and two quotes: no need to write it to know)."""
    if isinstance(value, str) and len(value) + 2 > SHORT_ARGUMENT:
        return True
    return len(compact_json(value)) > SHORT_ARGUMENT


@dataclass(slots=True)
class Plan:
    """What clearing one eligible item would do (computed when it becomes eligible)."""

    loc: Loc
    """The result's location; ``(mi, -1)`` for a whole reasoning item."""
    saves: int
    """Tokens the request loses by it (result and shortened call together)."""
    placeholder: str = ""
    call_loc: Loc | None = None
    call_saved: int = 0
    edits: tuple[Edit, ...] = ()
    original: str | None = None
    """The original the placeholder's handle names, kept by the jump that first sends it
    (:func:`~ctxwin.steps._clearing.jump`): None when it quotes none, or one a result step
    kept."""
    unread: bool = False
    """A reasoning item the provider no longer reads (of an earlier turn): dropping it
    saves nothing and changes nothing the provider caches, but it goes with its round, so
    that the window's output holds no item a second pass could still clear."""


@dataclass
class FoldState:
    """Where the fold stands after ``len(messages)`` messages (resumable)."""

    cache_key: object = None
    messages: tuple[Message, ...] = ()
    out: list[Message | None] = field(default_factory=list)
    """The output message at each position (``None``: dropped)."""
    total: int = 0
    envelope: int = 0
    """What the request holds besides its messages (tools, system fields): in ``total``,
    and cached ahead of them."""
    cur: Sums = field(default_factory=Sums)
    rent: float = 0.0
    """What the eligible results have cost in cache reads since the last jump (the cost
    strategy's "rent"), in plain input tokens."""
    round_start: list[int] = field(default_factory=list)
    pending: list[tuple[int, int, int]] = field(default_factory=list)  # (round, mi, bi)
    came_late: dict[Loc, int] = field(default_factory=dict)
    """Results queued under the round they came in, after their call's (``_fold._enter``),
    not eligible yet -> their call's round: over ``context_window`` they are as it is."""
    eligible: list[tuple[int, int, int]] = field(default_factory=list)
    plans: dict[Loc, Plan] = field(default_factory=dict)
    """The plan of each eligible item not cleared yet."""
    savings: int = 0
    """What clearing every eligible item would save now (the sum of their plans)."""
    since: dict[Loc, int] = field(default_factory=dict)
    """How many requests had been sent when each eligible item became eligible (its rent
    is its savings times the requests since)."""
    cleared: dict[Loc, Plan] = field(default_factory=dict)
    edits_at: dict[int, list[Plan]] = field(default_factory=dict)
    next_round: tuple[int, int, int, int] = (-1, 0, 0, 0)  # round, items, saves, first (_wait)
    planned: dict[tuple[int, int, int], Plan | None] = field(default_factory=dict)
    """The plans :func:`~._fold._wait` worked out for the round next to leave the kept
    rounds, taken by ``_fold._admit`` when they become eligible instead of being worked out
    again (a plan depends on its item alone; one of a message dropped since is not taken)."""
    dropped: list[Edit] = field(default_factory=list)
    dropped_set: set[int] = field(default_factory=set)
    gone: set[str] = field(default_factory=set)
    """The server's calls whose opening block a drop took: a block tied to one that comes
    later goes as it comes (:func:`~._drops.late`)."""
    cut: dict[int, frozenset[int]] = field(default_factory=dict)
    """The blocks so dropped, by message (those of a message they emptied included), and
    the results a drop took from a message whose user's words it kept (:mod:`~._words`)."""
    reasoning: list[Edit] = field(default_factory=list)
    """Reasoning items dropped by the window."""
    dropped_at: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Per reasoning item of the latest turn a drop took: where its drop is in
    :attr:`dropped`, and what the item counted then (:meth:`user_spoke`)."""
    reasoning_at: dict[int, int] = field(default_factory=dict)
    """Where each of them (by message) is in :attr:`reasoning`: once the provider stops
    reading it, its edit saves nothing (:meth:`user_spoke`)."""
    turn_reasoning: list[int] = field(default_factory=list)
    """Reasoning items since the latest message of the user's own, which a provider that
    drops earlier turns' reasoning stops reading at the next one (:meth:`user_spoke`)."""
    turn_read: int = 0
    """Those before this one in ``turn_reasoning`` are read no more (dropped or cleared):
    see :meth:`turn_head`."""
    head_end: int = -1
    drop_ptr: int = 0
    last_user_text: int = -1
    last_words: int = -1
    """The latest message with words of the user's own (:func:`~ctxwin._core.model.speaks`):
    ``last_user_text``, or a later message of results with the user's text after them
    (Anthropic, Gemini), whose words a drop keeps (:mod:`~._words`)."""
    turn_open: int = -1
    """The first assistant message after the user's latest one, when it begins with what
    the provider requires there (:attr:`~ctxwin._core.model.PairingRules.turn_openers`):
    drops keep it. -2: that message has not come yet."""
    events: int = 0
    requests: int = 0
    """Requests sent before the latest message (model turns so far)."""
    sent: int = 0
    """The messages of the latest request sent (what the provider may have cached)."""
    drop_request: int = -1
    """``requests`` when the window last dropped (under ``strategy: cost``, a drop goes on
    through the rest of its request)."""
    jump_request: int = -1
    """``requests`` when the window last cleared under ``strategy: cost`` (a jump goes on
    through the rest of its request: :func:`~ctxwin.steps._rent.going_on`)."""
    jump_first: int = 0
    """The first message the clearings of request ``jump_request`` changed."""
    fresh: list[Edit] = field(default_factory=list)
    """Edits made by the latest :func:`advance` (the window logs them, then empties this)."""
    listed: list[Edit] | None = None
    """Every edit, in report order (rebuilt when something new was done)."""
    by_place: list[Edit] | None = field(default_factory=list)
    """The clearings' edits by place, kept in order as clearings come from the oldest
    (``None``: one came out of order, so they are sorted again)."""
    last_place: Loc | None = None
    entered: list[int] = field(default_factory=list)
    """How many requests had been sent when each message joined."""
    reads: int = 0
    """The tokens of every request sent so far, as the history now stands (a clearing
    lowers the requests that held the message): ``window.max_overrun``'s bill."""
    edited: int = 0
    """Tokens the steps before the window took off the messages so far."""
    edited_reads: int = 0
    """The same, summed over the requests sent (what the edits saved in each)."""
    edited_sent: int = 0
    """The same, in the latest request sent."""
    cleared_saves: int = 0
    """Tokens the window's clearings took off the latest request."""
    credit: float = 0.0
    """What the window's clearings have saved the bill so far, less what their jumps cost:
    budget :func:`~ctxwin.steps._rent.affordable` may spend."""
    binds: bool = False
    """Whether the request's model checks the prefix of the thinking sent back (preserved
    thinking, :func:`~ctxwin.steps._binding.binds`): part of the fold's memo key, so fixed
    for the state."""
    changes: list[Change] = field(default_factory=list)
    """Each change the fold made to what it had let through: the first block it changed,
    and the message being folded then (the request with the messages up to it carried it
    first). A thinking block a model produced before such a change, and after that block,
    is bound to a prefix that is gone (:mod:`~ctxwin.steps._binding`)."""
    unbound: dict[int, frozenset[int]] = field(default_factory=dict)
    """Per message, the thinking blocks (their indices in the message as it came) that
    :attr:`changes` invalidated, which the window removes: taken off :attr:`cur` when the
    change was made (:func:`~ctxwin.steps._binding.unbind`)."""
    unbound_off: dict[int, int] = field(default_factory=dict)
    """The tokens so taken off each message."""
    unbound_log: list[tuple[int, frozenset[int]]] = field(default_factory=list)
    """The same blocks, in the order they were found (read on by the window's output)."""
    unbound_seen: int = 0
    """The :attr:`changes` taken so far."""
    drops_seen: set[int] = field(default_factory=set)
    """The dropped messages :attr:`changes` holds so far."""
    took: set[int] = field(default_factory=set)
    """The messages whose edit by a step before the window the fold took in where it came
    (:mod:`~ctxwin.steps._late`)."""

    def fork(self, messages: Sequence[Message]) -> FoldState:
        """This state, as it stands after ``messages`` (the first ``len(messages)`` of what
        is being folded), to resume from later (the window's checkpoints): sharing nothing
        the fold changes in place, its fresh edits left to this state to tell."""
        twin = copy(self)
        for name in _CONTAINERS:
            value = getattr(self, name)
            if value is not None:
                setattr(twin, name, value.copy())
        # plans not cleared yet change in place (Plan.saves, .edits); cleared ones do not
        twin.plans = {loc: copy(plan) for loc, plan in self.plans.items()}
        twin.planned = {k: copy(plan) if plan else plan for k, plan in self.planned.items()}
        twin.cur = self.cur.copy()
        twin.fresh = []
        twin.messages = tuple(messages)
        return twin

    def lower_reads(self, mi: int, tokens: int) -> None:
        """Message ``mi`` lost ``tokens``: so did every request sent since it joined."""
        self.reads -= tokens * (self.requests - self.entered[mi])

    def turn_requests(self) -> int:
        """Requests sent since the user's latest message (all of them before one came)."""
        if self.last_user_text < 0:
            return self.requests
        return self.requests - self.entered[self.last_user_text]

    def turn_head(self) -> int:
        """The first reasoning item since the user's latest message that the provider still
        reads (-1: none): at the user's next message, the cache of the request before
        holds only up to it (:meth:`user_spoke`)."""
        items = self.turn_reasoning
        while self.turn_read < len(items) and not self.cur[items[self.turn_read]]:
            self.turn_read += 1  # dropped or cleared: never read again
        return items[self.turn_read] if self.turn_read < len(items) else -1

    def now_unread(self, mi: int) -> None:
        """The reasoning item at ``mi`` is no longer read (the user spoke after its turn):
        an edit that took it out of the request saves that much less (the request's count
        leaves it out too)."""
        at = self.reasoning_at.pop(mi, None)
        if at is not None and self.reasoning[at].tokens_before:  # the window dropped it
            why = " (of an earlier turn, which the provider no longer reads)"
            edit = self.reasoning[at]
            note = f"{edit.note or ''}{why}"
            self.reasoning[at] = replace(edit, tokens_before=0, note=note)
            self.listed = None
        if mi in self.dropped_at:  # dropped with its round
            at, counted = self.dropped_at.pop(mi)
            edit = self.dropped[at]
            self.dropped[at] = replace(edit, tokens_before=edit.tokens_before - counted)
            self.listed = None

    def user_spoke(self) -> None:
        """A message of the user's own came: the provider drops the reasoning items of the
        turns before it (``Overheads.drops_earlier_reasoning``). They count nothing from now
        on, so clearing them saves nothing (they still go with their round:
        :attr:`Plan.unread`), and the provider's cache of the previous request, which read
        them, holds only up to the first of them: what follows is written again whatever
        the window does (the request sent before keeps its count: it read them)."""
        first = None
        for j in self.turn_reasoning:
            tokens = self.cur[j]
            self.now_unread(j)
            if not tokens or j in self.dropped_set:
                continue
            first = j if first is None else first
            self.cur[j] = 0
            self.total -= tokens
            plan = self.plans.get((j, -1))
            if plan is not None:
                self.savings -= plan.saves
                plan.saves, plan.unread = 0, True
        self.turn_reasoning, self.turn_read = [], 0
        if first is not None:
            self.sent = min(self.sent, first)
            self.planned = {item: plan for item, plan in self.planned.items() if item[2] >= 0}
            self.next_round = (-1, 0, 0, 0)  # the round next to leave: worked out again

    def note_changes(self, made: Iterable[Plan]) -> None:
        """A jump cleared these items while the latest message was folded."""
        locs = [
            min(p.loc, p.call_loc) if p.call_saved and p.call_loc is not None else p.loc
            for p in made
        ]
        if locs:
            self.changes.append(Change(min(locs), len(self.cur) - 1))

    def note_drops(self, k: int) -> None:
        """Record what folding message ``k`` dropped (whole messages, or blocks of ``k``
        tied to a call a drop took) as a change."""
        if len(self.dropped_set) != len(self.drops_seen):
            new = self.dropped_set - self.drops_seen
            self.drops_seen |= new
            self.changes.append(Change((min(new), -1), k))
        if k in self.cut:
            self.changes.append(Change((k, min(self.cut[k])), k))

    def edits(self) -> list[Edit]:
        """Every edit of the fold in report order: clearings by place, reasoning, drops."""
        if self.listed is None:
            if self.by_place is None:
                cleared = sorted(self.cleared.items())  # by place (locations are unique)
                self.by_place = [e for _, c in cleared for e in c.edits]
            self.listed = self.by_place + self.reasoning + self.dropped
        return self.listed

    def note_cleared(self, plan: Plan) -> None:
        """A clearing made: its edits join the ordered list (or it is sorted again)."""
        if self.by_place is not None and (self.last_place is None or plan.loc > self.last_place):
            self.by_place.extend(plan.edits)
            self.last_place = plan.loc
        else:
            self.by_place = None
        self.listed = None


_CONTAINERS = tuple(
    f.name for f in fields(FoldState) if f.type.split("[")[0] in ("list", "dict", "set")
)
"""The fields :meth:`FoldState.fork` copies (lists, dicts and sets of values the fold
never changes in place; :attr:`FoldState.edits_at`'s lists are replaced, not appended to)."""


def first_changed(plans: Iterable[Plan | None], end: int) -> int:
    """The first message clearing these items changes (``end`` when none), of those the
    provider reads."""
    first = end
    for plan in plans:
        if plan is not None and not plan.unread:
            mi = plan.loc[0]
            first = min(first, mi, plan.call_loc[0] if plan.call_saved and plan.call_loc else mi)
    return first
