"""The window's fold: which results are cleared and which old rounds dropped, message by
message, resumable.

The history is replayed message by message. Each time the running total is over
``window.trigger`` and the clearable results (outside the newest ``keep_rounds`` rounds, not
``window: keep``) would save at least the band between trigger and target, the oldest are
replaced by their placeholder until the total is under ``window.target`` (under ``strategy:
cost``, all of them) — in one jump, so the boundary moves rarely (see :func:`advance`). If
the total is still over ``context_window``, whole units (a round with its results, or a
plain message) are dropped from the oldest, down to ``window.drop_target`` (``overflow:
drop_oldest_rounds``; under ``strategy: cost`` every unit outside the kept rounds by
default, and the drop goes on through the rest of its request).

Where the provider drops the reasoning items of earlier turns (OpenAI), a message of the
user's own stops counting them, and the previous request's cache holds only up to the first
of them (:meth:`FoldState.user_spoke`): the cost rule sees that a jump then re-writes little.

Each edit is made once, as an :class:`~ctxwin._core.records.Edit` kept in the state: the
window logs it when it is new and lists it in every request's report.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import Memo
from ctxwin._core.model import (
    ToolResult,
    is_plain_text,
    is_reasoning_item,
    is_user_text,
    opens_turn,
    speaks,
)
from ctxwin.steps._base import Context, Limits
from ctxwin.steps._binding import held, holds_turn, unbind
from ctxwin.steps._clearing import jump, plan_result
from ctxwin.steps._drops import NONE, late, overflow
from ctxwin.steps._foldstate import (
    SHORT_ARGUMENT,
    FoldState,
    Plan,
    first_changed,
    shorten_arguments,
)
from ctxwin.steps._late import Late, take_in
from ctxwin.steps._reasoning import answer_reasoning, round_tied
from ctxwin.steps._rent import (
    AHEAD_AT_LEAST,
    affordable,
    ahead,
    buy,
    charge,
    going_on,
    head_loss,
    price,
    request_sent,
    user_soon,
)

__all__ = ["SHORT_ARGUMENT", "FoldState", "advance", "band_of", "shorten_arguments"]


def advance(
    st: FoldState,
    conv: Conversation,
    ctx: Context,
    rebuilt: Memo,
    whole: Late | None = None,
    marks: tuple[Collection[int], Callable[[int], None]] | None = None,
) -> None:
    """Fold ``conv.messages[len(st.messages):]`` into ``st``; ``whole``: the results the
    steps before edited after requests sent them whole, taken in where they were
    (:mod:`~._late`); ``marks``: the positions where the state, before the message there,
    is given to a callback (to keep a copy: see ``Window``).

    After each message, two rules may start a jump:

    - the ceiling: when the total is over ``trigger`` and clearing the eligible items would
      save at least the band (``trigger - target``), the oldest are cleared until the total
      is under ``target`` (under ``strategy: cost``, every one of them: the jump re-writes
      from the oldest whatever it clears after it); a smaller saving waits (clearing a
      little on every request would break the prompt cache every turn). Over
      ``context_window`` the window clears whatever it can, then drops whole units from the
      oldest (under ``cost``, through the rest of the request: :func:`~._drops.overflow`);
    - under ``strategy: cost``, rent or buy (:func:`_buys`): all the eligible items are
      cleared in one jump once what their cache reads have cost reaches what clearing them
      would re-write.

    Both look only at the history so far and are monotone (a request the window edited
    never triggers a jump its original did not): the policy leaves its own output as is.
    """
    cfg = ctx.config
    w = cfg.window
    drop = cfg.overflow == "drop_oldest_rounds"
    cost = w.strategy == "cost"
    messages = conv.messages
    bound = w.max_overrun if cost else None
    start, given = len(st.messages), conv
    if whole:
        conv = whole.view(given, start)  # as the requests up to here sent it
        if bound is not None:
            whole.count_saved(ctx, conv, start)
    shrunk = _shrunk_by_steps(ctx, conv, start, whole) if bound is not None else {}
    at, mark = marks if marks is not None else ((), None)
    for k in range(start, len(messages)):
        if mark is not None and k in at:
            mark(k)
        limits = ctx.limits(k)
        trigger, target, window = limits.trigger, limits.target, limits.context_window
        if cost and k and messages[k].role == "assistant" and messages[k - 1].role != "assistant":
            request_sent(st, k, limits, bound or 0.0)  # a request was sent before this turn
        if whole and k in whole.at:
            conv = take_in(st, whole, given, k, ctx, rebuilt)
        _enter(st, conv, k, ctx)
        st.entered.append(st.requests)
        index = messages[k].index
        st.edited += shrunk.get(index, 0) if index is not None else 0
        boundary = len(st.round_start) - w.keep_rounds
        over = st.total > window
        _admit(st, conv, ctx, boundary, cost, over)
        if st.savings and ((st.total > trigger and st.savings >= band_of(limits)) or over):
            # under cost, every eligible result: the re-write starts at the oldest whatever
            # the jump clears after it, and one left behind could be cleared by the rule on
            # the policy's own output, where the oldest stand cleared already and a jump is cheap
            made = jump(st, conv, ctx, -1 if cost else target, rebuilt)
            if cost:
                charge(st, made, limits)
        elif cost and st.savings and _goes_on(st):
            charge(st, jump(st, conv, ctx, -1, rebuilt, again=True), limits)  # no more re-written
        elif cost and _buys(st, conv, ctx, limits, boundary, bound, w.overrun_grace):
            charge(st, jump(st, conv, ctx, -1, rebuilt), limits)  # all of them
        unbind(st, conv, ctx)  # the thinking a jump invalidated: sent no more
        _overflow(st, conv, k, limits, ctx, cost, drop)
        unbind(st, conv, ctx)
    st.messages = messages


def _buys(
    st: FoldState,
    conv: Conversation,
    ctx: Context,
    limits: Limits,
    boundary: int,
    bound: float | None,
    grace: int,
) -> bool:
    """Whether rent or buy makes a jump after this message.

    Under ``strategy: cost``, rent or buy: every request re-reads the eligible results at
    the cache-read price (their rent, added up since each became eligible); when the
    rent, plus the rent they would cost over the next requests (a tenth as many as were
    sent so far, and five at least: a long conversation is likely to run on), reaches the
    price of clearing them — what the previous request sent after the newest of them
    (re-written by every jump), plus a quarter of what it sent between the first and the
    newest (re-written by whichever jump clears them; see :func:`~._rent.price`), plus
    what comes before the first when that is too short for the provider to cache on its
    own (:func:`~._rent.head_loss`: nothing before the change is read then) — they
    are all cleared in one jump, unless the round next to leave the kept rounds saves
    more than the request adds (a jump a request later would cost less), or would soon
    be worth a jump of its own and that jump would cost more than one more request of
    rent: then the jump waits for it, and clears both (see :func:`_wait`); it waits for
    the user's next message (:func:`_waits`) when that is likely soon where the provider
    drops earlier turns' reasoning, or when it would break the thinking the current turn
    opens with. Such a jump is not made when what it would leave is under the provider's
    minimum cacheable prefix (nothing after it would be cached), nor when, were the
    conversation to end with it (or
    ``window.overrun_grace`` requests after it, in the agent's longer runs), the bill
    would be more than ``window.max_overrun`` above the unedited one, less what earlier
    jumps have saved since (:func:`~._rent.affordable`). A jump goes on through its
    request: what becomes eligible later in it, after its first change, is cleared too
    (:func:`~._rent.going_on`).
    """
    if not st.savings or not _cached_after(st, limits) or (st.binds and held(st)):
        return False
    first, last = _span(st)  # worked out once for the price and the bound
    return (
        st.rent + ahead(st.savings, st.requests, limits)
        >= price(st.cur, st.sent, first, last, st.savings, limits) + head_loss(st, first, limits)
        and not _wait(st, conv, ctx, limits, boundary)
        and not _waits(st, first, limits)
        and (bound is None or affordable(st, limits, bound, first, grace))
    )


def _waits(st: FoldState, first: int, limits: Limits) -> bool:
    """Whether a jump by choice changing message ``first`` on waits for the user's next
    message: where the provider drops earlier turns' reasoning, when that message is likely
    soon (:func:`~._rent.user_soon`); where the model checks the prefix of the thinking sent
    back, when the jump would invalidate the thinking the current turn opens with
    (:func:`~._binding.holds_turn`)."""
    return user_soon(st, first, limits) or holds_turn(st, first)


def _overflow(
    st: FoldState, conv: Conversation, k: int, limits: Limits, ctx: Context, cost: bool, drop: bool
) -> None:
    """Overflow drops after message ``k`` (``overflow: drop_oldest_rounds``), and what that
    dropped (or :func:`_enter` cut) recorded as a change thinking may be bound to."""
    if drop:
        overflow(st, conv, k, limits, ctx, cost)
    if k in st.cut or len(st.dropped_set) != len(st.drops_seen):
        st.note_drops(k)


def _admit(
    st: FoldState, conv: Conversation, ctx: Context, boundary: int, cost: bool, over: bool
) -> None:
    """The items of the rounds before ``boundary`` (out of the kept rounds now) become
    eligible, with their plans, unless they cannot be cleared. ``over`` the context window,
    so do the results that came late whose call's round is out of the kept rounds: cleared,
    the model reads their placeholder, where a drop would have taken them with their call
    (``_drops.drop``: an old round with its late output)."""
    if over and any(rr < boundary for rr in st.came_late.values()):
        late: list[tuple[int, int, int]] = []
        rest: list[tuple[int, int, int]] = []
        for i in st.pending:  # one pass (``i not in late`` was one scan of it per item)
            (late if st.came_late.get(i[1:], boundary) < boundary else rest).append(i)
        st.pending = rest
        heapq.heapify(st.pending)
        for item in late:
            _eligible(st, conv, ctx, item, cost)
    while st.pending and st.pending[0][0] < boundary:
        _eligible(st, conv, ctx, heapq.heappop(st.pending), cost)


def _eligible(
    st: FoldState, conv: Conversation, ctx: Context, item: tuple[int, int, int], cost: bool
) -> None:
    """A queued item becomes eligible with its plan, unless it cannot be cleared."""
    st.came_late.pop(item[1:], None)
    plan = st.planned.pop(item, None) if not _gone(st, item) else None
    plan = plan if plan is not None else _plan(st, conv, item, ctx)
    if plan is not None:
        heapq.heappush(st.eligible, item)
        st.plans[plan.loc] = plan
        if cost:  # requests are counted (and rent paid) only under cost
            st.since[plan.loc] = st.requests
        st.savings += plan.saves


def _shrunk_by_steps(
    ctx: Context, conv: Conversation, start: int, whole: Late | None
) -> dict[int, int]:
    """Tokens the steps before the window took off each message from ``start`` on (by its
    index), as it enters: an edit that comes in later (``whole``) counts from there. Their
    edits come in message order, so only the newest are looked at."""
    out: dict[int, int] = {}
    for p, saved in whole.saved.items() if whole else ():
        index = conv.messages[p].index
        if p >= start and index is not None:
            out[index] = -saved
    first = next((m.index for m in conv.messages[start:] if m.index is not None), None)
    if first is None:
        return out
    for edit in reversed(ctx.edits):
        index = edit.message_index
        if index is None:
            continue
        if index < first:
            break
        out[index] = out.get(index, 0) + edit.saved
    return out


def _cached_after(st: FoldState, limits: Limits) -> bool:
    """Whether the request a jump would leave is still long enough to cache (below the
    provider's minimum, every later read would be a write), or there is no cache to lose.
    The current turn's reasoning counts, though where the provider drops earlier turns'
    reasoning the user's next message takes it away, perhaps later in this very request:
    not counting it blocked jumps all through long turns, and cost more than the small
    requests it would leave uncached (review s48-1, finding 4)."""
    return limits.cache_read >= limits.cache_write or st.total - st.savings >= limits.min_prefix


def band_of(limits: Limits) -> int:
    """The hysteresis band: the smallest jump the ceiling makes."""
    return limits.trigger - limits.target


def _span(st: FoldState) -> tuple[int, int]:
    """The first message clearing every eligible item changes, and the one after the last
    of them."""
    plans = [st.plans.get((mi, bi)) for _, mi, bi in st.eligible]
    last = max((p.loc[0] for p in plans if p is not None and not p.unread), default=-1) + 1
    return first_changed(plans, len(st.cur)), last


def _goes_on(st: FoldState) -> bool:
    """Whether clearing every eligible item goes on through the request of the latest
    jump (:func:`~._rent.going_on`; the span is only worked out in such a request)."""
    return st.jump_request == st.requests and going_on(st, _span(st)[0])


def _wait(st: FoldState, conv: Conversation, ctx: Context, limits: Limits, boundary: int) -> bool:
    """Whether to put a jump off until the round next to leave the kept rounds is eligible,
    to clear it in the same jump:

    - when that round saves more than this request adds (what a jump made a request later
      re-writes beyond this one's), by more than one more request of rent: the later jump
      costs less and clears more. Measured on traces the rule was not set on (stop 31 in
      ``benchmarks/README.md``);
    - or when that round would soon be worth a jump of its own (its rent over the next
      :data:`~._rent.AHEAD_AT_LEAST` requests pays for it) and its jump would cost more
      than one more request of rent.

    "Soon" does not grow with the requests sent so far, unlike :func:`~._rent.ahead`: a
    history that lost its oldest rounds to a drop and comes back (the policy applied to its
    own output) has sent fewer requests, and must not find a jump less worth waiting for
    than the first time did."""
    items = [item for item in st.pending if item[0] == boundary]
    if st.next_round[:2] != (boundary, len(items)):  # worked out once per round
        plans = [_plan(st, conv, item, ctx) for item in items]
        st.planned = dict(zip(items, plans, strict=True))
        saves = sum(plan.saves for plan in plans if plan is not None)
        st.next_round = (boundary, len(items), saves, first_changed(plans, len(st.cur)))
    saves, first = st.next_round[2:]
    if not saves:
        return False
    rent = limits.cache_read * st.savings
    grown = st.total - st.cur.prefix(st.sent)  # re-written by a jump a request later
    if rent + (limits.cache_write - limits.cache_read) * (grown - saves) < 0:
        return True
    cost = buy(st.cur, st.sent, first, saves, limits)
    soon = limits.cache_read * saves * AHEAD_AT_LEAST  # not by requests: see the docstring
    return soon >= cost and rent < cost


def _enter(st: FoldState, conv: Conversation, k: int, ctx: Context) -> None:
    """Message ``k`` joins the fold: counted, and its results queued by round: the round
    of their call, or the latest round when they come after it (a Responses output may come
    long after its call): the model reads a result whole at least once, as it reads those
    of the kept rounds, and one that came late becomes eligible when the round it came in
    leaves them, or, over ``context_window``, as its call's round (:func:`_admit`).

    Only what ``messages[: k + 1]`` says is used, so that a fold resumed from a shorter
    request decides exactly as a fresh one: a round counts from its first call (reasoning
    items before it in the same turn join it then).
    """
    msg = conv.messages[k]
    pairing = conv.pairing
    t = ctx.message_tokens(msg)
    st.out.append(msg)
    st.cur.append(t)
    st.total += t
    cut = late(st, conv, k, ctx) if st.dropped_set else NONE  # tied to a dropped call
    reasoning = ctx.config.window.clear_reasoning
    r = pairing.round_of_message.get(k)
    if r is not None and r == len(st.round_start) and msg.tool_calls:
        start = pairing.rounds[r].start
        st.round_start.append(start)
        for j in range(start, k) if reasoning else ():
            if is_reasoning_item(conv.messages[j]):
                heapq.heappush(st.pending, (r, j, -1))
    if reasoning and st.round_start and msg.role != "assistant":
        for j in answer_reasoning(conv, k):  # the answer before it is over: no call joins it
            heapq.heappush(st.pending, (len(st.round_start) - 1, j, -1))
    drops = ctx.meter.overheads.drops_earlier_reasoning
    if drops and is_reasoning_item(msg):
        st.turn_reasoning.append(k)
    if is_user_text(msg):
        if drops:
            st.user_spoke()
        if st.head_end < 0:
            st.head_end = k
            st.drop_ptr = k + 1
        st.last_user_text = st.last_words = k
        st.turn_open = -2 if conv.rules.turn_openers else -1
    elif speaks(msg):
        st.last_words = k  # words after results: the turn goes on, but a drop keeps them
    elif st.turn_open == -2 and msg.role == "assistant":
        st.turn_open = k if opens_turn(msg, conv.rules) else -1
    elif st.head_end < 0 and (msg.role == "system" or _opens(conv, k, st.drop_ptr)):
        st.drop_ptr = k + 1
    for bi, block in enumerate(msg.blocks):
        if isinstance(block, ToolResult) and bi not in cut:
            call = pairing.call_of.get((k, bi))
            rr = pairing.round_of_message.get(call[0]) if call is not None else None
            if rr is not None:  # one that came late waits as the round it came in does
                now = len(st.round_start) - 1
                if now > rr:
                    st.came_late[(k, bi)] = rr
                heapq.heappush(st.pending, (max(rr, now), k, bi))
    if reasoning and r is not None and r < len(st.round_start) and is_reasoning_item(msg):
        heapq.heappush(st.pending, (r, k, -1))  # -1: the whole item


def _opens(conv: Conversation, k: int, drop_ptr: int) -> bool:
    """Message ``k`` is plain text right after the system messages, with no message of the
    user's own before it: it holds the task, and drops keep it (``_layout._drop_start``)."""
    first = k == drop_ptr and (k == 0 or conv.messages[k - 1].role == "system")
    return first and is_plain_text(conv.messages[k])


def _gone(st: FoldState, item: tuple[int, int, int]) -> bool:
    """Whether a drop took the item: its message, or its result from the message where the
    user's words stay (:mod:`~._words`)."""
    return item[1] in st.dropped_set or item[2] in st.cut.get(item[1], NONE)


def _plan(
    st: FoldState, conv: Conversation, item: tuple[int, int, int], ctx: Context
) -> Plan | None:
    """What clearing an item would do, or None when it cannot be cleared (its tool keeps
    its results, its placeholder is not shorter, its reasoning is tied to its calls)."""
    r, mi, bi = item
    if _gone(st, item):
        return None
    if bi < 0:  # a reasoning item of the round, or of an answer after it (not tied)
        in_round = conv.pairing.round_of_message.get(mi) is not None
        if in_round and round_tied(conv, r):
            return None
        # of an earlier turn, the provider drops it (FoldState.user_spoke): it goes, saving nothing
        return Plan((mi, -1), st.cur[mi], unread=not st.cur[mi])
    return plan_result(conv, mi, bi, ctx)
