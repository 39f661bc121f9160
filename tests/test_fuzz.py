"""The fuzz of ``benchmarks/fuzz.py`` (fixed seed), in the test run: damaged requests in every
format under five policies: valid, never empty, idempotent, order-independent, unmutated.

20,800 cases in 8 chunks (about a minute in all); each chunk names its failures.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import CORPORA

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
CASES, CHUNKS = 20_800, 8


def fuzz_module() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("ctxwin_fuzz", BENCHMARKS / "fuzz.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_damaged_requests_hold_every_invariant(chunk: int) -> None:
    fuzz = fuzz_module()
    rng = random.Random(1000 + chunk)
    pool = fuzz.sources(CORPORA if CORPORA.is_dir() else None, rng)
    failures = fuzz.run(pool, CASES // CHUNKS, rng)
    assert failures == []
