"""``ctxwin replay --server-state`` and ``replay(..., server_state=)``: a Responses trace
that continues a conversation stored on the server (its first outputs answer calls made
in earlier responses, named by ``previous_response_id``, which the recorded trace does
not carry). Without it the replay repaired those outputs away and counted the saving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin.replay import replay
from ctxwin.testing import FakeCounter
from tests._cli.kit import cli

OUTPUT = "3 failed: test_parse, test_render, test_cache\n" + "E  AssertionError\n" * 20


def items() -> list[dict[str, Any]]:
    """Outputs of calls the server holds, then two rounds of the model's own."""
    return [
        {"type": "function_call_output", "call_id": "call_prev", "output": OUTPUT},
        {"role": "user", "content": "fix them"},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": '{"cmd":"ls"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py b.py"},
        {"type": "function_call", "call_id": "c2", "name": "bash", "arguments": '{"cmd":"t"}'},
        {"type": "function_call_output", "call_id": "c2", "output": "all passed"},
        {"role": "assistant", "content": "fixed"},
    ]


TRACE = {"model": "gpt-4o", "input": items()}


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "chained.json"
    path.write_text(json.dumps(TRACE), encoding="utf-8")
    return path


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text("context_window: 100000\n", encoding="utf-8")
    return path


def totals(out: str) -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads(out)["traces"][0]
    return data["unmanaged"], data["managed"]


def test_replay_takes_server_state_and_keeps_the_outputs_of_server_calls(
    trace: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(["replay", trace, "-p", policy, "--json", "--no-progress"], capsys)
    assert code == 0
    unmanaged, managed = totals(out)
    assert unmanaged["problems"] > 0  # an orphan output in every request
    assert managed["input_tokens"] < unmanaged["input_tokens"]  # ... dropped by repair
    code, out, err = cli(
        ["replay", trace, "-p", policy, "--json", "--no-progress", "--server-state"], capsys
    )
    assert (code, err) == (0, "")
    unmanaged, managed = totals(out)
    assert (unmanaged["problems"], managed["problems"]) == (0, 0)
    assert managed["input_tokens"] == unmanaged["input_tokens"]  # nothing to save here


def test_replay_server_state_reaches_the_worker_processes(
    trace: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv: list[str | Path] = ["replay", trace, trace, "-p", policy, "--json", "--no-progress"]
    code, out, _ = cli([*argv, "--server-state", "--jobs", "2"], capsys)
    assert code == 0
    for t in json.loads(out)["traces"]:
        assert t["unmanaged"]["problems"] == t["managed"]["problems"] == 0
        assert t["managed"]["input_tokens"] == t["unmanaged"]["input_tokens"]


def test_replay_help_lists_server_state(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["replay", "--help"], capsys)
    assert code == 0
    assert "--server-state" in out
    assert "earlier turns live on the provider's side" in " ".join(out.split())


def test_a_trace_that_starts_with_server_outputs_is_advised_the_option(
    tmp_path: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "outputs-first.json"
    first = {"type": "function_call_output", "call_id": "call_prev", "output": "done"}
    path.write_text(json.dumps({"input": [first, {"role": "assistant", "content": "ok"}]}))
    code, out, err = cli(["replay", path, "-p", policy, "--no-progress"], capsys)
    assert (code, out) == (2, "")
    assert err.endswith("(if the calls live on the provider's side, pass --server-state)\n")
    code, _, err = cli(["replay", path, "-p", policy, "--no-progress", "--server-state"], capsys)
    assert (code, err) == (0, "")


def test_the_python_replay_takes_server_state_as_apply_does() -> None:
    policy = Policy({"context_window": 100000}, counter=FakeCounter())
    kept = replay(TRACE, policy, server_state=True, optimum=True)
    chained = replay({**TRACE, "previous_response_id": "resp_1"}, policy, optimum=True)
    for result in (kept, chained):
        assert (result.unmanaged.problems, result.managed.problems) == (0, 0)
        assert result.managed.input_tokens == result.unmanaged.input_tokens
        assert result.optimum is not None
    assert replay(TRACE, policy).unmanaged.problems > 0


def test_the_policy_server_state_holds_for_the_requests_the_replay_checks() -> None:
    """Under ``server_state: yes`` apply kept the outputs, and the replay counted each
    managed request's as a problem a provider would reject."""
    policy = Policy({"context_window": 100000, "server_state": "yes"}, counter=FakeCounter())
    result = replay(TRACE, policy)
    assert (result.unmanaged.problems, result.managed.problems) == (0, 0)


def test_server_state_must_be_a_bool() -> None:
    policy = Policy({"context_window": 100000}, counter=FakeCounter())
    with pytest.raises(ctxwin.InputError, match="server_state= takes True, False or None"):
        replay(TRACE, policy, server_state="yes")  # type: ignore[arg-type]


def test_the_optimum_reads_the_trace_with_server_state_too(
    tmp_path: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its layout read the trace without it: an output of a server-side call alone was
    repaired away, and the replay stopped telling the user to pass the flag they passed."""
    path = tmp_path / "output_only.json"
    only = {"type": "function_call_output", "call_id": "call_prev", "output": OUTPUT}
    path.write_text(json.dumps({"model": "gpt-4o", "input": [only]}), encoding="utf-8")
    argv = ["replay", path, "-p", policy, "--no-progress", "--server-state", "--optimum"]
    code, out, err = cli([*argv, "--json"], capsys)
    assert (code, err) == (0, "")
    unmanaged, managed = totals(out)
    assert unmanaged["problems"] == managed["problems"] == 0
    assert json.loads(out)["traces"][0]["optimum"] is not None
