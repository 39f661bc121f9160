"""The clairvoyant optimum of a policy's own family, for replays.

Given a whole trace, which rounds should have been cleared at which request, knowing the
future, to pay the least? The family is the policy's: the same result edits (selections,
caps), the same ``keep_rounds`` and window, results cleared round by round from the oldest
and never brought back (monotone), the newest rounds untouched. A dynamic programme over
(request, rounds cleared) finds the cheapest schedule, in O(rounds²) per request.

Reasoning items go with their round under ``clear_reasoning``. Whole rounds are dropped,
oldest first and never brought back, only where clearing every eligible round cannot fit the
window, so a state is either ``(0, c)``: ``c`` rounds cleared, none dropped, or ``(d, E)``:
all ``E`` eligible rounds cleared and the oldest ``d`` dropped. Drops grow only at a request
the previous drops cannot fit with everything cleared, and then by as many rounds as pays
(a deeper drop now can save drops later). That is O(rounds) states per request and
O(rounds²) transitions.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import call_at
from ctxwin._policy.tables import Pricing
from ctxwin.steps._base import Context
from ctxwin.steps._fold import plan_result

__all__ = ["Layout", "OptimumRequest", "layout", "optimum"]


@dataclass(frozen=True, slots=True)
class Layout:
    """A trace's rounds as a window sees them: prefix tokens and what clearing each saves."""

    prefix: list[int]
    """Tokens of the envelope and the first ``k`` messages, for each ``k``."""
    round_start: list[int]
    round_end: list[int]
    """The last message of each round's turn and results."""
    saves: list[int]
    span: list[int]
    """Tokens of each round's messages as edited (before clearing): what dropping it frees."""
    first: list[int | None]
    """The first message clearing each round changes (None: clearing it changes nothing)."""


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
    return Layout(prefix, [r.start for r in rounds], ends, saves, span, first)


def _reasoning(conv: Conversation, ctx: Context, saves: list[int], first: list[int | None]) -> None:
    """Reasoning items of each round, which ``clear_reasoning`` drops with its results
    (unless the round's calls are tied to them)."""
    messages = conv.messages
    for rnd in conv.pairing.rounds:
        if any(call_at(messages, c).tied_reasoning for c in rnd.calls):
            continue
        for mi in range(rnd.start, rnd.end + 1):
            blocks = messages[mi].blocks
            if len(blocks) == 1 and getattr(blocks[0], "category", None) == "reasoning":
                saves[rnd.index] += ctx.message_tokens(messages[mi])
                old = first[rnd.index]
                first[rnd.index] = mi if old is None else min(old, mi)


@dataclass(frozen=True, slots=True)
class OptimumRequest:
    """One request of the optimal schedule: its tokens, what was read from the cache, and
    how many of the oldest rounds were cleared and dropped."""

    input_tokens: int
    cached_tokens: int
    cleared_rounds: int
    dropped_rounds: int = 0


def optimum(
    lay: Layout, points: list[int], pricing: Pricing, keep_rounds: int, window: int
) -> list[OptimumRequest]:
    """The cheapest schedule over the requests at ``points`` (message counts)."""
    cum, dropped = [0], [0]
    for s, span in zip(lay.saves, lay.span, strict=True):
        cum.append(cum[-1] + s)
        dropped.append(dropped[-1] + span - s)
    write, read, floor = pricing.cache_write, pricing.cache_read, pricing.min_prefix
    inf = float("inf")
    best: list[float] = [0.0]
    back: list[list[int]] = []
    steps: list[_Step] = []
    prev: _Step | None = None
    for n in points:
        step = _step(lay, cum, dropped, n, _eligible(lay, n, keep_rounds), window)
        cost = [inf] * len(step.states)
        came = [0] * len(step.states)
        for j, (d, c) in enumerate(step.states):
            if prev is None:
                cost[j] = write * step.sizes[j]
                continue
            for i, (dp, p) in enumerate(prev.states):
                if best[i] == inf or dp > d or p > c:
                    continue
                if d > dp and step.full - dropped[dp] <= window:
                    continue  # drops only where clearing everything cannot fit
                cached = _cached(lay, cum, dropped, prev, i, d, c)
                cached = cached if cached >= floor else 0
                total = best[i] + write * (step.sizes[j] - cached) + read * cached
                if total < cost[j]:
                    cost[j], came[j] = total, i
        best, prev = cost, step
        back.append(came)
        steps.append(step)
    return _schedule(lay, cum, dropped, steps, best, back, pricing)


@dataclass(frozen=True, slots=True)
class _Step:
    states: list[tuple[int, int]]
    """The admissible ``(rounds dropped, rounds cleared)`` of one request."""
    sizes: list[int]
    """The request's tokens in each state."""
    full: int
    """Its tokens with every eligible round cleared and none dropped."""


def _step(
    lay: Layout, cum: list[int], dropped: list[int], n: int, eligible: int, window: int
) -> _Step:
    """The states of the request of ``n`` messages that fit (or, when none does, the one
    that comes closest: everything eligible dropped)."""
    states: list[tuple[int, int]] = []
    sizes: list[int] = []
    candidates = [(0, c) for c in range(eligible + 1)]
    candidates += [(d, eligible) for d in range(1, eligible + 1)]
    for d, c in candidates:
        size = lay.prefix[n] - cum[c] - dropped[d]
        if size <= window:
            states.append((d, c))
            sizes.append(size)
    if not states:
        states, sizes = [(eligible, eligible)], [lay.prefix[n] - cum[eligible] - dropped[eligible]]
    return _Step(states, sizes, lay.prefix[n] - cum[eligible])


def _eligible(lay: Layout, n: int, keep_rounds: int) -> int:
    """How many of the oldest rounds of the first ``n`` messages may be cleared."""
    present = sum(1 for s, e in zip(lay.round_start, lay.round_end, strict=True) if e < n and s < n)
    started = sum(1 for s in lay.round_start if s < n)
    return max(0, min(present, started - keep_rounds))


def _cached(
    lay: Layout, cum: list[int], dropped: list[int], prev: _Step, i: int, d: int, c: int
) -> int:
    """What a request in state ``(d, c)`` reads from the cache of the previous one, in its
    state ``i``: the previous prefix up to the first message the new clearing or drops
    change."""
    dp, p = prev.states[i]
    changed = [f for f in lay.first[p:c] if f is not None]
    if d > dp:
        changed.append(lay.round_start[dp])
    if not changed:
        return prev.sizes[i]
    f = min(changed)
    before = bisect_left(lay.round_start, f)  # rounds that start before the change
    kept = lay.prefix[f] - cum[min(p, before)] - dropped[min(dp, before)]
    return min(kept, prev.sizes[i])


def _schedule(
    lay: Layout,
    cum: list[int],
    dropped: list[int],
    steps: list[_Step],
    best: list[float],
    back: list[list[int]],
    pricing: Pricing,
) -> list[OptimumRequest]:
    j = min(range(len(best)), key=lambda i: best[i])
    picks = [j]
    for came in reversed(back[1:]):
        j = came[j]
        picks.append(j)
    picks.reverse()
    out: list[OptimumRequest] = []
    for t, (step, j) in enumerate(zip(steps, picks, strict=True)):
        d, c = step.states[j]
        cached = 0
        if t:
            cached = _cached(lay, cum, dropped, steps[t - 1], picks[t - 1], d, c)
            cached = cached if cached >= pricing.min_prefix else 0
        out.append(OptimumRequest(step.sizes[j], cached, c, d))
    return out
