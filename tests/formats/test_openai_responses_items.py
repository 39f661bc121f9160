"""OpenAI Responses items as production histories carry them (openai 3.57.0 types): a
program's output without a ``call_id``, approval answers in the model's turn, the API's
words for calls other than functions, SDK objects for references, shell output chunks."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError, Opaque, Policy, Text, ToolResult
from ctxwin.formats import get_adapter
from ctxwin.testing import FakeCounter
from ctxwin.tokens._meter import TokenMeter
from ctxwin.tokens.counters import TiktokenCounter

FMT = "openai-responses"
PROGRAM = {"type": "program", "caller_id": "prog_1"}
BIG = "word " * 500


def program_items(*, with_call: bool = True) -> list[dict[str, Any]]:
    """A program that made a call (answered by call_id) and whose other output the server
    wrote without one, then its program_output."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "sum the sales"},
        {"type": "program", "id": "pg_1", "call_id": "prog_1", "code": "x", "fingerprint": "f"},
    ]
    if with_call:
        call = {"type": "function_call", "call_id": "c1", "name": "q", "arguments": "{}"}
        items += [
            {**call, "caller": PROGRAM},
            {"type": "function_call_output", "call_id": "c1", "output": "1", "caller": PROGRAM},
        ]
    items += [
        {"type": "function_call_output", "id": "fco_2", "output": "2", "caller": PROGRAM},
        {
            "type": "program_output",
            "id": "po_1",
            "call_id": "prog_1",
            "result": "3",
            "status": "completed",
        },
    ]
    return items


# ----------------------------------------------------- a program's output without call_id


def test_a_program_s_output_without_call_id_is_read_with_its_program() -> None:
    """It was a FormatError ("needs a string 'call_id'"): the API types call_id optional
    for the outputs a program made, which name their program in ``caller``."""
    body = {"input": program_items()}
    conv = ctxwin.parse(body, format=FMT)
    msg = conv.messages[4]
    (block,) = msg.blocks
    assert isinstance(block, Opaque)
    assert (msg.role, block.kind, block.tie, msg.tied_reasoning) == (
        "assistant",
        "function_call_output",
        "prog_1",
        False,
    )
    assert ctxwin.check(body, format=FMT) == []
    assert Policy({}, format=FMT).apply(body).request == body


def test_a_program_s_output_without_call_id_and_without_its_program_is_named() -> None:
    items = [program_items()[0], program_items()[4]]
    (problem,) = ctxwin.check({"input": items}, format=FMT)
    assert (problem.code, problem.path, problem.call_id) == ("orphan_result", "input[1]", "prog_1")
    assert problem.message == (
        "function_call_output with caller.caller_id prog_1 has no program item before it"
    )
    fixed, fixes = ctxwin.repair({"input": items}, FMT)
    assert fixed == {"input": items[:1]}
    assert [(f.code, f.path) for f in fixes] == [("dropped_orphan_result", "input[1]")]
    chained = {"input": items, "previous_response_id": "resp_1"}
    assert ctxwin.check(chained, format=FMT) == []


def test_a_drop_takes_a_program_s_output_without_call_id_with_its_program() -> None:
    items = program_items(with_call=False)
    items[1] = {**items[1], "code": BIG}
    for r in range(3, 6):
        items += [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": BIG}],
            },
            {"type": "function_call", "call_id": f"c{r}", "name": "q", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{r}", "output": "ok"},
        ]
    drops = {
        "context_window": 2000,
        "window": {"keep_rounds": 2, "trigger": 0.95, "target": 0.9, "drop_target": 0.9},
        "overflow": "drop_oldest_rounds",
    }
    out = Policy(drops, format=FMT).apply({"input": items}).request["input"]  # type: ignore[index]
    types = [i.get("type") for i in out]
    assert "program" not in types
    assert not [i for i in out if i.get("caller")]  # the program's items went with it
    assert ctxwin.check({"input": out}, format=FMT) == []


def test_an_output_without_call_id_or_program_says_why_and_where() -> None:
    items = [{"role": "user", "content": "go"}, {"type": "function_call_output", "output": "x"}]
    with pytest.raises(FormatError) as info:
        ctxwin.parse({"input": items}, format=FMT)
    assert info.value.path == "input[1].call_id"
    assert str(info.value) == (
        "input[1].call_id: a function_call_output item needs a string 'call_id' naming the "
        'call it answers: only the output of a call a program made ("caller": {"type": '
        '"program", "caller_id": ...}) may leave it out'
    )


