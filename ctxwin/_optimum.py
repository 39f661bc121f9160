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

One relaxation: the window never drops the latest user message; the family may, may drop
wherever the window may have had to because it kept one, and reads a request from the cache
where the window's, that message in, is long enough to cache. So the optimum stays a lower
bound of the policy, a little lower than it need be (codex-00's moved by 0.6% or less solved
with the message kept). "The one it kept" is the unit of the last user message among the
units dropped (:attr:`.Tables.kept_text`), the only one the window can hold through drops
(until stop 33, the largest: one Codex chat 1.381x the optimum at GPT-4o prices, 1.06x).
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
            drop = t.must_drop(0, n, 0, window)
            deep = step.units * step.width  # the first state that drops all it may
            for j, size in enumerate(step.sizes):
                if size >= 0 and (j < step.width or (drop and (not deepest_drops or j >= deep))):
                    step.cost[j] = pricing.cache_write * size
        if ceilings is not None:
            _bound(step, ceilings[len(steps)])
        steps.append(step)
    return t, steps


def _bound(step: Step, ceiling: float) -> None:
    """Rule out the states that cost more than ``ceiling`` to reach, unless all do."""
    if min(step.cost) <= ceiling:
        step.cost = [cost if cost <= ceiling else _INF for cost in step.cost]


def _advance(prev: Step, step: Step, pricing: Pricing, window: int, deepest: bool) -> None:
    """The cheapest way into each state of ``step`` from a state of ``prev`` (with
    ``deepest``, a drop only into the most units it may drop)."""
    t = step.t
    row = _same_row if prev.t is t else _same_row_turn
    write, gain, floor = (
        pricing.cache_write,
        pricing.cache_write - pricing.cache_read,
        pricing.min_prefix,
    )
    after_drop = gain * (t.head if t.head >= floor else 0)
    width, pw = step.width, prev.width
    # dropping: the cheapest (b' < b, p <= c) of the predecessors that may drop, per c
    drop_best, drop_from = [_INF] * width, [-1] * width
    for b in range(step.units + 1):
        same = row(t, prev, b, width, gain, floor - t.kept_text[b]) if b <= prev.units else None
        for c in range(t.rounds_in[b], width):
            j = b * width + c
            size = step.sizes[j]
            if size < 0:
                continue
            if same is not None and same[0][c] < step.cost[j]:
                step.cost[j], step.back[j] = same[0][c], same[1][c]
            if drop_best[c] - after_drop < step.cost[j] and (not deepest or b == step.units):
                step.cost[j], step.back[j] = drop_best[c] - after_drop, drop_from[c]
            step.cost[j] += write * size
        if b > prev.units or not _must_drop(prev, step, b, window):
            continue  # drops grow only where clearing everything cannot fit
        low, at = _INF, -1
        for c in range(width):
            if c < pw and prev.cost[b * pw + c] < low:
                low, at = prev.cost[b * pw + c], b * pw + c
            if low < drop_best[c]:
                drop_best[c], drop_from[c] = low, at


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
    t: Tables, prev: Step, b: int, width: int, gain: float, floor: int
) -> tuple[list[float], list[int]]:
    """For each ``c``, the cheapest predecessor ``(b, p <= c)`` (its cost less what the
    cache saves) and its flat index in ``prev``."""
    if not t.ordered:
        return _same_row_any(t, prev, b, width, gain, floor)
    lay, pw = t.lay, prev.width
    prefix, n_prev, first, nxt = lay.prefix, prev.n, lay.first, t.next_first
    base = t.dropped[b] - t.cum[t.rounds_in[b]]
    value, came = [_INF] * width, [-1] * width
    # p in (q, c], no change since: cached = all of prev; p <= q: cached up to nx(p)'s first
    m1, a1, m2, a2, m2c, a2c = _INF, -1, _INF, -1, _INF, -1
    for c in range(t.rounds_in[b], width):
        if c < pw and prev.cost[b * pw + c] < _INF:
            here, kept = prev.cost[b * pw + c], base + t.cum[c]
            whole = prefix[n_prev] - kept
            v2 = here - gain * (whole if whole >= floor else 0)
            f = nxt[c]
            upto = prefix[min(f, n_prev)] - kept if f is not None else whole
            v1 = here - gain * (upto if upto >= floor else 0)
            if v2 < m2:
                m2, a2 = v2, b * pw + c
            if v1 < m2c:
                m2c, a2c = v1, b * pw + c
        value[c], came[c] = (m1, a1) if m1 <= m2 else (m2, a2)
        if c < len(first) and first[c] is not None:
            if m2c < m1:
                m1, a1 = m2c, a2c
            m2, a2, m2c, a2c = _INF, -1, _INF, -1
    return value, came


