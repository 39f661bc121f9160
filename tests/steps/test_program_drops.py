"""The window's drops take or leave a call the server runs whole: a server tool's use with
its result in a later message, a program with the calls it makes after a pause and its
output (Anthropic's and OpenAI's programmatic tool calling)."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin import Policy, load_policy
from ctxwin.replay import _family_layout

BIG = "word " * 500
DROPS = {
    "context_window": 2575,
    "window": {
        "keep_rounds": 2,
        "trigger": 0.95,
        "target": 0.9,
        "drop_target": 0.9,
        "strategy": "threshold",
    },
    "overflow": "drop_oldest_rounds",
}
CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
PROGRAM = {"type": "program", "caller_id": "prog_1"}


def _use(text: str = "await query('x')") -> dict[str, Any]:
    return {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "code_execution",
        "input": {"code": text},
    }


def _result(cid: str, text: str = "ok") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": cid, "content": text}],
    }


def _rounds(first: int, n: int) -> list[dict[str, Any]]:
    """``n`` rounds of direct calls, each with a long text."""
    out: list[dict[str, Any]] = []
    for r in range(first, first + n):
        call = {"type": "tool_use", "id": f"c{r}", "name": "query", "input": {}}
        out += [
            {"role": "assistant", "content": [{"type": "text", "text": BIG}, call]},
            _result(f"c{r}"),
        ]
    return out


def _program_then_rounds() -> list[dict[str, Any]]:
    """The issue's history: a program's code execution result comes with the next call."""
    exec_result = {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {"type": "code_execution_result", "stdout": "done", "return_code": 0},
    }
    return [
        {"role": "user", "content": "analyse the sales"},
        {
            "role": "assistant",
            "content": [
                _use(BIG),
                {"type": "tool_use", "id": "c1", "name": "query", "input": {}, "caller": CALLER},
            ],
        },
        _result("c1"),
        {
            "role": "assistant",
            "content": [
                exec_result,
                {"type": "tool_use", "id": "c2", "name": "query", "input": {"sql": BIG}},
            ],
        },
        _result("c2"),
        *_rounds(3, 3),
    ]


def _policy(window: int, fmt: str) -> Policy:
    return Policy({**DROPS, "context_window": window}, format=fmt)


def _drop_notes(result: ctxwin.Result) -> list[str | None]:
    return [e.note for e in result.report.edits if e.step == "drop"]


def test_a_drop_takes_a_program_with_its_code_execution_result() -> None:
    """The result of the program's server_tool_use comes two messages later: dropping the
    first round alone left it without its server_tool_use (the API answers 400)."""
    res = Policy(DROPS, format="anthropic").apply({"messages": _program_then_rounds()})
    assert _drop_notes(res) == ["dropped messages 1..4"]
    assert ctxwin.check(res.request) == []


def test_a_drop_takes_a_program_with_the_calls_it_made_after_a_pause() -> None:
    """A program the user left (a message of the user's own after it, no result): its
    second call, made after the client answered the first, names the program's
    server_tool_use as its caller and goes with it. In the turn it runs in, it stays: its
    result may still come, and with nothing before it is a 400."""
    msgs = [
        {"role": "user", "content": "analyse the sales"},
        {
            "role": "assistant",
            "content": [
                _use(BIG),
                {"type": "tool_use", "id": "c1", "name": "query", "input": {}, "caller": CALLER},
            ],
        },
        _result("c1"),
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c2", "name": "query", "input": {}, "caller": CALLER}
            ],
        },
        _result("c2"),
        *_rounds(3, 3),
    ]
    running = _policy(2000, "anthropic").apply({"messages": msgs})
    assert _drop_notes(running) == []
    msgs.insert(5, {"role": "user", "content": "leave that, and look at the costs"})
    res = _policy(2000, "anthropic").apply({"messages": msgs})
    assert _drop_notes(res) == ["dropped messages 1..4"]
    assert ctxwin.check(res.request) == []


def test_a_drop_takes_a_server_tool_use_with_its_result_in_the_next_message() -> None:
    """A history that keeps each block in a message of its own (Claude Code): dropping the
    advisor's server_tool_use alone left its result behind (anthropics/claude-code#62577)."""
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "advisor", "input": {"q": BIG}}
    advice = {"type": "advisor_result", "text": "plan"}
    result = {"type": "advisor_tool_result", "tool_use_id": "srvtoolu_1", "content": advice}
    msgs = [
        {"role": "user", "content": "plan it"},
        {"role": "assistant", "content": [use]},
        {"role": "assistant", "content": [result]},
        {"role": "user", "content": "go on"},
        *_rounds(1, 4),
    ]
    res = Policy(DROPS, format="anthropic").apply({"messages": msgs})
    assert _drop_notes(res) == ["dropped messages 1..2"]
    assert ctxwin.check(res.request) == []


