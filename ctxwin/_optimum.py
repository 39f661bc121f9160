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
window. A dynamic programme over the requests finds the cheapest schedule exactly, in
O(units x rounds) per request: from ``(b, p)`` to ``(b, c)`` (no drop) the cache holds up to
the first message the new clearings change, which, as rounds follow one another, depends on
``p`` alone, so a running minimum over ``p`` serves every ``c``; a drop keeps only the head
cached, whatever came before, so the cheapest predecessor of every ``(b, c)`` is a prefix
minimum over ``(b' < b, p <= c)``. (A trace whose rounds change messages out of order is
solved by the same recurrence without the running minimum, in O(units x rounds²).)

One relaxation: the window never drops the latest user message; the family may, and may
drop wherever the window may have had to because it kept one. The optimum stays a lower
bound of the policy, a little lower than it need be: the tokens of that message can spare
it a clearing the window is forced to make. Measured by solving it with that message kept
(``benchmarks/README.md``): codex-00's optimum moved by 0.6% or less.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import ToolResult
from ctxwin._policy.tables import Pricing
from ctxwin.steps._base import Context
from ctxwin.steps._fold import plan_result
from ctxwin.steps._reasoning import clearable_reasoning

__all__ = ["Layout", "OptimumRequest", "layout", "optimum", "prefix_optima"]

_INF = float("inf")


@dataclass(frozen=True, slots=True)
class Layout:
    """A trace's rounds and units as a window sees them: prefix tokens, what clearing each
    round saves, what dropping each unit frees."""

    prefix: list[int]
    """Tokens of the envelope and the first ``k`` messages, for each ``k``."""
    round_start: list[int]
    round_end: list[int]
    """The last message of each round's turn and results."""
    saves: list[int]
    span: list[int]
    """Tokens of each round's messages as edited (before clearing)."""
    first: list[int | None]
    """The first message clearing each round changes (None: clearing it changes nothing)."""
    drop_start: int = 0
    """The first message a drop may take (after the leading system messages and the first
    user message)."""
    unit_end: tuple[int, ...] = ()
    """The last message of each droppable unit, oldest first (units follow one another
    from ``drop_start``)."""
    user_texts: tuple[int, ...] = ()
    """User messages (not results) after ``drop_start``: the window keeps the latest one
    through a drop."""
    round_call: tuple[int, ...] = ()
    """The first call message of each round, where the window sees the round begin."""


def layout(conv: Conversation, ctx: Context) -> Layout:
    """The layout of a conversation (results already edited as the policy edits them)."""
    prefix = [ctx.envelope_tokens(conv)]
    for msg in conv.messages:
        prefix.append(prefix[-1] + ctx.message_tokens(msg))
    rounds = conv.pairing.rounds
    saves = [0] * len(rounds)
    first: list[int | None] = [None] * len(rounds)
    ends = [max([r.end, *(loc[0] for loc in r.results.values())]) for r in rounds]
    for ref in conv.results():
        if ref.round is None:
            continue
        plan = plan_result(conv, ref.loc[0], ref.loc[1], ctx)
        if plan is None:
            continue
        saves[ref.round] += plan.saves
        at = plan.call_loc[0] if plan.call_saved and plan.call_loc else ref.loc[0]
        old = first[ref.round]
        first[ref.round] = at if old is None else min(old, at)
    if ctx.config.window.clear_reasoning:
        _reasoning(conv, ctx, saves, first)
    span = [prefix[e + 1] - prefix[r.start] for r, e in zip(rounds, ends, strict=True)]
    starts = [r.start for r in rounds]
    head = _drop_start(conv)
    units = _units(len(conv.messages), starts, ends, head)
    texts = tuple(
        k
        for k, msg in enumerate(conv.messages)
        if k >= head
        and msg.role == "user"
        and not any(isinstance(b, ToolResult) for b in msg.blocks)
    )
    calls = tuple(min((c[0] for c in r.calls), default=r.start) for r in rounds)
    return Layout(prefix, starts, ends, saves, span, first, head, units, texts, calls)


def _reasoning(conv: Conversation, ctx: Context, saves: list[int], first: list[int | None]) -> None:
    """Reasoning items of each round, which ``clear_reasoning`` drops with its results
    (unless the round's calls are tied to them), and those of the answers after it (see
    :func:`~ctxwin.steps._reasoning.clearable_reasoning`)."""
    for r, mi in clearable_reasoning(conv):
        saves[r] += ctx.message_tokens(conv.messages[mi])
        old = first[r]
        first[r] = mi if old is None else min(old, mi)


