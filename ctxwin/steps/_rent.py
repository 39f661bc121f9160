"""The cost strategy's rent-or-buy rule in numbers (see :func:`ctxwin.steps._fold.advance`).

Every request re-reads the eligible results at the cache-read price: their rent. Clearing
them (a jump) re-writes, at the cache-write price instead of the read price, what the
previous request sent after the first of them: the buy. ``window.max_overrun`` bounds a
jump by the bills of the conversation so far (:func:`affordable`), less the credit earlier
jumps have earned (:func:`charge`).
"""

from __future__ import annotations

from ctxwin.steps._base import Limits
from ctxwin.steps._foldstate import FoldState, Plan, first_changed
from ctxwin.steps._sums import Sums

__all__ = [
    "AHEAD",
    "AHEAD_AT_LEAST",
    "BETWEEN",
    "affordable",
    "ahead",
    "bill",
    "buy",
    "charge",
    "counted_grace",
    "going_on",
    "head_loss",
    "price",
    "request_sent",
    "spared",
    "user_soon",
    "within",
]

AHEAD = 0.1
"""The cost rule looks ahead ``AHEAD`` times as many requests as were sent so far,"""

AHEAD_AT_LEAST = 5
"""and never fewer than this many requests (see :func:`ahead`)."""


BETWEEN = 0.25
"""The share of the buy between the first and the last result to clear that the rule
counts (see :func:`price`)."""


def ahead(saves: int, requests: int, limits: Limits) -> float:
    """The rent of results saving ``saves`` over the next requests if left: a conversation
    that has run ``requests`` requests is likely to run on, for a tenth as many at least,
    and for five more at least (an agent that has begun working with tools seldom stops at
    once; without that floor, the first jumps of a conversation wait until the bound of
    :func:`within` has closed, see :data:`AHEAD_AT_LEAST`'s measurement in
    ``benchmarks/README.md``)."""
    return limits.cache_read * saves * max(AHEAD * requests, AHEAD_AT_LEAST)


def buy(cur: Sums, sent: int, first: int, saves: int, limits: Limits) -> float:
    """What a jump changing messages from ``first`` on and saving ``saves`` costs beyond
    reading the request: the part of the previous request (its first ``sent`` messages)
    after ``first``, written again instead of read. Messages that came since are not cached
    yet: the next request writes them whether it clears or not, so a jump costs least when
    a large result has just come."""
    suffix = cur.prefix(max(sent, first)) - cur.prefix(first) - saves
    return (limits.cache_write - limits.cache_read) * max(suffix, 0)


def price(cur: Sums, sent: int, first: int, last: int, saves: int, limits: Limits) -> float:
    """What the rule weighs the rent against: the part of the buy :func:`buy` after the last
    result to clear (from message ``last`` on), and :data:`BETWEEN` of the rest.

    A long conversation keeps jumping. What lies between the first and the last result to
    clear (their assistant turns, the placeholders of earlier jumps) is re-written by
    whichever jump clears them, early or late: waiting does not save it. What lies after
    the last (the newest rounds) is re-written by every jump: that is what waiting saves,
    and what the rent is weighed against. A quarter of the rest is still counted, as a
    hedge for a conversation that ends soon after (the share was chosen on replayed traces:
    ``benchmarks/cost_window.py --synthetic``)."""
    full = buy(cur, sent, first, saves, limits)
    after = (limits.cache_write - limits.cache_read) * max(cur.prefix(sent) - cur.prefix(last), 0)
    after = min(after, full)
    return after + BETWEEN * (full - after)


def bill(last: int, reads: int, limits: Limits) -> float:
    """What a run of requests costs, each caching the one before it: ``reads`` tokens sent
    in all, the last request ``last`` of them (each request writes what the one before did
    not hold, and reads the rest)."""
    return limits.cache_write * last + limits.cache_read * (reads - last)


def within(paid: float, unmanaged: float, jump: float, bound: float) -> bool:
    """Whether a jump costing ``jump`` keeps a bill of ``paid`` within ``bound`` above the
    ``unmanaged`` one (``window.max_overrun``): a jump pays for itself over the requests
    after it, and one just before a conversation ends does not. What ctxwin's edits have
    saved (``unmanaged - paid``) is budget a jump may risk, plus ``bound`` of the bill."""
    return paid + jump <= (1 + bound) * unmanaged


