"""``edit_latest: false`` and the window: a result goes whole while its round is the latest
and edited from the next round on; the window decides on each request as it was sent
(:mod:`ctxwin.steps._late`), so what it cleared stays cleared, it equals a fresh policy, and
it resumes from the previous request instead of folding the whole history again."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import ctxwin
import ctxwin.steps._fold as fold_module
import ctxwin.steps.edit_results as edit_results_module
from ctxwin.testing import FakeCounter
from tests.steps.test_late_blocks import CALLER, _call, _left_program

SIZES = [20, 400, 60, 200, 400, 20, 200, 60, 400, 400, 20, 200]


def _config(strategy: str) -> dict[str, Any]:
    return {
        "context_window": 4000 if strategy == "cost" else 6000,
        "tokenizer": "o200k_base",
        "window": {"keep_rounds": 1, "strategy": strategy},
        "overflow": "drop_oldest_rounds",
        "tools": {"*": {"max_tokens": 150, "edit_latest": False}},
    }


def _history(steps: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "task one"}]
    for s in range(steps):
        call = {"type": "tool_use", "id": f"t{s}", "name": "read", "input": {"p": s}}
        history.append({"role": "assistant", "content": [call]})
        text = " ".join(f"w{i}" for i in range(SIZES[s % len(SIZES)]))
        history.append({"role": "user", "content": [_result(f"t{s}", text)]})
    return history


def _result(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


def _results(request: dict[str, Any]) -> dict[str, str]:
    return {
        block["tool_use_id"]: block["content"]
        for msg in request["messages"]
        if isinstance(msg["content"], list)
        for block in msg["content"]
        if block.get("type") == "tool_result"
    }


def _body(history: list[dict[str, Any]], model: str = "claude-opus-4-5") -> dict[str, Any]:
    """The request: the history's own message objects, as an agent loop sends them (the
    policy finds what it did with them before, and resumes)."""
    return {"model": model, "max_tokens": 100, "messages": list(history)}


@pytest.mark.parametrize("strategy", ["cost", "threshold"])
def test_a_result_the_window_cleared_stays_cleared(strategy: str) -> None:
    """Each request of a growing loop: what an earlier request sent as a placeholder is a
    placeholder still (before, a result sent whole took a request over the trigger, the
    window cleared the oldest, and the next request, with that result capped, found no
    reason to: they came back whole, and the prompt cache broke there), every result is
    whole while its round is the latest and capped after, and a fresh policy agrees."""
    config = _config(strategy)
    policy = ctxwin.load_policy(config)
    history = _history(40)
    earlier: dict[str, str] = {}
    cleared = 0
    for n in range(3, len(history) + 1, 2):  # each ends with a result
        body = _body(history[:n])
        request = policy.apply(body, format="anthropic").request
        assert ctxwin.check(request) == []
        fresh = ctxwin.load_policy(config).apply(copy.deepcopy(body), format="anthropic")
        assert fresh.request == request, n
        now = _results(request)
        for call_id, text in earlier.items():
            if "cleared to save context" in text and call_id in now:
                assert now[call_id] == text, (n, call_id)
        cleared += sum("cleared to save context" in t for t in now.values())
        latest = f"t{n // 2 - 1}"  # the latest round's
        whole = {c for c, t in now.items() if len(t.split()) > 150 and "cleared" not in t}
        assert whole <= {latest}, n
        earlier = now
    assert cleared, "the window never cleared: the test tests nothing"


def test_the_window_resumes_where_the_previous_request_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The result of the latest round reads otherwise once the next round comes (capped):
    the window takes that edit in where it came, and folds only the new messages, not the
    whole history again at every request."""
    entered: list[int] = []
    enter = fold_module._enter

    def counting(st: Any, conv: Any, k: int, ctx: Any) -> None:
        entered.append(k)
        enter(st, conv, k, ctx)

    monkeypatch.setattr(fold_module, "_enter", counting)
    policy = ctxwin.load_policy({**_config("cost"), "context_window": 1_000_000})
    history = _history(30)
    for n in range(3, len(history) - 1, 2):  # each ends with a result
        policy.apply(_body(history[:n]), format="anthropic")
    entered.clear()
    policy.apply(_body(history), format="anthropic")
    assert entered == [len(history) - 2, len(history) - 1]


