"""The clairvoyant optimum of a policy's own family, for replays.

Given a whole trace, which results should have been cleared, and which old messages
dropped, at which request, knowing the future, to pay the least? The family is the
policy's: the same result edits (selections, caps), the same ``keep_rounds`` and window,
results cleared round by round from the oldest and never brought back (monotone), the
newest rounds untouched, and, only at a request that clearing every eligible round cannot
fit in the window, units dropped from the oldest after the head, as the window's overflow
drops them (a round with all its results, or one message outside rounds), never brought
back. Reasoning items go with their round under ``clear_reasoning``, and those of an answer
with the round before it.

A state of a request is ``(b, c)``: the oldest ``b`` units dropped and the oldest ``c``
rounds cleared (the rounds inside dropped units count as cleared), any pair that fits the
window (:mod:`ctxwin._optimum_states` makes each request's states and the sums over the
layout they use). A dynamic programme over the requests finds the cheapest schedule exactly, in
O(units x rounds) per request: from ``(b, p)`` to ``(b, c)`` (no drop) the cache holds up to
the first message the new clearings change, which, as rounds follow one another, depends on
``p`` alone, so a running minimum over ``p`` serves every ``c``; a drop keeps only the head
cached, whatever came before, so the cheapest predecessor of every ``(b, c)`` is a prefix
minimum over ``(b' < b, p <= c)``. (A trace whose rounds change messages out of order is
solved by the same recurrence without the running minimum, in O(units x rounds²).)

Where the provider drops the reasoning items of earlier turns (OpenAI), each message of the
user's own that leaves some behind starts a frame (:mod:`ctxwin._layout`): the requests
after it are laid out without them, and the first request of a frame reads from the cache
of the one before only up to the first of them that request read (:func:`_same_row_turn`,
in O(units x rounds²): new turns are few). Where a drop or clearing of the request before
runs past that point, what it took off after it is counted as read: the optimum stays a
lower bound. The window, which looks after each message, still counts those items until the
user's message is in, so it may have had to drop before it: so may the family.

The window never drops the latest user message: where its drops pass it, it stays in
place right after the head (with the round whose thinking opens its turn, where the
provider requires one first), and the requests after its next drop read it from the cache
with the head. So a state also says whether the units dropped hold the last user message
among them in place (:attr:`.Tables.held`), ``(b, c, h)``, sized with it: a drop into a
state that holds it reads it with the head where the request before had it right after the
head too (it had dropped all before it, or held it: two more running minima), and comes
only from a state that had not dropped it. The user's latest words sent after a round's
results in their message (Anthropic, Gemini), which a drop of their round keeps where they
were as a message of their own, are held so too, after that message (:attr:`.Tables.words`):
sized by the words alone, never cleared, and read with the head only where the request
before held the same words (a third running minimum), as no other request has them so;
only while they are the latest the user said (:meth:`.Tables.words_at`: once the user
speaks again, the window's next drop takes them; until then the family's state holds
them no more, and reads as though they were in: a relaxation; a state that held them alone
stays a state ``h`` 1 holding nothing, reached without a drop from those that held them,
so the window's own schedule stays one of the family's). Where holding them cannot
fit the window, the state that drops all it may is kept over it, as the window is there.
Relaxations remain, so that the optimum stays a lower bound: the family may drop that
message and those words all the same (``h`` 0), may drop wherever the window may have had
to because it held them (:attr:`.Tables.kept_text`, the unit of the last user message among
the units dropped and the words after it: the only ones the window can hold through drops),
and reads a request from the cache where the window's would be long enough to cache with
the round it holds not cleared; a held round not right after the message is read as in
place. (Before, the family held nothing and read the head alone after a drop: a chat with a
long instruction mid-way came out at 0.676x the optimum.)
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from ctxwin._layout import Layout, frame_of, layout
from ctxwin._optimum_states import Step, Tables, new_step
from ctxwin._policy.tables import Pricing

__all__ = ["Layout", "OptimumRequest", "layout", "optimum", "prefix_optima"]

_INF = float("inf")


@dataclass(frozen=True, slots=True)
class OptimumRequest:
    """One request of the optimal schedule: its tokens, what was read from the cache, and
    how many of the oldest rounds were cleared and dropped."""

    input_tokens: int
    cached_tokens: int
    cleared_rounds: int
    dropped_rounds: int = 0
    dropped_units: int = 0
    held: bool = False
    """Whether the units dropped hold the last user message among them in place, right
    after the head, as the window's drops keep it (:attr:`.Tables.held`)."""


