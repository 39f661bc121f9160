"""The cost rule's price of a jump (ctxwin.steps._rent)."""

from __future__ import annotations

import pytest

from ctxwin.steps._base import Limits
from ctxwin.steps._foldstate import FoldState
from ctxwin.steps._rent import BETWEEN, bill, buy, head_loss, price, within
from ctxwin.steps._sums import Sums

LIMITS = Limits(10_000, 6_000, 4_000, 0, cache_write=1.25, cache_read=0.1)


def _sums(values: list[int]) -> Sums:
    sums = Sums()
    for v in values:
        sums.append(v)
    return sums


def test_the_price_counts_what_follows_the_newest_result_and_a_quarter_of_the_rest() -> None:
    # head 100 | turn 50 | result 200 | turn 50 | result 200 | kept rounds 300
    cur = _sums([100, 50, 200, 50, 200, 300])
    saves = 380  # the two results become 10-token placeholders
    full = buy(cur, 6, 2, saves, LIMITS)
    assert full == pytest.approx(1.15 * (900 - 150 - 380))  # all after the first, re-written
    after = 1.15 * 300  # the kept rounds: every jump re-writes them
    assert price(cur, 6, 2, 5, saves, LIMITS) == pytest.approx(after + BETWEEN * (full - after))
    assert BETWEEN == 0.25


def test_what_was_not_sent_yet_costs_nothing_and_the_price_never_exceeds_the_buy() -> None:
    cur = _sums([100, 50, 200, 50, 200, 300])
    # the previous request ended before the kept rounds came: nothing after the newest
    # result is cached, so only the quarter of what lies between them is counted
    full = buy(cur, 5, 2, 380, LIMITS)
    assert price(cur, 5, 2, 5, 380, LIMITS) == pytest.approx(BETWEEN * full)
    # a result that was just sent and saves more than what follows it is worth: never
    # more than the buy itself
    assert price(cur, 6, 4, 5, 1000, LIMITS) <= buy(cur, 6, 4, 1000, LIMITS) + 1e-9


def test_a_run_of_requests_each_caching_the_one_before_is_billed_by_its_last_and_sum() -> None:
    # requests of 100, 150 and 200 tokens: each writes what the one before did not hold
    by_request = 1.25 * 100 + (1.25 * 50 + 0.1 * 100) + (1.25 * 50 + 0.1 * 150)
    assert bill(200, 100 + 150 + 200, LIMITS) == pytest.approx(by_request)


def test_a_jump_may_risk_the_bound_plus_what_the_edits_saved() -> None:
    assert within(100.0, 100.0, 10.0, 0.1)
    assert not within(100.0, 100.0, 10.5, 0.1)
    assert within(80.0, 100.0, 30.0, 0.1)  # 20 saved by caps, 10 of bound
    assert not within(80.0, 100.0, 31.0, 0.1)
    assert not within(100.0, 100.0, 0.5, 0.0)  # no bound: only what was saved


def test_the_head_is_re_written_when_it_is_too_short_to_cache_on_its_own() -> None:
    """A jump re-writes what lies before its first change too when that is under the
    provider's minimum cacheable prefix and the previous request was over it."""
    limits = Limits(10_000, 6_000, 4_000, 0, cache_write=1.25, cache_read=0.1, min_prefix=1000)
    st = FoldState(envelope=100, cur=_sums([500, 50, 600, 50, 600]), sent=5)
    assert head_loss(st, 2, limits) == pytest.approx(1.15 * (100 + 550))  # 650 < 1000
    assert head_loss(st, 4, limits) == 0.0  # 1300 before it: cached
    short = FoldState(envelope=100, cur=_sums([300, 50, 200]), sent=3)
    assert head_loss(short, 2, limits) == 0.0  # the previous request was not cached either
    assert head_loss(short, 2, limits, taken=400) == pytest.approx(1.15 * 450)  # as sent