def test_the_sdk_s_output_item_without_call_id_is_read() -> None:
    items_mod = pytest.importorskip(
        "openai.types.responses.response_function_tool_call_output_item"
    )
    item = items_mod.ResponseFunctionToolCallOutputItem(
        id="fco_2", output="2", status="completed", type="function_call_output", caller=PROGRAM
    )
    body = {"input": [*program_items(with_call=False)[:2], item]}
    out = ctxwin.render(ctxwin.parse(body, format=FMT))
    assert out["input"][2] == {  # type: ignore[index]
        "id": "fco_2",
        "output": "2",
        "status": "completed",
        "type": "function_call_output",
        "caller": {"type": "program", "caller_id": "prog_1"},
    }


# ------------------------------------------------------------- approval answers


def _approval_turn() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "deploy it"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "g" * 4000},
        {
            "type": "mcp_approval_request",
            "id": "mcpr_1",
            "arguments": "{}",
            "name": "deploy",
            "server_label": "ops",
        },
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
    ]


def test_reasoning_before_an_approval_answer_is_counted() -> None:
    """The answer to an approval request goes on with the model's turn, as a tool's output
    does: the reasoning before it is read (and billed). Read as the user's own message, it
    ended the turn and the meter counted that reasoning as dropped (0 tokens)."""
    adapter = get_adapter(FMT)
    conv = ctxwin.parse({"input": _approval_turn()}, format=FMT)
    meter = TokenMeter(TiktokenCounter(), adapter.overheads)
    counts = meter.read(conv.messages)
    assert conv.messages[3].role == "tool"
    assert counts[1] == meter.message(conv.messages[1]) > 400


def test_a_new_user_message_still_leaves_the_reasoning_behind() -> None:
    items = [*_approval_turn(), {"role": "user", "content": "thanks; now the docs"}]
    conv = ctxwin.parse({"input": items}, format=FMT)
    assert TokenMeter(TiktokenCounter(), get_adapter(FMT).overheads).read(conv.messages)[1] == 0


# ------------------------------------------------------------- the API's words


def test_a_custom_call_without_its_output_is_named_as_the_api_names_it() -> None:
    items = [
        {"role": "user", "content": "patch it"},
        {"type": "custom_tool_call", "call_id": "ct_1", "name": "apply_patch", "input": "x"},
        {"role": "user", "content": "and?"},
    ]
    (problem,) = ctxwin.check({"input": items}, format=FMT)
    assert problem.message == "No tool output found for custom tool call ct_1."


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {"type": "custom_tool_call_output", "call_id": "x1", "output": "o"},
            "No tool call found for custom tool call output with call_id x1.",
        ),
        (
            {"type": "shell_call_output", "call_id": "x2", "output": []},
            "No tool call found for shell_call_output with call_id x2.",
        ),
        (
            {"type": "function_call_output", "call_id": "x3", "output": "o"},
            "No tool call found for function call output with call_id x3.",
        ),
    ],
)
def test_an_orphan_output_is_named_by_its_kind(item: dict[str, Any], message: str) -> None:
    (problem,) = ctxwin.check({"input": [{"role": "user", "content": "a"}, item]}, format=FMT)
    assert problem.message == message


def test_a_shell_call_without_its_output_is_named_by_its_type() -> None:
    call = {"type": "shell_call", "call_id": "sh_1", "action": {"commands": ["ls"]}}
    items = [{"role": "user", "content": "ls"}, call, {"role": "user", "content": "and?"}]
    (problem,) = ctxwin.check({"input": items}, format=FMT)
    assert problem.message == "No tool output found for shell_call sh_1."


# ------------------------------------------------------------- references


def test_an_sdk_item_reference_puts_the_calls_on_the_server() -> None:
    """An output whose call the request refers to by an SDK ``ItemReference`` object was
    dropped as an orphan: the reference, not a dict, went unseen."""
    ref = pytest.importorskip("openai.types.responses.response_input_item").ItemReference(
        id="fc_1", type="item_reference"
    )
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    body = {"input": [{"role": "user", "content": "go"}, ref, output]}
    assert ctxwin.check(body, format=FMT) == []
    result = Policy({}, format=FMT).apply(body)
    assert not result.fixes
    assert result.request["input"][2] is output  # type: ignore[index]


# ------------------------------------------------------------- shell output chunks


def _shell(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "show the log"},
        {"type": "shell_call", "call_id": "sh_1", "action": {"commands": ["cat log"]}},
        {"type": "shell_call_output", "call_id": "sh_1", "output": chunks},
    ]


def _chunk(stdout: str, stderr: str = "", code: int = 0) -> dict[str, Any]:
    return {"stdout": stdout, "stderr": stderr, "outcome": {"type": "exit", "exit_code": code}}


