"""A Responses call answered by several outputs: Codex's code mode sends a
``custom_tool_call_output`` with its ``exec`` call's ``call_id`` for each ``notify()`` of the
script and one for its final ``text()`` (lidge-jun/opencodex#3731: "the Responses input
contains three outputs associated with the same call"); two cells running at once
interleave theirs (openai/codex#41820), and a cell resumed later notifies after other items
(gakonst/nanocodex#129). OpenAI accepts them. ctxwin took every output after the first for a
duplicate: ``check`` reported ``duplicate_result`` and repair, run by every ``apply`` that
found it, dropped the updates. They are now outputs of their call (``Round.more``): clean,
kept as they came, and cleared or dropped with their call, never apart from it. A second
``function_call_output``, and a second result in the other formats, is still a duplicate."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin._core.check import problems_of
from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, PairingRules, Text, ToolCall, ToolResult
from ctxwin._core.pairing import Linker, Round, link
from ctxwin._core.repair import repair_conversation
from ctxwin.formats import get_adapter
from ctxwin.testing import FakeCounter
from tests._core.neutral import Describer

FMT = "openai-responses"
WINDOW = 1200
CONFIG: dict[str, Any] = {
    "context_window": WINDOW,
    "window": {"keep_rounds": 1, "strategy": "threshold"},
    "overflow": "drop_oldest_rounds",
}


def _words(n: int, word: str) -> str:
    return " ".join([word] * n)


def _exec(cid: str, n: int = 30) -> dict[str, Any]:
    return {"type": "custom_tool_call", "call_id": cid, "name": "exec", "input": _words(n, "js")}


def _out(cid: str, n: int, word: str) -> dict[str, Any]:
    return {
        "type": "custom_tool_call_output",
        "call_id": cid,
        "name": "exec",
        "output": _words(n, word),
    }


def _say(role: str, n: int, word: str) -> dict[str, Any]:
    return {"role": role, "content": _words(n, word)}


def _cell(cid: str, n: int = 60) -> list[dict[str, Any]]:
    """An exec call, two notify() outputs and its final output, adjacent."""
    return [_exec(cid), _out(cid, n, "update1"), _out(cid, n, "update2"), _out(cid, n, "final")]


def _parallel(a: str, b: str, n: int = 60) -> list[dict[str, Any]]:
    """Two exec cells of one turn, their outputs interleaved."""
    return [
        _exec(a),
        _exec(b),
        _out(a, n, "a-update"),
        _out(b, n, "b-update"),
        _out(a, n, "a-final"),
        _out(b, n, "b-final"),
    ]


def _turns(first: int, count: int) -> list[dict[str, Any]]:
    """Turns of the user's, each with a code-mode cell (or two, in parallel) and an answer."""
    out: list[dict[str, Any]] = []
    for t in range(first, first + count):
        out.append(_say("user", 60, f"u{t}"))
        out += _parallel(f"p{t}", f"q{t}") if t % 3 == 2 else _cell(f"c{t}")
        out.append(_say("assistant", 60, f"a{t}"))
    return out


def _history() -> list[dict[str, Any]]:
    """Code-mode turns, and a cell resumed later: its notify() comes turns after its final
    output, other calls' outputs between (gakonst/nanocodex#129)."""
    return [
        _say("user", 5, "task"),
        _exec("bg"),
        _out("bg", 40, "yielded"),
        *_turns(0, 2),
        _out("bg", 40, "late-notify"),
        *_turns(2, 6),
    ]


def _policy(config: dict[str, Any] = CONFIG, fmt: str = FMT) -> Policy:
    return Policy(config, counter=FakeCounter(), format=fmt)


def _paired(items: list[dict[str, Any]]) -> None:
    """Every output has its call before it, every call at least one output after it."""
    calls: set[str] = set()
    answered: set[str] = set()
    for item in items:
        if item.get("type") == "custom_tool_call":
            calls.add(item["call_id"])
        elif item.get("type") == "custom_tool_call_output":
            assert item["call_id"] in calls, item
            answered.add(item["call_id"])
    assert answered == calls


@pytest.mark.parametrize(
    "items",
    [
        [_say("user", 3, "go"), *_cell("c1"), _say("assistant", 2, "ok")],
        [_say("user", 3, "go"), *_parallel("a", "b")],
        _history(),
    ],
    ids=["adjacent", "parallel-interleaved", "notify-after-later-turns"],
)
def test_code_mode_outputs_check_clean(items: list[dict[str, Any]]) -> None:
    """Further outputs for an exec call are no duplicate_result."""
    assert ctxwin.check({"input": items}, FMT) == []


@pytest.mark.parametrize("items", [[_say("user", 3, "go"), *_parallel("a", "b")], _history()])
def test_apply_keeps_every_output_as_it_came(items: list[dict[str, Any]]) -> None:
    """No edit due: every output stays, byte-identical and in order (repair dropped the
    notify() updates as duplicates)."""
    body = {"input": items}
    result = _policy({"context_window": 100_000}).apply(body)
    assert result.request == body
    assert result.report.fixes == ()


