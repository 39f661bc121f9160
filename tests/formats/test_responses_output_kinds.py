"""OpenAI Responses outputs answer calls of their own type: a ``call_id`` shared with a call
of another type pairs nothing (the API: "No tool output found for function call ..."), as
the openai-agents SDK pairs them (``_TOOL_CALL_TO_OUTPUT_TYPE``) and Codex repairs them
(``codex-rs`` ``normalize.rs``); a ``function_call_output`` still answers a
``local_shell_call``, as Codex sends it."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin._core.check import problems_of
from ctxwin._core.model import Message

FMT = "openai-responses"
SHOT = {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"}
SHELL_OUT = [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]


def call_item(item_type: str, cid: str = "c1") -> dict[str, Any]:
    """A call of ``item_type`` with the id ``cid``, as the API returns it."""
    items: dict[str, dict[str, Any]] = {
        "function_call": {"name": "f", "arguments": "{}"},
        "custom_tool_call": {"name": "apply_patch", "input": "*** Begin Patch"},
        "local_shell_call": {
            "id": "lsh_1",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}},
        },
        "shell_call": {"action": {"commands": ["ls"]}},
        "apply_patch_call": {
            "status": "completed",
            "operation": {"type": "delete_file", "path": "a.txt"},
        },
        "computer_call": {"action": {"type": "screenshot"}, "pending_safety_checks": []},
        "tool_search_call": {"execution": "client", "arguments": {"query": "crm"}},
    }
    return {"type": item_type, "call_id": cid, **items[item_type]}


def output_item(item_type: str, cid: str = "c1") -> dict[str, Any]:
    """An output of ``item_type`` answering the id ``cid``."""
    items: dict[str, dict[str, Any]] = {
        "function_call_output": {"call_id": cid, "output": "ok"},
        "custom_tool_call_output": {"call_id": cid, "output": "ok"},
        "local_shell_call_output": {"id": cid, "output": '{"output":"a.txt"}'},
        "shell_call_output": {"call_id": cid, "output": SHELL_OUT},
        "apply_patch_call_output": {"call_id": cid, "status": "completed", "output": "done"},
        "computer_call_output": {"call_id": cid, "output": SHOT},
        "tool_search_output": {
            "call_id": cid,
            "execution": "client",
            "status": "completed",
            "tools": [],
        },
    }
    return {"type": item_type, **items[item_type]}


OWN_OUTPUT = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "computer_call": "computer_call_output",
    "tool_search_call": "tool_search_output",
}
WRONG = [
    (call, output)
    for call in OWN_OUTPUT
    for output in OWN_OUTPUT.values()
    if output != OWN_OUTPUT[call]
    and (call, output) != ("local_shell_call", "function_call_output")  # Codex's, accepted
]


def body(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-5", "input": [{"role": "user", "content": "go"}, *items]}


def errors(b: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(p.code, p.path, p.call_id) for p in ctxwin.check(b, format=FMT)]


# ------------------------------------------------------------------------------- check


def test_a_function_call_answered_by_a_custom_tool_output_is_named_with_index_and_id() -> None:
    """It passed check; the API refuses it ("No tool output found for function call c1")."""
    problems = ctxwin.check(
        body(call_item("function_call"), output_item("custom_tool_call_output")), format=FMT
    )
    assert [(p.code, p.message_index, p.call_id) for p in problems] == [
        ("missing_result", 1, "c1"),
        ("orphan_result", 2, "c1"),
    ]
    assert [p.message for p in problems] == [
        "No tool output found for function call c1. input[2] has its call_id but is a "
        "custom_tool_call_output, the output of a custom_tool_call, not of a function_call.",
        "No tool call found for custom tool call output with call_id c1. input[1] with this "
        "call_id is a function_call, answered by a function_call_output, not by a "
        "custom_tool_call_output.",
    ]


class _Counted(tuple[Message, ...]):
    """A conversation's messages, counting how often one is read."""

    reads = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for msg in super().__iter__():
            self.reads += 1
            yield msg

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        self.reads += 1
        return super().__getitem__(i)


def _check_reads(rounds: int) -> int:
    """The messages checking reads in a history of ``rounds`` calls, every other one
    without its output: each a problem, whose text names an item of another type with its
    call_id, if there is one."""
    items = []
    for r in range(rounds):
        items.append(call_item("function_call", f"c{r}"))
        if r % 2:
            items.append(output_item("function_call_output", f"c{r}"))
    conv = ctxwin.parse(body(*items), format=FMT)
    messages = _Counted(conv.messages)
    problems = problems_of(conv.with_messages(messages), ctxwin.formats.get_adapter(FMT))
    assert [p.call_id for p in problems] == [f"c{r}" for r in range(0, rounds, 2)]
    assert problems[0].message == "No tool output found for function call c0."
    return messages.reads