def test_a_shell_output_s_text_is_read() -> None:
    """A chunk's stdout and stderr are text the steps read (they were opaque: a policy's
    ``max_tokens`` or ``select`` for the shell tool did nothing)."""
    chunks = [_chunk("a.txt\nb.txt\n"), _chunk("", "warning: x\n", 1), _chunk("", "")]
    conv = ctxwin.parse({"input": _shell(chunks)}, format=FMT)
    (result,) = conv.messages[2].blocks
    assert isinstance(result, ToolResult)
    assert [type(p) for p in result.content] == [Text, Text, Opaque]  # an empty one says nothing
    assert result.text == "a.txt\nb.txt\n\nwarning: x\n"
    assert ctxwin.check({"input": _shell(chunks)}, format=FMT) == []
    assert ctxwin.render(conv) == {"input": _shell(chunks)}


def test_a_long_shell_output_is_capped_and_keeps_its_outcome() -> None:
    log = "\n".join(f"line {i}: all is well here" for i in range(2000))
    chunk = {**_chunk(log, code=3), "created_by": "shell"}
    body = {"input": _shell([chunk])}
    policy = Policy({"tools": {"shell": {"max_tokens": 300}}}, format=FMT)
    result = policy.apply(body)
    (out_chunk,) = result.request["input"][2]["output"]  # type: ignore[index]
    assert set(out_chunk) == {"stdout", "stderr", "outcome", "created_by"}
    assert out_chunk["outcome"] == {"type": "exit", "exit_code": 3}
    assert out_chunk["stderr"] == ""
    assert out_chunk["stdout"].startswith("line 0")
    assert len(out_chunk["stdout"]) < len(log) / 5
    assert [(e.step, e.tool) for e in result.report.edits] == [("cap", "shell")]
    assert body["input"][2]["output"] == [chunk]  # the input untouched


LS = "\n".join(f"file_{i}.txt" for i in range(300))
MISSING = "cat: x: No such file or directory"


def _two_commands() -> list[dict[str, Any]]:
    return [_chunk(LS), {**_chunk("", MISSING, 1), "created_by": "shell"}]


@pytest.mark.parametrize("mode", ["head", "tail", "head_tail"])
def test_a_capped_shell_output_keeps_each_command_s_chunk_and_outcome(mode: str) -> None:
    """Capping merged the chunks into one, with both texts in its stdout and the last
    command's outcome: ``ls`` read as failed (exit 1)."""
    chunks = _two_commands()
    policy = Policy({"tools": {"shell": {"max_tokens": 60, "truncate": mode}}}, format=FMT)
    result = policy.apply({"input": _shell(chunks)})
    out = result.request["input"][2]["output"]  # type: ignore[index]
    assert [c["outcome"] for c in out] == [c["outcome"] for c in chunks]
    assert [set(c) for c in out] == [set(c) for c in chunks]
    first, second = out
    assert "tokens of shell output truncated" in first["stdout"] + second["stdout"]
    assert first["stderr"] == ""
    if mode == "head":
        assert first["stdout"].startswith("file_0.txt\nfile_1.txt")
        assert (second["stdout"], second["stderr"]) == ("", "")
    else:  # the tail holds the error, where it was
        assert (second["stdout"], second["stderr"]) == ("", MISSING)
        assert LS.endswith(first["stdout"].rsplit("]", 1)[1].strip("\n"))
    again = policy.apply(result.request)
    assert again.request == result.request
    assert again.report.edits == ()


def test_a_cleared_shell_output_keeps_every_command_s_outcome() -> None:
    """The placeholder goes in the first chunk's stdout; the others keep their outcomes,
    their text gone."""
    chunks = _two_commands()
    items = [*_shell(chunks), {"role": "user", "content": "go on"}]
    items += [{"type": "function_call", "call_id": "f", "name": "f", "arguments": "{}"}]
    items += [{"type": "function_call_output", "call_id": "f", "output": "ok"}]
    config = {"context_window": 400, "window": {"strategy": "threshold", "keep_rounds": 1}}
    result = Policy(config, format=FMT).apply({"input": items})
    out = result.request["input"][2]["output"]  # type: ignore[index]
    assert [c["outcome"] for c in out] == [c["outcome"] for c in chunks]
    assert out[0]["stdout"].startswith("[shell result cleared")
    assert (out[0]["stderr"], out[1]["stdout"], out[1]["stderr"]) == ("", "", "")


def test_a_json_shell_output_is_selected() -> None:
    data = json.dumps({"hits": [{"path": f"f{i}.py", "text": "x " * 50} for i in range(40)]})
    policy = Policy({"tools": {"shell": {"select": "hits[].path"}}}, format=FMT)
    result = policy.apply({"input": _shell([_chunk(data)])})
    (out_chunk,) = result.request["input"][2]["output"]  # type: ignore[index]
    assert json.loads(out_chunk["stdout"]) == [f"f{i}.py" for i in range(40)]