def _drop_start(conv: Conversation) -> int:
    """Where the window's drops begin: after the first user message (not a result), or,
    without one, after the last system message."""
    start = 0
    for k, msg in enumerate(conv.messages):
        if msg.role == "user" and not any(isinstance(b, ToolResult) for b in msg.blocks):
            return k + 1
        if msg.role == "system":
            start = k + 1
    return start


def _units(n: int, starts: list[int], ends: list[int], head: int) -> tuple[int, ...]:
    """The droppable units from ``head``: each round closed over the rounds its messages
    reach, or a single message. None when a round begins before ``head``."""
    if any(s < head for s in starts):
        return ()
    reach = list(range(n))
    for s, e in zip(starts, ends, strict=True):
        reach[s] = max(reach[s], e)
    out: list[int] = []
    i = head
    while i < n:
        hi, j = reach[i], i
        while j <= hi:
            hi = max(hi, reach[j])
            j += 1
        out.append(hi)
        i = hi + 1
    return tuple(out)


@dataclass(frozen=True, slots=True)
class OptimumRequest:
    """One request of the optimal schedule: its tokens, what was read from the cache, and
    how many of the oldest rounds were cleared and dropped."""

    input_tokens: int
    cached_tokens: int
    cleared_rounds: int
    dropped_rounds: int = 0
    dropped_units: int = 0


class _Tables:
    """Sums over a layout that every request's states use."""

    def __init__(self, lay: Layout, keep_rounds: int) -> None:
        self.lay = lay
        self.cum = [0]
        for s in lay.saves:
            self.cum.append(self.cum[-1] + s)
        self.rounds_in = [0] + [bisect_right(lay.round_start, e) for e in lay.unit_end]
        """Rounds inside the oldest ``b`` units."""
        head = lay.prefix[lay.drop_start]
        self.dropped = [0] + [lay.prefix[e + 1] - head for e in lay.unit_end]
        """Tokens of the oldest ``b`` units (before clearing)."""
        self.head = head
        """What a request reads from the cache after a drop: the envelope and the head."""
        self.kept_text = [0]
        """The largest user message among the oldest ``b`` units, which the window may
        have kept through its drops."""
        texts = iter(lay.user_texts)
        text = next(texts, None)
        for e in lay.unit_end:
            largest = self.kept_text[-1]
            while text is not None and text <= e:
                largest = max(largest, lay.prefix[text + 1] - lay.prefix[text])
                text = next(texts, None)
            self.kept_text.append(largest)
        calls = lay.round_call or tuple(lay.round_start)
        self.reached = 0
        """The most units a request so far may drop (see :func:`_new_step`)."""
        self.seen = [
            max(0, min(_present(lay, k), sum(1 for c in calls if c < k) - keep_rounds))
            for k in range(len(lay.prefix))
        ]
        """The rounds eligible as the window sees them after the first ``k`` messages."""
        known = [f for f in lay.first if f is not None]
        self.ordered = all(a <= b for a, b in pairwise(known))
        nxt: list[int | None] = [None] * (len(lay.first) + 1)
        for r in range(len(lay.first) - 1, -1, -1):
            nxt[r] = lay.first[r] if lay.first[r] is not None else nxt[r + 1]
        self.next_first = nxt
        """The first message changed by clearing round ``r`` or the next one that changes one."""

    def cut(self, b: int, c: int) -> int:
        """Tokens the state ``(b, c)`` takes off the request."""
        return self.dropped[b] + self.cum[c] - self.cum[self.rounds_in[b]]

    def must_drop(self, since: int, n: int, b: int, window: int) -> bool:
        """Whether the window may have had to drop more after ``b`` units, between the
        requests of ``since`` and ``n`` messages: at some message, everything eligible
        then cleared does not fit (with the user message it may have kept). The window
        looks after each message, and sees a round begin only at its first call."""
        kept, inside, prefix = self.kept_text[b], self.rounds_in[b], self.lay.prefix
        return any(
            prefix[k] - self.cut(b, max(self.seen[k], inside)) + kept > window
            for k in range(since + 1, n + 1)
        )


@dataclass(slots=True)
class _Step:
    """One request: its admissible states ``(b, c)`` with their cheapest cost so far (flat,
    ``b * (eligible + 1) + c``) and where each came from."""

    n: int
    eligible: int
    """The most rounds a state may count as cleared (dropped kept rounds included)."""
    units: int
    sizes: list[int]
    cost: list[float]
    back: array[int]

    @property
    def width(self) -> int:
        return self.eligible + 1