def test_further_outputs_are_results_of_their_call() -> None:
    """Counted as results of the exec tool, in the call's round."""
    items = [_say("user", 3, "go"), *_parallel("a", "b")]
    conv = get_adapter(FMT).parse({"input": items})
    refs = list(conv.results())
    assert [r.tool for r in refs] == ["exec"] * 4
    assert [r.round for r in refs] == [0] * 4
    (rnd,) = conv.pairing.rounds
    assert [loc[0] for loc in rnd.outputs] == [3, 4, 5, 6]


def _every_request(items: list[dict[str, Any]], config: dict[str, Any] = CONFIG) -> ctxwin.Result:
    """One policy over the growing history: every request checks clean, fits, counts what
    it sends, never holds an output without its call nor a call without an output, is what
    a fresh policy gives and is its own fixed point. The last result."""
    policy = _policy(config)
    for n in range(1, len(items) + 1):
        body = {"input": items[:n]}
        result = policy.apply(body)
        assert ctxwin.check(result.request, FMT) == [], n
        assert result.report.tokens_after <= config["context_window"], n
        sent = _policy({"context_window": 100_000}).apply(result.request).report
        assert sent.tokens_before == result.report.tokens_after, n
        _paired(result.request["input"])
        assert _policy(config).apply(body).request == result.request, n
        assert _policy(config).apply(result.request).request == result.request, n
    return result


def _drop_notes(result: ctxwin.Result) -> list[str | None]:
    return [e.note for e in result.report.edits if e.step == "drop"]


@pytest.mark.parametrize("clear_inputs", [False, True])
def test_the_window_clears_and_drops_outputs_with_their_call(clear_inputs: bool) -> None:
    """A small window over code-mode turns: outputs are cleared each with a placeholder,
    and go with their round (:func:`_every_request` holds at every length)."""
    config = {**CONFIG, "window": {**CONFIG["window"], "clear_tool_inputs": clear_inputs}}
    result = _every_request(_history(), config)
    assert result.report.tokens_before > WINDOW
    assert {"drop", "window"} <= {e.step for e in result.report.edits}
    cleared = [i for i in result.request["input"] if "result cleared" in str(i.get("output"))]
    assert len({i["call_id"] for i in cleared}) < len(cleared)  # several outputs of one call
    assert all(i.get("call_id") != "bg" for i in result.request["input"])  # late notify too


def test_an_old_cell_goes_with_its_late_notify() -> None:
    """A notify() that came turns after its cell's final output is in the cell's unit: the
    round goes with it, never leaving it without its call (the unit was its turn and first
    output: the notify stayed, answering nothing)."""
    items = [_say("user", 5, "task"), _exec("bg"), _out("bg", 300, "yielded"), *_turns(0, 3)]
    late = len(items)
    items += [_out("bg", 40, "late-notify"), *_turns(3, 3)]
    result = _every_request(items)
    assert f"dropped messages 1..2, {late}..{late}" in _drop_notes(result)


def test_a_late_notify_for_a_dropped_cell_goes_as_it_comes() -> None:
    """The window dropped the cell's round; its notify() comes later: it goes as it comes
    (``_drops.late``), as a fresh policy has it."""
    items = [_say("user", 5, "task"), _exec("bg"), _out("bg", 300, "yielded"), *_turns(0, 6)]
    late = len(items)
    assert "dropped messages 1..2" in _drop_notes(_every_request(items))
    items += [_out("bg", 40, "late-notify"), *_turns(6, 1)]
    result = _every_request(items)
    assert all(i.get("call_id") != "bg" for i in result.request["input"])
    why = "(tied to a call the window dropped before it came)"
    assert f"dropped messages {late}..{late} {why}" in _drop_notes(result)


def test_a_second_function_call_output_is_still_a_duplicate() -> None:
    """Only custom tool calls take further outputs: the API refuses a second
    function_call_output ("Duplicate function_call_output for call_id")."""
    items = [
        _say("user", 3, "go"),
        {"type": "function_call", "call_id": "f1", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "f1", "output": "one"},
        {"type": "function_call_output", "call_id": "f1", "output": "two"},
    ]
    assert [p.code for p in ctxwin.check({"input": items}, FMT)] == ["duplicate_result"]
    result = _policy({"context_window": 100_000}).apply({"input": items})
    assert result.request["input"] == items[:3]
    assert [f.code for f in result.report.fixes] == ["dropped_duplicate_result"]


def _chat() -> dict[str, Any]:
    call = {"id": "t1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
    return {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "t1", "content": "one"},
            {"role": "tool", "tool_call_id": "t1", "content": "two"},
        ]
    }


def _anthropic() -> dict[str, Any]:
    use = {"type": "tool_use", "id": "t1", "name": "shell", "input": {}}
    results = [
        {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
        {"type": "tool_result", "tool_use_id": "t1", "content": "two"},
    ]
    return {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": results},
        ]
    }