def _same_row_any(
    t: Tables, prev: Step, b: int, width: int, gain: float, floor: int
) -> tuple[list[float], list[int]]:
    """:func:`_same_row` for rounds that change messages out of order: every ``p``."""
    pw, value, came = prev.width, [_INF] * width, [-1] * width
    for c in range(t.rounds_in[b], width):
        for p in range(min(c, pw - 1), t.rounds_in[b] - 1, -1):
            here = prev.cost[b * pw + p]
            if here == _INF:
                continue
            cached = _cached(t, prev, b * pw + p, b, c, floor)
            v = here - gain * cached
            if v < value[c]:
                value[c], came[c] = v, b * pw + p
    return value, came


def _cached(t: Tables, prev: Step, i: int, b: int, c: int, floor: int) -> int:
    """What the request in state ``(b, c)`` reads from the cache of the previous one, in
    its state ``i``: the previous prefix up to the first message the change touches."""
    bp, p = divmod(i, prev.width)
    whole = prev.sizes[i]
    if b > bp:
        cached = min(t.head, whole)
    else:
        changed = [f for f in t.lay.first[p:c] if f is not None]
        if not changed:
            cached = whole
        else:
            at = min(min(changed), prev.n)
            cached = min(t.lay.prefix[at] - t.cut(b, p), whole)
    return cached if cached >= floor else 0


def _same_row_turn(
    t: Tables, prev: Step, b: int, width: int, gain: float, floor: int
) -> tuple[list[float], list[int]]:
    """:func:`_same_row` into a new frame: every ``p``, what is read from the cache ending
    at the frame's cap (:func:`_capped`). A new turn comes seldom."""
    pw, value, came, lo = prev.width, [_INF] * width, [-1] * width, t.rounds_in[b]
    first = t.lay.first
    caps = [min(prev.n, t.cap(b, p)) for p in range(min(width, pw))]
    for c in range(lo, width):
        changed = prev.n
        for p in range(c, lo - 1, -1):
            f = first[p] if p < c else None
            changed = min(changed, f) if f is not None else changed
            if p >= pw or prev.cost[b * pw + p] == _INF:
                continue
            i, x = b * pw + p, min(changed, caps[p])
            v = prev.cost[i] - gain * _capped(t, b, p, x, prev.sizes[i], floor)
            if v < value[c]:
                value[c], came[c] = v, i
    return value, came


def _capped(t: Tables, b: int, p: int, x: int, whole: int, floor: int) -> int:
    """What a request reads from the cache of the previous one, in state ``(b, p)`` of
    ``whole`` tokens, up to message ``x``: its first ``x`` messages less what its drops
    and clearings took off them, counting only the units and rounds that end before ``x``
    (one that runs past it is taken as kept: read a little more, the optimum stays a lower
    bound)."""
    units = min(b, bisect_left(t.lay.unit_end, x))
    lo, rounds = t.rounds_in[b], min(p, t.ended(x))
    cut = t.dropped[units] + (t.cum[rounds] - t.cum[lo] if rounds > lo else 0)
    cached = min(t.lay.prefix[x] - cut, whole)
    return cached if cached >= floor else 0


def _cached_turn(t: Tables, prev: Step, i: int, b: int, c: int, floor: int) -> int:
    """:func:`_cached` into a new frame: the cache ends at the frame's cap."""
    bp, p = divmod(i, prev.width)
    whole = prev.sizes[i]
    if b > bp:
        cached = min(t.head, whole)
        return cached if cached >= floor else 0
    changed = [f for f in t.lay.first[p:c] if f is not None]
    return _capped(t, b, p, min([*changed, prev.n, t.cap(b, p)]), whole, floor)


def _schedule(t: Tables, steps: list[Step], pricing: Pricing) -> list[OptimumRequest]:
    last = steps[-1].cost
    j = min(range(len(last)), key=lambda i: last[i])
    picks = [j]
    for step in reversed(steps[1:]):
        j = step.back[j]
        picks.append(j)
    picks.reverse()
    out: list[OptimumRequest] = []
    for k, (step, j) in enumerate(zip(steps, picks, strict=True)):
        b, c = divmod(j, step.width)
        prev = steps[k - 1] if k else None
        same = prev is not None and divmod(picks[k - 1], prev.width)[0] == b  # no drop
        cached, floor = 0, pricing.min_prefix - (step.t.kept_text[b] if same else 0)
        if prev is not None and prev.t is step.t:
            cached = _cached(step.t, prev, picks[k - 1], b, c, floor)
        elif prev is not None:
            cached = _cached_turn(step.t, prev, picks[k - 1], b, c, floor)
        out.append(OptimumRequest(step.sizes[j], cached, c, t.rounds_in[b], b))
    return out
