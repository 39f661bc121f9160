"""The window's drops on random Anthropic histories with calls the server runs, in the
shapes the API produces them: a program pausing at its calls, its result at the top of the
response after its last call is answered; a server tool deferred beside a direct call, its
result at the top of the next response (anthropics/anthropic-sdk-typescript#1090); a server
tool left without its result (a ``pause_turn`` sent back as it came), which the model then
writes on after. Histories keep each response in one message, or each block in a message of
its own (Claude Code). Every request checks clean, a fresh policy gives the same request,
the policy leaves its own output as is, and it never pays less than the optimum of its
family (:mod:`ctxwin._optimum`)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

import ctxwin
from ctxwin.replay import replay, request_points
from ctxwin.testing import FakeCounter

CODE = "code_execution_20250825"


def _words(rng: random.Random, word: str) -> str:
    return " ".join([word] * rng.choice((5, 40, 200, 600)))


class _History:
    """A growing Anthropic history: responses, and the client's answers to them."""

    def __init__(self, rng: random.Random, split: bool) -> None:
        self.rng = rng
        self.split = split
        self.msgs: list[dict[str, Any]] = [{"role": "user", "content": "the task"}]
        self.top: list[dict[str, Any]] = []  # what the next response starts with
        self.n = 0

    def id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def respond(self, *blocks: dict[str, Any]) -> None:
        content = [*self.top, *blocks]
        self.top = []
        if self.split:
            self.msgs += [{"role": "assistant", "content": [b]} for b in content]
        else:
            self.msgs.append({"role": "assistant", "content": content})

    def answer(self, *ids: str) -> None:
        results = [
            {"type": "tool_result", "tool_use_id": i, "content": _words(self.rng, "out")}
            for i in ids
        ]
        self.msgs.append({"role": "user", "content": results})

    def text(self) -> dict[str, Any]:
        return {"type": "text", "text": _words(self.rng, "says")}

    def call(self, caller: str | None = None) -> tuple[str, dict[str, Any]]:
        cid = self.id("toolu_")
        block = {"type": "tool_use", "id": cid, "name": "q", "input": {}}
        if caller is not None:
            block["caller"] = {"type": CODE, "tool_id": caller}
        return cid, block

    def server(self, name: str) -> tuple[str, dict[str, Any]]:
        sid = self.id("srvtoolu_")
        code = {"code": _words(self.rng, "code")}
        return sid, {"type": "server_tool_use", "id": sid, "name": name, "input": code}


def _program(h: _History) -> None:
    """A program that pauses at one to three calls, then ends."""
    pid, use = h.server("code_execution")
    cid, call = h.call(pid)
    h.respond(h.text(), use, call)
    for _ in range(h.rng.randint(0, 2)):
        h.answer(cid)
        cid, call = h.call(pid)
        h.respond(call)
    h.answer(cid)
    out = {"type": "code_execution_result", "stdout": _words(h.rng, "std"), "return_code": 0}
    h.top = [{"type": "code_execution_tool_result", "tool_use_id": pid, "content": out}]


def _deferred(h: _History) -> None:
    """A server tool called beside a direct call: the API runs it after the client's result."""
    sid, use = h.server(h.rng.choice(("web_fetch", "code_execution")))
    cid, call = h.call()
    h.respond(h.text(), use, call)
    h.answer(cid)
    if use["name"] == "code_execution" and h.rng.random() < 0.5:  # a program's call first
        cid, call = h.call(sid)
        h.respond(call)
        h.answer(cid)
    kind = "web_fetch_tool_result" if use["name"] == "web_fetch" else "code_execution_tool_result"
    h.top = [{"type": kind, "tool_use_id": sid, "content": {"type": "x"}}]


def _left(h: _History) -> None:
    """An advisor call left without its result, the model writing on in a direct round."""
    _, use = h.server("advisor")
    h.respond(h.text(), use)
    cid, call = h.call()
    h.respond(h.text(), call)
    h.answer(cid)


def _direct(h: _History) -> None:
    cid, call = h.call()
    h.respond(h.text(), call)
    h.answer(cid)


def history(rng: random.Random) -> list[dict[str, Any]]:
    h = _History(rng, split=rng.random() < 0.5)
    for _ in range(rng.randint(4, 14)):
        if not h.top and rng.random() < 0.15:
            h.msgs.append({"role": "user", "content": _words(rng, "user")})
        rng.choice((_program, _deferred, _deferred, _left, _direct))(h)
    h.respond(h.text())
    return h.msgs


def _config(rng: random.Random) -> dict[str, Any]:
    return {
        "context_window": rng.choice((1_500, 3_000, 6_000)),
        "window": {
            "keep_rounds": rng.choice((1, 1, 2, 3)),
            "strategy": rng.choice(("threshold", "cost")),
        },
        "overflow": "drop_oldest_rounds",
    }


def _policy(config: dict[str, Any]) -> ctxwin.Policy:
    return ctxwin.Policy(config, counter=FakeCounter(), format="anthropic")


def checked(
    seed: int, msgs: list[dict[str, Any]], config: dict[str, Any], counts: Callable[[Any], bool]
) -> tuple[int, int]:
    """Apply a policy at every request of a history, checking each is clean, a fresh
    policy's and its own fixed point: how many requests, and how many ``counts`` holds for
    (given the result)."""
    policy = _policy(config)
    requests = counted = 0
    for t in request_points({"messages": msgs}, "anthropic"):
        body = {"messages": msgs[:t]}
        result = policy.apply(body)
        assert ctxwin.check(result.request, "anthropic") == [], (seed, t)
        assert _policy(config).apply(body).request == result.request, (seed, t)
        assert _policy(config).apply(result.request).request == result.request, (seed, t)
        requests += 1
        counted += counts(result)
    return requests, counted


def _requests(seed: int) -> tuple[int, int]:
    """A random policy on a random history (:func:`checked`): requests, and those that
    dropped."""
    rng = random.Random(seed)
    msgs = history(rng)
    return checked(
        seed, msgs, _config(rng), lambda r: any(e.step == "drop" for e in r.report.edits)
    )


def test_every_request_is_clean_fresh_and_its_own_fixed_point() -> None:
    rows = [_requests(seed) for seed in range(40)]
    assert sum(r for r, _ in rows) > 400
    assert sum(d for _, d in rows) > 150  # the drops are there to check


@pytest.mark.parametrize("seed", range(6))
def test_the_policy_never_pays_less_than_the_optimum_of_its_family(seed: int) -> None:
    rng = random.Random(100 + seed)
    msgs = history(rng)
    run = replay({"messages": msgs}, _policy(_config(rng)), format="anthropic", optimum=True)
    assert run.optimum is not None
    assert run.managed.effective_cost >= run.optimum.effective_cost * (1 - 1e-9)