def test_an_sdk_item_reference_without_its_type_says_the_items_live_on_the_server() -> None:
    """The openai SDK builds ``ItemReference(id=...)`` with ``type`` None, as the dict form
    ``{"id": ...}`` may leave it out: either means the call lives on the server, and its
    output is kept, not dropped as an orphan."""
    from openai.types.responses.response_input_item import ItemReference

    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    for ref in (ItemReference(id="fc_1"), ItemReference(id="fc_1", type="item_reference")):
        items = [{"role": "user", "content": "go"}, ref, output]
        result = ctxwin.Policy({}).apply({"input": items})
        assert not result.report.fixes
        assert result.request["input"][2] == output


def test_a_policy_follows_item_references_as_the_history_grows_shrinks_and_changes() -> None:
    """Whether the items live on the server (an ``item_reference`` among them) is kept as
    the parse grows, not found by scanning every item of every request: a reference that
    comes later, one the history is cut back from, and an item changed in place into one
    all answer as a fresh policy does (an output whose call is on the server is kept)."""
    items: list[Any] = [{"role": "user", "content": "go"}]
    for i in range(6):
        items.append({"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": f"r{i}"})
    orphan = {"type": "function_call_output", "call_id": "cx", "output": "from the server's call"}
    reference = {"type": "item_reference", "id": "fc_x"}
    policy = ctxwin.Policy({})
    bodies = [
        items[:5],
        [*items[:5], reference, orphan],  # a reference comes
        items[:7],  # cut back before it
        [*items[:7], orphan],  # an orphan without one: dropped
    ]
    changed = [*items, {"type": "message", "role": "user", "content": "x"}, orphan]
    bodies += [changed, changed]  # the same list, its message then made a reference in place
    for n, body in enumerate(bodies):
        if n == len(bodies) - 1:
            body[-2].clear()
            body[-2].update(reference)
        got = policy.apply({"input": body}).request
        fresh = ctxwin.Policy({}).apply({"input": body}).request
        assert got == fresh, n
        assert (orphan in got["input"]) == any(x.get("type") == "item_reference" for x in body)


def _reasoning(k: int) -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{k}", "summary": [], "encrypted_content": "g" * 3000}


def _drops(window: int, keep: int = 2) -> Policy:
    config = {
        "context_window": window,
        "window": {"keep_rounds": keep, "strategy": "threshold"},
        "overflow": "drop_oldest_rounds",
    }
    return Policy(config, counter=FakeCounter(), format=FMT)


def _sent(out: list[dict[str, Any]]) -> list[str]:
    return [i.get("id") or i.get("call_id") or i.get("type") or i["role"] for i in out]


def test_a_drop_takes_an_approval_request_with_its_reasoning() -> None:
    """An approval turn (no client call, so no round) went item by item: the drop took
    rs_2 and stopped, and mcpr_2 went out without the reasoning the API requires with it."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "clean up the old branches"},
        _reasoning(1),
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "branch " * 400},
        _reasoning(2),
        {"type": "mcp_approval_request", "id": "mcpr_2", "server_label": "git", "name": "rm"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_2", "approve": True},
        _reasoning(3),
        {"type": "function_call", "id": "fc_3", "call_id": "c3", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c3", "output": "branch " * 300},
    ]
    for window in range(300, 1900, 50):
        sent = _sent(_drops(window).apply({"input": items}).request["input"])  # type: ignore[index]
        assert ("rs_2" in sent) == ("mcpr_2" in sent) == ("mcp_approval_response" in sent), window


def _referenced(n: int) -> list[dict[str, Any]]:
    """A store: true client's history: references to the reasoning and calls the server
    holds, and the outputs it wrote itself."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "refactor the module"}]
    for k in range(1, n + 1):
        items += [
            {"type": "item_reference", "id": f"rs_{k}"},
            {"type": "item_reference", "id": f"fc_{k}"},
            {"type": "function_call_output", "call_id": f"c{k}", "output": "code " * (90 + 9 * k)},
        ]
    return items


def test_a_drop_takes_references_with_the_outputs_after_them() -> None:
    """Each reference was a unit of its own: drops stopped anywhere, leaving an output whose
    call reference was gone, a call reference without its reasoning reference, and at a
    small window the newest output dropped though it fits."""
    asked = [*_referenced(7), {"role": "user", "content": "now run the tests"}]
    for items in (_referenced(7), asked):
        for window in range(160, 1000, 7):
            out = _drops(window).apply({"input": items}).request["input"]  # type: ignore[index]
            sent = _sent(out)
            for k in range(1, 8):
                assert (f"rs_{k}" in sent) == (f"fc_{k}" in sent) == (f"c{k}" in sent), (window, k)
            assert "c7" in sent, window  # the newest "round" stays, as a round does