def _new_step(t: _Tables, n: int, keep_rounds: int, window: int) -> _Step:
    """The request of ``n`` messages with the sizes of its states; those over the window
    are out (when none fits, all but the closest, everything eligible dropped).

    As the window's drops do, the kept rounds yield to the window: when dropping every unit
    before them cannot fit it, units go from the oldest kept round on, one round at a time,
    down to the newest round (dropped rounds count as cleared; kept ones are never cleared
    otherwise). What was dropped so stays dropped at the requests after."""
    lay = t.lay
    eligible = _eligible(lay, n, keep_rounds)
    keep = keep_rounds
    units = max(_droppable(t, n, keep, eligible), t.reached)
    while True:
        closest = lay.prefix[n] - t.cut(units, max(eligible, t.rounds_in[units]))
        if closest <= window or keep == 1:
            break
        keep -= 1
        units = max(units, _droppable(t, n, keep, len(lay.saves)))
    t.reached = units
    width = max(eligible, t.rounds_in[units]) + 1
    sizes = [-1] * ((units + 1) * width)
    for b in range(units + 1):
        for c in range(t.rounds_in[b], width):
            if c > eligible and c > t.rounds_in[b]:
                break  # a kept round is dropped, never cleared
            size = lay.prefix[n] - t.cut(b, c)
            if size <= window or (size == closest and closest > window):
                sizes[b * width + c] = size
    cost = [_INF] * len(sizes)
    return _Step(n, width - 1, units, sizes, cost, array("l", [-1] * len(sizes)))


def _eligible(lay: Layout, n: int, keep_rounds: int) -> int:
    """How many of the oldest rounds of the first ``n`` messages may be cleared."""
    started = sum(1 for s in lay.round_start if s < n)
    return max(0, min(_present(lay, n), started - keep_rounds))


def _present(lay: Layout, n: int) -> int:
    """The rounds of the first ``n`` messages with all their results."""
    return sum(1 for s, e in zip(lay.round_start, lay.round_end, strict=True) if e < n and s < n)


def _droppable(t: _Tables, n: int, keep_rounds: int, eligible: int) -> int:
    """How many of the oldest units the request of ``n`` messages may drop, the newest
    ``keep_rounds`` rounds staying, with no more than ``eligible`` rounds inside them."""
    units = bisect_right(t.lay.unit_end, _drop_limit(t.lay, n, keep_rounds) - 1)
    while t.rounds_in[units] > eligible:
        units -= 1
    return units


def _drop_limit(lay: Layout, n: int, keep_rounds: int) -> int:
    """The first message of the first ``n`` a drop may not take: the newest
    ``keep_rounds`` rounds (or, before any round, the end)."""
    started = sum(1 for s in lay.round_start if s < n)
    if not started:
        return n
    return min(n, lay.round_start[max(started - keep_rounds, 0)])


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
) -> tuple[_Tables, list[_Step]]:
    """The programme's states, request by request (see :func:`optimum`)."""
    t = _Tables(lay, keep_rounds)
    steps: list[_Step] = []
    for n in points:
        step = _new_step(t, n, keep_rounds, window)
        if steps:
            _advance(t, steps[-1], step, pricing, window, deepest_drops)
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


def _bound(step: _Step, ceiling: float) -> None:
    """Rule out the states that cost more than ``ceiling`` to reach, unless all do."""
    if min(step.cost) <= ceiling:
        step.cost = [cost if cost <= ceiling else _INF for cost in step.cost]


def _advance(
    t: _Tables, prev: _Step, step: _Step, pricing: Pricing, window: int, deepest: bool
) -> None:
    """The cheapest way into each state of ``step`` from a state of ``prev`` (with
    ``deepest``, a drop only into the most units it may drop)."""
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
        same = _same_row(t, prev, b, width, gain, floor) if b <= prev.units else None
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
        if b > prev.units or not t.must_drop(prev.n, step.n, b, window):
            continue  # drops grow only where clearing everything cannot fit
        low, at = _INF, -1
        for c in range(width):
            if c < pw and prev.cost[b * pw + c] < low:
                low, at = prev.cost[b * pw + c], b * pw + c
            if low < drop_best[c]:
                drop_best[c], drop_from[c] = low, at


def _same_row(
    t: _Tables, prev: _Step, b: int, width: int, gain: float, floor: int
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
    t: _Tables, prev: _Step, b: int, width: int, gain: float, floor: int
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


def _cached(t: _Tables, prev: _Step, i: int, b: int, c: int, floor: int) -> int:
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


def _schedule(t: _Tables, steps: list[_Step], pricing: Pricing) -> list[OptimumRequest]:
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
        cached = 0
        if k:
            cached = _cached(t, steps[k - 1], picks[k - 1], b, c, pricing.min_prefix)
        out.append(OptimumRequest(step.sizes[j], cached, c, t.rounds_in[b], b))
    return out
