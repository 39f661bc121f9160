"""Each summary request is bounded by what ctxwin still waits for it (``summarize.timeout``):
the ready summarizers send it as the request's ``timeout``, so a call ctxwin fell back
from does not go on for the client's own 600 s; ``time_left`` gives it to your own."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import ctxwin.summarizers
from ctxwin import Policy
from ctxwin.summarizers import time_left
from ctxwin.testing import FakeCounter
from tests.steps.conftest import body_with_result
from tests.summarizers.helpers import (
    CONFIG,
    KINDS,
    LONG,
    Kind,
    Server,
    anthropic_answer,
    anthropic_client,
    apply,
    call,
    openai_answer,
    openai_client,
)


def _read_timeout(server: Server) -> float:
    """The read timeout the SDK gave the HTTP request it sent."""
    (request,) = server.requests
    timeout: dict[str, float] = request.extensions["timeout"]
    return timeout["read"]


def _summarizer(provider: str, kind: Kind, server: Server, **kw: Any) -> Any:
    if provider == "openai":
        return ctxwin.summarizers.openai(openai_client(kind, server), model="m", **kw)
    return ctxwin.summarizers.anthropic(anthropic_client(kind, server), model="m", **kw)


def _answer(provider: str) -> dict[str, Any]:
    return openai_answer() if provider == "openai" else anthropic_answer()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_summary_request_times_out_when_ctxwin_stops_waiting(provider: str, kind: Kind) -> None:
    """CONFIG's summarize.timeout is 10 s; the clients' own timeout is 600 s."""
    server = Server(_answer(provider))
    result = apply(_summarizer(provider, kind, server), "apply" if kind == "sync" else "aapply")
    assert result.report.edits[0].fallback is None
    assert 9.0 < _read_timeout(server) <= 10.0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_call_outside_a_policy_keeps_the_clients_timeout(provider: str) -> None:
    server = Server(_answer(provider))
    call(_summarizer(provider, "sync", server))
    assert _read_timeout(server) == 600.0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_shorter_timeout_in_options_is_kept(provider: str) -> None:
    server = Server(_answer(provider))
    apply(_summarizer(provider, "sync", server, options={"timeout": 3}))
    assert _read_timeout(server) == 3.0


def test_a_longer_timeout_in_options_is_bounded_too() -> None:
    server = Server(openai_answer())
    apply(_summarizer("openai", "sync", server, options={"timeout": 120}))
    assert 9.0 < _read_timeout(server) <= 10.0


def test_no_request_is_sent_once_ctxwin_stopped_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that starts after its deadline (a starved thread) is a failure, not a request."""
    monkeypatch.setattr("ctxwin.summarizers._base.time_left", lambda: 0.0)
    server = Server(openai_answer())
    with pytest.raises(ctxwin.SummarizerError) as info:
        call(_summarizer("openai", "sync", server))
    assert str(info.value) == (
        "openai: not asked: ctxwin stopped waiting for this summary before the request was sent"
    )
    assert server.requests == []


@pytest.mark.parametrize("how", ["apply", "aapply"])
@pytest.mark.parametrize("kind", KINDS)
def test_time_left_is_the_calls_own_wait(kind: Kind, how: str) -> None:
    """A summarizer of your own reads it; it is None outside a summarizer call."""
    seen: list[float | None] = []

    def sync(text: str, **_: Any) -> str:
        seen.append(time_left())
        return "short"

    async def async_(text: str, **_: Any) -> str:
        seen.append(time_left())
        return "short"

    pol = Policy(
        CONFIG,
        summarizer=sync if kind == "sync" else async_,
        counter=FakeCounter(),
        format="openai-chat",
    )
    body = body_with_result(LONG, "run_tests")
    result = pol.apply(body) if how == "apply" else asyncio.run(pol.aapply(body))
    assert result.report.edits[0].fallback is None
    (left,) = seen
    assert left is not None
    assert 9.0 < left <= 10.0
    assert time_left() is None