def test_results_held_whole_are_looked_at_again_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a model that checks its thinking's prefix, the result that ended a task stays
    whole through the next task's turn: each request looks at it again, and at its new
    messages, not at every message after it."""
    looked: list[int] = []
    message = edit_results_module.EditResults._message

    def counting(self: Any, msg: Any, mi: int, *args: Any) -> Any:
        looked.append(mi)
        return message(self, msg, mi, *args)

    monkeypatch.setattr(edit_results_module.EditResults, "_message", counting)
    policy = ctxwin.load_policy({**_config("cost"), "context_window": 1_000_000})
    think = {"type": "thinking", "thinking": "plan", "signature": "sig"}
    history = _history(2)
    history.append({"role": "assistant", "content": [think, {"type": "text", "text": "done"}]})
    history.append({"role": "user", "content": "task two"})
    for s in range(2, 30):
        call = {"type": "tool_use", "id": f"t{s}", "name": "read", "input": {"p": s}}
        history.append({"role": "assistant", "content": [think, call]})
        history.append({"role": "user", "content": [_result(f"t{s}", "w " * 300)]})
        looked.clear()
        request = policy.apply(_body(history, "claude-fable-5-2"), format="anthropic").request
    held = _results(request)["t1"]
    assert len(held.split()) > 150, "the result that ended the task was not held whole"
    # the held result (message 4), the round that left the latest (its call and result:
    # only the result's message holds results), and the two new messages
    assert looked == [4, len(history) - 4 + 1, len(history) - 2, len(history) - 1]


def test_an_edit_coming_in_on_a_message_a_drop_cut_blocks_of() -> None:
    """A message holding a result of ``edit_latest: false`` and a result the window cut as
    it came (a call a dropped program made): taking the edit in rebuilt the message from
    clearings it did not have (a bare KeyError out of ``apply``); the message is now the
    edited one without the cut block, and a fresh policy agrees."""
    config = {
        "context_window": 900,
        "window": {"keep_rounds": 1, "strategy": "threshold"},
        "overflow": "drop_oldest_rounds",
        "tools": {"q": {"edit_latest": False, "max_tokens": 30}},
    }
    big = "word " * 200
    messages = [
        *_left_program(),
        {"role": "assistant", "content": [_call("p2", CALLER), _call("c9")]},
        {
            "role": "user",
            "content": [
                _result("p2", "ok"),
                _result("c9", big),
            ],
        },
        {"role": "assistant", "content": [_call("c10")]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c10", "content": "ok"}],
        },
    ]
    policy = ctxwin.Policy(config, counter=FakeCounter(), format="anthropic")
    policy.apply({"messages": messages[:-2]})
    request = policy.apply({"messages": messages}).request
    assert ctxwin.check(request, "anthropic") == []
    fresh = ctxwin.Policy(config, counter=FakeCounter(), format="anthropic")
    assert fresh.apply({"messages": copy.deepcopy(messages)}).request == request
    c9 = _results(request)["c9"]
    assert len(c9.split()) < 100, "the result was not capped once its round left the latest"


def test_a_request_reads_only_what_is_new_of_the_late_edits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The list of late edits only grows while a history is resumed: the window reads what
    it has not read of it (it built it anew at every request, O(results) each), and finding
    whether a result that ended a task is still held looks no further than the user's
    latest message (it scanned to the end of the history for each such result)."""
    import ctxwin.steps._late as late_module
    import ctxwin.steps.window as window_module

    built: list[int] = []

    class Counted(late_module.Late):
        def __init__(self, changed: Any) -> None:
            built.append(len(changed))
            super().__init__(changed)

    looked: list[int] = []
    is_user_text = edit_results_module.is_user_text

    def counting(msg: Any) -> bool:
        looked.append(1)
        return is_user_text(msg)

    monkeypatch.setattr(window_module, "Late", Counted)
    monkeypatch.setattr(edit_results_module, "is_user_text", counting)
    policy = ctxwin.load_policy({**_config("cost"), "context_window": 1_000_000})
    think = {"type": "thinking", "thinking": "plan", "signature": "sig"}
    history = _history(2)
    history.append({"role": "assistant", "content": [think, {"type": "text", "text": "done"}]})
    history.append({"role": "user", "content": "task two"})
    per_request = []
    for s in range(2, 120):
        call = {"type": "tool_use", "id": f"t{s}", "name": "read", "input": {"p": s}}
        history.append({"role": "assistant", "content": [think, call]})
        history.append({"role": "user", "content": [_result(f"t{s}", "w " * 300)]})
        looked.clear()
        request = policy.apply(_body(history, "claude-fable-5-2"), format="anthropic").request
        per_request.append(len(looked))
    assert len(_results(request)["t1"].split()) > 150, "the held result was not held whole"
    assert len(built) == 1, "the late edits were read anew"
    assert max(per_request[-20:]) <= 10, per_request[-20:]
