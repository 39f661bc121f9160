"""The window's drops on random Anthropic histories where a call the server runs sends a block
after the model has left it (``_drops._running``): a server tool's result, a program's
call (with its result) or output, a server tool the program calls (with its result), at
the top of a later response. Providers do not send these so late; a client may. The
histories of ``test_program_drops_random`` otherwise. Every request checks clean, a fresh
policy gives the same request, and the policy leaves its own output as is."""

from __future__ import annotations

import random
from typing import Any

from tests.steps.test_program_drops_random import (
    CODE,
    _config,
    _deferred,
    _direct,
    _History,
    _left,
    _program,
    _words,
    checked,
)


class _Late(_History):
    """A history whose left calls send blocks later: ``later`` holds them (with the ids of
    the client's calls among them, which the next answer must answer too)."""

    def __init__(self, rng: random.Random, split: bool) -> None:
        super().__init__(rng, split)
        self.later: list[tuple[list[dict[str, Any]], list[str]]] = []
        self.owed: list[str] = []

    def answer(self, *ids: str) -> None:
        owed, self.owed = self.owed, []
        super().answer(*owed, *ids)

    def bring_late(self) -> None:
        """The next response starts with the blocks of a left call, if one has some."""
        if self.later and not self.top:
            blocks, owed = self.later.pop(self.rng.randrange(len(self.later)))
            self.top, self.owed = blocks, owed


def _left_search(h: _Late) -> None:
    """A server tool called beside a direct call, left: the model writes on after the
    client's result. Its result comes later."""
    sid, use = h.server(h.rng.choice(("web_search", "web_fetch")))
    cid, call = h.call()
    h.respond(h.text(), use, call)
    h.answer(cid)
    _direct(h)
    kind = f"{use['name']}_tool_result"
    h.later.append(([{"type": kind, "tool_use_id": sid, "content": []}], []))


def _left_program(h: _Late) -> None:
    """A program whose call is answered, left: the model writes on. Later, one of: a call
    it makes, its output, or a server tool it calls with that tool's result."""
    pid, use = h.server("code_execution")
    cid, call = h.call(pid)
    h.respond(h.text(), use, call)
    h.answer(cid)
    _direct(h)
    late = h.rng.randrange(3)
    if late == 0:
        cid, call = h.call(pid)
        h.later.append(([call], [cid]))
    elif late == 1:
        out = {"type": "code_execution_result", "stdout": _words(h.rng, "std"), "return_code": 0}
        block = {"type": "code_execution_tool_result", "tool_use_id": pid, "content": out}
        h.later.append(([block], []))
    else:
        sid, search = h.server("web_search")
        search["caller"] = {"type": CODE, "tool_id": pid}
        found = {"type": "web_search_tool_result", "tool_use_id": sid, "content": []}
        h.later.append(([search, found], []))


def history(rng: random.Random) -> list[dict[str, Any]]:
    h = _Late(rng, split=rng.random() < 0.5)
    kinds = (_program, _deferred, _left, _direct, _left_search, _left_program, _left_program)
    for _ in range(rng.randint(6, 16)):
        if not h.top and rng.random() < 0.15:
            h.msgs.append({"role": "user", "content": _words(rng, "user")})
        if rng.random() < 0.5:
            h.bring_late()
        kind = rng.choice(kinds)
        if h.top and kind in (_program, _deferred, _left):
            kind = _direct  # what a late block comes before: a response the client answers
        kind(h)
    h.respond(h.text())
    return h.msgs


def _requests(seed: int) -> tuple[int, int]:
    """A random policy on a random history (``checked``): requests, and those that dropped
    a late block."""
    rng = random.Random(seed)
    msgs = history(rng)
    late = "before it came"
    return checked(
        seed, msgs, _config(rng), lambda r: any(late in (e.note or "") for e in r.report.edits)
    )


def test_every_request_is_clean_fresh_and_its_own_fixed_point() -> None:
    rows = [_requests(seed) for seed in range(40)]
    assert sum(r for r, _ in rows) > 500
    assert sum(d for _, d in rows) > 50  # the late blocks are there to check