def optimum(
    lay: Layout,
    points: list[int],
    pricing: Pricing,
    keep_rounds: int,
    window: int,
    ceilings: Sequence[float] | None = None,
    *,
    deepest_drops: bool = False,
) -> list[OptimumRequest]:
    """The cheapest schedule over the requests at ``points`` (message counts).

    ``ceilings`` (one per request) bounds what the conversation ending at each request may
    have cost: the cheapest schedule every prefix of which stays within its ceiling. A
    state's cost is the least any schedule pays to reach it, and a cheaper past is never
    worse for a later ceiling, so dropping the states above a ceiling keeps the programme
    exact. A request where no state is within its ceiling is left unbounded (no schedule
    of the family meets it).

    ``deepest_drops`` narrows the family to drops that take every unit outside the newest
    rounds, as the window's do by default under ``cost`` (``window.drop_target`` 0). The
    family may drop less, and so make a later request one that clearing cannot fit, where
    it may drop again instead of re-writing a clearing: a measurement of how much of a gap
    is that timing (``benchmarks/cost_window.py --deep-drops``), not the optimum."""
    t, steps = _solve(lay, points, pricing, keep_rounds, window, ceilings, deepest_drops)
    return _schedule(t, steps, pricing)


def prefix_optima(
    lay: Layout, points: list[int], pricing: Pricing, keep_rounds: int, window: int
) -> list[float]:
    """What the optimum pays for each conversation the trace contains: the one ending at
    each request of ``points``. The programme's cheapest state at a request is that
    conversation's optimum, since no request before it depends on what comes after."""
    _, steps = _solve(lay, points, pricing, keep_rounds, window, None, False)
    return [min(step.cost) for step in steps]


def _solve(
    lay: Layout,
    points: list[int],
    pricing: Pricing,
    keep_rounds: int,
    window: int,
    ceilings: Sequence[float] | None,
    deepest_drops: bool,
) -> tuple[Tables, list[Step]]:
    """The programme's states, request by request (see :func:`optimum`)."""
    t = Tables(lay, keep_rounds)
    steps: list[Step] = []
    for n in points:
        frame = frame_of(lay, n)
        if frame is not t.lay:  # a new turn: what the provider drops counts nothing now
            t = Tables(frame, keep_rounds, t)
        step = new_step(t, n, keep_rounds, window)
        if steps:
            _advance(steps[-1], step, pricing, window, deepest_drops)
        else:
            drop, most = t.must_drop(0, n, 0, window), step.deepest()
            for j, size in enumerate(step.sizes):
                h, b, _ = step.state(j)
                deep = not deepest_drops or b == most  # drops all it may
                if step.entered(j) and ((b, h) == (0, 0) or (drop and deep)):
                    step.cost[j] = pricing.cache_write * size
        if ceilings is not None:
            _bound(step, ceilings[len(steps)])
        steps.append(step)
    return t, steps


def _bound(step: Step, ceiling: float) -> None:
    """Rule out the states that cost more than ``ceiling`` to reach, unless all do."""
    if min(step.cost) <= ceiling:
        step.cost = [cost if cost <= ceiling else _INF for cost in step.cost]


class _Pool:
    """Per ``c``, the cheapest state of the rows of a step added so far with ``p <= c`` (a
    running minimum), and its flat index."""

    def __init__(self, width: int) -> None:
        self.best, self.came = [_INF] * width, [-1] * width

    def add(self, prev: Step, start: int) -> None:
        """Add the row of ``prev`` that begins at flat index ``start``."""
        low, at, pw = _INF, -1, prev.width
        for c in range(len(self.best)):
            if c < pw and prev.cost[start + c] < low:
                low, at = prev.cost[start + c], start + c
            if low < self.best[c]:
                self.best[c], self.came[c] = low, at

    def copy(self) -> _Pool:
        out = _Pool(0)
        out.best, out.came = list(self.best), list(self.came)
        return out


_Row = tuple[list[float], list[int]]
"""Per ``c``, the cheapest way into a state (its cost less what the cache saves) and the
flat index of the state it comes from."""


