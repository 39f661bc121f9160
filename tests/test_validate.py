"""parse, render, check, repair on request bodies: what a provider would reject, only."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxwin
from tests.builders import asst, call, tool, user
from tests.conftest import CHAINED_WITHOUT_ID, corpus_params, load


@pytest.mark.corpora
@pytest.mark.parametrize("path", corpus_params())
def test_every_request_a_provider_accepted_checks_clean(path: Path) -> None:
    """``check`` answers one question: would the provider reject this? (Real traces have
    results with empty content, which providers accept.)"""
    body = load(path)
    if path.stem in CHAINED_WITHOUT_ID:
        assert isinstance(body, dict)
        body = {**body, "previous_response_id": "resp_recorded"}
    assert ctxwin.check(body) == []


def test_warnings_are_asked_for() -> None:
    body = {"messages": [user("go"), asst(call("a", "f")), tool("a", "")]}
    assert ctxwin.check(body) == []
    (p,) = ctxwin.check(body, warnings=True)
    assert (p.code, p.severity, p.path) == ("empty_result", "warning", "messages[2]")


def test_repair_leaves_a_valid_body_as_it_is() -> None:
    body = {"messages": [user("go"), asst(call("a", "f")), tool("a", "ok")]}
    assert ctxwin.repair(body) == (body, [])