def _gemini() -> dict[str, Any]:
    call = {"functionCall": {"id": "t1", "name": "shell", "args": {}}}
    answers = [
        {"functionResponse": {"id": "t1", "name": "shell", "response": {"out": "one"}}},
        {"functionResponse": {"id": "t1", "name": "shell", "response": {"out": "two"}}},
    ]
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [call]},
            {"role": "user", "parts": answers},
        ]
    }


@pytest.mark.parametrize(
    ("fmt", "body"),
    [("openai-chat", _chat()), ("anthropic", _anthropic()), ("gemini", _gemini())],
)
def test_a_second_result_in_other_formats_is_still_a_duplicate(
    fmt: str, body: dict[str, Any]
) -> None:
    """Chat, Anthropic and Gemini answer a call once: the second result is reported and
    repair drops it, as before."""
    assert [p.code for p in ctxwin.check(body, fmt)] == ["duplicate_result"]
    result = _policy({"context_window": 100_000}, fmt).apply(body)
    assert [f.code for f in result.report.fixes] == ["dropped_duplicate_result"]
    assert "two" not in str(result.request)


# ------------------------------------------------------------------ the neutral model

CODE_MODE = PairingRules(
    turn="consecutive",
    placement="anywhere_after",
    carrier="one_per_message",
    carrier_role="tool",
    answers=frozenset({("function", "function"), ("custom", "custom")}),
    repeat_results=frozenset({"custom"}),
)
"""The Responses adapter's rules as far as further outputs go."""


def _call(cid: str, *, tie: str | None = None) -> ToolCall:
    return ToolCall(cid, "exec", "code", kind="custom", tie=tie)


def _res(cid: str, text: str) -> Message:
    return Message("tool", (ToolResult(cid, (Text(text),), kind="custom"),))


def _conv(*messages: Message) -> Conversation:
    indexed = tuple(Message(m.role, m.blocks, index=i) for i, m in enumerate(messages))
    return Conversation(format="openai-responses", messages=indexed, rules=CODE_MODE)


def _shape(rounds: tuple[Round, ...]) -> list[tuple[object, ...]]:
    return [(r.index, r.start, r.end, r.calls, r.results, r.more) for r in rounds]


def test_a_resumed_linker_sees_a_further_output_of_a_closed_round() -> None:
    """A round every call of which was answered is final for the linker, until a further
    output of one of them comes: the linker resumed over it pairs as a fresh one."""
    messages = _conv(
        Message("user", (Text("go"),)),
        Message("assistant", (_call("c1"),)),
        _res("c1", "final"),
        Message("assistant", (_call("c2"),)),
        _res("c2", "done"),
        _res("c1", "late notify"),
    ).messages
    linker = Linker(CODE_MODE)
    linker.feed(messages[:5])
    before = linker.pairing()
    assert before.rounds[0].more == ()
    linker.feed(messages)
    fresh = link(messages, CODE_MODE)
    assert _shape(linker.pairing().rounds) == _shape(fresh.rounds)
    assert fresh.rounds[0].more == ((5, 0),)
    assert fresh.call_of[(5, 0)] == (1, 0)
    assert fresh.duplicates == ()


def test_renamed_call_takes_its_further_outputs() -> None:
    """A call id repeated in one turn is renamed by repair, and the further outputs that
    pairing gave that call follow it."""
    conv = _conv(
        Message("user", (Text("go"),)),
        Message("assistant", (_call("x"), _call("x"))),
        _res("x", "first"),
        _res("x", "second"),
        _res("x", "notify of the second"),
    )
    fixed, fixes = repair_conversation(conv, Describer())
    assert [f.code for f in fixes] == ["renamed_duplicate_call_id"]
    ids = [b.call_id for m in fixed.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert ids == ["x", "x_2", "x_2"]
    assert problems_of(fixed, Describer()) == []


def test_further_outputs_go_with_a_call_repair_drops() -> None:
    """A call made by a program the request does not hold goes with its results, its
    further ones too: left, they would answer nothing."""
    conv = _conv(
        Message("user", (Text("go"),)),
        Message("assistant", (_call("c1", tie="gone"),)),
        _res("c1", "final"),
        _res("c1", "notify"),
    )
    fixed, fixes = repair_conversation(conv, Describer())
    assert [m.role for m in fixed.messages] == ["user"]
    assert [f.code for f in fixes] == ["dropped_orphan_result"] * 3
    assert problems_of(fixed, Describer()) == []


def test_the_report_counts_further_outputs_in_their_round() -> None:
    """A round's figures hold every output of its calls: the notify() updates too."""
    items = [_say("user", 10, "go"), *_cell("c1", n=40), _say("assistant", 5, "done")]
    report = _policy({"context_window": 100_000}).apply({"input": items}, FMT).report
    (rnd,) = report.rounds
    counter = FakeCounter()
    outputs = sum(counter.count(_words(40, w)) for w in ("update1", "update2", "final"))
    assert rnd.tokens_before > outputs
