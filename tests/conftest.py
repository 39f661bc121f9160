"""Shared fixtures: the real traces in ../shared/corpora, when that folder exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def corpus_files(fmt: str | None = None) -> list[Path]:
    """Every trace file of a format (or of all), empty when the corpora are absent."""
    if not CORPORA.is_dir():
        return []
    pattern = f"{fmt}/*.json" if fmt else "*/*.json"
    return sorted(CORPORA.glob(pattern))


def corpus_params(fmt: str | None = None) -> list[object]:
    """pytest params over corpus files; one skipped param when the corpora are absent."""
    files = corpus_files(fmt)
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no {CORPORA}"), id="no-corpora")]
    return [pytest.param(f, id=f"{f.parent.name}/{f.stem}") for f in files]


def load(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


CHAINED_WITHOUT_ID = frozenset(
    {"pydantic-ai-test_openai_previous_response_id_seed_auto_chains_through_retries"}
)
"""Corpus requests recorded with ``previous_response_id`` chaining (their test's name says
so) whose stored body keeps only ``input`` and ``tools``: the server-side calls of their
outputs are not visible, so as stored they are not what the provider accepted."""