def request_sent(st: FoldState, k: int, limits: Limits, bound: float) -> None:
    """The request ``messages[:k]`` was sent: the eligible items paid their rent, the
    cleared ones earned their credit, and the bills of :func:`affordable` count it."""
    st.rent += limits.cache_read * st.savings
    st.credit += (1 + bound) * limits.cache_read * st.cleared_saves
    st.requests += 1
    st.sent = k
    st.reads += st.total
    st.edited_reads += st.edited
    st.edited_sent = st.edited


def user_soon(st: FoldState, first: int, limits: Limits) -> bool:
    """Whether a jump changing messages from ``first`` on had better wait for the user's
    next message, where the provider drops the reasoning of earlier turns (OpenAI): the
    cache of the request before it then holds only up to the first reasoning item of this
    turn still read (:meth:`~._foldstate.FoldState.turn_head`), and a jump made there
    re-writes little more than the request does anyway.

    Waiting costs the eligible items' rent until then. The user's next message is taken to
    come after as many requests as this turn has run so far, one at least: a run of tool
    calls that has gone on long is likely to go on (a support chat's turns are short, an
    agent left to work runs long). The jump waits when that rent, plus what it would still
    re-write then (from ``first`` to that reasoning item), is less than what it re-writes
    now, with what comes before ``first`` when that is too short to cache
    (:func:`head_loss`). Measured in ``benchmarks/README.md`` (stop 34).

    On the policy's own output, which may have lost rounds after the user's latest message
    (never that message), the turn has run no longer: on that count the rule waits at
    least as readily there (``random_responses.py`` checks the fixed point as a whole).
    The turn's length is used, not the conversation's past turns, for that reason: a drop
    takes old turns, and with them what they would say."""
    head = st.turn_head()
    if head < 0:  # no reasoning the provider stops reading: the user's message frees nothing
        return False
    write = limits.cache_write - limits.cache_read
    later = write * max(st.cur.prefix(max(head, first)) - st.cur.prefix(first), 0)
    now = buy(st.cur, st.sent, first, st.savings, limits) + head_loss(st, first, limits)
    return limits.cache_read * st.savings * max(st.turn_requests(), 1) + later < now


def affordable(st: FoldState, limits: Limits, bound: float, first: int, grace: int) -> bool:
    """Whether a jump clearing every eligible item (changing messages from ``first`` on)
    keeps the bill within ``bound`` above the unedited one, were the conversation to end
    with it, or ``grace`` requests after it in the agent's longer runs (see :func:`within`,
    :func:`counted_grace` and :func:`spared`).

    The conversation that ends with the jump ends with the request about to be sent: both
    bills count it (as it would go without the jump), and the jump adds to it the re-write
    (:func:`buy`) less the reads of what it clears, which that request already
    saves. The bills are those of the requests as the history now stands, with and without
    the edits of the steps before the window: before the first jump, what the user pays
    and would have paid. Earlier clearings count as if they had always been there, so that
    the bound depends on the history only as it is now, and applying the policy to its own
    output (where they are) decides as the first time did.

    That took from the budget what the window's own clearings saved: a jump made, the next
    could seldom be afforded. So each clearing earns credit from the request after its
    jump on (its reads, plus ``bound`` of them, as the unedited bill would have paid them),
    less what its jump cost (:func:`charge`), and a jump may spend the credit. Applied to
    its own output, the window finds no clearing of its own to credit, so it is never more
    willing to jump than the first time."""
    jump = _jump_cost(st, first, st.savings, st.savings, limits)
    paid = bill(st.total, st.reads + st.total, limits)
    unedited = paid + bill(st.edited, st.edited_reads + st.edited, limits)
    jump -= spared(st.savings, unedited, limits, bound, counted_grace(st, grace))
    return within(paid, unedited, jump - max(st.credit, 0.0), bound)


def counted_grace(st: FoldState, grace: int) -> int:
    """The requests after a jump that ``window.overrun_grace`` counts on: all of them once
    the agent has sent more than that many requests since the user's latest message (a run
    of tool calls that long seldom stops at once), none before (a reply to the user may be
    the conversation's last: a support chat's jumps just before its end were the ones over
    1.10x unmanaged). The latest user message is never dropped, so the policy applied to its
    own output, which may have lost rounds after it, counts fewer requests: it is never more
    willing to jump than the first time. Words the user sent after results in their message
    (Anthropic, Gemini: :func:`~ctxwin._core.model.speaks`) start no count: they begin no turn
    of the user's (nor do they for the thinking that opens a turn), and the agent's run of calls
    goes on through them. A drop that takes their round leaves them a message of their own,
    from which the output counts: fewer requests again."""
    return grace if st.turn_requests() > grace else 0


