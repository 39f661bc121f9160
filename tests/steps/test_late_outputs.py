"""A ``function_call_output`` sent long after its ``function_call``, other items between
(a tool that ran in the background, a user message, other turns and their outputs): the
Responses API pairs an output to its call by ``call_id`` wherever it stands after it. The
round then stretched over everything between, and the window could drop none of it: 1,785
tokens went to a 900-token window. Its unit is now its turn and its outputs, not what
stands between (``_drops.spread_unit``): the units between go and the old round stays with
its late output, paired; when even that is over the window, the round goes with it.

Before the output comes, each request holds the call alone, and repair answers it with a
synthetic error output right after it; the request that brings the real one is a history
of its own (the window decides it afresh). Every request of the sequence checks clean, fits
the window, keeps its newest round untouched, decides as a fresh policy does and is its own
fixed point."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin import Policy
from ctxwin.replay import replay
from ctxwin.testing import FakeCounter

WINDOW = 900
CONFIG = {
    "context_window": WINDOW,
    "window": {"keep_rounds": 1, "strategy": "threshold"},
    "overflow": "drop_oldest_rounds",
}
FMT = "openai-responses"


def _words(n: int, word: str) -> str:
    return " ".join([word] * n)


def _call(cid: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": "shell", "arguments": "{}"}


def _output(cid: str, n: int, word: str = "o") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": _words(n, word)}


def _say(role: str, n: int, word: str) -> dict[str, Any]:
    return {"role": role, "content": _words(n, word)}


def _policy(config: dict[str, Any] = CONFIG, fmt: str = FMT) -> Policy:
    return Policy(config, counter=FakeCounter(), format=fmt)


def _rounds(first: int, n: int) -> list[dict[str, Any]]:
    """``n`` turns of the user's, each with a call, its output and an answer."""
    out: list[dict[str, Any]] = []
    for r in range(first, first + n):
        out += [_say("user", 150, f"u{r}"), _call(f"c{r}"), _output(f"c{r}", 200)]
        out.append(_say("assistant", 100, f"a{r}"))
    return out


def _background(said: int = 150) -> list[dict[str, Any]]:
    """A call whose output comes five turns later, then one more round."""
    return [
        _say("user", 5, "task"),
        _call("bg"),
        _say("assistant", said, "started"),
        *_rounds(0, 5),
        _output("bg", 300, "late"),
        _call("z"),
        _output("z", 50),
    ]


def _every_request(items: list[dict[str, Any]], config: dict[str, Any] = CONFIG) -> ctxwin.Result:
    """Apply one policy at every length: each request checks clean, fits the window, keeps
    its newest round's output as it came, is what a fresh policy gives and is its own fixed
    point. The last result."""
    policy = _policy(config)
    for n in range(1, len(items) + 1):
        body = {"input": items[:n]}
        result = policy.apply(body)
        assert ctxwin.check(result.request, FMT) == [], n
        assert result.report.tokens_after <= config["context_window"], n
        assert _policy(config).apply(body).request == result.request, n
        assert _policy(config).apply(result.request).request == result.request, n
        calls = [i for i in items[:n] if i.get("type") == "function_call"]
        newest = [i for i in items[:n] if calls and i.get("call_id") == calls[-1]["call_id"]]
        assert all(i in result.request["input"] for i in newest), n  # as it came
    return result


def _drop_notes(result: ctxwin.Result) -> list[str | None]:
    return [e.note for e in result.report.edits if e.step == "drop"]


def test_a_late_output_fits_the_window_with_its_call() -> None:
    """The units between the call and its output go; the call and its output stay, paired
    (the output cleared: its round is old, and over the window a late output is cleared
    as its call's round, rather than dropped with it)."""
    result = _every_request(_background()[:24])
    sent = result.request["input"]
    assert sent[1] == _call("bg")
    assert sent[-1]["call_id"] == "bg"
    assert sent[-1]["output"].startswith("[shell result cleared")
    assert result.report.tokens_after == 657  # 1,785 before
    assert _drop_notes(result)[:2] == ["dropped messages 3..3", "dropped messages 4..5"]


def test_the_old_round_goes_with_its_late_output_once_they_leave_the_kept_rounds() -> None:
    """Its output among the kept rounds no more, the old round is a unit of its turn and its
    output, messages apart, and goes whole when the window needs room."""
    items = [*_background(), *_rounds(5, 3)]
    result = _every_request(items)
    assert all(i.get("call_id") != "bg" for i in result.request["input"])
    assert "dropped messages 1..2, 23..23" in _drop_notes(result)