def test_checking_reads_the_history_once_however_many_calls_lack_their_output() -> None:
    """The item of another type a problem's text names is looked up, not searched for in
    the whole history for each problem: twice the calls, at most twice the reads."""
    assert _check_reads(400) <= 2 * _check_reads(200) + 10


@pytest.mark.parametrize(("call", "output"), WRONG)
def test_an_output_of_another_type_answers_no_call(call: str, output: str) -> None:
    assert errors(body(call_item(call), output_item(output))) == [
        ("missing_result", "input[1]", "c1"),
        ("orphan_result", "input[2]", "c1"),
    ]


@pytest.mark.parametrize("call", list(OWN_OUTPUT))
def test_an_output_of_its_call_s_own_type_answers_it(call: str) -> None:
    assert errors(body(call_item(call), output_item(OWN_OUTPUT[call]))) == []


def test_a_function_call_output_answers_a_local_shell_call() -> None:
    """Codex answers a local_shell_call so ("LocalShellCall is represented in upstream
    streams by a FunctionCallOutput")."""
    b = body(call_item("local_shell_call"), output_item("function_call_output"))
    assert errors(b) == []


def test_the_output_of_the_right_type_still_answers_when_another_shares_its_id() -> None:
    """Only the stray output is reported: the call is answered by its own type."""
    b = body(
        call_item("function_call"),
        output_item("custom_tool_call_output"),
        output_item("function_call_output"),
    )
    assert errors(b) == [("orphan_result", "input[2]", "c1")]


def test_calls_of_two_types_sharing_an_id_each_take_their_own_output() -> None:
    b = body(
        call_item("function_call"),
        call_item("custom_tool_call"),
        output_item("custom_tool_call_output"),
        output_item("function_call_output"),
    )
    conv = ctxwin.parse(b, format=FMT)
    assert [(ref.loc[0], ref.call.kind if ref.call else None) for ref in conv.results()] == [
        (3, "custom"),
        (4, "function"),
    ]


def test_an_output_before_a_call_of_another_type_is_not_paired_forward() -> None:
    """A result standing before its call pairs forward only with a call of its kind."""
    b = body(output_item("custom_tool_call_output"), call_item("function_call"))
    codes = {(code, path) for code, path, _ in errors(b)}
    assert ("orphan_result", "input[1]") in codes
    assert ("missing_result", "input[2]") in codes


# ------------------------------------------------------------------------------ repair


def test_repair_answers_the_call_with_an_output_of_its_own_type() -> None:
    """The output of the wrong type goes (an orphan); the call gets a synthetic output of
    its own type, which the API accepts."""
    b = body(call_item("function_call"), output_item("custom_tool_call_output"))
    out, fixes = ctxwin.repair(b, format=FMT)
    items = out["input"]  # type: ignore[index]
    assert [i.get("type") for i in items] == [None, "function_call", "function_call_output"]
    assert items[2]["call_id"] == "c1"
    assert [(f.code, f.path, f.call_id) for f in fixes] == [
        ("dropped_orphan_result", "input[2]", "c1"),
        ("added_missing_result", "input[1]", "c1"),
    ]
    assert fixes[0].description == (
        "custom result answers no call: its id is a function call's; dropped"
    )
    assert ctxwin.check(out, format=FMT) == []
    assert b["input"][2]["type"] == "custom_tool_call_output"  # the input is untouched


@pytest.mark.parametrize(("call", "output"), WRONG)
def test_repair_leaves_every_mismatch_valid(call: str, output: str) -> None:
    out, _ = ctxwin.repair(body(call_item(call), output_item(output)), format=FMT)
    items = out["input"]  # type: ignore[index]
    assert [i.get("type") for i in items] == [None, call, OWN_OUTPUT[call]]
    assert ctxwin.check(out, format=FMT) == []


def test_apply_sends_the_call_with_an_output_of_its_own_type() -> None:
    b = body(call_item("custom_tool_call"), output_item("function_call_output"))
    result = Policy({}, format=FMT).apply(b)
    items = result.request["input"]  # type: ignore[index]
    assert [i.get("type") for i in items] == [None, "custom_tool_call", "custom_tool_call_output"]
    assert ctxwin.check(result.request, format=FMT) == []


def test_with_server_state_an_output_of_another_type_is_kept() -> None:
    """Its call may live on the server (previous_response_id): not dropped."""
    b = {
        **body(call_item("function_call"), output_item("custom_tool_call_output")),
        "previous_response_id": "resp_1",
    }
    assert [code for code, _, _ in errors(b)] == ["missing_result"]
    out, _ = ctxwin.repair(b, format=FMT)
    types = [i.get("type") for i in out["input"]]  # type: ignore[index]
    assert types == [None, "function_call", "function_call_output", "custom_tool_call_output"]