def _cheaper(*pools: tuple[_Pool, float]) -> _Row:
    """Per ``c``, the cheapest of ``pools``, each less its credit (the first on a tie)."""
    width = len(pools[0][0].best)
    value, came = [_INF] * width, [-1] * width
    for pool, credit in pools:
        for c, (x, i) in enumerate(zip(pool.best, pool.came, strict=True)):
            if x - credit < value[c]:
                value[c], came[c] = x - credit, i
    return value, came


def _advance(prev: Step, step: Step, pricing: Pricing, window: int, deepest: bool) -> None:
    """The cheapest way into each state of ``step`` from a state of ``prev`` (with
    ``deepest``, a drop only into the most units it may drop).

    A drop reads the head from the cache; into a state holding units in place, the head
    and them where the request before had them right after the head too: in the state that
    dropped all the units before them, or holding them (:func:`_drop_read`), and the user's
    words held with them where it held the same words. A state holding units comes only
    from one that had not dropped them (never brought back)."""
    t, gain, floor = step.t, pricing.cache_write - pricing.cache_read, pricing.min_prefix
    after_drop = gain * (t.head if t.head >= floor else 0)
    width, pw, ph = step.width, prev.width, prev.half
    pool = _Pool(width)  # the states (b' < b, either) that may drop
    before = _Pool(width)  # those of them that did not drop the first unit held
    in_place = _Pool(width)  # those of them that have the units held right after the head
    same, said = _Pool(width), -1  # those of them holding the same words, and which
    most = step.deepest() if deepest else -1
    for b in range(step.units + 1):
        gated = b <= prev.units and _must_drop(prev, step, b, window)
        deep = not deepest or b == most
        if t.words_at(b, step.n)[0] != said:
            same, said = _Pool(width), t.words_at(b, step.n)[0]
        if t.holds_at(b, step.n):
            units, words = (gain * t.held_read(b, prev.n, floor, w) for w in (False, True))
            into = _cheaper((before, after_drop), (in_place, units), (same, words))
            _into_row(step, prev, b, 1, into if deep else None, pricing)
        elif t.holds[b]:  # words the user spoke after: from the states that held them alone
            _into_row(step, prev, b, 1, None, pricing)
        own = _Pool(width)  # holding units, the request before may drop them alone
        if gated:
            own.add(prev, ph + b * pw)
        into = _cheaper((pool, after_drop), (own, after_drop))
        _into_row(step, prev, b, 0, into if deep else None, pricing)
        if gated:
            pool.add(prev, b * pw)
            pool.add(prev, ph + b * pw)
            if said >= 0:
                same.add(prev, ph + b * pw)
        if b in t.keys:  # the first unit some later states hold: the states before it
            before, in_place = pool.copy(), _Pool(width)
            if gated:
                in_place.add(prev, b * pw)
        elif gated and t.holds_at(b, prev.n):  # holding the same first unit
            in_place.add(prev, ph + b * pw)


def _into_row(step: Step, prev: Step, b: int, h: int, drops: _Row | None, pricing: Pricing) -> None:
    """The states ``(b, c)`` of ``step`` holding units in place (``h`` 1) or not: from the
    same of ``prev`` without a drop, or by ``drops``."""
    t, width = step.t, step.width
    gain, floor = pricing.cache_write - pricing.cache_read, pricing.min_prefix
    extra = t.holds_at(b, step.n) if h else 0
    same = None
    if b <= prev.units:
        row = _same_row if prev.t is t else _same_row_turn
        relax = t.kept_text[b] - extra if h else 0  # what the window holds, not cleared: its
        # rounds, and words it has not dropped yet since the user spoke again (words_at)
        gone = _gone(t, prev, b, step.n) if h else 0
        same = row(t, prev, b, width, gain, floor - relax, h * prev.half, extra, gone)
    at = h * step.half + b * width
    for c in range(t.rounds_in[b], width):
        j = at + c
        size = step.sizes[j]
        if size < 0:
            continue
        if same is not None and same[0][c] < step.cost[j]:
            step.cost[j], step.back[j] = same[0][c], same[1][c]
        if drops is not None and drops[0][c] < step.cost[j]:
            step.cost[j], step.back[j] = drops[0][c], drops[1][c]
        step.cost[j] += pricing.cache_write * size


