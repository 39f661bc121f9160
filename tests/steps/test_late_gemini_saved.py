"""What the steps saved on results edited late (``edit_latest: false``), as the window's
fold counts it (``FoldState.edited``: the budget ``max_overrun`` may risk), when results
without call ids share a message (Gemini): only the late result's own edits count, warm as
fresh."""

from __future__ import annotations

import copy
from typing import Any

import ctxwin
from ctxwin.steps.window import Window
from ctxwin.testing import FakeCounter

CONFIG = {
    "context_window": 1_000_000,
    "window": {"strategy": "cost", "keep_rounds": 1},
    "tools": {
        "read_file": {"max_tokens": 30, "edit_latest": False},
        "get_order": {"max_tokens": 30},
    },
}


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i % 5}" for i in range(n))


def response(name: str, text: str) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"output": text}}}


def contents() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "go " + words(50, "t")}]}]
    for r in range(3):
        calls = [("read_file", {"p": f"f{r}"}), ("get_order", {"o": r})]
        parts = [{"functionCall": {"name": n, "args": a}} for n, a in calls]
        out.append({"role": "model", "parts": parts})
        results = [
            response("read_file", words(400, f"a{r}")),
            response("get_order", words(300, f"b{r}")),
        ]
        out.append({"role": "user", "parts": results})
    return out


def edited(policy: ctxwin.Policy) -> int:
    window = next(s for s in policy.steps if isinstance(s, Window))
    return window._folds._entries[0][1].state.edited


def test_a_warm_fold_counts_what_the_caps_saved_as_a_fresh_one_does() -> None:
    history = contents()
    warm = ctxwin.Policy(copy.deepcopy(CONFIG), counter=FakeCounter(), format="gemini")
    for t in (3, 5, 7):  # before each model turn, then the whole history
        body = {"contents": history[:t]}
        warm.apply(body)
        fresh = ctxwin.Policy(copy.deepcopy(CONFIG), counter=FakeCounter(), format="gemini")
        result = fresh.apply(copy.deepcopy(body))
        caps = sum(e.saved for e in result.report.edits if e.step == "cap")
        assert edited(warm) == edited(fresh) == caps, t