def spared(saves: int, unedited: float, limits: Limits, bound: float, grace: int) -> float:
    """What ``window.overrun_grace`` takes off a jump's cost in :func:`affordable`: the
    reads it saves over the ``grace`` requests after it, as the unedited bill pays them plus
    ``bound`` of them (each request after the jump widens the bound by at least that much),
    and never more than half of ``bound`` of the bill so far. So a conversation that ends
    ``grace`` requests or more after its last jump stays within ``bound``; one that ends
    sooner, within about one and a half times ``bound``.

    The strict bound (``grace`` 0) holds a conversation's first jump back until the bill
    has grown to pay for all of it, which on short runs is often never: the ceiling then
    forces a later jump that re-writes more. Measured in ``benchmarks/README.md``."""
    return min(grace * (1 + bound) * limits.cache_read * saves, bound / 2 * unedited)


def going_on(st: FoldState, first: int) -> bool:
    """Whether a jump changing messages from ``first`` on goes on through the request of
    the latest one: made in the same request, from that jump's first change on, it re-writes
    nothing that request does not re-write already. In an OpenAI Responses history a turn's
    reasoning item comes before its call: a jump made there (as a request is sent, the
    rent rule is due) leaves eligible the round the call then pushes out of the kept ones,
    which would wait for a jump of its own."""
    return st.jump_request == st.requests and first >= st.jump_first


def charge(st: FoldState, made: list[Plan], limits: Limits) -> None:
    """A jump under ``strategy: cost`` cleared ``made``: their rent stops (an eligible item
    left would keep its rent, as the policy applied to its own output finds it; under
    ``cost`` every jump clears them all, see :func:`~._fold.advance`); from the next
    request on they earn their
    credit, and what the jump re-wrote (less the reads the request carrying it saves) is
    charged to it now.

    The jump re-writes what the previous request sent after the first message it changed,
    as it stands after the jump (see :func:`_jump_cost`), and all of it when what stays
    before that message is too short to cache: whether the previous request was long enough
    to be cached is judged as it was sent, before the jump took its results off (judged
    after, a request the jump brought under the minimum looked uncached already, the
    re-write went uncharged, and jumps every request could pay 1.2x to 1.3x unmanaged).
    A jump going on through the request of the latest one (:func:`going_on`) re-writes
    nothing more: only the reads it saves count."""
    if not made:
        return
    first = first_changed(made, len(st.cur))
    free = going_on(st, first)
    if not free:
        st.jump_request, st.jump_first = st.requests, first
    saves = sum(plan.saves for plan in made)
    paid = sum(plan.saves * (st.requests - st.since.pop(plan.loc, st.requests)) for plan in made)
    st.rent = max(st.rent - limits.cache_read * paid, 0.0) if st.savings else 0.0
    st.cleared_saves += saves
    if free:
        st.credit += limits.cache_read * saves
        return
    taken = sum(plan.saves for plan in made if plan.loc[0] < st.sent)
    # the history already stands cleared: nothing left to take off the re-write
    st.credit -= _jump_cost(st, first, 0, saves, limits, taken)


def _jump_cost(
    st: FoldState, first: int, pending: int, saves: int, limits: Limits, taken: int = 0
) -> float:
    """What a jump changing messages from ``first`` on adds to the request that carries it:
    the re-write (:func:`buy`, less ``pending`` tokens it takes off what is re-written),
    all of the previous request when what stays before is too short to cache, less the
    reads of the ``saves`` tokens it clears."""
    cost = buy(st.cur, st.sent, first, pending, limits) - limits.cache_read * saves
    return cost + head_loss(st, first, limits, taken)


def head_loss(st: FoldState, first: int, limits: Limits, taken: int = 0) -> float:
    """What a jump changing messages from ``first`` on re-writes ahead of its first change:
    all of it when it is too short to cache and the previous request (as it was sent, with
    the ``taken`` tokens a jump made already took off it) was long enough. Both with the
    envelope (the request's tools and system fields, cached ahead of the messages)."""
    head = st.envelope + st.cur.prefix(first)
    last = st.envelope + st.cur.prefix(st.sent) + taken
    if head < limits.min_prefix <= last:  # what stays before it is too short to cache
        return (limits.cache_write - limits.cache_read) * head
    return 0.0
