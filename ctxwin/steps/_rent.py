"""The cost strategy's rent-or-buy rule in numbers (see :func:`ctxwin.steps._fold.advance`).

Every request re-reads the eligible results at the cache-read price: their rent. Clearing
them (a jump) re-writes, at the cache-write price instead of the read price, what the
previous request sent after the first of them: the buy.
"""

from __future__ import annotations

from ctxwin.steps._base import Limits
from ctxwin.steps._sums import Sums

__all__ = ["AHEAD", "BETWEEN", "ahead", "bill", "buy", "price", "within"]

AHEAD = 0.1
"""The cost rule looks ahead ``AHEAD`` times as many requests as were sent so far."""


BETWEEN = 0.25
"""The share of the buy between the first and the last result to clear that the rule
counts (see :func:`price`)."""


def ahead(saves: int, requests: int, limits: Limits) -> float:
    """The rent of results saving ``saves`` over the next requests if left: a conversation
    that has run ``requests`` requests is likely to run on, for a tenth as many at least."""
    return limits.cache_read * saves * AHEAD * requests


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
