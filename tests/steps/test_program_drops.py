"""The window's drops take or leave a call the server runs whole: a server tool's use with
its result in a later message, a program with the calls it makes after a pause and its
output (Anthropic's and OpenAI's programmatic tool calling)."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin import Policy, load_policy
from ctxwin.replay import _family_layout
from ctxwin.testing import FakeCounter

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


def _left_program() -> list[dict[str, Any]]:
    """A program whose second call, made after the client answered the first, names the
    program's server_tool_use as its caller; its result never comes: direct rounds follow
    (a program the model left, its result lost)."""
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
                {"type": "tool_use", "id": "c2", "name": "query", "input": {}, "caller": CALLER}
            ],
        },
        _result("c2"),
        *_rounds(3, 3),
    ]


def test_a_drop_takes_a_program_with_the_calls_it_made_after_a_pause() -> None:
    """The program the user left (a message of the user's own after it, no result): its
    second call goes with its server_tool_use."""
    msgs = _left_program()
    msgs.insert(5, {"role": "user", "content": "leave that, and look at the costs"})
    res = _policy(2000, "anthropic").apply({"messages": msgs})
    assert _drop_notes(res) == ["dropped messages 1..4"]
    assert ctxwin.check(res.request) == []


def test_a_program_the_model_left_goes_without_a_message_of_the_user() -> None:
    """The model wrote on after the client answered the program's call, without its result:
    the program will send nothing more (the response after its calls are answered carries
    its next calls or its result first). It held every round after it until the user's
    next message: the request stayed over the window."""
    res = _policy(2000, "anthropic").apply({"messages": _left_program()})
    assert _drop_notes(res) == ["dropped messages 1..4"]
    assert ctxwin.check(res.request) == []
    assert res.report.tokens_after <= 2000


def _advisor_left_then_rounds(rounds: int) -> list[dict[str, Any]]:
    """An advisor call a pause_turn left without its result, sent back as it came (pydantic-ai
    "round-trips verbatim" such a dangling call), then direct rounds."""
    use = {"type": "server_tool_use", "id": "srvtoolu_a", "name": "advisor", "input": {}}
    return [
        {"role": "user", "content": "plan it, then do it"},
        {"role": "assistant", "content": [{"type": "text", "text": "asking"}, use]},
        *_rounds(1, rounds),
    ]


def test_a_server_tool_left_without_its_result_lets_the_window_drop_after_it() -> None:
    """Every request of the history fits the window: the advisor's call, unanswered, held
    every round after it (nothing dropped, 18 requests over the window of 3,000, the last
    7,184 tokens); it goes as a message of its own."""
    msgs = _advisor_left_then_rounds(14)
    window = {"keep_rounds": 2, "strategy": "threshold"}
    config = {"context_window": 3000, "window": window, "overflow": "drop_oldest_rounds"}
    policy = Policy(config, counter=FakeCounter(), format="anthropic")
    for n in range(2, len(msgs) + 1):
        res = policy.apply({"messages": msgs[:n]})
        assert res.report.tokens_after <= 3000, n
        assert ctxwin.check(res.request) == [], n
    assert _drop_notes(res)[0] == "dropped messages 1..1"


def test_a_responses_program_the_model_left_goes() -> None:
    """A program item whose program_output never came (the model wrote its message and
    called on): it goes with the call it made, and the rounds after it can go."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "analyse the sales"},
        {"type": "program", "id": "pg_1", "call_id": "prog_1", "code": BIG, "fingerprint": "f"},
        {"type": "function_call", "call_id": "c1", "name": "q", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok", "caller": PROGRAM},
    ]
    items[2]["caller"] = PROGRAM
    for r in range(3, 7):
        text = {"type": "output_text", "text": BIG}
        items += [
            {"type": "message", "role": "assistant", "content": [text]},
            {"type": "function_call", "call_id": f"c{r}", "name": "q", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{r}", "output": "ok"},
        ]
    res = _policy(2000, "openai-responses").apply({"input": items})
    assert _drop_notes(res)[0] == "dropped messages 1..3"
    assert ctxwin.check(res.request) == []
    assert res.report.tokens_after <= 2000


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


def _deferred_program() -> list[dict[str, Any]]:
    """A program called beside a direct call, in a history keeping each block in a message
    of its own (Claude Code): the API returns before running it, and the response after the
    client's result starts with what the program sends (anthropics/anthropic-sdk-typescript
    #1090: "the next response's content starts with the [server tool's result]"); here its
    call, then, the call answered, its result."""
    big = "word " * 500
    done = {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {"type": "code_execution_result", "stdout": "done", "return_code": 0},
    }
    first = {"type": "tool_use", "id": "c1", "name": "q", "input": {}, "caller": CALLER}
    direct = {"type": "tool_use", "id": "d", "name": "q", "input": {}}

    def rnd(r: int) -> list[dict[str, Any]]:
        call = {"type": "tool_use", "id": f"c{r}", "name": "q", "input": {}}
        return [
            {"role": "assistant", "content": [{"type": "text", "text": big}]},
            {"role": "assistant", "content": [call]},
            _result(f"c{r}"),
        ]

    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_use(big)]},
        {"role": "assistant", "content": [direct]},
        _result("d", big * 2),
        {"role": "assistant", "content": [first]},
        _result("c1"),
        {"role": "assistant", "content": [done]},
        *rnd(2),
        *rnd(3),
    ]


def test_a_program_still_running_is_never_dropped_from_under_its_result() -> None:
    """The direct call's round, newer than the program's server_tool_use, left it out of the
    kept rounds: dropped there, the program's call came with nothing before it (the API's
    400). The program stays until it has its result, then goes whole, as the optimum has
    it. The direct call, written in the response that called the program, says nothing of
    the program: the model had not moved on."""
    msgs = _deferred_program()
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
    assert _drop_notes(fresh) == ["dropped messages 1..6"]
    assert _family_layout({"messages": msgs}, load_policy({}), "anthropic").unit_end[0] == 6
