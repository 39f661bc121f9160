"""A block tied to a call the server runs that comes after the window dropped that call (a
call the model had left, ``_drops._running``): providers do not send one so late, but a
client may hold a history that has it. The window drops it as it comes, with what it opens
or answers, as part of the unit it would have belonged to: kept, it came with nothing
before it (the provider's 400). Every request of the sequence checks clean, decides as a
fresh policy does, and is its own fixed point."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin import Policy
from ctxwin.replay import _family_layout, replay
from ctxwin.testing import FakeCounter

BIG = "word " * 300
WINDOW = {"keep_rounds": 1, "strategy": "threshold"}
CONFIG = {"context_window": 900, "window": WINDOW, "overflow": "drop_oldest_rounds"}
CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_p"}
PROGRAM = {"type": "program", "caller_id": "prog_1"}
FOUND = {"type": "text", "text": "found"}


def _policy(fmt: str) -> Policy:
    return Policy(CONFIG, counter=FakeCounter(), format=fmt)


def _every_request(msgs: list[dict[str, Any]], fmt: str) -> ctxwin.Result:
    """Apply one policy at every length of the history: each request checks clean, is what
    a fresh policy gives, and is its own fixed point. The last result."""
    key = "input" if fmt == "openai-responses" else "messages"
    policy = _policy(fmt)
    for n in range(2, len(msgs) + 1):
        body = {key: msgs[:n]}
        result = policy.apply(body)
        assert ctxwin.check(result.request, fmt) == [], n
        assert _policy(fmt).apply(body).request == result.request, n
        assert _policy(fmt).apply(result.request).request == result.request, n
    return result


def _drop_notes(result: ctxwin.Result) -> list[str | None]:
    return [e.note for e in result.report.edits if e.step == "drop"]


def _use(sid: str, name: str, caller: dict[str, str] | None = None) -> dict[str, Any]:
    block = {"type": "server_tool_use", "id": sid, "name": name, "input": {"q": BIG}}
    return block if caller is None else {**block, "caller": caller}


def _call(cid: str, caller: dict[str, str] | None = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": cid, "name": "q", "input": {}}
    return block if caller is None else {**block, "caller": caller}


def _results(*ids: str) -> dict[str, Any]:
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]
    return {"role": "user", "content": blocks}


def _rounds(first: int, n: int) -> list[dict[str, Any]]:
    """``n`` rounds of direct calls, each with a long text."""
    out: list[dict[str, Any]] = []
    for r in range(first, first + n):
        text = {"type": "text", "text": BIG}
        out += [{"role": "assistant", "content": [text, _call(f"c{r}")]}, _results(f"c{r}")]
    return out


def _left_search() -> list[dict[str, Any]]:
    """A web search called beside a direct call, which the model leaves: it writes on after
    the client's result, the search's result not in."""
    text = {"type": "text", "text": "searching"}
    return [
        {"role": "user", "content": "the task"},
        {"role": "assistant", "content": [text, _use("srvtoolu_1", "web_search"), _call("c1")]},
        _results("c1"),
        *_rounds(2, 3),
    ]


def _search_result() -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}


def _late_search_history() -> list[dict[str, Any]]:
    """The search's result at the top of a later response, with a direct call."""
    return [
        *_left_search(),
        {"role": "assistant", "content": [_search_result(), FOUND, _call("c9")]},
        _results("c9"),
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]


def test_a_late_server_tool_result_goes_with_the_call_the_window_dropped() -> None:
    """The search's result comes at the top of a later response: its server_tool_use was
    dropped with its round before it came, and it went out with nothing before it. It goes
    as it comes; the rest of its response, the newest round, stays."""
    result = _every_request(_late_search_history(), "anthropic")
    assert _drop_notes(result) == [
        "dropped messages 1..2",
        "dropped messages 3..4",
        "dropped block 0 of message 9 (tied to a call the window dropped before it came)",
    ]
    late = [e for e in result.report.edits if e.step == "drop"][-1]
    assert late.message_index == 9
    assert late.tokens_before > 0
    assert result.request["messages"][-3]["content"] == [FOUND, _call("c9")]


def test_the_optimum_of_the_family_drops_the_left_call_without_its_late_block() -> None:
    """The family's units leave the late block out of its call's (it goes as it comes, and
    counts nothing there): with the call and its late result one unit, holding the rounds
    between, the window paid less than the optimum of its family (4,012.5 against 4,235.5)."""
    msgs = _late_search_history()
    policy = _policy("anthropic")
    lay = _family_layout({"messages": msgs}, policy, "anthropic")
    assert lay.unit_end == (2, 4, 6, 8, 10, 11)
    without = [*msgs[:9], {"role": "assistant", "content": [FOUND, _call("c9")]}, *msgs[10:]]
    bare = _family_layout({"messages": without}, policy, "anthropic")
    assert lay.prefix[10] - lay.prefix[9] == bare.prefix[10] - bare.prefix[9]
    run = replay({"messages": msgs}, policy, format="anthropic", optimum=True)
    assert run.optimum is not None
    assert run.managed.effective_cost >= run.optimum.effective_cost