def _gone(t: Tables, prev: Step, b: int, n: int) -> int:
    """The tokens of the user's words the states of ``prev`` of ``b`` units holding units
    in place held, and those of the request of ``n`` messages no longer hold (see
    :meth:`Tables.words_at`): the cache of the request before is read without them."""
    return prev.t.words_at(b, prev.n)[1] - t.words_at(b, n)[1] if b <= prev.units else 0


def _drop_read(t: Tables, prev: Step, i: int, h: int, b: int, n: int, floor: int) -> int:
    """What a request in a state of ``b`` units dropped (``h`` 1: holding units in place)
    reads from the cache after a drop from state ``i`` of the one before, itself of ``n``
    messages: the head, and the units held where it held them right after the head too
    (the words held, where it held the same)."""
    hp, bp, _ = prev.state(i)
    if h:
        first = t.first[b]
        if (hp, bp) == (0, first) or (hp and bp > first and t.first[bp] == first):
            said = t.words_at(b, n)[0]
            words = bool(hp) and t.words_at(bp, prev.n)[0] == said >= 0
            return t.held_read(b, prev.n, floor, words)
    return t.head if t.head >= floor else 0


def _must_drop(prev: Step, step: Step, b: int, window: int) -> bool:
    """:meth:`Tables.must_drop` between the requests of ``prev`` and ``step``, each
    message seen in the frame the window saw it in (a new one from the message of the
    user's own that starts it)."""
    t = step.t
    if prev.t is t:
        return t.must_drop(prev.n, step.n, b, window)
    u = t.lay.start
    return prev.t.must_drop(prev.n, u, b, window) or t.must_drop(u, step.n, b, window)


def _same_row(
    t: Tables,
    prev: Step,
    b: int,
    width: int,
    gain: float,
    floor: int,
    off: int,
    extra: int,
    gone: int = 0,
) -> _Row:
    """For each ``c``, the cheapest predecessor ``(b, p <= c)`` (its cost less what the
    cache saves) and its flat index in ``prev`` (its row from ``off + b * width``, holding
    ``extra`` tokens in place after the head; ``gone``: the tokens of words it held that
    are no longer held, :func:`_gone`, which the sums here leave out as they are)."""
    if not t.ordered:
        return _same_row_any(t, prev, b, width, gain, floor, off, extra, gone)
    lay, pw = t.lay, prev.width
    prefix, n_prev, first, nxt = lay.prefix, prev.n, lay.first, t.next_first
    base = t.dropped[b] - t.cum[t.rounds_in[b]] - extra
    value, came = [_INF] * width, [-1] * width
    at = off + b * pw
    # p in (q, c], no change since: cached = all of prev; p <= q: cached up to nx(p)'s first
    m1, a1, m2, a2, m2c, a2c = _INF, -1, _INF, -1, _INF, -1
    for c in range(t.rounds_in[b], width):
        if c < pw and prev.cost[at + c] < _INF:
            here, kept = prev.cost[at + c], base + t.cum[c]
            whole = prefix[n_prev] - kept
            v2 = here - gain * (whole if whole >= floor else 0)
            f = nxt[c]
            upto = prefix[min(f, n_prev)] - kept if f is not None else whole
            v1 = here - gain * (upto if upto >= floor else 0)
            if v2 < m2:
                m2, a2 = v2, at + c
            if v1 < m2c:
                m2c, a2c = v1, at + c
        value[c], came[c] = (m1, a1) if m1 <= m2 else (m2, a2)
        if c < len(first) and first[c] is not None:
            if m2c < m1:
                m1, a1 = m2c, a2c
            m2, a2, m2c, a2c = _INF, -1, _INF, -1
    return value, came


def _same_row_any(
    t: Tables,
    prev: Step,
    b: int,
    width: int,
    gain: float,
    floor: int,
    off: int,
    extra: int,
    gone: int = 0,
) -> _Row:
    """:func:`_same_row` for rounds that change messages out of order: every ``p``."""
    pw, value, came = prev.width, [_INF] * width, [-1] * width
    at = off + b * pw
    for c in range(t.rounds_in[b], width):
        for p in range(min(c, pw - 1), t.rounds_in[b] - 1, -1):
            here = prev.cost[at + p]
            if here == _INF:
                continue
            v = here - gain * _cached(t, prev, at + p, c, floor, extra, gone)
            if v < value[c]:
                value[c], came[c] = v, at + p
    return value, came