def test_a_drop_takes_a_responses_program_with_its_calls_and_output() -> None:
    """The program item (with the fingerprint the server replays it by), the calls it made
    after a pause and its program_output go together: here with the call in the
    program_output's turn, which takes the round after it too."""
    items = [
        {"role": "user", "content": "analyse the sales"},
        {"type": "program", "id": "pg_1", "call_id": "prog_1", "code": BIG, "fingerprint": "f"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "q",
            "arguments": "{}",
            "caller": PROGRAM,
        },
        {"type": "function_call_output", "call_id": "c1", "output": "ok", "caller": PROGRAM},
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "q",
            "arguments": "{}",
            "caller": PROGRAM,
        },
        {"type": "function_call_output", "call_id": "c2", "output": "ok", "caller": PROGRAM},
        {
            "type": "program_output",
            "id": "po_1",
            "call_id": "prog_1",
            "result": "done",
            "status": "completed",
        },
    ]
    for r in range(3, 6):
        text = {"type": "output_text", "text": BIG}
        items += [
            {"type": "message", "role": "assistant", "content": [text]},
            {"type": "function_call", "call_id": f"c{r}", "name": "q", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{r}", "output": "ok"},
        ]
    res = _policy(2000, "openai-responses").apply({"input": items})
    assert _drop_notes(res) == [
        "dropped messages 1..9 (to fit the window: only the newest round kept)"
    ]
    assert ctxwin.check(res.request) == []


def test_a_fold_resumed_with_a_program_decides_as_a_fresh_one() -> None:
    """Each request of a growing history, through one policy, ends as a fresh policy's
    apply of the whole history does."""
    msgs = _program_then_rounds()
    policy = Policy(DROPS, format="anthropic")
    for n in range(2, len(msgs) + 1):
        policy.apply({"messages": msgs[:n]})
    fresh = Policy(DROPS, format="anthropic").apply({"messages": msgs})
    assert policy.apply({"messages": msgs}).request == fresh.request


def test_the_optimum_drops_a_program_as_one_unit() -> None:
    """The optimum's family drops the units the window drops (``_layout._units``)."""
    lay = _family_layout({"messages": _program_then_rounds()}, load_policy({}), "anthropic")
    assert lay.unit_end == (4, 6, 8, 10)


def test_a_program_still_running_is_never_dropped_from_under_its_result() -> None:
    """Its code_execution_tool_result comes rounds later: a drop before it took the
    server_tool_use, and the result then came with nothing before it (the API's 400). The
    program now stays until it has its result, then goes whole, as the optimum has it."""
    big = "word " * 500
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    use = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "code_execution",
        "input": {"code": "x"},
    }
    done = {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {"type": "code_execution_result", "stdout": "done", "return_code": 0},
    }

    def res(cid: str) -> dict[str, Any]:
        return {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": cid, "content": "ok"}],
        }

    def rnd(r: int, *extra: dict[str, Any]) -> list[dict[str, Any]]:
        call = {"type": "tool_use", "id": f"c{r}", "name": "q", "input": {}}
        return [
            {"role": "assistant", "content": [*extra, {"type": "text", "text": big}, call]},
            res(f"c{r}"),
        ]

    first = {"type": "tool_use", "id": "c1", "name": "q", "input": {}, "caller": caller}
    msgs = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use, {"type": "text", "text": big}, first]},
        res("c1"),
        *rnd(2),
        *rnd(3),
        *rnd(4, done),
        *rnd(5),
    ]
    window = {
        "keep_rounds": 1,
        "trigger": 0.95,
        "target": 0.9,
        "drop_target": 0.9,
        "strategy": "threshold",
    }
    config = {"context_window": 1500, "window": window, "overflow": "drop_oldest_rounds"}
    step_by_step = Policy(config, format="anthropic")
    for n in range(2, len(msgs) + 1):
        result = step_by_step.apply({"messages": msgs[:n]})
        assert ctxwin.check(result.request) == [], n
    fresh = Policy(config, format="anthropic").apply({"messages": msgs})
    assert fresh.request == result.request
    assert _drop_notes(fresh) == ["dropped messages 1..8"]
    assert _family_layout({"messages": msgs}, load_policy({}), "anthropic").unit_end[0] == 8