def test_a_late_server_tool_result_in_a_message_of_its_own_goes_whole() -> None:
    """A history keeping each block in a message of its own (Claude Code)."""
    msgs = [
        *_left_search(),
        {"role": "assistant", "content": [_search_result()]},
        {"role": "assistant", "content": [{"type": "text", "text": "found"}]},
    ]
    result = _every_request(msgs, "anthropic")
    assert _drop_notes(result)[-1] == (
        "dropped messages 9..9 (tied to a call the window dropped before it came)"
    )


def _left_program() -> list[dict[str, Any]]:
    """A program that made one call, answered; the model then writes on (it left it)."""
    text = {"type": "text", "text": "running"}
    use = _use("srvtoolu_p", "code_execution")
    return [
        {"role": "user", "content": "the task"},
        {"role": "assistant", "content": [text, use, _call("p1", CALLER)]},
        _results("p1"),
        *_rounds(2, 3),
    ]


def test_a_late_program_call_goes_with_its_result() -> None:
    """A call the dropped program makes after the model left it, beside a direct call of
    the model's: it goes, and its result with it when it comes; the direct call's round
    stays."""
    msgs = [
        *_left_program(),
        {"role": "assistant", "content": [_call("p2", CALLER), _call("c9")]},
        _results("p2", "c9"),
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    result = _every_request(msgs, "anthropic")
    assert _drop_notes(result)[-2:] == [
        "dropped block 0 of message 9 (tied to a call the window dropped before it came)",
        "dropped block 0 of message 10 (tied to a call the window dropped before it came)",
    ]
    assert result.request["messages"][-3:-1] == [
        {"role": "assistant", "content": [_call("c9")]},
        _results("c9"),
    ]


def test_a_server_tool_a_dropped_program_calls_late_goes_with_its_result() -> None:
    """What a late block opens goes too: a web search the dropped program calls, and the
    search's result a message later."""
    use = _use("srvtoolu_s", "web_search", CALLER)
    result_block = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_s", "content": []}
    msgs = [
        *_left_program(),
        {"role": "assistant", "content": [use]},
        {"role": "assistant", "content": [result_block, {"type": "text", "text": "done"}]},
    ]
    result = _every_request(msgs, "anthropic")
    assert _drop_notes(result)[-2:] == [
        "dropped messages 9..9 (tied to a call the window dropped before it came)",
        "dropped block 0 of message 10 (tied to a call the window dropped before it came)",
    ]


def _responses_left_program() -> list[dict[str, Any]]:
    """A Responses program that made one call, answered; the model then writes its message
    and calls on (it left it)."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "the task"},
        {"type": "program", "id": "pg_1", "call_id": "prog_1", "code": BIG, "fingerprint": "f"},
        {"type": "function_call", "call_id": "p1", "name": "q", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "p1", "output": "ok", "caller": PROGRAM},
    ]
    items[2]["caller"] = PROGRAM
    for r in range(2, 5):
        text = {"type": "output_text", "text": BIG}
        items += [
            {"type": "message", "role": "assistant", "content": [text]},
            {"type": "function_call", "call_id": f"c{r}", "name": "q", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{r}", "output": "ok"},
        ]
    return items


def _answer() -> dict[str, Any]:
    text = {"type": "output_text", "text": "done"}
    return {"type": "message", "role": "assistant", "content": [text]}


def test_a_late_program_output_goes() -> None:
    """The program_output of a program the window dropped (OpenAI Responses)."""
    output = {"type": "program_output", "id": "po_1", "call_id": "prog_1", "result": "r"}
    result = _every_request([*_responses_left_program(), output, _answer()], "openai-responses")
    assert _drop_notes(result)[-1] == (
        "dropped messages 13..13 (tied to a call the window dropped before it came)"
    )


def test_a_late_responses_program_call_goes_with_its_output() -> None:
    late = {"type": "function_call", "call_id": "p2", "name": "q", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "p2", "output": "ok"}
    items = [*_responses_left_program(), {**late, "caller": PROGRAM}, output, _answer()]
    result = _every_request(items, "openai-responses")
    assert _drop_notes(result)[-2:] == [
        "dropped messages 13..13 (tied to a call the window dropped before it came)",
        "dropped messages 14..14 (tied to a call the window dropped before it came)",
    ]


def test_a_client_result_coming_late_never_reaches_a_dropped_call() -> None:
    """A tool_result several messages after its call, with only the newest round kept:
    repair moves it to right after its call's turn (the API's place for it) before the
    window sees the history, so no drop leaves it behind."""
    first = {"role": "assistant", "content": [{"type": "text", "text": BIG}, _call("c1")]}
    late = {"type": "tool_result", "tool_use_id": "c1", "content": "late"}
    msgs = [
        {"role": "user", "content": "the task"},
        first,
        {"role": "user", "content": "and then?"},
        *_rounds(2, 3),
        {"role": "user", "content": [late, {"type": "text", "text": "go on"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    result = _every_request(msgs, "anthropic")
    assert _drop_notes(result) == ["dropped messages 1..2", "dropped messages 4..5"]
    assert [fix.code for fix in result.fixes] == ["moved_result"]