def _cached(t: Tables, prev: Step, i: int, c: int, floor: int, extra: int, gone: int = 0) -> int:
    """What the request in state ``(b, c)`` reads from the cache of the previous one, in
    its state ``i`` of the same ``b`` (holding ``extra`` tokens in place or not): the
    previous prefix up to the first message the change touches (without the ``gone``
    tokens of words it held that this one does not)."""
    _, b, p = prev.state(i)
    whole = prev.sizes[i] - gone
    changed = [f for f in t.lay.first[p:c] if f is not None]
    if not changed:
        cached = whole
    else:
        at = min(min(changed), prev.n)
        cached = min(t.lay.prefix[at] - t.cut(b, p) + extra, whole)
    return cached if cached >= floor else 0


def _same_row_turn(
    t: Tables,
    prev: Step,
    b: int,
    width: int,
    gain: float,
    floor: int,
    off: int,
    extra: int,
    gone: int = 0,
) -> _Row:
    """:func:`_same_row` into a new frame: every ``p``, what is read from the cache ending
    at the frame's cap (:func:`_capped`). A new turn comes seldom."""
    pw, value, came, lo = prev.width, [_INF] * width, [-1] * width, t.rounds_in[b]
    first, at = t.lay.first, off + b * pw
    caps = [min(prev.n, t.cap(b, p)) for p in range(min(width, pw))]
    for c in range(lo, width):
        changed = prev.n
        for p in range(c, lo - 1, -1):
            f = first[p] if p < c else None
            changed = min(changed, f) if f is not None else changed
            if p >= pw or prev.cost[at + p] == _INF:
                continue
            i, x = at + p, min(changed, caps[p])
            v = prev.cost[i] - gain * _capped(t, b, p, x, prev.sizes[i] - gone, floor, extra)
            if v < value[c]:
                value[c], came[c] = v, i
    return value, came


def _capped(t: Tables, b: int, p: int, x: int, whole: int, floor: int, extra: int = 0) -> int:
    """What a request reads from the cache of the previous one, in state ``(b, p)`` of
    ``whole`` tokens (holding ``extra`` in place or not), up to message ``x``: its first
    ``x`` messages less what its drops and clearings took off them, counting only the
    units and rounds that end before ``x`` (one that runs past it is taken as kept: read a
    little more, the optimum stays a lower bound)."""
    units = min(b, bisect_left(t.lay.unit_end, x))
    lo, rounds = t.rounds_in[b], min(p, t.ended(x))
    cut = t.dropped[units] + (t.cum[rounds] - t.cum[lo] if rounds > lo else 0)
    cached = min(t.lay.prefix[x] - cut + extra, whole)
    return cached if cached >= floor else 0


def _cached_turn(
    t: Tables, prev: Step, i: int, c: int, floor: int, extra: int, gone: int = 0
) -> int:
    """:func:`_cached` into a new frame: the cache ends at the frame's cap."""
    _, b, p = prev.state(i)
    changed = [f for f in t.lay.first[p:c] if f is not None]
    x = min([*changed, prev.n, t.cap(b, p)])
    return _capped(t, b, p, x, prev.sizes[i] - gone, floor, extra)


def _schedule(t: Tables, steps: list[Step], pricing: Pricing) -> list[OptimumRequest]:
    last = steps[-1].cost
    j = min(range(len(last)), key=lambda i: last[i])
    picks = [j]
    for step in reversed(steps[1:]):
        j = step.back[j]
        picks.append(j)
    picks.reverse()
    out: list[OptimumRequest] = []
    floor = pricing.min_prefix
    for k, (step, j) in enumerate(zip(steps, picks, strict=True)):
        h, b, c = step.state(j)
        tk, cached = step.t, 0
        if k:
            prev, i = steps[k - 1], picks[k - 1]
            if prev.state(i)[:2] != (h, b):  # a drop
                cached = _drop_read(tk, prev, i, h, b, step.n, floor)
            else:
                extra = tk.holds_at(b, step.n) if h else 0
                relax = tk.kept_text[b] - extra if h else 0
                read = _cached if prev.t is tk else _cached_turn
                gone = _gone(tk, prev, b, step.n) if h else 0
                cached = read(tk, prev, i, c, floor - relax, extra, gone)
        out.append(OptimumRequest(step.sizes[j], cached, c, t.rounds_in[b], b, bool(h)))
    return out
