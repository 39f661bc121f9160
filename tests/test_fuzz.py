"""The fuzz of ``benchmarks/fuzz.py`` (fixed seed), in the test run: damaged requests in every
format under five policies: valid, never empty, idempotent, order-independent, unmutated.

20,800 cases in 8 chunks (about a minute in all); each chunk names its failures.
"""

from __future__ import annotations

import random

import pytest

from tests.builders import benchmark_module
from tests.conftest import CORPORA

CASES, CHUNKS = 20_800, 8


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_damaged_requests_hold_every_invariant(chunk: int) -> None:
    fuzz = benchmark_module("fuzz")
    rng = random.Random(1000 + chunk)
    pool = fuzz.sources(CORPORA if CORPORA.is_dir() else None, rng)
    failures = fuzz.run(pool, CASES // CHUNKS, rng)
    assert failures == []