def test_an_old_round_too_long_to_keep_goes_with_its_late_output() -> None:
    """The call's turn alone is over the window with the newest round: the round goes, its
    late output with it, so that the request fits."""
    result = _every_request(_background(said=700)[:24])
    assert [i for i in result.request["input"] if i.get("call_id") == "bg"] == []
    assert _drop_notes(result)[-1] == (
        "dropped messages 1..2, 23..23 (to fit the window: only the newest round kept, "
        "an old round with its late output)"
    )


def test_parallel_outputs_interleaved_with_later_turns() -> None:
    """Two calls of one turn, the second's output after the user's next turn and a round
    of its own; the rounds around go as the window fills."""
    items = [
        _say("user", 5, "task"),
        _call("p1"),
        _call("p2"),
        _output("p1", 300),
        *_rounds(0, 2),
        _output("p2", 300, "late"),
        *_rounds(2, 3),
    ]
    result = _every_request(items)
    assert result.report.tokens_before > WINDOW


def test_the_family_optimum_stays_below_the_window_with_a_late_output() -> None:
    """The optimum's family (``_layout._units``) leaves a late output out of its round's
    unit, as the window does: it may drop what stands between them."""
    items = [*_background(), *_rounds(5, 3)]
    run = replay({"input": items}, _policy(), format=FMT, optimum=True)
    assert run.optimum is not None
    assert run.managed.effective_cost >= run.optimum.effective_cost


def test_a_late_output_goes_whole_in_the_request_that_brings_it() -> None:
    """An output that comes long after its call (a background job, Codex's exec cell
    notifying) is the newest item the model is about to read: its call's round left the
    kept rounds long ago, yet it waits, as the newest rounds' results do, until the round
    it came in leaves them, so no jump clears it unread (under cost one was free: nothing
    after the jump's start is cached)."""
    config = {"context_window": 1_000_000, "pricing": "anthropic", "window": {"keep_rounds": 2}}
    whole = []
    for rounds in range(3, 40):
        items = [_say("user", 5, "task"), _call("bg")]
        for r in range(rounds):
            items += [_call(f"c{r}"), _output(f"c{r}", 300)]
        items.append(_output("bg", 400, "late"))
        sent = _policy(config).apply({"input": items}).request["input"]
        whole.append(sent[-1] == items[-1])
    assert all(whole)


def test_a_late_output_is_cleared_once_the_round_it_came_in_leaves_the_kept_rounds() -> None:
    """Seen once whole, the late output is an old round's result like any other (over
    the ceiling, the rounds before it are cleared while it waits)."""
    window = {"keep_rounds": 1, "strategy": "threshold", "trigger": 0.3, "target": 0.29}
    config = {"context_window": 4000, "window": window}
    items = [*_background()[:24], _say("assistant", 5, "ok")]
    sent = _policy(config).apply({"input": items[:24]}).request["input"]
    assert sent[-1] == items[23]
    assert sent[5]["output"].startswith("[shell result cleared")  # round c0's
    sent = _policy(config).apply({"input": [*items, _call("z")]}).request["input"]
    assert sent[23]["output"].startswith("[shell result cleared")


def test_a_late_tool_result_in_anthropic_is_repaired_before_the_window() -> None:
    """Anthropic wants a tool_result in the message right after its call: one sent later is
    a pairing problem, which repair fixes (moved to right after the call's turn) before
    the window sees it; the request checks clean and fits."""

    def tool_use(cid: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": cid, "name": "q", "input": {}}],
        }

    def tool_result(cid: str, n: int) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": cid, "content": _words(n, "o")}
        return {"role": "user", "content": [block]}

    msgs: list[dict[str, Any]] = [{"role": "user", "content": "task"}, tool_use("bg")]
    msgs.append({"role": "user", "content": _words(150, "u")})
    for r in range(4):
        msgs += [tool_use(f"c{r}"), tool_result(f"c{r}", 200)]
    msgs += [tool_result("bg", 300), {"role": "assistant", "content": "done"}]
    assert ctxwin.check({"messages": msgs}, "anthropic") != []
    result = _policy(fmt="anthropic").apply({"messages": msgs})
    assert ctxwin.check(result.request, "anthropic") == []
    assert result.report.tokens_after <= WINDOW
